// ui_act on the controls a study of real apps found broken (issue 25):
// select on a Chromium <select> and a Qt5 QComboBox, read back from the
// app's own state (the page's title, the Qt app's records); a GTK 3 menu
// item whose handler runs a modal dialog's loop inside the press
// (tests/apps/gtk3-modal.py, as mousepad's File > Save... does): the press
// returns at once, the dialog's tree answers, its button works.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDeskd, need, waitUntil, tempDir, ROOT, SLOW } from './lib/harness.mjs';

const ok = async (d, name, args) => {
  const r = await d.tool(name, args);
  assert.equal(r.status, 200, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r.body)}`);
  return r.body.structuredContent;
};
const fail = async (d, name, args, code) => {
  const r = await d.tool(name, args);
  assert.notEqual(r.status, 200, `${name} ${JSON.stringify(args)} should fail: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error.code, code, `${name}: ${JSON.stringify(r.body)}`);
  return r.body.error;
};
const windowOf = (d, re, what) => waitUntil(async () => (await ok(d, 'windows', {})).windows
  .find((w) => re.test(w.title)), { timeout: 30000 * SLOW, what });
const lines = (file) => existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];

test('select on a Chromium <select>: every option, read back from the page', { timeout: 120000 * SLOW }, async (t) => {
  need('chromium');
  const dir = tempDir('deskd-select-chromium-');
  const url = 'file://' + join(ROOT, 'tests/apps/select.html');
  const chromium = `chromium --force-renderer-accessibility --disable-backgrounding-occluded-windows ` +
    `--disable-renderer-backgrounding --no-sandbox --disable-gpu --no-first-run --user-data-dir=${dir}/profile ${url}`;
  const d = await startDeskd({ args: ['--launch', chromium] });   // spawns: chromium
  t.after(() => d.stop());
  const win = await windowOf(d, /deskd select/, 'the Chromium window');
  const found = await waitUntil(async () => {
    const r = await d.tool('ui_find', { window: win.id, name: 'Size', match: 'exact' });
    return r.status === 200 && r.body.structuredContent.matches.some((m) => m.role === 'combo box') && r.body.structuredContent;
  }, { timeout: 20000 * SLOW, what: 'the page in the tree' });
  // The <label>'s text shares the select's name: the select comes first.
  assert.equal(found.matches[0].role, 'combo box', JSON.stringify(found.matches));
  assert.ok(found.matches.some((m) => m.role === 'static'), 'the label is found too');
  const ref = found.matches[0].ref;
  // Its options are a closed popup: not in the default snapshot.
  const snap = await ok(d, 'ui_snapshot', { window: win.id });
  assert.ok(!snap.elements.some((e) => e.name === 'Medium'), 'closed options are left out');
  const title = async () => (await ok(d, 'windows', {})).windows.find((w) => w.id === win.id).title;
  // Down, up, by index, and the current one again.
  for (const [args, value] of [[{ text: 'Large' }, 'l'], [{ text: 'Small' }, 's'], [{ value: 3 }, 'xl'],
    [{ text: 'Medium' }, 'm'], [{ text: 'Medium' }, 'm']]) {
    const r = await ok(d, 'ui_act', { ref, action: 'select', ...args });
    assert.equal(r.verified, true, JSON.stringify(r));
    await waitUntil(async () => (await title()).startsWith(`size: ${value} `), { timeout: 3000 * SLOW, what: `the page to show ${value}` });
  }
  const bad = await fail(d, 'ui_act', { ref, action: 'select', text: 'Huge' }, 'bad_arguments');
  assert.match(bad.message, /Small.*Medium.*Large.*Extra large/);
  // background: the keyboard is the route here: refused, nothing done.
  await fail(d, 'ui_act', { ref, action: 'select', text: 'Large', background: true }, 'needs_focus');
  assert.ok((await title()).startsWith('size: m '));
});

test('select on a Qt5 QComboBox: named by its label, set and read back by the app', { timeout: 90000 * SLOW }, async (t) => {
  need('python3');
  const dir = tempDir('deskd-select-qt-');
  const records = join(dir, 'qt.records');
  const d = await startDeskd({ args: ['--launch', `env QT_QPA_PLATFORM=xcb /usr/bin/python3 ${join(ROOT, 'tests/apps/qt_combo.py')} ${records}`] });   // spawns: python3
  t.after(() => d.stop());
  const win = await windowOf(d, /deskd qt combo/, 'the Qt window');
  const combos = await waitUntil(async () => {
    const r = await d.tool('ui_find', { window: win.id, role: 'combo box' });
    return r.status === 200 && r.body.structuredContent.matches.length === 2 && r.body.structuredContent.matches;
  }, { timeout: 20000 * SLOW, what: 'the combos in the tree' });
  // Qt names a combo by its current text; the snapshot names it by its
  // label: the one before it, or (Colour: made after its combo) the one its
  // labelled-by relation names.
  const combo = combos.find((c) => c.name === 'Size');
  assert.ok(combo, JSON.stringify(combos));
  assert.equal(combo.text, 'Small');
  const colour = combos.find((c) => c.name === 'Colour');
  assert.ok(colour && colour.text === 'Red', JSON.stringify(combos));
  const snap = await ok(d, 'ui_snapshot', { window: win.id });
  assert.ok(!snap.elements.some((e) => e.role === 'list item'), 'the closed popup\'s items are left out');
  const sizes = () => lines(records).map((l) => JSON.parse(l)).filter((r) => r.size).map((r) => r.size);
  for (const [args, value] of [[{ text: 'Large' }, 'Large'], [{ text: 'Small' }, 'Small'],
    [{ value: 3 }, 'Extra large'], [{ text: 'Medium' }, 'Medium']]) {
    const r = await ok(d, 'ui_act', { ref: combo.ref, action: 'select', ...args });
    assert.equal(r.verified, true, JSON.stringify(r));
    assert.equal(r.element.name, value, 'the combo reads back the option');
    await waitUntil(() => sizes().at(-1) === value, { timeout: 3000 * SLOW, what: `the app to have ${value}` });
  }
  assert.equal((await ok(d, 'ui_find', { window: win.id, role: 'combo box', name: 'Size' })).matches[0].text, 'Medium');
  assert.equal((await ok(d, 'ui_act', { ref: colour.ref, action: 'select', text: 'Blue' })).verified, true);
  await waitUntil(() => lines(records).some((l) => JSON.parse(l).colour === 'Blue'), { timeout: 3000 * SLOW, what: 'Blue' });
});

test('a menu item that runs a modal dialog: the press returns, the dialog answers at once', { timeout: 90000 * SLOW }, async (t) => {
  need('python3');
  const dir = tempDir('deskd-modal-');
  const state = join(dir, 'state');
  const d = await startDeskd({ args: ['--launch', `/usr/bin/python3 ${join(ROOT, 'tests/apps/gtk3-modal.py')} --state ${state}`] });   // spawns: python3
  t.after(() => d.stop());
  await waitUntil(() => lines(state).includes('ready'), { timeout: 20000 * SLOW, what: 'the app' });
  const win = await windowOf(d, /^deskd modal$/, 'the window');
  const find = (args) => ok(d, 'ui_find', { window: win.id, ...args });
  const file = await waitUntil(async () => (await find({ role: 'menu', name: 'File' })).matches[0], { timeout: 10000 * SLOW, what: 'the menu' });
  // A name padded by the accelerator's column matches exactly, kept raw.
  const reload = (await find({ name: 'Reload', match: 'exact', all: true })).matches;
  assert.equal(reload.length, 1, JSON.stringify(reload));
  assert.equal(reload[0].name, 'Reload      ');
  // expand on a submenu that does not open (the app selects the item,
  // nothing more): an error, not a success that says verified: false.
  const recent = (await find({ role: 'menu', name: 'Recent', all: true })).matches[0];
  const ex = await fail(d, 'ui_act', { ref: recent.ref, action: 'expand' }, 'unverified');
  assert.equal(ex.verified, false);
  // expand on one that opens: its items show.
  assert.equal((await ok(d, 'ui_act', { ref: file.ref, action: 'expand' })).verified, true);
  const save = await waitUntil(async () => (await find({ role: 'menu item', name: 'Save…', all: true })).matches[0], { timeout: 5000 * SLOW, what: 'Save…' });
  const t0 = Date.now();
  const pr = await ok(d, 'ui_act', { ref: save.ref, action: 'press' });
  const took = Date.now() - t0;
  assert.ok(took < 2000 * SLOW, `the press took ${took} ms`);
  assert.equal(pr.app_busy, true, JSON.stringify(pr));
  assert.match(pr.note, /busy with what it opened/);
  assert.ok(lines(state).includes('opened'));
  // The dialog's tree answers at once, and its button works.
  const dlg = await windowOf(d, /^Save As$/, 'the dialog');
  const t1 = Date.now();
  const keep = (await ok(d, 'ui_find', { window: dlg.id, role: 'push button', name: 'Keep', timeout_ms: 1000 })).matches[0];
  assert.ok(keep && Date.now() - t1 < 1500 * SLOW, `the dialog's tree took ${Date.now() - t1} ms`);
  await ok(d, 'ui_act', { ref: keep.ref, action: 'press' });
  await waitUntil(() => lines(state).includes('response ok'), { timeout: 3000 * SLOW, what: 'the app to see Keep' });
  // And the window's tree still answers after the dialog closed.
  assert.equal((await find({ role: 'menu', name: 'File' })).matches.length, 1);
  // A button the app enables a moment after set_text (a file chooser's
  // Save): the press waits for it; one that stays disabled says so.
  const entry = (await find({ role: 'text', name: 'File name' })).matches[0];
  const store = (await find({ role: 'push button', name: 'Store' })).matches[0];
  await ok(d, 'ui_act', { ref: entry.ref, action: 'set_text', text: 'notes ✓.txt' });
  const st = await ok(d, 'ui_act', { ref: store.ref, action: 'press' });
  assert.ok(st.waited_enabled_ms > 0, JSON.stringify(st));
  await waitUntil(() => lines(state).includes('stored notes ✓.txt'), { timeout: 3000 * SLOW, what: 'the app to store' });
  const never = (await find({ role: 'push button', name: 'Never' })).matches[0];
  const nv = await fail(d, 'ui_act', { ref: never.ref, action: 'press' }, 'element_disabled');
  assert.match(nv.message, /is disabled \(insensitive\) and stayed so for \d+ ms/);
});
