// The tasks extension (io.modelcontextprotocol/tasks) on MCP 2026-07-28 with
// deskd's own tools: request_human_help becomes a task at once, a person
// answers it in the dashboard's control channel while no client request is
// open, and a later request (a new connection) reads the person's note; an
// approval inside a task is asked of the client (input_required, answered
// with tasks/update) and of the person (the dashboard's Approve), whichever
// answers first, and the action's effect is checked on the X server; a
// quick call stays a plain call; tasks/cancel stops a wait; another token
// never sees the agent's tasks; and the same through the official SDK v2
// client with the ext-tasks package (a task resumed by a second client from
// its serialized reference, an approval answered by the SDK's input
// handler). The suite's own tasks scenarios run in scripts/run-conformance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient } from '@modelcontextprotocol/ext-tasks/client';
import { desktop, waitUntil, SLOW } from './lib/harness.mjs';
import { openLive } from './lib/live.mjs';

const V = '2026-07-28';
const TASKS = 'io.modelcontextprotocol/tasks';
let nextId = 1;

/** One modern request over its own connection (no keep-alive: every call is
 *  a client that connects, asks and leaves). */
async function modern(deskd, method, params = {}, { caps = { extensions: { [TASKS]: {} } }, token = deskd.token } = {}) {
  const body = {
    jsonrpc: '2.0', id: nextId++, method,
    params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': caps, 'io.modelcontextprotocol/clientInfo': { name: 'tasks-test', version: '1' } } },
  };
  const name = method === 'tools/call' ? params.name : method.startsWith('tasks/') ? params.taskId : undefined;
  const headers = {
    'content-type': 'application/json', accept: 'application/json, text/event-stream', connection: 'close',
    'mcp-protocol-version': V, 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}),
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  };
  const r = await fetch(deskd.url + '/mcp', { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await r.text();
  const type = r.headers.get('content-type') || '';
  const msg = type.includes('text/event-stream')
    ? text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6))).find((m) => 'result' in m || 'error' in m)
    : JSON.parse(text);
  return { status: r.status, type, ...msg };
}

/** The official SDK v2 client pinned to 2026-07-28 with the ext-tasks
 *  package's task session over it. The package leaves the 2026-07-28 task
 *  wire to the host (rawDispatch): one POST per request, as modern() does. */
async function sdkSession(t, deskd, onInputRequest) {
  const caps = { elicitation: {}, extensions: { [TASKS]: {} } };
  const client = new Client({ name: 'tasks-sdk', version: '1' }, { versionNegotiation: { mode: { pin: V } }, capabilities: { elicitation: {} } });
  await client.connect(new StreamableHTTPClientTransport(new URL(deskd.url + '/mcp'), { requestInit: { headers: { authorization: `Bearer ${deskd.token}` } } }));
  assert.equal(client.getNegotiatedProtocolVersion(), V);
  const rawDispatch = async (request) => {
    const { method, params } = request;
    const r = await modern(deskd, method, { ...params, _meta: undefined }, { caps: params?._meta?.['io.modelcontextprotocol/clientCapabilities'] ?? caps });
    const { status, type, ...msg } = r;
    return msg;
  };
  const session = createTaskSessionFromClient(client, {
    endpointId: 'deskd-tasks-test', rawDispatch, onInputRequest,
    v2RequestFraming: { protocolVersion: V, clientInfo: { name: 'tasks-sdk', version: '1' }, clientCapabilities: caps },
  });
  const close = async () => { await session.close().catch(() => {}); await client.close().catch(() => {}); };
  t.after(close);
  return { session, client, close };
}

/** tasks/get until pred(task) holds. */
async function pollTask(deskd, taskId, pred, what) {
  let last;
  await waitUntil(async () => {
    const r = await modern(deskd, 'tasks/get', { taskId });
    assert.ok(r.result, JSON.stringify(r));
    last = r.result;
    return pred(last);
  }, { timeout: 20000 * SLOW, interval: 100, what: `${what} (last: ${JSON.stringify(last)?.slice(0, 300)})` });
  return last;
}

async function person(t, deskd) {
  const c = await openLive(deskd, { token: deskd.personToken });
  t.after(() => c.close());
  c.send = (m) => c.ws.send(JSON.stringify(m));
  c.state = () => [...c.texts].reverse().find((m) => m.type === 'control');
  await c.until((x) => x.hello && x.state());
  return c;
}

async function cursor(deskd) {
  const r = await deskd.tool('computer_cursor_position', {});
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return [r.body.structuredContent.x, r.body.structuredContent.y];
}

test('request_human_help as a task: answered from the dashboard with no request open, read by a new request; quick calls stay calls; cancel; tokens', { timeout: 120000 }, async (t) => {
  const { deskd } = await desktop(t);
  const found = (await modern(deskd, 'server/discover')).result;
  assert.deepEqual(found.capabilities.extensions, { [TASKS]: {} }, 'the extension is offered');

  // A quick call from a request that takes tasks is answered as a call.
  const quick = await modern(deskd, 'tools/call', { name: 'status', arguments: {} });
  assert.equal(quick.result.resultType, 'complete', JSON.stringify(quick).slice(0, 300));
  assert.ok(!('taskId' in quick.result));

  const started = Date.now();
  const created = await modern(deskd, 'tools/call', { name: 'request_human_help', arguments: { reason: 'pick the account', timeout_s: 60 } });
  assert.equal(created.status, 200);
  assert.equal(created.type.split(';')[0], 'application/json', 'a CreateTaskResult is plain JSON');
  const task = created.result;
  assert.equal(task.resultType, 'task', JSON.stringify(created));
  assert.match(task.taskId, /^[0-9a-f-]{36}$/);
  assert.equal(task.status, 'working');
  assert.ok(Number.isInteger(task.ttlMs) && task.ttlMs >= 600000, 'a TTL long enough for a person');
  assert.ok(Date.now() - started < 5000 * SLOW, 'answered at once, not after the person');
  for (const k of ['result', 'error', 'inputRequests', 'requestState']) assert.ok(!(k in task), k);

  // No request is open now. The person answers in the dashboard.
  const working = await pollTask(deskd, task.taskId, (x) => x.status === 'working', 'working');
  assert.match(working.statusMessage, /request_human_help/);
  const p = await person(t, deskd);
  await p.until((x) => x.state().help?.length === 1, { timeout: 5000 * SLOW });
  const help = p.state().help[0];
  assert.match(JSON.stringify(help), /pick the account/);
  const note = 'use the test account ✓ — Ω';
  p.send({ type: 'help_dismiss', id: help.id, note });

  // A new connection reads the outcome, byte-exact.
  const done = await pollTask(deskd, task.taskId, (x) => x.status === 'completed', 'completed');
  assert.equal(done.resultType, 'complete');
  assert.equal(done.result.structuredContent.outcome, 'dismissed', JSON.stringify(done.result));
  assert.equal(done.result.structuredContent.note, note);
  assert.ok(!done.result._meta?.['io.modelcontextprotocol/related-task']);
  assert.equal((await modern(deskd, 'tasks/get', { taskId: task.taskId })).result.status, 'completed', 'it stays readable');

  // Only the token that made it sees it; a request that does not declare
  // the extension gets -32021; an unknown id -32602.
  const other = await modern(deskd, 'tasks/get', { taskId: task.taskId }, { token: deskd.personToken });
  assert.equal(other.error?.code, -32602, JSON.stringify(other));
  const undeclared = await modern(deskd, 'tasks/get', { taskId: task.taskId }, { caps: {} });
  assert.equal(undeclared.status, 400);
  assert.equal(undeclared.error.code, -32021);
  assert.deepEqual(undeclared.error.data.requiredCapabilities, { extensions: { [TASKS]: {} } });
  assert.equal((await modern(deskd, 'tasks/get', { taskId: '00000000-0000-4000-8000-000000000000' })).error.code, -32602);
  // The same tool for a request that does not take tasks blocks as a call
  // (not asked here); a task-only tool does not exist among deskd's own.

  // tasks/cancel stops a long wait.
  const wait = (await modern(deskd, 'tools/call', { name: 'wait_for_change', arguments: { timeout_ms: 60000 } })).result;
  assert.equal(wait.resultType, 'task', JSON.stringify(wait));
  const ack = await modern(deskd, 'tasks/cancel', { taskId: wait.taskId });
  assert.deepEqual(Object.keys(ack.result), ['resultType']);
  assert.equal(ack.result.resultType, 'complete');
  const cancelled = await pollTask(deskd, wait.taskId, (x) => x.status === 'cancelled', 'cancelled');
  assert.ok(!('result' in cancelled));
  assert.equal((await modern(deskd, 'tasks/cancel', { taskId: wait.taskId })).result.resultType, 'complete', 'idempotent');
});

test('an approval in a task: asked of the client as input_required and of the person; either answer decides; the move happens only when approved', { timeout: 120000 }, async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--approve', 'all', '--approve-timeout', '60', '--tools', 'both'] });
  const caps = { elicitation: {}, extensions: { [TASKS]: {} } };
  const p = await person(t, deskd);
  const move = async (x, y) => {
    const r = await modern(deskd, 'tools/call', { name: 'computer_use', arguments: { actions: [{ type: 'move', x, y }] } }, { caps });
    assert.equal(r.result?.resultType, 'task', JSON.stringify(r));
    const asked = await pollTask(deskd, r.result.taskId, (k) => k.status === 'input_required', 'input_required');
    const keys = Object.keys(asked.inputRequests);
    assert.equal(keys.length, 1, JSON.stringify(asked.inputRequests));
    const q = asked.inputRequests[keys[0]];
    assert.equal(q.method, 'elicitation/create');
    assert.match(q.params.message, new RegExp(`computer_use.*${x}`));
    assert.ok(q.params.requestedSchema.properties.approve);
    await p.until((c) => c.state().approvals?.length === 1, { timeout: 5000 * SLOW });
    return { taskId: r.result.taskId, key: keys[0], approval: p.state().approvals[0].id };
  };
  const before = await cursor(deskd);

  // The client approves through tasks/update: the move runs.
  const a = await move(123, 77);
  assert.deepEqual(await cursor(deskd), before, 'nothing moved while it waits');
  const ack = await modern(deskd, 'tasks/update', { taskId: a.taskId, inputResponses: { [a.key]: { action: 'accept', content: { approve: true } } } });
  assert.equal(ack.result.resultType, 'complete', JSON.stringify(ack));
  const ran = await pollTask(deskd, a.taskId, (k) => k.status === 'completed', 'completed');
  assert.notEqual(ran.result.isError, true, JSON.stringify(ran.result));
  assert.deepEqual(await cursor(deskd), [123, 77]);
  await p.until((c) => c.state().approvals?.length === 0, { timeout: 5000 * SLOW });

  // The person approves in the dashboard first: the client's question goes.
  const b = await move(200, 100);
  p.send({ type: 'approve', id: b.approval });
  const ran2 = await pollTask(deskd, b.taskId, (k) => k.status === 'completed', 'completed after the person');
  assert.ok(!('inputRequests' in ran2));
  assert.notEqual(ran2.result.isError, true, JSON.stringify(ran2.result));
  assert.deepEqual(await cursor(deskd), [200, 100]);
  // A late answer to a question no longer asked is ignored.
  assert.equal((await modern(deskd, 'tasks/update', { taskId: b.taskId, inputResponses: { [b.key]: { action: 'accept', content: { approve: true } } } })).result.resultType, 'complete');

  // The client declines: nothing moves, the task completes with the refusal.
  const c = await move(300, 150);
  await modern(deskd, 'tasks/update', { taskId: c.taskId, inputResponses: { [c.key]: { action: 'decline' } } });
  const denied = await pollTask(deskd, c.taskId, (k) => k.status === 'completed', 'completed denied');
  assert.equal(denied.result.isError, true);
  assert.equal(denied.result.structuredContent.code, 'approval_denied', JSON.stringify(denied.result));
  assert.deepEqual(await cursor(deskd), [200, 100], 'the declined move did not run');
});

test('the SDK v2 client with ext-tasks: request_human_help resumed by a new client after the first left; an approval answered through the client as a task-update input step', { timeout: 120000 }, async (t) => {
  const { deskd } = await desktop(t, { deskdArgs: ['--approve', 'destructive', '--approve-timeout', '60', '--tools', 'both'] });
  const p = await person(t, deskd);

  // The first client starts the call, keeps the task's reference and leaves.
  const first = await sdkSession(t, deskd, async () => { throw new Error('no input expected'); });
  const exec = await first.session.callTool('request_human_help', { reason: 'confirm the order', timeout_s: 60 });
  assert.equal(exec.kind, 'task', 'a task, not a held request');
  const ref = JSON.parse(JSON.stringify(exec.serializeReference()));
  assert.equal(ref.generation, 'v2');
  // The client goes away (its connection closes); its task session is not
  // closed, which would cancel the tasks it still tracks.
  await exec.detach();
  await first.client.close();

  // The person answers while no client is there.
  await p.until((x) => x.state().help?.length === 1, { timeout: 5000 * SLOW });
  const note = 'order #4711 confirmed ✓';
  p.send({ type: 'help_dismiss', id: p.state().help[0].id, note });

  // A new client resumes the task from its reference.
  const second = await sdkSession(t, deskd, async () => { throw new Error('no input expected'); });
  const resumed = await second.session.resumeTask(ref);
  const { outcome } = await resumed.settle();
  assert.equal(outcome.status, 'completed', JSON.stringify(outcome).slice(0, 300));
  assert.equal(outcome.result.structuredContent.outcome, 'dismissed');
  assert.equal(outcome.result.structuredContent.note, note);

  // An approval asked of the client as the task's input, answered by the
  // SDK's input handler: the move runs.
  const asked = [];
  const third = await sdkSession(t, deskd, async (request, context) => {
    asked.push({ kind: request.kind, delivery: context.delivery, message: request.params.message });
    return { action: 'accept', content: { approve: true } };
  });
  const moved = await third.session.callTool('computer_use', { actions: [{ type: 'move', x: 321, y: 123 }] });
  assert.equal(moved.kind, 'task');
  const settled = await moved.settle();
  assert.equal(settled.outcome.status, 'completed', JSON.stringify(settled.outcome).slice(0, 300));
  assert.notEqual(settled.outcome.result.isError, true, JSON.stringify(settled.outcome.result).slice(0, 300));
  assert.equal(asked.length, 1, JSON.stringify(asked));
  assert.equal(asked[0].kind, 'elicitation');
  assert.equal(asked[0].delivery, 'task-update');
  assert.match(asked[0].message, /computer_use/);
  assert.deepEqual(await cursor(deskd), [321, 123]);
});
