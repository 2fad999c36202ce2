// Accessibility on real apps: deskd's embedded desktop (its own Xvfb via
// -displayfd, its private session bus and AT-SPI bus) runs the GTK3 form
// (tests/apps/gtk3-form.c, which writes its state to a file on every
// change) and an xterm. Effects are checked through the app's own state
// file and the screenshot's pixels, not only through AT-SPI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDeskd, need, waitUntil, tempDir, ROOT, SLOW } from './lib/harness.mjs';
import { decodePng } from './lib/png.mjs';

const FORM = process.env.GTK3_FORM_BIN || join(ROOT, 'build/tests/gtk3-form');

const ok = async (d, name, args) => {
  const r = await d.tool(name, args);
  assert.equal(r.status, 200, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r.body)}`);
  return r.body;
};
const fail = async (d, name, args, code) => {
  const r = await d.tool(name, args);
  assert.notEqual(r.status, 200, `${name} ${JSON.stringify(args)} should fail: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error.code, code, `${name}: ${JSON.stringify(r.body)}`);
  return r.body.error;
};

/** The outline's elements by role and name. */
function el(snap, role, name) {
  const e = snap.structuredContent.elements.find((x) => x.role === role && (name === undefined || x.name === name));
  assert.ok(e, `no ${role} "${name}" in\n${snap.content[0].text}`);
  return e;
}

test('accessibility: snapshot, act, read, refs, destructive names, hung apps, xterm', { timeout: 120000 * SLOW }, async (t) => {
  need(FORM);   // spawns: - (built by make: tests/apps/gtk3-form.c)
  need('xterm');
  need('dbus-daemon');
  const dir = tempDir('deskd-a11y-');
  const statePath = join(dir, 'state.json');
  const d = await startDeskd({ args: ['--launch', `${FORM} --state ${statePath}`, '--launch', 'xterm'] });
  let stopped = 0;
  t.after(async () => {
    if (stopped) try { process.kill(stopped, 'SIGCONT'); } catch {}
    await d.stop();
  });
  const state = () => JSON.parse(readFileSync(statePath, 'utf8'));

  // The buses: deskd started them, doctor and status say so.
  const status = (await ok(d, 'status', {})).structuredContent;
  assert.equal(status.accessibility.embedded_bus, true, JSON.stringify(status.accessibility));
  assert.equal(status.accessibility.available, true, JSON.stringify(status.accessibility));
  assert.equal(status.accessibility.enabled, true);
  const doctor = (await ok(d, 'doctor', {})).structuredContent;
  const check = doctor.checks.find((c) => c.name === 'accessibility');
  assert.ok(check && check.ok, JSON.stringify(check));

  // The windows: the form (by its pid from the state file) and the xterm.
  await waitUntil(() => existsSync(statePath), { timeout: 10000 * SLOW, what: 'the form to write its state' });
  const pid = state().pid;
  const wins = await waitUntil(async () => {
    const w = (await ok(d, 'windows', {})).structuredContent.windows;
    return w.some((x) => x.pid === pid) && w.some((x) => /xterm/i.test(x.app)) && w;
  }, { timeout: 10000 * SLOW, what: 'both windows' });
  const form = wins.find((x) => x.pid === pid);
  const xterm = wins.find((x) => /xterm/i.test(x.app));

  const snap = await waitUntil(async () => {
    const r = await d.tool('ui_snapshot', { window: form.id });
    return r.status === 200 && r.body.structuredContent.elements.some((e) => e.name === 'Save') && r.body;
  }, { timeout: 10000 * SLOW, what: 'the form\'s tree' });

  await t.test('the snapshot lists the named controls, with bounds that match the pixels', async () => {
    const text = snap.content[0].text;
    for (const [role, name] of [['text', 'Name'], ['text', 'Notes'], ['check box', 'Subscribe'],
      ['slider', 'Volume'], ['push button', 'Save'], ['push button', 'Delete'], ['combo box', 'Small']]) {
      const e = el(snap, role, name);
      assert.match(e.ref, /^e\d+$/, `${role} ${name} has a ref`);
      assert.ok(text.includes(`${role} "${name}" [${e.ref}]`), `outline line for ${name}:\n${text}`);
      assert.equal(e.bounds.length, 4);
    }
    assert.ok(snap.structuredContent.node_count >= snap.structuredContent.listed);
    assert.ok(/value=30 \(0\.\.100\)/.test(text), text);
    // The entry's inside is white, the window around it is not: the
    // bounds are in the screenshot's pixels.
    const png = decodePng(Buffer.from((await ok(d, 'screenshot', { window: form.id, max_dimension: 0 })).content
      .find((c) => c.type === 'image').data, 'base64'));
    const [x0, y0, x1, y1] = el(snap, 'text', 'Name').bounds;
    const cy = (y0 + y1) >> 1;
    const white = (p) => p[0] > 250 && p[1] > 250 && p[2] > 250;
    assert.ok(white(png.px(x1 - 5, cy)) && white(png.px(x0 + 5, y0 + 5)), 'inside the entry is white');
    assert.ok(!white(png.px(x1 + 4, cy)) && !white(png.px(x0 - 4, cy)), 'outside the entry is not');
    // A pixel click at the Save button's centre (same space) presses it.
    const [sx0, sy0, sx1, sy1] = el(snap, 'push button', 'Save').bounds;
    const before = state().saves;
    await ok(d, 'computer_use', { window: form.id, actions: [{ type: 'click', x: (sx0 + sx1) >> 1, y: (sy0 + sy1) >> 1 }] });
    await waitUntil(() => state().saves === before + 1, { timeout: 5000 * SLOW, what: 'the click to save' });
  });

  const refOf = (role, name) => el(snap, role, name).ref;
  const nameRef = refOf('text', 'Name');
  const notesRef = refOf('text', 'Notes');

  await t.test('set_text reads back exactly, and the app agrees', async () => {
    for (const [ref, key, value] of [
      [nameRef, 'name', '  two  spaces  and ünïcödé ✓ 😀  '],
      [nameRef, 'name', ''],
      [notesRef, 'notes', 'line one\n\n  line three  \n'],
      [notesRef, 'notes', 'שלום, ça va?\ttab\n'],
    ]) {
      const r = (await ok(d, 'ui_act', { ref, action: 'set_text', text: value })).structuredContent;
      assert.equal(r.verified, true, JSON.stringify(r));
      assert.equal(r.route, 'atspi');
      // The answer says what changed, not the whole element (ui_read has it).
      assert.ok(!('actions' in r.element) && !('all_states' in r.element) && !('description' in r.element), JSON.stringify(r.element));
      const bytes = Buffer.byteLength(JSON.stringify(r));
      assert.ok(bytes < 400 + Buffer.byteLength(JSON.stringify(value)), `ui_act answered ${bytes} bytes: ${JSON.stringify(r)}`);
      const read = (await ok(d, 'ui_read', { ref })).structuredContent;
      assert.equal(read.text, value);
      assert.equal(state()[key], value, 'the app\'s own state');
    }
    const ins = (await ok(d, 'ui_act', { ref: nameRef, action: 'insert_text', text: 'ab', position: 0 })).structuredContent;
    assert.equal(ins.verified, true);
    await ok(d, 'ui_act', { ref: nameRef, action: 'insert_text', text: ' end ' });
    assert.equal(state().name, 'ab end ');
  });

  await t.test('toggle, select and set_value change the app\'s state; press Save saves', async () => {
    const sub = state().subscribe;
    const tg = (await ok(d, 'ui_act', { ref: refOf('check box', 'Subscribe'), action: 'toggle' })).structuredContent;
    assert.equal(tg.verified, true, JSON.stringify(tg));
    assert.equal(state().subscribe, !sub);
    const sel = (await ok(d, 'ui_act', { ref: refOf('combo box', 'Small'), action: 'select', text: 'Large' })).structuredContent;
    assert.equal(sel.verified, true, JSON.stringify(sel));
    assert.equal(state().size, 'Large');
    const bad = await fail(d, 'ui_act', { ref: refOf('combo box', 'Small'), action: 'select', text: 'Huge' }, 'bad_arguments');
    assert.match(bad.message, /Small.*Medium.*Large/);
    const sv = (await ok(d, 'ui_act', { ref: refOf('slider', 'Volume'), action: 'set_value', value: 70 })).structuredContent;
    assert.equal(sv.verified, true);
    assert.equal(state().volume, 70);
    await fail(d, 'ui_act', { ref: refOf('slider', 'Volume'), action: 'set_value', value: 1000 }, 'out_of_bounds');
    assert.equal(state().volume, 70);
    const saves = state().saves;
    const pr = (await ok(d, 'ui_act', { ref: refOf('push button', 'Save'), action: 'press' })).structuredContent;
    assert.equal(pr.route, 'atspi');
    await waitUntil(() => state().saves === saves + 1, { timeout: 3000 * SLOW, what: 'Save' });
    assert.equal(state().saved_name, 'ab end ');
  });

  await t.test('Delete needs allow_destructive; nothing happens without it', async () => {
    const before = readFileSync(statePath, 'utf8');
    const e = await fail(d, 'ui_act', { ref: refOf('push button', 'Delete'), action: 'press' }, 'needs_confirmation');
    assert.equal(e.word, 'Delete');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(readFileSync(statePath, 'utf8'), before, 'state unchanged');
    await ok(d, 'ui_act', { ref: refOf('push button', 'Delete'), action: 'press', allow_destructive: true });
    await waitUntil(() => state().deletes === 1 && state().name === '', { timeout: 3000 * SLOW, what: 'Delete' });
  });

  await t.test('a ref survives a snapshot after an unrelated change', async () => {
    const subRef = refOf('check box', 'Subscribe');
    await ok(d, 'ui_act', { ref: nameRef, action: 'set_text', text: 'unrelated' });
    const again = await ok(d, 'ui_snapshot', { window: form.id });
    assert.equal(el(again, 'check box', 'Subscribe').ref, subRef);
    assert.equal(el(again, 'text', 'Name').ref, nameRef);
    const sub = state().subscribe;
    await ok(d, 'ui_act', { ref: subRef, action: 'toggle' });
    assert.equal(state().subscribe, !sub);
  });

  await t.test('ui_find: exact, contains, regex; ui_wait on a state', async () => {
    const exact = (await ok(d, 'ui_find', { window: form.id, name: 'Save', match: 'exact' })).structuredContent;
    assert.equal(exact.total, 1);
    assert.equal(exact.matches[0].ref, refOf('push button', 'Save'));
    const contains = (await ok(d, 'ui_find', { window: form.id, role: 'push button', name: 'e' })).structuredContent;
    assert.deepEqual(contains.matches.map((m) => m.name).sort(), ['Delete', 'Save']);
    const re = (await ok(d, 'ui_find', { window: form.id, role: 'push button', name: '^(Sa|De)', match: 'regex' })).structuredContent;
    assert.equal(re.total, 2);
    await fail(d, 'ui_find', { window: form.id, name: '(', match: 'regex' }, 'bad_arguments');
    await fail(d, 'ui_find', { window: form.id, role: 'no such role' }, 'bad_arguments');
    const subRef = refOf('check box', 'Subscribe');
    const want = state().subscribe ? '!checked' : 'checked';
    const waiting = d.tool('ui_wait', { until: 'state', ref: subRef, state: want, timeout_ms: 5000 });
    await new Promise((r) => setTimeout(r, 300));
    await ok(d, 'ui_act', { ref: subRef, action: 'toggle' });
    const w = await waiting;
    assert.equal(w.status, 200);
    assert.equal(w.body.structuredContent.satisfied, true, JSON.stringify(w.body));
    const none = (await ok(d, 'ui_wait', { until: 'appears', window: form.id, name: 'No such thing', match: 'exact', timeout_ms: 400 })).structuredContent;
    assert.equal(none.timed_out, true);
  });

  await t.test('bad input: clear errors, nothing done', async () => {
    const before = readFileSync(statePath, 'utf8');
    await fail(d, 'ui_act', { ref: 'e999999', action: 'press' }, 'stale_ref');
    await fail(d, 'ui_act', { ref: 'button', action: 'press' }, 'bad_arguments');
    await fail(d, 'ui_act', { ref: refOf('push button', 'Save'), action: 'press', window: xterm.id }, 'bad_arguments');
    await fail(d, 'ui_act', { ref: refOf('push button', 'Save'), action: 'toggle' }, 'action_unsupported');
    await fail(d, 'ui_act', { ref: refOf('push button', 'Save'), action: 'set_text', text: 'x' }, 'action_unsupported');
    await fail(d, 'ui_act', { ref: refOf('check box', 'Subscribe'), action: 'set_value', value: 1 }, 'action_unsupported');
    await fail(d, 'ui_act', { ref: nameRef, action: 'set_text', text: 'x'.repeat(70000) }, 'bad_arguments');
    await fail(d, 'ui_act', { ref: nameRef, action: 'set_text' }, 'bad_arguments');
    await fail(d, 'ui_act', { ref: nameRef, action: 'fly' }, 'bad_arguments');
    await fail(d, 'ui_snapshot', { window: form.id, max_nodes: 0 }, 'bad_arguments');
    await fail(d, 'ui_snapshot', { window: form.id, timeout_ms: 10 }, 'bad_arguments');
    await fail(d, 'ui_find', { window: form.id, name: 'x', match: 'fuzzy' }, 'bad_arguments');
    await fail(d, 'ui_find', { window: form.id, name: 'x'.repeat(600) }, 'bad_arguments');
    await fail(d, 'ui_wait', { until: 'soon', window: form.id, name: 'x' }, 'bad_arguments');
    assert.equal(readFileSync(statePath, 'utf8'), before, 'state unchanged');
  });

  await t.test('computer_use takes refs: a click and typing into an element', async () => {
    const saves = state().saves;
    await ok(d, 'ui_act', { ref: nameRef, action: 'set_text', text: '' });
    const r = (await ok(d, 'computer_use', { actions: [
      { type: 'click', ref: refOf('push button', 'Save') },
      { type: 'type', ref: nameRef, text: 'typed ✓' }] })).structuredContent;
    assert.equal(r.results[0].ref, refOf('push button', 'Save'));
    await waitUntil(() => state().saves === saves + 1 && state().name === 'typed ✓', { timeout: 5000 * SLOW, what: 'the click and the typing' });
    const e = await d.tool('computer_use', { actions: [{ type: 'click', ref: 'e999999' }] });
    assert.equal(e.body.error.code, 'stale_ref', JSON.stringify(e.body));
    const both = await d.tool('computer_use', { actions: [{ type: 'click', ref: nameRef, x: 1, y: 1 }] });
    assert.equal(both.body.error.code, 'bad_arguments');
  });

  await t.test('windows says which windows are accessible', async () => {
    const w = (await ok(d, 'windows', {})).structuredContent.windows;
    assert.equal(w.find((x) => x.id === form.id).accessible, true);
    assert.equal(w.find((x) => x.id === xterm.id).accessible, false);
  });

  await t.test('xterm exposes nothing: no_accessibility naming it', async () => {
    const e = await fail(d, 'ui_snapshot', { window: xterm.id }, 'no_accessibility');
    assert.match(e.message, /xterm/);
  });

  await t.test('a stopped app: timeout within the bound, screenshots and clicks keep working', async () => {
    process.kill(pid, 'SIGSTOP');
    stopped = pid;
    const t0 = Date.now();
    const hung = d.tool('ui_snapshot', { window: form.id, timeout_ms: 1500 });
    const hungAct = d.tool('ui_act', { ref: refOf('check box', 'Subscribe'), action: 'toggle', timeout_ms: 1500 });
    // Meanwhile: a screenshot and a click answer at once.
    const s0 = Date.now();
    await ok(d, 'screenshot', { window: form.id });
    await ok(d, 'computer_use', { actions: [{ type: 'click', x: 5, y: 700 }] });
    assert.ok(Date.now() - s0 < 1400, `screenshot + click took ${Date.now() - s0} ms`);
    const r = await hung;
    const el1 = Date.now() - t0;
    assert.equal(r.body.error.code, 'timeout', JSON.stringify(r.body));
    assert.ok(el1 < 1500 + 1500 * SLOW, `timed out after ${el1} ms`);
    const ra = await hungAct;
    assert.equal(ra.body.error.code, 'timeout', JSON.stringify(ra.body));
    process.kill(pid, 'SIGCONT');
    stopped = 0;
    // It answers again once continued.
    await waitUntil(async () => (await d.tool('ui_snapshot', { window: form.id })).status === 200,
      { timeout: 5000 * SLOW, what: 'the form to answer again' });
  });
});

test('accessibility in Chromium: a local form through the focus-select-type fallback', { timeout: 120000 * SLOW }, async (t) => {
  need('chromium');
  const dir = tempDir('deskd-a11y-chromium-');
  const url = 'file://' + join(ROOT, 'tests/apps/form.html');
  // Chromium publishes its page only with --force-renderer-accessibility and
  // an enabled AT-SPI at its start (deskd's desktop sets IsEnabled first).
  const chromium = `chromium --force-renderer-accessibility --disable-backgrounding-occluded-windows ` +
    `--disable-renderer-backgrounding --no-sandbox --disable-gpu --no-first-run --user-data-dir=${dir}/profile ${url}`;
  const d = await startDeskd({ args: ['--launch', chromium] });   // spawns: chromium
  t.after(() => d.stop());
  const win = await waitUntil(async () => (await ok(d, 'windows', {})).structuredContent.windows
    .find((w) => /deskd form/.test(w.title)), { timeout: 30000 * SLOW, what: 'the Chromium window' });
  const snap = await waitUntil(async () => {
    const r = await d.tool('ui_snapshot', { window: win.id });
    return r.status === 200 && r.body.structuredContent.elements.some((e) => e.name === 'Your name') && r.body;
  }, { timeout: 20000 * SLOW, what: 'the page in the tree' });
  assert.equal(snap.structuredContent.app.toolkit, 'Chromium');
  const name = el(snap, 'entry', 'Your name').ref;
  const notes = el(snap, 'entry', 'Notes').ref;
  const value = '  padded  héllo ✓ ';
  const r = (await ok(d, 'ui_act', { ref: name, action: 'set_text', text: value })).structuredContent;
  assert.equal(r.route, 'keyboard', 'Chromium has no EditableText');
  assert.equal(r.verified, true, JSON.stringify(r));
  assert.equal((await ok(d, 'ui_read', { ref: name })).structuredContent.text, value);
  const n = (await ok(d, 'ui_act', { ref: notes, action: 'set_text', text: 'line one\nline two' })).structuredContent;
  assert.equal(n.verified, true, JSON.stringify(n));
  const box = el(snap, 'check box', 'I agree').ref;
  assert.equal((await ok(d, 'ui_act', { ref: box, action: 'toggle' })).structuredContent.verified, true);
  await fail(d, 'ui_act', { ref: el(snap, 'push button', 'Delete').ref, action: 'press' }, 'needs_confirmation');
  await ok(d, 'ui_act', { ref: el(snap, 'push button', 'Save').ref, action: 'press' });
  // The page's own effect: Save puts the name into the title.
  await waitUntil(async () => (await ok(d, 'windows', {})).structuredContent.windows
    .some((w) => w.id === win.id && w.title.startsWith('saved: ') && w.title.includes('padded héllo ✓')),
  { timeout: 5000 * SLOW, what: 'the page to save' });
});

test('accessibility in GTK 4: window-relative extents are rebased, a pixel route lands', { timeout: 90000 * SLOW }, async (t) => {
  need('gtk4-demo');
  const d = await startDeskd({ args: ['--launch', 'gtk4-demo'] });   // spawns: gtk4-demo
  t.after(() => d.stop());
  const win = await waitUntil(async () => (await ok(d, 'windows', {})).structuredContent.windows
    .find((w) => w.title === 'GTK Demo'), { timeout: 20000 * SLOW, what: 'the gtk4-demo window' });
  const find = async (args) => (await ok(d, 'ui_find', { window: win.id, ...args })).structuredContent;
  const items = await waitUntil(async () => {
    const r = await d.tool('ui_find', { window: win.id, role: 'list item' });
    return r.status === 200 && r.body.structuredContent.total > 3 && r.body.structuredContent;
  }, { timeout: 20000 * SLOW, what: 'the demo list' });
  assert.equal(items.app.toolkit, 'GTK');
  assert.match(items.app.version, /^4\./);
  // GTK 4.8 reports the frame at 0,0 whatever the window's place; rebased,
  // the items sit inside the window's screenshot (x within its width).
  const pick = items.matches.find((m) => !m.states.includes('selected'));
  const [x0, y0, x1, y1] = pick.bounds;
  assert.ok(x0 >= 0 && x1 <= win.width && y0 >= 0 && y1 <= win.height, JSON.stringify(pick.bounds));
  assert.ok(pick.desktop_bounds[0] >= win.x, `desktop bounds ${pick.desktop_bounds} are rebased onto the window at ${win.x}`);
  // A list item has no action here: the pixel route clicks its centre.
  const r = (await ok(d, 'ui_act', { ref: pick.ref, action: 'press' })).structuredContent;
  assert.equal(r.route, 'pixel');
  await waitUntil(async () => (await find({ role: 'list item', states: ['selected'] })).matches.some((m) => m.ref === pick.ref),
    { timeout: 5000 * SLOW, what: 'the clicked item to be selected' });
  // Its search entry takes exact text through EditableText.
  const entry = (await find({ role: 'entry' })).matches[0];
  const s = (await ok(d, 'ui_act', { ref: entry.ref, action: 'set_text', text: '  two  spaces  ' })).structuredContent;
  assert.equal(s.verified, true);
  assert.equal((await ok(d, 'ui_read', { ref: entry.ref })).structuredContent.text, '  two  spaces  ');
});
