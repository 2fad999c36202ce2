// The control channel (docs/CONTROL.md): how long a person's click takes
// from its WebSocket message to the X event in an app (the fixture records
// CLOCK_MONOTONIC when it reads each event: the clock of process.hrtime),
// and from the message to the live frame that shows the click's effect (the
// fixture's --paint-clicks paints a square at each press).
import { table, stats, fmt } from '../lib.mjs';
import { startXvfb, startDeskd, startFixture, sleep, waitUntil } from '../../tests/integration/lib/harness.mjs';
import { openLive } from '../../tests/integration/lib/live.mjs';

const N = Number(process.env.BENCH_CONTROL_N || 100);
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

export default async function () {
  const x = await startXvfb({ width: 1280, height: 800 });
  const procs = [x];
  try {
    const fixture = await startFixture(x.display, { geometry: '1280x800+0+0', pattern: 'solid:202020', paintClicks: true });
    procs.push(fixture);
    const deskd = await startDeskd({ display: x.display, args: ['--log-level', 'info'] });
    procs.push(deskd);
    const c = await openLive(deskd);
    c.keepJpegs = false;
    const send = (m) => c.ws.send(JSON.stringify(m));
    c.watch({ target: 'screen', fps: Number(process.env.BENCH_CONTROL_FPS || 30), max_dimension: 0 });
    await c.until((v) => v.frames.length >= 1, { timeout: 10000 });
    send({ type: 'take' });
    await c.until((v) => v.texts.some((m) => m.type === 'control' && m.holder === 'you'));

    // 1. message -> X event in the app.
    const toEvent = [];
    for (let i = 0; i < N; i++) {
      const px = 100 + (i % 20) * 50, py = 100 + Math.floor(i / 20) * 50;
      const have = fixture.state().events.filter((e) => e.type === 'button_press').length;
      const t0 = nowMs();
      send({ type: 'button', x: px, y: py, button: 1, down: true });
      send({ type: 'button', x: px, y: py, button: 1, down: false });
      const st = await waitUntil(() => {
        const s = fixture.state();
        return s.events.filter((e) => e.type === 'button_press').length > have && s;
      }, { timeout: 5000, interval: 5, what: 'the click in the fixture' });
      const press = st.events.filter((e) => e.type === 'button_press')[have];
      if (press.root_x !== px || press.root_y !== py) throw new Error(`click at ${press.root_x},${press.root_y}, sent ${px},${py}`);
      toEvent.push(press.t_ms - t0);
    }

    // 2. message -> the live frame showing the painted square. The pointer
    // is already there and the screen is still, so the next frame is the
    // click's effect.
    const toFrame = [];
    const px = 640, py = 400;
    send({ type: 'move', x: px, y: py });
    for (let i = 0; i < Math.min(N, 60); i++) {
      let last = c.frames.length;
      // Quiet: no frame for 150 ms.
      for (let quiet = 0; quiet < 150;) {
        await sleep(10);
        if (c.frames.length !== last) { last = c.frames.length; quiet = 0; } else quiet += 10;
      }
      const t0 = nowMs();
      send({ type: 'button', x: px, y: py, button: 1, down: true });
      send({ type: 'button', x: px, y: py, button: 1, down: false });
      await c.until((v) => v.frames.length > last, { timeout: 5000, interval: 1 });
      toFrame.push(nowMs() - t0);
    }
    send({ type: 'release' });
    c.close();

    const a = stats(toEvent.sort((p, q) => p - q));
    const b = stats(toFrame.sort((p, q) => p - q));
    table('control channel: a person\'s click (targets: message -> X event under 2 ms p50; -> live frame under 50 ms p50)',
      ['path', 'n', 'p50 ms', 'p95 ms'],
      [['WebSocket message -> ButtonPress read by the app', String(a.n), fmt(a.p50), fmt(a.p95)],
        ['WebSocket message -> live frame (1280x800, JPEG) received', String(b.n), fmt(b.p50), fmt(b.p95)]]);
  } finally {
    for (const p of procs.reverse()) await p.stop();
  }
}
