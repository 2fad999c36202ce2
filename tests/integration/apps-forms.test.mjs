// Forms and a rename in real apps through deskd's tree only (ui_find,
// ui_act), each result read outside deskd (issue 25's coverage):
//  - Firefox ESR: a form POSTed to the test's own HTTP server, its body
//    compared byte for byte (non-ASCII text by set_text, a <select>'s
//    option by select, a checkbox, a radio button);
//  - GTK 4 (tests/apps/gtk4-form.py): an entry, a Gtk.DropDown and a check
//    button, written to a file by its Submit button;
//  - Thunar: a file renamed in a temp dir (List View, select the file, Edit >
//    Rename..., the dialog's entry and button), read back from the listing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDeskd, need, waitUntil, tempDir, ROOT, SLOW } from './lib/harness.mjs';
import { firefoxProfile } from './lib/apps.mjs';

const ok = async (d, name, args) => {
  const r = await d.tool(name, args);
  assert.equal(r.status, 200, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r.body).slice(0, 800)}`);
  return r.body.structuredContent;
};
const windowOf = (d, re, what) => waitUntil(async () => (await ok(d, 'windows', {})).windows
  .find((w) => re.test(w.title)), { timeout: 30000 * SLOW, what });
// The first match of a find, once the tree has it.
const found = (d, win, args, what) => waitUntil(async () => {
  const r = await d.tool('ui_find', { window: win.id, ...args });
  return r.status === 200 && r.body.structuredContent.matches[0];
}, { timeout: 10000 * SLOW, what });

const FORM = `<!doctype html><html><head><meta charset="utf-8"><title>deskd firefox form</title></head><body>
<form method="post" action="/order" accept-charset="utf-8">
<label>Name <input name="name"></label><br>
<label>Size <select name="size"><option value="s">Small</option><option value="m">Medium</option>
<option value="l">Large</option><option value="xl">Extra large</option></select></label><br>
<label><input type="checkbox" name="gift" value="yes"> Gift wrap</label><br>
<label><input type="radio" name="ship" value="std" checked> Standard</label>
<label><input type="radio" name="ship" value="exp"> Express</label><br>
<button type="submit">Send order</button>
</form></body></html>`;

test('Firefox ESR: a form through the tree, POSTed byte-exact', { timeout: 90000 * SLOW }, async (t) => {
  need('firefox-esr');
  const bodies = [];
  const srv = http.createServer((req, res) => {
    if (req.method !== 'POST') {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(FORM);
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      bodies.push({ type: req.headers['content-type'], body: Buffer.concat(chunks) });
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end('<!doctype html><title>deskd order received</title>thanks');
    });
  });
  await new Promise((res) => srv.listen(0, '127.0.0.1', res));
  t.after(() => srv.close());
  const dir = tempDir('deskd-firefox-');
  const t0 = Date.now();
  // deskd's launch environment has the AT-SPI bus and GNOME_ACCESSIBILITY=1:
  // Gecko builds its tree with nothing more.
  const d = await startDeskd({ args: ['--launch',   // spawns: firefox-esr
    `firefox-esr -no-remote -profile ${firefoxProfile(dir)} http://127.0.0.1:${srv.address().port}/`] });
  t.after(() => d.stop());
  const win = await windowOf(d, /^deskd firefox form/, 'the Firefox window');
  const name = await found(d, win, { role: 'entry', name: 'Name' }, 'the form in the tree');
  t.diagnostic(`Firefox's form in the tree after ${Date.now() - t0} ms`);
  const text = 'Zoë 😀 ✓ 日本 ß';
  const st = await ok(d, 'ui_act', { ref: name.ref, action: 'set_text', text });
  assert.equal(st.verified, true, JSON.stringify(st));
  // Gecko's accessible text pads 😀 with a U+FEFF; deskd reads through it.
  assert.match(st.note || '', /U\+FEFF/);
  // A position after 😀 counts characters, not Gecko's padded offsets.
  const ins = await ok(d, 'ui_act', { ref: name.ref, action: 'insert_text', text: '★', position: 6 });
  assert.equal(ins.verified, true, JSON.stringify(ins));
  const finalText = 'Zoë 😀 ★✓ 日本 ß';
  const size = await found(d, win, { role: 'combo box', name: 'Size' }, 'the select');
  assert.equal((await ok(d, 'ui_act', { ref: size.ref, action: 'select', text: 'Large' })).verified, true);
  const gift = await found(d, win, { role: 'check box', name: 'Gift wrap' }, 'the checkbox');
  assert.equal((await ok(d, 'ui_act', { ref: gift.ref, action: 'toggle' })).verified, true);
  const express = await found(d, win, { role: 'radio button', name: 'Express' }, 'the radio button');
  const pr = await ok(d, 'ui_act', { ref: express.ref, action: 'press' });
  assert.equal(pr.verified, true, `a radio button's press is verified by its checked state: ${JSON.stringify(pr)}`);
  const send = await found(d, win, { role: 'push button', name: 'Send order' }, 'the button');
  await ok(d, 'ui_act', { ref: send.ref, action: 'press', allow_destructive: true });
  await waitUntil(() => bodies.length === 1, { timeout: 10000 * SLOW, what: 'the POST' });
  assert.equal(bodies[0].type, 'application/x-www-form-urlencoded');
  const want = 'name=' + encodeURIComponent(finalText).replace(/%20/g, '+') + '&size=l&gift=yes&ship=exp';
  assert.equal(bodies[0].body.toString('latin1'), want);
  await windowOf(d, /^deskd order received/, 'the answer page');
});

test('GTK 4: an entry, a drop-down and a check button through the tree, written by the app', { timeout: 60000 * SLOW }, async (t) => {
  need('python3');
  const dir = tempDir('deskd-gtk4-');
  const out = join(dir, 'form.records');
  const d = await startDeskd({ args: ['--launch', `/usr/bin/python3 ${join(ROOT, 'tests/apps/gtk4-form.py')} --out ${out}`] });   // spawns: python3
  t.after(() => d.stop());
  await waitUntil(() => existsSync(out + '.ready'), { timeout: 20000 * SLOW, what: 'the GTK 4 window' });
  const win = await windowOf(d, /^deskd gtk4 form$/, 'the GTK 4 window');
  // GTK 4.8 names unlabelled widgets by their type ("GtkEntry"): the tree
  // names them by the label before them.
  const name = await found(d, win, { role: 'text', name: 'Name', match: 'exact' }, 'the entry named by its label');
  const size = await found(d, win, { role: 'combo box', name: 'Size', match: 'exact' }, 'the drop-down named by its label');
  const snap = await ok(d, 'ui_snapshot', { window: win.id });
  assert.ok(!snap.elements.some((e) => /^Gtk[A-Z]/.test(e.name)), 'no type names as names');
  // Its options exist only while its popover is open: select opens it,
  // chooses, and reads the shown option back.
  for (const [args, shown] of [[{ text: 'Large' }, 'Large'], [{ text: 'Small' }, 'Small'], [{ value: 3 }, 'Extra large']]) {
    const r = await ok(d, 'ui_act', { ref: size.ref, action: 'select', ...args });
    assert.equal(r.verified, true, JSON.stringify(r));
    assert.equal(r.element.name, 'Size', 'the answer names the drop-down as the snapshot did');
    const labels = (await ok(d, 'ui_snapshot', { window: win.id })).elements.filter((e) => e.role === 'label').map((e) => e.name);
    assert.ok(labels.includes(shown), `the drop-down shows ${shown}: ${labels}`);
  }
  const bad = await d.tool('ui_act', { ref: size.ref, action: 'select', text: 'Huge' });
  assert.equal(bad.body.error?.code, 'bad_arguments', JSON.stringify(bad.body));
  assert.match(bad.body.error.message, /"Small", "Medium", "Large", "Extra large"/);
  // The keyboard is its route: background is refused, nothing done.
  const bg = await d.tool('ui_act', { ref: size.ref, action: 'select', text: 'Medium', background: true });
  assert.equal(bg.body.error?.code, 'needs_focus', JSON.stringify(bg.body));
  assert.equal((await ok(d, 'ui_act', { ref: size.ref, action: 'select', text: 'Medium' })).verified, true);
  const text = 'Zoë 😀 ✓ 日本';
  assert.equal((await ok(d, 'ui_act', { ref: name.ref, action: 'set_text', text })).verified, true);
  const read = await ok(d, 'ui_read', { ref: name.ref });
  assert.deepEqual([read.name, read.text], ['Name', text], 'ui_read names the entry as the snapshot did');
  const gift = await found(d, win, { role: 'check box', name: 'Gift wrap' }, 'the check button');
  assert.equal((await ok(d, 'ui_act', { ref: gift.ref, action: 'toggle' })).verified, true);
  const submit = await found(d, win, { role: 'push button', name: 'Submit' }, 'Submit');
  await ok(d, 'ui_act', { ref: submit.ref, action: 'press' });
  const records = () => existsSync(out) ? readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  await waitUntil(() => records().length === 1, { timeout: 5000 * SLOW, what: 'the record' });
  assert.deepEqual(records()[0], { name: text, size: 'Medium', gift: true });
});

test('Thunar: a file renamed through the tree, read back from the directory', { timeout: 90000 * SLOW }, async (t) => {
  need('thunar');
  const dir = tempDir('deskd-thunar-');
  const files = join(dir, 'files');
  mkdirSync(files);
  writeFileSync(join(files, 'report draft.txt'), 'hello\n');
  writeFileSync(join(files, 'other.txt'), 'x\n');
  mkdirSync(join(files, 'sub'));
  // Its settings and caches in the test's directory: given to deskd, so its
  // session bus has them too. Thunar keeps its view in xfconf, whose daemon
  // that bus starts with the bus's environment: with them given to Thunar
  // alone, the test wrote root's ~/.config/xfce4 and the next run started
  // in List View.
  const env = Object.fromEntries(['CONFIG', 'CACHE', 'DATA'].map((k) => [`XDG_${k}_HOME`, join(dir, k.toLowerCase())]));
  const d = await startDeskd({ env, args: ['--launch', `thunar ${files}`] });   // spawns: thunar
  t.after(() => d.stop());
  const win = await windowOf(d, /^files - Thunar$/, 'the Thunar window');
  // The icon view (ExoIconView, a panel without children) exposes no
  // items: View > List View does (a tree view).
  const view = await found(d, win, { role: 'menu', name: 'View' }, 'the View menu');
  await ok(d, 'ui_act', { ref: view.ref, action: 'expand' });
  const list = await found(d, win, { role: 'check menu item', name: 'List View', all: true }, 'List View');
  await ok(d, 'ui_act', { ref: list.ref, action: 'press' });
  const cell = await found(d, win, { role: 'table cell', name: 'report draft.txt', match: 'exact' }, 'the file in the list');
  // select on the item itself: its press would open the file.
  const sel = await ok(d, 'ui_act', { ref: cell.ref, action: 'select' });
  assert.equal(sel.verified, true, JSON.stringify(sel));
  const edit = await found(d, win, { role: 'menu', name: 'Edit' }, 'the Edit menu');
  await ok(d, 'ui_act', { ref: edit.ref, action: 'expand' });
  const rename = await found(d, win, { role: 'menu item', name: 'Rename...', all: true }, 'Rename...');
  await ok(d, 'ui_act', { ref: rename.ref, action: 'press' });
  const dlg = await windowOf(d, /^Rename "report draft\.txt"$/, 'the rename dialog');
  const entry = await found(d, { id: dlg.id }, { role: 'text' }, 'the dialog\'s entry');
  assert.equal(entry.text, 'report draft.txt');
  const newName = 'rapport é 😀.txt';
  assert.equal((await ok(d, 'ui_act', { ref: entry.ref, action: 'set_text', text: newName })).verified, true);
  const button = await found(d, { id: dlg.id }, { role: 'push button', name: 'Rename' }, 'the Rename button');
  await ok(d, 'ui_act', { ref: button.ref, action: 'press' });
  await waitUntil(() => readdirSync(files).includes(newName), { timeout: 5000 * SLOW, what: 'the renamed file' });
  assert.deepEqual(readdirSync(files).sort(), ['other.txt', newName, 'sub'].sort());
  assert.equal(readFileSync(join(files, newName), 'utf8'), 'hello\n');
  assert.ok(!existsSync(join(files, 'report draft.txt')));
});
