// Accessibility: ui_snapshot latency and node counts (the GTK3 form of the
// tests, gtk3-widget-factory), ui_find, ui_act round trips, and the
// outline's size against the PNG screenshot (base64) of the same window,
// on deskd's own embedded desktop and buses.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDeskd, tempDir, waitUntil, ROOT } from '../../tests/integration/lib/harness.mjs';
import { time, stats, table, fmt, have, toolCall } from '../lib.mjs';

const FORM = process.env.GTK3_FORM_BIN || join(ROOT, 'build/tests/gtk3-form');
const N = Number(process.env.BENCH_A11Y_N) || 40;

const ms = (s) => [fmt(s.p50), fmt(s.p95), String(s.n)];

export default async function () {
  if (!existsSync(FORM) || !have('dbus-daemon')) {
    console.log('\n### a11y: skipped (needs build/tests/gtk3-form and dbus-daemon: scripts/install-deps bench)');
    return;
  }
  const dir = tempDir('deskd-bench-a11y-');
  const statePath = join(dir, 'state.json');
  const launch = ['--launch', `${FORM} --state ${statePath}`];
  const factory = have('gtk3-widget-factory');
  if (factory) launch.push('--launch', 'gtk3-widget-factory');   // spawns: gtk3-widget-factory
  const deskd = await startDeskd({ args: ['--log-level', 'warning', ...launch] });
  try {
    await waitUntil(() => existsSync(statePath), { timeout: 15000, what: 'the form' });
    const pid = JSON.parse(readFileSync(statePath, 'utf8')).pid;
    const windows = await waitUntil(async () => {
      const w = (await toolCall(deskd, 'windows', {})).structuredContent.windows;
      return w.some((x) => x.pid === pid) && (!factory || w.some((x) => /widget/i.test(x.title))) && w;
    }, { timeout: 15000, what: 'the windows' });
    const targets = [['GTK3 form (tests/apps)', windows.find((x) => x.pid === pid)]];
    if (factory) targets.push(['gtk3-widget-factory', windows.find((x) => /widget/i.test(x.title))]);
    // Trees are ready a moment after the window maps.
    for (const [, w] of targets) {
      await waitUntil(async () => {
        try { return (await toolCall(deskd, 'ui_snapshot', { window: w.id })).structuredContent.listed > 5; } catch { return false; }
      }, { timeout: 15000, what: 'a tree' });
    }

    const rows = [];
    const size = [];
    for (const [label, w] of targets) {
      for (const all of [false, true]) {
        let last;
        const inside = [];
        const s = stats(await time(async () => {
          last = await toolCall(deskd, 'ui_snapshot', { window: w.id, all, max_nodes: 5000 });
          inside.push(last.structuredContent.elapsed_ms);
        }, { n: N, warmup: 3 }));
        const sc = last.structuredContent;
        const ins = stats(inside.slice(3).sort((a, b) => a - b));
        rows.push([`${label}${all ? ', all (hidden too)' : ''}`, ...ms(s), String(sc.node_count), String(sc.listed), String(sc.calls),
          `${ins.p50} / ${ins.p95}`]);
        if (!all) {
          const outline = Buffer.byteLength(last.content[0].text);
          const shot = await toolCall(deskd, 'screenshot', { window: w.id });
          const b64 = shot.content.find((c) => c.type === 'image').data.length;
          size.push([label, `${w.width}x${w.height}`, String(outline), String(b64), (b64 / outline).toFixed(1) + 'x']);
        }
      }
    }
    table('a11y: ui_snapshot over HTTP, ms (target: the widget-factory window < 50 ms p50)',
      ['window', 'p50', 'p95', 'n', 'nodes visited', 'lines', 'D-Bus calls', 'walk in deskd p50 / p95'], rows);
    table('a11y: the outline against a PNG screenshot of the same window (target: >= 5x smaller)',
      ['window', 'size', 'outline bytes', 'PNG base64 bytes', 'ratio'], size);

    const form = targets[0][1];
    const snap = await toolCall(deskd, 'ui_snapshot', { window: form.id });
    const ref = (role, name) => snap.structuredContent.elements.find((e) => e.role === role && e.name === name).ref;
    const arows = [];
    arows.push(['ui_find name=Save (exact)', ...ms(stats(await time(() => toolCall(deskd, 'ui_find', { window: form.id, name: 'Save', match: 'exact' }), { n: N, warmup: 3 })))]);
    if (factory) {
      const wf = targets[1][1];
      arows.push(['ui_find role=check box, widget-factory', ...ms(stats(await time(() => toolCall(deskd, 'ui_find', { window: wf.id, role: 'check box' }), { n: N, warmup: 3 })))]);
    }
    let k = 0;
    arows.push(['ui_act set_text (verified read back)', ...ms(stats(await time(() => toolCall(deskd, 'ui_act', { ref: ref('text', 'Name'), action: 'set_text', text: `  text ${k++} ✓  ` }), { n: N, warmup: 3 })))]);
    arows.push(['ui_act toggle (verified)', ...ms(stats(await time(() => toolCall(deskd, 'ui_act', { ref: ref('check box', 'Subscribe'), action: 'toggle' }), { n: N, warmup: 3 })))]);
    arows.push(['ui_act set_value (verified)', ...ms(stats(await time(() => toolCall(deskd, 'ui_act', { ref: ref('slider', 'Volume'), action: 'set_value', value: 10 + (k++ % 80) }), { n: N, warmup: 3 })))]);
    arows.push(['ui_read (text)', ...ms(stats(await time(() => toolCall(deskd, 'ui_read', { ref: ref('text', 'Name') }), { n: N, warmup: 3 })))]);
    table('a11y: find, act and read round trips over HTTP, ms', ['operation', 'p50', 'p95', 'n'], arows);
  } finally {
    await deskd.stop();
  }
  if (have('chromium')) await chromium(dir);
}

/** Chromium: the tests' form, and a 500-row table (about 5,000 nodes) of
 *  which only the visible part is walked. */
async function chromium(dir) {
  const rows = Array.from({ length: 500 }, (_, i) =>
    `<tr><td>row ${i}</td><td><a href="#r${i}">link ${i}</a></td><td><button>act ${i}</button></td><td><input type="checkbox" aria-label="pick ${i}"></td></tr>`).join('');
  writeFileSync(join(dir, 'big.html'), `<!doctype html><meta charset="utf-8"><title>big table</title><table>${rows}</table>`);
  const flags = `--force-renderer-accessibility --disable-backgrounding-occluded-windows --disable-renderer-backgrounding --no-sandbox --disable-gpu --no-first-run`;
  const deskd = await startDeskd({ args: ['--log-level', 'warning',
    '--launch', `chromium ${flags} --user-data-dir=${dir}/p1 file://${join(ROOT, 'tests/apps/form.html')}`,   // spawns: chromium
    '--launch', `chromium ${flags} --user-data-dir=${dir}/p2 file://${join(dir, 'big.html')}`] });
  try {
    const out = [];
    for (const [label, title, want] of [['Chromium, the tests\' form', /deskd form/, 'Your name'], ['Chromium, 500-row table (visible part)', /big table/, 'act 0']]) {
      const w = await waitUntil(async () => (await toolCall(deskd, 'windows', {})).structuredContent.windows.find((x) => title.test(x.title)),
        { timeout: 30000, what: label });
      await waitUntil(async () => {
        try { return (await toolCall(deskd, 'ui_snapshot', { window: w.id, max_nodes: 5000 })).structuredContent.elements.some((e) => e.name === want); } catch { return false; }
      }, { timeout: 30000, what: `${label}: its tree` });
      for (const all of [false, true]) {
        if (all && !/table/.test(label)) continue;
        let last;
        const inside = [];
        const s = stats(await time(async () => {
          last = await toolCall(deskd, 'ui_snapshot', { window: w.id, all, max_nodes: 5000, timeout_ms: 10000 });
          inside.push(last.structuredContent.elapsed_ms);
        }, { n: all ? 5 : N, warmup: 2 }));
        const sc = last.structuredContent;
        const ins = stats(inside.slice(2).sort((a, b) => a - b));
        out.push([`${label}${all ? ', all nodes' : ''}`, ...ms(s), String(sc.node_count), String(sc.listed), String(sc.calls), `${ins.p50} / ${ins.p95}`]);
      }
    }
    table('a11y: Chromium ui_snapshot over HTTP, ms (target: the 5,000-node page, visible part, < 300 ms)',
      ['page', 'p50', 'p95', 'n', 'nodes visited', 'lines', 'D-Bus calls', 'walk in deskd p50 / p95'], out);
  } finally {
    await deskd.stop();
  }
}
