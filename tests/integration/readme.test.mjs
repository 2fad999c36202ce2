// The README's examples, as a new user pastes them: a deskd started the way
// `make run` starts it (the embedded desktop with its default xterm, the
// token generated into its data dir), then every ```sh block of "Using it
// from scripts" in one bash, in order, with the token path and the URL
// substituted; a non-zero exit fails (bash -e -o pipefail). ```console
// blocks in that section run in the same shell and must print what they
// show. The out_of_bounds text shown is what a 1920x1080 desktop answers,
// and the stdio client snippet starts a deskd that answers MCP.
//
// A command whose comment says "until Ctrl-C" streams forever: it gets
// SIGINT after 3 s (timeout -s INT), as a user would press Ctrl-C.
//
// The MCP Inspector line needs the network (npx fetches it) and Node 22.19:
// it runs only with DESKD_TEST_INSPECTOR=1. The `claude mcp add` lines would
// change the user's Claude Code configuration and are never run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, openSync, readSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { DESKD_BIN, ROOT, launch, startDeskd, tempDir, waitUntil } from './lib/harness.mjs';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const README_URL = 'http://127.0.0.1:7800';
const README_DATA_DIR = '~/.local/state/deskd';
const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

/** The text of a "## title" (or "### title") section, up to the next heading of the same or a higher level. */
function section(md, title) {
  const m = new RegExp(`^(#{2,3}) ${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`, 'm').exec(md);
  assert.ok(m, `README has a "${title}" section`);
  const rest = md.slice(m.index + m[0].length);
  const next = new RegExp(`^#{2,${m[1].length}} `, 'm').exec(rest);
  return next ? rest.slice(0, next.index) : rest;
}

/** The fenced blocks of a text, in order: [{ lang, code }]. */
function blocks(text) {
  const out = [];
  const re = /^```(\w*)\n([\s\S]*?)^```\s*$/gm;
  for (let m; (m = re.exec(text));) out.push({ lang: m[1], code: m[2] });
  return out;
}

function cleanEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  delete env.DISPLAY;
  delete env.XDG_STATE_HOME;
  for (const k of Object.keys(env)) if (k.startsWith('DESKD_')) delete env[k];
  return env;
}

/** Start deskd as `make run` does (no --token, no --display), on port 0 with its own data dir. */
async function startAsMakeRun(args = []) {
  const dir = tempDir('deskd-readme-');
  const ready = join(dir, 'ready.json');
  const p = launch('deskd (as make run)', DESKD_BIN, ['--listen', '127.0.0.1:0', '--ready-file', ready,
    '--data-dir', dir, ...args], { env: cleanEnv() });
  const info = await waitUntil(() => existsSync(ready) && JSON.parse(readFileSync(ready, 'utf8')),
    { timeout: 15000, what: 'deskd ready file' }).catch((e) => { throw new Error(e.message + '\n' + p.log.join('')); });
  Object.assign(p, info, { dataDir: dir });
  return p;
}

/** One bash script from the section's blocks; console commands are bracketed by markers. */
function script(sectionText, { dataDir, url }) {
  const sub = (s) => s.split(README_DATA_DIR).join(dataDir).split(README_URL).join(url);
  const trap = 'trap \'echo "README example failed (exit $?): $BASH_COMMAND" >&2\' ERR';
  const parts = [trap];
  const consoles = [];
  for (const b of blocks(sectionText)) {
    if (b.lang === 'sh') {
      const lines = sub(b.code).split('\n').map((l) => {
        const m = /^(.*?)\s+(#.*until Ctrl-C.*)$/.exec(l);
        return m ? `{ timeout -s INT 3 ${m[1]} || [ $? = 124 ]; }   ${m[2]}` : l;
      });
      parts.push(lines.join('\n'));
    } else if (b.lang === 'console') {
      // "$ cmd" lines, each followed by the output it shows.
      for (const chunk of b.code.split(/^\$ /m).filter((c) => c.trim())) {
        const [cmd, ...shown] = chunk.replace(/\n$/, '').split('\n');
        const i = consoles.length;
        consoles.push({ cmd, shown: sub(shown.join('\n')) });
        // stdout, then stderr: the order a terminal shows (curl prints its
        // "curl: (22) ..." as it exits, after the body).
        parts.push(`trap - ERR; set +e; echo "@@console ${i} begin"; { ${sub(cmd)}; } >.console.out 2>.console.err; `
          + `cat .console.out .console.err; echo "@@console ${i} end"; set -e; ${trap}`);
      }
    }
  }
  return { text: parts.join('\n'), consoles };
}

function run(cmd, args, opts) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });   // spawns: bash
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    const t = setTimeout(() => p.kill('SIGKILL'), opts.timeout || 60000);
    p.on('exit', (code, signal) => { clearTimeout(t); resolve({ code, signal, out, err }); });
  });
}

function head(path, n) {
  const fd = openSync(path, 'r');
  const buf = Buffer.alloc(n);
  readSync(fd, buf, 0, n, 0);
  closeSync(fd);
  return buf;
}

test('the README scripting examples pass when pasted in order (make run defaults)', async (t) => {
  assert.ok(have('curl') && have('jq'), 'the examples need curl and jq (scripts/install-deps test installs them)');
  const d = await startAsMakeRun();
  t.after(() => d.stop());
  // The default xterm is there before the first example looks for a window.
  await waitUntil(async () => {
    const token = readFileSync(join(d.dataDir, 'token'), 'utf8').trim();
    const r = await fetch(d.url + '/api/v1/windows', { headers: { authorization: `Bearer ${token}` } });
    return (await r.json()).windows.length > 0;
  }, { timeout: 10000, what: 'the default xterm' });

  const { text, consoles } = script(section(README, 'Using it from scripts'), { dataDir: d.dataDir, url: d.url });
  assert.ok(consoles.length >= 1, 'a console example');
  const cwd = tempDir('deskd-readme-cwd-');
  const r = await run('bash', ['-e', '-o', 'pipefail', '-c', text], { cwd, env: cleanEnv(), timeout: 90000 });
  assert.equal(r.code, 0, `bash exited ${r.code ?? r.signal}\n--- stderr ---\n${r.err}\n--- stdout ---\n${r.out.slice(-4000)}`);

  // What the examples wrote and printed.
  assert.deepEqual([...head(join(cwd, 'screen.png'), 4)], [0x89, 0x50, 0x4e, 0x47], 'screen.png is a PNG');
  assert.deepEqual([...head(join(cwd, 'small.jpg'), 2)], [0xff, 0xd8], 'small.jpg is a JPEG');
  const part = head(join(cwd, 'part.png'), 24);
  assert.deepEqual([part.readUInt32BE(16), part.readUInt32BE(20)], [400, 120], 'part.png is the 400x120 region');
  assert.equal(head(join(cwd, 'demo.mp4'), 8).toString('latin1', 4, 8), 'ftyp', 'demo.mp4 is an MP4');
  assert.equal(readFileSync(join(cwd, 'notes-back.txt'), 'utf8'), 'hello from the host\n', 'the file came back');
  assert.match(r.out, /"action": "paste",\s+"status": "ok"/, 'the paste example ran (the xterm took the clipboard)');
  assert.match(r.out, /^hello from the host$/m, 'the files tool downloaded it');
  assert.match(r.out, /"action": "type",\s+"status": "ok"/, 'the typing example ran');
  assert.match(r.out, /^ok$/m, '/healthz');
  assert.match(r.out, /^data: \{"type":"event"/m, 'the activity stream printed events');

  for (const [i, c] of consoles.entries()) {
    const m = new RegExp(`@@console ${i} begin\\n([\\s\\S]*?)@@console ${i} end`).exec(r.out);
    assert.ok(m, `console example ${i} ran`);
    assert.equal(m[1].replace(/\n$/, ''), c.shown, `the README shows what \`${c.cmd}\` prints`);
  }
});

test('the README\'s out_of_bounds text is what a 1920x1080 desktop answers', async (t) => {
  const shown = blocks(section(README, 'Using it from scripts')).find((b) => b.lang === 'text');
  assert.ok(shown, 'a text block with the message');
  const d = await startDeskd({ args: ['--virtual', '1920x1080', '--launch', 'none', '--tools', 'both'] });
  t.after(() => d.stop());
  const r = await d.tool('computer_click', { x: 1500, y: 300 });
  assert.equal(r.status, 400);
  assert.equal(r.body.error.code, 'out_of_bounds');
  assert.equal(r.body.error.message, shown.code.trim());
  // And its advice works.
  const ok = await d.tool('computer_click', { x: 1500, y: 300, coordinate_space: 'desktop' });
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
});

test('the README\'s stdio client snippet starts a deskd that answers MCP, on its own desktop', async (t) => {
  const snippet = blocks(section(README, 'stdio clients')).find((b) => b.lang === 'json');
  assert.ok(snippet, 'a JSON config snippet');
  const server = JSON.parse(snippet.code).mcpServers.deskd;
  assert.equal(server.command, '/usr/local/bin/deskd', 'the installed path (make install)');
  const home = tempDir('deskd-readme-home-');
  // A client may pass its $DISPLAY: the snippet's deskd still uses its own.
  const p = launch('deskd (stdio snippet)', DESKD_BIN, server.args,
    { env: cleanEnv({ HOME: home, DISPLAY: ':65000' }), stdio: ['pipe', 'pipe', 'pipe'], keepStdout: true });
  t.after(() => p.stop());
  let out = '';
  p.proc.stdout.on('data', (c) => { out += c; });
  const send = (m) => p.proc.stdin.write(JSON.stringify(m) + '\n');
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'readme', version: '1' } } });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'status', arguments: {} } });
  await waitUntil(() => out.includes('"id":2'), { timeout: 15000, what: 'the status answer' });
  const msgs = out.trim().split('\n').map((l) => JSON.parse(l));
  const status = msgs.find((m) => m.id === 2).result.structuredContent;
  assert.equal(status.display.embedded, true);
  assert.equal(status.display.available, true);
  assert.deepEqual([status.display.width, status.display.height], [1280, 800]);
  assert.ok(existsSync(join(home, '.local/state/deskd')), 'its data dir is the default one');
});

test('the README\'s MCP Inspector line lists the tools (DESKD_TEST_INSPECTOR=1: needs the network)', async (t) => {
  const block = blocks(section(README, 'MCP clients')).find((b) => b.lang === 'sh');
  const cmd = block.code.replace(/\\\n\s*/g, '').split('\n').find((l) => l.startsWith('npx '));
  assert.match(cmd, /^npx -y @modelcontextprotocol\/inspector --cli /);
  if (process.env.DESKD_TEST_INSPECTOR !== '1') {
    t.skip('set DESKD_TEST_INSPECTOR=1 to fetch the Inspector with npx and run it');
    return;
  }
  const d = await startDeskd({ args: ['--launch', 'none'] });
  t.after(() => d.stop());
  const line = `T=${d.token}; ` + cmd.split(README_URL).join(d.url);
  const r = await run('bash', ['-e', '-c', line], {
    env: { ...cleanEnv(), PATH: `${join(ROOT, 'tests/node_modules/.bin')}:${process.env.PATH}` }, timeout: 240000,
  });
  assert.equal(r.code, 0, r.err);
  const json = r.out.slice(0, r.out.lastIndexOf('}') + 1);
  assert.ok(JSON.parse(json).tools.some((tool) => tool.name === 'computer_use'));
});
