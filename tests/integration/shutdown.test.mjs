// SIGTERM is bounded at 3 s whatever deskd is doing (RELIABILITY.md: done for
// a stopped X server in hung-display.test.mjs; here every other state at
// once): REST calls that run long (a wait, wait_for_change, a long type), an
// MCP call, an MCP call waiting for a sampling answer that never comes, a
// recording, an SSE reader and a live viewer. REST calls used to run on
// until the 5 s worker drain gave up on them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { SLOW, startDeskd, startFixture, startXvfb, sleep } from './lib/harness.mjs';
import { openLive } from './lib/live.mjs';

const ACCEPT = 'application/json, text/event-stream';

/** Fire a POST and forget it (its answer, if any, is read and dropped). */
function fire(d, path, body, headers = {}) {
  const req = http.request(new URL(path, d.url), { method: 'POST', headers: { authorization: `Bearer ${d.token}`,
    'content-type': 'application/json', accept: ACCEPT, ...headers } });
  req.on('error', () => {});
  req.on('response', (r) => r.resume());
  req.end(JSON.stringify(body));
}

async function session(d, capabilities = {}) {
  const r = await d.fetch('/mcp', { method: 'POST', headers: { 'content-type': 'application/json', accept: ACCEPT },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'shutdown', version: '1' } } }) });
  await r.text();
  return r.headers.get('mcp-session-id');
}

test('SIGTERM exits 0 within 3 s with long REST and MCP calls, a sampling wait, a recording, SSE and live readers', async (t) => {
  const x = await startXvfb();
  const fixture = await startFixture(x.display, { animate: 10 });
  const d = await startDeskd({ display: x.display, args: ['--conformance-fixtures', '--log-level', 'info'] });
  t.after(async () => { await d.stop().catch(() => {}); await fixture.stop(); await x.stop(); });

  fire(d, '/api/v1/tools/computer_use', { actions: [{ type: 'wait', ms: 30000 }] });
  fire(d, '/api/v1/tools/wait_for_change', { window: fixture.window, timeout_ms: 60000, stable_ms: 10000 });
  const cjk = Array.from({ length: 20000 }, (_, i) => String.fromCodePoint(0x4e00 + (i % 3000))).join('');
  fire(d, '/api/v1/tools/computer_use', { actions: [{ type: 'type', text: cjk.slice(0, 20000) }] });
  const s1 = await session(d);
  fire(d, '/mcp', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'computer_use',
    arguments: { actions: [{ type: 'wait', ms: 30000 }] } } }, { 'mcp-session-id': s1 });
  const s2 = await session(d, { sampling: {} });
  fire(d, '/mcp', { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'test_sampling',
    arguments: { prompt: 'never answered' } } }, { 'mcp-session-id': s2 });
  assert.equal((await d.tool('record_start', { window: fixture.window })).status, 200);
  http.get(new URL('/api/v1/events', d.url), { headers: { authorization: `Bearer ${d.token}` } }, (r) => r.resume()).on('error', () => {});
  const viewer = await openLive(d);
  viewer.watch({ target: 'screen', fps: 10 });
  await sleep(1500);

  const t0 = Date.now();
  const r = await d.stop('SIGTERM', 10000);
  const took = Date.now() - t0;
  t.diagnostic(`SIGTERM to exit: ${took} ms`);
  assert.equal(r.code, 0);
  assert.ok(took < 3000 * SLOW, `SIGTERM took ${took} ms`);
});
