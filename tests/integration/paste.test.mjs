// paste (and type with method "paste") into real applications: a GTK3 text
// view (tests/apps/gtk3-text.py saves its buffer to a state file) and xterm
// running cat > file; the text read back is exact, and the clipboard the
// user had before (set by xclip, an image, or nothing at all) is back after.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startXvfb, startWm, startDeskd, launch, run, waitUntil, tempDir, ROOT, SLOW } from './lib/harness.mjs';

const KB100 = Array.from({ length: 2000 }, (_, i) => `line ${i}: the quick brown fox jumps over the lazy dog ✓ 😀\t${'x'.repeat(i % 7)}`).join('\n').slice(0, 100 * 1024);
const GTK_CORPUS = [
  '   spaces at both ends   ',
  'crlf\r\nline two\r\n',
  'tabs\there\tand\nnewlines\n\n',
  'emoji 😀 👩‍👩‍👧 🇫🇷 e\u0301 שלום',
  KB100,
];
// A terminal turns CR and LF alike into Enter: its corpus has no CR.
const TERM_CORPUS = ['   spaces at both ends   \n', 'tabs\there\tand\nnewlines\n', 'emoji 😀 👩‍👩‍👧 🇫🇷 ü\n', KB100 + '\n'];

const xenv = (display) => ({ ...process.env, DISPLAY: display, LC_ALL: 'C.UTF-8' });

function xclipOut(display, sel = 'clipboard', type) {
  return run('xclip', ['-o', '-selection', sel, ...(type ? ['-t', type] : [])], { env: xenv(display), timeout: 10000, maxBuffer: 64 << 20 });
}

async function xclipIn(display, bytes, sel = 'clipboard') {
  const p = launch('xclip -i', 'xclip', ['-quiet', '-i', '-selection', sel], { env: xenv(display), stdio: ['pipe', 'pipe', 'pipe'] });
  p.proc.stdin.end(bytes);
  await waitUntil(() => p.log.join('').includes('Waiting for selection requests'), { timeout: 5000, what: 'xclip to own the selection' });
  return p;
}

async function windowOf(d, title) {
  return waitUntil(async () => {
    const r = await d.tool('windows', {});
    return r.body.structuredContent?.windows?.find((w) => w.title === title)?.id;
  }, { timeout: 15000 * SLOW, what: `the window "${title}"` });
}

async function startGtkText(display, title) {
  const state = join(tempDir('deskd-gtk3-text-'), 'buffer.txt');
  // No session bus and no accessibility bridge: nothing outlives the test (PITFALLS 40).
  const env = { ...xenv(display), NO_AT_BRIDGE: '1', GTK_A11Y: 'none', DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent' };
  const p = launch('gtk3-text', 'python3', [join(ROOT, 'tests/apps/gtk3-text.py'), '--state', state, '--title', title], { env });
  await waitUntil(() => existsSync(state), { timeout: 15000 * SLOW, what: 'the GTK3 app' });
  p.text = () => readFileSync(state, 'utf8');
  return p;
}

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAEElEQVR4nGP4z8DAwPD/PwAJ+wL+6w2xNAAAAABJRU5ErkJggg==', 'base64');

test('paste into a GTK3 text view: exact, and the previous clipboard is back', async (t) => {
  const x = await startXvfb();
  const d = await startDeskd({ display: x.display, args: ['--tools', 'both'] });
  const procs = [];
  t.after(async () => { for (const p of procs) await p.stop().catch(() => {}); await d.stop(); await x.stop(); });
  const app = await startGtkText(x.display, 'paste target');
  procs.push(app);
  const win = await windowOf(d, 'paste target');
  const clear = async () => {
    const r = await d.tool('computer_use', { window: win, actions: [{ type: 'keypress', keys: ['ctrl', 'a'] }, { type: 'keypress', keys: ['Delete'] }] });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await waitUntil(() => app.text() === '', { what: 'an empty buffer' });
  };

  // Something the user copied before (xclip owns the CLIPBOARD).
  const before = await xclipIn(x.display, Buffer.from('what the user copied'));
  procs.push(before);
  for (const text of GTK_CORPUS) {
    const label = JSON.stringify(text.slice(0, 30));
    await clear();
    const r = await d.tool('computer_use', { window: win, actions: [{ type: 'paste', text }] });
    assert.equal(r.status, 200, `${label}: ${JSON.stringify(r.body).slice(0, 400)}`);
    const res = r.body.structuredContent.results[0];
    assert.deepEqual(res.chord, ['Control_L', 'v'], 'ctrl+v for a GTK app');
    assert.equal(res.bytes, Buffer.byteLength(text));
    assert.equal(res.restored, 'text');
    // GTK3 itself turns CRLF into LF in pasted text (gtk_selection_data_get_text
    // normalizes line ends); every other byte arrives as sent.
    const want = text.replaceAll('\r\n', '\n');
    await waitUntil(() => app.text() === want, { timeout: 5000 * SLOW, what: `the buffer to be ${label} (it is ${JSON.stringify(app.text().slice(0, 40))})` });
    assert.equal(xclipOut(x.display).stdout.toString(), 'what the user copied', `${label}: the clipboard is back`);
  }

  // type with method "paste", and the split tool: the same path.
  await clear();
  const typed = await d.tool('computer_use', { window: win, actions: [{ type: 'type', text: 'typed by paste ✓', method: 'paste' }] });
  assert.equal(typed.status, 200, JSON.stringify(typed.body));
  assert.equal(typed.body.structuredContent.results[0].method, 'paste');
  await waitUntil(() => app.text() === 'typed by paste ✓', { what: 'type method paste' });
  // Without window: the focused window is the target (the text view has the focus).
  const bare = await d.tool('computer_paste', { text: ' and no window given' });
  assert.equal(bare.status, 200, JSON.stringify(bare.body));
  assert.equal(bare.body.structuredContent.target_class, 'gtk3-text.py');
  await waitUntil(() => app.text() === 'typed by paste ✓ and no window given', { what: 'a paste into the focused window' });

  // Nothing owned the clipboard before: nothing owns it after. (deskd put
  // the user's text back and owns it; an xclip that takes it and quits leaves none.)
  await before.stop();
  const taker = await xclipIn(x.display, Buffer.from('gone soon'));
  await taker.stop();
  await waitUntil(() => xclipOut(x.display).status !== 0, { what: 'xclip gone' });
  await clear();
  const r2 = await d.tool('computer_use', { window: win, actions: [{ type: 'paste', text: 'no owner before' }] });
  assert.equal(r2.body.structuredContent.results[0].restored, 'empty');
  await waitUntil(() => app.text() === 'no owner before', { what: 'the paste' });
  const after = await d.tool('clipboard_read', {});
  assert.equal(after.status, 404, 'the clipboard is empty again: ' + JSON.stringify(after.body));

  // An image before: the same image after.
  assert.equal((await d.tool('clipboard_write', { image_base64: PNG.toString('base64') })).status, 200);
  await clear();
  const r3 = await d.tool('computer_use', { window: win, actions: [{ type: 'paste', text: 'over an image' }] });
  assert.equal(r3.body.structuredContent.results[0].restored, 'image');
  await waitUntil(() => app.text() === 'over an image', { what: 'the paste' });
  assert.ok(xclipOut(x.display, 'clipboard', 'image/png').stdout.equals(PNG), 'the PNG is back');

  // Refusals: nothing pasted, clipboard untouched.
  for (const [action, re] of [
    [{ type: 'paste' }, /needs text/], [{ type: 'paste', text: 'a\u0000b' }, /./],
    [{ type: 'paste', text: 'x', chord: ['nosuchkey'] }, /nosuchkey|unknown/i],
    [{ type: 'type', text: 'x', method: 'telepathy' }, /method/], [{ type: 'type', text: 'x', chord: 'ctrl+v' }, /chord/],
  ]) {
    const r = await d.tool('computer_use', { window: win, actions: [action] });
    assert.ok(r.status >= 400, JSON.stringify(action));
    assert.match(JSON.stringify(r.body), re, JSON.stringify(action));
  }
  assert.equal(app.text(), 'over an image');
});

test('paste into xterm (cat > file): shift+Insert, exact; a chord it ignores times out and still restores', async (t) => {
  const x = await startXvfb();
  const d = await startDeskd({ display: x.display, args: ['--tools', 'both'] });
  const procs = [];
  t.after(async () => { for (const p of procs) await p.stop().catch(() => {}); await d.stop(); await x.stop(); });
  const dir = tempDir('deskd-paste-xterm-');
  let n = 0;
  const previous = await xclipIn(x.display, Buffer.from('clipboard before'));
  procs.push(previous);
  const previousPrimary = await xclipIn(x.display, Buffer.from('primary before'), 'primary');
  procs.push(previousPrimary);
  for (const text of TERM_CORPUS) {
    const file = join(dir, `out-${n}.txt`);
    const title = `paste-xterm-${n++}`;
    // Non-canonical: no 4 KiB line limit; icrnl: the Enter xterm sends is \n.
    const xt = launch('xterm', 'xterm', ['-u8', '-title', title, '-e', 'sh', '-c', `stty -icanon -echo icrnl min 1 time 0; exec cat > '${file}'`],
      { env: xenv(x.display), needs: ['sh', 'stty', 'cat'] });
    procs.push(xt);
    const win = await windowOf(d, title);
    await waitUntil(() => existsSync(file), { timeout: 10000 * SLOW, what: 'cat to start' });
    const r = await d.tool('computer_paste', { window: win, text });
    assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 400));
    const res = r.body.structuredContent;
    assert.deepEqual(res.chord, ['Shift_L', 'Insert'], 'a terminal gets shift+Insert');
    assert.equal(res.target_class, 'xterm');
    const want = Buffer.from(text);
    await waitUntil(() => readFileSync(file).length >= want.length, { timeout: 10000 * SLOW, what: `${want.length} bytes through cat` });
    assert.ok(readFileSync(file).equals(want), `exact: ${JSON.stringify(text.slice(0, 30))}`);
    assert.equal(xclipOut(x.display).stdout.toString(), 'clipboard before');
    assert.equal(xclipOut(x.display, 'primary').stdout.toString(), 'primary before');
    if (n === TERM_CORPUS.length) {
      // ctrl+v is no paste in xterm: a bounded wait, a clear timeout, the
      // clipboard restored. Meanwhile another client keeps reading the
      // clipboard (as a clipboard manager does): its reads are not the
      // target's, so they do not end the wait.
      const manager = launch('clipboard reader', 'sh', ['-c', 'while :; do xclip -o -selection clipboard >/dev/null 2>&1; sleep 0.1; done'],
        { env: xenv(x.display), needs: ['xclip', 'sleep'] });
      procs.push(manager);
      const t0 = Date.now();
      const bad = await d.tool('computer_paste', { window: win, text: 'never pasted', chord: 'ctrl+v' });
      await manager.stop();
      assert.equal(bad.status, 504, JSON.stringify(bad.body));
      assert.match(bad.body.error.message, /did not take the clipboard/);
      assert.ok(Date.now() - t0 < 8000, 'bounded');
      assert.equal(xclipOut(x.display).stdout.toString(), 'clipboard before');
    }
    await xt.stop();
  }
});

test('paste under openbox: the window manager changes nothing (focus through EWMH, the same chord and wait)', async (t) => {
  const x = await startXvfb();
  const wm = await startWm(x.display, 'openbox');
  const d = await startDeskd({ display: x.display });
  const procs = [];
  t.after(async () => { for (const p of procs) await p.stop().catch(() => {}); await d.stop(); await wm.stop(); await x.stop(); });
  const app = await startGtkText(x.display, 'paste under openbox');
  procs.push(app);
  const win = await windowOf(d, 'paste under openbox');
  const before = await xclipIn(x.display, Buffer.from('kept under openbox'));
  procs.push(before);
  const r = await d.tool('computer_use', { window: win, actions: [{ type: 'paste', text: KB100 }] });
  assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 400));
  await waitUntil(() => app.text() === KB100, { timeout: 5000 * SLOW, what: '100 KB in the buffer' });
  assert.equal(xclipOut(x.display).stdout.toString(), 'kept under openbox');
});
