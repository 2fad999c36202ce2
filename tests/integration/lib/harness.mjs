// Test harness: every test starts its own Xvfb (-displayfd), its own deskd on
// port 0 and its own fixture app, and stops them by PID, also when it fails.
// Never touches $DISPLAY or a fixed port. Logs of everything started are
// printed when the test process fails.
//
// Under `make check` deskd and the fixture are built with ASan + UBSan, whose
// reports go to their stderr: a report in any log, or a deskd or fixture that
// does not exit 0 when stop() sends SIGTERM or SIGINT, fails the test that
// stopped it (stop() rejects) or else the file (a root after hook).
// DESKD_TEST_SLOW=N multiplies waitUntil and stop timeouts (slow builds).
import { after } from 'node:test';
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, existsSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import http from 'node:http';

const ROOT = resolve(new URL('../../..', import.meta.url).pathname);
export const DESKD_BIN = process.env.DESKD_BIN || join(ROOT, 'deskd');
export const FIXTURE_BIN = process.env.FIXTURE_BIN || join(ROOT, 'build/tests/fixture');

const started = new Set();   // { name, proc, log: string[] }
const tempDirs = new Set();

/** Timeout factor for slow (sanitized) builds: DESKD_TEST_SLOW=3. */
export const SLOW = Math.max(1, Number(process.env.DESKD_TEST_SLOW) || 1);

const SANITIZER_REPORT = /ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer/;
const problems = [];   // sanitizer reports and unclean stops not yet reported

/** The sanitizer report in a process's output, or null. */
export function sanitizerReport(text) {
  const m = SANITIZER_REPORT.exec(text);
  return m ? text.slice(Math.max(0, m.index - 200)) : null;
}

function problem(entry, what) {
  const p = new Error(`${entry.name} (pid ${entry.proc.pid}) ${what}\n----- its log -----\n${entry.log.join('').slice(-20000)}`);
  problems.push(p);
  return p;
}

/** Take the unreported problems of entries (all when null) out as one error. */
function takeProblems(entries = null) {
  const mine = problems.filter((p) => !entries || entries.some((e) => p.message.startsWith(`${e.name} (pid ${e.proc.pid})`)));
  if (!mine.length) return null;
  for (const p of mine) problems.splice(problems.indexOf(p), 1);
  return new Error(mine.map((p) => p.message).join('\n'));
}

// Under node --test only (bench imports this file too): a problem no stop()
// reported fails the file.
if (process.env.NODE_TEST_CONTEXT) {
  after(() => {
    const e = takeProblems();
    if (e) throw e;
  });
}

function killAll() {
  for (const p of started) {
    try { process.kill(p.proc.pid, 'SIGKILL'); } catch { /* already gone */ }
  }
}

process.on('exit', (code) => {
  const late = takeProblems();
  if (late) {
    process.stderr.write(`\n${late.message}\n`);
    process.exitCode = 1;
  }
  if (code !== 0 || process.exitCode) {
    for (const p of started.size ? started : []) {
      process.stderr.write(`\n----- log of ${p.name} (pid ${p.proc.pid}) -----\n${p.log.join('')}\n`);
    }
    for (const p of allLogs) {
      process.stderr.write(`\n----- log of ${p.name} (pid ${p.pid}, exited) -----\n${p.log.join('')}\n`);
    }
  }
  killAll();
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => { killAll(); process.exit(130); });
}

const allLogs = [];   // processes that already exited, kept for failure dumps

/** A fresh private temp directory, removed at exit. */
export function tempDir(prefix = 'deskd-test-') {
  const d = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.add(d);
  return d;
}

function executable(file) {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch { return false; }
}

/** The path of program cmd (looked up on env's PATH unless it has a slash).
 *  A program that is not there fails the test that needs it with a message
 *  that says what to do, not as a spawn ENOENT, a status null or a timeout.
 *  scripts/check-deps finds the programs named in need(), run(), launch()
 *  and their `needs` and checks that `scripts/install-deps test` installs
 *  their packages (scripts/programs). */
export function need(cmd, env = process.env) {
  // fatal: waitUntil does not retry it until its timeout.
  const missing = (hint) => Object.assign(new Error(`missing program ${cmd}: ${hint}`), { fatal: true });
  if (cmd.includes('/')) {
    if (executable(cmd)) return cmd;
    throw missing(cmd.startsWith(ROOT + '/') ? 'build it first (make)' : 'add its package to scripts/install-deps');
  }
  for (const dir of ((env || process.env).PATH || '').split(delimiter)) {
    if (dir && executable(join(dir, cmd))) return join(dir, cmd);
  }
  throw missing('add its package to scripts/install-deps');
}

/** spawnSync of a program that must be installed (see need()). */
export function run(cmd, args = [], opts = {}) {
  need(cmd, opts.env);
  for (const n of opts.needs || []) need(n, opts.env);
  const r = spawnSync(cmd, args, opts);   // spawns: - (check-deps scans the callers)
  if (r.error && r.error.code !== 'ETIMEDOUT') throw new Error(`${cmd}: ${r.error.message}`);
  return r;
}

/** Spawn a process, capture its output, register it for cleanup. A missing
 *  cmd (or a program in opts.needs, which it runs itself) throws (need()). */
export function launch(name, cmd, args, opts = {}) {
  need(cmd, opts.env);
  for (const n of opts.needs || []) need(n, opts.env);
  // spawns: - (check-deps scans the callers)
  const proc = spawn(cmd, args, { stdio: opts.stdio || ['ignore', 'pipe', 'pipe'], env: opts.env || process.env, cwd: opts.cwd });
  const entry = { name, proc, log: [] };
  const d = args.indexOf('--display');
  entry.display = d >= 0 ? args[d + 1] : opts.env?.DISPLAY;
  const keep = (chunk) => {
    entry.log.push(chunk.toString());
    if (entry.log.length > 2000) entry.log.splice(0, 1000);
  };
  if (!opts.keepStdout && proc.stdout) proc.stdout.on('data', keep);
  if (proc.stderr) proc.stderr.on('data', keep);
  started.add(entry);
  // deskd and the fixture are the sanitized programs: they must exit 0 when stopped.
  entry.checked = opts.checked ?? (cmd === DESKD_BIN || cmd === FIXTURE_BIN || /^deskd/.test(name));
  entry.exited = new Promise((res) => {
    proc.on('exit', (code, signal) => {
      if (sanitizerReport(entry.log.join(''))) problem(entry, 'printed a sanitizer report');
      started.delete(entry);
      allLogs.push({ name, pid: proc.pid, log: entry.log });
      if (allLogs.length > 50) allLogs.shift();
      res({ code, signal });
    });
    // A program that could not be started (no 'exit' follows): not an
    // uncaught exception; the log says why and exited resolves.
    proc.on('error', (e) => {
      entry.log.push(`could not start ${cmd}: ${e.message}\n`);
      if (proc.pid === undefined) {
        started.delete(entry);
        res({ code: null, signal: null, error: e });
      }
    });
  });
  /** Send signal, SIGKILL after timeoutMs; resolves { code, signal }. For a
   *  checked process, rejects when SIGTERM or SIGINT did not make it exit 0
   *  or a sanitizer report was printed. */
  entry.stop = async (signal = 'SIGTERM', timeoutMs = 5000) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return entry.exited;
    try { process.kill(proc.pid, signal); } catch { return entry.exited; }
    let killed = false;
    const t = setTimeout(() => { killed = true; try { process.kill(proc.pid, 'SIGKILL'); } catch { } }, timeoutMs * SLOW);
    const r = await entry.exited;
    clearTimeout(t);
    if (entry.checked && (signal === 'SIGTERM' || signal === 'SIGINT') && r.code !== 0) {
      problem(entry, killed ? `did not exit within ${timeoutMs * SLOW} ms of ${signal}`
        : `exited with ${r.code ?? r.signal} on ${signal}, not 0`);
    }
    const e = takeProblems([entry]);
    if (e) throw e;
    return r;
  };
  return entry;
}

/** Poll fn until it returns a truthy value (returned) or the timeout passes. */
export async function waitUntil(fn, { timeout = 5000, interval = 20, what = 'condition' } = {}) {
  const end = Date.now() + timeout * SLOW;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      if (e && e.fatal) throw e;
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}` + (last instanceof Error ? `: ${last.message}` : ''));
    await sleep(interval);
  }
}

/** Start Xvfb on a display it picks itself (-displayfd). */
export async function startXvfb({ width = 1280, height = 800, depth = 24 } = {}) {
  const x = launch('Xvfb', 'Xvfb', ['-displayfd', '3', '-screen', '0', `${width}x${height}x${depth}`,
    '-nolisten', 'tcp', '-noreset'], { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  const number = await new Promise((res, rej) => {
    let buf = '';
    const t = setTimeout(() => rej(new Error('Xvfb did not report a display')), 10000);
    x.proc.stdio[3].on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\n')) { clearTimeout(t); res(buf.trim()); }
    });
    x.proc.on('exit', () => { clearTimeout(t); rej(new Error('Xvfb exited: ' + x.log.join(''))); });
  });
  x.display = `:${number}`;
  // SIGTERM stops the programs on this display first, newest first, so that
  // a test's own cleanup order cannot pull the display from under them (an
  // X client that loses its display exits 1). Tests that take the display
  // away on purpose send SIGKILL.
  const stopX = x.stop;
  x.stop = async (signal = 'SIGTERM', timeoutMs = 5000) => {
    let err = null;
    if (signal === 'SIGTERM') {
      for (const p of [...started].reverse()) {
        if (p !== x && p.display === x.display) await p.stop().catch((e) => { err = err || e; });
      }
    }
    const r = await stopX(signal, timeoutMs);
    if (err) throw err;
    return r;
  };
  return x;
}

/** Start a window manager on the display (openbox), when asked. */
export async function startWm(display, wm = 'openbox') {
  // spawns: openbox
  const p = launch(wm, wm, wm === 'openbox' ? ['--sm-disable'] : [], { env: { ...process.env, DISPLAY: display } });
  // A window mapped while the WM is still starting can be lost: wait until
  // the WM has finished starting, as deskd's own desktop does.
  await waitUntil(() => {
    // openbox sets _NET_CLIENT_LIST once it manages the windows already
    // there; a MapRequest before that can be dropped.
    const r = run('xprop', ['-display', display, '-root', '_NET_CLIENT_LIST'], { encoding: 'utf8' });
    return r.status === 0 && /window id #/.test(r.stdout);
  }, { timeout: 10000, interval: 25, what: `${wm} to manage the display` });
  return p;
}

/** Start the fixture app; resolves once its window is mapped. */
export async function startFixture(display, { title = 'deskd fixture', geometry = '400x300+100+80', pattern = 'gradient', animate = 0, paintClicks = false } = {}) {
  const dir = tempDir('deskd-fixture-');
  const statePath = join(dir, 'state.json');
  const p = launch(`fixture(${title})`, FIXTURE_BIN, [...(paintClicks ? ['--paint-clicks'] : []), '--state', statePath, '--title', title, '--geometry', geometry, '--pattern', pattern,
    ...(animate ? ['--animate', String(animate)] : [])],
    { env: { ...process.env, DISPLAY: display } });
  p.statePath = statePath;
  p.state = () => JSON.parse(readFileSync(statePath, 'utf8'));
  p.waitFor = (pred, opts = {}) => waitUntil(() => { const s = existsSync(statePath) && p.state(); return s && pred(s) && s; },
    { what: 'fixture state', ...opts });
  await p.waitFor((s) => s.events.some((e) => e.type === 'map'), { timeout: 10000 });
  p.window = p.state().window;
  return p;
}

/** The JSON of the ready file p writes. Fails as soon as p exits without
 *  writing it (with its log, which says why), not after the timeout. */
export async function readyInfo(p, ready, { timeout = 15000 } = {}) {
  try {
    return await waitUntil(() => {
      if (existsSync(ready)) return JSON.parse(readFileSync(ready, 'utf8'));
      if (p.proc.exitCode !== null || p.proc.signalCode !== null || p.proc.pid === undefined) {
        throw Object.assign(new Error(`${p.name} exited (${p.proc.exitCode ?? p.proc.signalCode ?? 'not started'}) without writing its ready file`), { fatal: true });
      }
      return null;
    }, { timeout, what: `${p.name} ready file` });
  } catch (e) {
    // All of its output, which arrives after its exit.
    if (e.fatal) await Promise.race([new Promise((res) => p.proc.once('close', res)), sleep(1000)]);
    throw new Error(`${e.message}\n----- log of ${p.name} -----\n${p.log.join('')}`);
  }
}

/** Start deskd on port 0 with its own data dir; resolves when the ready file appears
 *  (within readyTimeout ms).
 *  token is the agent's (--token), personToken the person's (--person-token:
 *  the dashboard's control and approvals); personToken null: none given
 *  (deskd generates one in the data dir). */
export async function startDeskd({ display, args = [], token = 'test-token-' + Math.random().toString(36).slice(2), personToken = 'person-token-' + Math.random().toString(36).slice(2), env = {}, noAuth = false, bin = DESKD_BIN, readyTimeout = 15000, spawned = null } = {}) {
  const dir = tempDir('deskd-data-');
  const ready = join(dir, 'ready.json');
  const argv = ['--listen', '127.0.0.1:0', '--ready-file', ready, '--data-dir', dir, '--log-level', 'debug'];
  if (display) argv.push('--display', display);
  if (noAuth) argv.push('--no-auth');
  else {
    argv.push('--token', token);
    if (personToken) argv.push('--person-token', personToken);
  }
  argv.push(...args);
  const cleanEnv = { ...process.env, ...env };
  // Never the caller's desktop: no X display, no Wayland compositor.
  for (const k of ['DISPLAY', 'WAYLAND_DISPLAY', 'SWAYSOCK']) if (!(k in env)) delete cleanEnv[k];
  for (const k of Object.keys(cleanEnv)) if (k.startsWith('DESKD_') && !(k in env)) delete cleanEnv[k];
  const p = launch('deskd', bin, argv, { env: cleanEnv });   // spawns: - (deskd, or a baseline deskd for bench-compare)
  if (spawned) spawned(p);   // the process before it is ready (a test that stops it while it starts)
  const info = await readyInfo(p, ready, { timeout: readyTimeout });
  Object.assign(p, info, { token: noAuth ? null : token, personToken: noAuth ? null : personToken, dataDir: dir });
  p.headers = (extra = {}) => ({ ...(p.token ? { authorization: `Bearer ${p.token}` } : {}), ...extra });
  /** fetch relative to deskd's URL with the token. */
  p.fetch = (path, init = {}) => fetch(p.url + path, { ...init, headers: p.headers(init.headers || {}) });
  /** POST /api/v1/tools/NAME; returns { status, body }. */
  p.tool = async (name, args = {}) => {
    const r = await p.fetch(`/api/v1/tools/${name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(args) });
    const text = await r.text();
    let body;
    try { body = JSON.parse(text); } catch { body = text; }
    return { status: r.status, body };
  };
  return p;
}

/** What the tmpfs set-up below needs that this machine lacks, or null.
 *  unshare --mount and mount -t tmpfs need CAP_SYS_ADMIN (root, and not
 *  dropped as in a default container); unshare --propagation private needs
 *  / to be a mount point, which it is not in a chroot into a plain
 *  directory; the test reads the files through /proc. */
export function tmpfsSetupMissing() {
  if (process.getuid() !== 0) return 'root: mount -t tmpfs in a mount namespace needs CAP_SYS_ADMIN';
  if (!existsSync('/proc/self/mountinfo')) return '/proc mounted';
  const capEff = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  if (capEff && !((BigInt('0x' + capEff[1]) >> 21n) & 1n)) return 'CAP_SYS_ADMIN (root without it: a container that drops it)';
  const mountPoints = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4]);
  if (!mountPoints.includes('/')) return '/ to be a mount point (in a chroot, bind-mount its directory onto itself first)';
  return null;
}

/** deskd in a mount namespace of its own with a tmpfs of `size` on a fresh
 *  directory (its output root, or with rootFlag '--files-root' its files
 *  root). The mount exists only in that namespace, so it goes away with
 *  deskd whatever happens to the test; the test reaches it through
 *  /proc/<pid>/root. */
export async function startDeskdOnTmpfs(t, display, size, { rootFlag = '--output-root', extraArgs = [] } = {}) {
  const lacking = tmpfsSetupMissing();
  if (lacking) throw new Error(`the tmpfs set-up (unshare --mount, mount -t tmpfs) needs ${lacking}`);
  const mnt = tempDir('deskd-tmpfs-');
  const dir = tempDir('deskd-data-');
  const ready = join(dir, 'ready.json');
  const token = 'tok-' + Math.random().toString(36).slice(2);
  const env = { ...process.env };
  delete env.DISPLAY;
  for (const k of Object.keys(env)) if (k.startsWith('DESKD_')) delete env[k];
  const script = 'mount -t tmpfs -o "size=$1,mode=0755" tmpfs "$2" || { echo "tmpfs set-up: mount failed" >&2; exit 1; }; '
    + 'shift 2 && exec "$@"';
  const p = launch('deskd (tmpfs)', 'unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script, 'sh',
    size, mnt, DESKD_BIN, '--listen', '127.0.0.1:0', '--ready-file', ready, '--data-dir', dir, '--token', token,
    '--display', display, rootFlag, mnt, '--log-level', 'debug', ...extraArgs], { env, needs: ['sh', 'mount', DESKD_BIN] });
  t.after(() => p.stop());
  // unshare or mount failing ends it at once: that fails here, with its log.
  const info = await readyInfo(p, ready);
  p.mnt = mnt;
  p.view = `/proc/${p.proc.pid}/root${mnt}`;
  p.url = info.url;
  p.fetch = (path, init = {}) => fetch(info.url + path, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers || {}) } });
  p.tool = async (name, args = {}) => {
    const r = await fetch(`${info.url}/api/v1/tools/${name}`, { method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(args) });
    const text = await r.text();
    let body;
    try { body = JSON.parse(text); } catch { body = text; }
    return { status: r.status, body };
  };
  return p;
}

/** A whole desktop for one test: Xvfb (+ optional WM) + deskd (+ optional fixture).
 *  Registers cleanup with the test context t (node:test). */
export async function desktop(t, { width, height, wm = null, fixture = null, deskdArgs = [], noAuth = false, token, personToken } = {}) {
  const x = await startXvfb({ width, height });
  const env = { display: x.display, x };
  const cleanup = async () => {
    let err = null;
    for (const p of [env.fixture, env.deskd, env.wm, x]) if (p) await p.stop().catch((e) => { err = err || e; });
    if (err) throw err;
  };
  t.after(cleanup);
  if (wm) env.wm = await startWm(x.display, wm);
  if (fixture) env.fixture = await startFixture(x.display, fixture === true ? {} : fixture);
  env.deskd = await startDeskd({ display: x.display, args: deskdArgs, noAuth, token, personToken });
  return env;
}

/** Two busy loops (both cores), for runs "loaded"; returns their stop (by PID). */
export function loadCores() {
  // spawns: sh
  const loops = [0, 1].map(() => spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }));
  return () => { for (const l of loops) { try { process.kill(l.pid, 'SIGKILL'); } catch { } } };
}

/** A PUT of body to d's path with Expect: 100-continue, as curl sends a
 *  large upload: the body goes only if the server asks, so a refusal (413)
 *  arrives as an answer, not as EPIPE while the client is still writing. */
export function putExpectContinue(d, path, body, { token = d.token } = {}) {
  const url = new URL(d.url);
  return new Promise((resolve, reject) => {
    const r = http.request({ host: url.hostname, port: url.port, path, method: 'PUT',
      headers: { authorization: `Bearer ${token}`, expect: '100-continue', 'content-length': body.length } }, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, text: data, sent: r.bodySent }));
    });
    r.on('continue', () => { r.bodySent = true; r.end(body); });
    r.on('error', reject);
  });
}

export { sleep, ROOT, writeFileSync };
