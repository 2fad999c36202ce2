// Tool schemas every client accepts (DESIGN.md 6): over every tool of every
// surface, the MCP Inspector's --strict portability lint finds nothing and
// the OpenAI Agents SDK converts each input schema to strict mode; null for
// any optional argument is the same as leaving it out; the default tools/list
// stays small (at most 16 KB) while --tools split|both still list the split
// tools and the batch tool takes every action. Pinned in tests/package.json.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mcpToFunctionTool } from '@openai/agents-core';
import { startXvfb, startDeskd, startFixture, ROOT, SLOW } from './lib/harness.mjs';

const MODULES = join(ROOT, 'tests/node_modules');
const NODE22 = join(MODULES, 'node/bin/node');	// the Inspector needs Node >= 22.19
const INSPECTOR = join(MODULES, '@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const MAX_DEFAULT_LIST = 16 * 1024;

async function connect(d) {
  const client = new Client({ name: 'schemas-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(d.url + '/mcp'),
    { requestInit: { headers: { Authorization: `Bearer ${d.token}` } } }));
  return client;
}

/** Every page of tools/list, and the bytes of the results as compact JSON. */
async function listAll(client) {
  const tools = [];
  let bytes = 0;
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    bytes += Buffer.byteLength(JSON.stringify(page));
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return { tools, bytes };
}

function run(cmd, args, timeoutMs) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });   // spawns: - (the project's Node 22)
    let stdout = '', stderr = '';
    p.stdout.on('data', (c) => { stdout += c; });
    p.stderr.on('data', (c) => { stderr += c; });
    const t = setTimeout(() => p.kill('SIGKILL'), timeoutMs * SLOW);
    p.on('error', reject);
    p.on('exit', (code, signal) => { clearTimeout(t); resolve({ code, signal, stdout, stderr }); });
  });
}

/** Why the SDK refused strict mode: its own converter, called directly (it is
 *  not exported; mcpToFunctionTool only logs "object"). */
async function strictReason(schema) {
  const m = await import(join(MODULES, '@openai/agents-core/dist/utils/strictToolSchema.mjs'));
  const s = { ...schema, type: schema.type ?? 'object', properties: schema.properties ?? {}, required: schema.required ?? [] };
  try {
    m.assertOpenAIStrictToolSchemaPreservesOpenObjects(s);
    m.prepareOpenAIStrictToolSchema(s);
    return 'converted when called directly';
  } catch (e) { return e.message; }
}

/** Arguments that make each tool do something quick and harmless; the test
 *  fails for a tool not listed here, so a new tool gets a case. */
function baseArgs(window) {
  return {
    status: {}, doctor: {}, recordings: {}, windows: {},
    request_human_help: { reason: 'schema test', timeout_s: 1 },
    screenshot: {}, zoom: { region: [0, 0, 16, 16] },
    window_focus: { window }, window_move: { window, x: 100 },
    wait_for_change: { timeout_ms: 50, stable_ms: 10 },
    record_start: { window, max_seconds: 30 }, record_stop: { id: 'no-such-recording' },
    computer_use: { actions: [{ type: 'cursor_position' }] },
    computer_screenshot: {}, computer_zoom: { region: [0, 0, 16, 16] },
    computer_click: { x: 150, y: 150 }, computer_double_click: { x: 150, y: 150 },
    computer_triple_click: { x: 150, y: 150 }, computer_move: { x: 150, y: 150 },
    computer_drag: { path: [[150, 150], { x: 160, y: 150 }] },
    computer_mouse_down: { x: 150, y: 150 }, computer_mouse_up: { x: 150, y: 150 },
    computer_scroll: { x: 150, y: 150, scroll_y: 100 },
    computer_type: { text: 'a' }, computer_keypress: { keys: ['shift'] },
    computer_hold_key: { keys: ['shift'], duration: 0 }, computer_wait: { ms: 0 },
    computer_cursor_position: {},
    // The fixture takes no paste: both calls time out alike (5 s each).
    computer_paste: { text: 'a' },
    clipboard_read: {}, clipboard_write: { text: 'x' },
    file_upload: { path: 'no-such-dir/x.txt', data: 'x' }, file_download: { path: 'no-such-file' }, file_list: {},
    record: { op: 'list' }, clipboard: { op: 'write', text: 'x' }, files: { op: 'list' },
    // An external display without --allow-launch: refused, nothing starts.
    launch: { argv: ['true'], wait_for_window: false },
    // No window manager here: these change nothing (applied false) or are no-ops.
    window_minimize: { window }, window_maximize: { window }, window_restore: { window },
    window_fullscreen: { window }, window_raise: { window },
    window_resize: { window, width: 400, height: 300 },
    window_close: { window: 1 },	// no such window: window_not_found
    window: { op: 'raise', window },
    record: { op: 'list' }, clipboard: { op: 'write', text: 'x' },
    ui_snapshot: { window }, ui_find: { window, role: 'push button' },
    ui_act: { ref: 'e1', action: 'press' }, ui_read: { ref: 'e1' },
    ui_wait: { window, until: 'appears', name: 'x', timeout_ms: 100 },
    ui: { op: 'snapshot', window },
  };
}

/** The group tools of the default surface and their members (op -> tool);
 *  the test fails for a group not listed here. */
const GROUPS = {
  record: { start: 'record_start', stop: 'record_stop', list: 'recordings' },
  clipboard: { read: 'clipboard_read', write: 'clipboard_write' },
  files: { upload: 'file_upload', download: 'file_download', list: 'file_list' },
  window: {
    list: 'windows', focus: 'window_focus', move: 'window_move', resize: 'window_resize', raise: 'window_raise',
    minimize: 'window_minimize', maximize: 'window_maximize', restore: 'window_restore',
    fullscreen: 'window_fullscreen', close: 'window_close',
  },
  ui: { act: 'ui_act', snapshot: 'ui_snapshot', find: 'ui_find', read: 'ui_read', wait: 'ui_wait' },
};

/** base plus null for every other optional argument (and, for the batch
 *  tool, for every other field of each action). */
function withNulls(tool, base) {
  const schema = tool.inputSchema;
  const required = new Set(schema.required || []);
  const args = structuredClone(base);
  for (const k of Object.keys(schema.properties || {})) {
    if (!required.has(k) && !(k in args)) args[k] = null;
  }
  let action = schema.properties?.actions?.items;
  const ref = action?.$ref?.match(/^#\/\$defs\/(.+)$/);
  if (ref) action = schema.$defs[ref[1]];
  if (action) {
    for (const a of args.actions) {
      for (const k of Object.keys(action.properties)) if (!(k in a)) a[k] = null;
    }
  }
  return args;
}

function outcome(r) {
  return r.isError ? `error ${r.structuredContent?.code}: ${r.content?.[0]?.text}` : 'ok';
}

test('tool schemas: Inspector --strict, OpenAI Agents strict mode, null as absent, tools/list size', async (t) => {
  const x = await startXvfb();
  const fixture = await startFixture(x.display);
  const both = await startDeskd({ display: x.display, args: ['--tools', 'both'] });
  t.after(async () => { await x.stop(); });
  const client = await connect(both);
  t.after(() => client.close());
  const { tools } = await listAll(client);
  assert.ok(tools.some((tl) => tl.name === 'computer_use') && tools.some((tl) => tl.name === 'computer_click'));

  await t.test('the Inspector --strict lint finds no portability problem in any schema', async () => {
    const r = await run(NODE22, [INSPECTOR, '--cli', both.url + '/mcp', '--method', 'tools/list',
      '--strict', '--format', 'json', '-q', '--header', `Authorization: Bearer ${both.token}`], 60000);
    assert.equal(r.code, 0, `exit ${r.code ?? r.signal}\n${r.stderr.slice(0, 4000)}`);
    const out = JSON.parse(r.stdout);
    assert.equal(out.result.tools.length, tools.length);
    // Warnings too: a type array is only a warning, yet single-type clients reject it.
    const findings = (out.schemaFindings || []).flatMap((f) => f.findings.map((g) => `${f.toolName} ${g.schema}.${g.path}: ${g.rule}`));
    assert.deepEqual(findings, [], r.stderr.trim().split('\n').pop());
  });

  await t.test('the OpenAI Agents SDK converts every tool to strict mode', async () => {
    const refused = [];
    const warn = console.warn;
    console.warn = () => {};	// the SDK logs each refusal; reasons are collected below
    try {
      for (const tool of tools) {
        const ft = mcpToFunctionTool(tool, { name: 'deskd' }, true);
        if (ft.strict !== true) refused.push(`${tool.name}: ${await strictReason(tool.inputSchema)}`);
      }
    } finally { console.warn = warn; }
    assert.deepEqual(refused, []);
  });

  await t.test('null for every optional argument is the same as leaving it out', async () => {
    const base = baseArgs(fixture.window);
    const missing = tools.map((tl) => tl.name).filter((n) => !(n in base));
    assert.deepEqual(missing, [], 'tools without a case in baseArgs()');
    for (const tool of tools) {
      const plain = await client.callTool({ name: tool.name, arguments: base[tool.name] });
      const nulls = withNulls(tool, base[tool.name]);
      const nulled = await client.callTool({ name: tool.name, arguments: nulls });
      assert.equal(outcome(nulled), outcome(plain), `${tool.name} ${JSON.stringify(nulls)}`);
      if (!plain.isError) {
        assert.deepEqual(Object.keys(nulled.structuredContent || {}).sort(),
          Object.keys(plain.structuredContent || {}).sort(), tool.name);
      }
      if (tool.name === 'screenshot') {
        for (const k of ['width', 'height', 'format', 'window']) {
          assert.equal(nulled.structuredContent[k], plain.structuredContent[k], `screenshot ${k}`);
        }
      }
      for (const r of [plain, nulled]) {
        const id = tool.name === 'record_start' && !r.isError && r.structuredContent.id;
        if (id) await client.callTool({ name: 'record_stop', arguments: { id } });
      }
    }
  });

  await t.test('the default tools/list is at most 16 KB; --tools split and both keep every capability', async () => {
    const def = await startDeskd({ display: x.display });
    const split = await startDeskd({ display: x.display, args: ['--tools', 'split'] });
    const sizes = {};
    const names = {};
    for (const [surface, d] of [['default', def], ['split', split], ['both', both]]) {
      const c = await connect(d);
      const l = await listAll(c);
      await c.close();
      sizes[surface] = l.bytes;
      names[surface] = l.tools.map((tl) => tl.name);
    }
    t.diagnostic(`tools/list bytes: ${JSON.stringify(sizes)}`);
    assert.ok(sizes.default <= MAX_DEFAULT_LIST, `default tools/list is ${sizes.default} bytes, over ${MAX_DEFAULT_LIST}`);
    const splitTools = names.both.filter((n) => n.startsWith('computer_') && n !== 'computer_use');
    assert.equal(splitTools.length, 16, splitTools.join(' '));
    assert.ok(names.default.includes('computer_use'));
    assert.deepEqual(names.default.filter((n) => splitTools.includes(n)), [], 'the default lists no split tool');
    assert.deepEqual(splitTools.filter((n) => !names.split.includes(n)), [], '--tools split lists every split tool');
    assert.ok(!names.split.includes('computer_use'));
    // The default lists each group once, and none of its members; split
    // lists the members instead; both lists both. A group's ops are its
    // members, and REST lists (and calls) every member whatever the surface.
    const defaultList = (await (await fetch(def.url + '/api/v1/tools',
      { headers: { Authorization: `Bearer ${def.token}` } })).json()).tools;
    const groups = defaultList.filter((tl) => tl.inputSchema.properties?.op && tl.inputSchema.required?.includes('op'));
    assert.deepEqual(groups.map((g) => g.name).sort(), Object.keys(GROUPS).sort(), 'group tools');
    const members = [];
    for (const g of groups) {
      assert.deepEqual(g.inputSchema.properties.op.enum.sort(), Object.keys(GROUPS[g.name]).sort(), `${g.name} ops`);
      assert.ok(!('outputSchema' in g) || g.outputSchema, g.name);
      members.push(...Object.values(GROUPS[g.name]));
    }
    for (const m of members) {
      assert.ok(!names.default.includes(m), `the default does not list ${m}`);
      assert.ok(names.split.includes(m) && names.both.includes(m), `split and both list ${m}`);
      assert.ok(defaultList.some((tl) => tl.name === m), `REST lists ${m}`);
    }
    for (const g of Object.keys(GROUPS)) {
      assert.ok(names.default.includes(g) && names.both.includes(g) && !names.split.includes(g), g);
    }
    // Everything but the surface is the same in every mode.
    const rest = (l) => l.filter((n) => !n.startsWith('computer_') && !(n in GROUPS) && !members.includes(n));
    assert.deepEqual(rest(names.default), rest(names.split));
    assert.deepEqual(rest(names.default), rest(names.both));
    // The batch tool takes every action a split tool does.
    const batch = tools.find((tl) => tl.name === 'computer_use');
    const types = batch.inputSchema.properties.actions.items.properties.type.enum;
    assert.ok(Array.isArray(types), 'computer_use names its action types in an enum');
    assert.deepEqual(splitTools.map((n) => n.slice('computer_'.length)).filter((a) => !types.includes(a)), []);
    // A group runs its member: same result as calling the member by name.
    const c = await connect(def);
    const viaGroup = await c.callTool({ name: 'record', arguments: { op: 'list' } });
    const byName = await c.callTool({ name: 'recordings', arguments: {} });
    assert.deepEqual(viaGroup.structuredContent, byName.structuredContent);
    const bad = await c.callTool({ name: 'record', arguments: { op: 'list', id: 'x' } });
    assert.equal(bad.structuredContent?.code, 'bad_arguments');
    assert.match(bad.structuredContent.message, /record: 'id' is for stop, not list; list takes nothing but op/);
    // C1: an argument of another op is refused naming both ops and what this one takes;
    // the description says per op what it takes (generated from the members' schemas).
    const force = await c.callTool({ name: 'window', arguments: { op: 'list', force: true } });
    assert.match(force.structuredContent?.message, /window: 'force' is for close, not list; list takes app\?, pid\?, on_screen_only\?/);
    const win = defaultList.find((tl) => tl.name === 'window');
    assert.match(win.description, /Args: .*close\(force\?\).*list\(app\? pid\? on_screen_only\?\).*window: all but list/, win.description);
    // C5: every surface takes every name; --tools only says which are listed.
    const moved = await c.callTool({ name: 'computer_move', arguments: { x: 10, y: 10 } });
    assert.notEqual(moved.isError, true, JSON.stringify(moved).slice(0, 300));
    const cs = await connect(split);
    for (const [name, args] of [['computer_use', { actions: [{ type: 'move', x: 12, y: 12 }] }], ['window', { op: 'list' }], ['record', { op: 'list' }]]) {
      const r = await cs.callTool({ name, arguments: args });
      assert.notEqual(r.isError, true, `${name} on --tools split: ${JSON.stringify(r).slice(0, 300)}`);
    }
    await cs.close();
    await c.close();
    await def.stop();
    await split.stop();
  });

  await client.close();
  await both.stop();
  await fixture.stop();
});
