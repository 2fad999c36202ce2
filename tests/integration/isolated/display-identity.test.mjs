// Losing an external display, and another X server taking its number. Runs
// in private mount, network and pid namespaces (scripts/run-integration
// starts this folder under scripts/isolate), so the freed display number can
// only be taken by the X server this test starts: deskd once typed into a
// foreign display that way (docs/RELIABILITY, D8).
//
// Two deskds watch the same Xvfb: A with the default rule (only the same X
// server), B with --display-reattach. After the Xvfb is killed and a new one
// takes the number, A stays display_unavailable and says why; B attaches to
// the new server, its first click works (D9) and its live viewer gets frames
// again without sending watch (D12).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { readFileSync } from 'node:fs';
import { startXvfb, startDeskd, startFixture, launch, waitUntil } from '../lib/harness.mjs';
import { openLive } from '../lib/live.mjs';

const isolated = process.env.DESKD_TEST_ISOLATED === '1';
const healthz = async (d) => (await fetch(d.url + '/healthz')).status;

test('a freed display number taken by another X server: refused by default, taken with --display-reattach', {
  skip: !isolated && 'needs the private namespaces of scripts/isolate (make integration runs it so)',
}, async (t) => {
  // Nothing but this test may serve X here: the namespace is private.
  assert.match(readFileSync('/proc/self/mountinfo', 'utf8'), / \/tmp .*tmpfs/, 'a private /tmp');
  const x = await startXvfb({ width: 800, height: 600 });
  const a = await startDeskd({ display: x.display });
  const b = await startDeskd({ display: x.display, args: ['--display-reattach'] });
  let x2 = null, fx = null, live = null;
  t.after(async () => {
    live?.close();
    await a.stop().catch(() => {});
    await b.stop().catch(() => {});
    if (fx) await fx.stop().catch(() => {});
    if (x2) await x2.stop().catch(() => {});
    await x.stop().catch(() => {});
  });
  assert.equal(await healthz(a), 200);
  assert.equal(await healthz(b), 200);
  // B's input context exists before the loss (the first use after it failed, D9).
  assert.equal((await b.tool('computer_use', { actions: [{ type: 'move', x: 5, y: 5 }] })).status, 200);
  live = await openLive(b);
  live.watch({ target: 'screen', fps: 10 });
  await live.until((c) => c.frames.length >= 1, { timeout: 5000 });

  // Kill it, with a call in flight, and hold the number until both deskds
  // noticed. The call in flight says the display is gone (D10).
  const inflight = a.tool('wait_for_change', { timeout_ms: 4000 });
  await new Promise((r) => setTimeout(r, 200));
  await x.stop('SIGKILL');
  const hold = createServer((c) => c.destroy());
  await new Promise((res, rej) => { hold.once('error', rej); hold.listen('\0/tmp/.X11-unix/X' + x.display.slice(1), res); });
  await waitUntil(async () => (await healthz(a)) === 503 && (await healthz(b)) === 503, { timeout: 5000, what: '503 from both' });
  const gone = await inflight;
  assert.equal(gone.status, 503, JSON.stringify(gone.body));
  assert.equal(gone.body.error.code, 'display_unavailable');
  await live.until((c) => c.errors.some((e) => e.code === 'display_unavailable'), { timeout: 5000 });
  const framesBefore = live.frames.length;

  // Another X server takes the number (another size, so it is told apart).
  await new Promise((res) => hold.close(res));
  x2 = launch('Xvfb (taker)', 'Xvfb', [x.display, '-screen', '0', '1024x768x24', '-nolisten', 'tcp', '-noreset']);
  x2.display = x.display;
  await waitUntil(async () => (await healthz(b)) === 200, { timeout: 8000, what: 'B attached to the new server' });
  fx = await startFixture(x.display, { geometry: '300x200+0+0' });

  // A: stays unavailable, and every surface says why.
  await new Promise((r) => setTimeout(r, 1500));	// several watcher retries
  assert.equal(await healthz(a), 503);
  const st = (await a.tool('status')).body.structuredContent;
  assert.equal(st.display.available, false);
  assert.match(st.display.unavailable_reason, /not the one deskd attached to.*--display-reattach/);
  const click = await a.tool('computer_use', { actions: [{ type: 'click', x: 10, y: 10 }] });
  assert.equal(click.status, 503);
  assert.equal(click.body.error.code, 'display_unavailable');
  assert.match(click.body.error.message, /restarted or replaced/);
  const doc = (await a.tool('doctor')).body.structuredContent;
  assert.match(doc.checks.find((c) => c.name === 'display').detail, /not the one deskd attached to/);
  assert.deepEqual(fx.state().events.filter((e) => e.type === 'button_press'), [], 'A never clicked');

  // B: the first click after the reconnect lands (D9).
  const r = await b.tool('computer_use', { actions: [{ type: 'click', x: 50, y: 40, coordinate_space: 'desktop' }] });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const s = await fx.waitFor((st2) => st2.events.some((e) => e.type === 'button_press'), { timeout: 3000 });
  const press = s.events.find((e) => e.type === 'button_press');
  assert.deepEqual([press.root_x, press.root_y], [50, 40]);
  const bs = (await b.tool('status')).body.structuredContent;
  assert.deepEqual([bs.display.available, bs.display.width, bs.display.height], [true, 1024, 768]);

  // B's viewer gets frames again by itself, at the new size (D12).
  await live.until((c) => c.frames.length > framesBefore, { timeout: 8000 });
  assert.equal(live.frames.at(-1).header.width, 1024);
});
