// Latency as the person sees it: through the dashboard in headless Chromium
// (playwright-core from tests/node_modules). A click on the live picture,
// from the browser's input event to the ButtonPress as the fixture app reads
// it, and that X change (the fixture paints a square at each press) to the
// next frame drawn in the page's canvas, and to the animation frame after
// it (when the browser can put it on screen).
//
// deskd runs with --log-level trace: its stamps of each press (received,
// taken by the hands thread, the desktop lock, XTest sent) and each frame
// (the change seen, pixels read, JPEG done, published, header and JPEG
// written) split both paths into deskd's part and the others'.
//
// Clocks: the fixture stamps events with CLOCK_MONOTONIC (process.hrtime's
// clock); the page stamps with its wall clock (performance.timeOrigin +
// performance.now()), mapped to the monotonic clock by one offset taken in
// this process (both sides read the same system clock; error well under 1 ms).
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { table, stats, fmt, requireFromTests } from '../lib.mjs';
import { startXvfb, startDeskd, startFixture, sleep, waitUntil } from '../../tests/integration/lib/harness.mjs';

const N = Number(process.env.BENCH_PEOPLE_N || 40);
const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

export default async function () {
  if (!existsSync(CHROMIUM)) {
    console.log(`\n## dashboard latency: skipped (no Chromium at ${CHROMIUM}; set CHROMIUM_BIN)`);
    return;
  }
  const { chromium } = requireFromTests('playwright-core');   // CommonJS
  const x = await startXvfb({ width: 1280, height: 800 });
  const procs = [x];
  let browser = null;
  try {
    const fixture = await startFixture(x.display, { geometry: '1280x800+0+0', pattern: 'solid:202020', paintClicks: true });
    procs.push(fixture);
    const deskd = await startDeskd({ display: x.display, args: ['--log-level', 'trace'] });
    procs.push(deskd);
    const presses = [], sent = new Map();	// deskd's stamps (ms, CLOCK_MONOTONIC)
    let partial = '';
    deskd.proc.stderr.on('data', (chunk) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop();
      for (const l of lines) {
        let m = /hands: button 1 down: received ([\d.]+) taken ([\d.]+) locked ([\d.]+) sent ([\d.]+)/.exec(l);
        if (m) presses.push(m.slice(1).map(Number));
        m = /live: frame (\d+) to viewer \d+: woke ([\d.]+) captured ([\d.]+) encoded ([\d.]+) published ([\d.]+) header ([\d.]+) jpeg ([\d.]+)/.exec(l);
        if (m) sent.set(Number(m[1]), m.slice(2).map(Number));
      }
    });
    browser = await chromium.launch({ executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'] });
    const page = await (await browser.newContext({ viewport: { width: 1800, height: 1100 } })).newPage();
    // When each frame's JPEG arrived in the page (a listener added before
    // the page's own, by seq of the header before it).
    await page.addInitScript(() => {
      const Ws = window.WebSocket;
      window.__arrived = new Map();
      let seq = 0;
      window.WebSocket = class extends Ws {
        constructor(...a) {
          super(...a);
          this.addEventListener('message', (e) => {
            if (typeof e.data === 'string') {
              if (e.data.startsWith('{"type":"frame"')) seq = JSON.parse(e.data).seq;
            } else if (seq) window.__arrived.set(seq, performance.timeOrigin + performance.now());
          });
        }
      };
    });
    await page.goto(`${deskd.url}/#token=${encodeURIComponent(deskd.personToken)}`);
    await page.waitForFunction(() => document.querySelector('#conn').dataset.state === 'live');
    // Native frames at 30 fps, drawn 1:1 (a page pixel is a desktop pixel).
    await page.selectOption('#fps', '30');
    await page.selectOption('#size', '0');
    await page.click('#view-actual');
    await page.waitForFunction(() => document.getElementById('screen').width === 1280);
    await page.click('#ctl-take');
    await page.waitForFunction(() => document.body.dataset.control === 'you');
    // The page's own stamps: each pointerdown (its input event's time) and
    // each frame drawn (the canvas's data-seq is set right after drawImage).
    await page.evaluate(() => {
      const wall = (t) => performance.timeOrigin + t;
      window.__bench = { downs: [], frames: [] };
      addEventListener('pointerdown', (e) => window.__bench.downs.push(wall(e.timeStamp)), true);
      const screen = document.getElementById('screen');
      new MutationObserver(() => {
        const f = { drawn: wall(performance.now()), shown: 0, seq: Number(screen.dataset.seq) };
        f.arrived = window.__arrived.get(f.seq) || 0;
        window.__bench.frames.push(f);
        requestAnimationFrame(() => { f.shown = wall(performance.now()); });
      }).observe(screen, { attributes: true, attributeFilter: ['data-seq'] });
    });
    const wallToMono = nowMs() - (performance.timeOrigin + performance.now());
    const bench = () => page.evaluate(() => window.__bench);
    const r = await page.evaluate(() => { const b = document.getElementById('screen').getBoundingClientRect(); return { x: b.x, y: b.y }; });

    const toEvent = [], toDrawn = [], toShown = [];
    const clicks = [], frames = [];	// [down, press] and [press, frame] for the breakdown
    for (let i = 0; i < N; i++) {
      // Quiet first: no frame for 150 ms, so the next one is the click's.
      for (let quiet = 0, last = -1; quiet < 150;) {
        const n = (await bench()).frames.length;
        if (n !== last) { last = n; quiet = 0; } else quiet += 15;
        await sleep(15);
      }
      const before = await bench();
      const presses = fixture.state().events.filter((e) => e.type === 'button_press').length;
      const px = 100 + (i % 20) * 50, py = 100 + Math.floor(i / 20) * 50;
      await page.mouse.click(r.x + px + 0.5, r.y + py + 0.5);
      const st = await waitUntil(() => {
        const s = fixture.state();
        return s.events.filter((e) => e.type === 'button_press').length > presses && s;
      }, { timeout: 5000, interval: 5, what: 'the click in the fixture' });
      const press = st.events.filter((e) => e.type === 'button_press')[presses];
      if (press.root_x !== px || press.root_y !== py) throw new Error(`click at ${press.root_x},${press.root_y}, aimed at ${px},${py}`);
      const after = await waitUntil(async () => {
        const b = await bench();
        const f = b.frames[before.frames.length];
        return f && f.shown && b;
      }, { timeout: 5000, interval: 5, what: 'the frame in the page' });
      const down = after.downs[before.downs.length];
      const f = after.frames[before.frames.length];
      toEvent.push(press.t_ms - (down + wallToMono));
      toDrawn.push(f.drawn + wallToMono - press.t_ms);
      toShown.push(f.shown + wallToMono - press.t_ms);
      clicks.push([down + wallToMono, press.t_ms]);
      frames.push([press.t_ms, f]);
    }
    await page.click('#ctl-release');

    const rows = [['click in the page (input event) -> ButtonPress read by the app', toEvent],
      ['X change (the app paints at the press) -> next frame drawn in the page', toDrawn],
      ['X change -> the animation frame after that draw', toShown]].map(([what, v]) => {
      const s = stats(v.sort((p, q) => p - q));
      return [what, String(s.n), fmt(s.p50), fmt(s.p95)];
    });
    table('dashboard latency as the person sees it (headless Chromium, 1280x800 native frames at 30 fps)',
      ['path', 'n', 'p50 ms', 'p95 ms'], rows);

    // The same paths step by step: deskd's stamps between the page's and the app's.
    await sleep(200);	// the last trace lines
    const steps = [];
    const step = (what, v) => {
      const s = stats(v.filter((d) => Number.isFinite(d)).sort((p, q) => p - q));
      if (s.n) steps.push([what, String(s.n), fmt(s.p50), fmt(s.p95)]);
    };
    if (presses.length === clicks.length) {
      const d = (f) => clicks.map(([down, press], i) => f(down, press, presses[i]));
      step('click: page input event -> deskd read the message (browser, WebSocket)', d((down, _, p) => p[0] - down));
      step('click: deskd read it -> hands thread took it (queue)', d((_, __, p) => p[1] - p[0]));
      step('click: hands thread took it -> desktop lock', d((_, __, p) => p[2] - p[1]));
      step('click: desktop lock -> XTest press synced, pointer settled (X round trips)', d((_, __, p) => p[3] - p[2]));
      step('click: pointer settled -> ButtonPress read by the app (X server, app; < 0: before)', d((_, press, p) => press - p[3]));
    }
    const fr = frames.map(([press, f]) => [press, f, sent.get(f.seq)]).filter(([, , t]) => t);
    const df = (g) => fr.map(([press, f, t]) => g(press, f, t));
    step('frame: X change -> deskd saw the damage (X server, wake-up)', df((press, _, t) => t[0] - press));
    step('frame: damage seen -> pixels read (pacing, capture)', df((_, __, t) => t[1] - t[0]));
    step('frame: pixels read -> JPEG encoded', df((_, __, t) => t[2] - t[1]));
    step('frame: encoded -> published to the service thread', df((_, __, t) => t[3] - t[2]));
    step('frame: published -> header written (service thread wake-up)', df((_, __, t) => t[4] - t[3]));
    step('frame: header written -> JPEG written', df((_, __, t) => t[5] - t[4]));
    step('frame: JPEG written -> arrived in the page (WebSocket, browser)', df((_, f, t) => (f.arrived ? f.arrived + wallToMono : NaN) - t[5]));
    step('frame: arrived -> drawn in the canvas (decode, draw)', df((_, f) => f.arrived ? f.drawn - f.arrived : NaN));
    step('frame: X change -> JPEG written (deskd and X)', df((press, _, t) => t[5] - press));
    if (steps.length) table('dashboard latency step by step (deskd --log-level trace stamps)', ['step', 'n', 'p50 ms', 'p95 ms'], steps);
  } finally {
    if (browser) await browser.close().catch(() => {});
    for (const p of procs.reverse()) await p.stop();
  }
}
