// A stopped (hung) X server: deskd notices within a bound, says so on every
// surface at once, never queues work behind it, goes on when it answers
// again, and stops within 3 s even while it is stopped (docs/RELIABILITY, D4).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { startXvfb, startDeskd, startFixture, run, waitUntil, SLOW } from './lib/harness.mjs';

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

// Calls already in flight when the X server stops (R5): each X round trip
// has a bound, so they answer display_unavailable within ~3 s of the stop
// instead of hanging for the whole stop; and a click that could not be
// delivered while the server was stopped is dropped, never replayed when it
// goes on (its client gave up at 3 s).
test('calls in flight at SIGSTOP answer display_unavailable within ~3 s; an undelivered click never lands later', async (t) => {
  const x = await startXvfb();
  const fixture = await startFixture(x.display, { geometry: '200x150+0+0' });
  const d = await startDeskd({ display: x.display });
  let stopped = false;
  const cont = () => { if (stopped) { stopped = false; process.kill(x.proc.pid, 'SIGCONT'); } };
  t.after(async () => {
    cont();
    await d.stop().catch(() => {});
    await fixture.stop().catch(() => {});
    await x.stop().catch(() => {});
  });
  const pointer = () => {
    const r = run('xdotool', ['getmouselocation', '--shell'], { env: { ...process.env, DISPLAY: x.display }, encoding: 'utf8', timeout: 5000 });
    const m = /X=(\d+)\s+Y=(\d+)/.exec(r.stdout);
    assert.ok(m, `xdotool getmouselocation: ${r.stdout} ${r.stderr}`);
    return [Number(m[1]), Number(m[2])];
  };
  // Warm: the capture pool and the input context exist; the pointer is away.
  assert.equal((await d.tool('screenshot', {})).status, 200);
  assert.equal((await d.tool('windows', {})).status, 200);
  assert.equal((await d.tool('computer_use', { actions: [{ type: 'move', x: 10, y: 10 }] })).status, 200);
  assert.deepEqual(pointer(), [10, 10]);

  // What a call answered and when (ms after the stop), or that its client gave up.
  const inflight = (name, args, clientMs) => {
    const t1 = performance.now();
    return d.fetch(`/api/v1/tools/${name}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(args),
      signal: AbortSignal.timeout(clientMs),
    }).then(async (r) => {
      const text = await r.text();
      let body; try { body = JSON.parse(text); } catch { body = text; }
      return { name, status: r.status, body, ms: performance.now() - t0, took: performance.now() - t1 };
    }, (e) => ({ name, error: e.name, ms: performance.now() - t0 }));
  };

  process.kill(x.proc.pid, 'SIGSTOP');
  stopped = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, 100));
  // A size never asked before: no cached frame to answer from.
  const calls = [
    inflight('screenshot', { max_dimension: 517 }, 40000),
    inflight('windows', {}, 40000),
    inflight('doctor', {}, 40000),
    inflight('computer_use', { actions: [{ type: 'click', x: 333, y: 222 }] }, 3000),
  ];
  assert.ok(performance.now() - t0 < 200, 'the calls went out within 0.2 s of the stop');
  // Give them 6 s of the stop, then let the server go on whatever happened.
  await Promise.race([Promise.all(calls), new Promise((r) => setTimeout(r, 6000))]);
  cont();
  const [shot, wins, doctor, click] = await Promise.all(calls);
  for (const r of [shot, wins, doctor, click])
    t.diagnostic(`${r.name} in flight: ${r.error || r.status} ${r.body?.error?.code || ''} after ${Math.round(r.ms)} ms of the stop`);

  // The server went on 1 s ago: where is the pointer?
  await new Promise((r) => setTimeout(r, 1000));
  const after = pointer();
  t.diagnostic(`pointer 1 s after SIGCONT: ${after}`);

  for (const r of [shot, wins, click]) {
    const what = `${r.name}: ${r.error || `${r.status} ${r.body?.error?.code ?? ''}`} after ${Math.round(r.ms)} ms`;
    assert.equal(r.status, 503, what);
    assert.equal(r.body.error.code, 'display_unavailable', what);
    assert.ok(r.ms < 4000 * SLOW, what);
  }
  assert.equal(doctor.status, 200, `doctor: ${doctor.error || doctor.status}`);
  assert.equal(doctor.body.structuredContent.checks.find((c) => c.name === 'display').ok, false);
  assert.ok(doctor.ms < 4000 * SLOW, `doctor answered ${Math.round(doctor.ms)} ms after the stop`);
  // The click is not replayed, and deskd works again.
  assert.notDeepEqual(after, [333, 222], 'the undelivered click landed after SIGCONT');
  assert.deepEqual(fixture.state().events.filter((e) => e.type === 'button_press'), [], 'no late click');
  await waitUntil(async () => (await healthz(d)) === 200, { timeout: 3000 * SLOW, interval: 50, what: '/healthz 200 again' });
  assert.equal((await d.tool('screenshot', { max_dimension: 517 })).status, 200);
  assert.equal((await d.tool('windows', {})).status, 200);
  const ok = await d.tool('computer_use', { actions: [{ type: 'click', x: 20, y: 20 }] });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  await fixture.waitFor((s) => s.events.some((e) => e.type === 'button_press'), { timeout: 3000 });
  assert.deepEqual(pointer(), [20, 20]);
});
