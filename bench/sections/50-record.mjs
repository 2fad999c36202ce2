// Recording: CPU per recorded second and dropped frames of `deskd record`
// (one recorder: capture + swscale + x264 + MP4) on a 1280x800 window at
// 30 fps. Cases: a still window, a terminal with scrolling text (the typical
// case), and a window redrawn whole 30 times a second (the worst).
// BENCH_RECORD_SECONDS sets the recording length (default 20; the target of
// 0 dropped frames is stated for 60 s). With BENCH_BASELINE=path (another
// deskd binary) each case also runs it, interleaved, and a ratio row follows.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { table, have } from '../lib.mjs';
import { startXvfb, startFixture, launch, tempDir, waitUntil, sleep, DESKD_BIN } from '../../tests/integration/lib/harness.mjs';

const SECONDS = Number(process.env.BENCH_RECORD_SECONDS || 20);
const TICKS = 100;   // USER_HZ

function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / TICKS;   // utime + stime
}

/** The id of the first top-level window whose WM_CLASS mentions name. */
function findWindow(display, name) {
  const r = spawnSync('xwininfo', ['-root', '-children'], { env: { ...process.env, DISPLAY: display }, encoding: 'utf8' });
  const line = r.stdout.split('\n').find((l) => l.toLowerCase().includes(name));
  return line ? parseInt(line.trim().split(/\s+/)[0], 16) : 0;
}

async function startWindow(display, kind) {
  if (kind === 'still') return startFixture(display, { geometry: '1280x800+0+0' });
  if (kind === 'animated') return startFixture(display, { geometry: '1280x800+0+0', animate: 30 });
  // A terminal printing a listing ten times a second.
  const p = launch('xterm', 'xterm', ['-geometry', '140x52+0+0', '-fa', 'Monospace', '-fs', '9', '-e', 'sh', '-c',
    'while :; do ls -l /usr/bin | head -n 8; date; sleep 0.1; done'], { env: { ...process.env, DISPLAY: display } });
  p.window = await waitUntil(() => findWindow(display, 'xterm'), { timeout: 10000, what: 'xterm window' });
  await sleep(500);
  return p;
}

async function run(kind, seconds, bin = DESKD_BIN) {
  const x = await startXvfb({ width: 1280, height: 800 });
  const procs = [x];
  try {
    const win = await startWindow(x.display, kind);
    procs.push(win);
    const dir = tempDir('deskd-bench-rec-');
    const out = join(dir, `${kind}.mp4`);
    // spawns: - (deskd, or BENCH_BASELINE's deskd)
    const rec = launch('deskd record', bin, ['record', '--window', String(win.window), '--out', out, '--fps', '30'],
      { env: { ...process.env, DISPLAY: x.display } });
    procs.push(rec);
    await waitUntil(() => rec.log.join('').includes('Ctrl-C stops'), { timeout: 10000, what: 'recording started' });
    await sleep(1000);   // warm up: x264 lookahead, first keyframe
    const c0 = cpuSeconds(rec.proc.pid);
    const t0 = Date.now();
    await sleep(seconds * 1000);
    const c1 = cpuSeconds(rec.proc.pid);
    const wall = (Date.now() - t0) / 1000;
    const exit = await rec.stop('SIGINT', 20000);
    const log = rec.log.join('');
    const m = log.match(/wrote .*: (\d+)x(\d+), (\d+) frames \((\d+) dropped\), ([\d.]+) s, (\d+) bytes/);
    if (exit.code !== 0 || !m) throw new Error(`deskd record failed: ${log}`);
    return {
      size: `${m[1]}x${m[2]}`, frames: Number(m[3]), dropped: Number(m[4]), duration: Number(m[5]),
      cpu: (100 * (c1 - c0)) / wall, kib: statSync(out).size / 1024,
    };
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
}

export default async function () {
  const kinds = ['still', ...(have('xterm') && have('xwininfo') ? ['terminal'] : []), 'animated'];
  const baseline = process.env.BENCH_BASELINE;
  const rows = [];
  const row = (name, r) => [name, r.size, `${SECONDS} s`, r.cpu.toFixed(1) + ' %',
    String(r.frames), String(r.dropped), (r.kib / r.duration).toFixed(0) + ' KiB/s'];
  for (const kind of kinds) {
    const r = await run(kind, SECONDS);
    rows.push(row(kind, r));
    if (!baseline) continue;
    const b = await run(kind, SECONDS, baseline);
    rows.push(row(`${kind} (baseline)`, b));
    rows.push([`${kind}: this / baseline`, '', '', (r.cpu / b.cpu).toFixed(2) + 'x', '', '', (r.kib / b.kib).toFixed(2) + 'x']);
  }
  table(`record: deskd record at 30 fps, libx264 ultrafast+CABAC, a frame only on change (CPU of one core per recorded second; target < 25 %, 0 dropped)`,
    ['window', 'video', 'length', 'CPU (% of a core)', 'frames', 'dropped', 'bitrate'], rows);
}
