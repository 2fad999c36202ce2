// A stopped (hung) X server: deskd notices within a bound, says so on every
// surface at once, never queues work behind it, goes on when it answers
// again, and stops within 3 s even while it is stopped (docs/RELIABILITY, D4).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { startXvfb, startDeskd, startFixture, waitUntil, SLOW } from './lib/harness.mjs';

const healthz = async (d) => (await fetch(d.url + '/healthz')).status;

async function timed(fn) {
  const t0 = performance.now();
  const r = await fn();
  return [r, performance.now() - t0];
}

test('SIGSTOP of the X server: 503 within 3 s, calls refused at once, back on SIGCONT; SIGTERM bounded', async (t) => {
  const x = await startXvfb();
  const fixture = await startFixture(x.display, { geometry: '200x150+0+0' });
  const d = await startDeskd({ display: x.display });
  let stopped = false;
  t.after(async () => {
    if (stopped) process.kill(x.proc.pid, 'SIGCONT');
    await d.stop().catch(() => {});
    await fixture.stop().catch(() => {});
    await x.stop().catch(() => {});
  });
  assert.equal((await d.tool('screenshot', {})).status, 200);

  process.kill(x.proc.pid, 'SIGSTOP');
  stopped = true;
  const t0 = performance.now();
  await waitUntil(async () => (await healthz(d)) === 503, { timeout: 4000 * SLOW, interval: 100, what: '/healthz 503' });
  const noticed = performance.now() - t0;
  assert.ok(noticed < 3500 * SLOW, `noticed after ${noticed} ms`);
  t.diagnostic(`hang noticed after ${Math.round(noticed)} ms`);

  // Every surface answers at once and says why; nothing waits for X.
  const [shot, shotMs] = await timed(() => d.tool('screenshot', {}));
  assert.equal(shot.status, 503);
  assert.equal(shot.body.error.code, 'display_unavailable');
  assert.match(shot.body.error.message, /has not answered/);
  assert.ok(shotMs < 500 * SLOW, `screenshot answered in ${shotMs} ms`);
  const [click, clickMs] = await timed(() => d.tool('computer_use', { actions: [{ type: 'click', x: 10, y: 10 }] }));
  assert.equal(click.status, 503);
  assert.ok(clickMs < 500 * SLOW, `click refused in ${clickMs} ms`);
  const [status, statusMs] = await timed(() => d.tool('status'));
  assert.equal(status.status, 200);
  assert.equal(status.body.structuredContent.display.available, false);
  assert.match(status.body.structuredContent.display.unavailable_reason, /has not answered/);
  assert.ok(statusMs < 500 * SLOW, `status answered in ${statusMs} ms`);
  const [doctor, doctorMs] = await timed(() => d.tool('doctor'));
  assert.equal(doctor.status, 200);
  assert.equal(doctor.body.structuredContent.checks.find((c) => c.name === 'display').ok, false);
  assert.ok(doctorMs < 1000 * SLOW, `doctor answered in ${doctorMs} ms`);

  // The click refused while X was stopped never happens later.
  process.kill(x.proc.pid, 'SIGCONT');
  stopped = false;
  await waitUntil(async () => (await healthz(d)) === 200, { timeout: 3000 * SLOW, interval: 50, what: '/healthz 200 again' });
  assert.equal((await d.tool('screenshot', {})).status, 200);
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(fixture.state().events.filter((e) => e.type === 'button_press'), [], 'no late click');
  const ok = await d.tool('computer_use', { actions: [{ type: 'click', x: 20, y: 20 }] });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  await fixture.waitFor((s) => s.events.some((e) => e.type === 'button_press'), { timeout: 3000 });

  // SIGTERM while the X server is stopped: out within 3 s, cleanly.
  assert.equal((await d.tool('screenshot', {})).status, 200);
  process.kill(x.proc.pid, 'SIGSTOP');
  stopped = true;
  await waitUntil(async () => (await healthz(d)) === 503, { timeout: 4000 * SLOW, interval: 100, what: '/healthz 503' });
  const [r, stopMs] = await timed(() => d.stop());
  assert.deepEqual(r, { code: 0, signal: null });
  assert.ok(stopMs < 3000 * SLOW, `SIGTERM took ${stopMs} ms`);
  t.diagnostic(`SIGTERM with the X server stopped: exit 0 after ${Math.round(stopMs)} ms`);
});
