// Capture tools end to end: real Xvfb, real fixture windows, real deskd over
// REST. Pixels are decoded (a small PNG decoder on node:zlib) and compared
// with what the fixture drew.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync, symlinkSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { desktop, run, startFixture, tempDir, waitUntil, sleep } from './lib/harness.mjs';
import { decodePng } from './lib/png.mjs';


/** The fixture's gradient at window pixel (x, y). */
const gradient = (x, y) => [x & 255, y & 255, ((x >> 8) & 3) * 64 + ((y >> 8) & 3) * 16 + 8];

function imageOf(r) {
  assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 400));
  const img = r.body.content.find((c) => c.type === 'image');
  assert.ok(img, 'an image block');
  return { meta: r.body.structuredContent, bytes: Buffer.from(img.data, 'base64'), mime: img.mimeType };
}

async function shot(deskd, args = {}) {
  const { meta, bytes, mime } = imageOf(await deskd.tool('screenshot', args));
  assert.equal(mime, args.format === 'jpeg' ? 'image/jpeg' : 'image/png');
  return { meta, bytes, png: mime === 'image/png' ? decodePng(bytes) : null };
}

function checkGradient(png, points, offset = [0, 0]) {
  for (const [x, y] of points) {
    assert.deepEqual(png.px(x + offset[0], y + offset[1]), gradient(x, y), `pixel at window (${x},${y})`);
  }
}

const POINTS = [[0, 0], [1, 0], [0, 1], [50, 50], [255, 255], [256, 100], [300, 257], [399, 299], [123, 45]];

test('screen and window screenshots show the pixels the fixture drew; covered and off-screen windows too', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '400x300+100+80' }, deskdArgs: ['--max-image-dimension', '0'] });
  const { deskd, display, fixture } = env;

  const s = await shot(deskd);
  assert.equal(s.meta.width, 1280);
  assert.equal(s.meta.height, 800);
  assert.equal(s.meta.scale_factor, 1);
  assert.equal(s.png.width, 1280);
  checkGradient(s.png, POINTS, [100, 80]);

  // Cover it with a solid window: the screen shows magenta there, the window
  // screenshot still the gradient.
  const cover = await startFixture(display, { title: 'cover', geometry: '200x150+150+130', pattern: 'solid:ff00ff' });
  t.after(() => cover.stop());
  await waitUntil(async () => {
    const r = await shot(deskd);
    return r.png.px(200, 180).join() === '255,0,255';
  }, { what: 'the cover window on screen' });
  const w = await shot(deskd, { window: fixture.window });
  assert.equal(w.meta.width, 400);
  assert.equal(w.meta.height, 300);
  assert.equal(w.meta.window, fixture.window);
  assert.deepEqual(w.meta.desktop, [100, 80, 400, 300]);
  checkGradient(w.png, POINTS);

  // Region of the window, in its screenshot space.
  const rg = await shot(deskd, { window: fixture.window, region: [40, 30, 140, 90] });
  assert.equal(rg.png.width, 100);
  assert.equal(rg.png.height, 60);
  checkGradient(rg.png, [[40, 30], [139, 89], [100, 50]].map(([x, y]) => [x, y]), [-40, -30]);

  // Partly off-screen.
  const off = await startFixture(display, { title: 'off', geometry: '400x300+1100+700' });
  t.after(() => off.stop());
  const o = await shot(deskd, { window: off.window });
  assert.equal(o.png.width, 400);
  assert.equal(o.png.height, 300);
  checkGradient(o.png, [[0, 0], [170, 90], [350, 250], [399, 299]]);

  // windows lists the fixture with pid, title and exact geometry.
  const list = await deskd.tool('windows', {});
  assert.equal(list.status, 200);
  const me = list.body.structuredContent.windows.find((x) => x.id === fixture.window);
  assert.ok(me, 'fixture in the list');
  assert.equal(me.pid, fixture.state().pid);
  assert.equal(me.title, 'deskd fixture');
  assert.equal(me.app, 'DeskdFixture');
  assert.deepEqual([me.x, me.y, me.width, me.height], [100, 80, 400, 300]);
  assert.equal(me.visible, true);
  const offw = list.body.structuredContent.windows.find((x) => x.id === off.window);
  assert.equal(offw.visible, true);
  const byPid = await deskd.tool('windows', { pid: off.state().pid });
  assert.deepEqual(byPid.body.structuredContent.windows.map((x) => x.id), [off.window]);
  const byApp = await deskd.tool('windows', { app: 'deskdfix' });
  assert.equal(byApp.body.structuredContent.windows.length, 3);
  const none = await deskd.tool('windows', { app: 'no-such-app' });
  assert.deepEqual(none.body.structuredContent.windows, []);

  // Titles are UTF-8 and cut at 256 characters.
  const long = await startFixture(display, { title: 'é'.repeat(250) + '日本語テキスト' + 'x'.repeat(50), geometry: '50x50+0+0' });
  t.after(() => long.stop());
  const lw = (await deskd.tool('windows', { pid: long.state().pid })).body.structuredContent.windows[0];
  assert.equal([...lw.title].length, 256);
  assert.equal(lw.title, 'é'.repeat(250) + '日本語テキスト'.slice(0, 6));
  await long.stop();

  // A gone window is window_not_found.
  await off.stop();
  const gone = await deskd.tool('screenshot', { window: off.window });
  assert.equal(gone.status, 404);
  assert.equal(gone.body.error.code, 'window_not_found');
});

test('scaling metadata is exact; zoom returns full-resolution pixels; JPEG decodes; cache', async (t) => {
  const { deskd, fixture, display } = await desktop(t, { fixture: { geometry: '400x300+100+80' }, deskdArgs: ['--max-image-dimension', '640'] });

  const d = await shot(deskd);
  assert.deepEqual([d.meta.width, d.meta.height, d.meta.physical_width, d.meta.physical_height], [640, 400, 1280, 800]);
  assert.equal(d.meta.scale_factor, 2);
  assert.equal(d.png.width, 640);
  // A box-filtered 2:1 pixel is the mean of its 2x2 block (gradient is linear).
  const [r, g] = d.png.px(100, 100);
  assert.ok(Math.abs(r - (100 * 2 - 100 + 0.5)) <= 1 && Math.abs(g - (200 - 80 + 0.5)) <= 1, `scaled pixel ${r},${g}`);

  for (const [max, w, h] of [[1000, 1000, 625], [333, 333, 208], [16, 16, 10], [0, 1280, 800], [1280, 1280, 800], [5000, 1280, 800]]) {
    const s = await shot(deskd, { max_dimension: max });
    assert.deepEqual([s.meta.width, s.meta.height, s.png.width, s.png.height], [w, h, w, h], `max ${max}`);
    assert.equal(s.meta.physical_width, 1280);
    assert.equal(s.meta.scale_factor, Math.round(1280 / w * 1e6) / 1e6, 'scale_factor, to 6 decimals');
  }
  const ws = await shot(deskd, { window: fixture.window, max_dimension: 200 });
  assert.deepEqual([ws.meta.width, ws.meta.height, ws.meta.physical_width], [200, 150, 400]);

  // zoom: region in the 640x400 screenshot space, pixels at full resolution.
  const z = imageOf(await deskd.tool('zoom', { region: [60, 50, 110, 100] }));
  const zp = decodePng(z.bytes);
  assert.deepEqual([zp.width, zp.height], [100, 100]);
  assert.deepEqual(z.meta.desktop, [120, 100, 100, 100]);
  for (const [x, y] of [[0, 0], [1, 1], [99, 99], [37, 12]]) {
    assert.deepEqual(zp.px(x, y), gradient(120 + x - 100, 100 + y - 80), `zoom pixel ${x},${y}`);
  }
  const zs = imageOf(await deskd.tool('zoom', { region: [0, 0, 640, 400], max_dimension: 320 }));
  assert.deepEqual([zs.meta.width, zs.meta.height], [320, 200]);

  // JPEG: decodes (ffmpeg) to the right size and roughly the right colours.
  const j = await shot(deskd, { format: 'jpeg', quality: 95, max_dimension: 0 });
  assert.equal(j.meta.format, 'jpeg');
  assert.equal(j.bytes[0], 0xff);
  assert.equal(j.bytes[1], 0xd8);
  const dir = tempDir();
  writeFileSync(join(dir, 'a.jpg'), j.bytes);
  const ff = run('ffmpeg', ['-v', 'error', '-i', join(dir, 'a.jpg'), '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'], { maxBuffer: 64 << 20 });
  assert.equal(ff.status, 0, String(ff.stderr));
  assert.equal(ff.stdout.length, 1280 * 800 * 3);
  const jp = (x, y) => [...ff.stdout.subarray((y * 1280 + x) * 3, (y * 1280 + x) * 3 + 3)];
  for (const [x, y] of [[150, 150], [300, 200]]) {
    const want = gradient(x, y), got = jp(100 + x, 80 + y);
    for (let c = 0; c < 3; c++) assert.ok(Math.abs(want[c] - got[c]) <= 12, `jpeg ${x},${y}: ${got} vs ${want}`);
  }

  // Cache: an unchanged screen gives the same bytes; a change gives new ones.
  const a = await shot(deskd, { max_dimension: 0 });
  const b = await shot(deskd, { max_dimension: 0 });
  assert.ok(a.bytes.equals(b.bytes));
  const more = await startFixture(display, { title: 'more', geometry: '100x100+700+500', pattern: 'solid:00ff00' });
  t.after(() => more.stop());
  await waitUntil(async () => (await shot(deskd, { max_dimension: 0 })).png.px(750, 550).join() === '0,255,0',
    { what: 'the new window in a fresh screenshot' });
});

test('bad arguments get clear errors, never a crash; hidden windows; cursor overlay', async (t) => {
  const { deskd, fixture, display } = await desktop(t, { fixture: true });
  const cases = [
    [{ max_dimension: 1 }, 400, 'bad_arguments'],
    [{ max_dimension: 15 }, 400, 'bad_arguments'],
    [{ max_dimension: 100000 }, 400, 'bad_arguments'],
    [{ max_dimension: -5 }, 400, 'bad_arguments'],
    [{ format: 'jpeg', quality: 0 }, 400, 'bad_arguments'],
    [{ format: 'jpeg', quality: 101 }, 400, 'bad_arguments'],
    [{ format: 'gif' }, 400, 'bad_arguments'],
    [{ region: [-1, 0, 10, 10] }, 400, 'out_of_bounds'],
    [{ region: [0, 0, 100000, 10] }, 400, 'out_of_bounds'],
    [{ region: [0, 0, 1e12, 1e12] }, 400, null],
    [{ region: [10, 10, 10, 20] }, 400, 'bad_arguments'],
    [{ region: [20, 10, 10, 20] }, 400, 'bad_arguments'],
    [{ region: [0, 0, 10] }, 400, 'bad_arguments'],
    [{ window: 123456789 }, 404, 'window_not_found'],
    [{ window: -1 }, 400, 'bad_arguments'],
    [{ bogus: true }, 400, 'bad_arguments'],
    [{ out: 'relative.png' }, 400, 'bad_path'],
  ];
  for (const [args, status, code] of cases) {
    const r = await deskd.tool('screenshot', args);
    assert.equal(r.status, status, JSON.stringify(args) + ' -> ' + JSON.stringify(r.body));
    if (code) assert.equal(r.body.error.code, code, JSON.stringify(args));
    assert.ok(r.body.error.message.length > 10);
  }
  const zr = await deskd.tool('zoom', { region: [0, 0, 5000, 5000], window: fixture.window });
  assert.equal(zr.body.error.code, 'out_of_bounds');
  assert.equal((await deskd.tool('zoom', {})).body.error.code, 'bad_arguments');
  assert.equal((await deskd.tool('window_focus', { window: 99999999 })).body.error.code, 'window_not_found');
  assert.equal((await deskd.tool('window_move', { window: fixture.window })).body.error.code, 'bad_arguments');
  assert.equal((await deskd.tool('wait_for_change', { timeout_ms: 60001 })).body.error.code, 'bad_arguments');
  // Still alive and well.
  const ok = await shot(deskd, { window: fixture.window });
  assert.equal(ok.meta.width, 400);

  // An unmapped (hidden) window: a clear error, until window_focus shows it again.
  const un = run('xdotool', ['windowunmap', '--sync', String(fixture.window)], { env: { ...process.env, DISPLAY: display } });
  assert.equal(un.status, 0, String(un.stderr));
  const hidden = await deskd.tool('screenshot', { window: fixture.window });
  assert.equal(hidden.status, 409, 'a valid request for a window that is not viewable now: retry');
  assert.equal(hidden.body.error.code, 'window_not_viewable');
  assert.match(hidden.body.error.message, /not mapped/);
  const shown = await deskd.tool('window_focus', { window: fixture.window });
  assert.equal(shown.status, 200, JSON.stringify(shown.body));
  await waitUntil(async () => {
    const r = await deskd.tool('screenshot', { window: fixture.window, max_dimension: 0 });
    return r.status === 200 && decodePng(imageOf(r).bytes).px(50, 50).join() === gradient(50, 50).join();
  }, { what: 'the window shown again' });

  // cursor: the pointer is drawn into the image (Xvfb starts it mid-screen).
  const region = [600, 360, 680, 440];
  const plain = await shot(deskd, { region, max_dimension: 0 });
  const withCursor = await shot(deskd, { region, max_dimension: 0, cursor: true });
  assert.ok(!plain.bytes.equals(withCursor.bytes), 'the cursor changes the pixels');
});

test('wait_for_change reports changes and times out normally; focus and move under openbox', async (t) => {
  const { deskd, display, fixture } = await desktop(t, { wm: 'openbox', fixture: { geometry: '300x200+50+50' } });
  const quiet = await deskd.tool('wait_for_change', { timeout_ms: 300, stable_ms: 50 });
  assert.equal(quiet.status, 200);
  assert.equal(quiet.body.structuredContent.changed, false);
  assert.ok(quiet.body.structuredContent.waited_ms >= 290);

  const pending = deskd.tool('wait_for_change', { timeout_ms: 5000, stable_ms: 100 });
  await sleep(100);
  const other = await startFixture(display, { title: 'other', geometry: '200x100+600+400', pattern: 'solid:123456' });
  t.after(() => other.stop());
  const changed = await pending;
  assert.equal(changed.status, 200);
  assert.equal(changed.body.structuredContent.changed, true);
  assert.equal(changed.body.structuredContent.stable, true);
  assert.ok(changed.body.structuredContent.waited_ms < 4000);

  // Focus the first fixture again (the second took it), then move and resize it.
  const f = await deskd.tool('window_focus', { window: fixture.window });
  assert.equal(f.status, 200, JSON.stringify(f.body));
  assert.equal(f.body.structuredContent.focused, true);
  const m = await deskd.tool('window_move', { window: fixture.window, x: 400, y: 300, width: 320, height: 240 });
  assert.equal(m.status, 200, JSON.stringify(m.body));
  const g = m.body.structuredContent;
  assert.deepEqual([g.x, g.y, g.width, g.height], [400, 300, 320, 240]);
  await fixture.waitFor((s) => s.width === 320 && s.height === 240 && s.x === 400 && s.y === 300);
  // The moved, resized window still captures its own pixels (new pixmap).
  await waitUntil(async () => {
    const s = await shot(deskd, { window: fixture.window, max_dimension: 0 });
    return s.png.width === 320 && s.png.px(319, 239).join() === gradient(319, 239).join();
  }, { what: 'resized window pixels' });
  const list = (await deskd.tool('windows', {})).body.structuredContent.windows;
  const me = list.find((x) => x.id === fixture.window);
  assert.deepEqual([me.x, me.y, me.width, me.height, me.focused], [400, 300, 320, 240, true]);
});

test('out writes a 0600 file safely and refuses unsafe paths', async (t) => {
  const root = tempDir('deskd-out-');
  const { deskd } = await desktop(t, { fixture: true, deskdArgs: ['--output-root', root] });
  const path = join(root, 'shot.png');
  const r = await deskd.tool('screenshot', { out: path, include_image: false });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.structuredContent.path, path);
  assert.ok(!r.body.content.some((c) => c.type === 'image'));
  assert.equal(statSync(path).mode & 0o777, 0o600);
  const png = decodePng(readFileSync(path));
  assert.equal(png.width, r.body.structuredContent.width);
  // pngcheck: every chunk's CRC, the zlib stream and its Adler-32.
  const pc = run('pngcheck', ['-q', path], { encoding: 'utf8' });
  assert.equal(pc.status, 0, `pngcheck: ${pc.stdout}${pc.stderr}`);

  const again = await deskd.tool('screenshot', { out: path });
  assert.equal(again.status, 409);
  assert.equal(again.body.error.code, 'output_exists');

  symlinkSync(join(root, 'nowhere'), join(root, 'dangling.png'));
  const dang = await deskd.tool('screenshot', { out: join(root, 'dangling.png') });
  assert.equal(dang.body.error.code, 'output_exists');
  assert.ok(!existsSync(join(root, 'nowhere')), 'the dangling target was not created');

  const outside = await deskd.tool('screenshot', { out: join(tempDir(), 'x.png') });
  assert.equal(outside.body.error.code, 'bad_path');

  mkdirSync(join(root, 'real'));
  symlinkSync(join(root, 'real'), join(root, 'link'));
  const viaLink = await deskd.tool('screenshot', { out: join(root, 'link', 'x.png') });
  assert.equal(viaLink.body.error.code, 'bad_path');
  assert.ok(!existsSync(join(root, 'real', 'x.png')));

  const dotdot = await deskd.tool('screenshot', { out: `${root}/real/../y.png` });  // not path.join: it would fold '..'
  assert.equal(dotdot.body.error.code, 'bad_path');
  assert.ok(!existsSync(join(root, 'y.png')));

  const jpg = await deskd.tool('screenshot', { out: join(root, 'real', 'z.jpg'), format: 'jpeg' });
  assert.equal(jpg.status, 200, JSON.stringify(jpg.body));
  assert.equal(readFileSync(join(root, 'real', 'z.jpg'))[0], 0xff);

  // Nothing but what we asked for: no staging left behind.
  assert.deepEqual(readdirSync(root).sort(), ['dangling.png', 'link', 'real', 'shot.png']);
  assert.deepEqual(readdirSync(join(root, 'real')), ['z.jpg']);
});
