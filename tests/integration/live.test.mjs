// The live view (/live): hello, frames only on change, one capture and one
// encode per frame for any number of viewers, bounded memory with a client
// that never reads, auth (token, view token, Origin), activity events.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { desktop, startXvfb, startDeskd, startFixture, sleep, waitUntil } from './lib/harness.mjs';
import { openLive, jpegSize, metrics, procStats } from './lib/live.mjs';

test('hello, then a frame of the watched window; frames only when it changes', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '400x300+100+80' } });
  const { deskd, fixture } = env;
  const c = await openLive(deskd);
  t.after(() => c.close());
  assert.equal(c.ws.protocol, 'deskd.live', 'the server answers the deskd.live subprotocol');
  await c.until((x) => x.hello);
  assert.equal(c.texts[0].type, 'hello', 'hello is the first message');
  assert.deepEqual(c.hello.screen, { width: 1280, height: 800 });
  assert.equal(c.hello.role, 'person');
  const w = c.hello.windows.find((x) => x.id === fixture.window);
  assert.ok(w, `the fixture window ${fixture.window} is in the hello's list`);
  assert.equal(w.width, 400);

  c.watch({ target: 'window', window: fixture.window, fps: 30 });
  await c.until((x) => x.frames.length >= 1, { timeout: 5000 });
  const f = c.frames[0];
  assert.equal(f.header.target, 'window');
  assert.equal(f.header.window, fixture.window);
  assert.equal(f.header.format, 'jpeg');
  assert.deepEqual([f.header.width, f.header.height], [400, 300]);
  assert.deepEqual(jpegSize(f.jpeg), { width: 400, height: 300 }, 'the binary message is the JPEG the header describes');

  // Nothing changes: no frames for a while.
  await sleep(300);
  const before = c.frames.length;
  await sleep(1200);
  assert.equal(c.frames.length, before, 'no frames while the window is still');

  // The screen: one frame at once, then only on change.
  c.watch({ target: 'screen', fps: 30 });
  await c.until((x) => x.frames.some((fr) => fr.header.target === 'screen'), { timeout: 5000 });
  await sleep(300);
  const still = c.frames.length;
  await sleep(1200);
  assert.equal(c.frames.length, still, 'no frames while the screen is still');
  const other = await startFixture(env.display, { title: 'change', geometry: '120x90+700+500', pattern: 'solid:ff0000' });
  t.after(() => other.stop());
  await c.until((x) => x.frames.length > still, { timeout: 3000, what: 'a frame after the screen changed' });
  const last = c.frames.at(-1);
  assert.deepEqual(jpegSize(last.jpeg), { width: 1280, height: 800 });
  assert.ok(last.header.seq > c.frames[still - 1].header.seq, 'seq grows');
  assert.deepEqual(c.errors, []);
});

test('20 viewers of one target cost one capture and one encode per frame', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '320x240+50+50', animate: 15 } });
  const { deskd } = env;
  const viewers = await Promise.all(Array.from({ length: 20 }, () => openLive(deskd, { token: deskd.token })));
  t.after(() => viewers.forEach((v) => v.close()));
  for (const v of viewers) v.keepJpegs = false;
  await Promise.all(viewers.map((v) => v.until((x) => x.hello)));
  const m0 = await metrics(deskd);
  for (const v of viewers) v.watch({ target: 'window', window: env.fixture.window, fps: 10 });
  await sleep(2500);
  await env.fixture.stop();   // the window goes away: the feed stops producing
  await sleep(700);
  const m1 = await metrics(deskd);
  const d = (k) => (m1[k] || 0) - (m0[k] || 0);

  const seqs = new Set();
  let received = 0;
  for (const v of viewers) {
    assert.ok(v.frames.length >= 5, `each viewer got frames (${v.frames.length})`);
    for (const f of v.frames) seqs.add(f.header.seq);
    received += v.frames.length;
  }
  const encodes = d('deskd_live_encodes_total');
  const captures = d('deskd_live_captures_total');
  assert.ok(encodes > 0);
  assert.ok(captures >= encodes && captures <= encodes + 1, `one capture per encode (${captures} captures, ${encodes} encodes; the last capture may find the window gone)`);
  // Every frame any viewer saw was encoded once; the producer encoded no
  // frame per viewer: encodes equals the number of distinct frames (the last
  // one may not have reached anyone before the window vanished).
  assert.ok(encodes >= seqs.size && encodes <= seqs.size + 1,
    `encodes ${encodes} vs ${seqs.size} distinct frames seen by 20 viewers`);
  assert.equal(d('deskd_live_frames_sent_total'), received, 'frames sent = frames received');
  assert.ok(encodes <= 10 * 3.5 + 2, `at most fps frames a second (${encodes} in ~3 s)`);
  assert.ok(viewers.every((v) => v.errors.every((e) => e.code === 'window_not_found')));
});

test('a viewer that never reads neither grows memory nor slows the others', async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const fixture = await startFixture(x.display, { geometry: '1280x800+0+0', animate: 30 });
  t.after(() => fixture.stop());
  // A small ASan quarantine, so RSS reflects live memory in sanitized builds.
  const asan = (process.env.ASAN_OPTIONS ? process.env.ASAN_OPTIONS + ':' : '') + 'quarantine_size_mb=4';
  const deskd = await startDeskd({ display: x.display, env: { ASAN_OPTIONS: asan } });
  t.after(() => deskd.stop());

  const stuck = await openLive(deskd);
  t.after(() => stuck.close());
  stuck.keepJpegs = false;
  stuck.watch({ target: 'screen', fps: 30, max_dimension: 0 });
  await stuck.until((c) => c.frames.length >= 1, { timeout: 5000 });
  stuck.ws._socket.pause();   // stops reading: the kernel buffers fill up

  const good = await openLive(deskd);
  t.after(() => good.close());
  good.keepJpegs = false;
  good.watch({ target: 'screen', fps: 30, max_dimension: 0 });
  await good.until((c) => c.frames.length >= 3, { timeout: 5000 });

  await sleep(1500);   // let the stuck client's buffers fill
  const s0 = procStats(deskd.proc.pid);
  const m0 = await metrics(deskd);
  const n0 = good.frames.length;
  const t0 = Date.now();
  await sleep(3000);
  const s1 = procStats(deskd.proc.pid);
  const m1 = await metrics(deskd);
  const got = good.frames.length - n0;
  const encoded = m1.deskd_live_encodes_total - m0.deskd_live_encodes_total;
  const fps = (got * 1000) / (Date.now() - t0);
  const frameSize = good.bytes / good.binaries;
  t.diagnostic(`good viewer ${fps.toFixed(1)} fps (${got} of ${encoded} frames encoded meanwhile); deskd RSS ${s0.rss} -> ${s1.rss} KiB; frame ${Math.round(frameSize / 1024)} KiB; stuck got ${stuck.frames.length}`);
  assert.ok(s1.rss - s0.rss < 16 * 1024, `deskd RSS grew by ${s1.rss - s0.rss} KiB in 3 s with a client that never reads`);
  // Not slowed: the reading viewer gets (nearly) every frame the feed made,
  // however fast this machine produces them.
  assert.ok(encoded >= 3, `the screen kept changing (${encoded} frames)`);
  assert.ok(got >= encoded * 0.8 - 1, `the reading viewer got ${got} of ${encoded} frames`);
  assert.ok(stuck.frames.length < good.frames.length / 2, 'the stuck viewer was not sent everything');
  assert.ok(m1.deskd_live_viewers === 2 && m1.deskd_live_feeds === 1, 'both viewers share one feed');

});

test('tokens and origins: view token allowed, bad token and foreign Origin refused', async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--view-token', 'view-secret-1'] });
  const full = await openLive(deskd, { via: 'query' });
  t.after(() => full.close());
  await full.until((c) => c.hello);
  assert.equal(full.hello.role, 'person');

  const view = await openLive(deskd, { token: 'view-secret-1' });
  t.after(() => view.close());
  await view.until((c) => c.hello);
  assert.equal(view.hello.role, 'view', 'the view token may watch');

  const own = await openLive(deskd, { origin: deskd.url });
  t.after(() => own.close());
  await own.until((c) => c.hello);

  await assert.rejects(openLive(deskd, { token: 'wrong' }), (e) => e.status === 401);
  await assert.rejects(openLive(deskd, { token: null }), (e) => e.status === 401);
  await assert.rejects(openLive(deskd, { via: 'query', token: 'wrong' }), (e) => e.status === 401);
  await assert.rejects(openLive(deskd, { origin: 'http://evil.example' }), (e) => e.status === 403);

  // Bad messages get an error, never a crash; a huge one closes the socket.
  full.ws.send('not json');
  full.watch({ target: 'window', window: 'nope' });
  full.watch({ target: 'screen', fps: 1000 });
  await full.until((c) => c.errors.length >= 3);
  assert.deepEqual(full.errors.map((e) => e.code), ['bad_message', 'bad_arguments', 'bad_arguments']);
  full.watch({ target: 'window', window: 0x7ffffff0 });
  await full.until((c) => c.errors.some((e) => e.code === 'window_not_found'));
  const closed = new Promise((res) => full.ws.once('close', (code) => res(code)));
  full.ws.send('x'.repeat(100000));
  assert.equal(await closed, 1009, 'an oversized message closes with 1009');
  const r = await fetch(deskd.url + '/healthz');
  assert.equal(r.status, 200, 'deskd is still up');
});

test('activity events reach viewers, with the recent history on connect', async (t) => {
  const { deskd } = await desktop(t);
  const before = await deskd.tool('windows', {});
  assert.equal(before.status, 200);
  const c = await openLive(deskd);
  t.after(() => c.close());
  await c.until((x) => x.events.some((e) => e.tool === 'windows' && e.status === 'ok'), { what: 'replayed events' });
  assert.equal(c.texts[0].type, 'hello', 'the history comes after the hello');
  const t0 = Date.now();
  await deskd.tool('windows', { app: 'nothing-like-this' });
  await c.until((x) => x.events.filter((e) => e.tool === 'windows' && e.status === 'ok').length >= 2, { timeout: 2000 });
  assert.ok(Date.now() - t0 < 1000, 'a live event arrives within a second');
  const started = c.events.filter((e) => e.tool === 'windows' && e.status === 'started');
  assert.equal(started.length, 2);
  assert.deepEqual(started[1].args, { app: 'nothing-like-this' });
  const ids = new Set(c.events.map((e) => e.id + e.status));
  assert.equal(ids.size, c.events.length, 'no event twice');
});

test('heartbeat: the server pings every 10 s with a payload, so pongs keep viewers alive', async (t) => {
  const { deskd } = await desktop(t);
  const c = await openLive(deskd);
  t.after(() => c.close());
  // lws 4.1 reports no pong for an empty ping; the viewer would then be
  // dropped as dead after 40 s although it answers every ping.
  const data = await new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error('no ping within 12 s')), 12000);
    c.ws.once('ping', (d) => { clearTimeout(timer); res(d); });
  });
  assert.ok(data.length > 0, 'the ping carries a payload');
  assert.equal(c.ws.readyState, 1);
});

test('roles: the agent\'s token watches /live but never controls; it cannot approve its own call, the person can', async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--approve', 'all', '--approve-timeout', '20', '--tools', 'both'] });
  const open = async (token) => {
    const c = await openLive(deskd, { token });
    t.after(() => c.close());
    c.send = (m) => c.ws.send(JSON.stringify(m));
    c.state = () => [...c.texts].reverse().find((m) => m.type === 'control');
    await c.until((x) => x.hello && x.state());
    return c;
  };
  const agent = await open(deskd.token);
  assert.equal(agent.hello.role, 'agent');
  assert.equal(agent.state().can_control, false);
  agent.watch({ target: 'screen', fps: 5 });
  await agent.until((x) => x.frames.length >= 1, { timeout: 5000 });

  // An acting call waits for a person's approval.
  const before = (await deskd.tool('computer_cursor_position', {})).body.structuredContent;
  const call = deskd.tool('computer_use', { actions: [{ type: 'move', x: 123, y: 77 }] });
  await agent.until((x) => x.state().approvals?.length === 1, { timeout: 5000 });
  const id = agent.state().approvals[0].id;

  const only = ['take', 'release', 'pause', 'resume', 'approve', 'deny', 'help_dismiss', 'move', 'key', 'text'];
  const msgs = { take: { force: true }, approve: { id }, deny: { id }, help_dismiss: { id: 1 }, move: { x: 10, y: 10 }, key: { key: 'a', down: true }, text: { text: 'x' } };
  // One at a time: the socket's error replies are rate limited.
  for (const type of only) {
    agent.send({ type, ...(msgs[type] || {}) });
    await agent.until((x) => x.errors.some((e) => e.for === type), { timeout: 5000 });
  }
  for (const type of only) {
    const e = agent.errors.find((x) => x.for === type);
    assert.equal(e.code, 'forbidden', `${type}: ${JSON.stringify(e)}`);
  }
  assert.match(agent.errors.find((x) => x.for === 'approve').message, /person/);
  await sleep(300);
  const st = agent.state();
  assert.equal(st.holder, 'none', 'the agent took nothing');
  assert.equal(st.paused, false, 'nor paused');
  assert.equal(st.approvals.length, 1, 'its call still waits for a person');
  const midr = await deskd.tool('computer_cursor_position', {});
  assert.equal(midr.status, 200, JSON.stringify(midr.body));
  const mid = midr.body.structuredContent;
  assert.deepEqual([mid.x, mid.y], [before.x, before.y], 'nothing moved');

  // The person's token approves: the call runs.
  const person = await open(deskd.personToken);
  assert.equal(person.hello.role, 'person');
  assert.equal(person.state().can_control, true);
  person.send({ type: 'approve', id });
  const r = await call;
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const after = (await deskd.tool('computer_cursor_position', {})).body.structuredContent;
  assert.deepEqual([after.x, after.y], [123, 77]);

  // The person's token may also call the agent's tools (the dashboard's
  // Record button and lists); the view token may not act.
  const res = await fetch(`${deskd.url}/api/v1/tools/windows`, { method: 'POST', headers: { authorization: `Bearer ${deskd.personToken}`, 'content-type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 200);
});

// A raw control client (the dashboard's protocol) with the person's token.
async function person(t, deskd) {
  const c = await openLive(deskd);
  t.after(() => c.close());
  c.keepJpegs = false;
  c.send = (m) => c.ws.send(JSON.stringify(m));
  c.state = () => [...c.texts].reverse().find((m) => m.type === 'control');
  await c.until((x) => x.hello && x.state());
  return c;
}

test('nothing acts after a person takes over: a waiting batch stops before its click, a long type stops typing', async (t) => {
  const { deskd, fixture } = await desktop(t, { fixture: { geometry: '600x400+0+0' }, deskdArgs: ['--tools', 'both'] });
  const p = await person(t, deskd);
  const t0 = Date.now();
  const batch = deskd.tool('computer_use', { actions: [{ type: 'wait', ms: 2500 }, { type: 'move', x: 400, y: 300 }, { type: 'click', x: 401, y: 301 }] });
  await sleep(800);
  p.send({ type: 'take' });
  await p.until((x) => x.state().holder === 'you');
  const tookAt = Date.now();
  const r = await batch;
  assert.equal(r.status, 409, JSON.stringify(r.body));
  assert.equal(r.body.error.code, 'human_in_control');
  assert.equal(r.body.error.failed_index, 0, 'it stopped in the wait');
  assert.ok(Date.now() - tookAt < 1000, `answered ${Date.now() - tookAt} ms after the take`);
  assert.ok(Date.now() - t0 < 2400, 'before the wait would have ended');
  await sleep(2500 - (Date.now() - t0) + 500);
  assert.equal(fixture.state().events.filter((e) => e.type === 'button_press').length, 0, 'no click landed');
  p.send({ type: 'release' });
  await p.until((x) => x.state().holder === 'none');

  // A long type of distinct CJK characters (slow: each needs a keymap
  // binding): the person takes over while it types; it stops within a chunk.
  const text = Array.from({ length: 1200 }, (_, i) => String.fromCodePoint(0x4e00 + i)).join('');
  const typing = deskd.tool('computer_use', { actions: [{ type: 'type', text }], window: fixture.window });
  await fixture.waitFor((s) => s.text.length >= 20, { timeout: 10000 });
  p.send({ type: 'take' });
  await p.until((x) => x.state().holder === 'you');
  const took = Date.now();
  const at = [...fixture.state().text].length;
  const tr = await typing;
  assert.equal(tr.status, 409, JSON.stringify(tr.body).slice(0, 400));
  assert.equal(tr.body.error.code, 'human_in_control');
  assert.match(tr.body.error.message, /typed \d+ of 1200 characters/);
  assert.ok(Date.now() - took < 1500, `answered ${Date.now() - took} ms after the take`);
  await sleep(1000);
  const final = [...fixture.state().text].length;
  assert.ok(final < 1200, `typing stopped (${final} of 1200)`);
  assert.ok(final - at < 300, `at most a chunk after the take (${at} -> ${final})`);
});

test('a call whose REST client gave up never runs: its approval disappears, approving late does nothing', async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--approve', 'all', '--approve-timeout', '30', '--tools', 'both'] });
  const p = await person(t, deskd);
  const before = (await deskd.tool('computer_cursor_position', {})).body.structuredContent;
  const ac = new AbortController();
  const gaveUp = fetch(`${deskd.url}/api/v1/tools/computer_use`, { method: 'POST', signal: ac.signal,
    headers: { authorization: `Bearer ${deskd.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ actions: [{ type: 'move', x: 600, y: 400 }] }) }).catch((e) => e);
  await p.until((x) => x.state().approvals?.length === 1, { timeout: 5000 });
  const id = p.state().approvals[0].id;
  ac.abort();
  await gaveUp;
  await p.until((x) => x.state().approvals.length === 0, { timeout: 3000 });
  p.send({ type: 'approve', id });
  await p.until((x) => x.errors.some((e) => e.for === 'approve'), { timeout: 3000 });
  assert.equal(p.errors.find((e) => e.for === 'approve').code, 'no_such_request');
  await sleep(300);
  const after = (await deskd.tool('computer_cursor_position', {})).body.structuredContent;
  assert.deepEqual([after.x, after.y], [before.x, before.y], 'the pointer never moved');
});
