// Accessibility: ui_snapshot latency and node counts (the GTK3 form of the
// tests, gtk3-widget-factory), ui_find, ui_act round trips, and the
// outline's size against the PNG screenshot (base64) of the same window,
// on deskd's own embedded desktop and buses; the same windows walked by
// pyatspi (bench/peers/atspi_walk.py) in the same run, as ratios.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDeskd, tempDir, waitUntil, ROOT } from '../../tests/integration/lib/harness.mjs';
import { time, stats, table, fmt, have, toolCall } from '../lib.mjs';

const FORM = process.env.GTK3_FORM_BIN || join(ROOT, 'build/tests/gtk3-form');
const N = Number(process.env.BENCH_A11Y_N) || 40;

const ms = (s) => [fmt(s.p50), fmt(s.p95), String(s.n)];

// The pyatspi peer: Debian's python3 (pyatspi is not in a pyenv's), started
// by deskd with the desktop's AT-SPI bus, walking when go exists.
const PYTHON = '/usr/bin/python3';
const WALKER = join(ROOT, 'bench/peers/atspi_walk.py');
const pyatspi = () => have(PYTHON) && spawnSync(PYTHON, ['-c', 'import pyatspi']).status === 0;   // spawns: python3
function walkerLaunch(dir, name, title, n) {
  const go = join(dir, `${name}.go`), out = join(dir, `${name}.json`);
  return { go, out, args: ['--launch', `${PYTHON} ${WALKER} ${go} ${out} ${title} ${n}`] };   // spawns: python3
}
async function walked(w) {
  writeFileSync(w.go, '');
  await waitUntil(() => existsSync(w.out), { timeout: 120000, what: 'the pyatspi walk' });
  const r = JSON.parse(readFileSync(w.out, 'utf8'));
  return { ...stats(r.times.sort((a, b) => a - b)), first: r.first, nodes: r.nodes };
}
/** A row of deskd's all-nodes snapshot against the pyatspi walk. */
const peerRow = (label, d, p) => [label, `${fmt(d.p50)} / ${fmt(d.p95)}`, String(d.nodes),
  `${fmt(p.p50)} / ${fmt(p.p95)} (${fmt(p.first)})`, String(p.nodes), `${(p.p50 / d.p50).toFixed(1)}x`];
const peerHeader = (what) => [what, 'deskd all: true, p50 / p95', 'nodes', 'pyatspi walk p50 / p95 (first)', 'nodes', 'pyatspi / deskd'];
const PEER_TITLE = 'a11y: deskd ui_snapshot (all: true) against a pyatspi walk of the same window (name, role, states, extents of every node), ms';

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
  const walker = factory && pyatspi() ? walkerLaunch(dir, 'factory', 'widget.factory', N) : null;
  if (walker) launch.push(...walker.args);
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
    const allNodes = {};
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
        if (all) allNodes[label] = { ...s, nodes: sc.node_count };
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
    if (walker) table(PEER_TITLE, peerHeader('window'), [peerRow('gtk3-widget-factory', allNodes['gtk3-widget-factory'], await walked(walker))]);
    else console.log('\n(no pyatspi rows: needs gtk3-widget-factory and python3-pyatspi: scripts/install-deps bench)');

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
  // The 5,000-node table takes pyatspi seconds a walk: 5 walks, as deskd's.
  const walkers = pyatspi() ? [walkerLaunch(dir, 'form', 'deskd.form', N), walkerLaunch(dir, 'table', 'big.table', 5)] : [];
  const deskd = await startDeskd({ args: ['--log-level', 'warning',
    '--launch', `chromium ${flags} --user-data-dir=${dir}/p1 file://${join(ROOT, 'tests/apps/form.html')}`,   // spawns: chromium
    '--launch', `chromium ${flags} --user-data-dir=${dir}/p2 file://${join(dir, 'big.html')}`,
    ...walkers.flatMap((w) => w.args)] });
  try {
    const out = [];
    const allNodes = [];
    for (const [label, title, want] of [['Chromium, the tests\' form', /deskd form/, 'Your name'], ['Chromium, 500-row table (visible part)', /big table/, 'act 0']]) {
      const w = await waitUntil(async () => (await toolCall(deskd, 'windows', {})).structuredContent.windows.find((x) => title.test(x.title)),
        { timeout: 30000, what: label });
      await waitUntil(async () => {
        try { return (await toolCall(deskd, 'ui_snapshot', { window: w.id, max_nodes: 5000 })).structuredContent.elements.some((e) => e.name === want); } catch { return false; }
      }, { timeout: 30000, what: `${label}: its tree` });
      for (const all of [false, true]) {
        let last;
        const inside = [];
        const s = stats(await time(async () => {
          last = await toolCall(deskd, 'ui_snapshot', { window: w.id, all, max_nodes: 5000, timeout_ms: 10000 });
          inside.push(last.structuredContent.elapsed_ms);
        }, { n: all && /table/.test(label) ? 5 : N, warmup: 2 }));
        const sc = last.structuredContent;
        const ins = stats(inside.slice(2).sort((a, b) => a - b));
        out.push([`${label}${all ? ', all nodes' : ''}`, ...ms(s), String(sc.node_count), String(sc.listed), String(sc.calls), `${ins.p50} / ${ins.p95}`]);
        if (all) allNodes.push([label.replace(' (visible part)', ''), { ...s, nodes: sc.node_count }]);
      }
    }
    table('a11y: Chromium ui_snapshot over HTTP, ms (target: the 5,000-node page, visible part, < 300 ms)',
      ['page', 'p50', 'p95', 'n', 'nodes visited', 'lines', 'D-Bus calls', 'walk in deskd p50 / p95'], out);
    if (walkers.length) {
      const peer = [];
      for (let i = 0; i < walkers.length; i++) peer.push(peerRow(allNodes[i][0], allNodes[i][1], await walked(walkers[i])));
      table(PEER_TITLE.replace('window', 'page'), peerHeader('page'), peer);
    }
  } finally {
    await deskd.stop();
  }
}
