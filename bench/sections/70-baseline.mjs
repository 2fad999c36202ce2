// Before and after: the screenshot and click rows against a baseline deskd
// binary (BENCH_BASELINE=path, e.g. from `make bench-compare REV=...`), both
// serving the same Xvfb in the same run, measured in alternating rounds so
// drift on a shared machine hits both alike. Prints p50/p95 and the ratio
// (this build / baseline; 1.00 = unchanged). Skipped without BENCH_BASELINE.
// BENCH_BASELINE_SIZE=WxH sets the screen (default 1280x800).
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { time, stats, table, fmt, toolCall } from '../lib.mjs';
import { startXvfb, startDeskd, startFixture, sleep } from '../../tests/integration/lib/harness.mjs';

const ROUNDS = Number(process.env.BENCH_BASELINE_ROUNDS || 6);
const N = Number(process.env.BENCH_BASELINE_N || 40);
const [W, H] = (process.env.BENCH_BASELINE_SIZE || '1280x800').split('x').map(Number);

export default async function () {
  const baseline = process.env.BENCH_BASELINE;
  if (!baseline) return;
  if (!existsSync(baseline)) throw new Error(`BENCH_BASELINE=${baseline} does not exist`);
  const x = await startXvfb({ width: W, height: H });
  const procs = [x];
  try {
    procs.push(await startFixture(x.display, { geometry: '600x400+40+40' }));
    const now = await startDeskd({ display: x.display, args: ['--log-level', 'warning', '--tools', 'both'] });
    procs.push(now);
    const before = await startDeskd({ display: x.display, args: ['--log-level', 'warning', '--tools', 'both'], bin: baseline, personToken: null });   // an older deskd may not know --person-token
    procs.push(before);
    // The whole screen changes before each call: two full-screen fixture
    // windows take turns on top (untimed), as in the capture section.
    const winA = await startFixture(x.display, { title: 'full A', geometry: `${W}x${H}+0+0` });
    const winB = await startFixture(x.display, { title: 'full B', geometry: `${W + 10}x${H}+-10+0` });
    procs.push(winA, winB);
    let flips = 0;
    const flip = async () => {
      spawnSync('xdotool', ['windowraise', String(flips++ & 1 ? winA.window : winB.window)],   // spawns: xdotool
        { env: { ...process.env, DISPLAY: x.display } });
      await sleep(5);
    };
    const flipped = (fn, opts) => time(fn, { ...opts, before: flip });
    let i = 0;
    const cases = [
      ['screenshot PNG (cache hit)', (d) => toolCall(d, 'screenshot', {})],
      ['screenshot PNG, cursor drawn (never cached)', (d) => toolCall(d, 'screenshot', { cursor: true })],
      ['screenshot JPEG q80', (d) => toolCall(d, 'screenshot', { format: 'jpeg', quality: 80, cursor: true })],
      ['screenshot PNG, whole screen changed', (d) => toolCall(d, 'screenshot', {}), flipped],
      ['screenshot JPEG q80, whole screen changed', (d) => toolCall(d, 'screenshot', { format: 'jpeg', quality: 80 }), flipped],
      ['click', (d) => toolCall(d, 'computer_click', { x: 100 + (i++ % 500), y: 120 })],
      // The same key again within 1 ms of its release waits for the
      // server's next millisecond (PITFALLS 27d); another key does not.
      ['keypress, the same key each call', (d) => toolCall(d, 'computer_keypress', { keys: ['shift'] })],
      ['keypress, shift and ctrl in turn', (d) => toolCall(d, 'computer_keypress', { keys: [i++ & 1 ? 'ctrl' : 'shift'] })],
    ];
    const rows = [];
    for (const [name, fn, timer = time] of cases) {
      const a = [], b = [];
      for (let r = 0; r < ROUNDS; r++) {
        a.push(...await timer(() => fn(now), { n: N, warmup: 3 }));
        b.push(...await timer(() => fn(before), { n: N, warmup: 3 }));
      }
      const sa = stats(a.sort((p, q) => p - q)), sb = stats(b.sort((p, q) => p - q));
      rows.push([name, `${fmt(sa.p50)} / ${fmt(sa.p95)}`, `${fmt(sb.p50)} / ${fmt(sb.p95)}`,
        (sa.p50 / sb.p50).toFixed(2)]);
    }
    table(`this build against ${baseline}, ${W}x${H} (${ROUNDS} x ${N} calls each, alternating; ms p50 / p95)`,
      ['case', 'this build', 'baseline', 'ratio p50'], rows);
  } finally {
    for (const p of procs.reverse()) await p.stop().catch(() => {});
  }
}
