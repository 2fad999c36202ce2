// The launch tool's trust rules (docs/TRUST.md R1, R7, R8): with
// --allow-launch, env may not set the variables that make a program load
// code (an uploaded LD_PRELOAD library, PATH, PYTHONPATH, ...); the file that
// was checked is the file that runs, however a symlink flips meanwhile; and
// every process deskd started is stopped when deskd exits, however many
// launches came after it and whether it left its process group or not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { need, run, sleep, startDeskd, tempDir, waitUntil } from './lib/harness.mjs';

/** Running (exists and not a zombie). */
function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch { return false; }
}

async function ok(d, name, args) {
  const r = await d.tool(name, args);
  assert.equal(r.status, 200, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r.body)}`);
  return r.body.structuredContent;
}

const lines = (file) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0);

/** Wait until none of deskd's launched programs runs any more. */
async function settled(d) {
  await waitUntil(async () => (await ok(d, 'status', {})).launched.every((e) => !e.running),
    { timeout: 5000, what: 'the launched programs to end' });
}

test('R1: with --allow-launch, env may not set code-loading variables (an uploaded LD_PRELOAD library, PATH, PYTHONPATH, ...): 403 naming the variable, nothing runs; without an allow-list they pass', async (t) => {
  need('cc');
  const dir = tempDir('deskd-launch-env-');
  const marker = join(dir, 'preloaded');
  const src = join(dir, 'helper.c');
  writeFileSync(src, '#include <stdio.h>\n__attribute__((constructor)) static void p(void) {\n'
    + `  FILE* f = fopen(${JSON.stringify(marker)}, "a");\n  if (f) { fputs("in pid\\n", f); fclose(f); }\n}\n`);
  const so = join(dir, 'helper.so');
  const cc = run('cc', ['-shared', '-fPIC', '-o', so, src], { encoding: 'utf8', timeout: 30000 });
  assert.equal(cc.status, 0, cc.stderr);

  const d = await startDeskd({ args: ['--launch', 'none', '--wm', 'none', '--allow-launch', 'true', '--allow-launch', 'printenv'] });
  t.after(() => d.stop());
  // The agent puts the library in place itself (file_upload: 0600, readable by what deskd launches).
  await ok(d, 'file_upload', { path: 'libhelper.so', encoding: 'base64', data: readFileSync(so).toString('base64') });
  const lib = join(d.dataDir, 'files', 'libhelper.so');
  assert.ok(existsSync(lib));
  const refused = [
    `LD_PRELOAD=${lib}`, `LD_LIBRARY_PATH=${dir}`, `LD_AUDIT=${lib}`, `GCONV_PATH=${dir}`, `PATH=${dir}:/usr/bin`,
    `PYTHONPATH=${dir}`, `PYTHONSTARTUP=${lib}`, `GTK_MODULES=${lib}`, 'NODE_OPTIONS=--require /x.js',
    'GLIBC_TUNABLES=glibc.malloc.check=3', `BASH_ENV=${lib}`, `PERL5OPT=-Mx`, `QT_PLUGIN_PATH=${dir}`,
  ];
  for (const v of refused) {
    const name = v.slice(0, v.indexOf('='));
    const r = await d.tool('launch', { argv: ['true'], env: ['LANG=C.UTF-8', v], wait_for_window: false });
    assert.equal(r.status, 403, `${v}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.code, 'forbidden');
    assert.match(r.body.error.message, new RegExp(`^env may not set ${name} while --allow-launch is in force: .+`));
  }
  // Other variables reach the allowed program.
  const pe = await ok(d, 'launch', { argv: ['printenv', 'DESKD_OK'], env: ['DESKD_OK=yes', 'LANG=C.UTF-8'], wait_for_window: false });
  await waitUntil(() => d.log.join('').includes(`printenv[${pe.pid}]: yes`), { what: 'printenv output in the log' });
  await settled(d);
  assert.deepEqual((await ok(d, 'status', {})).launched.map((e) => e.pid), [pe.pid], 'only printenv started');
  assert.equal(existsSync(marker), false, 'the uploaded library never ran');

  // Without an allow-list any program may be launched (env LD_PRELOAD=... prog
  // does the same), so the variables pass: the library is real and would have run.
  const open = await startDeskd({ args: ['--launch', 'none', '--wm', 'none'] });
  t.after(() => open.stop());
  await ok(open, 'launch', { argv: ['true'], env: [`LD_PRELOAD=${so}`], wait_for_window: false });
  await waitUntil(() => lines(marker) > 0, { what: 'the library to run without an allow-list' });
});

test('R7: a symlink flipped between an allowed program and /bin/sh while launching it: the file checked is the file that runs, /bin/sh never does', async (t) => {
  const dir = tempDir('deskd-launch-race-');
  const marker = join(dir, 'sh-ran');
  const swap = join(dir, 'swap');
  const allowed = realpathSync(need('true'));
  // An allowed #! script runs too (by descriptor: $0 is /dev/fd/N).
  const script = join(dir, 'script');
  const said = join(dir, 'script-ran');
  writeFileSync(script, `#!/bin/sh\necho "$0 $1" > ${said}\n`, { mode: 0o755 });
  const d = await startDeskd({ args: ['--launch', 'none', '--wm', 'none', '--allow-launch', allowed, '--allow-launch', script] });
  t.after(() => d.stop());
  await ok(d, 'launch', { argv: [script, 'hello'], wait_for_window: false });
  await waitUntil(() => existsSync(said) && /^\/dev\/fd\/\d+ hello$/m.test(readFileSync(said, 'utf8')), { what: 'the allowed script to run' });
  symlinkSync(allowed, swap);
  // Flips swap (rename over it: it always exists) until told to stop.
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(`
    const { workerData } = require('node:worker_threads');
    const fs = require('node:fs');
    const { dir, targets, stop } = workerData;
    const tmp = dir + '/swap.tmp';
    for (let i = 0; Atomics.load(stop, 0) === 0; i++) {
      try { fs.unlinkSync(tmp); } catch { }
      fs.symlinkSync(targets[i & 1], tmp);
      fs.renameSync(tmp, dir + '/swap');
    }`, { eval: true, workerData: { dir, targets: [allowed, '/bin/sh'], stop } });
  const ended = new Promise((res) => worker.on('exit', res));
  t.after(() => { Atomics.store(stop, 0, 1); return worker.terminate(); });

  const N = 40;
  let accepted = 0, refused = 0;
  for (let i = 0; i < N; i++) {
    const r = await d.tool('launch', { argv: [swap, '-c', `echo ran >> ${marker}`], wait_for_window: false });
    if (r.status === 200) accepted++;
    else {
      assert.equal(r.status, 403, JSON.stringify(r.body));
      assert.match(r.body.error.message, /is not allowed: --allow-launch/);
      refused++;
    }
  }
  Atomics.store(stop, 0, 1);
  await ended;
  await settled(d);
  await sleep(200);
  const ran = lines(marker);
  t.diagnostic(`${N} launches while flipping: ${accepted} accepted, ${refused} refused, /bin/sh ran ${ran} times`);
  assert.ok(accepted > 0 && refused > 0, `the flips raced the launches (${accepted} accepted, ${refused} refused)`);
  assert.equal(ran, 0, `/bin/sh ran ${ran} times`);
});

test('R8: every process deskd started is stopped at its exit: what an ended program left in its group after 70 more launches, and one that left its group (setsid)', async (t) => {
  need('setsid');
  const dir = tempDir('deskd-launch-exit-');
  const d = await startDeskd({ args: ['--launch', 'none', '--wm', 'none'] });
  const left = [];
  t.after(async () => {
    await d.stop().catch(() => { });
    for (const pid of left) if (alive(pid)) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  });
  const inGroup = join(dir, 'in-group.pid');
  const ownSession = join(dir, 'own-session.pid');
  const sh = await ok(d, 'launch', { argv: ['sh', '-c', `sleep 300 & echo $! > ${inGroup}; exit 0`], wait_for_window: false });
  await ok(d, 'launch', { argv: ['sh', '-c', `setsid sleep 301 & echo $! > ${ownSession}; exit 0`], wait_for_window: false });
  const pidOf = (file) => waitUntil(() => existsSync(file) && Number(readFileSync(file, 'utf8').trim()), { what: file });
  left.push(await pidOf(inGroup), await pidOf(ownSession));
  for (let i = 0; i < 70; i++) await ok(d, 'launch', { argv: ['true'], wait_for_window: false });
  for (const pid of left) assert.ok(alive(pid), `pid ${pid} runs`);
  // The ended sh stays listed while its process group has members.
  const listed = (await ok(d, 'status', {})).launched;
  assert.ok(listed.some((e) => e.pid === sh.pid && !e.running), JSON.stringify(listed.map((e) => e.pid)));
  // With 64 running or with a live group, the next launch is refused (nothing is evicted).
  for (let i = 0; i < 63; i++) left.push((await ok(d, 'launch', { argv: ['sleep', '302'], wait_for_window: false })).pid);
  const full = await d.tool('launch', { argv: ['true'], wait_for_window: false });
  assert.equal(full.status, 403, JSON.stringify(full.body));
  assert.match(full.body.error.message, /64 launched programs, or what they started in their process groups, are still running; stop one first/);

  const t0 = Date.now();
  await d.stop();	// SIGTERM; rejects unless deskd exits 0
  for (const pid of left) await waitUntil(() => !alive(pid), { timeout: 3000, what: `pid ${pid} to be gone after deskd's exit` });
  t.diagnostic(`deskd and its leftovers gone ${Date.now() - t0} ms after SIGTERM`);
});
