// Wayland beside X11, in one run: the same GTK 3 apps (the tests' probe,
// still, and gtk3-widget-factory, each native on its desktop) on deskd's
// embedded Xvfb and on its embedded headless sway, the same calls over
// REST: a screenshot unchanged (cache hit) and after the whole screen
// changed, a click, typing (chars/s) and a ui_snapshot of the factory's
// window. Ratios are Wayland / X11.
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { startDeskd, waitUntil, sleep, tempDir, ROOT } from '../../tests/integration/lib/harness.mjs';
import { stats, table, fmt, have, toolCall } from '../lib.mjs';

const N = Number(process.env.BENCH_WAYLAND_N) || 40;
const PROBE = join(ROOT, 'tests/apps/wl_probe.py');
const TEXT = 'typing on both desktops: café ✓ 中文 😀 '.repeat(4);

async function timed(n, before, fn) {
  const out = [];
  for (let i = -3; i < n; i++) {
    await before(i);
    const t0 = performance.now();
    await fn(i);
    if (i >= 0) out.push(performance.now() - t0);
  }
  return stats(out.sort((a, b) => a - b));
}

const windowOf = (d, re) => waitUntil(async () => (await toolCall(d, 'windows', {})).structuredContent.windows
  .find((w) => re.test(w.title)), { timeout: 20000, what: String(re) });

async function measure(args) {
  const d = await startDeskd({ args: ['--log-level', 'warning', '--tools', 'both', '--max-image-dimension', '0',
    '--launch', 'none', ...args] });
  try {
    // A still window (the tests' probe) for the screenshot rows: an
    // animated one would make every shot a capture.
    const dir = tempDir('deskd-bench-wl-');
    await toolCall(d, 'launch', { argv: ['/usr/bin/python3', PROBE, join(dir, 'log'), join(dir, 'text')],
      wait_for_window: true, timeout_ms: 20000 });
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
    const click = await timed(N, none, (i) => toolCall(d, 'computer_click', { x: 10 + (i & 7), y: 10 }));
    const chars = [...TEXT].length;
    const type = await timed(5, none, () => toolCall(d, 'computer_type', { text: TEXT }));
    // spawns: gtk3-widget-factory
    await toolCall(d, 'launch', { argv: ['gtk3-widget-factory'], wait_for_window: true, timeout_ms: 20000 });
    const factory = await windowOf(d, /widget/i);
    await waitUntil(async () => {
      try { return (await toolCall(d, 'ui_snapshot', { window: factory.id })).structuredContent.listed > 5; } catch { return false; }
    }, { timeout: 20000, what: 'its tree' });
    const snap = await timed(Math.min(N, 20), none, () => toolCall(d, 'ui_snapshot', { window: factory.id }));
    const nodes = (await toolCall(d, 'ui_snapshot', { window: factory.id })).structuredContent.node_count;
    return { hit, changed, click, type, cps: chars / (type.p50 / 1000), snap, nodes };
  } finally {
    await d.stop();
  }
}

export default async function () {
  if (!have('sway') || !have('gtk3-widget-factory')) {
    console.log('\n### Wayland beside X11: skipped (needs sway and gtk3-widget-factory: scripts/install-deps bench)');
    return;
  }
  const x = await measure([]);
  const w = await measure(['--desktop', 'wayland']);
  const ms = (s) => `${fmt(s.p50)} / ${fmt(s.p95)}`;
  const ratio = (a, b) => `${(a / b).toFixed(2)}x`;
  table('Wayland (headless sway) beside X11 (Xvfb + openbox), 1280x800, REST (ms p50 / p95)',
    ['call', 'X11', 'Wayland', 'Wayland / X11'], [
      ['screenshot PNG, unchanged (cache hit)', ms(x.hit), ms(w.hit), ratio(w.hit.p50, x.hit.p50)],
      ['screenshot PNG, whole screen changed', ms(x.changed), ms(w.changed), ratio(w.changed.p50, x.changed.p50)],
      ['click', ms(x.click), ms(w.click), ratio(w.click.p50, x.click.p50)],
      [`type ${[...TEXT].length} chars (chars/s, p50)`, `${Math.round(x.cps)}`, `${Math.round(w.cps)}`, ratio(w.cps, x.cps)],
      [`ui_snapshot gtk3-widget-factory (${x.nodes} / ${w.nodes} nodes)`, ms(x.snap), ms(w.snap), ratio(w.snap.p50, x.snap.p50)],
    ]);
}
