// MCP 2026-07-28 (stateless) beside the legacy era on one deskd: real clients
// (the SDK v2 client pinned to 2026-07-28 and in auto mode, the SDK v1 client,
// the Vercel AI SDK MCP client) list tools, take a screenshot and click at the
// mapped pixel over HTTP and stdio; a legacy session and modern requests
// interleave; hostile modern input (headers, Base64 tricks, requestState
// tampering, expiry and replay) gets clear errors and runs nothing twice;
// closing a response stream cancels; subscriptions/listen; per-request logs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport as StdioAi } from '@ai-sdk/mcp/mcp-stdio';
import { desktop, startDeskd, startXvfb, startFixture, tempDir, DESKD_BIN, sleep, waitUntil } from './lib/harness.mjs';

const V = '2026-07-28';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const PV = 'io.modelcontextprotocol/protocolVersion';
const meta = (extra = {}) => ({ [PV]: V, [CAPS]: {}, 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' }, ...extra });
let nextId = 1;

/** A modern request body. */
function req(method, params = {}, { id = nextId++, metaExtra = {} } = {}) {
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: meta(metaExtra) } };
}

/** The conformant headers for body, then overrides (a null value drops one). */
function headersFor(body, overrides = {}) {
  const h = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const m = body.params?._meta?.[PV];
  if (m) h['mcp-protocol-version'] = m;
  if (body.method) h['mcp-method'] = body.method;
  const name = body.method === 'resources/read' ? body.params?.uri : body.params?.name;
  if (typeof name === 'string' && ['tools/call', 'prompts/get', 'resources/read'].includes(body.method)) h['mcp-name'] = name;
  for (const [k, v] of Object.entries(overrides)) {
    delete h[k.toLowerCase()];
    if (v !== null) h[k] = v;
  }
  return h;
}

/** Raw POST /mcp with node:http (exact header bytes); parses JSON or SSE. */
function rawPost(d, body, overrides = {}) {
  const url = new URL(d.url + '/mcp');
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const headers = { ...headersFor(typeof body === 'string' ? {} : body, overrides), ...(d.token ? { authorization: `Bearer ${d.token}` } : {}) };
  return new Promise((resolve, reject) => {
    const r = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => {
        const ct = res.headers['content-type'] || '';
        let json;
        const events = [];
        if (ct.includes('text/event-stream')) {
          for (const line of data.split('\n')) if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)));
          json = events.find((e) => 'result' in e || 'error' in e);
        } else {
          try { json = JSON.parse(data); } catch { json = undefined; }
        }
        resolve({ status: res.statusCode, headers: res.headers, text: data, json, events });
      });
    });
    r.on('error', reject);
    r.end(text);
  });
}

function rpcError(r) { return r.json?.error; }
function assertError(r, status, code, id, what) {
  assert.equal(r.status, status, `${what}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
  assert.equal(r.json?.error?.code, code, `${what}: ${r.text.slice(0, 300)}`);
  if (id !== undefined) assert.equal(r.json.id, id, `${what}: the error echoes the id`);
}

const presses = (fx) => fx.state().events.filter((e) => e.type === 'button_press');
/** Run fn; return the root coordinates of the one button press it caused. */
async function pressOf(fx, fn) {
  const before = presses(fx).length;
  await fn();
  await waitUntil(() => presses(fx).length > before, { what: 'a button press' });
  const p = presses(fx)[before];
  return [p.root_x, p.root_y];
}

// ---- the clients, one interface: list, screenshot, click ----

async function allToolNames(list) {
  const names = [];
  let cursor;
  do {
    const page = await list(cursor);
    names.push(...page.tools.map((x) => x.name));
    cursor = page.nextCursor;
  } while (cursor);
  return names;
}

const clients = {
  'SDK v2 pinned to 2026-07-28': { era: V, v2: { pin: V } },
  'SDK v2 auto': { era: V, v2: 'auto' },
  'SDK v1 (legacy)': { era: '2025-11-25', v1: true },
  'Vercel AI SDK MCP client': { era: V, ai: true },
};

/** Connect kind over HTTP (d) or stdio (spawn args); returns a small facade. */
async function connect(kind, { d, stdioArgs, onElicit }) {
  const spec = clients[kind];
  const auth = d?.token ? { Authorization: `Bearer ${d.token}` } : {};
  if (spec.ai) {
    const transport = d ? { type: 'http', url: d.url + '/mcp', headers: auth }
      : new StdioAi({ command: DESKD_BIN, args: stdioArgs, env: cleanEnv() });
    const c = await createMCPClient({ transport });
    return {
      version: c.initializeResult?.protocolVersion,
      names: () => allToolNames((cursor) => c.listTools(cursor ? { params: { cursor } } : {})),
      call: (name, args) => c.callTool({ name, arguments: args }),
      close: () => c.close(),
    };
  }
  if (spec.v1) {
    const c = new ClientV1({ name: 'deskd-test-v1', version: '1' }, { capabilities: onElicit ? { elicitation: {} } : {} });
    if (onElicit) c.setRequestHandler(ElicitRequestSchema, async (r) => onElicit(r.params));
    const t = d ? new HttpV1(new URL(d.url + '/mcp'), { requestInit: { headers: auth } })
      : new StdioV1({ command: DESKD_BIN, args: stdioArgs, env: cleanEnv(), stderr: 'ignore' });
    await c.connect(t);
    return {
      version: t.protocolVersion ?? (d ? undefined : '2025-11-25'),
      names: () => allToolNames((cursor) => c.listTools(cursor ? { cursor } : {})),
      call: (name, args) => c.callTool({ name, arguments: args }),
      close: async () => { if (d) await t.terminateSession().catch(() => {}); await c.close(); },
    };
  }
  const c = new ClientV2({ name: 'deskd-test-v2', version: '1' },
    { versionNegotiation: { mode: spec.v2 }, capabilities: onElicit ? { elicitation: {} } : {} });
  if (onElicit) c.setRequestHandler('elicitation/create', async (r) => onElicit(r.params));
  const t = d ? new HttpV2(new URL(d.url + '/mcp'), { requestInit: { headers: auth } })
    : new StdioV2({ command: DESKD_BIN, args: stdioArgs, env: cleanEnv(), stderr: 'ignore' });
  await c.connect(t);
  return {
    version: c.getNegotiatedProtocolVersion(),
    names: () => allToolNames((cursor) => c.listTools(cursor ? { cursor } : {})),
    call: (name, args) => c.callTool({ name, arguments: args }),
    close: () => c.close(),
  };
}

function cleanEnv() {
  const env = { ...process.env };
  delete env.DISPLAY;
  for (const k of Object.keys(env)) if (k.startsWith('DESKD_')) delete env[k];
  return env;
}

/** list tools, screenshot at max_dimension 640, click (320, 200) of it. */
async function listShootClick(c, fixture) {
  const names = await c.names();
  for (const n of ['screenshot', 'computer_use', 'status']) assert.ok(names.includes(n), `${n} listed`);
  const shot = await c.call('screenshot', { max_dimension: 640 });
  assert.notEqual(shot.isError, true, JSON.stringify(shot).slice(0, 300));
  assert.equal(shot.structuredContent.width, 640);
  assert.equal(shot.structuredContent.coordinate_space, '640x400/640');
  assert.ok(shot.content.some((b) => b.type === 'image' && b.mimeType === 'image/png'));
  // The space travels with the click: exact with or without a session.
  const at = await pressOf(fixture, async () => {
    const r = await c.call('computer_use', { actions: [{ type: 'click', x: 320, y: 200 }], coordinate_space: shot.structuredContent.coordinate_space });
    assert.notEqual(r.isError, true, JSON.stringify(r).slice(0, 300));
    const res = r.structuredContent.results[0];
    assert.deepEqual([res.desktop_x, res.desktop_y], [640, 400]);
  });
  assert.deepEqual(at, [640, 400]);
}

test('every client lists tools, takes a screenshot and clicks the mapped pixel over HTTP, on one deskd', async (t) => {
  const { deskd, fixture } = await desktop(t, { fixture: { geometry: '1280x800+0+0' }, deskdArgs: ['--conformance-fixtures'] });
  for (const kind of Object.keys(clients)) {
    await t.test(kind, async () => {
      const c = await connect(kind, { d: deskd });
      try {
        assert.equal(c.version, clients[kind].era, 'the era the client settled on');
        await listShootClick(c, fixture);
      } finally {
        await c.close();
      }
    });
  }
  // No stray sessions: only the legacy client opened one, and closed it.
  const modernSessions = deskd.log.join('').match(/mcp: session [0-9a-f-]+: deskd-test-v2/g);
  assert.equal(modernSessions, null, 'the 2026-07-28 clients never initialized');
});

test('every client does the same over stdio', async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const fixture = await startFixture(x.display, { geometry: '1280x800+0+0' });
  t.after(() => fixture.stop());
  for (const kind of Object.keys(clients)) {
    await t.test(kind, async () => {
      const dir = tempDir('deskd-stdio-');
      const c = await connect(kind, { stdioArgs: ['--stdio', '--display', x.display, '--data-dir', dir, '--conformance-fixtures', '--log-level', 'warning'] });
      try {
        if (!clients[kind].v1) assert.equal(c.version, clients[kind].era);
        await listShootClick(c, fixture);
      } finally {
        await c.close();
      }
    });
  }
});

test('input-required results: one fixture asks inline on a session and by retry when stateless', async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--conformance-fixtures'] });
  const answers = { 'Step 1: What is your name?': { name: 'Alice' }, 'Step 2: What is your favorite color?': { color: 'blue' } };
  for (const kind of ['SDK v2 pinned to 2026-07-28', 'SDK v2 auto', 'SDK v1 (legacy)']) {
    await t.test(kind, async () => {
      const asked = [];
      const c = await connect(kind, { d: deskd, onElicit: (p) => { asked.push(p.message); return { action: 'accept', content: answers[p.message] }; } });
      try {
        const r = await c.call('test_input_required_result_multi_round', {});
        assert.equal(r.content[0].text, 'Alice likes blue');
        assert.deepEqual(asked, Object.keys(answers));
      } finally {
        await c.close();
      }
    });
  }
});

test('a legacy session and stateless requests interleave without touching each other', async (t) => {
  const { deskd, fixture, display } = await desktop(t, { fixture: { geometry: '1280x800+0+0' }, deskdArgs: ['--conformance-fixtures'] });
  const legacy = await connect('SDK v1 (legacy)', { d: deskd });
  t.after(() => legacy.close());
  // The session remembers max_dimension 640 for the screen...
  const shot = await legacy.call('screenshot', { max_dimension: 640 });
  assert.equal(shot.structuredContent.width, 640);
  // ...a stateless screenshot does not see it (the server default, 1280)...
  const modern = await rawPost(deskd, req('tools/call', { name: 'screenshot', arguments: {} }));
  assert.equal(modern.json.result.structuredContent.coordinate_space, '1280x800/1280');
  assert.equal(modern.json.result.resultType, 'complete');
  // ...and does not change it: a stateless 320 does not reach the session.
  await rawPost(deskd, req('tools/call', { name: 'screenshot', arguments: { max_dimension: 320 } }));
  assert.deepEqual(await pressOf(fixture, () => legacy.call('computer_use', { actions: [{ type: 'click', x: 100, y: 100 }] })), [200, 200]);
  // A stateless click without a space uses the server default; with the
  // session's token it is exact too.
  assert.deepEqual(await pressOf(fixture, () => rawPost(deskd, req('tools/call', { name: 'computer_use', arguments: { actions: [{ type: 'click', x: 100, y: 100 }] } }))), [100, 100]);
  assert.deepEqual(await pressOf(fixture, () => rawPost(deskd, req('tools/call', { name: 'computer_use', arguments: { actions: [{ type: 'click', x: 100, y: 100, coordinate_space: '640x400/640' }] } }))), [200, 200]);
  // A stale token (the target is 1280x800, not 1000x800 at 1000) is refused.
  const stale = await rawPost(deskd, req('tools/call', { name: 'computer_use', arguments: { actions: [{ type: 'click', x: 1, y: 1 }], coordinate_space: '1000x700/1000' } }));
  assert.equal(stale.json.result.isError, true);
  assert.match(stale.json.result.structuredContent.message, /stale/);
  // Concurrent: a stateless call while the session's call runs.
  const long = legacy.call('test_long_operation', { duration_ms: 500 });
  const quick = await rawPost(deskd, req('tools/call', { name: 'test_simple_text' }));
  assert.match(quick.json.result.content[0].text, /simple text/);
  assert.match((await long).content[0].text, /finished/);
  // The session lives on; stateless requests opened none.
  const status = await legacy.call('status', {});
  assert.equal(status.structuredContent.sessions, 1);
  // Recordings: a stateless one says only record_stop or max_seconds end it.
  const rec = await rawPost(deskd, req('tools/call', { name: 'record_start', arguments: { window: fixture.window, fps: 5 } }));
  assert.deepEqual(rec.json.result.structuredContent.ends_on, ['record_stop', 'max_seconds', 'window_destroyed', 'shutdown']);
  const inSession = await legacy.call('record_start', { window: fixture.window, fps: 5 });
  assert.ok(inSession.structuredContent.ends_on.includes('session_end'));
  for (const id of [rec.json.result.structuredContent.id, inSession.structuredContent.id]) {
    const stop = await rawPost(deskd, req('tools/call', { name: 'record_stop', arguments: { id } }));
    assert.notEqual(stop.json.result.isError, true, stop.text.slice(0, 300));
  }
  assert.ok(display);
});

test('hostile modern input: clear errors with the request id, and the era rules', async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--conformance-fixtures'] });
  const call = (args, overrides, name = 'test_custom_headers') => {
    const body = req('tools/call', { name, arguments: args });
    return [body.id, rawPost(deskd, body, overrides)];
  };

  await t.test('_meta', async () => {
    for (const [what, m] of [['no _meta', undefined], ['no protocolVersion', { [CAPS]: {} }], ['no clientCapabilities', { [PV]: V }],
      ['capabilities not an object', { [PV]: V, [CAPS]: [] }]]) {
      const body = { jsonrpc: '2.0', id: nextId++, method: 'tools/list', params: m ? { _meta: m } : {} };
      const r = await rawPost(deskd, body, { 'MCP-Protocol-Version': V });
      assertError(r, 400, -32602, body.id, what);
    }
    const bad = req('tools/list', {}, { metaExtra: { 'io.modelcontextprotocol/logLevel': 'loud' } });
    assertError(await rawPost(deskd, bad), 400, -32602, bad.id, 'unknown log level');
    // clientInfo is optional.
    const noInfo = { jsonrpc: '2.0', id: nextId++, method: 'server/discover', params: { _meta: { [PV]: V, [CAPS]: {} } } };
    const ok = await rawPost(deskd, noInfo);
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.json.result.supportedVersions, [V, '2025-11-25', '2025-06-18', '2025-03-26']);
    assert.equal(ok.json.result.ttlMs, 3600000);
    assert.equal(ok.json.result._meta['io.modelcontextprotocol/serverInfo'].name, 'deskd');
  });

  await t.test('standard headers', async () => {
    const list = () => req('tools/list');
    const cases = [
      ['no MCP-Protocol-Version', { 'MCP-Protocol-Version': null }],
      ['MCP-Protocol-Version differs', { 'MCP-Protocol-Version': '2099-01-01' }],
      ['no Mcp-Method', { 'Mcp-Method': null }],
      ['Mcp-Method differs', { 'Mcp-Method': 'prompts/list' }],
      ['Mcp-Method in another case', { 'Mcp-Method': 'TOOLS/LIST' }],
      ['Mcp-Method as Base64 of another', { 'Mcp-Method': '=?base64?cHJvbXB0cy9saXN0?=' }],
    ];
    for (const [what, o] of cases) {
      const b = list();
      assertError(await rawPost(deskd, b, o), 400, -32020, b.id, what);
    }
    for (const [what, o] of [['lower-case names', { 'mcp-method': 'tools/list' }], ['upper-case names', { 'MCP-METHOD': 'tools/list' }],
      ['spaces around the value', { 'Mcp-Method': '  tools/list\t' }]]) {
      const r = await rawPost(deskd, list(), o);
      assert.equal(r.status, 200, `${what}: ${r.text.slice(0, 200)}`);
      assert.equal(r.json.result.resultType, 'complete');
    }
  });

  await t.test('Mcp-Name and Base64', async () => {
    const b64 = (s) => `=?base64?${Buffer.from(s).toString('base64')}?=`;
    const good = [['plain', 'test_custom_headers'], ['Base64', b64('test_custom_headers')], ['padded with spaces', ' test_custom_headers ']];
    for (const [what, v] of good) {
      const [, p] = call({ region: 'eu' }, { 'Mcp-Name': v, 'Mcp-Param-Region': 'eu' });
      const r = await p;
      assert.equal(r.status, 200, `${what}: ${r.text.slice(0, 300)}`);
      assert.match(r.json.result.content[0].text, /headers-ok/);
    }
    const bad = [
      ['missing', null], ['another tool', 'status'], ['Base64 of another tool', b64('status')],
      ['invalid Base64', '=?base64?dGVzdF9jdXN0b21faGVhZGVycw?='], ['non-alphabet Base64', '=?base64?dGVz!!!dA==?='],
      ['sentinel without its end is literal', '=?base64?dGVzdF9jdXN0b21faGVhZGVycw=='], ['upper-case sentinel', b64('test_custom_headers').replace('base64', 'BASE64')],
      ['a byte that is not ASCII', 'test_custom_headers\u00e9'],
    ];
    for (const [what, v] of bad) {
      const [id, p] = call({ region: 'eu' }, { 'Mcp-Name': v, 'Mcp-Param-Region': 'eu' });
      assertError(await p, 400, -32020, id, `Mcp-Name ${what}`);
    }
  });

  await t.test('x-mcp-header parameters', async () => {
    const ok = [
      ['string', { region: 'us-west1' }, { 'Mcp-Param-Region': 'us-west1' }],
      ['string as Base64', { region: 'Hello, 世界' }, { 'Mcp-Param-Region': '=?base64?SGVsbG8sIOS4lueVjA==?=' }],
      ['a literal that looks like Base64', { region: 'SGVsbG8=' }, { 'Mcp-Param-Region': 'SGVsbG8=' }],
      ['integer compared as a number', { region: 'a', count: 42 }, { 'Mcp-Param-Region': 'a', 'Mcp-Param-Count': '42.0' }],
      ['boolean', { region: 'a', verbose: true }, { 'Mcp-Param-Region': 'a', 'Mcp-Param-Verbose': 'true' }],
      ['null is absent', { region: 'a', count: null }, { 'Mcp-Param-Region': 'a' }],
    ];
    for (const [what, args, h] of ok) {
      const body = req('tools/call', { name: 'test_custom_headers', arguments: args });
      const r = await rawPost(deskd, body, h);
      // null fails the schema (an error result), but the headers passed.
      assert.equal(r.status, 200, `${what}: ${r.text.slice(0, 300)}`);
      assert.equal(r.json.error, undefined, `${what}: ${r.text.slice(0, 300)}`);
    }
    const bad = [
      ['missing', { region: 'a' }, {}],
      ['different', { region: 'a' }, { 'Mcp-Param-Region': 'b' }],
      ['bad padding', { region: 'Hello' }, { 'Mcp-Param-Region': '=?base64?SGVsbG8?=' }],
      ['integer differs', { region: 'a', count: 42 }, { 'Mcp-Param-Region': 'a', 'Mcp-Param-Count': '43' }],
      ['integer not a number', { region: 'a', count: 42 }, { 'Mcp-Param-Region': 'a', 'Mcp-Param-Count': '42abc' }],
      ['boolean in another case', { region: 'a', verbose: true }, { 'Mcp-Param-Region': 'a', 'Mcp-Param-Verbose': 'TRUE' }],
    ];
    for (const [what, args, h] of bad) {
      const body = req('tools/call', { name: 'test_custom_headers', arguments: args });
      assertError(await rawPost(deskd, body, h), 400, -32020, body.id, `Mcp-Param ${what}`);
    }
  });

  await t.test('versions, methods, ids', async () => {
    const v = req('tools/list', {}, { metaExtra: { [PV]: '2099-01-01' } });
    const r = await rawPost(deskd, v);
    assertError(r, 400, -32022, v.id, 'unsupported version');
    assert.deepEqual(r.json.error.data, { supported: [V, '2025-11-25', '2025-06-18', '2025-03-26'], requested: '2099-01-01' });
    for (const m of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'no/such']) {
      const b = req(m, m === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } : {});
      assertError(await rawPost(deskd, b), 404, -32601, b.id, m);
    }
    const unknown = req('tools/call', { name: 'no_such_tool' });
    assertError(await rawPost(deskd, unknown), 200, -32602, unknown.id, 'unknown tool');
    const strId = req('tools/list', {}, { id: 'abc' });
    strId.params._meta[CAPS] = 'x';
    assertError(await rawPost(deskd, strId), 400, -32602, 'abc', 'string ids are echoed');
    // An id that is not readable gets null.
    const badId = { ...req('tools/list'), id: { x: 1 } };
    assertError(await rawPost(deskd, badId), 400, -32600, null, 'an object id');
    // GET and DELETE have no modern meaning.
    for (const method of ['GET', 'DELETE']) {
      const g = await deskd.fetch('/mcp', { method, headers: { 'mcp-protocol-version': V, accept: 'text/event-stream' } });
      assert.equal(g.status, 405, method);
      assert.equal(g.headers.get('allow'), 'POST');
    }
  });

  await t.test('legacy paths never answer with -32020..-32022', async () => {
    // No session, no modern signal: the legacy "session required".
    const plain = { jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} };
    for (const h of [{ 'MCP-Protocol-Version': '2025-11-25' }, { 'MCP-Protocol-Version': null }]) {
      const r = await rawPost(deskd, plain, { ...h, 'Mcp-Method': null });
      assert.equal(r.status, 400);
      assert.equal(r.json.error.code, -32000);
    }
    // A legacy session with a modern header stays legacy (-32000, not -32022).
    const init = await rawPost(deskd, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
      { 'MCP-Protocol-Version': null, 'Mcp-Method': null });
    assert.equal(init.status, 200);
    assert.equal(init.json.result.protocolVersion, '2025-11-25');
    const sid = init.headers['mcp-session-id'];
    const inSession = await rawPost(deskd, plain, { 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2099-01-01', 'Mcp-Method': null });
    assert.equal(inSession.status, 400);
    assert.equal(inSession.json.error.code, -32000);
    // _meta naming a legacy version is legacy too.
    const legacyMeta = req('tools/list', {}, { metaExtra: { [PV]: '2025-11-25' } });
    const r = await rawPost(deskd, legacyMeta, { 'MCP-Protocol-Version': '2025-11-25' });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.code, -32000);
  });
});

test('requestState: tampered, moved, expired or replayed state is refused, and nothing runs twice', async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const deskd = await startDeskd({ display: x.display, args: ['--conformance-fixtures', '--view-token', 'view-tok'], env: { DESKD_MCP_STATE_TTL_MS: '1500' } });
  t.after(() => deskd.stop());
  const caps = { elicitation: {} };
  const ask = (args = {}, extra = {}, metaExtra = {}) => rawPost(deskd, req('tools/call',
    { name: 'test_input_required_result_request_state', arguments: args, ...extra }, { metaExtra: { [CAPS]: caps, ...metaExtra } }));
  const confirm = { confirm: { action: 'accept', content: { ok: true } } };
  const finished = () => (deskd.log.join('').match(/mcp test_input_required_result_request_state ok/g) || []).length;

  const r1 = await ask();
  assert.equal(r1.json.result.resultType, 'input_required');
  assert.deepEqual(Object.keys(r1.json.result.inputRequests), ['confirm']);
  const state = r1.json.result.requestState;
  assert.match(state, /^[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+$/);
  assert.equal(r1.json.result.ttlMs, undefined, 'input-required results carry no caching hints');

  const flipped = state.slice(0, -3) + (state.at(-3) === 'A' ? 'B' : 'A') + state.slice(-2);
  const [body, mac] = state.split('.');
  const payload = JSON.parse(Buffer.from(body, 'base64').toString());
  payload.s = { kind: 'request-state', round: 99 };
  const forged = Buffer.from(JSON.stringify(payload)).toString('base64') + '.' + mac;
  const refusals = [
    ['a flipped MAC', { requestState: flipped }, {}, /integrity/],
    ['a forged payload', { requestState: forged }, {}, /integrity/],
    ['not ours at all', { requestState: 'hello' }, {}, /not one this server issued/],
    ['not a string', { requestState: 5 }, {}, /must be a string/],
  ];
  for (const [what, extra, args, re] of refusals) {
    const r = await ask(args, { inputResponses: confirm, ...extra });
    assert.equal(r.json?.error?.code, -32602, `${what}: ${r.text.slice(0, 300)}`);
    assert.match(r.json.error.message, re, what);
  }
  // Moved to other arguments or another tool.
  const other = await ask({ extra: 1 }, { inputResponses: confirm, requestState: state });
  assert.equal(other.json.error?.code, -32602, other.text.slice(0, 200));
  const otherTool = await rawPost(deskd, req('tools/call', { name: 'test_input_required_result_tampered_state', arguments: {}, inputResponses: confirm, requestState: state },
    { metaExtra: { [CAPS]: caps } }));
  assert.match(otherTool.json.error.message, /another request/);
  // Another caller (the view token) cannot use the full token's state.
  const view = { ...deskd, token: 'view-tok' };
  const asView = await rawPost(view, req('tools/call', { name: 'test_input_required_result_request_state', arguments: {}, inputResponses: confirm, requestState: state },
    { metaExtra: { [CAPS]: caps } }));
  assert.match(asView.json.error.message, /another caller/);
  assert.equal(finished(), 0, 'none of those ran the tool to its end');

  // The real one works once...
  const ok = await ask({}, { inputResponses: confirm, requestState: state });
  assert.match(ok.json.result.content[0].text, /^state-ok/);
  // The tool's end is logged just after its answer is sent.
  await waitUntil(() => finished() === 1, { what: 'the one run logged' });
  // ...and a replay is refused.
  const replay = await ask({}, { inputResponses: confirm, requestState: state });
  assert.equal(replay.json.error.code, -32602);
  assert.match(replay.json.error.message, /already used/);
  assert.equal(finished(), 1, 'the replay ran nothing');

  // Expiry (DESKD_MCP_STATE_TTL_MS=1500).
  const late = (await ask()).json.result.requestState;
  await sleep(1700);
  const expired = await ask({}, { inputResponses: confirm, requestState: late });
  assert.match(expired.json.error.message, /expired/);
  assert.equal(finished(), 1);

  // Malformed inputResponses are protocol errors, not results.
  for (const bad of [null, 5, { confirm: 12345 }]) {
    const r = await ask({}, { inputResponses: bad });
    assert.equal(r.json.error?.code, -32602, JSON.stringify(bad));
  }
  // Asking for input the client did not declare: -32021, 400.
  const noCaps = await rawPost(deskd, req('tools/call', { name: 'test_input_required_result_elicitation', arguments: {} }));
  assertError(noCaps, 400, -32021, undefined, 'elicitation not declared');
  assert.deepEqual(noCaps.json.error.data.requiredCapabilities, { elicitation: {} });
});

/** A streaming modern POST; returns { events (live array), res, abort }. */
async function openStream(d, body) {
  const ac = new AbortController();
  const res = await fetch(d.url + '/mcp', { method: 'POST', headers: { ...headersFor(body), ...(d.token ? { authorization: `Bearer ${d.token}` } : {}) }, body: JSON.stringify(body), signal: ac.signal });
  const events = [];
  const done = (async () => {
    const dec = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body) {
        buf += dec.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          for (const line of block.split('\n')) if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)));
        }
      }
    } catch { /* aborted */ }
  })();
  return { res, events, done, abort: () => ac.abort() };
}

test('closing the response stream cancels the call; stdio cancels with notifications/cancelled', async (t) => {
  const { deskd, display } = await desktop(t, { deskdArgs: ['--conformance-fixtures'] });
  const ended = () => /mcp test_long_operation timeout/.test(deskd.log.join(''));
  // With progress: the stream opens at once.
  const s = await openStream(deskd, req('tools/call', { name: 'test_long_operation', arguments: { duration_ms: 20000 } }, { metaExtra: { progressToken: 'p1' } }));
  assert.equal(s.res.headers.get('content-type'), 'text/event-stream');
  await waitUntil(() => s.events.some((e) => e.method === 'notifications/progress'), { what: 'progress' });
  assert.ok(s.events.every((e) => e.params?.progressToken === 'p1'));
  s.abort();
  const t0 = Date.now();
  await waitUntil(ended, { timeout: 5000, what: 'the call to stop' });
  assert.ok(Date.now() - t0 < 4000, 'cancelled within seconds');
  // Without notifications: it becomes a stream after 250 ms, and closing that cancels too.
  const before = (deskd.log.join('').match(/mcp test_long_operation timeout/g) || []).length;
  const q = await openStream(deskd, req('tools/call', { name: 'test_long_operation', arguments: { duration_ms: 20000 } }));
  assert.equal(q.res.headers.get('content-type'), 'text/event-stream');
  q.abort();
  await waitUntil(() => (deskd.log.join('').match(/mcp test_long_operation timeout/g) || []).length > before, { timeout: 5000, what: 'the quiet call to stop' });
  // A quick call stays a plain JSON answer.
  const quick = await rawPost(deskd, req('tools/call', { name: 'test_simple_text' }));
  assert.equal(quick.headers['content-type'], 'application/json');

  // stdio: notifications/cancelled stops a modern call, no response follows.
  const child = spawn(DESKD_BIN, ['--stdio', '--display', display, '--data-dir', tempDir(), '--conformance-fixtures', '--log-level', 'debug'],
    { env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (c) => { err += c; });
  const lines = [];
  createInterface({ input: child.stdout }).on('line', (l) => lines.push(JSON.parse(l)));
  const send = (m) => child.stdin.write(JSON.stringify(m) + '\n');
  send(req('tools/call', { name: 'test_long_operation', arguments: { duration_ms: 20000 } }, { id: 'long-1' }));
  await sleep(300);
  send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'long-1', reason: 'test' } });
  await waitUntil(() => /mcp test_long_operation timeout/.test(err), { timeout: 5000, what: 'the stdio call to stop' });
  send(req('server/discover', {}, { id: 'd' }));
  await waitUntil(() => lines.some((l) => l.id === 'd'), { what: 'discover over stdio' });
  assert.equal(lines.filter((l) => l.id === 'long-1').length, 0, 'no response for a cancelled call');
  child.stdin.end();
  const code = await new Promise((res) => child.on('exit', res));
  assert.equal(code, 0, err.slice(-2000));
});

test('subscriptions/listen: acknowledgment first, the subscription id on every frame, only what was asked, a clean end', async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const deskd = await startDeskd({ display: x.display, args: ['--conformance-fixtures'] });
  t.after(() => deskd.stop());
  const tools = await openStream(deskd, req('subscriptions/listen', { notifications: { toolsListChanged: true, promptsListChanged: false } }, { id: 'sub-tools' }));
  const prompts = await openStream(deskd, req('subscriptions/listen', { notifications: { promptsListChanged: true, resourceSubscriptions: ['deskd://recordings/x'] } }, { id: 77 }));
  await waitUntil(() => tools.events.length && prompts.events.length, { what: 'acknowledgments' });
  assert.equal(tools.events[0].method, 'notifications/subscriptions/acknowledged');
  assert.deepEqual(tools.events[0].params.notifications, { toolsListChanged: true });
  assert.deepEqual(prompts.events[0].params.notifications, { promptsListChanged: true, resourceSubscriptions: ['deskd://recordings/x'] });
  await rawPost(deskd, req('tools/call', { name: 'test_trigger_tool_change' }));
  await rawPost(deskd, req('tools/call', { name: 'test_trigger_prompt_change' }));
  await waitUntil(() => tools.events.length >= 2 && prompts.events.length >= 2, { what: 'list changes' });
  assert.deepEqual(tools.events.map((e) => e.method), ['notifications/subscriptions/acknowledged', 'notifications/tools/list_changed']);
  assert.deepEqual(prompts.events.map((e) => e.method), ['notifications/subscriptions/acknowledged', 'notifications/prompts/list_changed']);
  for (const e of tools.events) assert.equal(e.params._meta['io.modelcontextprotocol/subscriptionId'], 'sub-tools');
  for (const e of prompts.events) assert.equal(e.params._meta['io.modelcontextprotocol/subscriptionId'], 77);
  // Logs never go to a listen stream; a client that closes one is forgotten.
  tools.abort();
  await sleep(100);
  await rawPost(deskd, req('tools/call', { name: 'test_trigger_prompt_change' }));
  await waitUntil(() => prompts.events.length >= 3, { what: 'a second prompt change' });
  // Shutdown: notifications/cancelled naming the listen request, then its result.
  const stopping = deskd.stop();
  await prompts.done;
  await stopping;
  const tail = prompts.events.slice(3);
  assert.deepEqual(tail.map((e) => e.method ?? 'result'), ['notifications/cancelled', 'result']);
  assert.equal(tail[0].params.requestId, 77);
  assert.deepEqual(tail[1], { jsonrpc: '2.0', id: 77, result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 77 } } });
});

test('logging only when the request asks for a level; progress only with a token', async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--conformance-fixtures'] });
  const quiet = await rawPost(deskd, req('tools/call', { name: 'test_logging_tool' }));
  assert.equal(quiet.events.filter((e) => e.method === 'notifications/message').length, 0);
  assert.equal(quiet.json.result.resultType, 'complete');
  const loud = await rawPost(deskd, req('tools/call', { name: 'test_logging_tool' }, { metaExtra: { 'io.modelcontextprotocol/logLevel': 'info' } }));
  assert.equal(loud.events.filter((e) => e.method === 'notifications/message').length, 3);
  const above = await rawPost(deskd, req('tools/call', { name: 'test_logging_tool' }, { metaExtra: { 'io.modelcontextprotocol/logLevel': 'error' } }));
  assert.equal(above.events.filter((e) => e.method === 'notifications/message').length, 0);
  const noToken = await rawPost(deskd, req('tools/call', { name: 'test_tool_with_progress' }));
  assert.equal(noToken.events.filter((e) => e.method === 'notifications/progress').length, 0);
  // Caching hints and resultType on every list.
  for (const [m, scope] of [['tools/list', 'public'], ['prompts/list', 'public'], ['resources/templates/list', 'public'], ['resources/list', 'private']]) {
    const r = await rawPost(deskd, req(m));
    assert.equal(r.json.result.resultType, 'complete', m);
    assert.equal(r.json.result.cacheScope, scope, m);
    assert.ok(Number.isInteger(r.json.result.ttlMs) && r.json.result.ttlMs >= 0, m);
  }
  const read = await rawPost(deskd, req('resources/read', { uri: 'test://static-text' }));
  assert.equal(read.json.result.cacheScope, 'private');
  const missing = await rawPost(deskd, req('resources/read', { uri: 'deskd://recordings/nope' }));
  assert.equal(missing.json.error.code, -32602, 'resource not found is -32602 in 2026-07-28');
  assert.equal(missing.json.error.data.uri, 'deskd://recordings/nope');
});

test('C2: a 2026-07-28 client that declares elicitation is asked to approve (input required); approve runs, decline does nothing', async (t) => {
  const { deskd, fixture } = await desktop(t, { fixture: { geometry: '400x300+100+80' }, deskdArgs: ['--approve', 'all', '--approve-timeout', '20'] });
  const click = (x, extra = {}, caps = { elicitation: {} }) => rawPost(deskd, req('tools/call',
    { name: 'computer_use', arguments: { actions: [{ type: 'click', x, y: 150 }] }, ...extra }, { metaExtra: { [CAPS]: caps } }));
  const r1 = await click(200);
  assert.equal(r1.json.result.resultType, 'input_required', JSON.stringify(r1.json));
  const q = r1.json.result.inputRequests.deskd_approve;
  assert.equal(q.method, 'elicitation/create');
  assert.match(q.params.message, /computer_use/);
  await sleep(300);
  assert.equal(presses(fixture).length, 0, 'nothing ran while asking');
  const yes = await click(200, { inputResponses: { deskd_approve: { action: 'accept', content: { approve: true } } }, requestState: r1.json.result.requestState });
  assert.notEqual(yes.json.result.isError, true, JSON.stringify(yes.json));
  await fixture.waitFor((s) => s.events.some((e) => e.type === 'button_press' && e.root_x === 200));

  const r2 = await click(220);
  const no = await click(220, { inputResponses: { deskd_approve: { action: 'decline' } }, requestState: r2.json.result.requestState });
  assert.equal(no.json.result.isError, true);
  assert.equal(no.json.result.structuredContent.code, 'approval_denied');
  // The state is sealed to its request: it does not approve another click.
  const moved = await click(240, { inputResponses: { deskd_approve: { action: 'accept', content: { approve: true } } }, requestState: r2.json.result.requestState });
  assert.ok(moved.json.error || moved.json.result?.isError || moved.json.result?.resultType === 'input_required', JSON.stringify(moved.json));
  await sleep(300);
  assert.deepEqual(presses(fixture).map((e) => e.root_x), [200], 'only the approved click landed');
});
