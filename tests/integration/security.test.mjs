// Security and robustness audit tests: every protected route refuses a
// missing token whatever the path tricks; the view token acts on nothing;
// the token never appears in logs, error bodies or dashboard URLs; files
// deskd writes are never written through planted symlinks; an acceptor out
// of file descriptors does not spin.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { DESKD_BIN, ROOT, launch, need, readyInfo, startDeskd, startFixture, startXvfb, tempDir, waitUntil, sleep } from './lib/harness.mjs';

const TOKEN = 'full-' + randomBytes(12).toString('hex');
const VIEW = 'view-' + randomBytes(12).toString('hex');

/** One raw request on a fresh connection; resolves with what the server sent
 *  until it closed or timeoutMs passed. */
function raw(url, bytes, { timeoutMs = 2000, untilClose = false } = {}) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const chunks = [];
    const s = net.connect(Number(port), hostname, () => s.write(bytes));
    const done = () => { clearTimeout(t); s.destroy(); resolve(Buffer.concat(chunks).toString('latin1')); };
    const t = setTimeout(done, timeoutMs);
    s.on('data', (d) => {
      chunks.push(d);
      // One whole answer is enough (keep-alive would wait for the timeout).
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /\r\ncontent-length: *(\d+)\r\n/i.exec(text);
      const head = text.indexOf('\r\n\r\n');
      if (!untilClose && m && head >= 0 && text.length >= head + 4 + Number(m[1])) done();
    });
    s.on('close', done);
    s.on('error', done);
  });
}

const statusOf = (text) => Number((/^HTTP\/1\.[01] (\d{3})/.exec(text) || [])[1] || 0);

/** The routes as the C code registers them (struct http_route tables). */
function routesFromCode() {
  const routes = [];
  const files = readdirSync(join(ROOT, 'server'), { recursive: true }).filter((n) => n.endsWith('.c'));
  for (const f of files) {
    const src = readFileSync(join(ROOT, 'server', f), 'utf8');
    const defs = Object.fromEntries([...src.matchAll(/#define (\w+) "([^"]*)"/g)].map((m) => [m[1], m[2]]));
    for (const m of src.matchAll(/\{\s*"(\w+)",\s*("[^"]*"|\w+),\s*HTTP_ROLE_(\w+),\s*([^,]+),/g)) {
      routes.push({ file: f, method: m[1], path: m[2].startsWith('"') ? m[2].slice(1, -1) : defs[m[2]],
        role: m[3], prefix: m[4].includes('HTTP_ROUTE_PREFIX') });
    }
    for (const m of src.matchAll(/\.method = (NULL|"\w+"),\s*\.path = "([^"]*)",\s*\.min_role = HTTP_ROLE_(\w+),\s*\.flags = ([^,]+),/g)) {
      routes.push({ file: f, method: m[1] === 'NULL' ? null : m[1].slice(1, -1), path: m[2], role: m[3],
        prefix: m[4].includes('HTTP_ROUTE_PREFIX') });
    }
  }
  return routes;
}

/** SSE or JSON body of an MCP POST: the JSON-RPC messages in it. */
async function mcpMessages(r) {
  const text = await r.text();
  if ((r.headers.get('content-type') || '').startsWith('text/event-stream')) {
    return text.split('\n').filter((l) => l.startsWith('data:') && l.length > 6).map((l) => JSON.parse(l.slice(5)));
  }
  return text ? [JSON.parse(text)] : [];
}

/** Plausible arguments for a tool from its input schema. */
function plausibleArgs(tool, window) {
  const samples = {
    x: 20, y: 20, x0: 10, y0: 10, x1: 30, y1: 30, dx: 0, dy: 3, window, text: 'pwned', keys: ['a'], key: 'a',
    button: 'left', out: '/tmp/deskd-security-should-not-exist.mp4', seconds: 1, max_seconds: 2, id: 'x',
    actions: [{ type: 'click', x: 20, y: 20 }], action: 'click', coordinate: [20, 20], duration_ms: 10,
  };
  const args = {};
  const props = (tool.inputSchema && tool.inputSchema.properties) || {};
  for (const name of (tool.inputSchema && tool.inputSchema.required) || []) {
    const p = props[name] || {};
    if (name in samples) args[name] = samples[name];
    else if (p.enum) args[name] = p.enum[0];
    else if (p.type === 'integer' || p.type === 'number') args[name] = p.minimum ?? 1;
    else if (p.type === 'string') args[name] = 'a';
    else if (p.type === 'boolean') args[name] = true;
    else if (p.type === 'array') args[name] = [];
    else args[name] = {};
  }
  return args;
}

describe('one deskd, a full and a view token', () => {
  let x, d, fixture;
  before(async () => {
    x = await startXvfb();
    fixture = await startFixture(x.display, { geometry: '200x150+0+0' });
    // Both surfaces, so the audit covers the split tools too.
    d = await startDeskd({ display: x.display, token: TOKEN, args: ['--view-token', VIEW, '--tools', 'both'] });
  });
  after(async () => {
    const r = d ? await d.stop() : null;
    if (fixture) await fixture.stop();
    if (x) await x.stop();
    if (r) assert.equal(r.code, 0, 'deskd exits cleanly (no sanitizer report)');
  });

  test('every route but /healthz, /, /static/* and /api/v1/token-help needs the token: 401', async () => {
    const routes = routesFromCode();
    assert.ok(routes.length >= 12, `routes found in server/**/*.c: ${JSON.stringify(routes)}`);
    const open = routes.filter((r) => r.role === 'NONE').map((r) => r.path).sort();
    // /api/v1/token-help says where the token is kept (the wrong-token page), never the token.
    assert.deepEqual(open, ['/', '/api/v1/token-help', '/healthz', '/static/'], 'the routes without a token');
    for (const r of routes.filter((r) => r.role !== 'NONE')) {
      const path = r.prefix ? r.path + 'x' : r.path;
      for (const method of r.method ? [r.method, ...(r.method === 'GET' ? ['HEAD'] : [])] : ['GET', 'POST', 'DELETE']) {
        for (const authorization of [undefined, `Bearer ${TOKEN.slice(0, -1)}`, `Bearer ${TOKEN}x`, 'Bearer', `Basic ${TOKEN}`,
          `Bearer ${VIEW.toUpperCase()}`]) {
          const res = await fetch(d.url + path, { method, headers: authorization ? { authorization } : {},
            body: method === 'POST' ? '{}' : undefined });
          const body = await res.text();
          assert.equal(res.status, 401, `${method} ${path} with ${authorization}: ${body}`);
          assert.equal(res.headers.get('www-authenticate'), 'Bearer');
          assert.ok(!body.includes(TOKEN.slice(0, 10)), 'the token is not echoed');
        }
      }
    }
    // The live view too.
    for (const path of ['/live', `/live?token=${TOKEN.slice(0, -1)}`, `/live?tok=${TOKEN}`]) {
      const text = await raw(d.url, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
        + 'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
      assert.equal(statusOf(text), 401, `${path}: ${text}`);
    }
    // And the open ones really are open.
    assert.equal((await fetch(d.url + '/healthz')).status, 200);
    assert.equal((await fetch(d.url + '/')).status, 200);
    const help = await fetch(d.url + '/api/v1/token-help');
    assert.equal(help.status, 200);
    const text = await help.text();
    assert.deepEqual(JSON.parse(text), { auth: true, source: 'given' }, 'a given token: no file to tell of');
    assert.ok(!text.includes(TOKEN) && !text.includes(VIEW), 'never a token');
  });

  test('path tricks, other methods and query tokens never reach a protected route', async () => {
    const head = (method, target, extra = '') => `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}Content-Length: 0\r\n`
      + `${extra.includes('keep') ? '' : 'Connection: close\r\n'}\r\n`;
    const tricks = [
      '//api/v1/tools', '/api/v1//tools', '/api/v1/./tools', '/api/v1/tools/../tools', '/API/V1/TOOLS',
      '/api/v1/%74ools', '/api/v1/tools%00', '/api/v1/tools%2f', '/api/v1/tools.', '/api/v1/tools/',
      '/metrics/', '/metrics.', '/metrics%20', '/metrics;x', '/Metrics', '/healthz/../metrics', '/healthz%00/../metrics',
      '/static/../metrics', '/static/%2e%2e/metrics', '/static/..%2fmetrics', '/./metrics', '/%2fmetrics',
      `/api/v1/tools?token=${TOKEN}`, `/metrics?access_token=${TOKEN}`, `/mcp?token=${TOKEN}`,
      `/api/v1/recordings/..%2f..%2ftoken`, '/api/v1/recordings/../../token', '/api/v1/events#x',
      `http://127.0.0.1/metrics`, '*', 'metrics',
    ];
    for (const target of tricks) {
      for (const method of ['GET', 'HEAD', 'POST', 'OPTIONS', 'PUT', 'TRACE', 'CONNECT', 'PROPFIND']) {
        const text = await raw(d.url, head(method, target));
        const status = statusOf(text);
        if (target.startsWith('/healthz%00') && (method === 'GET' || method === 'HEAD')) continue;
        assert.ok(status >= 400 && status !== 500, `${method} ${target}: ${text.slice(0, 300)}`);
        // (A NUL ends the path: "/healthz%00/../metrics" is /healthz, which is public.)
        assert.ok(!/deskd_http_requests_total|"inputSchema"|"jsonrpc":"2.0","result"/.test(text), `${method} ${target} leaked: ${text.slice(0, 300)}`);
        assert.ok(!text.includes(TOKEN.slice(0, 10)), 'the token is not echoed');
      }
    }
    // A CORS preflight carries no token: it never runs a handler.
    const pre = await raw(d.url, head('OPTIONS', '/api/v1/tools/click',
      `Origin: ${d.url}\r\nAccess-Control-Request-Method: POST\r\n`));
    assert.equal(statusOf(pre), 204);
    // OPTIONS without Access-Control-Request-Method is an ordinary request: 401.
    assert.equal(statusOf(await raw(d.url, head('OPTIONS', '/api/v1/tools', `Origin: ${d.url}\r\n`))), 401);
    // A WebSocket upgrade on another path, or after a request on the same connection.
    const upgrade = (p) => `GET ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
      + `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`;
    for (const p of ['/metrics', '/live/', '//live', '/live/../metrics', '/%6cive', '/api/v1/events']) {
      const text = await raw(d.url, upgrade(p));
      assert.equal(statusOf(text), 404, `upgrade on ${p}: ${text}`);
    }
    const reused = await raw(d.url, head('GET', '/healthz', 'Connection: keep-alive\r\n') + upgrade('/live'), { untilClose: true });
    const parts = reused.split(/(?=HTTP\/1\.1 )/);
    assert.equal(statusOf(parts[0]), 200);
    assert.equal(statusOf(parts[1]), 400, reused);
    assert.ok(!reused.includes('101 Switching'), 'never upgraded on a reused connection');
  });

  test('Host and Origin: rebinding forms, trailing dots, "null" and other ports are refused', async () => {
    const port = new URL(d.url).port;
    const get = (host, origin) => raw(d.url, `GET /api/v1/tools HTTP/1.1\r\n${host === null ? '' : `Host: ${host}\r\n`}`
      + `${origin ? `Origin: ${origin}\r\n` : ''}Authorization: Bearer ${TOKEN}\r\n\r\n`);
    for (const host of ['localhost.', `localhost.:${port}`, 'evil.example', `127.0.0.1.nip.io:${port}`, '[::ffff:127.0.0.1]',
      '[0:0:0:0:0:0:0:1]', '::1', '127.1', '2130706433', '0x7f000001', `127.0.0.1:${port}@evil.example`, '', 'localhost:0x50',
      'localhost localhost', `${'a'.repeat(300)}`]) {
      assert.equal(statusOf(await get(host)), 403, `Host: ${host}`);
    }
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, 'LOCALHOST']) {
      assert.equal(statusOf(await get(host)), 200, `Host: ${host}`);
    }
    for (const origin of ['null', 'http://evil.example', `http://127.0.0.1:${Number(port) + 1}`, `https://127.0.0.1:${port}.evil.example`,
      `http://localhost.:${port}`, `http://127.0.0.1:${port}@evil.example`, 'file://', `http://[::1]:${Number(port) + 1}`, `ws://127.0.0.1:${port}`]) {
      assert.equal(statusOf(await get(`127.0.0.1:${port}`, origin)), 403, `Origin: ${origin}`);
      const ws = await raw(d.url, `GET /live?token=${TOKEN} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nOrigin: ${origin}\r\n`
        + 'Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
      assert.equal(statusOf(ws), 403, `live Origin: ${origin}`);
    }
  });

  test('the view token gets 403 forbidden from every acting tool, over REST and MCP, and nothing happens', async () => {
    const view = { authorization: `Bearer ${VIEW}` };
    const { tools: list } = await (await fetch(d.url + '/api/v1/tools', { headers: view })).json();
    const acting = list.filter((t) => !(t.annotations && t.annotations.readOnlyHint));
    assert.ok(acting.length >= 10, `acting tools: ${acting.map((t) => t.name)}`);
    const pointer = async () => (await d.tool('computer_cursor_position', {})).body.structuredContent;
    const before = await pointer();
    const eventsBefore = fixture.state().events.length;

    for (const tool of acting) {
      const args = plausibleArgs(tool, fixture.window);
      const r = await fetch(`${d.url}/api/v1/tools/${tool.name}`, { method: 'POST',
        headers: { ...view, 'content-type': 'application/json' }, body: JSON.stringify(args) });
      const body = await r.json();
      assert.equal(r.status, 403, `${tool.name} ${JSON.stringify(args)}: ${JSON.stringify(body)}`);
      assert.equal(body.error.code, 'forbidden', tool.name);
    }

    // MCP: a session opened with the view token.
    const mcpHeaders = { ...view, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(d.url + '/mcp', { method: 'POST', headers: mcpHeaders, body: JSON.stringify({ jsonrpc: '2.0', id: 1,
      method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'audit', version: '1' } } }) });
    assert.equal(init.status, 200);
    const sid = init.headers.get('mcp-session-id');
    await init.text();
    const h = { ...mcpHeaders, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
    await (await fetch(d.url + '/mcp', { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
    const mcpTools = (await mcpMessages(await fetch(d.url + '/mcp', { method: 'POST', headers: h,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) })))[0].result.tools;
    let id = 3;
    for (const tool of mcpTools.filter((t) => !(t.annotations && t.annotations.readOnlyHint))) {
      const args = plausibleArgs(tool, fixture.window);
      const [msg] = await mcpMessages(await fetch(d.url + '/mcp', { method: 'POST', headers: h,
        body: JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: tool.name, arguments: args } }) }));
      const text = JSON.stringify(msg);
      assert.ok(msg.error || (msg.result && msg.result.isError), `${tool.name}: ${text}`);
      assert.match(text, /forbidden|view token/i, tool.name);
    }

    // Nothing moved, nothing was typed or clicked, nothing is recording.
    assert.deepEqual(await pointer(), before, 'the pointer did not move');
    await sleep(200);
    const events = fixture.state().events.slice(eventsBefore).filter((e) => e.type !== 'expose' && e.type !== 'configure');
    assert.deepEqual(events, [], 'the fixture received no input');
    assert.equal(fixture.state().text, '', 'nothing was typed');
    const { recordings: recs } = await (await d.fetch('/api/v1/recordings')).json();
    assert.deepEqual(recs.filter((r) => r.state !== 'finished' && r.status !== 'finished'), [], 'nothing records');
    assert.ok(!existsSync('/tmp/deskd-security-should-not-exist.mp4'));

    // The full token does act (so the checks above can fail).
    const click = 'computer_click';
    assert.equal((await d.tool(click, { x: 20, y: 20 })).status, 200);
    await fixture.waitFor((s) => s.events.some((e) => e.type === 'button_press'), { timeout: 3000 });
  });

  test('live view: the view token watches, and no message acts', async () => {
    const ws = new WebSocket(d.url.replace('http', 'ws') + '/live', ['deskd.live', `bearer.${VIEW}`]);
    const msgs = [];
    ws.on('message', (data, bin) => { if (!bin) msgs.push(JSON.parse(data.toString())); });
    await new Promise((res, rej) => { ws.on('open', res); ws.on('error', rej); });
    await waitUntil(() => msgs.find((m) => m.type === 'hello'), { what: 'hello' });
    assert.equal(msgs.find((m) => m.type === 'hello').role, 'view');
    const eventsBefore = fixture.state().events.length;
    for (const m of [{ type: 'click', x: 20, y: 20 }, { type: 'tool', name: 'click', args: { x: 20, y: 20 } },
      { type: 'call', tool: 'type_text', arguments: { text: 'x' } }, { type: 'key', key: 'a', down: true },
      { type: 'take', force: true }, { type: 'button', x: 20, y: 20, button: 1, down: true }]) ws.send(JSON.stringify(m));
    await waitUntil(() => msgs.filter((m) => m.type === 'error').length >= 6, { what: 'six errors' });
    // Unknown messages are bad_message; the control messages (docs/CONTROL.md) forbidden.
    assert.deepEqual(msgs.filter((m) => m.type === 'error').map((m) => m.code),
      ['bad_message', 'bad_message', 'bad_message', 'forbidden', 'forbidden', 'forbidden']);
    ws.close();
    await sleep(100);
    assert.equal(fixture.state().events.length, eventsBefore, 'no input reached the fixture');
  });

  test('unauthenticated requests with made-up methods do not mint /metrics series', async () => {
    for (let i = 0; i < 30; i++) {
      const text = await raw(d.url, `M${i}XYZ /api/v1/tools HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n`);
      assert.ok(statusOf(text) >= 400, text);
    }
    const metrics = await (await d.fetch('/metrics')).text();
    assert.ok(!/method="M\d+XYZ"/.test(metrics), 'no series per made-up method');
    assert.match(metrics, /deskd_http_requests_total\{[^}]*method="other"/);
  });

  test('one request cannot make activity events huge (kept in history, sent to every viewer)', async () => {
    const res = await fetch(d.url + '/api/v1/events', { headers: { authorization: `Bearer ${VIEW}` } });
    const reader = res.body.getReader();
    let text = '';
    const marker = 'huge-' + randomBytes(4).toString('hex');
    // A big key, many members, deep nesting: 850 KB of arguments from the
    // view token (--max-body is 1 MiB: 4 MB get 413 before any event).
    const args = { [marker + 'k'.repeat(200 << 10)]: 1, text: 'x'.repeat(200 << 10) };
    for (let i = 0; i < 200; i++) args[`${marker}-${i}`] = 'v'.repeat(1000);
    let nest = { [marker]: 1 };
    for (let i = 0; i < 8; i++) nest = { a: nest, b: Array.from({ length: 100 }, () => ({ c: 'x'.repeat(300) })) };
    args.nest = nest;
    assert.ok(JSON.stringify(args).length < 1 << 20);
    const r = await fetch(`${d.url}/api/v1/tools/computer_type`, { method: 'POST',
      headers: { authorization: `Bearer ${VIEW}`, 'content-type': 'application/json' }, body: JSON.stringify(args) });
    assert.equal(r.status, 403);
    await r.text();
    const dec = new TextDecoder();
    while (!(text.includes(marker) && /"status":"forbidden"[^\n]*\n\n/.test(text.slice(text.indexOf(marker))))) {
      const { value, done } = await reader.read();
      if (done) break;
      text += dec.decode(value);
    }
    reader.cancel();
    const events = text.split('\n').filter((l) => l.startsWith('data:') && l.includes('computer_type'));
    assert.ok(events.length >= 2, 'the start and end events arrived');
    for (const e of events) assert.ok(e.length < 256 * 1024, `an event of ${e.length} bytes`);
  });

  test('recording ids are names, never paths', async () => {
    for (const id of ['..', '.', '../token', '..%2ftoken', '%2e%2e', 'a/b', 'token', '.hidden', '%00', 'x'.repeat(300)]) {
      const r = await d.fetch('/api/v1/recordings/' + id);
      const body = await r.text();
      assert.equal(r.status, 404, `${id}: ${body}`);
      assert.ok(!body.includes(TOKEN), 'never the token file');
    }
  });

  test('the view token cannot write files with screenshot "out"', async () => {
    const out = join(d.dataDir, `view-${Date.now()}.png`);
    const r = await fetch(`${d.url}/api/v1/tools/screenshot`, { method: 'POST',
      headers: { authorization: `Bearer ${VIEW}`, 'content-type': 'application/json' }, body: JSON.stringify({ out }) });
    await r.text();
    assert.ok(!existsSync(out), 'the view token wrote a file');
    assert.equal(r.status, 403);
  });

  test('the view token cannot end an MCP session the full token opened', async () => {
    const h = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(d.url + '/mcp', { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', id: 1,
      method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'agent', version: '1' } } }) });
    const sid = init.headers.get('mcp-session-id');
    await init.text();
    // The view token sees session ids in the activity events; it tries to end this one.
    const del = await fetch(d.url + '/mcp', { method: 'DELETE', headers: { authorization: `Bearer ${VIEW}`, 'mcp-session-id': sid,
      'mcp-protocol-version': '2025-11-25' } });
    await del.text();
    const list = await fetch(d.url + '/mcp', { method: 'POST', headers: { ...h, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
    await list.text();
    assert.equal(list.status, 200, 'the agent\'s session survived');
    assert.equal(del.status, 403);
  });

  // Last: everything above ran with --log-level debug.
  test('the tokens never appear in the log (debug level) or in error bodies', async () => {
    // A few more ways to present them wrongly.
    await raw(d.url, `GET /live?token=${TOKEN}x HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
      + `Sec-WebSocket-Protocol: deskd.live, bearer.${VIEW}x\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
    await raw(d.url, `GET /metrics?token=${TOKEN} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${VIEW}\r\n\r\n`);
    await raw(d.url, `POST /api/v1/tools/${TOKEN} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${VIEW}\r\nContent-Length: 2\r\n\r\n{}`);
    const ws = new WebSocket(`${d.url.replace('http', 'ws')}/live?token=${encodeURIComponent(TOKEN)}`);
    await new Promise((res) => ws.on('message', res));
    ws.close();
    await sleep(200);
    const log = d.log.join('');
    // The banner prints only a token this run generated (DESIGN.md section
    // 3); this one came from --token: nowhere in the log, the banner included.
    const lines = log.split('\n');
    for (const secret of [TOKEN, VIEW, TOKEN.slice(5, 25), VIEW.slice(5, 25)]) {
      const hit = lines.find((l) => l.includes(secret));
      assert.equal(hit, undefined, `the log has a token: ${hit}`);
    }
    assert.ok(/debug/.test(log), 'the log is at debug level');
  });
});

/** The environment for a deskd started by hand: no DISPLAY, no DESKD_*. */
function cleanEnv() {
  const env = { ...process.env };
  delete env.DISPLAY;
  for (const k of Object.keys(env)) if (k.startsWith('DESKD_')) delete env[k];
  return env;
}

// Each with its own deskd: run side by side.
describe('own instances', { concurrency: true }, () => {
  test('the banner prints a token only when this run generated it; else where it is and how to read it', async (t) => {
    const x = await startXvfb();
    t.after(() => x.stop());
    const dir = tempDir('deskd-banner-');
    /** Run deskd with args until it is ready; its log, once stopped. */
    const run = async (name, args) => {
      const ready = join(dir, `${name}.ready.json`);
      const p = launch(`deskd(${name})`, DESKD_BIN, ['--listen', '127.0.0.1:0', '--ready-file', ready,
        '--display', x.display, ...args], { env: cleanEnv() });
      t.after(() => p.stop());
      await waitUntil(() => existsSync(ready), { timeout: 15000, what: `${name} ready file` });
      assert.equal((await p.stop()).code, 0);
      return p.log.join('');
    };
    const data = join(dir, 'data');
    // First start with this data dir: generated now, printed (the person who
    // started it is the one reading).
    const first = await run('first', ['--data-dir', data]);
    // The dashboard URL carries the person's token, the MCP line the agent's.
    const token = readFileSync(join(data, 'token'), 'utf8').trim();
    const person = readFileSync(join(data, 'person-token'), 'utf8').trim();
    assert.notEqual(person, token);
    assert.equal(statSync(join(data, 'person-token')).mode & 0o777, 0o600);
    assert.match(first, new RegExp(`Dashboard: http://127\\.0\\.0\\.1:\\d+/#token=${person} `));
    assert.ok(!first.includes(`#token=${token}`), first);
    assert.match(first, /Token: +generated now, saved in .*\/data\/token\n/);
    assert.match(first, /Person: +generated now, saved in .*\/data\/person-token\n/);
    assert.match(first, new RegExp(`--header "Authorization: Bearer ${token}"`));
    // Every later start: the saved token is not printed; the banner says where it is.
    const again = await run('again', ['--data-dir', data]);
    assert.ok(!again.includes(token), `the saved token is in the log:\n${again}`);
    assert.ok(!again.includes(person), `the saved person's token is in the log:\n${again}`);
    assert.ok(again.includes(`Person:    not printed; it is in ${data}/person-token (kept from an earlier run)`), again);
    assert.ok(!again.includes(token.slice(8, 24)));
    assert.ok(again.includes(`Token:     not printed; it is in ${data}/token (kept from an earlier run)`), again);
    assert.ok(again.includes(`read it with: cat ${data}/token`), again);
    assert.ok(again.includes(`--header "Authorization: Bearer $(cat ${data}/token)"`), again);
    assert.ok(again.includes('/#token=<person-token>'), again);
    // --token-file (a mounted secret): not printed either.
    const file = join(dir, 'secret');
    const secret = 'file-' + randomBytes(12).toString('hex');
    // Group-readable by our own group (a Kubernetes secret with fsGroup and
    // defaultMode 0440) is fine; readable by others gets a warning.
    writeFileSync(file, secret + '\n');
    chmodSync(file, 0o640);
    const fromFile = await run('file', ['--data-dir', join(dir, 'data2'), '--token-file', file]);
    assert.ok(!fromFile.includes(secret), fromFile);
    assert.ok(fromFile.includes(`it is in ${file} (given as a file)`), fromFile);
    assert.ok(!fromFile.includes('readable by others'), fromFile);
    chmodSync(file, 0o644);
    const open = await run('file-open', ['--data-dir', join(dir, 'data4'), '--token-file', file]);
    assert.match(open, /secret is readable by others \(mode 0644\)/);
    // --token: not printed, and nowhere else in the log.
    const given = 'given-' + randomBytes(12).toString('hex');
    const fromFlag = await run('flag', ['--data-dir', join(dir, 'data3'), '--token', given]);
    assert.ok(!fromFlag.includes(given), fromFlag);
    assert.match(fromFlag, /not printed; the one given with --token/);
  });

  test('the ready file is never written through a symlink planted at its temporary name', async (t) => {
    const x = await startXvfb();
    t.after(() => x.stop());
    const dir = tempDir('deskd-ready-');
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'precious\n');
    const ready = join(dir, 'ready.json');
    // exec keeps the shell's pid, so the planted name is deskd's "<ready>.tmp.<pid>".
    const p = launch('deskd(ready)', 'sh', ['-c', 'ln -s "$1" "$2.tmp.$$" && exec "$3" --listen 127.0.0.1:0 '
      + '--ready-file "$2" --data-dir "$4" --token ready-token-1 --display "$5"', 'sh', victim, ready, DESKD_BIN, dir, x.display],
    { env: cleanEnv(), needs: ['ln', DESKD_BIN] });
    t.after(() => p.stop());
    const info = await readyInfo(p, ready);
    assert.match(info.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n', 'the symlink target is untouched');
    const st = lstatSync(ready);
    assert.ok(st.isFile(), 'the ready file is a file, not the planted symlink');
    assert.equal(st.mode & 0o777, 0o600);
    assert.equal((await p.stop()).code, 0);
  });

  test('out of file descriptors: the acceptor neither spins nor floods the log, and recovers', async (t) => {
    const x = await startXvfb();
    t.after(() => x.stop());
    const dir = tempDir('deskd-fds-');
    const ready = join(dir, 'ready.json');
    const p = launch('deskd(fds)', 'sh', ['-c', 'ulimit -n 96 && exec "$1" --listen 127.0.0.1:0 --ready-file "$2" '
      + '--data-dir "$3" --token fd-token-1 --display "$4"', 'sh', DESKD_BIN, ready, dir, x.display], { env: cleanEnv(), needs: [DESKD_BIN] });
    t.after(() => p.stop());
    const { url } = await readyInfo(p, ready);
    const { port } = new URL(url);
    const cpu = () => {
      const f = readFileSync(`/proc/${p.proc.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return (Number(f[11]) + Number(f[12])) * 10;   // utime + stime, ms (100 Hz)
    };
    // Silent clients: each holds a descriptor until deskd gives up on it.
    const sockets = [];
    for (let i = 0; i < 120; i++) {
      sockets.push(await new Promise((res) => {
        const s = net.connect(Number(port), '127.0.0.1', () => res(s));
        s.on('error', () => res(s));
      }));
    }
    await sleep(300);
    const logBefore = p.log.join('').split('\n').length;
    const c0 = cpu();
    await sleep(1000);
    const used = cpu() - c0;
    const lines = p.log.join('').split('\n').length - logBefore;
    for (const s of sockets) s.destroy();
    assert.ok(used < 400, `the acceptor used ${used} ms of CPU in 1 s while out of descriptors`);
    assert.ok(lines < 20, `${lines} log lines in 1 s while out of descriptors`);
    // Descriptors come back: deskd serves again.
    await waitUntil(async () => (await fetch(url + '/healthz')).status === 200, { timeout: 5000, what: 'healthz after' });
    assert.equal((await p.stop()).code, 0);
  });

  test('the dashboard never puts the token in a URL, whatever characters it has', async (t) => {
    const { chromium } = await import('playwright-core');
    const chromiumBin = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
    need(chromiumBin);   // spawns: chromium
    const x = await startXvfb();
    t.after(() => x.stop());
    // Characters a WebSocket subprotocol cannot carry as they are.
    const token = `t/k(1)=${randomBytes(6).toString('hex')}"%41,x`;
    const d = await startDeskd({ display: x.display, token });
    t.after(() => d.stop());
    const browser = await chromium.launch({ executablePath: chromiumBin,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
    t.after(() => browser.close());
    const page = await browser.newPage();
    const urls = [];
    page.on('request', (r) => urls.push(r.url()));
    page.on('websocket', (ws) => urls.push(ws.url()));
    await page.goto(`${d.url}/#token=${encodeURIComponent(token)}`);
    await page.waitForFunction(() => document.querySelector('#conn').dataset.state === 'live', null, { timeout: 10000 });
    await page.waitForFunction(() => document.querySelectorAll('#windows li').length > 0 || document.querySelector('#screen').width > 0,
      null, { timeout: 10000 });
    assert.ok(urls.some((u) => u.includes('/live')), `the live view connected: ${urls}`);
    assert.ok(urls.some((u) => u.includes('/api/v1/')), 'REST calls were made');
    for (const u of urls) {
      const noFragment = u.split('#')[0];
      for (const form of [token, encodeURIComponent(token), token.slice(0, 12), encodeURIComponent(token.slice(0, 12))]) {
        assert.ok(!noFragment.includes(form), `the token is in a URL: ${u}`);
      }
      assert.ok(!/[?&]token=/.test(noFragment), `a token parameter: ${u}`);
    }
    assert.equal(new URL(page.url()).hash, '', 'the token left the address bar');
  });

  test('event streams that never read are dropped before they add up to all memory', async (t) => {
    const x = await startXvfb();
    t.after(() => x.stop());
    // All streams together may hold 32 MB here (256 MB by default).
    const d = await startDeskd({ display: x.display, token: TOKEN, args: ['--view-token', VIEW, '--tools', 'both'],
      env: { DESKD_STREAMS_MAX_BUFFERED: String(32 << 20) } });
    t.after(() => d.stop());
    // Subscribers that never read (each stays under its own 64 MB limit).
    const { port } = new URL(d.url);
    const idle = [];
    for (let i = 0; i < 8; i++) {
      const s = net.connect(Number(port), '127.0.0.1');
      s.write(`GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${VIEW}\r\n\r\n`);
      s.pause();
      s.on('error', () => {});
      idle.push(s);
    }
    await sleep(200);
    const args = {};
    for (let i = 0; i < 50; i++) {
      args[`${i}-`.padEnd(200, 'k')] = Object.fromEntries(Array.from({ length: 10 }, (_, j) => [`${j}-`.padEnd(200, 'k'), 'v'.repeat(200)]));
    }
    const body = JSON.stringify(args);
    const dropped = () => (d.log.join('').match(/fell \d+ bytes behind; closing it/g) || []).length;
    let calls = 0;
    try {
      for (; calls < 300 && dropped() === 0; calls += 4) {
        await Promise.all([0, 1, 2, 3].map(async () => {
          const r = await fetch(`${d.url}/api/v1/tools/computer_type`, { method: 'POST',
            headers: { authorization: `Bearer ${VIEW}`, 'content-type': 'application/json' }, body });
          await r.text();
        }));
      }
      assert.ok(dropped() > 0, `no idle stream was dropped after ${calls} calls`);
    } finally {
      for (const s of idle) s.destroy();
    }
    // Once they are gone, a reader that reads gets the history and new events.
    await sleep(300);
    {
      const res = await fetch(d.url + '/api/v1/events', { headers: { authorization: `Bearer ${VIEW}` } });
      const reader = res.body.getReader();
      await d.tool('computer_cursor_position', {});
      let text = '';
      while (!text.includes('computer_cursor_position')) text += new TextDecoder().decode((await reader.read()).value);
      reader.cancel();
    }
    assert.equal((await d.stop()).code, 0);
  });
});
