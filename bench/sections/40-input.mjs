// Input: click and keypress tool-call latency over HTTP (p50/p95) against
// xdotool on the same display, and typing throughput (characters per
// second, ASCII and non-ASCII), checked against the fixture app for lost or
// reordered characters.
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { time, stats, fmt, table, have, toolCall } from '../lib.mjs';
import { startXvfb, startDeskd, startFixture, waitUntil } from '../../tests/integration/lib/harness.mjs';

const N = Number(process.env.BENCH_INPUT_N || 300);

const call = async (deskd, name, args) => (await toolCall(deskd, name, args)).structuredContent;

function xdotool(display, args) {
  const r = spawnSync('xdotool', args, { env: { ...process.env, DISPLAY: display } });
  if (r.status !== 0) throw new Error('xdotool ' + args.join(' ') + ': ' + r.stderr);
}

/** Type text with one call; wait until the fixture has it; report. */
async function typing(display, deskd, label, text) {
  const fixture = await startFixture(display, { geometry: '400x300+0+0' });
  try {
    const t0 = performance.now();
    const r = await call(deskd, 'computer_type', { text });
    const callMs = performance.now() - t0;
    await waitUntil(() => fixture.state().text.length >= text.length, { timeout: 60000, interval: 100, what: 'typed text' }).catch(() => {});
    const got = fixture.state().text;
    const chars = [...text].length;
    return [label, String(chars), String(r.remapped || 0), fmt(callMs), String(Math.round(chars / (callMs / 1000))),
      got === text ? 'exact' : `MISMATCH (${[...got].length} chars arrived)`];
  } finally {
    await fixture.stop();
  }
}

async function xdotoolTyping(display, label, text) {
  const fixture = await startFixture(display, { geometry: '400x300+0+0' });
  try {
    const t0 = performance.now();
    xdotool(display, ['type', '--delay', '0', text]);
    const ms = performance.now() - t0;
    await waitUntil(() => fixture.state().text.length >= text.length, { timeout: 30000, interval: 100, what: 'typed text' }).catch(() => {});
    const got = fixture.state().text;
    const chars = [...text].length;
    return [label, String(chars), '-', fmt(ms), String(Math.round(chars / (ms / 1000))),
      got === text ? 'exact' : `MISMATCH (${[...got].length} chars arrived)`];
  } finally {
    await fixture.stop();
  }
}

export default async function () {
  const x = await startXvfb({ width: 1280, height: 800 });
  const procs = [x];
  try {
    const deskd = await startDeskd({ display: x.display, args: ['--log-level', 'warning', '--tools', 'both'] });
    procs.push(deskd);
    let i = 0;
    const pt = () => { i++; return { x: 100 + (i * 37) % 1000, y: 100 + (i * 53) % 600 }; };

    const rows = [];
    const click = stats(await time(() => call(deskd, 'computer_click', pt()), { n: N, warmup: 20 }));
    rows.push(['computer_click (HTTP)', fmt(click.p50), fmt(click.p95), String(click.n)]);
    const batch = stats(await time(() => call(deskd, 'computer_use', { actions: [{ type: 'click', ...pt() }] }), { n: N, warmup: 20 }));
    rows.push(['computer_use [click] (HTTP)', fmt(batch.p50), fmt(batch.p95), String(batch.n)]);
    const key = stats(await time(() => call(deskd, 'computer_keypress', { keys: ['shift', 'F5'] }), { n: N, warmup: 20 }));
    rows.push(['computer_keypress shift+F5 (HTTP)', fmt(key.p50), fmt(key.p95), String(key.n)]);
    const chord = stats(await time(() => call(deskd, 'computer_keypress', { keys: ['ctrl', 'é'] }), { n: 50, warmup: 2 }));
    rows.push(['computer_keypress ctrl+é (spare keycode)', fmt(chord.p50), fmt(chord.p95), String(chord.n)]);
    if (have('xdotool')) {
      const xd = stats(await time(async () => { const p = pt(); xdotool(x.display, ['mousemove', String(p.x), String(p.y), 'click', '--delay', '0', '1']); }, { n: 100, warmup: 5 }));
      rows.push(['xdotool mousemove + click --delay 0', fmt(xd.p50), fmt(xd.p95), String(xd.n)]);
      const xk = stats(await time(async () => xdotool(x.display, ['key', 'shift+F5']), { n: 100, warmup: 5 }));
      rows.push(['xdotool key shift+F5', fmt(xk.p50), fmt(xk.p95), String(xk.n)]);
      rows.push(['ratio click: xdotool / deskd', (xd.p50 / click.p50).toFixed(1) + 'x', (xd.p95 / click.p95).toFixed(1) + 'x', '']);
      rows.push(['ratio key: xdotool / deskd', (xk.p50 / key.p50).toFixed(1) + 'x', (xk.p95 / key.p95).toFixed(1) + 'x', '']);
    }
    table('input: tool-call latency, ms (target: click p50 < 2 ms)', ['operation', 'p50', 'p95', 'n'], rows);

    const ascii = Array.from({ length: 2000 }, (_, k) => 'The quick brown fox jumps over the lazy dog 0123456789 !@#$%^&*()_+-=[]{};:\'",.<>/?\\|`~\n'[k % 88]).join('');
    const mixed = ('Grüße aus Köln ÄÖÜß Καλημέρα κόσμε Привет мир 你好世界 😀 café ').repeat(8);
    const cyrillic = 'Съешь же ещё этих мягких французских булок, да выпей чаю. ЭЙ ЖЛОБ ГДЕ ТУЗ ПРЯЧЬ ЮНЫХ СЪЁМЩИЦ В ШКАФ. '.repeat(3);
    const trows = [];
    trows.push(await typing(x.display, deskd, 'deskd ASCII', ascii));
    trows.push(await typing(x.display, deskd, 'deskd mixed non-ASCII', mixed));
    trows.push(await typing(x.display, deskd, 'deskd Cyrillic (many distinct)', cyrillic));
    if (have('xdotool')) {
      trows.push(await xdotoolTyping(x.display, 'xdotool type --delay 0 ASCII', ascii));
      trows.push(await xdotoolTyping(x.display, 'xdotool type --delay 0 mixed', mixed));
    }
    table('input: typing throughput (target: >= 500 ASCII chars/s)', ['what', 'chars', 'remapped', 'call ms', 'chars/s', 'fixture got'], trows);
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
}
