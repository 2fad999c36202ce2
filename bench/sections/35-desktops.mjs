// The desktops side by side, in one run: the same GTK 3 apps (the tests'
// probe, still, and gtk3-widget-factory, each native on its desktop) on
// deskd's embedded Xvfb + openbox, its embedded headless sway (wlroots) and
// its embedded headless GNOME Shell, the same calls over REST: a screenshot
// unchanged (cache hit) and after the whole screen changed, a click,
// typing ASCII and non-ASCII (chars/s; GNOME types only its layout's keys
// and pastes the rest, the cell says so), a clipboard write + read back, the
// windows list, a ui_snapshot of the factory's window; and the desktop's
// start (deskd spawned to its ready file, one start each) and the memory of
// its compositor. Ratios are to X11. A desktop whose programs are missing
// is skipped with a line saying so. BENCH_DESKTOPS=x11,gnome picks some.
import { performance } from 'node:perf_hooks';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { startDeskd, waitUntil, sleep, tempDir, ROOT } from '../../tests/integration/lib/harness.mjs';
import { descendants, rssKiB } from '../../tests/integration/lib/proc.mjs';
import { time, stats, table, fmt, have, toolCall } from '../lib.mjs';

const N = Number(process.env.BENCH_DESKTOPS_N || process.env.BENCH_WAYLAND_N) || 40;
const PROBE = join(ROOT, 'tests/apps/wl_probe.py');
const ASCII = 'The quick brown fox jumps over the lazy dog, 0123456789 (+-*/).\n'.repeat(3);
const UNICODE = 'café ✓ 中文 😀 Grüße, Привет\n'.repeat(4);
const CLIP = 'clipboard round trip: ✓ 中文 😀\n'.repeat(8);

// What deskd starts for each (probed here with have), and the compositor
// whose memory the table shows.
const DESKTOPS = [
  { key: 'x11', name: 'X11', args: [], needs: ['Xvfb', 'openbox'], compositor: 'Xvfb' },
  { key: 'wayland', name: 'wlroots', args: ['--desktop', 'wayland'], needs: ['sway'], compositor: 'sway' },
  { key: 'gnome', name: 'GNOME', args: ['--desktop', 'gnome'], needs: ['gnome-shell', 'pipewire', 'wireplumber', 'dbus-daemon'], compositor: 'gnome-shell' },
];

const timed = async (n, before, fn) => stats(await time(fn, { n, warmup: 3, before }));

const windowOf = (d, re) => waitUntil(async () => (await toolCall(d, 'windows', {})).structuredContent.windows
  .find((w) => re.test(w.title)), { timeout: 20000, what: String(re) });

const rssOf = (procs, comm) => procs.filter((k) => !comm || k.comm === comm).reduce((s, k) => s + rssKiB(k.pid), 0);

async function measure(desktop) {
  const t0 = performance.now();
  const d = await startDeskd({ args: ['--log-level', 'warning', '--tools', 'both', '--max-image-dimension', '0',
    '--launch', 'none', ...desktop.args] });
  const start = performance.now() - t0;
  try {
    const t1 = performance.now();
    await toolCall(d, 'screenshot', {});
    const firstShot = performance.now() - t1;
    const empty = descendants(d.proc.pid);
    // A still window (the tests' probe) for the screenshot rows: an
    // animated one would make every shot a capture.
    const dir = tempDir('deskd-bench-desktops-');
    const textFile = join(dir, 'text');
    await toolCall(d, 'launch', { argv: ['/usr/bin/python3', PROBE, join(dir, 'log'), textFile],
      env: ['LANG=C.UTF-8', 'LC_ALL=C.UTF-8'], wait_for_window: true, timeout_ms: 20000 });
    const probe = await windowOf(d, /^wl-probe$/);
    await sleep(500);
    const shot = () => toolCall(d, 'screenshot', {});
    const none = async () => {};
    const hit = await timed(N, none, shot);
    // The whole screen changes: the window goes fullscreen and back (untimed).
    let full = false;
    const flip = async () => {
      full = !full;
      await toolCall(d, 'window', { op: full ? 'fullscreen' : 'restore', window: probe.id });
      await sleep(120);
    };
    const changed = await timed(Math.min(N, 20), flip, shot);
    if (full) await flip();
    await sleep(300);
    // Inside the probe's window (its drawing area; not the screen's corner,
    // which is GNOME Shell's Activities button): the frame's middle, 100 px up.
    const { x: wx, y: wy, width: ww, height: wh } = (await windowOf(d, /^wl-probe$/));
    const [cx, cy] = [wx + (ww >> 1), wy + (wh >> 1) - 100];
    const click = await timed(N, none, (i) => toolCall(d, 'computer_click', { x: cx + (i & 7), y: cy }));
    // Typing into the probe's text view (its only focusable widget),
    // emptied before each call (untimed): chars/s to the call's return and
    // to the view holding the text (the probe writes it to a file at every
    // change), checked exact.
    const text = () => (existsSync(textFile) ? readFileSync(textFile, 'utf8') : '');
    const typing = async (body) => {
      const call = [], held = [];
      let pasted = false, exact = true;
      for (let i = -1; i < 5; i++) {
        await toolCall(d, 'computer_keypress', { keys: ['ctrl', 'a'] });
        await toolCall(d, 'computer_keypress', { keys: ['BackSpace'] });
        await waitUntil(() => text() === '', { timeout: 10000, what: 'the view emptied' });
        const t0 = performance.now();
        const r = await toolCall(d, 'computer_type', { text: body });
        const t1 = performance.now();
        await waitUntil(() => text().length >= body.length, { timeout: 20000, interval: 2, what: 'the typed text' }).catch(() => {});
        const t2 = performance.now();
        pasted ||= JSON.stringify(r).includes('"paste"');
        exact &&= text() === body;
        if (i >= 0) { call.push(t1 - t0); held.push(t2 - t0); }
      }
      const cps = (v) => [...body].length / (stats(v.sort((a, b) => a - b)).p50 / 1000);
      return { call: cps(call), held: cps(held), pasted, exact };
    };
    const ascii = await typing(ASCII);
    const unicode = await typing(UNICODE);
    let clipOk = true;
    const clip = await timed(N, none, async () => {
      await toolCall(d, 'clipboard_write', { text: CLIP });
      clipOk &&= (await toolCall(d, 'clipboard_read', {})).content?.[0]?.text === CLIP;
    });
    const windows = await timed(N, none, () => toolCall(d, 'windows', {}));
    // spawns: gtk3-widget-factory
    await toolCall(d, 'launch', { argv: ['gtk3-widget-factory'], wait_for_window: true, timeout_ms: 20000 });
    const factory = await windowOf(d, /widget/i);
    await waitUntil(async () => {
      try { return (await toolCall(d, 'ui_snapshot', { window: factory.id })).structuredContent.listed > 5; } catch { return false; }
    }, { timeout: 20000, what: 'its tree' });
    const snap = await timed(Math.min(N, 20), none, () => toolCall(d, 'ui_snapshot', { window: factory.id }));
    const nodes = (await toolCall(d, 'ui_snapshot', { window: factory.id })).structuredContent.node_count;
    const apps = descendants(d.proc.pid);
    return { start, firstShot, hit, changed, click, ascii, unicode, clip, clipOk, windows, snap, nodes,
      rss: { compositor: rssOf(empty, desktop.compositor), all: rssOf(empty), withApps: rssOf(apps, desktop.compositor) },
      procs: [...new Set(empty.map((k) => k.comm))].join(', ') };
  } finally {
    await d.stop();
  }
}

export default async function () {
  if (!have('gtk3-widget-factory')) {
    console.log('\n### Desktops side by side: skipped (needs gtk3-widget-factory: scripts/install-deps bench)');
    return;
  }
  const picked = (process.env.BENCH_DESKTOPS || 'x11,wayland,gnome').split(',');
  const res = [];
  for (const desktop of DESKTOPS.filter((x) => picked.includes(x.key))) {
    // spawns: Xvfb openbox sway gnome-shell pipewire wireplumber dbus-daemon
    const missing = desktop.needs.filter((p) => !have(p));
    if (missing.length) {
      console.log(`\n${desktop.name} (--desktop ${desktop.key}): skipped, no ${missing.join(', ')} (scripts/install-deps bench)`);
      continue;
    }
    const load = loadavg()[0];
    const t0 = performance.now();
    const r = await measure(desktop);
    res.push({ desktop, r: { ...r, wall: performance.now() - t0, load } });
  }
  if (!res.length) return;
  const base = res[0];
  const ms = (s) => `${fmt(s.p50)} / ${fmt(s.p95)}`;
  const mib = (kib) => `${(kib / 1024).toFixed(0)} MiB`;
  // One row: a label, each desktop's cell, and each other desktop's ratio
  // to the first of the p50s (or of the numbers: chars/s, MiB).
  const row = (label, cell, num) => [label, ...res.map(({ r }) => cell(r)),
    ...res.slice(1).map(({ r }) => `${(num(r) / num(base.r)).toFixed(2)}x`)];
  const typed = (t, k) => `${Math.round(t[k])}${t.pasted ? ' (by paste)' : ''}${t.exact ? '' : ' MISMATCH'}`;
  const names = res.map(({ desktop }) => desktop.name);
  table(`desktops side by side: ${names.join(', ')}; 1280x800, REST (ms p50 / p95; n=${N}, 20 for the changed screen and ui_snapshot, 5 for typing; ratios of p50s, of chars/s and MiB)`,
    ['call', ...names, ...names.slice(1).map((x) => `${x} / ${names[0]}`)], [
      row('desktop start: deskd spawned to ready (ms, one start)', (r) => fmt(r.start), (r) => r.start),
      row('first screenshot after ready (ms, one call)', (r) => fmt(r.firstShot), (r) => r.firstShot),
      row('screenshot PNG, unchanged (cache hit)', (r) => ms(r.hit), (r) => r.hit.p50),
      row('screenshot PNG, whole screen changed', (r) => ms(r.changed), (r) => r.changed.p50),
      row('click (computer_click)', (r) => ms(r.click), (r) => r.click.p50),
      row(`type ${[...ASCII].length} ASCII chars: chars/s (p50) to the call's return`, (r) => typed(r.ascii, 'call'), (r) => r.ascii.call),
      row('  the same, to the text in the app', (r) => typed(r.ascii, 'held'), (r) => r.ascii.held),
      row(`type ${[...UNICODE].length} chars, non-ASCII mixed: to the call's return`, (r) => typed(r.unicode, 'call'), (r) => r.unicode.call),
      row('  the same, to the text in the app', (r) => typed(r.unicode, 'held'), (r) => r.unicode.held),
      row(`clipboard_write + clipboard_read, ${[...CLIP].length} chars${res.every(({ r }) => r.clipOk) ? '' : ' (a MISMATCH)'}`, (r) => ms(r.clip), (r) => r.clip.p50),
      row('windows', (r) => ms(r.windows), (r) => r.windows.p50),
      row(`ui_snapshot gtk3-widget-factory (${res.map(({ r }) => r.nodes).join(' / ')} nodes)`, (r) => ms(r.snap), (r) => r.snap.p50),
      row('compositor RSS, empty desktop', (r) => mib(r.rss.compositor), (r) => r.rss.compositor),
      row('compositor RSS, with the probe and the factory', (r) => mib(r.rss.withApps), (r) => r.rss.withApps),
      row('RSS of every process deskd started, empty desktop', (r) => mib(r.rss.all), (r) => r.rss.all),
    ]);
  for (const { desktop, r } of res) {
    console.log(`${desktop.name}: ${(r.wall / 1000).toFixed(1)} s in all, load average ${r.load.toFixed(1)} at its start; `
      + `compositor ${desktop.compositor}; deskd started ${r.procs}`);
  }
}
