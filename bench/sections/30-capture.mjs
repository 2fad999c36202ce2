// Capture: in-process capture / scale / encode steps, whole screenshot tool
// calls over HTTP (REST), and peers (scrot, ImageMagick import, scrot +
// convert -resize) side by side, at 1280x800 and 1920x1080 on a realistic
// screen: fixture gradient windows plus an xterm full of text.
import { spawnSync } from 'node:child_process';
import { writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startXvfb, startFixture, startDeskd, launch, tempDir, sleep, ROOT } from '../../tests/integration/lib/harness.mjs';
import { time, stats, table, fmt, have, toolCall, getBytes } from '../lib.mjs';

// A small C driver for the in-process steps, built against build/libcapture.a
// (and what it links: x11, wayland, base). It takes a display name, so the
// same driver measures X11 (":N") and Wayland ("wayland:...").
const HELPER = String.raw`
#include "capture/capture.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
static int cmp(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return x < y ? -1 : x > y; }
static void report(const char* name, double* v, int n, double bytes) {
	qsort(v, (size_t)n, sizeof(double), cmp);
	printf("%s %.4f %.4f %.0f\n", name, v[n / 2], v[n * 95 / 100], bytes);
}
int main(int argc, char** argv) {
	char err[256];
	struct capture* c = capture_create(argv[1], err, sizeof(err));
	if (!c) { fprintf(stderr, "%s\n", err); return 1; }
	unsigned window = (unsigned)strtoul(argv[2], NULL, 0);
	int sw = atoi(argv[3]), sh = atoi(argv[4]);
	enum { N = 60 };
	double v[N], bytes = 0;
	struct frame* f = NULL;
	for (int i = -5; i < N; i++) { double t = now(); frame_unref(f); capture_screen(c, NULL, false, &f); if (i >= 0) v[i] = now() - t; }
	report("capture_screen", v, N, 0);
	struct frame* w = NULL;
	for (int i = -5; i < N; i++) { double t = now(); frame_unref(w); if (capture_window(c, window, NULL, false, &w) < 0) return 2; if (i >= 0) v[i] = now() - t; }
	report("capture_window", v, N, 0);
	for (int i = -2; i < N; i++) { double t = now(); struct frame* s = capture_scale(f, sw, sh); if (i >= 0) v[i] = now() - t; frame_unref(s); }
	report("scale", v, N, 0);
	if (argc > 6) {	/* the default cap's size (--max-image-dimension 1280) */
		int dw = atoi(argv[5]), dh = atoi(argv[6]);
		for (int i = -2; i < N; i++) { double t = now(); struct frame* s = capture_scale(f, dw, dh); if (i >= 0) v[i] = now() - t; frame_unref(s); }
		report("scale_default", v, N, 0);
	}
	for (int i = -2; i < N; i++) { uint8_t* o; size_t l; double t = now(); capture_encode_png(f, &o, &l); if (i >= 0) v[i] = now() - t; bytes = (double)l; free(o); }
	report("png", v, N, bytes);
	for (int i = -2; i < N; i++) { uint8_t* o; size_t l; double t = now(); capture_encode_jpeg(f, 80, &o, &l); if (i >= 0) v[i] = now() - t; bytes = (double)l; free(o); }
	report("jpeg", v, N, bytes);
	{
		struct capture_rect all = { 0, 0, f->width, f->height };
		struct frame* g = capture_crop(f, &all);
		g->data[(size_t)(f->height / 2) * (size_t)g->stride + 40] ^= 0xff;
		struct capture_png_state* st = NULL;
		for (int i = -2; i < N; i++) { uint8_t* o; size_t l; double t = now(); capture_encode_png_cached(&st, (i & 1) ? g : f, &o, &l); if (i >= 0) v[i] = now() - t; free(o); }
		report("png_incremental", v, N, 0);
		capture_png_state_free(st);
		frame_unref(g);
	}
	struct frame* s = capture_scale(f, sw, sh);
	for (int i = -2; i < N; i++) { uint8_t* o; size_t l; double t = now(); capture_encode_png(s, &o, &l); if (i >= 0) v[i] = now() - t; bytes = (double)l; free(o); }
	report("png_scaled", v, N, bytes);
	frame_unref(s);
	frame_unref(f);
	frame_unref(w);
	capture_destroy(c);
	return 0;
}
`;

function buildHelper(dir) {
  const src = join(dir, 'capture_bench.c');
  writeFileSync(src, HELPER);
  const libs = spawnSync('pkg-config', ['--libs', 'x11', 'xext', 'xcomposite', 'xdamage', 'xfixes', 'xres', 'xkbcommon', 'jansson', 'libturbojpeg', 'libpng', 'zlib', 'libdeflate', 'wayland-client', 'dbus-1'], { encoding: 'utf8' }).stdout.trim().split(/\s+/);
  const bin = join(dir, 'capture_bench');
  const r = spawnSync('cc', ['-O2', '-I', ROOT, src, ...['capture', 'x11', 'wayland', 'gnome', 'base'].map((m) => join(ROOT, `build/lib${m}.a`)), ...libs, '-pthread', '-o', bin], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error('building the capture bench helper failed: ' + r.stderr);
  return bin;
}

const ms = (s) => `${fmt(s.p50)} / ${fmt(s.p95)}`;
const kb = (s) => (s.bytes ? `${Math.round(s.bytes / 1024)} KB` : '');

async function peer(display, cmd, args, n) {
  const env = { ...process.env, DISPLAY: display };
  return time(() => {
    const r = spawnSync(cmd, args, { env });   // spawns: scrot import sh
    if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
  }, { n, warmup: 2 });
}

async function one(width, height, helper) {
  const x = await startXvfb({ width, height });
  const started = [x];
  try {
    const f1 = await startFixture(x.display, { title: 'bench gradient', geometry: '500x400+40+60' });
    const f2 = await startFixture(x.display, { title: 'bench gradient 2', geometry: '300x300+300+420' });
    started.push(f1, f2);
    const term = launch('xterm', 'xterm', ['-geometry', '100x48+600+30', '-e', 'sh', '-c',
      'ls -la /usr/bin | head -120; cat /etc/services 2>/dev/null | head -60; exec sleep 600'],
      { env: { ...process.env, DISPLAY: x.display } });
    started.push(term);
    await sleep(800);
    const deskd = await startDeskd({ display: x.display, args: ['--max-image-dimension', '0', '--log-level', 'warning'] });
    started.push(deskd);
    const res = `${width}x${height}`;
    const scaled = width === 1280 ? [1024, 640] : [1366, 768];
    // What the default --max-image-dimension 1280 gives, where it scales.
    const capped = width > 1280 ? [1280, Math.round(height * 1280 / width)] : null;

    // In-process steps.
    // spawns: - (built above)
    const out = spawnSync(helper, [x.display, String(f1.window), String(scaled[0]), String(scaled[1]), ...(capped ? capped.map(String) : [])], { encoding: 'utf8' });
    if (out.status !== 0) throw new Error('capture bench helper failed: ' + out.stderr);
    const steps = Object.fromEntries(out.stdout.trim().split('\n').map((l) => {
      const [name, p50, p95, bytes] = l.split(' ');
      return [name, { p50: +p50, p95: +p95, bytes: +bytes }];
    }));
    table(`capture steps in-process, ${res} (ms p50 / p95)`, ['step', 'time', 'size'], [
      ['XShm screen capture (+ copy to frame)', ms(steps.capture_screen), ''],
      ['Composite window capture, 500x400', ms(steps.capture_window), ''],
      [`area-average scale to ${scaled.join('x')}`, ms(steps.scale), ''],
      ...(capped ? [[`area-average scale to ${capped.join('x')} (the default cap)`, ms(steps.scale_default), '']] : []),
      ['PNG encode (a band per core, run-length deflate, Up)', ms(steps.png), `${Math.round(steps.png.bytes / 1024)} KB`],
      ['PNG incremental encode, one pixel changed', ms(steps.png_incremental), ''],
      [`PNG encode of the ${scaled.join('x')} image`, ms(steps.png_scaled), `${Math.round(steps.png_scaled.bytes / 1024)} KB`],
      ['JPEG encode q80 4:2:0', ms(steps.jpeg), `${Math.round(steps.jpeg.bytes / 1024)} KB`],
    ]);

    // Whole tool calls over HTTP (client side: request, JSON, base64
    // decode). Between timed calls an untimed step changes the screen the
    // way the row says, so each call really captures and encodes.
    let lastBytes = 0;
    const call = (args) => async () => {
      const r = await toolCall(deskd, 'screenshot', args);
      lastBytes = r.structuredContent.bytes;
    };
    const xdo = (...a) => spawnSync('xdotool', a, { env: { ...process.env, DISPLAY: x.display } });
    const timed = async (n, before, fn) => ({ ...stats(await time(fn, { n, warmup: 5, before })), bytes: lastBytes });
    const N = 60;
    const none = async () => {};
    const hit = await timed(N, none, call({}));
    const hitJ = await timed(N, none, call({ format: 'jpeg' }));
    // The pointer moves (cursor drawn): a small change, incremental PNG.
    const small = await timed(N, (i) => xdo('mousemove', String(700 + (i & 7)), '400'), call({ cursor: true }));
    // A window moves by a pixel: about half the rows change.
    const moved = await timed(N, (i) => xdo('windowmove', String(f1.window), String(40 + (i & 1)), '60'), call({}));
    // The whole screen changes: two full-screen windows (gradients offset
    // by 10 px, redirected so a raise is instant) take turns on top.
    const winA = await startFixture(x.display, { title: 'full A', geometry: `${width}x${height}+0+0` });
    const winB = await startFixture(x.display, { title: 'full B', geometry: `${width + 10}x${height}+-10+0` });
    started.push(winA, winB);
    for (const w of [winA, winB]) await call({ window: w.window })();
    const flip = async (i) => { xdo('windowraise', String(i & 1 ? winA.window : winB.window)); await sleep(5); };
    const full = await timed(N, flip, call({}));
    const fullJ = await timed(N, flip, call({ format: 'jpeg' }));
    const fullS = await timed(N, flip, call({ max_dimension: scaled[0] }));
    const fullSJ = await timed(N, flip, call({ format: 'jpeg', max_dimension: scaled[0] }));
    const fullC = capped ? await timed(N, flip, call({ max_dimension: 1280 })) : null;
    // The same through GET /api/v1/screenshot: image bytes, no JSON/base64.
    const get = (q) => async () => {
      lastBytes = (await getBytes(deskd, `/api/v1/screenshot?${q}`)).byteLength;
    };
    const rawP = await timed(N, flip, get('format=png'));
    const rawJ = await timed(N, flip, get('format=jpeg'));
    // A window's content changes (resized by a pixel: new pixmap, repaint).
    const wres = await timed(N, async (i) => { xdo('windowsize', String(f2.window), String(300 + (i & 1)), '300'); await sleep(30); },
      call({ window: f2.window }));
    const whit = await timed(N, none, call({ window: f2.window }));
    const png = full, jpeg = fullJ;

    const rows = [
      [`PNG ${res}, whole screen changed (full-screen gradients)`, ms(full), kb(full), '1.0x'],
      [`JPEG q80 ${res}, whole screen changed`, ms(fullJ), kb(fullJ), ''],
      [`PNG scaled to ${scaled.join('x')}, whole screen changed`, ms(fullS), kb(fullS), ''],
      [`JPEG scaled to ${scaled.join('x')}, whole screen changed`, ms(fullSJ), kb(fullSJ), ''],
      ...(capped ? [[`PNG at the default cap, ${capped.join('x')}, whole screen changed`, ms(fullC), kb(fullC), '']] : []),
      [`GET /api/v1/screenshot PNG ${res} (raw bytes), whole screen changed`, ms(rawP), kb(rawP), ''],
      [`GET /api/v1/screenshot JPEG ${res} (raw bytes), whole screen changed`, ms(rawJ), kb(rawJ), ''],
      [`PNG ${res}, a 500x400 window moved (half the rows)`, ms(moved), kb(moved), ''],
      [`PNG ${res}, pointer moved (cursor: true; few bands)`, ms(small), kb(small), ''],
      [`PNG ${res}, unchanged (cache hit)`, ms(hit), kb(hit), ''],
      [`JPEG ${res}, unchanged (cache hit)`, ms(hitJ), kb(hitJ), ''],
      ['PNG of a 300x300 window, its content changed', ms(wres), kb(wres), ''],
      ['PNG of a 300x300 window, unchanged (cache hit)', ms(whit), kb(whit), ''],
    ];
    for (const w of [winA, winB]) xdo('windowunmap', String(w.window));
    const pngScaled = fullS;
    const dir = tempDir('deskd-bench-');
    const file = join(dir, 'peer.png');
    const ratio = (s) => `${(s.p50 / png.p50).toFixed(1)}x slower`;
    if (have('scrot')) {
      const s = stats(await peer(x.display, 'scrot', ['-o', file], 15));
      rows.push([`scrot -o f.png (${res})`, ms(s), '', ratio(s)]);
      if (have('convert')) {
        const sc = stats(await peer(x.display, 'sh', ['-c', `scrot -o ${file} && convert ${file} -resize ${scaled.join('x')}! ${file}`], 10));
        rows.push([`scrot + convert -resize ${scaled.join('x')}!`, ms(sc), '', `${(sc.p50 / pngScaled.p50).toFixed(1)}x slower than deskd scaled PNG`]);
      }
    } else rows.push(['scrot', 'not installed', '', '']);
    if (have('import')) {
      const s = stats(await peer(x.display, 'import', ['-window', 'root', file], 8));
      rows.push([`import -window root f.png (${res})`, ms(s), '', ratio(s)]);
    } else rows.push(['import (ImageMagick)', 'not installed', '', '']);
    rmSync(file, { force: true });
    table(`deskd screenshot tool call over HTTP vs peers, ${res} (ms p50 / p95, n=${N})`, ['what', 'time', 'image', 'vs deskd PNG (whole screen changed)'], rows);
    return { png, jpeg, rawJ };
  } finally {
    for (const p of started.reverse()) await p.stop();
  }
}

export default async function () {
  const dir = tempDir('deskd-bench-');
  const helper = buildHelper(dir);
  const r1 = await one(1280, 800, helper);
  await one(1920, 1080, helper);
  table('capture targets (1280x800, over HTTP)', ['target', 'goal', 'measured p50', 'met'], [
    ['screenshot PNG', '< 15 ms', fmt(r1.png.p50), r1.png.p50 < 15 ? 'yes' : 'NO'],
    ['screenshot JPEG', '< 6 ms', fmt(r1.jpeg.p50), r1.jpeg.p50 < 6 ? 'yes' : 'NO'],
    ['GET /api/v1/screenshot JPEG', '< 6 ms', fmt(r1.rawJ.p50), r1.rawJ.p50 < 6 ? 'yes' : 'NO'],
  ]);
}
