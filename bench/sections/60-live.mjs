// Live view: frames per second delivered at 1280x800 to 1 and 10 viewers
// while the whole screen changes 30 times a second (the fixture's --animate),
// the CPU deskd spends on it, and the idle CPU with viewers and a still screen.
import { table } from '../lib.mjs';
import { startXvfb, startDeskd, startFixture, sleep } from '../../tests/integration/lib/harness.mjs';
import { openLive, procStats, metrics } from '../../tests/integration/lib/live.mjs';

const SECONDS = Number(process.env.BENCH_LIVE_SECONDS || 5);

async function measure(deskd, viewers, seconds) {
  const n0 = viewers.map((v) => v.frames.length);
  const s0 = procStats(deskd.proc.pid);
  const m0 = await metrics(deskd).catch(() => ({}));
  const t0 = Date.now();
  await sleep(seconds * 1000);
  const dt = (Date.now() - t0) / 1000;
  const s1 = procStats(deskd.proc.pid);
  const m1 = await metrics(deskd).catch(() => ({}));
  const fps = viewers.map((v, i) => (v.frames.length - n0[i]) / dt);
  const d = (k) => (m1[k] ?? NaN) - (m0[k] ?? NaN);
  return {
    fpsMin: Math.min(...fps),
    fpsAvg: fps.reduce((a, b) => a + b, 0) / (fps.length || 1),
    cpu: (100 * (s1.cpu - s0.cpu)) / dt,
    encodesPerSec: d('deskd_live_encodes_total') / dt,
    kib: viewers.length ? viewers[0].bytes / Math.max(1, viewers[0].binaries) / 1024 : 0,
    rss: s1.rss,
  };
}

async function run({ animate, viewers: count, fps, maxDim }) {
  const x = await startXvfb({ width: 1280, height: 800 });
  const procs = [x];
  try {
    const fixture = await startFixture(x.display, { geometry: '1280x800+0+0', animate });
    procs.push(fixture);
    const deskd = await startDeskd({ display: x.display, args: ['--log-level', 'info'] });
    procs.push(deskd);
    const viewers = await Promise.all(Array.from({ length: count }, () => openLive(deskd)));
    for (const v of viewers) {
      v.keepJpegs = false;
      v.watch({ target: 'screen', fps, max_dimension: maxDim });
    }
    await Promise.all(viewers.map((v) => v.until((c) => c.frames.length >= 1, { timeout: 10000 })));
    await sleep(1000);   // warm up
    const r = await measure(deskd, viewers, SECONDS);
    for (const v of viewers) v.close();
    return r;
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
}

export default async function () {
  const rows = [];
  const cases = [
    { name: 'changing, 1 viewer', animate: 30, viewers: 1, fps: 30, maxDim: 0 },
    { name: 'changing, 10 viewers', animate: 30, viewers: 10, fps: 30, maxDim: 0 },
    { name: 'still, 10 viewers', animate: 0, viewers: 10, fps: 30, maxDim: 0 },
    { name: 'still, 0 viewers', animate: 0, viewers: 0, fps: 30, maxDim: 0 },
  ];
  for (const c of cases) {
    if (c.viewers === 0) {
      // Idle baseline: deskd with nobody watching.
      const x = await startXvfb({ width: 1280, height: 800 });
      const deskd = await startDeskd({ display: x.display, args: ['--log-level', 'info'] });
      try {
        await sleep(1000);
        const r = await measure(deskd, [], SECONDS);
        rows.push([c.name, '-', '-', '-', r.cpu.toFixed(2), '-', String(Math.round(r.rss / 1024))]);
      } finally {
        await deskd.stop();
        await x.stop();
      }
      continue;
    }
    const r = await run(c);
    rows.push([c.name, c.animate ? r.fpsAvg.toFixed(1) : '0', c.animate ? r.fpsMin.toFixed(1) : '0',
      Number.isFinite(r.encodesPerSec) ? r.encodesPerSec.toFixed(1) : '?', r.cpu.toFixed(2),
      c.animate ? r.kib.toFixed(0) : '-', String(Math.round(r.rss / 1024))]);
  }
  table(`live view, 1280x800 screen, native size, fps 30, ${SECONDS} s (targets: 30 fps to 10 viewers under 50% of a core; idle under 1%)`,
    ['case', 'fps/viewer avg', 'fps min', 'encodes/s', 'deskd CPU % of a core', 'KiB/frame', 'RSS MiB'], rows);
}
