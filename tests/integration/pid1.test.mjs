// deskd as PID 1 (a container's init): orphans of the programs it launched,
// and of anything else in its pid namespace, are re-parented to it, and it
// must reap them. Runs deskd as PID 1 of a private pid namespace
// (unshare --pid --fork --mount-proc), the way a container runs it, and
// reads /proc from outside for zombies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DESKD_BIN, launch, tempDir, waitUntil } from './lib/harness.mjs';
import { children } from './lib/proc.mjs';

const canUnshare = spawnSync('unshare', ['--pid', '--fork', '--mount-proc', 'true'], { timeout: 10000 }).status === 0;

/** { pid, ppid, state, comm } from /proc/PID/stat, or null. */
function stat(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = s.lastIndexOf(')');
    const rest = s.slice(close + 2).split(' ');
    return { pid, comm: s.slice(s.indexOf('(') + 1, close), state: rest[0], ppid: Number(rest[1]) };
  } catch { return null; }
}

/** Every process whose parent is pid (found by scanning /proc: a zombie is
 *  listed in its parent's children file too, but this does not depend on it). */
function childrenByScan(pid) {
  const out = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const s = stat(Number(e));
    if (s && s.ppid === pid) out.push(s);
  }
  return out;
}

test('as PID 1, deskd reaps orphans of its --launch programs and of other processes', { skip: !canUnshare && 'needs unshare --pid (root)' }, async (t) => {
  const dir = tempDir('deskd-pid1-');
  const ready = join(dir, 'ready.json');
  const env = { ...process.env };
  delete env.DISPLAY;
  for (const k of Object.keys(env)) if (k.startsWith('DESKD_')) delete env[k];
  // The first program forks short-lived orphans and exits; the second leaves
  // one long-lived orphan that the test kills later.
  const p = launch('pid1 deskd', 'unshare', ['--pid', '--fork', '--mount-proc', '--kill-child',
    DESKD_BIN, '--listen', '127.0.0.1:0', '--ready-file', ready, '--data-dir', dir, '--log-level', 'debug',
    '--token', 'pid1-test-token', '--wm', 'none',
    '--launch', 'for i in 1 2 3 4 5; do sleep 0.2 & done; (sleep 0.3 &); exit 0',
    '--launch', 'sleep 120 & exit 0'], { env });
  let deskdPid = 0;
  t.after(async () => {
    if (deskdPid) try { process.kill(deskdPid, 'SIGKILL'); } catch { /* gone */ }
    await p.stop('SIGKILL');
  });
  await waitUntil(() => existsSync(ready), { timeout: 15000, what: 'deskd ready file' })
    .catch((e) => { throw new Error(e.message + '\n' + p.log.join('')); });
  const info = JSON.parse(readFileSync(ready, 'utf8'));
  [deskdPid] = children(p.proc.pid);
  assert.ok(deskdPid, 'unshare has a child');
  assert.equal(info.pid, 1, 'deskd is PID 1 of its namespace');
  assert.equal(stat(deskdPid).comm, 'deskd');

  // The long-lived orphan: re-parented to deskd (the namespace's init).
  const cmdline = (pid) => { try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8'); } catch { return ''; } };
  const orphan = await waitUntil(() => childrenByScan(deskdPid).find((c) => c.state !== 'Z' && cmdline(c.pid) === 'sleep\0' + '120\0'),
    { timeout: 5000, what: 'the orphaned sleep 120 under deskd' });
  // The short-lived ones exited by now; none stays a zombie.
  const noZombies = (what) => waitUntil(() => !childrenByScan(deskdPid).some((c) => c.state === 'Z'),
    { timeout: 3000, interval: 50, what })
    .catch((e) => { throw new Error(`${e.message}: ${JSON.stringify(childrenByScan(deskdPid))}`); });
  await waitUntil(() => !childrenByScan(deskdPid).some((c) => c.state !== 'Z' && /^sleep\x000\.[23]\x00$/.test(cmdline(c.pid))),
    { timeout: 5000, interval: 50, what: 'the short-lived orphans to exit' });
  await noZombies('no zombie after the short-lived orphans exited');
  process.kill(orphan.pid, 'SIGKILL');
  await waitUntil(() => stat(orphan.pid) === null, { timeout: 3000, interval: 50, what: 'the killed orphan to be reaped' })
    .catch((e) => { throw new Error(`${e.message}: ${JSON.stringify(stat(orphan.pid))}`); });
  await noZombies('no zombie after killing the orphan');

  // Tracked children still get their own status (the orphan reaper never
  // takes it first): both --launch shells exited 0.
  const log = p.log.join('');
  assert.equal((log.match(/' exited \(exit code 0\)/g) || []).length, 2, log);
  assert.match(log, /reaped orphan pid \d+/);
  // Xvfb is alive and answers.
  const h = await fetch(`${info.url}/healthz`);
  assert.equal((await h.text()).trim(), 'ok');

  // SIGTERM from outside the namespace stops it cleanly (as `podman stop` does).
  process.kill(deskdPid, 'SIGTERM');
  let timer;
  const r = await Promise.race([p.exited, new Promise((res) => { timer = setTimeout(() => res({ code: 'timeout' }), 10000); })]);
  clearTimeout(timer);
  assert.equal(r.code, 0, `deskd exit: ${JSON.stringify(r)}\n${p.log.join('')}`);
  deskdPid = 0;
});
