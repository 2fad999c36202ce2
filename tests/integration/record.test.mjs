// Recording: record_start / record_stop / recordings over REST, deskd record
// (CLI), and the safe-output rules (DESIGN.md section 8), checked on the files:
// ffprobe (codec, frames, duration, size), atom order, mode, decoded pixels.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync,
  symlinkSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { desktop, startDeskd, startFixture, startXvfb, launch, readyInfo, run, tempDir, waitUntil, sleep,
  DESKD_BIN, startDeskdOnTmpfs } from './lib/harness.mjs';

function probe(file) {
  const r = run('ffprobe', ['-v', 'error', '-count_frames', '-select_streams', 'v:0',
    '-show_entries', 'stream=codec_name,width,height,nb_read_frames,pix_fmt:format=duration',
    '-of', 'json', file], { encoding: 'utf8' });
  assert.equal(r.status, 0, `ffprobe ${file}: ${r.stderr}`);
  const j = JSON.parse(r.stdout);
  const s = j.streams[0];
  return { codec: s.codec_name, width: s.width, height: s.height, frames: Number(s.nb_read_frames),
    pixFmt: s.pix_fmt, duration: Number(j.format.duration) };
}

/** The video's frames: [{ t: seconds, key }] in decoding order. */
function packets(file) {
  const r = run('ffprobe', ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'packet=pts_time,flags',
    '-of', 'json', file], { encoding: 'utf8' });
  assert.equal(r.status, 0, `ffprobe ${file}: ${r.stderr}`);
  return JSON.parse(r.stdout).packets.map((k) => ({ t: Number(k.pts_time), key: k.flags.includes('K') }));
}

/** The variable-rate timeline: frames on the slots of fps, increasing, from 0;
 *  no gap over 2 s, no keyframe interval over 10 s; the last frame ends the
 *  duration. */
function assertTimeline(file, p, fps) {
  const k = packets(file);
  assert.equal(k.length, p.frames);
  assert.equal(k[0].t, 0);
  assert.ok(k[0].key, 'starts with a keyframe');
  let lastKey = 0;
  for (let i = 0; i < k.length; i++) {
    const slot = k[i].t * fps;
    assert.ok(Math.abs(slot - Math.round(slot)) < 0.01, `frame ${i} at ${k[i].t} s is on a slot of ${fps} fps`);
    if (i > 0) assert.ok(k[i].t > k[i - 1].t && k[i].t - k[i - 1].t <= 2 + 0.5 / fps, `gap before frame ${i}: ${k[i - 1].t} -> ${k[i].t}`);
    if (k[i].key) lastKey = k[i].t;
    assert.ok(k[i].t - lastKey <= 10 + 0.5 / fps, `frame ${i} at ${k[i].t} s, last keyframe at ${lastKey} s`);
  }
  assert.ok(Math.abs(k.at(-1).t + 1 / fps - p.duration) < 0.002, `last frame at ${k.at(-1).t} s ends the ${p.duration} s`);
  assert.ok(p.frames <= Math.round(fps * p.duration), `frames ${p.frames} for ${p.duration} s`);
  return k;
}

/** Top-level MP4 atoms in file order. */
function atoms(file) {
  const buf = readFileSync(file);
  const out = [];
  for (let i = 0; i + 8 <= buf.length;) {
    let size = buf.readUInt32BE(i);
    const type = buf.toString('latin1', i + 4, i + 8);
    if (size === 1) size = Number(buf.readBigUInt64BE(i + 8));
    if (size < 8) break;
    out.push(type);
    i += size;
  }
  return out;
}

/** The picture shown in slot n (time n / fps) decoded to RGB24: the video is
 *  variable-rate (a frame only when the window changed), resampled to fps. */
function frameRgb(file, n, width, height, fps = 30) {
  const r = run('ffmpeg', ['-v', 'error', '-i', file, '-vf', `fps=${fps},select=eq(n\\,${n})`, '-frames:v', '1',
    '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'], { maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, String(r.stderr));
  assert.equal(r.stdout.length, width * height * 3);
  return r.stdout;
}

const gradient = (x, y) => [x & 255, y & 255, ((x >> 8) & 3) * 64 + ((y >> 8) & 3) * 16 + 8];

/** Compare a decoded frame with the fixture's gradient in rect (video coordinates). */
function gradientError(rgb, width, rect = { x: 0, y: 0, w: width, h: 0 }) {
  const errs = [];
  for (let y = rect.y; y < rect.y + rect.h; y++) {
    for (let x = rect.x; x < rect.x + rect.w; x++) {
      const o = (y * width + x) * 3;
      const [r, g, b] = gradient(x, y);
      errs.push(Math.max(Math.abs(rgb[o] - r), Math.abs(rgb[o + 1] - g), Math.abs(rgb[o + 2] - b)));
    }
  }
  errs.sort((a, b) => a - b);
  return { mean: errs.reduce((a, b) => a + b, 0) / errs.length, p99: errs[Math.floor(errs.length * 0.99)] };
}

function stagingIn(dir) {
  return readdirSync(dir).filter((n) => n.startsWith('.deskd-staging-'));
}

function assertGoodMp4(file, { width, height, minFrames = 1 }) {
  const st = statSync(file);
  assert.equal(st.mode & 0o777, 0o600, 'mode 0600');
  const p = probe(file);
  assert.equal(p.codec, 'h264');
  assert.equal(p.pixFmt, 'yuv420p');
  assert.equal(p.width, width);
  assert.equal(p.height, height);
  assert.ok(p.frames >= minFrames, `frames ${p.frames}`);
  const a = atoms(file);
  assert.ok(a.indexOf('moov') >= 0 && a.indexOf('moov') < a.indexOf('mdat'), `moov before mdat: ${a}`);
  return p;
}

/** Xvfb, a 320x240 fixture and `deskd record` of it at fps into a fresh
 *  directory; resolves once the recording runs. */
async function cliRecording(t, name, fps) {
  const x = await startXvfb();
  t.after(() => x.stop());
  const fixture = await startFixture(x.display, { geometry: '320x240+0+0' });
  t.after(() => fixture.stop());
  const dir = tempDir('deskd-cli-');
  const out = join(dir, name);
  const env = { ...process.env, DISPLAY: x.display };
  const rec = launch('deskd record', DESKD_BIN, ['record', '--window', String(fixture.window), '--out', out, '--fps', String(fps)], { env });
  t.after(() => rec.stop());
  await waitUntil(() => rec.log.join('').includes('Ctrl-C stops'), { timeout: 5000, what: 'recording started' });
  return { x, fixture, dir, out, env, rec };
}

test('record a window over REST: H.264 MP4, frames, duration, size, faststart, mode, pixels', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '401x301+100+80' } });
  const d = env.deskd;
  const win = env.fixture.window;
  const out = join(d.dataDir, 'main.mp4');

  const sentStart = Date.now();
  const start = await d.tool('record_start', { window: win, out, fps: 30 });
  assert.equal(start.status, 200, JSON.stringify(start.body));
  const t0 = Date.now();
  const { id, path } = start.body.structuredContent;
  assert.equal(path, out);
  assert.equal(existsSync(out), false, 'nothing at the destination while recording');
  assert.equal(stagingIn(d.dataDir).length, 1);
  await sleep(1500);
  const list = await d.tool('recordings', {});
  const live = list.body.structuredContent.recordings.find((r) => r.id === id);
  assert.equal(live.state, 'recording');
  assert.ok(live.frames >= 1 && live.duration_seconds > 1, `live: ${JSON.stringify(live)}`);
  await sleep(Math.max(0, t0 + 3000 - Date.now()));

  const sentStop = Date.now();
  const stop = await d.tool('record_stop', {});
  const gotStop = Date.now();
  assert.equal(stop.status, 200, JSON.stringify(stop.body));
  const s = stop.body.structuredContent;
  assert.equal(s.id, id);
  assert.equal(s.path, out);
  assert.equal(s.width, 400);
  assert.equal(s.height, 300);
  assert.equal(s.bytes, statSync(out).size);
  const link = stop.body.content.find((c) => c.type === 'resource_link');
  assert.deepEqual({ uri: link.uri, mimeType: link.mimeType }, { uri: `deskd://recordings/${id}`, mimeType: 'video/mp4' });

  const p = assertGoodMp4(out, { width: 400, height: 300 });
  // 3 s at 30 fps: 85-95 frames and 3 +- 0.2 s on a normal machine. On a
  // loaded one the HTTP calls themselves are late, so the bounds are the
  // window the test observed.
  const lo = (sentStop - t0) / 1000 - 0.1, hi = (gotStop - sentStart) / 1000 + 0.1;
  assert.ok(p.duration >= Math.min(2.8, lo) && p.duration <= Math.max(3.2, hi), `duration ${p.duration} (observed ${lo}..${hi})`);
  assert.ok(Math.abs(s.duration_seconds - p.duration) < 0.002, `stats ${s.duration_seconds} s, file ${p.duration} s`);
  assertTimeline(out, p, 30);
  // The window is still: its first picture, the picture again every 2 s, the last
  // slot, and perhaps a repaint after the first grab redirected it.
  assert.ok(p.frames <= 8, `frames ${p.frames} for a still window`);
  assert.equal(p.frames, s.frames);
  assert.equal(stagingIn(d.dataDir).length, 0);

  const rgb = frameRgb(out, 45, 400, 300);
  const e = gradientError(rgb, 400, { x: 0, y: 0, w: 400, h: 300 });
  assert.ok(e.mean < 4 && e.p99 <= 16, `pixel error mean ${e.mean} p99 ${e.p99}`);

  const dl = await d.fetch(`/api/v1/recordings/${id}`);
  assert.equal(dl.status, 200);
  assert.equal(dl.headers.get('content-type'), 'video/mp4');
  assert.ok(Buffer.from(await dl.arrayBuffer()).equals(readFileSync(out)), 'download = the file');

  const after = await d.tool('recordings', {});
  const done = after.body.structuredContent.recordings.find((r) => r.id === id);
  assert.equal(done.state, 'finished');
  assert.equal(done.frames, s.frames);

  // Nothing left to stop.
  const again = await d.tool('record_stop', {});
  assert.equal(again.status, 404);
  assert.equal(again.body.error.code, 'no_recording');
});

// The rest run two at a time (each has its own Xvfb and deskd) to keep the file short.
describe('recording, more cases', { concurrency: 2 }, () => {
  test('covered window, resize, destroyed window, default path, limits', async (t) => {
    const env = await desktop(t, { fixture: true, deskdArgs: ['--max-recordings', '1'] });
    const d = env.deskd;
    const win = env.fixture.window;

    // Covered by another window the whole time: still the window's own pixels.
    const cover = await startFixture(env.display, { title: 'cover', geometry: '300x200+150+120', pattern: 'solid:ff00ff' });
    t.after(() => cover.stop());
    let r = await d.tool('record_start', { window: win });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const first = r.body.structuredContent;
    assert.equal(first.path, join(d.dataDir, 'recordings', `${first.id}.mp4`));
    assert.equal(statSync(join(d.dataDir, 'recordings')).mode & 0o777, 0o700);

    // The cap (--max-recordings 1).
    r = await d.tool('record_start', { window: win, out: join(d.dataDir, 'second.mp4') });
    assert.equal(r.status, 409);
    assert.equal(r.body.error.code, 'recording_active');
    assert.equal(existsSync(join(d.dataDir, 'second.mp4')), false);

    await sleep(1000);
    // Resize while recording: the video keeps its size, the window is letterboxed.
    r = await d.tool('window_move', { window: win, width: 600, height: 200 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await sleep(1000);
    r = await d.tool('record_stop', { id: first.id });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const p = assertGoodMp4(first.path, { width: 400, height: 300, minFrames: 2 });
    assertTimeline(first.path, p, 30);
    const lastSlot = Math.round(p.duration * 30) - 1;
    const early = frameRgb(first.path, 10, 400, 300);
    const e = gradientError(early, 400, { x: 0, y: 0, w: 400, h: 300 });
    assert.ok(e.mean < 4 && e.p99 <= 16, `covered: pixel error mean ${e.mean} p99 ${e.p99}`);
    // Last frame: 600x200 scaled into 400x133 (+ bars): top and bottom rows black,
    // the middle row shows the gradient at x * 1.5.
    const last = frameRgb(first.path, lastSlot, 400, 300);
    const px = (x, y) => Array.from(last.subarray((y * 400 + x) * 3, (y * 400 + x) * 3 + 3));
    for (const y of [5, 60, 240, 295]) assert.ok(Math.max(...px(200, y)) < 20, `bar at y=${y}: ${px(200, y)}`);
    const mid = px(100, 150);
    assert.ok(Math.abs(mid[0] - 150) < 20, `scaled gradient ${mid}`);

    // The window is destroyed while recording: the recording ends and is published.
    const out = join(d.dataDir, 'destroyed.mp4');
    r = await d.tool('record_start', { window: win, out, fps: 10 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await sleep(800);
    await env.fixture.stop();
    await waitUntil(() => existsSync(out), { timeout: 5000, what: 'published after destroy' });
    r = await d.tool('record_stop', {});
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.structuredContent.ended, 'window_destroyed');
    const pd = assertGoodMp4(out, { width: 600, height: 200 });   // the size at its start
    assert.ok(pd.duration >= 0.7, `duration ${pd.duration}`);
    assertTimeline(out, pd, 10);

    r = await d.tool('record_start', { window: win });
    assert.equal(r.status, 404);
    assert.equal(r.body.error.code, 'window_not_found');
  });

  test('a --data-dir that does not exist yet is made (0700, parents too); record_stop right after record_start is never a 500', async (t) => {
    // --token given: no token file, so nothing else makes the data dir (TRUST R17).
    const dataDir = join(tempDir('deskd-parent-'), 'not', 'yet');
    const env = await desktop(t, { fixture: true, deskdArgs: ['--data-dir', dataDir] });
    const d = env.deskd;
    const win = env.fixture.window;
    assert.equal(existsSync(dataDir), false, 'deskd did not make it at start');
    let r = await d.tool('record_start', { window: win, fps: 10 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.structuredContent.path, join(dataDir, 'recordings', `${r.body.structuredContent.id}.mp4`));
    for (const dir of [join(dataDir, '..'), dataDir, join(dataDir, 'recordings')])
      assert.equal(statSync(dir).mode & 0o777, 0o700, `${dir} is 0700`);
    r = await d.tool('record_stop', { id: r.body.structuredContent.id });
    assert.equal(r.status, 200, JSON.stringify(r.body));

    // Stop at once after the start, four at a time (the recorder threads
    // compete for the CPU, so a stop often comes before the first frame
    // slot): a short recording with the picture taken at the start, 200.
    const rounds = async (n) => {
      for (let i = 0; i < n; i++) {
        const s = await d.tool('record_start', { window: win, fps: 30 });
        assert.equal(s.status, 200, JSON.stringify(s.body));
        const stop = await d.tool('record_stop', { id: s.body.structuredContent.id });
        assert.equal(stop.status, 200, `record_stop right after record_start: ${JSON.stringify(stop.body)}`);
        assert.ok(stop.body.structuredContent.frames >= 1, JSON.stringify(stop.body));
        assertGoodMp4(stop.body.structuredContent.path, { width: 400, height: 300 });
      }
    };
    await Promise.all([rounds(5), rounds(5), rounds(5), rounds(5)]);
    assert.deepEqual(stagingIn(join(dataDir, 'recordings')), []);
  });

  test('every refusal of DESIGN.md 8 leaves the existing file or symlink untouched', async (t) => {
    const env = await desktop(t, { fixture: true });
    const d = env.deskd;
    const win = env.fixture.window;
    const root = d.dataDir;
    const existing = join(root, 'existing.mp4');
    writeFileSync(existing, 'keep me');
    const target = join(root, 'target.txt');
    writeFileSync(target, 'target');
    const link = join(root, 'link.mp4');
    symlinkSync(target, link);
    const dangling = join(root, 'dangling.mp4');
    symlinkSync(join(root, 'nowhere.mp4'), dangling);
    mkdirSync(join(root, 'real'));
    symlinkSync(join(root, 'real'), join(root, 'linked'));
    const outside = tempDir('deskd-outside-');

    const cases = [
      [existing, 409, 'output_exists'],
      [link, 409, 'output_exists'],
      [dangling, 409, 'output_exists'],
      [join(root, 'linked', 'x.mp4'), 400, 'bad_path'],
      [`${root}/real/../x.mp4`, 400, 'bad_path'],
      [`${root}/./x.mp4`, 400, 'bad_path'],
      [`${root}//x.mp4`, 400, 'bad_path'],
      ['relative.mp4', 400, 'bad_path'],
      [join(outside, 'x.mp4'), 400, 'bad_path'],
      [root + '2/x.mp4', 400, 'bad_path'],
      [join(root, 'missing', 'x.mp4'), 400, 'bad_path'],
    ];
    for (const [out, status, code] of cases) {
      const r = await d.tool('record_start', { window: win, out });
      assert.equal(r.status, status, `${out}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, code, out);
    }
    assert.equal(readFileSync(existing, 'utf8'), 'keep me');
    assert.equal(readlinkSync(link), target);
    assert.equal(readFileSync(target, 'utf8'), 'target');
    assert.equal(readlinkSync(dangling), join(root, 'nowhere.mp4'));
    assert.equal(existsSync(join(root, 'nowhere.mp4')), false);
    assert.deepEqual(readdirSync(join(root, 'real')), []);
    assert.deepEqual(readdirSync(outside), []);
    assert.equal(stagingIn(root).length, 0);
    const list = await d.tool('recordings', {});
    assert.deepEqual(list.body.structuredContent.recordings, []);

    // The destination appears while recording: not replaced, the recording is discarded.
    const late = join(root, 'late.mp4');
    let r = await d.tool('record_start', { window: win, out: late, fps: 10 });
    assert.equal(r.status, 200);
    await sleep(500);
    writeFileSync(late, 'theirs');
    r = await d.tool('record_stop', {});
    assert.equal(r.status, 409, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'output_exists');
    assert.equal(readFileSync(late, 'utf8'), 'theirs');
    assert.equal(stagingIn(root).length, 0);

    // max_seconds ends and publishes the recording by itself.
    const short = join(root, 'short.mp4');
    r = await d.tool('record_start', { window: win, out: short, fps: 10, max_seconds: 0.5 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await waitUntil(() => existsSync(short), { timeout: 5000, what: 'max_seconds to publish' });
    r = await d.tool('record_stop', {});
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.structuredContent.ended, 'max_seconds');
    const p = assertGoodMp4(short, { width: 400, height: 300 });
    assert.ok(Math.abs(p.duration - 0.5) < 0.05, `duration ${p.duration}`);
    assertTimeline(short, p, 10);
  });

  test('SIGTERM publishes a running recording; kill -9 publishes nothing and the next start removes the staging', async (t) => {
    const x = await startXvfb();
    t.after(() => x.stop());
    const fixture = await startFixture(x.display);
    t.after(() => fixture.stop());
    const root = tempDir('deskd-root-');

    let d = await startDeskd({ display: x.display, args: ['--output-root', root] });
    t.after(() => d.stop());
    const term = join(root, 'term.mp4');
    const sent = Date.now();
    let r = await d.tool('record_start', { window: fixture.window, out: term });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await sleep(1000);
    const signalled = Date.now();
    const exit = await d.stop('SIGTERM');
    assert.equal(exit.code, 0);
    const p = assertGoodMp4(term, { width: 400, height: 300 });
    assert.ok(p.duration >= 0.7, `duration ${p.duration}`);
    assertTimeline(term, p, 30);
    // It ended at the signal, not later in the shutdown.
    assert.ok(p.duration <= (signalled - sent) / 1000 + 0.3, `duration ${p.duration}`);
    assert.equal(stagingIn(root).length, 0);

    d = await startDeskd({ display: x.display, args: ['--output-root', root] });
    t.after(() => d.stop());
    const killed = join(root, 'killed.mp4');
    r = await d.tool('record_start', { window: fixture.window, out: killed });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await sleep(500);
    await d.stop('SIGKILL');
    assert.equal(existsSync(killed), false);
    assert.equal(stagingIn(root).length, 1);

    d = await startDeskd({ display: x.display, args: ['--output-root', root] });
    t.after(() => d.stop());
    assert.equal(stagingIn(root).length, 0, 'stale staging removed at start');
    assert.equal(existsSync(killed), false);
  });

  test('a filesystem that fills up: 507 no_space, no staging, nothing published', { skip: process.getuid() !== 0 && 'needs root for mount' }, async (t) => {
    const x = await startXvfb();
    t.after(() => x.stop());
    const fixture = await startFixture(x.display, { geometry: '1280x800+0+0', animate: 30 });
    t.after(() => fixture.stop());
    const win = fixture.window;

    // Too little space to start: refused at once.
    let d = await startDeskdOnTmpfs(t, x.display, '64k');
    let r = await d.tool('record_start', { window: win, out: join(d.mnt, 'small.mp4') });
    assert.equal(r.status, 507, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'no_space');
    assert.match(r.body.error.message, /not enough free space/);
    assert.deepEqual(readdirSync(d.view), []);
    await d.stop();

    // Enough to start, then it fills up while recording.
    d = await startDeskdOnTmpfs(t, x.display, '2m');
    const out = join(d.mnt, 'full.mp4');
    r = await d.tool('record_start', { window: win, out, fps: 30 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const fd = openSync(join(d.view, 'filler'), 'w');
    const chunk = Buffer.alloc(16384, 1);
    try { for (;;) writeSync(fd, chunk); } catch (e) { assert.equal(e.code, 'ENOSPC'); }
    try { for (;;) writeSync(fd, chunk.subarray(0, 512)); } catch { /* full */ }
    closeSync(fd);
    // Each packet is written through, so the recording stops itself soon.
    await waitUntil(async () => {
      const l = await d.tool('recordings', {});
      return l.body.structuredContent.recordings[0].state === 'failed';
    }, { timeout: 10000, interval: 200, what: 'the recording to fail on ENOSPC' });
    r = await d.tool('record_stop', {});
    assert.equal(r.status, 507, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'no_space');
    assert.match(r.body.error.message, /No space left on device/);
    assert.deepEqual(readdirSync(d.view).sort(), ['filler']);
  });

  test('deskd record CLI: record until SIGINT, publish, print the path', async (t) => {
    const { fixture, dir, out, env, rec } = await cliRecording(t, 'cli.mp4', 20);
    await sleep(1500);
    const exit = await rec.stop('SIGINT');
    assert.equal(exit.code, 0, rec.log.join(''));
    const log = rec.log.join('');
    assert.match(log, new RegExp(`wrote ${out}: 320x240, \\d+ frames`));
    const p = assertGoodMp4(out, { width: 320, height: 240 });
    assert.ok(p.duration >= 1.2, `duration ${p.duration}`);
    assertTimeline(out, p, 20);
    assert.equal(stagingIn(dir).length, 0);

    // Refusals exit 1 with a reason and leave the file alone.
    const bad = spawnSync(DESKD_BIN, ['record', '--window', String(fixture.window), '--out', out], { env, encoding: 'utf8' });
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /already exists/);
    const gone = spawnSync(DESKD_BIN, ['record', '--window', '0x1234567', '--out', join(dir, 'x.mp4')], { env, encoding: 'utf8' });
    assert.equal(gone.status, 1);
    assert.match(gone.stderr, /not found/);
    assert.equal(lstatSync(out).size, statSync(out).size);
  });
  test('an unmapped window repeats its last picture; losing the display ends the recording and publishes it', async (t) => {
    const { x, fixture, dir, out, env, rec } = await cliRecording(t, 'lost.mp4', 10);
    const t0 = Date.now();
    await sleep(600);
    const xdo = (cmd) => run('xdotool', [cmd, '--sync', String(fixture.window)], { env, encoding: 'utf8' });
    assert.equal(xdo('windowunmap').status, 0);
    const hidden = (Date.now() - t0) / 1000;
    await sleep(1200);
    const shown = (Date.now() - t0) / 1000;
    assert.equal(xdo('windowmap').status, 0);
    await sleep(600);
    await x.stop('SIGKILL');
    const exit = await rec.exited;
    const log = rec.log.join('');
    assert.equal(exit.code, 0, log);
    assert.match(log, /stopped because the display went away/);
    assert.match(log, new RegExp(`wrote ${out}: 320x240, \\d+ frames`));
    const p = assertGoodMp4(out, { width: 320, height: 240 });
    assert.ok(p.duration >= 2, `duration ${p.duration}`);
    assertTimeline(out, p, 10);
    // While unmapped, the video keeps showing the window's last picture.
    const during = frameRgb(out, Math.round(10 * (hidden + shown) / 2), 320, 240, 10);
    const e = gradientError(during, 320, { x: 0, y: 0, w: 320, h: 240 });
    assert.ok(e.mean < 4 && e.p99 <= 16, `unmapped: pixel error mean ${e.mean} p99 ${e.p99}`);
    assert.equal(stagingIn(dir).length, 0);
  });
  test('MCP: record_stop without id stops the session\'s own recording; ending the session publishes the rest', async (t) => {
    const env = await desktop(t, { fixture: true });
    const d = env.deskd;
    const win = env.fixture.window;
    const client = new Client({ name: 'record-test', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(d.url + '/mcp'),
      { requestInit: { headers: { Authorization: `Bearer ${d.token}` } } });
    await client.connect(transport);
    t.after(() => client.close().catch(() => {}));

    const viaRest = join(d.dataDir, 'rest.mp4');
    let r = await d.tool('record_start', { window: win, out: viaRest, fps: 10 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const own = join(d.dataDir, 'own.mp4');
    let c = await client.callTool({ name: 'record_start', arguments: { window: win, out: own, fps: 10 } });
    assert.ok(!c.isError, JSON.stringify(c));
    const ownId = c.structuredContent.id;
    await sleep(600);
    c = await client.callTool({ name: 'record_stop', arguments: {} });
    assert.ok(!c.isError, JSON.stringify(c));
    assert.equal(c.structuredContent.id, ownId);
    assert.equal(c.structuredContent.path, own);
    const link = c.content.find((b) => b.type === 'resource_link');
    assert.equal(link.uri, `deskd://recordings/${ownId}`);
    assert.equal(link.mimeType, 'video/mp4');
    assertGoodMp4(own, { width: 400, height: 300 });
    assert.equal(existsSync(viaRest), false, 'the REST recording is still running');

    const ended = join(d.dataDir, 'ended.mp4');
    c = await client.callTool({ name: 'record_start', arguments: { window: win, out: ended, fps: 10 } });
    assert.ok(!c.isError, JSON.stringify(c));
    await sleep(600);
    await transport.terminateSession();
    await waitUntil(() => existsSync(ended), { timeout: 5000, what: 'the session end to publish' });
    assertGoodMp4(ended, { width: 400, height: 300 });

    r = await d.tool('record_stop', {});
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.structuredContent.path, viaRest);
    assertGoodMp4(viaRest, { width: 400, height: 300 });

    // cursor: true draws the pointer; without it the pixels are the window's.
    r = await d.tool('computer_use', { actions: [{ type: 'move', x: 300, y: 230 }], coordinate_space: 'desktop' });   // window (200, 150)
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const withCursor = join(d.dataDir, 'cursor.mp4');
    r = await d.tool('record_start', { window: win, out: withCursor, fps: 10, cursor: true });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await sleep(400);
    // The window does not change: moving the pointer alone must show.
    r = await d.tool('computer_use', { actions: [{ type: 'move', x: 180, y: 140 }], coordinate_space: 'desktop' });   // window (80, 60)
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await sleep(400);
    r = await d.tool('record_stop', {});
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const pc = assertGoodMp4(withCursor, { width: 400, height: 300 });
    assertTimeline(withCursor, pc, 10);
    const before = frameRgb(withCursor, 1, 400, 300, 10);
    const rgb = frameRgb(withCursor, Math.round(pc.duration * 10) - 1, 400, 300, 10);
    const first = gradientError(before, 400, { x: 184, y: 134, w: 32, h: 32 });
    const near = gradientError(rgb, 400, { x: 64, y: 44, w: 32, h: 32 });
    const left = gradientError(rgb, 400, { x: 184, y: 134, w: 32, h: 32 });
    const far = gradientError(rgb, 400, { x: 250, y: 0, w: 150, h: 100 });
    assert.ok(first.p99 > 60, `the pointer is drawn near (200, 150) at first: p99 ${first.p99}`);
    assert.ok(near.p99 > 60, `then near (80, 60), where it moved: p99 ${near.p99}`);
    assert.ok(left.p99 <= 16, `and no longer at (200, 150): p99 ${left.p99}`);
    assert.ok(far.p99 <= 16, `elsewhere the window's pixels: p99 ${far.p99}`);
  });
});
