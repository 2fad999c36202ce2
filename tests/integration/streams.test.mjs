// R3 (TRUST.md): long-lived streams and /live sockets count per role. A view
// token holding every stream it may get cannot lock out the agent's token,
// the person's or /healthz (on loopback every client shares 127.0.0.1 and
// its --max-connections-per-ip), and a closed stream frees its connection
// at once. Bounded: 140 streams, 40 sockets, to 127.0.0.1 only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { desktop, sleep, waitUntil } from './lib/harness.mjs';
import { openLive } from './lib/live.mjs';

const VIEW = 'view-streams-' + Math.random().toString(36).slice(2);

/** A raw subscriptions/listen POST (MCP 2026-07-28) kept open; resolves with
 *  { sock, status } once the status line is in. */
function listen(url, token) {
  const { port } = new URL(url);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: {
    notifications: { toolsListChanged: true },
    _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } });
  return new Promise((resolve) => {
    const sock = net.connect(Number(port), '127.0.0.1');
    let head = '';
    const done = (status) => { sock.removeAllListeners('data'); resolve({ sock, status }); };
    sock.on('error', () => done(0));
    sock.on('close', () => done(0));
    sock.on('data', (d) => {
      head += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d+)/.exec(head);
      if (m) done(Number(m[1]));
    });
    sock.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n`
      + `Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n`
      + `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
}

test('140 view-token streams and 40 view sockets: the view role gets its share, everyone else is served', async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--view-token', VIEW] });
  const streams = [];
  const sockets = [];
  t.after(() => { for (const s of streams) s.sock.destroy(); for (const c of sockets) c.close(); });
  for (let i = 0; i < 140; i++) streams.push(await listen(deskd.url, VIEW));
  const by = (code) => streams.filter((s) => s.status === code).length;
  // --max-connections-per-ip 128: the view role's share is 128/8 = 16.
  assert.equal(by(200), 16, `statuses: ${JSON.stringify(streams.map((s) => s.status))}`);
  assert.equal(by(429), 124);
  // /live sockets share the role's slots: all full already.
  for (let i = 0; i < 40; i++) sockets.push(await openLive(deskd, { token: VIEW }).catch((e) => ({ refused: e.status || true, close() {} })));
  assert.equal(sockets.filter((s) => s.refused === 429).length, 40, 'view sockets refused with 429');

  // Everyone else: /healthz, the agent's calls and streams, the person's socket.
  assert.equal((await fetch(`${deskd.url}/healthz`, { signal: AbortSignal.timeout(3000) })).status, 200);
  const shot = await deskd.fetch('/api/v1/screenshot', { signal: AbortSignal.timeout(5000) });
  assert.equal(shot.status, 200);
  const agentStream = await listen(deskd.url, deskd.token);
  t.after(() => agentStream.sock.destroy());
  assert.equal(agentStream.status, 200, 'the agent still gets a stream');
  const p = await openLive(deskd);
  t.after(() => p.close());
  await p.until((x) => x.hello);
  assert.equal(p.hello.role, 'person');

  // Closing frees the slots at once (a closed stream is noticed within a tick).
  const t0 = Date.now();
  for (const s of streams) s.sock.destroy();
  await waitUntil(async () => {
    const s = await listen(deskd.url, VIEW);
    s.sock.destroy();
    return s.status === 200;
  }, { timeout: 5000, interval: 200, what: 'a view stream after the others closed' });
  assert.ok(Date.now() - t0 < 4000, `freed in ${Date.now() - t0} ms`);
  const v = await openLive(deskd, { token: VIEW });
  t.after(() => v.close());
  await v.until((x) => x.hello);
  assert.equal(v.hello.role, 'view');
});

test('closed /api/v1/events readers free their connections promptly', async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--view-token', VIEW] });
  const readers = [];
  for (let i = 0; i < 16; i++) {
    const ac = new AbortController();
    const r = await fetch(`${deskd.url}/api/v1/events`, { headers: { authorization: `Bearer ${VIEW}` }, signal: ac.signal });
    assert.equal(r.status, 200);
    readers.push(ac);
  }
  const extra = await fetch(`${deskd.url}/api/v1/events`, { headers: { authorization: `Bearer ${VIEW}` } });
  assert.equal(extra.status, 429, 'the view role is at its limit');
  const body = await extra.json();
  assert.equal(body.error.code, 'too_many_streams');
  for (const ac of readers) ac.abort();
  await sleep(100);
  await waitUntil(async () => {
    const ac = new AbortController();
    const r = await fetch(`${deskd.url}/api/v1/events`, { headers: { authorization: `Bearer ${VIEW}` }, signal: ac.signal });
    ac.abort();
    return r.status === 200;
  }, { timeout: 4000, interval: 200, what: 'an events reader after the others closed' });
});
