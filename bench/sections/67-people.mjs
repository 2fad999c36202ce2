// Latency as the person sees it: through the dashboard in headless Chromium
// (playwright-core from tests/node_modules). A click on the live picture,
// from the browser's input event to the ButtonPress as the fixture app reads
// it, and that X change (the fixture paints a square at each press) to the
// next frame drawn in the page's canvas, and to the animation frame after
// it (when the browser can put it on screen).
//
// Clocks: the fixture stamps events with CLOCK_MONOTONIC (process.hrtime's
// clock); the page stamps with its wall clock (performance.timeOrigin +
// performance.now()), mapped to the monotonic clock by one offset taken in
// this process (both sides read the same system clock; error well under 1 ms).
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { table, stats, fmt } from '../lib.mjs';
import { startXvfb, startDeskd, startFixture, sleep, waitUntil, ROOT } from '../../tests/integration/lib/harness.mjs';

const N = Number(process.env.BENCH_PEOPLE_N || 40);
const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

export default async function () {
  if (!existsSync(CHROMIUM)) {
    console.log(`\n## dashboard latency: skipped (no Chromium at ${CHROMIUM}; set CHROMIUM_BIN)`);
    return;
  }
  const fromTests = createRequire(join(ROOT, 'tests', 'package.json'));
  const { chromium } = fromTests('playwright-core');   // CommonJS
  const x = await startXvfb({ width: 1280, height: 800 });
  const procs = [x];
  let browser = null;
  try {
    const fixture = await startFixture(x.display, { geometry: '1280x800+0+0', pattern: 'solid:202020', paintClicks: true });
    procs.push(fixture);
    const deskd = await startDeskd({ display: x.display, args: ['--log-level', 'info'] });
    procs.push(deskd);
    browser = await chromium.launch({ executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'] });
    const page = await (await browser.newContext({ viewport: { width: 1800, height: 1100 } })).newPage();
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
        const f = { drawn: wall(performance.now()), shown: 0 };
        window.__bench.frames.push(f);
        requestAnimationFrame(() => { f.shown = wall(performance.now()); });
      }).observe(screen, { attributes: true, attributeFilter: ['data-seq'] });
    });
    const wallToMono = nowMs() - (performance.timeOrigin + performance.now());
    const bench = () => page.evaluate(() => window.__bench);
    const r = await page.evaluate(() => { const b = document.getElementById('screen').getBoundingClientRect(); return { x: b.x, y: b.y }; });

    const toEvent = [], toDrawn = [], toShown = [];
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
  } finally {
    if (browser) await browser.close().catch(() => {});
    for (const p of procs.reverse()) await p.stop();
  }
}
