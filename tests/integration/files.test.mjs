// The file tools and REST's /api/v1/files: uploads and downloads round-trip
// byte-exact over MCP and REST (text, binary with NUL bytes, empty, near the
// size limit); every refusal of the safe-output rules leaves the disk as it
// was (the whole tree and the contents are compared before and after); files
// are 0600 and no staging is left behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { linkSync, lstatSync, readdirSync, readFileSync, readlinkSync, mkdirSync, symlinkSync, writeFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import http from 'node:http';
import { startXvfb, startDeskd, startDeskdOnTmpfs, tmpfsSetupMissing, tempDir, run, putExpectContinue } from './lib/harness.mjs';
import { openLive } from './lib/live.mjs';

const LIMIT = 2 << 20;   // --max-file-size for this test: 2 MiB
const VIEW = 'view-token-for-files';
const V = '2026-07-28';

/** A stateless MCP tools/call; returns the CallToolResult. */
async function mcp(d, name, args) {
  const body = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args,
    _meta: { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/clientInfo': { name: 'files-test', version: '1' } } } };
  const r = await fetch(d.url + '/mcp', { method: 'POST', body: JSON.stringify(body), headers: {
    authorization: `Bearer ${d.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
    'mcp-protocol-version': V, 'mcp-method': 'tools/call', 'mcp-name': name } });
  const text = await r.text();
  assert.equal(r.status, 200, text.slice(0, 300));
  const line = text.startsWith('{') ? text : text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).find((l) => l.includes('"result"'));
  return JSON.parse(line).result;
}

/** A request with the path sent exactly as written (fetch would resolve %2e%2e). */
function rawRequest(d, method, path, body = '') {
  const url = new URL(d.url);
  return new Promise((resolve, reject) => {
    const r = http.request({ host: url.hostname, port: url.port, path, method, headers: { authorization: `Bearer ${d.token}` } }, (res) => {
      let data = '';
      res.on('data', (c) => { data += c; });
      res.on('end', () => resolve({ status: res.statusCode, text: data }));
    });
    r.on('error', reject);
    r.end(body);
  });
}

/** Everything under dir: type, mode, size, content hash, link target. */
function snapshot(dir) {
  const out = {};
  const walk = (d, rel) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(p);
      if (st.isSymbolicLink()) out[r] = { link: readlinkSync(p) };
      else if (st.isDirectory()) { out[r] = { dir: true, mode: st.mode & 0o777 }; walk(p, r); }
      else if (st.isFile()) out[r] = { mode: st.mode & 0o777, size: st.size, sha: createHash('sha256').update(readFileSync(p)).digest('hex') };
      else out[r] = { other: true };
    }
  };
  walk(dir, '');
  return out;
}

const sha = (b) => createHash('sha256').update(b).digest('hex');

test('files: round trips over MCP and REST, exact, 0600, no staging left', async (t) => {
  const x = await startXvfb();
  const d = await startDeskd({ display: x.display, args: ['--max-file-size', String(LIMIT), '--view-token', VIEW] });
  t.after(async () => { await d.stop(); await x.stop(); });
  const root = join(d.dataDir, 'files');

  // The root is made on first use, 0700.
  const empty = await d.tool('file_list', {});
  assert.equal(empty.status, 200, JSON.stringify(empty.body));
  assert.deepEqual(empty.body.structuredContent, { path: '', entries: [], truncated: false });
  assert.equal(statSync(root).mode & 0o777, 0o700);

  const texts = ['', 'hello\n', '   spaces at both ends   ', 'crlf\r\nline\r\n', 'tabs\tand emoji 😀 👩‍👩‍👧'];  // NUL bytes: base64 (deskd's JSON refuses \u0000)
  for (const [i, text] of texts.entries()) {
    const up = await mcp(d, 'file_upload', { path: `text-${i}.txt`, data: text });
    assert.notEqual(up.isError, true, JSON.stringify(up));
    assert.equal(up.structuredContent.bytes, Buffer.byteLength(text));
    assert.equal(up.structuredContent.sha256, sha(Buffer.from(text)));
    assert.ok(readFileSync(join(root, `text-${i}.txt`)).equals(Buffer.from(text)), `on disk: ${JSON.stringify(text)}`);
    const down = await mcp(d, 'file_download', { path: `text-${i}.txt` });
    assert.equal(down.structuredContent.encoding, 'text');
    assert.equal(down.structuredContent.data, text);
  }
  // Binary: every byte value, NULs and invalid UTF-8 included; base64 both ways.
  const bin = Buffer.concat([Buffer.from([0, 0, 255, 0xc3, 0x28]), randomBytes(4096), Buffer.alloc(16)]);
  const ub = await mcp(d, 'file_upload', { path: 'bin.dat', data: bin.toString('base64'), encoding: 'base64' });
  assert.equal(ub.structuredContent.bytes, bin.length, JSON.stringify(ub));
  assert.ok(readFileSync(join(root, 'bin.dat')).equals(bin));
  const db = await mcp(d, 'file_download', { path: 'bin.dat' });
  assert.equal(db.structuredContent.encoding, 'base64', 'not UTF-8: base64 by default');
  assert.ok(Buffer.from(db.structuredContent.data, 'base64').equals(bin));
  const asText = await mcp(d, 'file_download', { path: 'bin.dat', encoding: 'text' });
  assert.equal(asText.isError, true);
  assert.equal(asText.structuredContent.code, 'bad_arguments');
  const b64 = await mcp(d, 'file_download', { path: 'text-1.txt', encoding: 'base64' });
  assert.equal(Buffer.from(b64.structuredContent.data, 'base64').toString(), 'hello\n');

  // At the limit over MCP (its base64 is over --max-body: file_upload takes large bodies).
  const big = randomBytes(LIMIT);
  const ubig = await mcp(d, 'file_upload', { path: 'big-mcp.bin', data: big.toString('base64'), encoding: 'base64' });
  assert.equal(ubig.structuredContent?.bytes, LIMIT, JSON.stringify(ubig).slice(0, 300));
  assert.ok(readFileSync(join(root, 'big-mcp.bin')).equals(big));

  // REST: raw bytes in and out.
  const put = await d.fetch('/api/v1/files/rest.bin', { method: 'PUT', body: bin });
  assert.equal(put.status, 200, await put.clone().text());
  assert.deepEqual(await put.json(), { path: 'rest.bin', bytes: bin.length, sha256: sha(bin) });
  const get = await d.fetch('/api/v1/files/rest.bin');
  assert.equal(get.status, 200);
  assert.equal(get.headers.get('content-type'), 'application/octet-stream');
  assert.equal(get.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(get.headers.get('content-disposition'), 'attachment; filename="rest.bin"');
  assert.ok(Buffer.from(await get.arrayBuffer()).equals(bin));
  const putEmpty = await d.fetch('/api/v1/files/empty', { method: 'PUT', body: '' });
  assert.equal(putEmpty.status, 200);
  assert.equal(statSync(join(root, 'empty')).size, 0);
  const getEmpty = await d.fetch('/api/v1/files/empty');
  assert.equal((await getEmpty.arrayBuffer()).byteLength, 0);
  const bigRest = randomBytes(LIMIT);
  const putBig = await d.fetch('/api/v1/files/big-rest.bin', { method: 'PUT', body: bigRest });
  assert.equal(putBig.status, 200, await putBig.clone().text());
  assert.ok(Buffer.from(await (await d.fetch('/api/v1/files/big-rest.bin')).arrayBuffer()).equals(bigRest));
  // A subdirectory that exists; the listing shows it.
  mkdirSync(join(root, 'sub'));
  assert.equal((await d.fetch('/api/v1/files/sub/inner.txt', { method: 'PUT', body: 'inner' })).status, 200);
  const list = await (await d.fetch('/api/v1/files/')).json();
  const names = list.entries.map((e) => e.name);
  assert.deepEqual(names, [...names].sort());
  assert.ok(names.includes('sub') && names.includes('rest.bin'));
  assert.equal(list.entries.find((e) => e.name === 'rest.bin').bytes, bin.length);
  assert.equal(list.entries.find((e) => e.name === 'sub').type, 'directory');
  const subList = await (await d.fetch('/api/v1/files/sub/')).json();
  assert.deepEqual(subList.entries.map((e) => [e.name, e.type, e.bytes]), [['inner.txt', 'file', 5]]);
  const viaTool = await mcp(d, 'file_list', { path: 'sub' });
  assert.deepEqual(viaTool.structuredContent.entries.map((e) => e.name), ['inner.txt']);

  // The files group tool is the same call (over MCP, a body over --max-body:
  // the group takes large arguments as its member does).
  const viaGroup = await mcp(d, 'files', { op: 'upload', path: 'group.bin', data: randomBytes(900 * 1024).toString('base64'), encoding: 'base64' });
  assert.equal(viaGroup.structuredContent?.bytes, 900 * 1024, JSON.stringify(viaGroup).slice(0, 300));
  const groupList = await mcp(d, 'files', { op: 'list' });
  assert.ok(groupList.structuredContent.entries.some((e) => e.name === 'group.bin'));
  const groupDown = await mcp(d, 'files', { op: 'download', path: 'text-1.txt' });
  assert.equal(groupDown.structuredContent.data, 'hello\n');

  // Every file is 0600; no staging anywhere.
  const snap = snapshot(root);
  for (const [name, e] of Object.entries(snap)) {
    assert.ok(!name.split('/').some((c) => c.startsWith('.deskd-staging')), `staging left: ${name}`);
    if (e.size !== undefined) assert.equal(e.mode, 0o600, `${name} is 0600`);
  }
});

test('files: every refusal leaves the disk untouched', async (t) => {
  const x = await startXvfb();
  const d = await startDeskd({ display: x.display, args: ['--max-file-size', String(LIMIT), '--view-token', VIEW] });
  t.after(async () => { await d.stop(); await x.stop(); });
  const root = join(d.dataDir, 'files');
  const outside = tempDir('deskd-outside-');
  writeFileSync(join(outside, 'secret.txt'), 'outside secret');
  assert.equal((await d.tool('file_upload', { path: 'existing.txt', data: 'original' })).status, 200);
  mkdirSync(join(root, 'dir'));
  symlinkSync(join(outside, 'secret.txt'), join(root, 'link-to-secret'));
  symlinkSync(join(outside, 'nothing-here'), join(root, 'dangling'));
  symlinkSync(outside, join(root, 'linked-dir'));
  linkSync(join(outside, 'secret.txt'), join(root, 'hardlink'));   // same filesystem (/tmp): TRUST R9
  run('mkfifo', [join(root, 'fifo')]);
  const before = snapshot(root);
  const outsideBefore = snapshot(outside);
  const parentBefore = readdirSync(d.dataDir).sort();

  const uploads = [
    ['existing.txt', 'output_exists', 'an existing file'],
    ['hardlink', 'output_exists', 'a hard link to a file outside (never written through)'],
    ['link-to-secret', 'output_exists', 'a symlink to a file'],
    ['dangling', 'output_exists', 'a dangling symlink'],
    ['dir', 'output_exists', 'a directory as the target'],
    ['../escape.txt', 'bad_path', '..'],
    ['dir/../escape.txt', 'bad_path', '.. inside'],
    ['./x.txt', 'bad_path', '.'],
    ['/tmp/absolute.txt', 'bad_path', 'an absolute path'],
    [join(root, 'absolute-in-root.txt'), 'bad_path', 'an absolute path into the root'],
    ['linked-dir/new.txt', 'bad_path', 'outside the root through a symlinked directory'],
    ['missing-dir/new.txt', 'not_found', 'a directory that does not exist'],
    ['existing.txt/x', 'bad_path', 'a file as a directory'],
    ['a//b', 'bad_path', 'an empty component'],
    ['trailing/', 'bad_path', 'a trailing slash'],
    ['', 'bad_path', 'an empty path'],
    ['.deskd-staging-abc', 'bad_path', 'a staging name'],
    ['x'.repeat(300), 'bad_path', 'a name over NAME_MAX'],
    // Names people would misread (TRUST R10): controls, bidirectional controls.
    ['name\nwith\nnewline', 'bad_path', 'a newline', /U\+000A \(a control character\) at byte 4/],
    ['\u202eevil', 'bad_path', 'U+202E (right-to-left override)', /U\+202E \(a bidirectional control character\)/],
    ['dir/x\u2066y', 'bad_path', 'U+2066 (an isolate) in a directory', /U\+2066/],
    ['esc\u001b[2J', 'bad_path', 'an escape sequence', /U\+001B/],
    ['c1\u0085x', 'bad_path', 'a C1 control (NEL)', /U\+0085/],
    ['tab\tname', 'bad_path', 'a tab', /U\+0009/],
  ];
  for (const [path, code, what, says] of uploads) {
    for (const via of ['rest-tool', 'mcp']) {
      const r = via === 'mcp' ? await mcp(d, 'file_upload', { path, data: 'attack' })
        : (await d.tool('file_upload', { path, data: 'attack' })).body;
      const sc = via === 'mcp' ? r.structuredContent : r.error;
      assert.equal(sc?.code, code, `${what} (${via}): ${JSON.stringify(r).slice(0, 300)}`);
      assert.ok(sc.message.length > 10, `${what}: a message that says why`);
      if (says) {
        assert.match(sc.message, says, `${what}: names the code point`);
        assert.ok(!sc.message.includes(path), `${what}: the name itself is not quoted`);
      }
    }
    assert.deepEqual(snapshot(root), before, `${what}: the root is untouched`);
  }
  // A NUL in a JSON path: deskd's JSON parser refuses \u0000 anywhere (before any tool runs).
  const nulRest = await d.fetch('/api/v1/tools/file_upload', { method: 'POST', body: '{"path":"nul\\u0000byte","data":"x"}' });
  assert.equal(nulRest.status, 400);
  assert.match(await nulRest.text(), /u0000|NUL/);
  // Over the limit, both ways.
  const over = await mcp(d, 'file_upload', { path: 'over.bin', data: randomBytes(LIMIT + 1).toString('base64'), encoding: 'base64' });
  assert.equal(over.structuredContent.code, 'too_large');
  // As curl sends a large body: with Expect: 100-continue, so the 413 comes
  // before the body (without it, the refusal may close the connection while
  // the client is still writing, and the client sees EPIPE, not the 413).
  const overRest = await putExpectContinue(d, '/api/v1/files/over.bin', randomBytes(LIMIT + 1));
  assert.equal(overRest.status, 413);
  // REST refusals.
  for (const [path, status, what] of [
    ['existing.txt', 409, 'an existing file'], ['dangling', 409, 'a dangling symlink'], ['linked-dir/x', 400, 'a symlinked directory'],
    ['a%00b', 400, 'a NUL (%00)'], ['%2e%2e/escape.txt', 400, 'an encoded ..'], ['..%2fescape.txt', 400, 'an encoded ../'],
    ['dir', 409, 'a directory'], ['dir/', 400, 'a trailing /'],
    ['nl%0aname', 400, 'a newline (%0a)'], ['%E2%80%AEevil', 400, 'U+202E'], ['bad%ffutf8', 400, 'invalid UTF-8 (%ff)'],
    ['del%7f', 400, 'DEL (%7f)'],
  ]) {
    const r = await rawRequest(d, 'PUT', `/api/v1/files/${path}`, 'attack');
    assert.equal(r.status, status, `PUT ${what}: ${r.text}`);
    if (status === 400) assert.equal(JSON.parse(r.text).error.code, 'bad_path', `PUT ${what}: ${r.text}`);
  }
  // The view token may not upload, download or list.
  const asView = (path, init = {}) => fetch(d.url + path, { ...init, headers: { authorization: `Bearer ${VIEW}`, 'content-type': 'application/json' } });
  for (const [name, args] of [['file_upload', { path: 'v.txt', data: 'v' }], ['file_download', { path: 'existing.txt' }], ['file_list', {}]]) {
    const r = await asView(`/api/v1/tools/${name}`, { method: 'POST', body: JSON.stringify(args) });
    assert.equal(r.status, 403, name);
  }
  for (const op of ['download', 'list', 'upload']) {
    const r = await asView('/api/v1/tools/files', { method: 'POST', body: JSON.stringify({ op, path: 'existing.txt', ...(op === 'upload' ? { data: 'v' } : {}) }) });
    assert.equal(r.status, 403, `files ${op}`);
  }
  assert.equal((await asView('/api/v1/files/existing.txt')).status, 403);
  assert.equal((await asView('/api/v1/files/')).status, 403);
  assert.equal((await asView('/api/v1/files/v.txt', { method: 'PUT', body: 'v' })).status, 403);
  assert.deepEqual(snapshot(root), before, 'uploads refused: the root is untouched');
  assert.deepEqual(snapshot(outside), outsideBefore, 'nothing outside the root changed');
  assert.deepEqual(readdirSync(d.dataDir).sort(), parentBefore, 'nothing escaped into the data dir');

  // Downloads: symlinks, directories, FIFOs and the outside are refused.
  for (const [path, code, what] of [
    ['link-to-secret', 'bad_path', 'a symlink'], ['dangling', 'bad_path', 'a dangling symlink'],
    ['linked-dir/secret.txt', 'bad_path', 'through a symlinked directory'], ['../token', 'bad_path', '..'],
    ['dir', 'bad_path', 'a directory'], ['fifo', 'bad_path', 'a FIFO (and no hang)'],
    ['hardlink', 'bad_path', 'a hard link to a file outside'],
    ['nope.txt', 'not_found', 'a missing file'],
  ]) {
    const r = await mcp(d, 'file_download', { path });
    assert.equal(r.structuredContent?.code, code, `download ${what}: ${JSON.stringify(r).slice(0, 300)}`);
    assert.ok(!JSON.stringify(r).includes('outside secret'), `${what}: no data leaks`);
  }
  const hard = await mcp(d, 'file_download', { path: 'hardlink' });
  assert.match(hard.structuredContent.message, /has other hard links.*deskd serves only files with one link/);
  for (const [path, status] of [['link-to-secret', 400], ['hardlink', 400], ['linked-dir/secret.txt', 400], ['nope.txt', 404], ['dir', 400],
    ['a%00b', 400], ['linked-dir/', 400], ['%2e%2e/token', 400], ['..%2ftoken', 400]]) {
    const r = await rawRequest(d, 'GET', `/api/v1/files/${path}`);
    assert.equal(r.status, status, `GET ${path}: ${r.text}`);
    assert.ok(!r.text.includes('outside secret') && !r.text.includes(d.token));
  }
  // Such names put there by someone else: not listed (counted in skipped),
  // not downloadable by that name.
  for (const name of ['planted\nname', '\u202eplanted', 'bidi\u200fmark']) writeFileSync(join(root, name), 'planted');
  const listed = await mcp(d, 'file_list', {});
  const listedNames = listed.structuredContent.entries.map((e) => e.name);
  assert.ok(!listedNames.some((n) => n.includes('planted') || n.includes('bidi')), JSON.stringify(listedNames));
  assert.equal(listed.structuredContent.skipped, 3);
  assert.ok(listedNames.includes('existing.txt'));
  for (const name of ['planted\nname', '\u202eplanted']) {
    const r = await mcp(d, 'file_download', { path: name });
    assert.equal(r.structuredContent?.code, 'bad_path', JSON.stringify(r).slice(0, 300));
  }
  assert.equal((await rawRequest(d, 'GET', '/api/v1/files/planted%0aname')).status, 400);
  // Over the limit for reading too (a file put there by someone else).
  writeFileSync(join(root, 'huge.bin'), Buffer.alloc(LIMIT + 1));
  assert.equal((await mcp(d, 'file_download', { path: 'huge.bin' })).structuredContent.code, 'too_large');
  assert.equal((await d.fetch('/api/v1/files/huge.bin')).status, 413);
  // The existing file kept its content through all of it.
  assert.equal(readFileSync(join(root, 'existing.txt'), 'utf8'), 'original');
});

test('files: a full disk is 507 no_space, nothing half-written, no staging left', { skip: tmpfsSetupMissing() ? `the 2 MiB tmpfs needs ${tmpfsSetupMissing()}` : false }, async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const d = await startDeskdOnTmpfs(t, x.display, '2m', { rootFlag: '--files-root' });
  const first = randomBytes(1500 * 1024);
  const put = await d.fetch('/api/v1/files/first.bin', { method: 'PUT', body: first });
  assert.equal(put.status, 200, await put.clone().text());
  // The second does not fit: over REST's PUT and the tool alike.
  const second = randomBytes(1500 * 1024);
  const full = await d.fetch('/api/v1/files/second.bin', { method: 'PUT', body: second });
  const body = await full.json();
  assert.equal(full.status, 507, JSON.stringify(body));
  assert.equal(body.error.code, 'no_space');
  assert.match(body.error.message, /no space left for 'second\.bin'.*nothing was written/i);
  const viaTool = await d.tool('file_upload', { path: 'third.bin', data: second.toString('base64'), encoding: 'base64' });
  assert.equal(viaTool.status, 507, JSON.stringify(viaTool.body).slice(0, 300));
  assert.equal(viaTool.body.error.code, 'no_space');
  // Only the first file, whole; no staging.
  assert.deepEqual(readdirSync(d.view).sort(), ['first.bin']);
  assert.ok(readFileSync(join(d.view, 'first.bin')).equals(first));
  // The listing agrees.
  const list = await d.tool('file_list', {});
  assert.deepEqual(list.body.structuredContent.entries.map((e) => e.name), ['first.bin']);
});

// docs/CONTROL.md: while a person holds the desktop, reading the files root
// keeps working (the files stay there after the hand-back, so holding them
// back would protect nothing; the person sees the screen, not the files);
// writing is refused like every acting tool (TRUST R13).
test('files while a person holds control: list and download work, uploads are human_in_control', async (t) => {
  const x = await startXvfb();
  const d = await startDeskd({ display: x.display });
  t.after(async () => { await d.stop(); await x.stop(); });
  const root = join(d.dataDir, 'files');
  assert.equal((await d.tool('file_upload', { path: 'before.txt', data: 'written before' })).status, 200);
  const c = await openLive(d);
  t.after(() => c.close());
  const control = () => [...c.texts].reverse().find((m) => m.type === 'control');
  await c.until(() => c.hello && control());
  c.ws.send(JSON.stringify({ type: 'take' }));
  await c.until(() => control()?.holder === 'you', { what: 'the lease' });

  const list = await d.tool('file_list', {});
  assert.equal(list.status, 200, JSON.stringify(list.body));
  assert.deepEqual(list.body.structuredContent.entries.map((e) => e.name), ['before.txt']);
  const down = await d.tool('file_download', { path: 'before.txt' });
  assert.equal(down.status, 200, JSON.stringify(down.body));
  assert.equal(down.body.structuredContent.data, 'written before');
  assert.equal((await mcp(d, 'files', { op: 'download', path: 'before.txt' })).structuredContent.data, 'written before');
  const get = await d.fetch('/api/v1/files/before.txt');
  assert.equal(get.status, 200);
  assert.equal(await get.text(), 'written before');
  assert.equal((await d.fetch('/api/v1/files/')).status, 200);

  for (const [what, r] of [
    ['file_upload', await d.tool('file_upload', { path: 'during.txt', data: 'x' })],
    ['files upload', await d.tool('files', { op: 'upload', path: 'during.txt', data: 'x' })],
  ]) {
    assert.equal(r.status, 409, `${what}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.code, 'human_in_control', what);
  }
  const put = await d.fetch('/api/v1/files/during.txt', { method: 'PUT', body: 'x' });
  assert.equal(put.status, 409, await put.clone().text());
  assert.equal((await put.json()).error.code, 'human_in_control');
  const overMcp = await mcp(d, 'file_upload', { path: 'during.txt', data: 'x' });
  assert.equal(overMcp.structuredContent.code, 'human_in_control');
  assert.deepEqual(readdirSync(root), ['before.txt'], 'nothing was written');

  c.ws.send(JSON.stringify({ type: 'release' }));
  await c.until(() => control()?.holder === 'none', { what: 'the hand-back' });
  assert.equal((await d.tool('file_upload', { path: 'after.txt', data: 'y' })).status, 200);
});
