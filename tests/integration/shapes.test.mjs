// What results look like (DESIGN.md 4 and 6): one rule for REST bodies,
// window ids as integers in JSON and "window N (0xHEX)" in messages, the
// window argument refused above 4294967295 by every tool, reals rounded to
// what they measure, and an event stream an EventSource reads from its first
// event on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { desktop, sleep } from './lib/harness.mjs';

/** The first `count` SSE events of /api/v1/events as an EventSource parses
 *  them (a field name is what precedes the first ':' of a line), plus the
 *  raw bytes read. */
function readEvents(d, count) {
  return new Promise((resolve, reject) => {
    const req = http.get(d.url + '/api/v1/events', { headers: d.headers() }, (res) => {
      const chunks = [];
      res.on('data', (c) => {
        chunks.push(c);
        const raw = Buffer.concat(chunks);
        const events = [];
        for (const block of raw.toString('utf8').split('\n\n').slice(0, -1)) {
          const data = block.split('\n').filter((l) => l.slice(0, l.indexOf(':')) === 'data')
            .map((l) => l.slice(l.indexOf(':') + 1).replace(/^ /, ''));
          if (data.length) events.push(JSON.parse(data.join('\n')));
        }
        if (events.length >= count) { req.destroy(); resolve({ raw, events }); }
      });
      res.on('error', () => {});
    });
    req.on('error', (e) => { if (e.code !== 'ECONNRESET') reject(e); });
    setTimeout(() => { req.destroy(); reject(new Error('no events on /api/v1/events')); }, 5000);
  });
}

const decimals = (v, n) => Math.abs(v * 10 ** n - Math.round(v * 10 ** n)) < 1e-6;

test('REST bodies, window ids, numbers and the event stream', async (t) => {
  const { deskd: d, fixture } = await desktop(t, { fixture: { geometry: '320x200+40+30' }, deskdArgs: ['--tools', 'both'] });

  await t.test('/api/v1/events: no NUL byte, so an EventSource reads the first event too', async () => {
    await d.tool('status');	// the first event in the history, replayed first to a new subscriber
    const { raw, events } = await readEvents(d, 1);
    assert.equal(raw.indexOf(0), -1, `a NUL byte at ${raw.indexOf(0)} of ${JSON.stringify(raw.toString())}`);
    assert.ok(raw.toString().startsWith(': deskd activity events\n\n'));
    assert.equal(events[0].type, 'event');
    assert.equal(events[0].tool, 'status');
    assert.ok(decimals(events[0].ts, 3) && decimals(events[0].duration_ms ?? 0, 3), JSON.stringify(events[0]));
  });

  await t.test('every JSON body is an object: tool results as MCP returns them, GET listings as the matching tool does', async () => {
    const tools = await (await d.fetch('/api/v1/tools')).json();
    assert.ok(Array.isArray(tools.tools) && tools.tools.some((x) => x.name === 'windows'), 'GET /api/v1/tools is {tools}');
    const windows = await (await d.fetch('/api/v1/windows')).json();
    const viaTool = (await d.tool('windows')).body;
    assert.ok(Array.isArray(viaTool.content) && viaTool.structuredContent, 'POST answers the tool result');
    assert.deepEqual(Object.keys(windows).sort(), Object.keys(viaTool.structuredContent).sort());
    assert.ok(windows.windows.some((w) => w.id === fixture.window));
    const recordings = await (await d.fetch('/api/v1/recordings')).json();
    const recTool = (await d.tool('recordings')).body;
    assert.ok(Array.isArray(recordings.recordings), `GET /api/v1/recordings is {recordings}: ${JSON.stringify(recordings)}`);
    assert.deepEqual(Object.keys(recordings), Object.keys(recTool.structuredContent));
  });

  await t.test('a window id above 4294967295 is refused by every tool that takes one, not wrapped to window 1', async () => {
    const big = 4294967297;	// 2^32 + 1: a uint32_t cast makes it 1
    const calls = [
      ['computer_use', { window: big, actions: [{ type: 'cursor_position' }] }],
      ['computer_click', { window: big, x: 5, y: 5 }],
      ['computer_type', { window: big, text: 'a' }],
      ['screenshot', { window: big }],
      ['record_start', { window: big }],
      ['wait_for_change', { window: big, timeout_ms: 10 }],
    ];
    for (const [name, args] of calls) {
      const r = await d.tool(name, args);
      assert.equal(r.status, 400, `${name}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, 'bad_arguments', name);
      assert.match(r.body.error.message, /^window: must be at most 4294967295$/, name);
    }
    assert.equal(fixture.state().text, '', 'nothing was typed');
  });

  await t.test('messages name a window as "window N (0xHEX)", whichever layer speaks', async () => {
    const id = 123456789;
    const want = /window 123456789 \(0x75bcd15\)/;
    for (const [name, args] of [
      ['screenshot', { window: id }],
      ['record_start', { window: id }],
      ['computer_use', { window: id, actions: [{ type: 'keypress', keys: ['shift'] }] }],
      ['window_focus', { window: id }],
    ]) {
      const r = await d.tool(name, args);
      assert.equal(r.status, 404, `${name}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.error.message, want, name);
    }
  });

  await t.test('reals are rounded: scale factors to 6 decimals, times and durations to 3', async () => {
    const shot = (await d.tool('screenshot', { max_dimension: 960 })).body;	// 1280 / 960
    assert.equal(shot.structuredContent.scale_factor, 1.333333);
    assert.match(shot.content.find((b) => b.type === 'text').text, /"scale_factor":1\.333333[,}]/, 'the text block models read');
    const held = (await d.tool('computer_use', { actions: [{ type: 'hold_key', keys: ['shift'], duration: 0.3 }] })).body;
    assert.equal(held.structuredContent.results[0].duration, 0.3);
    const status = (await d.tool('status')).body.structuredContent;
    assert.ok(decimals(status.server.uptime_seconds, 3), `uptime_seconds ${status.server.uptime_seconds}`);
    const start = await d.tool('record_start', { window: fixture.window, max_seconds: 0.1234567 });
    assert.equal(start.status, 200, JSON.stringify(start.body));
    assert.equal(start.body.structuredContent.max_seconds, 0.123);
    await sleep(300);
    const stop = (await d.tool('record_stop', { id: start.body.structuredContent.id })).body.structuredContent;
    assert.ok(decimals(stop.duration_seconds, 3), `duration_seconds ${stop.duration_seconds}`);
    const listed = (await (await d.fetch('/api/v1/recordings')).json()).recordings.find((x) => x.id === stop.id);
    assert.ok(decimals(listed.duration_seconds, 3), `listed duration_seconds ${listed.duration_seconds}`);
  });

});
