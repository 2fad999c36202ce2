// The Wayland desktop end to end: deskd starts its own headless sway
// (--desktop wayland), a Wayland-native GTK 3 probe (tests/apps/wl_probe.py)
// runs on it through the launch tool, and every effect is checked outside
// deskd: the clicks the probe logs in window coordinates, the text its view
// holds (written to a file on every change), sway's own tree (swaymsg), the
// pixels the probe paints. The same tools as on X11, over REST.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { need, run, startDeskd, tempDir, waitUntil, sleep, loadCores, ROOT, SLOW } from './lib/harness.mjs';
import { ok, shot } from './lib/tools.mjs';
import { openLive, jpegSize } from './lib/live.mjs';
import { decodePng } from './lib/png.mjs';
import { appCorpus } from './lib/corpus.mjs';

const PROBE = join(ROOT, 'tests/apps/wl_probe.py');
const GREEN = [20, 200, 40], BLUE = [40, 60, 230];
const T = Math.min(30000, 10000 * SLOW);

/** sway's tree, read with swaymsg on deskd's embedded sway. */
function swayTree(ipc) {
  const r = run('swaymsg', ['-s', ipc, '-t', 'get_tree', '-r'], { encoding: 'utf8', timeout: 5000 });
  assert.equal(r.status, 0, r.stderr);
  const views = [];
  const walk = (n) => {
    if ((n.type === 'con' || n.type === 'floating_con') && n.pid) views.push(n);
    for (const c of [...(n.nodes || []), ...(n.floating_nodes || [])]) walk(c);
  };
  walk(JSON.parse(r.stdout));
  return views;
}

/** deskd on its own sway with the probe launched on it. */
async function waylandDesktop(t, args = []) {
  need('sway');
  need('python3', { PATH: '/usr/bin' });
  const d = await startDeskd({ args: ['--desktop', 'wayland', '--launch', 'none', '--tools', 'both',
    '--max-image-dimension', '0', ...args] });
  t.after(() => d.stop());
  const [, ipc] = d.display.match(/\?sway=([^&]*)/) || [];
  assert.ok(ipc, `the address names sway's IPC: ${d.display}`);
  const dir = tempDir('deskd-wl-probe-');
  const log = join(dir, 'probe.log'), text = join(dir, 'probe.txt');
  const l = await ok(d, 'launch', { argv: ['/usr/bin/python3', PROBE, log, text],
    env: ['GDK_BACKEND=wayland', 'LANG=C.UTF-8', 'LC_ALL=C.UTF-8'], wait_for_window: true, timeout_ms: T });
  assert.ok(l.window, `the probe's window: ${JSON.stringify(l)}`);
  await waitUntil(() => existsSync(log) && readFileSync(log, 'utf8').includes('ready'), { timeout: T, what: 'the probe drew' });
  const probe = {
    window: l.window, pid: l.pid, log,
    clicks: () => readFileSync(log, 'utf8').split('\n').filter((s) => s.startsWith('click ')).map((s) => s.split(' ').slice(1).map(Number)),
    text: () => (existsSync(text) ? readFileSync(text, 'utf8') : ''),
  };
  return { d, ipc, probe };
}

test('wayland: status and healthz say so; the probe is listed with its pid; screenshots show its pixels; clicks land on the mapped pixel at scales 1 and 0.5; a batch of 50 clicks; typing and chords exact; the clipboard both ways; window states read back from sway', { timeout: 600000 }, async (t) => {
  const { d, ipc, probe } = await waylandDesktop(t);

  const st = await ok(d, 'status');
  assert.equal(st.display.backend, 'wayland');
  assert.equal(st.display.embedded, true);
  assert.deepEqual([st.display.width, st.display.height], [1280, 800]);
  const doctor = await ok(d, 'doctor');
  for (const name of ['zwlr_screencopy_manager_v1', 'zwlr_virtual_pointer_manager_v1',
    'zwp_virtual_keyboard_manager_v1', 'zwlr_data_control_manager_v1', 'zwlr_foreign_toplevel_manager_v1', 'windows']) {
    assert.equal(doctor.checks.find((c) => c.name === name)?.ok, true, `doctor: ${name}`);
  }
  assert.match(doctor.checks.find((c) => c.name === 'windows').detail, /^sway IPC/);
  assert.equal(doctor.healthy, true, JSON.stringify(doctor.checks.filter((c) => !c.ok)));
  const h = await fetch(d.url + '/healthz');
  assert.equal(h.status, 200);
  assert.equal(h.headers.get('x-deskd-backend'), 'wayland');

  // The window list against sway's tree.
  const wins = (await ok(d, 'windows')).windows;
  const mine = wins.find((w) => w.id === probe.window || w.window === probe.window);
  assert.ok(mine, `the probe is listed: ${JSON.stringify(wins)}`);
  assert.equal(mine.pid, probe.pid);
  assert.equal(mine.title, 'wl-probe');
  const view = swayTree(ipc).find((v) => v.id === probe.window);
  assert.ok(view, 'sway knows the same id');
  const [wx, wy] = [view.rect.x, view.rect.y];

  // Pixels: the drawing area is green with a blue box at 100,50 200x100.
  const s = await shot(d);
  assert.equal(s.png.width, 1280);
  assert.deepEqual(s.png.px(wx + 150, wy + 100), BLUE, 'inside the blue box');
  assert.deepEqual(s.png.px(wx + 50, wy + 20), GREEN, 'the green area');
  assert.deepEqual(s.png.px(wx + 100, wy + 50), BLUE, "the box's first pixel");
  assert.deepEqual(s.png.px(wx + 99, wy + 50), GREEN, 'the pixel left of it');
  const ws = await shot(d, { window: probe.window });
  assert.deepEqual([ws.meta.width, ws.meta.height], [view.rect.width, view.rect.height]);
  assert.deepEqual(ws.png.px(150, 100), BLUE);
  assert.deepEqual(ws.png.px(299, 149), BLUE);
  assert.deepEqual(ws.png.px(300, 150), GREEN);

  // Clicks at scale 1, then in a 640-wide screenshot's pixels (scale 0.5).
  const want = [];
  for (const [x, y] of [[10, 10], [123, 77], [599, 399], [300, 200], [1, 1]]) {
    await ok(d, 'computer_click', { x: wx + x, y: wy + y });
    want.push([x, y, 1]);
  }
  // The screenshot and the click in one batch: the batch keeps its space.
  for (const [x, y] of [[20, 30], [150, 100], [299, 199]]) {
    const r = await ok(d, 'computer_use', { actions: [{ type: 'screenshot', max_dimension: 640 },
      { type: 'click', x: x + wx / 2, y: y + wy / 2 }] });
    assert.equal(r.results[0].image.width, 640);
    want.push([2 * x, 2 * y, 1]);
  }
  await waitUntil(() => probe.clicks().length >= want.length, { timeout: T, what: 'the clicks logged' });
  assert.deepEqual(probe.clicks(), want);

  const batch = [];
  for (let i = 0; i < 50; i++) batch.push({ type: 'click', x: wx + 5 + (i * 11) % 590, y: wy + 5 + (i * 7) % 390 });
  await ok(d, 'computer_use', { actions: batch });
  await waitUntil(() => probe.clicks().length >= want.length + 50, { timeout: T, what: '50 batch clicks' });
  assert.deepEqual(probe.clicks().slice(want.length), batch.map((a) => [a.x - wx, a.y - wy, 1]));

  // Zoom: a 40x40 region across the box's top-left corner.
  const zr = await d.tool('zoom', { region: [wx + 90, wy + 40, wx + 130, wy + 80] });
  assert.equal(zr.status, 200, JSON.stringify(zr.body).slice(0, 300));
  const zoomed = decodePng(Buffer.from(zr.body.content.find((c) => c.type === 'image').data, 'base64'));
  assert.deepEqual(zoomed.px(1, 1), GREEN, 'the zoom starts outside the box');
  assert.deepEqual(zoomed.px(zoomed.width - 2, zoomed.height - 2), BLUE, 'and ends inside it');

  // A drag: pressed at the first point, released at the last, as the probe saw it.
  const lines = () => readFileSync(probe.log, 'utf8').split('\n');
  const l0 = lines().length;
  await ok(d, 'computer_drag', { path: [{ x: wx + 20, y: wy + 300 }, { x: wx + 200, y: wy + 320 }, { x: wx + 400, y: wy + 350 }] });
  await waitUntil(() => lines().slice(l0 - 1).some((x) => x.startsWith('release ')), { timeout: T, what: 'the drag released' });
  const drag = lines().slice(l0 - 1);
  assert.equal(drag.find((x) => x.startsWith('click ')), 'click 20 300 1');
  assert.equal(drag.find((x) => x.startsWith('release ')), 'release 400 350 1');
  // GTK merges the motion of one frame into its last event: at least one.
  assert.ok(drag.some((x) => x.startsWith('motion ')), `motion with the button held: ${drag.join(' | ')}`);

  // Scroll: notches in both directions on both axes, as the probe sees them.
  const scrolls = () => readFileSync(probe.log, 'utf8').split('\n').filter((l) => l.startsWith('scroll ')).map((l) => l.slice(7));
  const s0 = scrolls().length;
  await ok(d, 'computer_use', { actions: [
    { type: 'scroll', x: wx + 300, y: wy + 200, scroll_y: 200 },
    { type: 'scroll', x: wx + 300, y: wy + 200, scroll_y: -100 },
    { type: 'scroll', x: wx + 300, y: wy + 200, scroll_x: 100 },
    { type: 'scroll', x: wx + 300, y: wy + 200, scroll_x: -100 }] });
  await waitUntil(() => scrolls().length >= s0 + 5, { timeout: T, what: 'the scroll notches' });
  // deskd sends the protocol's sign (wl_pointer: positive is down or right,
  // as on X11's buttons 5 and 7). GTK 3's Wayland backend names a discrete
  // horizontal step the other way round (gdkdevice-wayland.c: a positive
  // value is GDK_SCROLL_LEFT; its smooth deltas keep the sign), so the
  // probe, which reads directions, logs right as left.
  assert.deepEqual(scrolls().slice(s0), ['down', 'down', 'up', 'left', 'right']);

  // Typing: into the text view below the drawing area, read back from the
  // file; idle, then with both cores busy.
  await ok(d, 'window_focus', { window: probe.window });
  assert.equal(swayTree(ipc).find((v) => v.id === probe.window).focused, true, 'focused, as sway says');
  await ok(d, 'computer_click', { x: wx + 300, y: wy + 500 });
  const corpus = appCorpus();
  let exact = 0;
  let stopLoad = () => {};
  t.after(() => stopLoad());
  for (const [i, text] of [...corpus, ...corpus].entries()) {
    if (i === corpus.length) stopLoad = loadCores();
    await ok(d, 'computer_keypress', { keys: ['ctrl', 'a'] });
    await ok(d, 'computer_keypress', { keys: ['BackSpace'] });
    await waitUntil(() => probe.text() === '', { timeout: T, what: 'the view cleared' });
    await ok(d, 'computer_type', { text });
    // The probe rewrites its whole text file on every change: under load a
    // 2,000-character string takes it a while.
    await waitUntil(() => probe.text().length >= text.length, { timeout: 4 * T, what: `${[...text].length} characters` }).catch(() => {});
    assert.equal(probe.text(), text, `typed exactly (${i < corpus.length ? 'idle' : 'loaded'}): ${JSON.stringify(text).slice(0, 80)}`);
    exact++;
  }
  stopLoad();
  assert.equal(exact, 2 * corpus.length);
  t.diagnostic(`${exact}/${2 * corpus.length} strings (idle and loaded) typed byte-exact into a Wayland GTK 3 view`);

  // The clipboard: deskd's content pasted into the app; the app's copied back.
  const clip = 'clipboard → Wayland ✓ 中文 😀\nsecond line';
  await ok(d, 'clipboard_write', { text: clip });
  await ok(d, 'computer_keypress', { keys: ['ctrl', 'a'] });
  await ok(d, 'computer_keypress', { keys: ['ctrl', 'v'] });
  await waitUntil(() => probe.text() === clip, { timeout: T, what: 'the paste arrived' });
  await ok(d, 'computer_keypress', { keys: ['ctrl', 'a'] });
  await ok(d, 'computer_type', { text: 'from the app ✓' });
  await ok(d, 'computer_keypress', { keys: ['ctrl', 'a'] });
  await ok(d, 'computer_keypress', { keys: ['ctrl', 'c'] });
  await waitUntil(async () => (await d.tool('clipboard_read', {})).body.content?.[0]?.text === 'from the app ✓',
    { timeout: T, what: "the app's copy read back" });

  // Window states, read back from sway's tree.
  const fs = await ok(d, 'window', { op: 'fullscreen', window: probe.window });
  assert.equal(fs.applied, true, JSON.stringify(fs));
  assert.equal(swayTree(ipc).find((v) => v.id === probe.window).fullscreen_mode, 1);
  await ok(d, 'window', { op: 'restore', window: probe.window });
  assert.equal(swayTree(ipc).find((v) => v.id === probe.window).fullscreen_mode, 0);
  const rs = await ok(d, 'window', { op: 'resize', window: probe.window, width: 640, height: 480 });
  assert.equal(rs.applied, true, JSON.stringify(rs));
  const r2 = swayTree(ipc).find((v) => v.id === probe.window).rect;
  assert.deepEqual([r2.width, r2.height], [640, 480]);
  const mn = await ok(d, 'window', { op: 'minimize', window: probe.window });
  assert.equal(mn.applied, false);
  assert.match(mn.message, /sway has no minimize/);
  const cl = await ok(d, 'window', { op: 'close', window: probe.window });
  assert.equal(cl.closed, true, JSON.stringify(cl));
  await waitUntil(() => !swayTree(ipc).some((v) => v.id === probe.window), { timeout: T, what: 'the window gone from sway' });
  await sleep(50);
});

/** ffprobe's view of an MP4: codec, size, decoded frames. */
function ffprobe(file) {
  const r = run('ffprobe', ['-v', 'error', '-count_frames', '-select_streams', 'v:0',
    '-show_entries', 'stream=codec_name,width,height,nb_read_frames', '-of', 'json', file], { encoding: 'utf8' });
  assert.equal(r.status, 0, `ffprobe ${file}: ${r.stderr}`);
  const st = JSON.parse(r.stdout).streams[0];
  return { codec: st.codec_name, width: st.width, height: st.height, frames: Number(st.nb_read_frames) };
}

test('wayland: the live view streams the screen and a person\'s click from the page lands exactly; a one-window recording decodes; a second deskd attaches to the running sway; without sway\'s IPC the windows come from foreign-toplevel (listed, focused, fullscreen and back, closed; what needs geometry says so)', { timeout: 600000 }, async (t) => {
  const { d, ipc, probe } = await waylandDesktop(t);
  const view = swayTree(ipc).find((v) => v.id === probe.window);
  const [wx, wy] = [view.rect.x, view.rect.y];

  // The live view: frames of the screen, then the person takes control and
  // clicks in frame pixels (640 wide: scale 0.5).
  const c = await openLive(d);
  t.after(() => c.close());
  const send = (m) => c.ws.send(JSON.stringify(m));
  await c.until((x) => x.hello);
  c.watch({ target: 'screen', fps: 10, max_dimension: 640 });
  await c.until((x) => x.frames.length >= 1, { timeout: T });
  assert.deepEqual(jpegSize(c.frames[0].jpeg), { width: 640, height: 400 });
  send({ type: 'take' });
  await c.until((x) => [...x.texts].reverse().find((m) => m.type === 'control')?.holder === 'you', { timeout: T });
  const before = probe.clicks().length;
  const fx = 100 + wx / 2, fy = 60 + wy / 2;
  send({ type: 'button', x: fx, y: fy, button: 1, down: true });
  send({ type: 'button', x: fx, y: fy, button: 1, down: false });
  await waitUntil(() => probe.clicks().length > before, { timeout: T, what: "the person's click" });
  assert.deepEqual(probe.clicks().slice(before), [[200, 120, 1]]);
  send({ type: 'release' });
  await c.until((x) => [...x.texts].reverse().find((m) => m.type === 'control')?.holder !== 'you', { timeout: T });

  // A one-window recording, decoded.
  const out = join(d.dataDir, 'wl.mp4');
  const rec = await ok(d, 'record_start', { window: probe.window, out, fps: 20 });
  assert.equal(rec.path, out);
  for (let i = 0; i < 5; i++) {
    await ok(d, 'computer_click', { x: wx + 50 + 40 * i, y: wy + 500 });
    await ok(d, 'computer_type', { text: `frame ${i} ` });
    await sleep(150);
  }
  const stop = await ok(d, 'record_stop', {});
  assert.deepEqual([stop.width, stop.height], [view.rect.width, view.rect.height]);
  const p = ffprobe(out);
  assert.equal(p.codec, 'h264');
  assert.deepEqual([p.width, p.height], [view.rect.width - (view.rect.width % 2), view.rect.height - (view.rect.height % 2)]);
  assert.ok(p.frames >= 2, `decoded frames: ${p.frames}`);

  // The tree: AT-SPI's extents are window-relative on Wayland; deskd adds
  // the window's origin. Move the probe off the origin first, so a missing
  // offset shows.
  await ok(d, 'window_move', { window: probe.window, x: 200, y: 150, width: 640, height: 600 });
  const moved = swayTree(ipc).find((v) => v.id === probe.window).rect;
  assert.deepEqual([moved.x, moved.y], [200, 150]);
  const snap = await waitUntil(async () => {
    const r = await d.tool('ui_snapshot', { window: probe.window });
    return r.status === 200 && r.body.structuredContent.elements?.some((e) => e.role === 'text') && r.body.structuredContent;
  }, { timeout: T, what: "the probe's tree" });
  const tv = snap.elements.find((e) => e.role === 'text');
  const [x0, y0, x1, y1] = tv.bounds;
  assert.equal(y0, 400, `the text view starts below the 400 px drawing area: ${tv.bounds}`);
  assert.equal(x0, 0);
  const ps = await shot(d, { window: probe.window });
  assert.deepEqual(ps.png.px(x0 + 5, y0 - 3), GREEN, 'above the text view: the drawing area');
  assert.deepEqual(ps.png.px(x1 - 5, y1 - 5), [255, 255, 255], 'inside the text view (its empty bottom right): white');
  assert.ok(x1 > 600 && y1 > 500, `its far corner: ${tv.bounds}`);
  const st = await ok(d, 'ui_act', { ref: tv.ref, action: 'set_text', text: 'set through the tree ✓ 😀' });
  assert.equal(st.verified, true, JSON.stringify(st));
  await waitUntil(() => probe.text() === 'set through the tree ✓ 😀', { timeout: T, what: 'set_text in the app' });

  // Attach: a second deskd drives the sway the first one started.
  const sock = d.display.match(/^wayland:([^?]*)/)[1];
  const a = await startDeskd({ args: ['--wayland-display', sock, '--tools', 'both', '--max-image-dimension', '0'],
    env: { SWAYSOCK: ipc } });
  t.after(() => a.stop());
  const ast = await ok(a, 'status');
  assert.equal(ast.display.backend, 'wayland');
  assert.equal(ast.display.embedded, false);
  assert.ok((await ok(a, 'windows')).windows.some((w) => w.pid === probe.pid), 'the probe, seen from the attached deskd');
  const [mx, my] = [moved.x, moved.y];
  const as = await shot(a);
  assert.deepEqual(as.png.px(mx + 150, my + 100), BLUE);
  const n0 = probe.clicks().length;
  await ok(a, 'computer_click', { x: mx + 33, y: my + 44 });
  await waitUntil(() => probe.clicks().length > n0, { timeout: T, what: 'the attached click' });
  assert.deepEqual(probe.clicks().at(-1), [33, 44, 1]);

  // No IPC: pixels and input work; windows come from foreign-toplevel
  // (titles and states, no geometry): listed, focused, set fullscreen and
  // back, closed; what needs geometry says why it cannot.
  const b = await startDeskd({ args: ['--wayland-display', sock, '--tools', 'both', '--max-image-dimension', '0'] });
  t.after(() => b.stop());
  assert.deepEqual((await shot(b)).png.px(mx + 150, my + 100), BLUE);
  const n1 = probe.clicks().length;
  await ok(b, 'computer_click', { x: mx + 55, y: my + 66 });
  await waitUntil(() => probe.clicks().length > n1, { timeout: T, what: 'the click without IPC' });
  assert.deepEqual(probe.clicks().at(-1), [55, 66, 1]);
  const bdoc = await ok(b, 'doctor');
  assert.match(bdoc.checks.find((c) => c.name === 'windows')?.detail || '', /foreign-toplevel/, JSON.stringify(bdoc.checks));
  assert.equal(bdoc.healthy, true, JSON.stringify(bdoc.checks.filter((c) => !c.ok)));
  const listed = (await ok(b, 'windows')).windows;
  const tl = listed.find((w) => w.title === 'wl-probe');
  assert.ok(tl, `the probe by its title: ${JSON.stringify(listed)}`);
  assert.ok(!tl.pid, 'no pid without IPC');
  const viewOf = () => swayTree(ipc).find((v) => v.id === probe.window);
  run('swaymsg', ['-s', ipc, 'workspace', '7'], { timeout: 5000 });
  await waitUntil(() => !viewOf().focused, { timeout: T, what: 'the focus elsewhere' });
  await ok(b, 'window_focus', { window: tl.id });
  assert.equal(viewOf().focused, true, 'focused through foreign-toplevel, as sway says');
  const bfs = await ok(b, 'window', { op: 'fullscreen', window: tl.id });
  assert.equal(bfs.applied, true, JSON.stringify(bfs));
  assert.equal(viewOf().fullscreen_mode, 1);
  assert.equal((await ok(b, 'windows')).windows.find((w) => w.id === tl.id).fullscreen, true);
  const brs = await ok(b, 'window', { op: 'restore', window: tl.id });
  assert.equal(brs.applied, true, JSON.stringify(brs));
  assert.equal(viewOf().fullscreen_mode, 0);
  for (const [tool, args] of [['window', { op: 'resize', window: tl.id, width: 300, height: 200 }],
    ['screenshot', { window: tl.id }]]) {
    const r = await b.tool(tool, args);
    assert.ok(r.status >= 400 || r.body.isError, `${tool}: ${JSON.stringify(r.body).slice(0, 300)}`);
    assert.match(JSON.stringify(r.body), /IPC/, `${tool} says what it needs`);
  }
  const bcl = await ok(b, 'window', { op: 'close', window: tl.id });
  assert.equal(bcl.closed, true, JSON.stringify(bcl));
  await waitUntil(() => !viewOf(), { timeout: T, what: 'the probe gone from sway' });
  assert.ok(!(await ok(b, 'windows')).windows.some((w) => w.id === tl.id), 'and from the list');
});

test('wayland: an X program (xterm on Xwayland: keys through XTest there) and foot (the virtual keyboard) are listed with the rest and typed into byte-exact, with and without sway\'s IPC', { timeout: 600000 }, async (t) => {
  need('xterm');
  need('foot');
  const { d } = await waylandDesktop(t);
  const dir = tempDir('deskd-wl-term-');
  const reader = join(ROOT, 'tests/apps/tty_reader.py');
  const terms = [
    ['xterm', ['xterm', '-u8', '-fa', 'Monospace', '-e', '/usr/bin/python3', reader, join(dir, 'xterm.records')]],
    ['foot', ['foot', '/usr/bin/python3', reader, join(dir, 'foot.records')]],
  ];
  // xterm answers no _NET_WM_PING: each of Xwayland's 12 spare keys waits
  // out a 3 s quarantine before it is rebound, so it gets fewer strings.
  const all = appCorpus().filter((s) => !s.includes('\x1b'));
  const corpora = { xterm: all.slice(0, 14), foot: all.slice(0, 30) };
  let bare = null;
  for (const [name, argv] of terms) {
    const corpus = corpora[name];
    const out = join(dir, `${name}.records`);
    const l = await ok(d, 'launch', { argv, env: ['LANG=C.UTF-8', 'LC_ALL=C.UTF-8'], wait_for_window: true, timeout_ms: T });
    assert.ok(l.window, `${name}'s window: ${JSON.stringify(l)}`);
    await waitUntil(() => existsSync(out + '.ready'), { timeout: T, what: `${name} ready` });
    const w = (await ok(d, 'windows')).windows.find((x) => x.id === l.window);
    assert.ok(w, `${name} is listed`);
    await ok(d, 'window_focus', { window: l.window });
    const records = () => (existsSync(out) ? readFileSync(out, 'utf8').split('\n').filter(Boolean).map((x) => JSON.parse(x)) : []);
    // A first record: the terminal has the focus and the keyboard.
    await waitUntil(async () => {
      const n = records().length;
      await ok(d, 'computer_type', { text: 'warm\x1b' });
      await sleep(300);
      return records().length > n && records().at(-1) === 'warm';
    }, { timeout: T, what: `${name}: a first record` }).catch(() => {});
    let exact = 0;
    for (const text of corpus) {
      const before = records().length;
      await ok(d, 'computer_type', { text: text + '\x1b' });
      await waitUntil(() => records().length > before, { timeout: T, what: `${name}: a record` });
      assert.equal(records()[before], text.replace(/\r\n?/g, '\n'), `${name}: ${JSON.stringify(text).slice(0, 60)}`);
      exact++;
    }
    t.diagnostic(`${name}: ${exact}/${corpus.length} strings byte-exact`);
    // Without sway's IPC (attached, Xwayland named by $DISPLAY): Xwayland's
    // own input focus says whether the keys go through XTest or the
    // virtual keyboard; both stay exact.
    if (!bare) {
      const sock = d.display.match(/^wayland:([^?]*)/)[1];
      const x11 = d.display.match(/[?&]x11=([^&]*)/)[1];
      bare = await startDeskd({ args: ['--wayland-display', sock, '--tools', 'both'], env: { DISPLAY: x11 } });
      t.after(() => bare.stop());
    }
    for (const text of ['warm', 'café ✓', 'Ωμέγα 中文']) {
      const before = records().length;
      await ok(bare, 'computer_type', { text: text + '\x1b' });
      await waitUntil(() => records().length > before, { timeout: T, what: `${name} without IPC: a record` });
      assert.equal(records()[before], text, `${name} without IPC: ${text}`);
    }
    await ok(d, 'window', { op: 'close', window: l.window, force: true });
  }
});

test('wayland: a second output (created at run time, then at scale 2) widens the screen; a window on it is captured and clicked on the mapped pixel', { timeout: 300000 }, async (t) => {
  need('swaymsg');
  const { d, ipc } = await waylandDesktop(t);
  const sway = (...cmd) => {
    const r = run('swaymsg', ['-s', ipc, ...cmd], { encoding: 'utf8', timeout: 5000 });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  };
  sway('create_output');
  await waitUntil(async () => (await ok(d, 'status')).display.width === 1280 + 1920, { timeout: T, what: 'the wider screen' });
  // A second probe on the new output.
  sway('focus', 'output', 'HEADLESS-2');
  const dir = tempDir('deskd-wl-out2-');
  const log = join(dir, 'probe.log');
  const l = await ok(d, 'launch', { argv: ['/usr/bin/python3', PROBE, log, join(dir, 'probe.txt')],
    env: ['GDK_BACKEND=wayland'], wait_for_window: true, timeout_ms: T });
  await waitUntil(() => existsSync(log) && readFileSync(log, 'utf8').includes('ready'), { timeout: T, what: 'the second probe drew' });
  const clicks = () => readFileSync(log, 'utf8').split('\n').filter((s) => s.startsWith('click ')).map((s) => s.split(' ').slice(1).map(Number));
  for (const scale of [1, 2]) {
    if (scale === 2) sway('output', 'HEADLESS-2', 'scale', '2');
    const view = await waitUntil(() => {
      const v = swayTree(ipc).find((x) => x.id === l.window);
      return v && v.rect.x >= 1280 && (scale === 1 || v.rect.width <= 960) && v;
    }, { timeout: T, what: `the probe on HEADLESS-2 at scale ${scale}` });
    const [wx, wy] = [view.rect.x, view.rect.y];
    await waitUntil(async () => {
      const s = await shot(d);
      return s.png.width === (scale === 1 ? 3200 : 1280 + 960) && s.png.px(wx + 150, wy + 100).join() === BLUE.join();
    }, { timeout: T, what: `the box on the second output at scale ${scale}` });
    const s = await shot(d);
    assert.deepEqual(s.png.px(wx + 99, wy + 50), GREEN);
    assert.deepEqual(s.png.px(wx + 100, wy + 50), BLUE);
    const n = clicks().length;
    await ok(d, 'computer_click', { x: wx + 37, y: wy + 41 });
    await waitUntil(() => clicks().length > n, { timeout: T, what: `the click at scale ${scale}` });
    assert.deepEqual(clicks().at(-1), [37, 41, 1], `scale ${scale}: the click in logical pixels`);
  }
});
