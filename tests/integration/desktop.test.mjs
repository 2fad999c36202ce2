// The desktop: embedded Xvfb (+ WM, --launch) started and stopped by deskd,
// `deskd doctor`, the status tool, and losing / getting back the display.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { DESKD_BIN, launch, need, run, startDeskd, startXvfb, tempDir, waitUntil } from './lib/harness.mjs';
import { descendants } from './lib/proc.mjs';
import { decodePng } from './lib/png.mjs';

/** Running (exists and not a zombie). */
function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch { return false; }
}

function cleanEnv() {
  const env = { ...process.env };
  delete env.DISPLAY;
  for (const k of Object.keys(env)) if (k.startsWith('DESKD_')) delete env[k];
  return env;
}

async function healthz(d) {
  const r = await fetch(d.url + '/healthz');
  await r.text();
  return r.status;
}

/** The display's size as the X server reports it (xdpyinfo), or null. */
function xSize(display) {
  const r = run('xdpyinfo', ['-display', display], { encoding: 'utf8', timeout: 5000 });
  const m = r.status === 0 && r.stdout.match(/dimensions:\s+(\d+)x(\d+) pixels/);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

// deskd starts Xvfb and openbox it finds on PATH. Without openbox these
// tests would check less and still pass: a missing one fails them instead.
const needOpenbox = () => need('openbox');

test('with no display, deskd starts its own Xvfb (+ openbox) and status reports it', async (t) => {
  const d = await startDeskd({});
  t.after(() => d.stop());
  assert.match(d.display, /^:\d+$/);
  const kids = descendants(d.proc.pid);
  assert.ok(kids.some((k) => k.comm === 'Xvfb'), JSON.stringify(kids));
  needOpenbox();
  assert.ok(kids.some((k) => k.comm === 'openbox'), JSON.stringify(kids));

  const r = await d.tool('status');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const s = r.body.structuredContent;
  assert.equal(s.server.name, 'deskd');
  assert.equal(s.server.pid, d.proc.pid);
  assert.ok(s.server.uptime_seconds >= 0 && s.server.uptime_seconds < 60);
  assert.match(s.server.version, /^\d+\.\d+\.\d+/);
  assert.deepEqual(
    { name: s.display.name, available: s.display.available, embedded: s.display.embedded,
      width: s.display.width, height: s.display.height },
    { name: d.display, available: true, embedded: true, width: 1280, height: 800 });
  assert.equal(typeof s.sessions, 'number');
  assert.ok(Array.isArray(s.recordings));
  assert.ok(s.tools >= 2);
  for (const lib of ['libmicrohttpd', 'libwebsockets', 'jansson', 'libavcodec']) {
    assert.match(s.versions[lib], /\d+\.\d+/, lib);
  }
  // The text block mirrors structuredContent.
  assert.deepEqual(JSON.parse(r.body.content[0].text).display, s.display);
  assert.deepEqual(xSize(d.display), [1280, 800]);
  assert.equal(await healthz(d), 200);

  // The doctor tool from inside the server: healthy, the port is ours.
  const doc = await d.tool('doctor');
  assert.equal(doc.status, 200, JSON.stringify(doc.body));
  const checks = doc.body.structuredContent.checks;
  assert.equal(doc.body.structuredContent.healthy, true, JSON.stringify(checks));
  const port = checks.find((c) => c.name === 'listen port');
  assert.ok(port.ok && port.detail.includes(new URL(d.url).port), port.detail);
  assert.ok(checks.find((c) => c.name === 'display').detail.includes('1280x800'));
});

test('a first run: the embedded desktop has a background that is not black and an xterm; --launch none starts nothing', async (t) => {
  const d = await startDeskd({});
  t.after(() => d.stop());
  need('xterm');
  {
    const w = await waitUntil(async () => {
      const r = await (await d.fetch('/api/v1/windows')).json();
      return r.windows.find((x) => x.app === 'XTerm');
    }, { timeout: 10000, what: 'the default xterm' });
    assert.ok(w.width > 100 && w.height > 100, JSON.stringify(w));
  }
  const png = decodePng(Buffer.from(await (await d.fetch('/api/v1/screenshot?format=png&max=0')).arrayBuffer()));
  assert.deepEqual(png.px(3, 3), [0x2e, 0x3a, 0x48], 'the dark grey-blue background');
  // openbox gets deskd's own configuration: no missing-menu warning.
  assert.doesNotMatch(d.log.join(''), /Openbox-Message|menu file/);

  const n = await startDeskd({ args: ['--launch', 'none'] });
  t.after(() => n.stop());
  await new Promise((r) => setTimeout(r, 500));
  const kids = descendants(n.proc.pid).map((k) => k.comm);
  assert.ok(!kids.includes('xterm'), kids.join(','));
  assert.deepEqual((await (await n.fetch('/api/v1/windows')).json()).windows, []);
});

test('--log-format json: every stderr line is JSON, the banner is an event, child output is re-logged naming the program', async (t) => {
  const d = await startDeskd({ args: ['--log-format', 'json', '--launch', 'echo from-the-launched-program; sleep 300'] });
  t.after(() => d.stop());
  await waitUntil(() => d.log.join('').includes('from-the-launched-program'), { what: 'the program\'s line' });
  await d.stop();
  const lines = d.log.join('').split('\n').filter((l) => l.length);
  const events = lines.map((l) => { try { return JSON.parse(l); } catch { assert.fail(`not JSON: ${l}`); } });
  const banner = events.find((e) => e.event === 'ready');
  assert.ok(banner, 'the banner event');
  assert.equal(banner.url, d.url);
  assert.equal(banner.mcp, d.url + '/mcp');
  // The harness gives --token: not printed (DESIGN.md section 3), and
  // nowhere else in the log either.
  assert.equal(banner.dashboard, `${d.url}/#token=<person-token>`);
  assert.equal(banner.token_printed, false);
  assert.equal(banner.person_token_printed, false);
  assert.ok(!lines.some((l) => l.includes(d.token) || l.includes(d.personToken)), 'the given tokens are not in the log');
  assert.equal(banner.display, d.display);
  assert.equal(banner.embedded, true);
  const echo = events.find((e) => e.msg === 'from-the-launched-program');
  assert.equal(echo.program, 'echo');
  assert.ok(Number.isInteger(echo.pid) && echo.pid > 0);
  // Whatever Xvfb prints (with --log-level debug, the harness's) is among the
  // lines above, each of them JSON; how much it prints depends on the machine.
  needOpenbox();
  assert.ok(!events.some((e) => /menu file/.test(e.msg)), 'no openbox menu warning');
});

test('text logs: a child program\'s lines are prefixed with its name and pid; a flood is cut and counted', async (t) => {
  const d = await startDeskd({ args: ['--launch', 'printf "%05000d\\n" 7; seq 1 5000; sleep 300'] });
  t.after(() => d.stop());
  await waitUntil(() => /lines of this program's output dropped/.test(d.log.join('')), { timeout: 5000, what: 'the drop report' });
  const log = d.log.join('');
  assert.match(log, /info {4}printf\[\d+\]: 0{1000,1024} \[\.\.\.\]\n/, 'a long line is cut at 1 KiB');
  assert.match(log, /info {4}printf\[\d+\]: 1\n/);
  assert.doesNotMatch(log, /printf\[\d+\]: 5000\n/, 'the flood is dropped after 100 lines a second');
  assert.match(log, /warning printf\[\d+\]: \[deskd: \d+ lines of this program's output dropped: more than 100 a second\]/);
});

test('--virtual 1024x768 sets the embedded screen size; --wm none starts no WM', async (t) => {
  const d = await startDeskd({ args: ['--virtual', '1024x768', '--wm', 'none'] });
  t.after(() => d.stop());
  const s = (await d.tool('status')).body.structuredContent;
  assert.equal(s.display.width, 1024);
  assert.equal(s.display.height, 768);
  assert.equal(s.display.embedded, true);
  assert.deepEqual(xSize(d.display), [1024, 768]);
  const kids = descendants(d.proc.pid).map((k) => k.comm);
  assert.ok(kids.includes('Xvfb'));
  assert.ok(!kids.includes('openbox'), kids.join(','));
});

test('deskd doctor with no display starts and stops its own, exits 0, prints healthy', () => {
  const dir = tempDir('deskd-doctor-');
  const r = spawnSync(DESKD_BIN, ['doctor', '--listen', '127.0.0.1:0', '--data-dir', dir, '--log-level', 'debug'],
    { encoding: 'utf8', env: cleanEnv(), timeout: 20000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^healthy$/m);
  for (const name of ['display', 'MIT-SHM', 'XTEST', 'Composite', 'DAMAGE', 'XFIXES', 'RANDR', 'Xvfb',
    'listen port', 'data dir', 'token file']) {
    assert.match(r.stdout, new RegExp(`^  ok\\s+${name}\\s`, 'm'), name);
  }
  assert.match(r.stdout, /display\s+:\d+, 1280x800/);
  // The Xvfb and WM it started are gone (their pids are in the debug log).
  const pids = [...r.stderr.matchAll(/\(pid (\d+)\)/g)].map((m) => Number(m[1]));
  assert.ok(pids.length >= 1, r.stderr);
  assert.deepEqual(pids.filter(alive), []);
});

test('deskd doctor on a bogus display exits non-zero and says why', () => {
  const dir = tempDir('deskd-doctor-');
  const r = spawnSync(DESKD_BIN, ['doctor', '--display', ':99999', '--listen', '127.0.0.1:0', '--data-dir', dir],
    { encoding: 'utf8', env: cleanEnv(), timeout: 20000 });
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /FAIL\s+display\s+:99999: cannot connect/);
  assert.match(r.stdout, /not healthy/);
});

test('deskd doctor flags a world-writable data dir and a readable token file', () => {
  const dir = tempDir('deskd-doctor-');
  chmodSync(dir, 0o777);
  writeFileSync(join(dir, 'token'), 'secret\n', { mode: 0o644 });
  chmodSync(join(dir, 'token'), 0o644);
  const x = spawnSync(DESKD_BIN, ['doctor', '--display', ':99999', '--listen', '127.0.0.1:0', '--data-dir', dir],
    { encoding: 'utf8', env: cleanEnv(), timeout: 20000 });
  chmodSync(dir, 0o700);
  assert.match(x.stdout, /FAIL\s+data dir\s+.*0777 is group\/world writable/);
  assert.match(x.stdout, /FAIL\s+token file\s+.*0644; run chmod 600/);
});

test('deskd doctor: a port in use fails; a missing Xvfb fails only without --display; a missing openbox is a note', async (t) => {
  const dir = tempDir('deskd-doctor-');
  const busy = createServer();
  await new Promise((res) => busy.listen(0, '127.0.0.1', res));
  t.after(() => busy.close());
  const port = busy.address().port;
  const r = await new Promise((res) => {
    const p = spawn(DESKD_BIN, ['doctor', '--display', ':99999', '--listen', `127.0.0.1:${port}`, '--data-dir', dir],
      { env: { ...cleanEnv(), PATH: '/nonexistent' } });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.on('exit', (code) => res({ code, out }));
  });
  assert.equal(r.code, 1);
  assert.match(r.out, new RegExp(`FAIL\\s+listen port\\s+127\\.0\\.0\\.1:${port}: Address already in use`));
  // With --display given, a missing Xvfb is only a note.
  assert.match(r.out, /ok\s+Xvfb\s+not on PATH \(only needed without --display\)/);
  assert.match(r.out, /ok\s+openbox\s+not on PATH \(optional/);

  const r2 = spawnSync(DESKD_BIN, ['doctor', '--listen', '127.0.0.1:0', '--data-dir', dir],
    { encoding: 'utf8', env: { ...cleanEnv(), PATH: '/nonexistent' }, timeout: 20000 });
  assert.equal(r2.status, 1);
  assert.match(r2.stdout, /FAIL\s+Xvfb\s+not on PATH: needed for the embedded display/);
  assert.match(r2.stdout, /FAIL\s+display\s+no display/);
});

test('deskd doctor with a deskd serving on the port checks that server and its display, exits 0', async (t) => {
  const d = await startDeskd({ args: ['--launch', 'none'] });
  t.after(() => d.stop());
  const port = new URL(d.url).port;
  const doctorRun = (args) => new Promise((res) => {
    const p = spawn(DESKD_BIN, ['doctor', '--listen', `127.0.0.1:${port}`, ...args], { env: cleanEnv() });
    let out = '';
    let err = '';
    p.stdout.on('data', (c) => { out += c; });
    p.stderr.on('data', (c) => { err += c; });
    p.on('exit', (code) => res({ code, out, err }));
  });
  const r = await doctorRun(['--data-dir', d.dataDir, '--token', d.token]);
  assert.equal(r.code, 0, r.out + r.err);
  assert.match(r.out, new RegExp(`ok\\s+listen port\\s+deskd \\d+\\.\\d+\\.\\d+ is serving on 127\\.0\\.0\\.1:${port} \\(healthz ok\\)`));
  // Its display, not a new one: no Xvfb started by the doctor.
  assert.match(r.out, new RegExp(`ok\\s+display\\s+${d.display}, 1280x800, .*\\(embedded Xvfb\\)`));
  assert.doesNotMatch(r.err, /embedded Xvfb on/);
  // A wrong token: still found (healthz), the display unknown, said so.
  const w = await doctorRun(['--data-dir', tempDir('deskd-doctor-'), '--token', 'wrong', '--display', d.display]);
  assert.equal(w.code, 0, w.out + w.err);
  assert.match(w.out, /listen port\s+deskd is serving on .*its display is unknown: the status tool answered 401/);
});

test('SIGTERM stops deskd and its Xvfb, WM and --launch programs', async (t) => {
  const d = await startDeskd({ args: ['--launch', 'sleep 300', '--launch', 'sleep 301; true'] });
  t.after(() => d.stop('SIGKILL'));
  const kids = await waitUntil(() => {
    const k = descendants(d.proc.pid);
    return k.filter((p) => p.comm === 'sleep').length === 2 && k;
  }, { what: 'the --launch programs' });
  assert.ok(kids.some((k) => k.comm === 'Xvfb'));
  needOpenbox();
  assert.ok(kids.some((k) => k.comm === 'openbox'));
  const t0 = Date.now();
  const r = await d.stop('SIGTERM', 10000);
  assert.deepEqual(r, { code: 0, signal: null });
  assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
  await waitUntil(() => kids.every((k) => !alive(k.pid)),
    { timeout: 3000, what: 'all children gone: ' + JSON.stringify(kids.filter((k) => alive(k.pid))) });
});

test('kill -9 of deskd takes its Xvfb, WM and simple --launch programs along', async (t) => {
  const d = await startDeskd({ args: ['--launch', 'sleep 302'] });
  t.after(() => d.stop('SIGKILL'));
  const kids = await waitUntil(() => {
    const k = descendants(d.proc.pid);
    return k.some((p) => p.comm === 'sleep') && k;
  }, { what: 'the --launch program' });
  const xvfb = kids.find((k) => k.comm === 'Xvfb');
  assert.ok(xvfb);
  t.after(() => { for (const k of kids) if (alive(k.pid)) try { process.kill(k.pid, 'SIGKILL'); } catch { } });
  await d.stop('SIGKILL');
  await waitUntil(() => kids.every((k) => !alive(k.pid)),
    { timeout: 5000, what: 'children gone after kill -9: ' + JSON.stringify(kids.filter((k) => alive(k.pid))) });
});

// Losing an external display and another X server taking its number: see
// isolated/display-identity.test.mjs (it runs in private namespaces).

test('killing the embedded Xvfb makes deskd restart it (same size, WM too)', async (t) => {
  needOpenbox();
  const d = await startDeskd({ args: ['--virtual', '800x600'] });
  t.after(() => d.stop());
  const first = descendants(d.proc.pid).find((k) => k.comm === 'Xvfb');
  assert.ok(first);
  process.kill(first.pid, 'SIGKILL');
  const again = await waitUntil(() => {
    const k = descendants(d.proc.pid);
    const x = k.find((p) => p.comm === 'Xvfb' && p.pid !== first.pid);
    return x && k.some((p) => p.comm === 'openbox') && x;
  }, { timeout: 10000, what: 'a new Xvfb' });
  assert.ok(alive(again.pid));
  await waitUntil(async () => (await healthz(d)) === 200, { timeout: 5000, what: '/healthz 200' });
  const s = (await d.tool('status')).body.structuredContent;
  assert.equal(s.display.available, true);
  assert.equal(s.display.embedded, true);
  assert.equal(s.display.width, 800);
  assert.equal(s.display.height, 600);
  assert.ok(s.display.disconnects >= 1);
  assert.deepEqual(xSize(s.display.name), [800, 600]);
});

test('--stdio: the embedded display and --launch programs never write to stdout', async (t) => {
  const dir = tempDir('deskd-stdio-');
  const p = launch('deskd --stdio', DESKD_BIN, ['--stdio', '--data-dir', dir, '--log-level', 'debug',
    '--launch', 'echo LEAKED-TO-STDOUT; sleep 300'], { env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'], keepStdout: true });
  t.after(() => p.stop());
  let out = '';
  p.proc.stdout.on('data', (d) => { out += d; });
  const send = (m) => p.proc.stdin.write(JSON.stringify(m) + '\n');
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'status', arguments: {} } });
  await waitUntil(() => out.includes('"id":2'), { timeout: 15000, what: 'the status answer' });
  await waitUntil(() => p.log.join('').includes('LEAKED-TO-STDOUT'), { timeout: 5000, what: 'the --launch output on stderr' });
  const lines = out.trim().split('\n');
  for (const l of lines) JSON.parse(l);   // nothing but JSON-RPC
  assert.ok(!out.includes('LEAKED'));
  const status = lines.map((l) => JSON.parse(l)).find((m) => m.id === 2).result.structuredContent;
  assert.equal(status.display.embedded, true);
  assert.equal(status.display.available, true);
});
