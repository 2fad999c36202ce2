// The keyboard's lock state and typing (issue 25, INPUT2.md I1): with Caps
// Lock on, `type` still gives the exact text, in xterm and GTK3, on the us
// and de layouts, and the person's Caps Lock is still on afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { run, startDeskd, startXvfb, startWm, startFixture, tempDir, SLOW } from './lib/harness.mjs';
import { startApp, warmUp, typeAll } from './lib/apps.mjs';
import { lockOn, setLock, xkbState, keysymsOf, setLayout } from './lib/keyboard.mjs';
import { appCorpus } from './lib/corpus.mjs';

async function ok(deskd, args) {
  const r = await deskd.tool('computer_use', args);
  assert.equal(r.status, 200, `${JSON.stringify(args).slice(0, 200)} -> ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`);
  assert.ok(!r.body.isError, JSON.stringify(r.body).slice(0, 400));
  return r.body.structuredContent;
}

// The corpus the real-app test types (INPUT.md), but the 2000-character
// string (it only adds slot turnover, which input.test.mjs covers).
const corpus = appCorpus().filter((s) => [...s].length <= 300);
// On de, `?` is Shift+ß and ß's key has a Caps Lock level (ẞ); `<>|` sit on
// the key left of Y; ASCII letters swap Y and Z.
const deStrings = ['?', 'ß', 'ẞ', 'Straße? Größe! Maß?', 'Grüße aus Köln, Straße ẞ', 'ÄÖÜ äöü ß ?',
  'yz YZ zy ZY', '<>|@€~{[]}\\', 'The quick brown fox jumps over the lazy dog? 0123456789',
  '`~!@#$%^&*()-_=+[{]}\\|;:\'",<.>/?', 'café crème à la française'];
// With the second group (ru) locked, the keymap's first group still types.
// With ru first (ru,us: no Latin letter in the active group), the same.
const groupStrings = ['hello world', 'The quick brown fox jumps over the lazy dog. 0123456789',
  '`~!@#$%^&*()-_=+[{]}\\|;:\'",<.>/?', 'Съешь же ещё этих мягких булок', 'mixed: abc где xyz', 'CAPS and lower'];

test('Caps Lock (and Num Lock, a locked second group) on: the corpus arrives exact in xterm and GTK3 (us), ß ? ẞ on de, ASCII with ru locked; the locks stay', { timeout: 300000 }, async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const display = x.display;
  setLayout(display, 'pc+us');
  await startWm(display);
  const deskd = await startDeskd({ display });
  const dir = tempDir('deskd-caps-');
  // The person's locks, pressed as on a keyboard.
  const setCaps = (on) => setLock(display, on);
  const capsOn = () => lockOn(display);
  // NumLock too, for the first row (every locked modifier is unlocked for
  // a call and locked again).
  setLock(display, true, 'Num Lock');
  const table = [];
  const failures = [];
  // The last row, Caps Lock off after a layout change while deskd runs
  // (setxkbmap sends XKB's notifies only): deskd types with the new layout.
  const rows = [['xterm', 'us', true, corpus], ['gtk', 'us', true, corpus], ['xterm', 'de', true, deStrings],
    ['xterm', 'de', false, deStrings], ['xterm', 'us+ru:2', true, groupStrings], ['xterm', 'ru+us:2', true, groupStrings],
    ['gtk', 'ru+us:2', false, groupStrings]];
  let loaded = 'us';
  for (const [i, [kind, layout, caps, strings]] of rows.entries()) {
    if (layout !== loaded) setLayout(display, `pc+${loaded = layout}`);
    setCaps(caps);
    // The second group, locked as a layout switch would.
    const group = layout.startsWith('us+ru') ? 1 : 0;
    if (group) assert.equal(xkbState(display, group).locked_group, group);
    const app = await startApp(kind, display, dir, i);
    try {
      const target = await warmUp(deskd, app, (tg, actions) => ok(deskd, { ...tg, actions }));
      const r = await typeAll(app, (actions) => ok(deskd, { ...target, actions }), strings, `${kind} ${layout}`);
      failures.push(...r.failures);
      const after = capsOn();
      table.push({ app: kind, layout, 'caps lock': caps ? 'on' : 'off', exact: `${r.exact}/${strings.length}`, 'caps lock after': after ? 'on' : 'off' });
      if (after !== caps) failures.push(`${kind} ${layout}: Caps Lock is ${after ? 'on' : 'off'} after typing`);
      if (group && xkbState(display).locked_group !== group) failures.push(`${kind} ${layout}: group ${group + 1} is not locked after typing`);
      if (i === 0) {
        if (!lockOn(display, 'Num Lock')) failures.push('xterm us: Num Lock is off after typing');
        setLock(display, false, 'Num Lock');
      }
    } finally { await app.stop(); }
  }
  setCaps(true);
  t.diagnostic(JSON.stringify(table));
  console.log(table);
  assert.deepEqual(failures, []);
  await deskd.stop();
  assert.equal(capsOn(), true, 'Caps Lock is still on after deskd exited');
});

// INPUT2.md I2: on ru,us (the active group has no Latin letter) ctrl+c went
// out as Super+Shift+c or a key with no symbol; with us,ru switched to ru,
// ctrl+c was Ctrl+с. The fixture (XLookupString on each event) must see the
// named symbols with exactly the chord's modifiers.
test('chords on a layout whose active group lacks the letter (ru,us; us,ru switched to ru) reach the app as the named keys', { timeout: 120000 }, async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const display = x.display;
  const fixture = await startFixture(display, { geometry: '400x300+0+0' });
  const deskd = await startDeskd({ display });
  const MODS = 0xff;
  const chords = [
    [['ctrl', 'c'], [['Control_L', 0], ['c', 4]]],
    [['cmd', 'c'], [['Super_L', 0], ['c', 0x40]]],
    [['super', 'v'], [['Super_L', 0], ['v', 0x40]]],
    [['meta', 'x'], [['Super_L', 0], ['x', 0x40]]],
    [['ctrl', 'shift', 't'], [['Control_L', 0], ['Shift_L', 4], ['T', 5]]],
    [['alt', 'F4'], [['Alt_L', 0], ['F4', 8]]],
    [['ctrl', 'a'], [['Control_L', 0], ['a', 4]]],
    // Off every group: a spare key, on the level the chord's Shift selects.
    [['ctrl', 'shift', 'é'], [['Control_L', 0], ['Shift_L', 4], ['eacute', 5]]],
    [['ctrl', 'é'], [['Control_L', 0], ['eacute', 4]]],
  ];
  const failures = [];
  // The last: by the rules, as INPUT2.md did (evdev with the multimedia
  // keys: Xvfb's small pool of spare keys).
  for (const [symbols, lock] of [['pc+ru+us:2', 0], ['pc+us+ru:2', 1], ['rules ru,us', 0]]) {
    if (symbols.startsWith('rules')) {
      const r = run('setxkbmap', ['-display', display, '-rules', 'evdev', '-model', 'pc105', '-layout', 'ru,us'], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(keysymsOf(display, 54).slice(0, 3), ['Cyrillic_es', 'Cyrillic_ES', 'c'], 'ru,us loaded (xmodmap -pke)');
    } else setLayout(display, symbols);
    assert.equal(xkbState(display, lock).locked_group, lock);
    for (const [keys, want] of chords) {
      const mark = fixture.state().events.length;
      await ok(deskd, { actions: [{ type: 'keypress', keys }] });
      const s = await fixture.waitFor((st) => st.events.slice(mark).filter((e) => e.type === 'key_release').length >= want.length,
        { timeout: 5000 * SLOW, what: `${keys.join('+')}: its releases` });
      const got = s.events.slice(mark).filter((e) => e.type === 'key_press').map((e) => [e.name || 'NoSymbol', e.state & MODS]);
      if (JSON.stringify(got) !== JSON.stringify(want)) failures.push(`${symbols} group ${lock + 1}: ${keys.join('+')} arrived as ${JSON.stringify(got)}, not ${JSON.stringify(want)}`);
    }
    const after = xkbState(display).locked_group;
    if (after !== lock) failures.push(`${symbols}: group ${after + 1} locked after the chords, not ${lock + 1}`);
  }
  assert.deepEqual(failures, []);
  await deskd.stop();
  await fixture.stop();
});
