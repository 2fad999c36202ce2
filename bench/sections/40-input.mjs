// Input: click and keypress tool-call latency over HTTP (p50/p95) against
// xdotool on the same display, click batch throughput, and typing
// throughput (characters per second: ASCII, non-ASCII that fits the pool of
// spare slots and that overflows it), checked against the fixture app for
// lost or reordered characters.
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
  // The keymap deskd loads on its own display (pc+us without inet(evdev)):
  // its pool of spare slots (50 keycodes x 4 levels).
  spawnSync('setxkbmap', ['-display', x.display, '-keycodes', 'evdev', '-types', 'complete', '-compat', 'complete',
    '-symbols', 'pc+us', '-geometry', 'pc']);
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
    // 50 clicks in one batch (each waits until the pointer reads released).
    const fifty = () => ({ actions: Array.from({ length: 50 }, () => ({ type: 'click', ...pt() })) });
    const b50 = stats(await time(() => call(deskd, 'computer_use', fifty()), { n: 20, warmup: 2 }));
    rows.push(['computer_use [50 clicks] (HTTP)', fmt(b50.p50), fmt(b50.p95), String(b50.n)]);
    rows.push(['  = clicks/s in a batch (p50)', String(Math.round(50 / (b50.p50 / 1000))), '', '']);
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
    // 2,000 characters over 150 distinct non-ASCII symbols: fits the pool.
    const fitsSet = [...'ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞßàáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩαβγδεζηθικλμνξοπρστυφχψωАБВГДЕЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯабвгдежзийклмнопрстуфх'];
    const fits = Array.from({ length: 2000 }, (_, k) => k % 3 === 2 ? ' ' : fitsSet[(k * 7) % fitsSet.length]).join('');
    // 600 distinct CJK characters: more than the pool holds in one call.
    const over = Array.from({ length: 600 }, (_, k) => String.fromCodePoint(0x4e00 + k)).join('');
    const trows = [];
    trows.push(await typing(x.display, deskd, 'deskd ASCII', ascii));
    trows.push(await typing(x.display, deskd, 'deskd mixed non-ASCII', mixed));
    trows.push(await typing(x.display, deskd, 'deskd 2000 chars, 150 distinct (fits the pool, first call)', fits));
    trows.push(await typing(x.display, deskd, 'deskd same again (bindings kept)', fits));
    trows.push(await typing(x.display, deskd, 'deskd 600 distinct CJK (overflows the pool)', over));
    // One key 200 times: each press after its own release waits 1 ms of
    // server time (PITFALLS 27d: LibreOffice drops same-timestamp repeats).
    trows.push(await typing(x.display, deskd, 'deskd one key 200 times (1 ms server gap per repeat)', 'x'.repeat(200)));
    if (have('xdotool')) {
      trows.push(await xdotoolTyping(x.display, 'xdotool type --delay 0 ASCII', ascii));
      trows.push(await xdotoolTyping(x.display, 'xdotool type --delay 0 mixed', mixed));
    }
    table('input: typing throughput into the fixture (Xlib; targets: >= 500 ASCII chars/s, >= 1,000 non-ASCII chars/s when the symbols fit the pool; per-app numbers: tests/integration/input.test.mjs)', ['what', 'chars', 'remapped', 'call ms', 'chars/s', 'fixture got'], trows);
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
}
