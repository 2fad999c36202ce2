// Who acted (issue 15): every event names its actor, the dashboard's own
// refreshes stay out of the history but count in /metrics, agent
// screenshots keep a thumbnail; deleting recordings (safe-output rules);
// where the token is, for the wrong-token page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync, unlinkSync, symlinkSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { desktop, launch, readyInfo, startXvfb, tempDir, waitUntil, DESKD_BIN, sleep } from './lib/harness.mjs';

async function history(deskd) {
  const r = await deskd.fetch('/api/v1/events?format=json');
  assert.equal(r.status, 200);
  return (await r.json()).events;
}

async function mcpClient(t, deskd, name) {
  const client = new Client({ name, version: '1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(deskd.url + '/mcp'), {
    requestInit: { headers: { authorization: `Bearer ${deskd.token}` } },
  });
  await client.connect(transport);
  t.after(() => client.close());
  return { client, transport };
}

function metric(text, name, labels) {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{')) continue;
    const inside = line.slice(name.length + 1, line.indexOf('}'));
    if (want.every((w) => inside.split(',').includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

/** Width and height from a JPEG's SOF marker. */
function jpegSize(buf) {
  assert.equal(buf[0], 0xff);
  assert.equal(buf[1], 0xd8, 'a JPEG');
  for (let i = 2; i + 9 < buf.length;) {
    if (buf[i] !== 0xff) { i++; continue; }
    const m = buf[i + 1];
    const len = buf.readUInt16BE(i + 2);
    if (m >= 0xc0 && m <= 0xc3) return { height: buf.readUInt16BE(i + 5), width: buf.readUInt16BE(i + 7) };
    i += 2 + len;
  }
  throw new Error('no SOF in the JPEG');
}

test('events name their actor: the MCP client, REST, a named script, a person', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '300x200+50+50', pattern: 'solid:00ff00' }, deskdArgs: ['--view-token', 'view-only-123'] });
  const { deskd } = env;
  const { client, transport } = await mcpClient(t, deskd, 'timeline-agent');
  await client.callTool({ name: 'windows', arguments: {} });
  assert.equal((await deskd.tool('windows', {})).status, 200);
  const named = await deskd.fetch('/api/v1/tools/windows', { method: 'POST', headers: { 'content-type': 'application/json', 'x-deskd-client': 'nightly-script' }, body: '{}' });
  assert.equal(named.status, 200);

  const events = await history(deskd);
  const ends = events.filter((e) => e.tool === 'windows' && e.status === 'ok');
  assert.equal(ends.length, 3, JSON.stringify(events));
  const [mcp, rest, script] = ends;
  assert.deepEqual(mcp.actor, { kind: 'agent', name: 'timeline-agent', session: transport.sessionId, via: 'mcp' });
  assert.equal(mcp.kind, 'tool');
  assert.equal(mcp.source, 'mcp', 'source stays for older readers');
  assert.deepEqual(rest.actor, { kind: 'agent', name: 'rest', via: 'rest' });
  assert.deepEqual(script.actor, { kind: 'agent', name: 'nightly-script', via: 'rest' });
  // Starts carry the actor too.
  const start = events.find((e) => e.id === mcp.id && e.status === 'started');
  assert.equal(start.actor.name, 'timeline-agent');

  // The live SSE stream has the same fields.
  const ac = new AbortController();
  const sse = await deskd.fetch('/api/v1/events', { signal: ac.signal });
  const reader = sse.body.getReader();
  let text = '';
  await waitUntil(async () => {
    const { value } = await reader.read();
    text += Buffer.from(value).toString();
    return text.includes('"name":"nightly-script"');
  }, { what: 'the SSE history with actors' });
  ac.abort();
  assert.match(text, /"actor":\{"kind":"agent","name":"timeline-agent","session":"[^"]+","via":"mcp"\}/);

  // The view token reads the history; bad formats are refused.
  const view = await fetch(deskd.url + '/api/v1/events?format=json', { headers: { authorization: 'Bearer view-only-123' } });
  assert.equal(view.status, 200);
  assert.equal((await deskd.fetch('/api/v1/events?format=xml')).status, 400);
});

test('the dashboard\'s refreshes are counted in /metrics but not in the timeline; its acting calls are a person\'s', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '300x200+50+50', pattern: 'solid:00ff00' } });
  const { deskd } = env;
  const before = await (await deskd.fetch('/metrics')).text();
  const dash = { 'content-type': 'application/json', 'x-deskd-client': 'dashboard' };
  for (let i = 0; i < 5; i++) {
    const r = await deskd.fetch('/api/v1/windows', { headers: { 'x-deskd-client': 'dashboard' } });
    assert.equal(r.status, 200);
    await r.arrayBuffer();
  }
  const status = await deskd.fetch('/api/v1/tools/status', { method: 'POST', headers: dash, body: '{}' });
  assert.equal(status.status, 200);
  const shot = await deskd.fetch('/api/v1/screenshot', { headers: { 'x-deskd-client': 'dashboard' } });
  assert.equal(shot.status, 200);
  await shot.arrayBuffer();
  // An acting call from the dashboard with the person's token is a
  // person's (a button pressed); the agent's token naming itself
  // "dashboard" stays the agent.
  const tools = JSON.stringify(await (await deskd.fetch('/api/v1/tools')).json());
  const moveTool = tools.includes('"computer_use"') ? 'computer_use' : 'computer_move';
  const moveArgs = moveTool === 'computer_use' ? { actions: [{ type: 'mouse_move', x: 10, y: 10 }] } : { x: 10, y: 10 };
  const move = await fetch(`${deskd.url}/api/v1/tools/${moveTool}`, { method: 'POST',
    headers: { ...dash, authorization: `Bearer ${deskd.personToken}` }, body: JSON.stringify(moveArgs) });
  assert.equal(move.status, 200, await move.text());
  const posing = await deskd.fetch(`/api/v1/tools/${moveTool}`, { method: 'POST', headers: dash, body: JSON.stringify(moveArgs) });
  assert.equal(posing.status, 200, await posing.text());

  const events = await history(deskd);
  assert.equal(events.filter((e) => e.tool === 'windows' || e.tool === 'status' || e.tool === 'screenshot').length, 0,
    `no refresh in the history: ${JSON.stringify(events)}`);
  const acted = events.filter((e) => e.tool === moveTool);
  assert.equal(acted.length, 4);
  assert.deepEqual(acted[1].actor, { kind: 'person', name: 'dashboard', via: 'rest' });
  assert.deepEqual(acted[3].actor, { kind: 'agent', name: 'dashboard', via: 'rest' });

  const after = await (await deskd.fetch('/metrics')).text();
  const calls = (s) => metric(s, 'deskd_tool_calls_total', { tool: 'windows', status: 'ok' });
  assert.equal(calls(after) - calls(before), 5, 'the refreshes are counted');
  const agentTools = (s) => metric(s, 'deskd_events_total', { kind: 'tool', actor: 'agent' });
  assert.ok(agentTools(after) - agentTools(before) >= 7, 'events_total counts the refreshes');
  assert.equal(metric(after, 'deskd_events_total', { kind: 'tool', actor: 'person' }), 1);
  assert.match(after, /# HELP deskd_events_total /);
});

test('an agent\'s screenshot keeps a thumbnail, served with the token; refreshes and errors get none', async (t) => {
  const env = await desktop(t, { width: 1280, height: 800, fixture: { geometry: '400x300+100+80', pattern: 'solid:ff0000' }, deskdArgs: ['--view-token', 'view-only-123'] });
  const { deskd, fixture } = env;
  const { client } = await mcpClient(t, deskd, 'thumb-agent');
  const r = await client.callTool({ name: 'screenshot', arguments: {} });
  assert.ok(!r.isError, JSON.stringify(r));
  const w = await client.callTool({ name: 'screenshot', arguments: { window: fixture.window } });
  assert.ok(!w.isError);
  const bad = await client.callTool({ name: 'screenshot', arguments: { window: 12345 } });
  assert.ok(bad.isError);

  const events = await history(deskd);
  const shots = events.filter((e) => e.tool === 'screenshot' && e.status !== 'started');
  assert.equal(shots.length, 3);
  assert.deepEqual(shots[0].screenshot, { window: 0, thumbnail: true });
  assert.deepEqual(shots[1].screenshot, { window: fixture.window, thumbnail: true });
  assert.equal(shots[2].screenshot, undefined, 'a failed call has no thumbnail');

  // Made from the agent's own image on a worker: there within moments.
  const get = (id, headers) => fetch(`${deskd.url}/api/v1/events/${id}/thumbnail`, { headers });
  const full = await waitUntil(async () => {
    const x = await get(shots[1].id, deskd.headers());
    if (x.status === 200) return get(shots[0].id, deskd.headers());
    await x.arrayBuffer();
    return null;
  }, { what: 'the thumbnails' });
  assert.equal(full.status, 200);
  assert.equal(full.headers.get('content-type'), 'image/jpeg');
  const jpeg = Buffer.from(await full.arrayBuffer());
  assert.deepEqual(jpegSize(jpeg), { width: 240, height: 150 });
  const win = Buffer.from(await (await get(shots[1].id, deskd.headers())).arrayBuffer());
  assert.deepEqual(jpegSize(win), { width: 240, height: 180 }, 'the window\'s own shape');
  assert.equal((await get(shots[0].id, { authorization: 'Bearer view-only-123' })).status, 200, 'the view token may see it');
  assert.equal((await get(shots[0].id, {})).status, 401, 'no token, no thumbnail');
  assert.equal((await get(shots[2].id, deskd.headers())).status, 404);
  assert.equal((await get('abc', deskd.headers())).status, 404);
  assert.equal((await get(`${shots[0].id}0000`, deskd.headers())).status, 404);

  // The dashboard's own screenshots (a refresh) get none.
  const dash = await deskd.fetch('/api/v1/screenshot', { headers: { 'x-deskd-client': 'dashboard' } });
  assert.equal(dash.status, 200);
  await dash.arrayBuffer();
  assert.equal((await history(deskd)).filter((e) => e.tool === 'screenshot').length, 6, 'not in the history');

  // The ring is bounded: after 64 more, the first is gone.
  // (A burst may skip thumbnails: count the events that promise one.)
  let made = [];
  for (let i = 0; i < 200 && made.length < 64; i++) {
    await client.callTool({ name: 'screenshot', arguments: { max_dimension: 64 } });
    made = (await history(deskd)).filter((e) => e.id > shots[1].id && e.screenshot && e.screenshot.thumbnail);
  }
  assert.equal(made.length, 64);
  await waitUntil(async () => (await get(made[63].id, deskd.headers())).status === 200, { what: 'the newest thumbnail' });
  assert.equal((await get(shots[0].id, deskd.headers())).status, 404, 'the oldest thumbnail left the ring');
});

async function recordOnce(deskd, window) {
  let r = await deskd.tool('record_start', { window, fps: 10 });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const id = r.body.structuredContent.id;
  await sleep(600);
  r = await deskd.tool('record_stop', { id });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return { id, path: r.body.structuredContent.path };
}

test('DELETE /api/v1/recordings/{id}: only deskd\'s own finished files, never through a symlink, full token only', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '160x120+40+40', animate: 10 }, deskdArgs: ['--view-token', 'view-only-123'] });
  const { deskd, fixture } = env;
  const tools = JSON.stringify(await (await deskd.fetch('/api/v1/tools')).json());
  if (!tools.includes('record_start')) { t.skip('no record tools in this build'); return; }
  const del = (id, headers = deskd.headers()) => fetch(`${deskd.url}/api/v1/recordings/${id}`, { method: 'DELETE', headers });

  const a = await recordOnce(deskd, fixture.window);
  assert.ok(existsSync(a.path), a.path);
  // The view token may not delete.
  let r = await del(a.id, { authorization: 'Bearer view-only-123' });
  assert.equal(r.status, 403);
  assert.ok(existsSync(a.path));
  // Paths and unknown ids: 404, nothing touched.
  const recDir = join(deskd.dataDir, 'recordings');
  const planted = join(recDir, 'rec-planted.mp4');
  writeFileSync(planted, 'not deskd\'s');
  for (const id of ['rec-planted', 'rec-planted.mp4', '..%2Ftoken', '%2E%2E', '..', encodeURIComponent(a.path), 'x%00y']) {
    r = await del(id);
    assert.equal(r.status, 404, `${id}: ${await r.text()}`);
  }
  assert.ok(existsSync(planted), 'a file deskd did not record stays');

  // Refused while recording.
  r = await deskd.tool('record_start', { window: fixture.window, fps: 10 });
  assert.equal(r.status, 200);
  const running = r.body.structuredContent.id;
  r = await del(running);
  assert.equal(r.status, 409);
  assert.equal((await r.json()).error.code, 'recording_active');
  r = await deskd.tool('record_stop', { id: running });
  assert.equal(r.status, 200);
  const runningPath = r.body.structuredContent.path;

  // Its file swapped for a symlink to something else: refused, the target stays.
  const victim = join(tempDir('deskd-victim-'), 'precious.txt');
  writeFileSync(victim, 'keep me');
  unlinkSync(runningPath);
  symlinkSync(victim, runningPath);
  r = await del(running);
  assert.equal(r.status, 403);
  const body = await r.json();
  assert.equal(body.error.code, 'bad_path');
  assert.match(body.error.message, /symlink/);
  assert.equal(readFileSync(victim, 'utf8'), 'keep me');

  // The real delete: the file goes, and the list no longer has it.
  r = await del(a.id);
  assert.equal(r.status, 200, await r.clone().text());
  assert.deepEqual(await r.json(), { id: a.id, deleted: true });
  assert.equal(existsSync(a.path), false);
  const list = (await (await deskd.fetch('/api/v1/recordings')).json()).recordings;
  assert.equal(list.some((x) => x.id === a.id), false);
  assert.equal((await del(a.id)).status, 404, 'twice: gone');
  assert.deepEqual(readdirSync(recDir).sort(), ['rec-planted.mp4', runningPath.split('/').pop()].sort());
  // The delete is an event too.
  const ev = (await history(deskd)).find((e) => e.kind === 'recording_delete');
  assert.equal(ev.recording, a.id);
  assert.equal(ev.actor.kind, 'agent');
});

test('GET /api/v1/token-help says where the token is kept (never the token), across restarts', async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const dir = tempDir('deskd-data-');
  const start = async () => {
    const ready = join(dir, 'ready.json');
    if (existsSync(ready)) unlinkSync(ready);   // the earlier run's
    const env = { ...process.env };
    delete env.DISPLAY;
    for (const k of Object.keys(env)) if (k.startsWith('DESKD_')) delete env[k];
    const p = launch('deskd', DESKD_BIN, ['--listen', '127.0.0.1:0', '--ready-file', ready, '--data-dir', dir, '--display', x.display], { env });
    t.after(() => p.stop());
    Object.assign(p, await readyInfo(p, ready));
    return p;
  };
  let d = await start();
  // The wrong-token page is the dashboard's: the person's token.
  const tokenPath = join(dir, 'person-token');
  const token = readFileSync(tokenPath, 'utf8').trim();
  let r = await fetch(d.url + '/api/v1/token-help');
  assert.equal(r.status, 200);
  let help = await r.json();
  assert.deepEqual(help, { auth: true, source: 'generated', path: tokenPath, print: `cat ${tokenPath}` });
  assert.ok(!JSON.stringify(help).includes(token), 'never the token');
  await d.stop();
  d = await start();
  help = await (await fetch(d.url + '/api/v1/token-help')).json();
  assert.equal(help.source, 'saved', 'kept from the earlier run');
  assert.equal(help.path, tokenPath);
  assert.equal(readFileSync(tokenPath, 'utf8').trim(), token, 'the same token after a restart');
  const ok = await fetch(d.url + '/api/v1/windows', { headers: { authorization: `Bearer ${token}` } });
  assert.equal(ok.status, 200);
  await ok.arrayBuffer();
});

test('the actor of a 2026-07-28 request (its _meta clientInfo) and of stdio', async (t) => {
  const env = await desktop(t, {});
  const { deskd } = env;
  const body = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'windows', arguments: {}, _meta: {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'modern-agent', version: '1' } } } };
  const r = await deskd.fetch('/mcp', { method: 'POST', body: JSON.stringify(body), headers: {
    'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'windows' } });
  assert.equal(r.status, 200, await r.clone().text());
  await r.text();
  const ev = (await history(deskd)).find((e) => e.tool === 'windows' && e.status === 'ok');
  assert.deepEqual(ev.actor, { kind: 'agent', name: 'modern-agent', via: 'mcp' }, 'no session in that era');

  // stdio, with the HTTP port kept for watching.
  const dir = tempDir('deskd-stdio-');
  const ready = join(dir, 'ready.json');
  const cleanEnv = { ...process.env };
  delete cleanEnv.DISPLAY;
  for (const k of Object.keys(cleanEnv)) if (k.startsWith('DESKD_')) delete cleanEnv[k];
  const p = launch('deskd --stdio', DESKD_BIN, ['--stdio', '--listen', '127.0.0.1:0', '--ready-file', ready, '--data-dir', dir,
    '--display', env.display, '--token', 'stdio-test-token'], { env: cleanEnv, stdio: ['pipe', 'pipe', 'pipe'], keepStdout: true });
  t.after(() => p.stop());
  let out = '';
  p.proc.stdout.on('data', (d) => { out += d; });
  Object.assign(p, await readyInfo(p, ready));
  const send = (m) => p.proc.stdin.write(JSON.stringify(m) + '\n');
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'stdio-agent', version: '1' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'windows', arguments: {} } });
  await waitUntil(() => out.includes('"id":2'), { timeout: 15000, what: 'the windows answer' });
  const events = (await (await fetch(p.url + '/api/v1/events?format=json', { headers: { authorization: 'Bearer stdio-test-token' } })).json()).events;
  const s = events.find((e) => e.tool === 'windows' && e.status === 'ok');
  assert.equal(s.actor.kind, 'agent');
  assert.equal(s.actor.name, 'stdio-agent');
  assert.equal(s.actor.via, 'stdio');
  assert.equal(s.source, 'mcp', 'source stays the transport family');
  assert.match(s.actor.session, /^[0-9a-f-]{36}$/);
  p.proc.stdin.end();
});
