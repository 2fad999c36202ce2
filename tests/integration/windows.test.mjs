// launch and the window states, against real programs: xterm, xclock and a
// GTK editor that asks before losing unsaved changes (tests/apps/unsaved.py),
// on deskd's embedded desktop with openbox and with --wm none, and on an
// external display. Every state is read back through xprop (EWMH and ICCCM
// properties) and xwininfo, not only through deskd's own answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, writeFileSync, copyFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURE_BIN, ROOT, SLOW, need, run, startDeskd, startXvfb, tempDir, waitUntil } from './lib/harness.mjs';
import { children } from './lib/proc.mjs';

const UNSAVED = join(ROOT, 'tests/apps/unsaved.py');
// Debian's python3 (python3-gi, gir1.2-gtk-3.0), not one of a version manager.
const PYTHON = () => need('python3', { PATH: '/usr/bin' });
// The window manager's turn: a bound, not a delay (each call returns as soon as it is done).
const T = Math.min(30000, 5000 * SLOW);

/** Running (exists and not a zombie). */
function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch { return false; }
}

/** xprop -id w props...: the text. */
function xprop(display, w, ...props) {
  const r = run('xprop', ['-display', display, '-id', String(w), ...props], { encoding: 'utf8', timeout: 5000 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

/** The EWMH state atoms of w (xprop _NET_WM_STATE), e.g. ['_NET_WM_STATE_FULLSCREEN']. */
function netState(display, w) {
  const m = xprop(display, w, '_NET_WM_STATE').match(/= (.*)$/m);
  return m ? m[1].split(',').map((s) => s.trim()) : [];
}

/** ICCCM WM_STATE of w: 'Normal', 'Iconic', 'Withdrawn' or null. */
function wmState(display, w) {
  return xprop(display, w, 'WM_STATE').match(/window state: (\w+)/)?.[1] ?? null;
}

/** Size and map state from xwininfo. */
function xwininfo(display, w) {
  const r = run('xwininfo', ['-display', display, '-id', String(w)], { encoding: 'utf8', timeout: 5000 });
  if (r.status !== 0) return null;
  return {
    width: Number(r.stdout.match(/Width: (\d+)/)[1]),
    height: Number(r.stdout.match(/Height: (\d+)/)[1]),
    mapped: /Map State: IsViewable/.test(r.stdout),
  };
}

function windowExists(display, w) {
  return run('xprop', ['-display', display, '-id', String(w), 'WM_NAME'], { encoding: 'utf8', timeout: 5000 }).status === 0;
}

async function ok(d, name, args) {
  const r = await d.tool(name, args);
  assert.equal(r.status, 200, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r.body)}`);
  return r.body.structuredContent;
}

async function launched(d) {
  return (await ok(d, 'status', {})).launched;
}

/** deskd's direct children (pids). */
const kids = (d) => children(d.proc.pid).sort();

test('launch on the embedded desktop: xterm and xclock return their windows; a program without one returns its pid after the timeout; env and cwd reach the program; status lists them; deskd stops them', async (t) => {
  need('openbox');
  need('xterm');
  need('xclock');
  need('wish');
  need('sleep');
  const d = await startDeskd({ args: ['--launch', 'none'] });
  t.after(() => d.stop());

  const pids = [];
  for (const argv of [['xterm'], ['xclock', '-geometry', '120x120+30+30']]) {
    const start = Date.now();
    const r = await ok(d, 'launch', { argv });
    pids.push(r.pid);
    assert.ok(r.window > 0, JSON.stringify(r));
    assert.equal(r.program, argv[0]);
    assert.equal(r.path, `/usr/bin/${argv[0]}`);
    // The window is that process's: _NET_WM_PID, read by xprop.
    assert.match(xprop(d.display, r.window, '_NET_WM_PID'), new RegExp(`= ${r.pid}$`, 'm'));
    assert.ok(xwininfo(d.display, r.window).mapped);
    const list = (await ok(d, 'windows', { pid: r.pid })).windows;
    assert.deepEqual(list.map((w) => w.id), [r.window]);
    assert.equal(list[0].class, argv[0] === 'xterm' ? 'XTerm' : 'XClock');
    t.diagnostic(`launch ${argv[0]}: window in ${Date.now() - start} ms`);
  }

  // Several at once: each gets its own process and its own window.
  const many = await Promise.all([0, 1, 2, 3].map((i) => ok(d, 'launch', { argv: ['xclock', '-geometry', `60x60+${300 + 70 * i}+20`] })));
  assert.equal(new Set(many.map((r) => r.pid)).size, 4);
  assert.equal(new Set(many.map((r) => r.window)).size, 4, JSON.stringify(many));
  for (const r of many) assert.match(xprop(d.display, r.window, '_NET_WM_PID'), new RegExp(`= ${r.pid}$`, 'm'));
  pids.push(...many.map((r) => r.pid));

  // Tk sets no _NET_WM_PID: the X server's record of its client (X-Resource)
  // matches the window to the process, at once instead of after the timeout.
  const tcl = join(tempDir('deskd-launch-tk-'), 'probe.tcl');
  writeFileSync(tcl, 'wm title . "deskd tk"\nlabel .l -text "a Tk window"\npack .l\n');
  const tkStart = Date.now();
  const tk = await ok(d, 'launch', { argv: ['wish', tcl], timeout_ms: 10000 });
  const tkTook = Date.now() - tkStart;
  pids.push(tk.pid);
  assert.ok(tk.window > 0 && !tk.timed_out, JSON.stringify(tk));
  assert.doesNotMatch(xprop(d.display, tk.window, '_NET_WM_PID'), /= \d+/, 'Tk sets no _NET_WM_PID');
  assert.ok(tkTook < 5000, `the window in ${tkTook} ms, not after the 10 s timeout`);
  const tkw = (await ok(d, 'windows', {})).windows.find((w) => w.id === tk.window);
  assert.equal(tkw.pid, tk.pid, 'listed with its pid');
  t.diagnostic(`launch wish (no _NET_WM_PID): window in ${tkTook} ms`);

  // sleep maps no window: its pid after the timeout, and it runs on.
  const start = Date.now();
  const s = await ok(d, 'launch', { argv: ['sleep', '300'], timeout_ms: 600 });
  const took = Date.now() - start;
  assert.equal(s.window, undefined);
  assert.equal(s.timed_out, true);
  assert.match(s.message, /started \/usr\/bin\/sleep \(pid \d+\); it mapped no window within \d+ ms \(it still runs\)/);
  assert.ok(took >= 600 && took < 3000 * SLOW, `took ${took} ms`);
  assert.ok(alive(s.pid));
  pids.push(s.pid);
  // wait_for_window: false answers at once.
  const s2 = await ok(d, 'launch', { argv: ['sleep', '301'], wait_for_window: false });
  assert.equal(s2.timed_out, undefined);
  pids.push(s2.pid);

  // A launcher that starts the program and exits 0 (here sh, given by the
  // caller: deskd itself runs no shell): the window of its process group.
  const sh = await ok(d, 'launch', { argv: ['sh', '-c', 'xclock -geometry 80x80+600+300 & exit 0'] });
  assert.ok(sh.window > 0, JSON.stringify(sh));
  const shWinPid = Number(xprop(d.display, sh.window, '_NET_WM_PID').match(/= (\d+)/)[1]);
  assert.notEqual(shWinPid, sh.pid);

  // A program that fails at once: an error with its exit code and its last
  // output, at once (not a timeout, not a success to poll windows after).
  const t0 = Date.now();
  const fr = await d.tool('launch', { argv: ['sh', '-c', 'echo starting; echo "cannot open display: no such thing ✗" >&2; exit 3'], timeout_ms: 5000 });
  assert.equal(fr.status, 422, JSON.stringify(fr.body));
  const f = fr.body.error;
  assert.equal(f.code, 'program_exited');
  assert.ok(Date.now() - t0 < 3000 * SLOW, `answered after ${Date.now() - t0} ms`);
  assert.match(f.message, /ended after \d+ ms without a window \(exit code 3\); its last output:\nstarting\ncannot open display: no such thing ✗/);
  const fs = (await d.tool('launch', { argv: ['false'], timeout_ms: 5000 })).body.error;
  assert.equal(fs.code, 'program_exited');
  assert.match(fs.message, /\(exit code 1\); it wrote nothing/);
  // Exit 0 without a window (a command): a result that says so.
  const z = await ok(d, 'launch', { argv: ['true'], timeout_ms: 5000 });
  assert.equal(z.exited, true);
  assert.equal(z.exit_code, 0);
  assert.equal(z.output, '');

  // env and cwd reach the program (no shell: printenv and pwd are programs);
  // their output is logged under their name.
  const dir = tempDir('deskd-launch-cwd-');
  const pe = await ok(d, 'launch', { argv: ['printenv', 'DESKD_TEST_VAR'], env: ['DESKD_TEST_VAR=a b;$HOME'], wait_for_window: false });
  const pw = await ok(d, 'launch', { argv: ['pwd'], cwd: dir, wait_for_window: false });
  await waitUntil(() => d.log.join('').includes(`printenv[${pe.pid}]: a b;$HOME`), { what: 'printenv output in the log' });
  await waitUntil(() => d.log.join('').includes(`pwd[${pw.pid}]: ${dir}`), { what: 'pwd output in the log' });

  // status: running ones first, with their pids; ended ones with their code.
  const l = await launched(d);
  for (const pid of pids) assert.ok(l.some((e) => e.pid === pid && e.running), `pid ${pid} in ${JSON.stringify(l)}`);
  await waitUntil(async () => (await launched(d)).some((e) => e.pid === fs.pid && !e.running && e.exit_code === 1),
    { what: 'false reaped with exit code 1' });
  // They are deskd's children.
  for (const pid of pids) assert.ok(kids(d).includes(pid), `${pid} is a child of deskd`);

  // deskd stops them when it stops (SIGTERM to each, then SIGKILL).
  const stopStart = Date.now();
  await d.stop();
  t.diagnostic(`deskd stopped in ${Date.now() - stopStart} ms`);
  for (const pid of pids) await waitUntil(() => !alive(pid), { timeout: 3000, what: `launched pid ${pid} to be gone` });
  // What a launcher left in its process group goes too.
  await waitUntil(() => !alive(shWinPid), { timeout: 3000, what: `the xclock sh started (pid ${shWinPid}) to be gone` });
});

test('launch refuses bad input with a clear error and starts nothing', async (t) => {
  const d = await startDeskd({ args: ['--launch', 'none', '--wm', 'none', '--view-token', 'view-token-launch'] });
  t.after(() => d.stop());
  const before = kids(d);
  const dir = tempDir('deskd-launch-bad-');
  writeFileSync(join(dir, 'plain'), 'not a program\n', { mode: 0o644 });
  writeFileSync(join(dir, 'garbage'), '\x7fELF garbage', { mode: 0o755 });
  const cases = [
    [{ argv: ['deskd-no-such-program'] }, 404, 'not_found', /deskd-no-such-program: no such program on PATH/],
    [{ argv: ['/nonexistent/xterm'] }, 404, 'not_found', /not an executable file/],
    [{ argv: [] }, 400, 'bad_arguments', /argv/],
    [{ argv: [''] }, 400, 'bad_arguments', /argv must name a program/],
    [{ argv: ['xterm', 7] }, 400, 'bad_arguments', /argv/],
    [{ argv: 'xterm' }, 400, 'bad_arguments', /argv/],
    [{ argv: ['./xterm'] }, 400, 'bad_arguments', /program name \(found on PATH\) or an absolute path/],
    [{ argv: Array(257).fill('x') }, 400, 'bad_arguments', /argv/],
    [{ argv: ['xterm', 'x'.repeat(4097)] }, 400, 'bad_arguments', /at most 4096/],
    [{ argv: ['xterm'], env: ['1X=y'] }, 400, 'bad_arguments', /not a variable name/],
    [{ argv: ['xterm'], env: ['NOEQUALS'] }, 400, 'bad_arguments', /NAME=value/],
    [{ argv: ['xterm'], env: ['DISPLAY=:99'] }, 400, 'bad_arguments', /may not set DISPLAY/],
    [{ argv: ['xterm'], cwd: '/nonexistent-dir' }, 400, 'bad_arguments', /cwd \/nonexistent-dir: No such file or directory/],
    [{ argv: ['xterm'], cwd: 'relative' }, 400, 'bad_arguments', /cwd must be an absolute path/],
    [{ argv: ['xterm'], cwd: '/etc/hostname' }, 400, 'bad_arguments', /not a directory/],
    [{ argv: [join(dir, 'plain')] }, 404, 'not_found', /plain is not an executable file/],
    // exec itself fails: the child reports its errno, nothing runs.
    [{ argv: [join(dir, 'garbage')] }, 400, 'bad_arguments', /cannot start .*garbage: Exec format error/],
  ];
  for (const [args, status, code, message] of cases) {
    const r = await d.tool('launch', args);
    assert.equal(r.status, status, `${JSON.stringify(args).slice(0, 80)}: ${JSON.stringify(r.body).slice(0, 300)}`);
    assert.equal(r.body.error.code, code);
    assert.match(r.body.error.message, message);
  }
  // NUL bytes never reach exec: the body is refused before the tool runs.
  for (const body of ['{"argv":["xterm\\u0000-e"]}', '{"argv":["xterm"],"env":["A=\\u0000"]}', '{"argv":["xterm"],"cwd":"/tmp\\u0000"}']) {
    const r = await d.fetch('/api/v1/tools/launch', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    assert.equal(r.status, 400, body);
    assert.match(await r.text(), /bad_arguments.*JSON_ALLOW_NUL|NUL/);
  }
  // The view token may not launch, nor change a window (it may list them).
  for (const [name, body] of [['launch', '{"argv":["xterm"]}'], ['window', '{"op":"close","window":1}'],
    ['window_minimize', '{"window":1}']]) {
    const v = await fetch(`${d.url}/api/v1/tools/${name}`, { method: 'POST', body,
      headers: { authorization: 'Bearer view-token-launch', 'content-type': 'application/json' } });
    assert.equal(v.status, 403, name);
    assert.equal((await v.json()).error.code, 'forbidden');
  }
  const vw = await fetch(`${d.url}/api/v1/tools/windows`, { method: 'POST', body: '{}',
    headers: { authorization: 'Bearer view-token-launch', 'content-type': 'application/json' } });
  assert.equal(vw.status, 200);
  // Nothing started: no new child, no launched entry, no window.
  await new Promise((res) => setTimeout(res, 300));
  assert.deepEqual(kids(d), before);
  assert.deepEqual(await launched(d), []);
  assert.deepEqual((await ok(d, 'windows', {})).windows, []);
});

test('--allow-launch limits launch to files (a path, or what a name finds on deskd PATH); an external display needs it', async (t) => {
  need('xclock');
  const d = await startDeskd({ args: ['--launch', 'none', '--wm', 'none', '--allow-launch', 'xclock', '--allow-launch', '/usr/bin/printenv'] });
  t.after(() => d.stop());
  const denied = await d.tool('launch', { argv: ['xterm'] });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.code, 'forbidden');
  assert.match(denied.body.error.message, /\/usr\/bin\/xterm is not allowed: --allow-launch/);
  assert.deepEqual(await launched(d), [], 'nothing started');
  // A name allows the file it finds on deskd's PATH, not another file of
  // that name, neither given by path nor found through the call's env PATH.
  const dir = tempDir('deskd-allow-');
  copyFileSync('/bin/true', join(dir, 'xclock'));
  chmodSync(join(dir, 'xclock'), 0o755);
  const r0 = await d.tool('launch', { argv: [join(dir, 'xclock')] });
  assert.equal(r0.status, 403, JSON.stringify(r0.body));
  assert.match(r0.body.error.message, new RegExp(`${dir}/xclock is not allowed`));
  // Under an allow-list env may not set PATH at all (launch.test.mjs, R1).
  const r1 = await d.tool('launch', { argv: ['xclock'], env: [`PATH=${dir}`] });
  assert.equal(r1.status, 403, JSON.stringify(r1.body));
  assert.match(r1.body.error.message, /env may not set PATH while --allow-launch is in force/);
  assert.deepEqual(await launched(d), [], 'nothing started');
  const c = await ok(d, 'launch', { argv: ['/usr/bin/xclock'] });	// the file the name finds
  assert.ok(c.window > 0);
  const p = await ok(d, 'launch', { argv: ['printenv', 'HOME'], wait_for_window: false });	// a path matches the file
  assert.ok(p.pid > 0);
  assert.equal((await d.tool('launch', { argv: ['env'] })).status, 403);

  // An external display: nothing may be launched without --allow-launch.
  const x = await startXvfb();
  t.after(() => x.stop());
  const e = await startDeskd({ display: x.display });
  t.after(() => e.stop());
  const r = await e.tool('launch', { argv: ['xclock'] });
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'forbidden');
  assert.match(r.body.error.message, /external display \(--display\) is off; start deskd with --allow-launch xclock/);
  assert.deepEqual(children(e.proc.pid), []);
  const e2 = await startDeskd({ display: x.display, args: ['--allow-launch', 'xclock'] });
  t.after(() => e2.stop());
  const w = await ok(e2, 'launch', { argv: ['xclock'] });
  assert.ok(w.window > 0);
  assert.match(xprop(x.display, w.window, '_NET_WM_PID'), new RegExp(`= ${w.pid}$`, 'm'));
  await e2.stop();
  await waitUntil(() => !alive(w.pid), { timeout: 3000, what: 'xclock stopped with deskd' });
});

test('window states under openbox, read back through xprop and xwininfo', async (t) => {
  need('openbox');
  need('xterm');
  need('xclock');
  const d = await startDeskd({ args: ['--launch', 'none'] });
  t.after(() => d.stop());
  const dpy = d.display;
  const { window: w } = await ok(d, 'launch', { argv: ['xclock', '-geometry', '200x150+100+100'] });
  const { window: other } = await ok(d, 'launch', { argv: ['xterm'] });
  const before = xwininfo(dpy, w);

  const m = await ok(d, 'window_minimize', { window: w, timeout_ms: T });
  assert.equal(m.applied, true, JSON.stringify(m));
  assert.equal(m.minimized, true);
  assert.equal(m.wm_name, 'Openbox');
  assert.equal(wmState(dpy, w), 'Iconic');
  assert.ok(netState(dpy, w).includes('_NET_WM_STATE_HIDDEN'));
  assert.equal(xwininfo(dpy, w).mapped, false);
  assert.equal((await ok(d, 'windows', {})).windows.find((x) => x.id === w).minimized, true);

  const r = await ok(d, 'window_restore', { window: w, timeout_ms: T });
  assert.equal(r.applied, true, JSON.stringify(r));
  assert.equal(wmState(dpy, w), 'Normal');
  assert.ok(!netState(dpy, w).includes('_NET_WM_STATE_HIDDEN'));
  assert.ok(xwininfo(dpy, w).mapped);

  const x = await ok(d, 'window_maximize', { window: w, timeout_ms: T });
  assert.equal(x.applied, true, JSON.stringify(x));
  assert.ok(netState(dpy, w).includes('_NET_WM_STATE_MAXIMIZED_VERT'));
  assert.ok(netState(dpy, w).includes('_NET_WM_STATE_MAXIMIZED_HORZ'));
  assert.equal(x.width, 1280);
  assert.equal(xwininfo(dpy, w).width, 1280);
  assert.equal((await ok(d, 'windows', {})).windows.find((i) => i.id === w).maximized, true);

  // Through the group tool, as the default surface offers it.
  const f = await ok(d, 'window', { op: 'fullscreen', window: w, timeout_ms: T });
  assert.equal(f.applied, true, JSON.stringify(f));
  assert.ok(netState(dpy, w).includes('_NET_WM_STATE_FULLSCREEN'));
  assert.deepEqual([f.x, f.y, f.width, f.height], [0, 0, 1280, 800]);
  assert.deepEqual(xwininfo(dpy, w).width, 1280);

  const back = await ok(d, 'window', { op: 'restore', window: w, timeout_ms: T });
  assert.equal(back.applied, true, JSON.stringify(back));
  const st = netState(dpy, w);
  assert.ok(!st.includes('_NET_WM_STATE_FULLSCREEN') && !st.includes('_NET_WM_STATE_MAXIMIZED_VERT'), st.join());
  assert.deepEqual([xwininfo(dpy, w).width, xwininfo(dpy, w).height], [before.width, before.height]);

  const rs = await ok(d, 'window_resize', { window: w, width: 321, height: 234, timeout_ms: T });
  assert.equal(rs.applied, true, JSON.stringify(rs));
  assert.deepEqual([xwininfo(dpy, w).width, xwininfo(dpy, w).height], [321, 234]);
  // xterm keeps its size a whole number of character cells: openbox honours
  // the size hints, and deskd says so instead of claiming the size.
  const xr = await ok(d, 'window_resize', { window: other, width: 301, height: 201, timeout_ms: T });
  assert.deepEqual([xr.width, xr.height], [xwininfo(dpy, other).width, xwininfo(dpy, other).height]);
  assert.equal(xr.applied, xr.width === 301 && xr.height === 201, JSON.stringify(xr));
  if (!xr.applied) assert.match(xr.message, /not 301x201/);

  // Raise: the window is the last of _NET_CLIENT_LIST_STACKING.
  await ok(d, 'window_raise', { window: other, timeout_ms: T });
  const ra = await ok(d, 'window_raise', { window: w, timeout_ms: T });
  assert.equal(ra.applied, true, JSON.stringify(ra));
  const stacking = run('xprop', ['-display', dpy, '-root', '_NET_CLIENT_LIST_STACKING'], { encoding: 'utf8' }).stdout;
  assert.equal(Number(stacking.trim().split(/[ ,]+/).pop()), w, stacking);

  // The named tools and the group answer alike; a missing window is an error.
  const gone = await d.tool('window', { op: 'maximize', window: 1 });
  assert.equal(gone.status, 404);
  assert.equal(gone.body.error.code, 'window_not_found');
  const badOp = await d.tool('window', { op: 'explode', window: w });
  assert.equal(badOp.status, 400);

  // Close xclock (it takes WM_DELETE_WINDOW): the window and the program go.
  const pid = Number(xprop(dpy, w, '_NET_WM_PID').match(/= (\d+)/)[1]);
  const c = await ok(d, 'window_close', { window: w });
  assert.equal(c.closed, true, JSON.stringify(c));
  assert.equal(c.killed, false);
  assert.equal(c.exists, false);
  assert.equal(windowExists(dpy, w), false);
  await waitUntil(() => !alive(pid), { what: 'xclock to exit' });
});

test('closing a window with unsaved changes reports that it stays and names the dialog; force ends its client', async (t) => {
  need('openbox');
  const py = PYTHON();
  const d = await startDeskd({ args: ['--launch', 'none'] });
  t.after(() => d.stop());
  const dpy = d.display;
  const state = join(tempDir('deskd-unsaved-'), 'state');
  const app = await ok(d, 'launch', { argv: [py, UNSAVED, '--text', 'draft', '--state', state], timeout_ms: 15000 });
  assert.ok(app.window > 0, JSON.stringify(app));
  await waitUntil(() => existsSync(state) && readFileSync(state, 'utf8').includes('ready'), { what: 'the editor ready' });

  const c = await ok(d, 'window_close', { window: app.window });
  assert.equal(c.closed, false, JSON.stringify(c));
  assert.equal(c.applied, false);
  assert.equal(c.exists, true);
  assert.equal(c.dialogs.length, 1, JSON.stringify(c));
  assert.match(c.message, /still there: it opened a dialog/);
  assert.ok(windowExists(dpy, app.window));
  assert.match(readFileSync(state, 'utf8'), /^asked$/m);
  // The dialog is transient for the window and modal: xprop and windows agree.
  const dialog = c.dialogs[0];
  assert.match(xprop(dpy, dialog, 'WM_TRANSIENT_FOR'), new RegExp(`window id # 0x${app.window.toString(16)}`));
  assert.ok(netState(dpy, dialog).includes('_NET_WM_STATE_MODAL'));
  const listed = (await ok(d, 'windows', { pid: app.pid })).windows;
  const dl = listed.find((w) => w.id === dialog);
  assert.equal(dl.transient_for, app.window);
  assert.equal(dl.modal, true);
  assert.equal(dl.title, 'Save changes?');
  assert.ok(alive(app.pid));

  // force: after the grace period the client is ended; the windows and the process go.
  const start = Date.now();
  const k = await ok(d, 'window_close', { window: app.window, force: true, timeout_ms: 500 });
  assert.equal(k.closed, true, JSON.stringify(k));
  assert.equal(k.killed, true);
  assert.ok(Date.now() - start >= 500);
  assert.equal(windowExists(dpy, app.window), false);
  assert.equal(windowExists(dpy, dialog), false);
  await waitUntil(() => !alive(app.pid), { what: 'the editor to exit' });
  await waitUntil(async () => (await launched(d)).some((e) => e.pid === app.pid && !e.running), { what: 'the editor reaped' });
});

test('--wm none: minimize, maximize and fullscreen are not applied (nothing does them); resize, raise, restore and close work', async (t) => {
  need('xclock');
  const d = await startDeskd({ args: ['--launch', 'none', '--wm', 'none'] });
  t.after(() => d.stop());
  const dpy = d.display;
  const { window: w, pid } = await ok(d, 'launch', { argv: ['xclock', '-geometry', '150x150+10+10'] });
  for (const op of ['minimize', 'maximize', 'fullscreen']) {
    const r = await ok(d, `window_${op}`, { window: w, timeout_ms: T });
    assert.equal(r.applied, false, JSON.stringify(r));
    assert.equal(r.window_manager, false);
    assert.match(r.message, /no window manager runs on this display/);
    assert.equal(r.minimized || r.maximized || r.fullscreen, false);
    assert.deepEqual(netState(dpy, w), []);
    assert.deepEqual([xwininfo(dpy, w).width, xwininfo(dpy, w).mapped], [150, true]);
  }
  assert.equal((await ok(d, 'window_restore', { window: w, timeout_ms: T })).applied, true);
  const rs = await ok(d, 'window_resize', { window: w, width: 222, height: 111, timeout_ms: T });
  assert.equal(rs.applied, true, JSON.stringify(rs));
  assert.deepEqual([xwininfo(dpy, w).width, xwininfo(dpy, w).height], [222, 111]);
  const { window: w2 } = await ok(d, 'launch', { argv: ['xclock', '-geometry', '100x100+20+20'] });
  assert.ok(w2 > 0);
  const ra = await ok(d, 'window_raise', { window: w, timeout_ms: T });
  assert.equal(ra.applied, true, JSON.stringify(ra));
  // The root's last mapped child is the window itself (no frames without a WM).
  const tree = run('xwininfo', ['-display', dpy, '-root', '-children'], { encoding: 'utf8' }).stdout;
  const ids = [...tree.matchAll(/^\s+(0x[0-9a-f]+) /gm)].map((m) => Number(m[1]));
  assert.equal(ids[0], w, tree);	// xwininfo lists the top of the stack first
  const c = await ok(d, 'window_close', { window: w });
  assert.equal(c.closed, true, JSON.stringify(c));
  await waitUntil(() => !alive(pid), { what: 'xclock to exit' });

  // A client that does not take WM_DELETE_WINDOW (the fixture, plain Xlib):
  // not closed, and said why; force ends its connection and it exits.
  need(FIXTURE_BIN);
  const state = join(tempDir('deskd-fixture-close-'), 'state.json');
  const fx = await ok(d, 'launch', { argv: [FIXTURE_BIN, '--state', state, '--geometry', '200x100+300+300'] });
  assert.ok(fx.window > 0, JSON.stringify(fx));
  assert.doesNotMatch(xprop(dpy, fx.window, 'WM_PROTOCOLS'), /WM_DELETE_WINDOW/);
  const n = await ok(d, 'window', { op: 'close', window: fx.window, timeout_ms: 300 });
  assert.equal(n.closed, false, JSON.stringify(n));
  assert.match(n.message, /does not take WM_DELETE_WINDOW; force: true ends its client/);
  assert.ok(alive(fx.pid) && windowExists(dpy, fx.window));
  const k = await ok(d, 'window', { op: 'close', window: fx.window, force: true, timeout_ms: 300 });
  assert.deepEqual([k.closed, k.killed, k.exists], [true, true, false], JSON.stringify(k));
  assert.equal(windowExists(dpy, fx.window), false);
  await waitUntil(() => !alive(fx.pid), { what: 'the fixture to exit' });

  // The editor's question needs no window manager either.
  const py = PYTHON();
  const ed = await ok(d, 'launch', { argv: [py, UNSAVED, '--text', 'draft'], timeout_ms: 15000 });
  const q = await ok(d, 'window_close', { window: ed.window });
  assert.deepEqual([q.closed, q.dialogs.length], [false, 1], JSON.stringify(q));
  assert.match(xprop(dpy, q.dialogs[0], 'WM_TRANSIENT_FOR'), new RegExp(`window id # 0x${ed.window.toString(16)}`));
  const qk = await ok(d, 'window_close', { window: ed.window, force: true, timeout_ms: 200 });
  assert.equal(qk.closed, true, JSON.stringify(qk));
  await waitUntil(() => !alive(ed.pid), { what: 'the editor to exit' });
});
