// The keyboard of a test's X server, as a person would set it: its layout
// (setxkbmap, checked on the keymap itself), its locks (pressed as keys,
// read from the server's indicators) and XKB's group.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { run, ROOT } from './harness.mjs';

const PY = { PATH: '/usr/bin:/bin' };   // Debian's python3

/** Is the lock on (the server's indicator: 'Caps Lock', 'Num Lock')? */
export function lockOn(display, name = 'Caps Lock') {
  const r = run('xset', ['-display', display, 'q'], { encoding: 'utf8' });   // spawns: xset
  assert.equal(r.status, 0, 'xset q: ' + r.stderr);
  const m = new RegExp(`${name}:\\s*(on|off)`).exec(r.stdout);
  assert.ok(m, `xset q shows ${name}: ` + r.stdout);
  return m[1] === 'on';
}

/** Press the lock's key (xdotool) if it is not already as wanted. */
export function setLock(display, on, name = 'Caps Lock') {
  if (lockOn(display, name) !== on)
    assert.equal(run('xdotool', ['key', name.replace(' ', '_')], { env: { ...process.env, DISPLAY: display } }).status, 0);   // spawns: xdotool
  assert.equal(lockOn(display, name), on, `${name} is ${on ? 'on' : 'off'}`);
}

/** The XKB lock state (tests/apps/xkb_state.py); lockGroup: lock that
 *  group (0-based) first; press: keycodes pressed first, as a person would. */
export function xkbState(display, lockGroup, { press } = {}) {
  const first = press ? ['press', ...press.map(String)] : lockGroup === undefined ? [] : ['lock-group', String(lockGroup)];
  const r = run('python3', [join(ROOT, 'tests/apps/xkb_state.py'), ...first],   // spawns: python3
    { encoding: 'utf8', env: { ...process.env, ...PY, DISPLAY: display } });
  assert.equal(r.status, 0, 'xkb_state.py: ' + r.stderr);
  return JSON.parse(r.stdout);
}

/** The keysyms of keycode kc on the server's keymap (xmodmap -pke). */
export function keysymsOf(display, kc) {
  const r = run('xmodmap', ['-display', display, '-pke'], { encoding: 'utf8' });   // spawns: xmodmap
  assert.equal(r.status, 0, 'xmodmap -pke: ' + r.stderr);
  const m = new RegExp(`^keycode\\s+${kc} =(.*)$`, 'm').exec(r.stdout);
  return m ? m[1].trim().split(/\s+/) : [];
}

// What keycodes 54 (C), 29 (Y) and 52 (Z) give on each layout's first
// group: a check that the keymap really changed (setxkbmap -symbols leaves
// the rules names alone, so `setxkbmap -query` keeps saying us).
const layoutKeys = { us: ['c', 'y', 'z'], de: ['c', 'z', 'y'], ru: ['Cyrillic_es', 'Cyrillic_en', 'Cyrillic_ya'] };

/** Load the symbols (e.g. pc+de, pc+ru+us:2) with evdev keycodes and
 *  check the keymap took them. */
export function setLayout(display, symbols) {
  const r = run('setxkbmap', ['-display', display, '-keycodes', 'evdev', '-types', 'complete', '-compat', 'complete',   // spawns: setxkbmap
    '-symbols', symbols, '-geometry', 'pc'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const first = /^pc\+([a-z]+)/.exec(symbols)[1];
  const got = [54, 29, 52].map((kc) => keysymsOf(display, kc)[0]);
  assert.deepEqual(got, layoutKeys[first], `${symbols}: keycodes 54, 29, 52 on the server's keymap (xmodmap -pke)`);
  if (symbols.includes('+us:2')) assert.equal(keysymsOf(display, 54)[2], 'c', `${symbols}: the second group has c`);
}
