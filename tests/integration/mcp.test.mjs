// MCP over Streamable HTTP and stdio: the official TypeScript SDK client, plus
// raw HTTP for the transport rules of docs/MCP.md (status codes, sessions,
// versions, batches, SSE, cancellation, resumption, hostile input).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { existsSync, statSync } from 'node:fs';
import { desktop, startXvfb, startDeskd, tempDir, DESKD_BIN, sleep, waitUntil, sanitizerReport } from './lib/harness.mjs';

const INIT = (version = '2025-11-25', id = 1) => ({
  jsonrpc: '2.0', id, method: 'initialize',
  params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw-test', version: '1' } },
});
const ACCEPT = 'application/json, text/event-stream';

/** Raw POST /mcp. body: object (JSON-encoded) or string/Buffer (sent as is). */
async function post(d, body, { session, version, headers = {} } = {}) {
  const h = { 'content-type': 'application/json', accept: ACCEPT, ...headers };
  if (session) h['mcp-session-id'] = session;
  if (version) h['mcp-protocol-version'] = version;
  const r = await d.fetch('/mcp', {
    method: 'POST', headers: h,
    body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: r.status, headers: r.headers, text, json, events: parseSse(text) };
}

function parseSse(text) {
  const out = [];
  for (const block of text.split('\n\n')) {
    const ev = {};
    for (const line of block.split('\n')) {
      const m = /^(\w+): ?(.*)$/.exec(line);
      if (m) ev[m[1]] = ev[m[1]] !== undefined && m[1] === 'data' ? ev[m[1]] + '\n' + m[2] : m[2];
    }
    if (ev.data !== undefined || ev.id !== undefined) {
      try { ev.msg = ev.data ? JSON.parse(ev.data) : undefined; } catch { /* priming */ }
      out.push(ev);
    }
  }
  return out;
}

/** Open a raw session; returns its id. */
async function rawSession(d, version = '2025-11-25') {
  const r = await post(d, INIT(version));
  assert.equal(r.status, 200, r.text);
  const session = r.headers.get('mcp-session-id');
  assert.match(session, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const n = await post(d, { jsonrpc: '2.0', method: 'notifications/initialized' }, { session, version });
  assert.equal(n.status, 202);
  return session;
}

/** Read an SSE response incrementally: next() resolves with the next event. */
function sseReader(res) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let done = false;
  return {
    async next(timeoutMs = 5000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const i = buf.indexOf('\n\n');
        if (i >= 0) {
          const block = buf.slice(0, i + 2);
          buf = buf.slice(i + 2);
          const evs = parseSse(block);
          if (evs.length) return evs[0];
          continue;
        }
        if (done) return null;
        const left = end - Date.now();
        if (left <= 0) throw new Error('no SSE event in time');
        const r = await Promise.race([reader.read(), sleep(left).then(() => ({ timeout: true }))]);
        if (r.timeout) throw new Error('no SSE event in time');
        if (r.done) done = true; else buf += dec.decode(r.value, { stream: true });
      }
    },
    cancel: () => reader.cancel().catch(() => {}),
  };
}

async function sdkClient(d, { capabilities = {} } = {}) {
  const client = new Client({ name: 'deskd-test', version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(d.url + '/mcp'),
    { requestInit: { headers: { Authorization: `Bearer ${d.token}` } } });
  await client.connect(transport);
  return { client, transport };
}

test('MCP over HTTP with the SDK client', async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--conformance-fixtures'] });

  await t.test('connect, list tools (paginated), call status', async () => {
    const { client, transport } = await sdkClient(deskd);
    try {
      assert.equal(client.getServerVersion().name, 'deskd');
      assert.ok(client.getServerCapabilities().tools);
      const names = [];
      let cursor;
      do {
        const page = await client.listTools(cursor ? { cursor } : {});
        names.push(...page.tools.map((x) => x.name));
        for (const tool of page.tools) {
          assert.ok(tool.description, `${tool.name} has a description`);
          assert.equal(tool.inputSchema.type, 'object');
        }
        cursor = page.nextCursor;
      } while (cursor);
      assert.equal(new Set(names).size, names.length, 'tool names are unique');
      for (const n of ['status', 'test_simple_text', 'test_long_operation']) assert.ok(names.includes(n), n);
      const first = await client.listTools();
      assert.ok(first.tools.some((x) => x.name === 'test_simple_text'), 'fixtures on page one');

      const status = await client.callTool({ name: 'status', arguments: {} });
      assert.notEqual(status.isError, true, JSON.stringify(status));
      assert.equal(status.structuredContent.server.name, 'deskd');
      assert.ok(status.structuredContent.sessions >= 1, 'this session is counted');
      assert.deepEqual(JSON.parse(status.content[0].text), status.structuredContent);

      const simple = await client.callTool({ name: 'test_simple_text' });
      assert.match(simple.content[0].text, /simple text/);
      assert.deepEqual(await client.ping(), {});
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });

  await t.test('progress notifications and cancellation of a long call', async () => {
    const { client, transport } = await sdkClient(deskd);
    try {
      const seen = [];
      const r = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined,
        { onprogress: (p) => seen.push(p) });
      assert.match(r.content[0].text, /completed/);
      assert.deepEqual(seen.map((p) => p.progress), [0, 50, 100]);
      assert.ok(seen.every((p) => p.total === 100));

      const ac = new AbortController();
      const progress = [];
      const t0 = Date.now();
      const call = client.callTool({ name: 'test_long_operation', arguments: { duration_ms: 20000 } }, undefined,
        { signal: ac.signal, onprogress: (p) => { progress.push(p); if (progress.length === 2) ac.abort('user'); } });
      await assert.rejects(call);
      assert.ok(progress.length >= 2 && progress[1].progress >= progress[0].progress);
      // The server stopped the work: its activity event ends long before 20 s.
      const ev = await waitForEvent(deskd, (e) => e.tool === 'test_long_operation' && e.duration_ms !== undefined);
      assert.ok(ev.duration_ms < 5000, `stopped after ${ev.duration_ms} ms`);
      assert.ok(Date.now() - t0 < 5000);
      assert.deepEqual(await client.ping(), {}, 'the session lives on');
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });

  await t.test('an error result of a tool with an outputSchema reaches the client as isError', async () => {
    const { client, transport } = await sdkClient(deskd);
    try {
      const tools = (await client.listTools()).tools;
      const tool = tools.find((x) => x.name === 'test_structured_error');
      assert.ok(tool.outputSchema, 'has an outputSchema');
      const ok = await client.callTool({ name: 'test_structured_error', arguments: {} });
      assert.deepEqual(ok.structuredContent, { value: 42 });
      const bad = await client.callTool({ name: 'test_structured_error', arguments: { fail: true } });
      assert.equal(bad.isError, true);
      assert.equal(bad.structuredContent.code, 'bad_arguments');
      assert.match(bad.content[0].text, /asked to fail/);
      // Argument validation failures are tool errors too, not -32602.
      const invalid = await client.callTool({ name: 'test_structured_error', arguments: { fail: 'yes' } });
      assert.equal(invalid.isError, true);
      // An unknown tool is a JSON-RPC error.
      await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /-32602|Unknown tool/);
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });

  await t.test('sampling round trip through the client', async () => {
    const { client, transport } = await sdkClient(deskd, { capabilities: { sampling: {} } });
    try {
      const { CreateMessageRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
      let asked;
      client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
        asked = req.params;
        return { role: 'assistant', content: { type: 'text', text: 'forty-two' }, model: 'm', stopReason: 'endTurn' };
      });
      const r = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'the answer?' } });
      assert.equal(asked.messages[0].content.text, 'the answer?');
      assert.equal(asked.maxTokens, 100);
      assert.equal(r.content[0].text, 'LLM response: forty-two');
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });

  await t.test('session termination: DELETE, then 404', async () => {
    const { client, transport } = await sdkClient(deskd);
    const session = transport.sessionId;
    assert.ok(session);
    await transport.terminateSession();
    await client.close();
    const r = await post(deskd, { jsonrpc: '2.0', id: 2, method: 'ping' }, { session });
    assert.equal(r.status, 404);
    assert.equal(r.json.error.code, -32001);
  });

  await t.test('resources and prompts', async () => {
    const { client, transport } = await sdkClient(deskd);
    try {
      const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
      assert.ok(prompts.includes('computer_use_guide'));
      const guide = await client.getPrompt({ name: 'computer_use_guide', arguments: { task: 'open a terminal' } });
      const text = guide.messages[0].content.text;
      assert.match(text, /screenshot/);
      assert.match(text, /wait_for_change/);
      assert.match(text, /Task: open a terminal/);
      await assert.rejects(client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'x' } }), /-32602|arg2/);
      const templates = (await client.listResourceTemplates()).resourceTemplates.map((x) => x.uriTemplate);
      assert.ok(templates.includes('deskd://recordings/{id}'));
      await assert.rejects(client.readResource({ uri: 'deskd://recordings/nope' }), /-32002|not found/i);
      const r = await client.readResource({ uri: 'test://template/abc/data' });
      assert.match(r.contents[0].text, /abc/);
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });
});

/** A request with node:http, which (unlike fetch) may set Host. */
function nodeHttp(d, { method = 'GET', path = '/mcp', headers = {}, body } = {}) {
  const url = new URL(d.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path, method, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function waitForEvent(d, pred, timeoutMs = 5000) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), timeoutMs);
  try {
    const r = await d.fetch('/api/v1/events', { signal: ac.signal, headers: { accept: 'text/event-stream' } });
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      for (const ev of parseSse(buf)) if (ev.msg && pred(ev.msg)) { reader.cancel().catch(() => {}); return ev.msg; }
    }
  } finally {
    clearTimeout(timer);
  }
  throw new Error('event not seen');
}

test('MCP over HTTP: transport rules and hostile input', async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--conformance-fixtures'] });
  const session = await rawSession(deskd);
  const V = '2025-11-25';

  await t.test('sessions and versions', async () => {
    const missing = await post(deskd, { jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.equal(missing.status, 400);
    assert.equal(missing.json.error.code, -32000);
    assert.match(missing.json.error.message, /Mcp-Session-Id/);
    const unknown = await post(deskd, { jsonrpc: '2.0', id: 1, method: 'ping' }, { session: '00000000-0000-4000-8000-000000000000' });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.code, -32001);
    const badVersion = await post(deskd, { jsonrpc: '2.0', id: 1, method: 'ping' }, { session, version: '1999-01-01' });
    assert.equal(badVersion.status, 400);
    assert.match(badVersion.json.error.message, /Unsupported protocol version/);
    // A different supported version is not rejected (MCP.md 11.4).
    const legacy = await post(deskd, { jsonrpc: '2.0', id: 1, method: 'ping' }, { session, version: '2025-03-26' });
    assert.equal(legacy.status, 200);
    assert.deepEqual(legacy.json, { jsonrpc: '2.0', id: 1, result: {} });
    // A 2026-07-28 probe: 400, and not -32020..-32022, so clients fall back to initialize.
    const probe = await post(deskd, { jsonrpc: '2.0', id: 1, method: 'server/discover', params: {} },
      { version: '2026-07-28', headers: { 'mcp-method': 'server/discover' } });
    assert.equal(probe.status, 400);
    assert.ok(!(probe.json.error.code <= -32020 && probe.json.error.code >= -32022), JSON.stringify(probe.json));
    // Unknown versions in initialize negotiate the newest.
    const init = await post(deskd, INIT('1999-01-01'));
    assert.equal(init.json.result.protocolVersion, '2025-11-25');
    const again = await post(deskd, INIT(), { session });
    assert.equal(again.status, 400);
    assert.equal(again.json.error.code, -32600);
  });

  await t.test('JSON-RPC errors', async () => {
    const unknownMethod = await post(deskd, { jsonrpc: '2.0', id: 7, method: 'no/such' }, { session, version: V });
    assert.equal(unknownMethod.status, 200);
    assert.equal(unknownMethod.json.error.code, -32601);
    assert.equal(unknownMethod.json.id, 7);
    const discover = await post(deskd, { jsonrpc: '2.0', id: 8, method: 'server/discover' }, { session, version: V });
    assert.equal(discover.json.error.code, -32601);
    const unknownTool = await post(deskd, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'nope' } }, { session, version: V });
    const resp = unknownTool.json || unknownTool.events.find((e) => e.msg?.id === 9)?.msg;
    assert.equal(resp.error.code, -32602);
    const badCursor = await post(deskd, { jsonrpc: '2.0', id: 10, method: 'tools/list', params: { cursor: 'garbage' } }, { session, version: V });
    assert.equal(badCursor.json.error.code, -32602);
    const badLevel = await post(deskd, { jsonrpc: '2.0', id: 11, method: 'logging/setLevel', params: { level: 'loud' } }, { session, version: V });
    assert.equal(badLevel.json.error.code, -32602);
    const notRpc = await post(deskd, { hello: 'world' }, { session, version: V });
    assert.equal(notRpc.status, 400);
    assert.equal(notRpc.json.error.code, -32600);
  });

  await t.test('hostile bodies get clear errors and the server lives on', async () => {
    const malformed = await post(deskd, '{"jsonrpc":"2.0",', { session, version: V });
    assert.equal(malformed.status, 400);
    assert.equal(malformed.json.error.code, -32700);
    assert.equal(malformed.json.id, null);
    const deep = await post(deskd, '['.repeat(100000), { session, version: V });
    assert.equal(deep.status, 400);
    assert.equal(deep.json.error.code, -32700);
    const badUtf8 = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'),
      Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}}')]);
    const utf = await post(deskd, badUtf8, { session, version: V });
    assert.equal(utf.status, 400);
    assert.equal(utf.json.error.code, -32700);
    assert.match(JSON.stringify(utf.json.error.data), /UTF-8/i);
    const big = 'x'.repeat((1 << 20) - 512);   // just under --max-body's 1 MiB
    const large = await post(deskd, { jsonrpc: '2.0', id: 12, method: 'tools/call', params: { name: 'json_schema_2020_12_tool', arguments: { name: big } } },
      { session, version: V });
    assert.equal(large.status, 200);
    assert.match(large.headers.get('content-type'), /^application\/json/, 'a call that sends nothing first: plain JSON');
    const result = large.json.result;
    assert.notEqual(result.isError, true);
    assert.match(result.content[0].text, /^Received: \{"name":"xxxx/);
    const over = await post(deskd, { jsonrpc: '2.0', id: 15, method: 'tools/call', params: { name: 'json_schema_2020_12_tool', arguments: { name: big + 'x'.repeat(1024) } } },
      { session, version: V });
    assert.equal(over.status, 413);
    assert.equal(over.json.error.code, -32000);
    const array = await post(deskd, [{ jsonrpc: '2.0', id: 13, method: 'ping' }], { session, version: V });
    assert.equal(array.status, 400, 'no batches on a 2025-11-25 session');
    assert.equal(array.json.error.code, -32600);
    const ping = await post(deskd, { jsonrpc: '2.0', id: 14, method: 'ping' }, { session, version: V });
    assert.deepEqual(ping.json, { jsonrpc: '2.0', id: 14, result: {} });
  });

  await t.test('batches on a 2025-03-26 session', async () => {
    const old = await rawSession(deskd, '2025-03-26');
    const r = await post(deskd, [{ jsonrpc: '2.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 'b', method: 'tools/list' }], { session: old });
    assert.equal(r.status, 200);
    assert.equal(r.json.length, 2);
    assert.deepEqual(r.json.find((x) => x.id === 1).result, {});
    assert.ok(r.json.find((x) => x.id === 'b').result.tools.length > 0);
    const notes = await post(deskd, [{ jsonrpc: '2.0', method: 'notifications/initialized' }], { session: old });
    assert.equal(notes.status, 202);
    const empty = await post(deskd, [], { session: old });
    assert.equal(empty.status, 400);
  });

  await t.test('Accept and Content-Type', async () => {
    const r = await post(deskd, { jsonrpc: '2.0', id: 1, method: 'ping' }, { session, headers: { accept: 'text/html' } });
    assert.equal(r.status, 406);
    const ct = await post(deskd, { jsonrpc: '2.0', id: 1, method: 'ping' }, { session, headers: { 'content-type': 'text/plain' } });
    assert.equal(ct.status, 415);
  });

  await t.test('a call answers plain JSON unless it sends something first (progress, a log) or runs past 250 ms: then a primed SSE stream', async () => {
    const call = (id, name, args = {}, meta) => post(deskd, { jsonrpc: '2.0', id, method: 'tools/call',
      params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } }, { session, version: V });
    const kind = (r) => (r.headers.get('content-type') || '').split(';')[0];
    const plain = await call(30, 'status');
    assert.equal(kind(plain), 'application/json');
    assert.equal(plain.json.id, 30);
    assert.ok(plain.json.result.structuredContent, JSON.stringify(plain.json).slice(0, 200));
    const quiet = await call(31, 'test_tool_with_progress');   // no token: nothing to send
    assert.equal(kind(quiet), 'application/json');
    assert.equal(quiet.json.id, 31);
    const loud = await call(32, 'test_tool_with_progress', {}, { progressToken: 'p32' });
    assert.equal(kind(loud), 'text/event-stream');
    assert.ok(loud.events.filter((e) => e.msg?.method === 'notifications/progress').length >= 1);
    assert.equal(loud.events.find((e) => e.msg?.id === 32).msg.id, 32);
    assert.match(loud.events[0].id, /^\d+:\d+$/, 'primed with an event id to resume after');
    const slow = await call(33, 'test_long_operation', { duration_ms: 700 });
    assert.equal(kind(slow), 'text/event-stream', 'a long call streams (its close cancels it; it resumes)');
    assert.equal(slow.events[0].data, '', 'the priming event first');
    assert.match(slow.events.find((e) => e.msg?.id === 33).msg.result.content[0].text, /finished/);
    // a log level set for the session: the logging tool streams its messages
    const set = await post(deskd, { jsonrpc: '2.0', id: 34, method: 'logging/setLevel', params: { level: 'info' } }, { session, version: V });
    assert.equal(set.status, 200);
    const logged = await call(35, 'test_tool_with_logging');
    assert.equal(kind(logged), 'text/event-stream');
    assert.ok(logged.events.some((e) => e.msg?.method === 'notifications/message'), logged.text.slice(0, 300));
    await post(deskd, { jsonrpc: '2.0', id: 36, method: 'logging/setLevel', params: { level: 'emergency' } }, { session, version: V });
  });

  await t.test('cancellation: no response, the stream ends', async () => {
    const res = await deskd.fetch('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: ACCEPT, 'mcp-session-id': session, 'mcp-protocol-version': V },
      body: JSON.stringify({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'test_long_operation', arguments: { duration_ms: 20000 }, _meta: { progressToken: 'c1' } } }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /text\/event-stream/);
    const sse = sseReader(res);
    const priming = await sse.next();
    assert.equal(priming.data, '');
    assert.match(priming.id, /^\d+:0$/);
    assert.ok(priming.retry, 'priming event has retry');
    let ev;
    do { ev = await sse.next(); } while (ev.msg?.method !== 'notifications/progress');
    const t0 = Date.now();
    const c = await post(deskd, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 77, reason: 'test' } }, { session, version: V });
    assert.equal(c.status, 202);
    for (;;) {
      const e = await sse.next(3000);
      if (!e) break;
      assert.notEqual(e.msg?.id, 77, 'no response after cancellation');
    }
    assert.ok(Date.now() - t0 < 2000, 'the stream ended soon after the cancellation');
  });

  await t.test('GET stream: one per session, resumption with Last-Event-ID', async () => {
    const open = () => deskd.fetch('/mcp', { headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': V } });
    const first = await open();
    assert.equal(first.status, 200);
    const second = await open();
    assert.equal(second.status, 409);
    await second.text();
    await first.body.cancel();

    // test_reconnection closes its POST stream before the result.
    const r = await post(deskd, { jsonrpc: '2.0', id: 90, method: 'tools/call', params: { name: 'test_reconnection' } }, { session, version: V });
    assert.equal(r.events.length, 1, 'only the priming event before the close');
    const last = r.events[0].id;
    const resumed = await deskd.fetch('/mcp', { headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'last-event-id': last } });
    assert.equal(resumed.status, 200);
    const sse = sseReader(resumed);
    const ev = await sse.next(3000);
    assert.equal(ev.msg.id, 90);
    assert.match(ev.msg.result.content[0].text, /Reconnection test completed/);
    sse.cancel();
  });

  await t.test('Origin and Host checks answer 403 with a JSON-RPC body', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const base = { 'content-type': 'application/json', accept: ACCEPT, 'mcp-session-id': session, authorization: `Bearer ${deskd.token}` };
    for (const headers of [{ origin: 'http://evil.example.com' }, { host: 'evil.example.com' },
      { host: 'evil.example.com', origin: 'http://evil.example.com' }]) {
      const r = await nodeHttp(deskd, { method: 'POST', headers: { ...base, ...headers }, body });
      assert.equal(r.status, 403, JSON.stringify(headers));
      const json = JSON.parse(r.body);
      assert.equal(json.jsonrpc, '2.0');
      assert.equal(json.error.code, -32000);
    }
    const own = await nodeHttp(deskd, { method: 'POST', headers: { ...base, origin: deskd.url }, body });
    assert.equal(own.status, 200);
    const local = await nodeHttp(deskd, { method: 'POST', headers: { ...base, host: `localhost:${new URL(deskd.url).port}` }, body });
    assert.equal(local.status, 200);
  });

  await t.test('the server survived everything', async () => {
    const r = await deskd.tool('status');
    assert.equal(r.status, 200);
    assert.equal(deskd.proc.exitCode, null);
  });
});

test('recordings as MCP resources; ending a session finalizes its recording', async (t) => {
  const { deskd, fixture } = await desktop(t, { fixture: true });
  const { client, transport } = await sdkClient(deskd);
  try {
    const start = await client.callTool({ name: 'record_start', arguments: { window: fixture.window, fps: 10 } });
    assert.notEqual(start.isError, true, JSON.stringify(start));
    const id = start.structuredContent.id;
    await sleep(700);
    const stop = await client.callTool({ name: 'record_stop', arguments: { id } });
    assert.notEqual(stop.isError, true, JSON.stringify(stop));
    const uri = `deskd://recordings/${id}`;
    const link = stop.content.find((b) => b.type === 'resource_link');
    assert.equal(link?.uri, uri);
    const listed = (await client.listResources()).resources.find((r) => r.uri === uri);
    assert.ok(listed, 'the finished recording is listed');
    assert.equal(listed.mimeType, 'video/mp4');
    const read = await client.readResource({ uri });
    const bytes = Buffer.from(read.contents[0].blob, 'base64');
    assert.equal(bytes.length, statSync(stop.structuredContent.path).size);
    assert.equal(bytes.subarray(4, 8).toString(), 'ftyp');
    const done = await client.complete({ ref: { type: 'ref/resource', uri: 'deskd://recordings/{id}' }, argument: { name: 'id', value: id.slice(0, 3) } });
    assert.ok(done.completion.values.includes(id));

    // A recording still running when its session ends is finalized and published.
    const second = await client.callTool({ name: 'record_start', arguments: { window: fixture.window, fps: 10 } });
    assert.notEqual(second.isError, true, JSON.stringify(second));
    const path = second.structuredContent.path;
    await sleep(500);
    assert.equal(existsSync(path), false, 'not published while recording');
    await transport.terminateSession();
    await waitUntil(() => existsSync(path) && statSync(path).size > 0, { timeout: 10000, what: 'recording published after DELETE' });
    assert.equal(statSync(path).mode & 0o777, 0o600);
  } finally {
    await client.close();
  }
});

test('idle sessions expire (404 afterwards); busy ones do not', async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const deskd = await startDeskd({ display: x.display, args: ['--conformance-fixtures'], env: { DESKD_MCP_IDLE_TIMEOUT_MS: '1500' } });
  t.after(() => deskd.stop());
  const idle = await rawSession(deskd);
  const busy = await rawSession(deskd);
  // A call that outlives the timeout keeps its session alive.
  const call = post(deskd, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'test_long_operation', arguments: { duration_ms: 3500 } } },
    { session: busy, version: '2025-11-25' });
  await sleep(3000);
  const gone = await post(deskd, { jsonrpc: '2.0', id: 1, method: 'ping' }, { session: idle });
  assert.equal(gone.status, 404);
  const r = await call;
  assert.match(r.events.find((e) => e.msg?.id === 5).msg.result.content[0].text, /finished/);
  const alive = await post(deskd, { jsonrpc: '2.0', id: 2, method: 'ping' }, { session: busy });
  assert.equal(alive.status, 200);
});

test('view token: read-only session may not act', async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--view-token', 'viewer-secret'] });
  const client = new Client({ name: 'viewer', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(deskd.url + '/mcp'),
    { requestInit: { headers: { Authorization: 'Bearer viewer-secret' } } });
  await client.connect(transport);
  try {
    const status = await client.callTool({ name: 'status', arguments: {} });
    assert.notEqual(status.isError, true);
    const act = await client.callTool({ name: 'window_focus', arguments: { window: 1 } });
    assert.equal(act.isError, true);
    assert.equal(act.structuredContent.code, 'forbidden');
  } finally {
    await client.close();
  }
  const noToken = await fetch(deskd.url + '/mcp', { method: 'POST', headers: { 'content-type': 'application/json', accept: ACCEPT }, body: JSON.stringify(INIT()) });
  assert.equal(noToken.status, 401);
});

test('MCP over stdio with the SDK client', async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const dir = tempDir('deskd-stdio-');
  const env = { ...process.env };
  delete env.DISPLAY;
  const transport = new StdioClientTransport({
    command: DESKD_BIN,
    args: ['--stdio', '--display', x.display, '--data-dir', dir, '--conformance-fixtures', '--log-level', 'warning'],
    env, stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr.on('data', (d) => { stderr += d; });
  const stderrEnd = new Promise((res) => transport.stderr.on('end', res));
  const client = new Client({ name: 'stdio-test', version: '1' });
  await client.connect(transport);
  const pid = transport.pid;
  try {
    const tools = (await client.listTools()).tools.map((x) => x.name);
    assert.ok(tools.includes('status'));
    const status = await client.callTool({ name: 'status', arguments: {} });
    assert.equal(status.structuredContent.display.name, x.display);
    // ping is answered while a tool runs.
    const seen = [];
    const long = client.callTool({ name: 'test_long_operation', arguments: { duration_ms: 600 } }, undefined, { onprogress: (p) => seen.push(p) });
    const t0 = Date.now();
    assert.deepEqual(await client.ping(), {});
    assert.ok(Date.now() - t0 < 300, 'ping did not wait for the tool');
    const r = await long;
    assert.match(r.content[0].text, /finished/);
    assert.ok(seen.length >= 2);
    // Cancellation over stdio.
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    await assert.rejects(client.callTool({ name: 'test_long_operation', arguments: { duration_ms: 20000 } }, undefined, { signal: ac.signal }));
    assert.deepEqual(await client.ping(), {});
  } finally {
    await client.close();
  }
  // EOF on stdin stops deskd.
  await sleep(100);
  let alive = true;
  for (let i = 0; i < 50 && alive; i++) {
    try { process.kill(pid, 0); await sleep(100); } catch { alive = false; }
  }
  if (alive) process.kill(pid, 'SIGKILL');
  assert.equal(alive, false, 'deskd exits at end of input');
  await Promise.race([stderrEnd, sleep(2000)]);
  assert.equal(sanitizerReport(stderr), null, 'no sanitizer report at exit');
});
