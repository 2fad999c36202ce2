// The clipboard tools against real X clients: what deskd writes, xclip and
// xsel read back byte-exact; what xclip sets, deskd reads byte-exact; PNG
// both ways; the limits and refusals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { crc32, deflateSync } from 'node:zlib';
import { startXvfb, startDeskd, launch, waitUntil, putExpectContinue } from './lib/harness.mjs';

const CORPUS = [
  '',
  '   leading and trailing spaces   ',
  'line one\r\nline two\r\n',
  'tabs\there\tand\nnewlines\n\n',
  'héllo wörld, ça va? Ÿ ‰ ⇔ ✗',
  'emoji 😀 👩‍👩‍👧 🇫🇷 and a combining e\u0301',
  'שלום עולם, مرحبا بالعالم',
];
const MB = 'the quick brown fox jumps over the lazy dog 0123456789\n'.repeat(20000).slice(0, 1 << 20);
// 1 MiB of UTF-8 from 1- to 4-byte characters, ZWJ sequences, RTL, controls
// and JSON's escapes: several INCR chunks whichever side serves it.
const MB_UTF8 = (() => {
  const parts = ['Grüße, ça va? ', 'Привет, мир ', '日本語のテキスト ', '😀 👩‍👩‍👧 🇫🇷 e\u0301 ', 'שלום عالم ', '"quoted" \\ back\tslash\r\n', '½ ‰ ⇔ ✗\n'];
  let s = '';
  for (let i = 0; Buffer.byteLength(s) < 1 << 20; i++) s += parts[i % parts.length].repeat(64) + i;
  return s;
})();

// clipboard_read's text is its first block, once (not again in structuredContent).
function readText(r) {
  assert.equal(r.body.content[0].type, 'text');
  assert.equal(r.body.structuredContent.text, undefined, 'the text is not carried twice');
  assert.equal(r.body.structuredContent.bytes, Buffer.byteLength(r.body.content[0].text));
  return r.body.content[0].text;
}

function xclipOut(display, args) {
  const r = spawnSync('xclip', ['-o', ...args], { env: { ...process.env, DISPLAY: display }, timeout: 10000, maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, `xclip -o ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** xclip owning the selection with these bytes, in the foreground (stopped by PID). */
async function xclipIn(display, bytes, args = []) {
  const p = launch('xclip -i', 'xclip', ['-quiet', '-i', ...args], {
    env: { ...process.env, DISPLAY: display }, stdio: ['pipe', 'pipe', 'pipe'] });
  p.proc.stdin.end(bytes);
  await waitUntil(() => p.log.join('').includes('Waiting for selection requests'), { timeout: 5000, what: 'xclip to own the selection' });
  return p;
}

/** A 2x1 PNG written by hand (red, blue). */
function png() {
  return Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAEElEQVR4nGP4z8DAwPD/PwAJ+wL+6w2xNAAAAABJRU5ErkJggg==', 'base64');
}

/** A tiny PNG that claims width x height (a decompression "bomb" header:
 *  an IDAT of a few bytes, every CRC right). fix(ihdr) may spoil it. */
function pngClaiming(width, height, { colorType = 6, bitDepth = 8, fix = null } = {}) {
  const chunk = (type, data) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = bitDepth;
  ihdr[9] = colorType;
  let png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.alloc(64))), chunk('IEND', Buffer.alloc(0))]);
  if (fix) png = fix(png);
  return png;
}

test('clipboard: deskd writes, xclip and xsel read byte-exact; xclip writes, deskd reads byte-exact', async (t) => {
  const x = await startXvfb();
  const d = await startDeskd({ display: x.display, args: ['--view-token', 'view-token-for-clipboard'] });
  const procs = [];
  t.after(async () => { for (const p of procs) await p.stop().catch(() => {}); await d.stop(); await x.stop(); });

  // A fresh display: nothing owns the clipboard.
  const empty = await d.tool('clipboard_read', {});
  assert.equal(empty.status, 404);
  assert.equal(empty.body.error.code, 'clipboard_empty');

  for (const text of [...CORPUS, MB, MB_UTF8]) {
    const label = JSON.stringify(text.slice(0, 30));
    const w = await d.tool('clipboard_write', { text });
    assert.equal(w.status, 200, `${label}: ${JSON.stringify(w.body)}`);
    assert.equal(w.body.structuredContent.bytes, Buffer.byteLength(text));
    assert.ok(xclipOut(x.display, ['-selection', 'clipboard']).equals(Buffer.from(text)), `xclip reads ${label}`);
    const xs = spawnSync('xsel', ['-o', '-b'], { env: { ...process.env, DISPLAY: x.display }, timeout: 10000, maxBuffer: 64 << 20 });
    assert.equal(xs.status, 0, String(xs.stderr));
    assert.ok(xs.stdout.equals(Buffer.from(text)), `xsel reads ${label}`);
    const r = await d.tool('clipboard_read', {});
    assert.equal(r.status, 200);
    assert.equal(readText(r), text, `deskd reads its own ${label}`);
  }

  // xclip owns it now: deskd reads what xclip has, exactly.
  for (const text of [CORPUS[1], CORPUS[2], CORPUS[5], MB, MB_UTF8]) {
    const p = await xclipIn(x.display, Buffer.from(text), ['-selection', 'clipboard']);
    procs.push(p);
    const r = await d.tool('clipboard_read', {});
    assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 300));
    assert.equal(readText(r), text, `deskd reads xclip's ${JSON.stringify(text.slice(0, 30))}`);
    await p.stop();
  }

  // PRIMARY is separate from CLIPBOARD.
  assert.equal((await d.tool('clipboard_write', { text: 'primary text', selection: 'primary' })).status, 200);
  assert.equal(xclipOut(x.display, ['-selection', 'primary']).toString(), 'primary text');
  assert.equal(readText(await d.tool('clipboard_read', { selection: 'primary' })), 'primary text');

  // Images: PNG both ways.
  const image = png();
  const wi = await d.tool('clipboard_write', { image_base64: image.toString('base64') });
  assert.equal(wi.status, 200, JSON.stringify(wi.body));
  assert.ok(xclipOut(x.display, ['-selection', 'clipboard', '-t', 'image/png']).equals(image), 'xclip reads the PNG');
  const ri = await d.tool('clipboard_read', { format: 'image' });
  assert.equal(ri.status, 200);
  assert.ok(Buffer.from(ri.body.content.find((b) => b.type === 'image').data, 'base64').equals(image));
  const pi = await xclipIn(x.display, image, ['-selection', 'clipboard', '-t', 'image/png']);
  procs.push(pi);
  const ri2 = await d.tool('clipboard_read', { format: 'image' });
  assert.equal(ri2.status, 200);
  assert.ok(Buffer.from(ri2.body.content.find((b) => b.type === 'image').data, 'base64').equals(image));
  const notText = await d.tool('clipboard_read', {});
  assert.equal(notText.status, 404, 'xclip offers only image/png');
  await pi.stop();

  // Refusals: nothing changes.
  assert.equal((await d.tool('clipboard_write', { text: 'kept' })).status, 200);
  for (const [args, code] of [
    [{ text: 'x'.repeat((8 << 20) + 1) }, 'bad_arguments'],
    [{ image_base64: Buffer.from('not a png').toString('base64') }, 'bad_arguments'],
    [{ image_base64: '%%%' }, 'bad_arguments'],
    [{}, 'bad_arguments'],
    [{ text: 'a', image_base64: image.toString('base64') }, 'bad_arguments'],
  ]) {
    const r = await d.tool('clipboard_write', args);
    assert.equal(r.status, 400, JSON.stringify(r.body).slice(0, 200));
    assert.equal(r.body.error.code, code);
  }
  assert.equal(xclipOut(x.display, ['-selection', 'clipboard']).toString(), 'kept');

  // PNG bombs and broken headers (TRUST R14): the IHDR is read, nothing is
  // decoded. Over 64 Mi pixels is too_large (413) with the declared size;
  // a header that is not a PNG's is bad_arguments. Nothing is copied.
  const bomb = pngClaiming(50000, 50000);
  assert.ok(bomb.length < 120, `a tiny file: ${bomb.length} bytes`);
  const wb = await d.tool('clipboard_write', { image_base64: bomb.toString('base64') });
  assert.equal(wb.status, 413, JSON.stringify(wb.body));
  assert.equal(wb.body.error.code, 'too_large');
  assert.match(wb.body.error.message, /declares 50000x50000 pixels \(2500000000\), over the limit of 67108864/);
  assert.equal(wb.body.error.width, 50000);
  for (const [what, png] of [
    ['a bad IHDR CRC', pngClaiming(10, 10, { fix: (b) => { b[30] ^= 0xff; return b; } })],
    ['bit depth 3', pngClaiming(10, 10, { bitDepth: 3 })],
    ['colour type 5', pngClaiming(10, 10, { colorType: 5 })],
    ['width 0', pngClaiming(0, 10)],
    ['cut inside the IHDR', pngClaiming(10, 10).subarray(0, 20)],
    ['no IHDR first', pngClaiming(10, 10, { fix: (b) => { b.write('IHDX', 12, 'latin1'); return b; } })],
  ]) {
    const r = await d.tool('clipboard_write', { image_base64: png.toString('base64') });
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.code, 'bad_arguments', what);
    assert.match(r.body.error.message, /image_base64 is not a PNG: /, what);
  }
  // At the limit (8192x8192) the header passes.
  assert.equal((await d.tool('clipboard_write', { image_base64: pngClaiming(8192, 8192).toString('base64') })).status, 200);
  assert.equal((await d.tool('clipboard_write', { text: 'kept' })).status, 200);
  assert.equal(xclipOut(x.display, ['-selection', 'clipboard']).toString(), 'kept');
  // An owner serving a bomb: not passed on to the agent.
  const pb = await xclipIn(x.display, pngClaiming(20000, 20000), ['-selection', 'clipboard', '-t', 'image/png']);
  procs.push(pb);
  const rb = await d.tool('clipboard_read', { format: 'image' });
  assert.equal(rb.status, 413, JSON.stringify(rb.body));
  assert.equal(rb.body.error.code, 'too_large');
  assert.match(rb.body.error.message, /the clipboard owner's image\/png declares 20000x20000/);
  await pb.stop();
  assert.equal((await d.tool('clipboard_write', { text: 'kept' })).status, 200);

  // The view token may not read the clipboard, nor write it.
  const view = { ...d, token: 'view-token-for-clipboard' };
  for (const name of ['clipboard_read', 'clipboard_write']) {
    const r = await fetch(`${d.url}/api/v1/tools/${name}`, { method: 'POST', body: '{"text":"x"}',
      headers: { authorization: `Bearer ${view.token}`, 'content-type': 'application/json' } });
    assert.equal(r.status, 403, name);
  }
  assert.equal(xclipOut(x.display, ['-selection', 'clipboard']).toString(), 'kept');
});

test('clipboard over REST as bytes: PUT /api/v1/clipboard sets the text, GET reads it back, no JSON', async (t) => {
  const x = await startXvfb();
  const d = await startDeskd({ display: x.display, args: ['--view-token', 'view-token-for-clipboard'] });
  const procs = [];
  t.after(async () => { for (const p of procs) await p.stop().catch(() => {}); await d.stop(); await x.stop(); });
  const call = (method, query, { body, token = d.token, type } = {}) => fetch(`${d.url}/api/v1/clipboard${query}`, {
    method, body, headers: { authorization: `Bearer ${token}`, ...(type ? { 'content-type': type } : {}) } });

  const empty = await call('GET', '');
  assert.equal(empty.status, 404);
  assert.equal((await empty.json()).error.code, 'clipboard_empty');

  for (const text of [...CORPUS, MB_UTF8]) {
    const label = JSON.stringify(text.slice(0, 30));
    const w = await call('PUT', '', { body: Buffer.from(text) });
    const wb = await w.json();
    assert.equal(w.status, 200, `${label}: ${JSON.stringify(wb)}`);
    assert.deepEqual(wb, { selection: 'clipboard', format: 'text', bytes: Buffer.byteLength(text) });
    assert.ok(xclipOut(x.display, ['-selection', 'clipboard']).equals(Buffer.from(text)), `xclip reads ${label}`);
    const r = await call('GET', '');
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.ok(Buffer.from(await r.arrayBuffer()).equals(Buffer.from(text)), `GET gives back ${label} byte-exact`);
  }
  // What another client owns comes back as it is, too.
  const p = await xclipIn(x.display, Buffer.from(MB), ['-selection', 'clipboard']);
  procs.push(p);
  assert.equal(await (await call('GET', '')).text(), MB);
  await p.stop();

  // PRIMARY, and an image read as PNG bytes.
  assert.equal((await call('PUT', '?selection=primary', { body: 'primary text' })).status, 200);
  assert.equal(xclipOut(x.display, ['-selection', 'primary']).toString(), 'primary text');
  assert.equal(await (await call('GET', '?selection=primary')).text(), 'primary text');
  const image = png();
  assert.equal((await d.tool('clipboard_write', { image_base64: image.toString('base64') })).status, 200);
  const ri = await call('GET', '?format=image');
  assert.equal(ri.status, 200);
  assert.equal(ri.headers.get('content-type'), 'image/png');
  assert.ok(Buffer.from(await ri.arrayBuffer()).equals(image));
  const notText = await call('GET', '');
  assert.equal(notText.status, 404, 'the clipboard holds only an image');

  // Refusals: a clear error, and the clipboard keeps what it had.
  assert.equal((await call('PUT', '', { body: 'kept' })).status, 200);
  for (const [what, opts, status, code] of [
    ['Latin-1, not UTF-8', { body: Buffer.from([0x63, 0xe9, 0x0a]) }, 400, 'bad_arguments'],
    ['a NUL byte', { body: Buffer.from('a\0b') }, 400, 'bad_arguments'],
    ['a PNG body', { body: image, type: 'image/png' }, 415, 'bad_arguments'],
    ['over the clipboard limit', { body: Buffer.alloc((8 << 20) + 1, 0x61) }, 400, 'bad_arguments'],
    ['an unknown selection', { body: 'x', query: '?selection=secondary' }, 400, 'bad_arguments'],
    ['the view token', { body: 'x', token: 'view-token-for-clipboard' }, 403, null],
  ]) {
    const r = await call('PUT', opts.query ?? '', opts);
    assert.equal(r.status, status, `${what}: ${r.status}`);
    const body = await r.json();
    if (code) assert.equal(body.error.code, code, `${what}: ${JSON.stringify(body)}`);
  }
  // Over --max-clipboard-body: 413 before the body is sent (as curl sends it).
  const over = await putExpectContinue(d, '/api/v1/clipboard', Buffer.alloc((16 << 20) + 1, 0x61));
  assert.equal(over.status, 413);
  assert.equal(JSON.parse(over.text).error.code, 'payload_too_large');
  assert.equal(xclipOut(x.display, ['-selection', 'clipboard']).toString(), 'kept');
  const viewRead = await call('GET', '', { token: 'view-token-for-clipboard' });
  assert.equal(viewRead.status, 403, 'the view token may not read the clipboard');
  await viewRead.arrayBuffer();
});
