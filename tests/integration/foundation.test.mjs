// The one port: HTTP keep-alive and WebSocket upgrades side by side, the
// acceptor under load and against silent or hostile clients, and the security
// checks (token, view token, Host, Origin, body limit) on REST and /live.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { DESKD_BIN, desktop, launch, startDeskd, startXvfb, tempDir, waitUntil, sleep } from './lib/harness.mjs';

const VIEW = 'view-' + randomBytes(8).toString('hex');

/** A raw HTTP request on a fresh TCP connection; resolves with everything the
 *  server sent before it closed (or timeoutMs passed). */
function raw(url, bytes, { timeoutMs = 3000, end = false } = {}) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const chunks = [];
    const s = net.connect(Number(port), hostname, () => {
      s.write(bytes);
      if (end) s.end();
    });
    const done = () => { clearTimeout(t); s.destroy(); resolve(Buffer.concat(chunks).toString('latin1')); };
    const t = setTimeout(done, timeoutMs);
    s.on('data', (d) => chunks.push(d));
    s.on('close', done);
    s.on('error', done);
  });
}

/** Open a WebSocket; resolves { ws, hello } or { status } when refused. */
function openLive(url, { path = '/live', protocols, origin, headers } = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + path, protocols, { origin, headers });
    const t = setTimeout(() => { ws.terminate(); reject(new Error('WebSocket timed out')); }, 5000);
    ws.on('unexpected-response', (req, res) => {
      clearTimeout(t);
      resolve({ status: res.statusCode, headers: res.headers });
      req.destroy();
    });
    ws.on('message', (data, isBinary) => {
      clearTimeout(t);
      resolve({ ws, hello: isBinary ? null : JSON.parse(data.toString()) });
    });
    ws.on('error', (e) => { clearTimeout(t); reject(e); });
  });
}

describe('one port', () => {
  let x, d;
  before(async () => {
    x = await startXvfb();
    d = await startDeskd({ display: x.display, args: ['--view-token', VIEW, '--allow-origin', 'https://app.example.com'] });
  });
  after(async () => {
    // A clean exit also means no leaks or sanitizer errors under ASan.
    const r = d && await d.stop();
    if (x) await x.stop();
    if (r) assert.equal(r.code, 0, 'deskd exits 0 on SIGTERM');
  });

  test('keep-alive: several requests share one connection', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set();
    for (let i = 0; i < 5; i++) {
      const body = await new Promise((resolve, reject) => {
        const req = http.get(d.url + '/api/v1/tools', { agent, headers: d.headers() }, (res) => {
          assert.equal(res.statusCode, 200);
          assert.notEqual(res.headers.connection, 'close');
          let b = '';
          res.on('data', (c) => { b += c; });
          res.on('end', () => resolve(b));
        });
        req.on('socket', (s) => sockets.add(s));
        req.on('error', reject);
      });
      assert.ok(Array.isArray(JSON.parse(body).tools));
    }
    agent.destroy();
    assert.equal(sockets.size, 1, 'all five requests used one TCP connection');
  });

  test('WebSocket upgrade on /live gets the hello, with the deskd.live subprotocol', async () => {
    const r = await openLive(d.url, { protocols: ['deskd.live', `bearer.${d.token}`] });
    assert.ok(r.ws, `refused with ${r.status}`);
    assert.equal(r.ws.protocol, 'deskd.live');
    assert.equal(r.hello.type, 'hello');
    assert.equal(typeof r.hello.screen.width, 'number');
    assert.equal(typeof r.hello.screen.height, 'number');
    assert.ok(Array.isArray(r.hello.windows));
    r.ws.close();
    const q = await openLive(d.url, { path: `/live?token=${encodeURIComponent(d.token)}` });
    assert.equal(q.hello.type, 'hello');
    q.ws.close();
    const v = await openLive(d.url, { path: `/live?token=${VIEW}` });
    assert.equal(v.hello.type, 'hello', 'the view token may watch');
    v.ws.close();
  });

  test('50 WebSocket clients and 500 HTTP requests at once all complete', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const get = () => new Promise((resolve, reject) => {
      http.get(d.url + '/api/v1/tools', { agent, headers: d.headers() }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      }).on('error', reject);
    });
    const wsAll = Array.from({ length: 50 }, () => openLive(d.url, { protocols: ['deskd.live', `bearer.${d.token}`] }));
    const httpAll = Array.from({ length: 500 }, get);
    const [wss, statuses] = await Promise.all([Promise.all(wsAll), Promise.all(httpAll)]);
    agent.destroy();
    assert.equal(wss.filter((r) => r.hello && r.hello.type === 'hello').length, 50);
    assert.equal(statuses.filter((s) => s === 200).length, 500);
    for (const r of wss) r.ws.close();
  });

  test('a silent client does not delay others', async () => {
    const { port } = new URL(d.url);
    const silent = [];
    for (let i = 0; i < 3; i++) {
      const s = net.connect(Number(port), '127.0.0.1');
      await new Promise((r) => s.on('connect', r));
      silent.push(s);
    }
    // And one that stops in the middle of a WebSocket head.
    const partial = net.connect(Number(port), '127.0.0.1');
    await new Promise((r) => partial.on('connect', r));
    partial.write('GET /live HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n');
    await sleep(50);
    const t0 = performance.now();
    const r = await fetch(d.url + '/api/v1/tools', { headers: d.headers() });
    const ms = performance.now() - t0;
    assert.equal(r.status, 200);
    // A stalled acceptor would take the 5 s head deadline.
    assert.ok(ms < 900, `answered in ${ms.toFixed(0)} ms`);
    const w0 = performance.now();
    const ws = new WebSocket(d.url.replace(/^http/, 'ws') + '/live', ['deskd.live', `bearer.${d.token}`]);
    await new Promise((res, rej) => { ws.on('open', res); ws.on('error', rej); });
    const wms = performance.now() - w0;
    assert.ok(wms < 900, `WebSocket handshake in ${wms.toFixed(0)} ms`);
    ws.terminate();
    for (const s of [...silent, partial]) s.destroy();
  });

  test('no token, a wrong token, or a token in the query: 401 with WWW-Authenticate: Bearer', async () => {
    for (const [path, headers] of [
      ['/api/v1/tools', {}],
      ['/api/v1/tools', { authorization: 'Bearer wrong-token' }],
      ['/api/v1/tools', { authorization: `Basic ${Buffer.from('a:' + d.token).toString('base64')}` }],
      [`/api/v1/tools?token=${encodeURIComponent(d.token)}`, {}],
      ['/metrics', {}],
      ['/api/v1/events', {}],
    ]) {
      const r = await fetch(d.url + path, { headers });
      assert.equal(r.status, 401, `${path} ${JSON.stringify(headers)}`);
      assert.equal(r.headers.get('www-authenticate'), 'Bearer');
      const body = await r.json();
      assert.equal(body.error.code, 'unauthorized');
    }
    const ok = await fetch(d.url + '/api/v1/tools', { headers: { authorization: `bearer   ${d.token}` } });
    assert.equal(ok.status, 200, 'the scheme is case-insensitive');
  });

  test('view token: may list tools, may not act or read metrics', async (t) => {
    const view = { authorization: `Bearer ${VIEW}` };
    const r = await fetch(d.url + '/api/v1/tools', { headers: view });
    assert.equal(r.status, 200);
    const { tools } = await r.json();
    assert.ok(Array.isArray(tools), 'GET /api/v1/tools is {tools: [...]}, the tools/list result');
    const m = await fetch(d.url + '/metrics', { headers: view });
    assert.equal(m.status, 403);
    const acting = tools.find((x) => x.annotations && x.annotations.readOnlyHint === false);
    if (!acting) {
      t.skip('no tool with readOnlyHint false is registered yet (tool tables land with other helpers)');
      return;
    }
    const c = await fetch(d.url + `/api/v1/tools/${acting.name}`, { method: 'POST', headers: { ...view, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(c.status, 403);
    assert.equal((await c.json()).error.code, 'forbidden');
  });

  test('tool calls: unknown tool 404, malformed JSON 400, non-object 400', async () => {
    let r = await d.tool('no_such_tool_xyz', {});
    assert.equal(r.status, 404);
    assert.equal(r.body.error.code, 'unknown_tool');
    for (const body of ['{"a":', '[1,2]', '"x"']) {
      const x = await d.fetch('/api/v1/tools/no_such_tool_xyz', { method: 'POST', body });
      assert.equal(x.status, 400, body);
      assert.equal((await x.json()).error.code, 'bad_arguments');
    }
    r = await d.fetch('/api/v1/screenshot?region=1,2,3');
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.code, 'bad_arguments');
    r = await d.fetch('/api/v1/recordings/does-not-exist');
    assert.equal(r.status, 404);
    r = await d.fetch('/api/v1/recordings');
    assert.equal(r.status, 200);
    assert.ok(Array.isArray((await r.json()).recordings), 'GET /api/v1/recordings is {recordings: [...]}');
    r = await d.fetch('/api/v1/nothing-here');
    assert.equal(r.status, 404);
    r = await d.fetch('/api/v1/tools', { method: 'DELETE' });
    assert.equal(r.status, 405);
  });

  test('bad Origin and bad Host: 403; our own origins pass', async () => {
    const { port } = new URL(d.url);
    for (const origin of ['http://evil.example', `http://127.0.0.1:${Number(port) + 1}`, 'null']) {
      const r = await fetch(d.url + '/api/v1/tools', { headers: d.headers({ origin }) });
      assert.equal(r.status, 403, origin);
      assert.equal((await r.json()).error.code, 'forbidden');
    }
    const h = await fetch(d.url + '/healthz', { headers: { origin: 'http://evil.example' } });
    assert.equal(h.status, 403, 'Origin is checked before anything else, even on /healthz');
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]) {
      const r = await fetch(d.url + '/api/v1/tools', { headers: d.headers({ origin }) });
      assert.equal(r.status, 200, origin);
    }
    // Host: node's fetch will not send a fake Host, so use raw requests.
    const req = (host) => raw(d.url, `GET /api/v1/tools HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${d.token}\r\nConnection: close\r\n\r\n`);
    for (const host of ['evil.example', `evil.example:${port}`, '127.0.0.2', 'localhost.evil.example']) {
      const res = await req(host);
      assert.match(res, /^HTTP\/1\.1 403/, host);
    }
    for (const host of [`localhost:${port}`, 'localhost:9999', '127.0.0.1', `[::1]:${port}`, 'LOCALHOST']) {
      const res = await req(host);
      assert.match(res, /^HTTP\/1\.1 200/, host);
    }
  });

  test('--allow-origin: CORS preflight and headers for that origin only', async () => {
    const pre = await fetch(d.url + '/mcp', { method: 'OPTIONS', headers: { origin: 'https://app.example.com',
      'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), 'https://app.example.com');
    assert.match(pre.headers.get('access-control-allow-headers'), /Authorization/);
    assert.match(pre.headers.get('access-control-allow-methods'), /POST/);
    const r = await fetch(d.url + '/api/v1/tools', { headers: d.headers({ origin: 'https://app.example.com' }) });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('access-control-allow-origin'), 'https://app.example.com');
    assert.match(r.headers.get('access-control-expose-headers'), /Mcp-Session-Id/);
    const u = await fetch(d.url + '/api/v1/tools', { headers: { origin: 'https://app.example.com' } });
    assert.equal(u.status, 401);
    assert.equal(u.headers.get('access-control-allow-origin'), 'https://app.example.com', 'the page can read the 401');
    const bad = await fetch(d.url + '/mcp', { method: 'OPTIONS', headers: { origin: 'https://other.example.com', 'access-control-request-method': 'POST' } });
    assert.equal(bad.status, 403);
    assert.equal(bad.headers.get('access-control-allow-origin'), null);
    const none = await fetch(d.url + '/api/v1/tools', { headers: d.headers() });
    assert.equal(none.headers.get('access-control-allow-origin'), null, 'no CORS headers without an Origin');
  });

  test('WebSocket with a bad token, a bad Origin, a bad Host or another path is refused', async () => {
    const { port } = new URL(d.url);
    let r = await openLive(d.url, { protocols: ['deskd.live', 'bearer.wrong'] });
    assert.equal(r.status, 401);
    r = await openLive(d.url);
    assert.equal(r.status, 401);
    r = await openLive(d.url, { path: `/live?token=${d.token}`, origin: 'http://evil.example' });
    assert.equal(r.status, 403);
    r = await openLive(d.url, { path: `/live?token=${d.token}`, headers: { host: 'evil.example' } });
    assert.equal(r.status, 403);
    r = await openLive(d.url, { path: `/elsewhere?token=${d.token}` });
    assert.equal(r.status, 404);
    r = await openLive(d.url, { path: `/live?token=${d.token}`, origin: `http://localhost:${port}` });
    assert.equal(r.hello.type, 'hello', 'our own origin may open the live view');
    r.ws.close();
  });

  test('garbage never kills the server', async () => {
    const answers = [];
    answers.push(await raw(d.url, randomBytes(4096), { end: true }));
    answers.push(await raw(d.url, Buffer.concat([Buffer.from('GET /'), randomBytes(3000), Buffer.from('\r\n\r\n')])));
    answers.push(await raw(d.url, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: ${'a'.repeat(200000)}\r\n\r\n`));
    answers.push(await raw(d.url, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n`, { end: true }));
    answers.push(await raw(d.url, `GET /live HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n`));
    answers.push(await raw(d.url, `POST /api/v1/tools/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n`));
    answers.push(await raw(d.url, `\r\n\r\n\r\n`, { end: true }));
    for (const a of answers) {
      // Either a 4xx answer or a closed connection, never a 2xx or 5xx.
      if (a.length) assert.match(a, /^HTTP\/1\.[01] 4\d\d/, JSON.stringify(a.slice(0, 80)));
    }
    const r = await fetch(d.url + '/healthz');
    assert.ok(r.status === 200 || r.status === 503);
    const t = await fetch(d.url + '/api/v1/tools', { headers: d.headers() });
    assert.equal(t.status, 200);
  });

  test('an Upgrade on a reused keep-alive connection gets 400 and Connection: close', async () => {
    const first = `GET /api/v1/tools HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${d.token}\r\n\r\n`;
    const second = `GET /live?token=${d.token} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
      + `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`;
    const { port } = new URL(d.url);
    const text = await new Promise((resolve) => {
      let buf = '';
      const s = net.connect(Number(port), '127.0.0.1', () => s.write(first));
      s.on('data', (c) => {
        const was = buf.length;
        buf += c.toString('latin1');
        if (!was) setTimeout(() => s.write(second), 20);
      });
      s.on('close', () => resolve(buf));
      setTimeout(() => { s.destroy(); resolve(buf); }, 3000);
    });
    const parts = text.split(/(?=HTTP\/1\.1 )/);
    assert.equal(parts.length, 2, text.slice(0, 300));
    assert.match(parts[0], /^HTTP\/1\.1 200/);
    assert.match(parts[1], /^HTTP\/1\.1 400/);
    assert.match(parts[1], /connection: close/i);
  });

  test('/healthz answers without a token', async (t) => {
    const r = await fetch(d.url + '/healthz');
    if (r.status === 503 && d.display === '') {
      t.skip('desktop/ is still the stub (no display): runs once the desktop lands');
      return;
    }
    assert.equal(r.status, 200);
    assert.equal((await r.text()).trim(), 'ok');
  });

  test('/metrics counts requests by route and status', async () => {
    await fetch(d.url + '/api/v1/tools');	// a 401
    const r = await d.fetch('/metrics');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/plain/);
    const text = await r.text();
    assert.match(text, /# TYPE deskd_http_requests_total counter/);
    assert.match(text, /deskd_http_requests_total\{route="\/api\/v1\/tools",method="GET",status="401"\} [1-9]/);
    assert.match(text, /deskd_http_request_duration_seconds_bucket\{route="\/api\/v1\/tools",le="\+Inf"\} [1-9]/);
    assert.match(text, /deskd_websocket_connections_total [1-9]/);
  });

  test('/api/v1/events is an SSE stream', async () => {
    const ac = new AbortController();
    const r = await d.fetch('/api/v1/events', { signal: ac.signal });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/event-stream/);
    const reader = r.body.getReader();
    const { value } = await reader.read();
    assert.match(Buffer.from(value).toString(), /^: /);
    ac.abort();
  });
});

describe('limits and startup', () => {
  test('a body over --max-body gets 413', async (t) => {
    const x = await startXvfb();
    t.after(() => x.stop());
    const d = await startDeskd({ display: x.display, args: ['--max-body', '1024'] });
    t.after(async () => assert.equal((await d.stop()).code, 0));
    let r = await d.fetch('/api/v1/tools/no_such_tool_xyz', { method: 'POST', body: JSON.stringify({ pad: 'x'.repeat(2000) }) });
    assert.equal(r.status, 413);
    assert.equal((await r.json()).error.code, 'payload_too_large');
    // Chunked, so the size is only known while reading.
    const { port } = new URL(d.url);
    const chunk = 'x'.repeat(600);
    const res = await raw(d.url, `POST /api/v1/tools/x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${d.token}\r\n`
      + `Transfer-Encoding: chunked\r\n\r\n258\r\n${chunk}\r\n258\r\n${chunk}\r\n0\r\n\r\n`);
    assert.match(res, /^HTTP\/1\.1 413/);
    r = await d.fetch('/api/v1/tools/no_such_tool_xyz', { method: 'POST', body: '{}' });
    assert.equal(r.status, 404, 'a small body still passes');
    assert.ok(port);
  });

  test('idle SSE streams: no busy loop, keepalive comments, dead clients noticed', async (t) => {
    const x = await startXvfb();
    t.after(() => x.stop());
    const d = await startDeskd({ display: x.display, env: { DESKD_SSE_KEEPALIVE_MS: '200' } });
    t.after(async () => assert.equal((await d.stop()).code, 0));
    const cpu = () => {
      const f = readFileSync(`/proc/${d.proc.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return Number(f[11]) + Number(f[12]);	// utime + stime, in ticks
    };
    const streams = [];
    for (let i = 0; i < 4; i++) {
      const ac = new AbortController();
      const r = await d.fetch('/api/v1/events', { signal: ac.signal });
      assert.equal(r.status, 200);
      streams.push({ ac, reader: r.body.getReader() });
    }
    const c0 = cpu();
    await sleep(1000);
    const used = cpu() - c0;
    assert.ok(used <= 8, `deskd used ${used} ticks in 1 s with 4 idle streams (busy-looping readers use 14+)`);
    let text = '';
    const dec = new TextDecoder();
    while (!text.includes(': keepalive')) {
      const { value, done } = await streams[0].reader.read();
      assert.ok(!done);
      text += dec.decode(value);
    }
    const open = async () => {
      const m = await (await d.fetch('/metrics')).text();
      const g = m.match(/^deskd_http_streams_open (\d+)/m);
      return g ? Number(g[1]) : -1;
    };
    assert.equal(await open(), 4);
    for (const s of streams) s.ac.abort();
    await waitUntil(async () => (await open()) === 0, { timeout: 3000, what: 'streams closed' });
  });

  test('--no-auth with a non-loopback listen address exits 2', () => {
    const r = spawnSync(DESKD_BIN, ['--listen', '0.0.0.0:0', '--no-auth'], { encoding: 'utf8', timeout: 5000 });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /loopback/);
  });

  test('a generated token is saved 0600 in the data dir and reused', async (t) => {
    const x = await startXvfb();
    t.after(() => x.stop());
    const dir = join(tempDir(), 'state', 'deskd');	// parents are created too
    const start = async () => {
      const ready = join(dir, '..', 'ready.json');
      const env = { ...process.env };
      delete env.DISPLAY;
      for (const k of Object.keys(env)) if (k.startsWith('DESKD_')) delete env[k];
      const p = launch('deskd', DESKD_BIN, ['--listen', '127.0.0.1:0', '--ready-file', ready, '--data-dir', dir, '--display', x.display], { env });
      const info = await waitUntil(() => existsSync(ready) && JSON.parse(readFileSync(ready, 'utf8')), { timeout: 15000, what: 'ready file' });
      writeFileSync(ready, '');
      return { p, url: info.url };
    };
    const a = await start();
    const file = join(dir, 'token');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    const token = readFileSync(file, 'utf8').trim();
    assert.match(token, /^[0-9a-f]{64}$/);
    let r = await fetch(a.url + '/api/v1/tools', { headers: { authorization: `Bearer ${token}` } });
    assert.equal(r.status, 200);
    assert.match(a.p.log.join(''), new RegExp(token), 'the token is printed at startup');
    assert.equal((await a.p.stop()).code, 0);
    const b = await start();
    t.after(async () => assert.equal((await b.p.stop()).code, 0));
    assert.equal(readFileSync(file, 'utf8').trim(), token);
    r = await fetch(b.url + '/api/v1/tools', { headers: { authorization: `Bearer ${token}` } });
    assert.equal(r.status, 200);
  });

  test('SIGTERM with an open event stream, a live view and a keep-alive connection exits 0 promptly', async (t) => {
    const x = await startXvfb();
    t.after(() => x.stop());
    const d = await startDeskd({ display: x.display });
    const ac = new AbortController();
    const r = await d.fetch('/api/v1/events', { signal: ac.signal });
    assert.equal(r.status, 200);
    const live = await openLive(d.url, { protocols: ['deskd.live', `bearer.${d.token}`] });
    assert.equal(live.hello.type, 'hello');
    const idle = net.connect(Number(new URL(d.url).port), '127.0.0.1');
    await new Promise((res) => idle.on('connect', res));
    const t0 = performance.now();
    const { code } = await d.stop('SIGTERM', 8000);
    assert.equal(code, 0);
    assert.ok(performance.now() - t0 < 3000, 'stopped within 3 s');
    ac.abort();
    idle.destroy();
    live.ws.terminate();
  });
});

describe('REST with the real tools', () => {
  test('screenshot bytes, windows, events, recordings with ranges', async (t) => {
    const { deskd: d, fixture } = await desktop(t, { fixture: { geometry: '320x200+40+30' }, deskdArgs: ['--view-token', VIEW] });
    const { tools } = await (await d.fetch('/api/v1/tools')).json();
    const names = tools.map((x) => x.name);
    for (const n of ['screenshot', 'windows', 'record_start', 'record_stop']) {
      if (!names.includes(n)) { t.skip(`tool ${n} is not registered yet`); return; }
    }

    // Activity events arrive on the SSE stream while a tool runs.
    const ac = new AbortController();
    const sse = await d.fetch('/api/v1/events', { signal: ac.signal });
    const reader = sse.body.getReader();
    let sseText = '';
    const pump = (async () => {
      const dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ done: true }));
        if (done) return;
        sseText += dec.decode(value);
      }
    })();

    let r = await d.fetch(`/api/v1/screenshot?window=${fixture.window}&format=png`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'image/png');
    assert.equal(r.headers.get('x-deskd-width'), '320');
    const png = Buffer.from(await r.arrayBuffer());
    assert.equal(png.subarray(1, 4).toString(), 'PNG');
    assert.equal(png.readUInt32BE(16), 320);
    assert.equal(png.readUInt32BE(20), 200);
    r = await d.fetch('/api/v1/screenshot?format=jpeg&max=640&quality=50&region=0,0,200,100');
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'image/jpeg');
    r = await d.fetch('/api/v1/screenshot?window=123456789');
    assert.equal(r.status, 404);
    assert.equal((await r.json()).error.code, 'window_not_found');

    r = await d.fetch('/api/v1/windows');
    assert.equal(r.status, 200);
    const wins = await r.json();
    const list = Array.isArray(wins) ? wins : wins.windows;
    assert.ok(list.some((w) => w.id === fixture.window), JSON.stringify(wins).slice(0, 300));

    await waitUntil(() => /"tool":"windows"[^\n]*"status":"ok"/.test(sseText) && sseText.includes('"source":"rest"'),
      { timeout: 3000, what: 'the windows call on /api/v1/events' });
    ac.abort();
    await pump;

    // The view token may not act.
    const acting = tools.find((x) => x.annotations && x.annotations.readOnlyHint === false);
    r = await fetch(d.url + `/api/v1/tools/${acting.name}`, { method: 'POST', headers: { authorization: `Bearer ${VIEW}` }, body: '{}' });
    assert.equal(r.status, 403);
    assert.equal((await r.json()).error.code, 'forbidden');

    // A recording, downloaded whole and by ranges.
    r = await d.fetch('/api/v1/tools/record_start', { method: 'POST', body: JSON.stringify({ window: fixture.window }) });
    assert.equal(r.status, 200, await r.clone().text());
    await sleep(700);
    r = await d.fetch('/api/v1/tools/record_stop', { method: 'POST', body: '{}' });
    assert.equal(r.status, 200);
    const stopped = (await r.json()).structuredContent;
    const file = readFileSync(stopped.path);
    r = await d.fetch('/api/v1/recordings');
    assert.ok((await r.json()).recordings.some((x) => x.id === stopped.id));
    r = await d.fetch(`/api/v1/recordings/${stopped.id}`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'video/mp4');
    assert.match(r.headers.get('content-disposition'), /attachment; filename=/);
    assert.equal(r.headers.get('accept-ranges'), 'bytes');
    assert.ok(Buffer.from(await r.arrayBuffer()).equals(file), 'the download is the published file');
    r = await d.fetch(`/api/v1/recordings/${stopped.id}`, { headers: { range: 'bytes=4-11' } });
    assert.equal(r.status, 206);
    assert.equal(r.headers.get('content-range'), `bytes 4-11/${file.length}`);
    assert.equal(Buffer.from(await r.arrayBuffer()).toString('latin1'), file.subarray(4, 12).toString('latin1'));
    r = await d.fetch(`/api/v1/recordings/${stopped.id}`, { headers: { range: 'bytes=-16' } });
    assert.equal(r.status, 206);
    assert.ok(Buffer.from(await r.arrayBuffer()).equals(file.subarray(file.length - 16)));
    r = await d.fetch(`/api/v1/recordings/${stopped.id}`, { headers: { range: `bytes=${file.length}-` } });
    assert.equal(r.status, 416);
    r = await d.fetch('/api/v1/recordings/..%2Fetc');
    assert.equal(r.status, 404);
  });
});
