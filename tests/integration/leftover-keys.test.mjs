// Spare keycodes a deskd left bound when it was killed (issue 25, INPUT2.md
// I3): kill -9 runs no restore, and the next deskd on that display found
// every spare keycode taken (non-ASCII `type` answered `internal`) and left
// them bound again. Now it puts them back at its start, types exactly, and
// the keymap is as before the first deskd once it stops; a deskd that is
// still running keeps its keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run, startDeskd, startXvfb, startWm, waitUntil, launch, tempDir, ROOT, SLOW } from './lib/harness.mjs';

const PY = { PATH: '/usr/bin:/bin' };

async function ok(deskd, args) {
  const r = await deskd.tool('computer_use', args);
  assert.equal(r.status, 200, `${JSON.stringify(args).slice(0, 200)} -> ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`);
  assert.ok(!r.body.isError, JSON.stringify(r.body).slice(0, 400));
  return r.body.structuredContent;
}

function xkbDump(display) {
  const r = run('xkbcomp', ['-xkb', display, '-'], { encoding: 'utf8' });
  assert.equal(r.status, 0, 'xkbcomp: ' + r.stderr);
  return r.stdout;
}

function xmodmap(display) {
  const r = run('xmodmap', ['-display', display, '-pke'], { encoding: 'utf8' });
  assert.equal(r.status, 0, 'xmodmap: ' + r.stderr);
  return r.stdout;
}

/** The root property deskd records its bound keys in, or null. */
function claims(display) {
  const r = run('xprop', ['-display', display, '-root', '_DESKD_SPARE_KEYS'], { encoding: 'utf8' });
  assert.equal(r.status, 0, 'xprop: ' + r.stderr);
  return /not found|no such atom/.test(r.stdout) ? null : r.stdout.trim();
}

/** How many spare keycodes deskd's input found (its debug log). */
async function spareKeys(deskd) {
  const m = await waitUntil(() => /input: connected to \S+, (\d+) spare keycodes/.exec(deskd.log.join('')), { what: 'the spare keycodes line' });
  return Number(m[1]);
}

// Distinct characters off the us keymap, one per spare key (the pool's
// first slots are each key's first level).
const OFF_KEYMAP = [...'éèêëàâäôöûüçñßøåæœαβγδεζηθλμπσφψωабвгдежзийклмнопрстуфхцчшщ中文日本語'];

test('after kill -9, the next deskd puts back the spare keys left bound, types exactly, and leaves the keymap as before the first', { timeout: 180000 }, async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const display = x.display;
  await startWm(display);
  // Xvfb's own keymap (evdev with the multimedia keys): the small pool.
  const before = xkbDump(display), beforeCore = xmodmap(display);
  assert.equal(claims(display), null);

  const a = await startDeskd({ display });
  await ok(a, { actions: [{ type: 'type', text: 'é' }] });
  const n = await spareKeys(a);
  assert.ok(n >= 4 && n <= OFF_KEYMAP.length, `spare keycodes: ${n}`);
  // Every spare key bound (no window has the focus: nothing receives them).
  await ok(a, { actions: [{ type: 'type', text: OFF_KEYMAP.slice(1, n).join('') }] });
  // More than 4 levels a key: the keys get their other groups (PITFALLS
  // 27g), 16 symbols each, which the next deskd must recognize too.
  await ok(a, { actions: [{ type: 'type', text: Array.from({ length: 4 * n }, (_, i) => String.fromCodePoint(0x4e00 + i)).join('') }] });
  assert.match(xkbDump(display), /symbols\[Group4\]/, 'deskd A bound keys with 4 groups');
  assert.notEqual(xkbDump(display), before, 'deskd A bound its spare keys');
  await a.stop('SIGKILL');
  assert.notEqual(xmodmap(display), beforeCore, 'kill -9 left the keys bound');

  const b = await startDeskd({ display });
  const dir = tempDir('deskd-leftover-');
  const out = join(dir, 'xterm.records');
  const env = { ...process.env, ...PY, DISPLAY: display, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' };
  const xterm = launch('xterm', 'xterm', ['-u8', '-geometry', '120x40+0+0', '-e', 'python3', join(ROOT, 'tests/apps/tty_reader.py'), out], { env });
  t.after(() => xterm.stop());
  await waitUntil(() => existsSync(out + '.ready'), { timeout: 20000 * SLOW, what: 'xterm ready' });
  const records = () => existsSync(out) ? readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  // Warm up (click into xterm; its first keys can take a while).
  const until = Date.now() + 30000 * SLOW;
  while (!records().length && Date.now() < until) {
    await ok(b, { actions: [{ type: 'click', x: 300, y: 300 }, { type: 'type', text: 'w' }, { type: 'keypress', keys: ['Escape'] }] });
    await waitUntil(() => records().length, { timeout: 3000 * SLOW, what: 'warm-up' }).catch(() => {});
  }
  assert.ok(records().length, 'xterm got the warm-up string');
  const strings = ['café crème brûlée', 'Grüße aus Köln, Straße ẞ', 'Ελληνικά: Καλημέρα', 'Съешь же ещё', '中文：你好，世界', 'ñ€£ ✓'];
  let exact = 0;
  const failures = [];
  for (const s of strings) {
    const have = records().length;
    await ok(b, { actions: [{ type: 'type', text: s }, { type: 'keypress', keys: ['Escape'] }] });
    await waitUntil(() => records().length > have, { timeout: 30000 * SLOW, what: `record of ${JSON.stringify(s)}` });
    const got = records()[have];
    if (got === s) exact++;
    else failures.push(`${JSON.stringify(s)} arrived as ${JSON.stringify(got)}`);
  }
  assert.match(b.log.join(''), new RegExp(`input: put back ${n} spare keycodes`), 'B put back every key A left');
  assert.equal(await spareKeys(b), n, 'B has the whole pool');
  t.diagnostic(`B typed ${exact}/${strings.length} strings exactly after putting back ${n} spare keycodes`);
  assert.deepEqual(failures, []);

  // A deskd that starts while B runs leaves B's keys alone.
  const boundByB = xkbDump(display);
  const c = await startDeskd({ display });
  await ok(c, { actions: [{ type: 'type', text: 'x' }] });
  await spareKeys(c);
  assert.doesNotMatch(c.log.join(''), /put back \d+ spare keycodes/, 'C put back none of the keys of B, which runs');
  assert.equal(xkbDump(display), boundByB, 'C changed none of the keys of B');
  await c.stop();
  await xterm.stop();
  await b.stop();
  assert.equal(xkbDump(display), before, 'the keymap (xkbcomp -xkb) as before deskd A started');
  assert.equal(xmodmap(display), beforeCore, 'the core keymap (xmodmap -pke) as before deskd A started');
  assert.equal(claims(display), null, 'no record is left on the root');
});

test('a display with no free spare keycode: type off the keymap is no_spare_keys naming the code point, never internal', async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const display = x.display;
  // Every empty keycode gets a symbol of its own (as another program's
  // bindings would): no spare keycode is left.
  const empty = [...xmodmap(display).matchAll(/^keycode\s+(\d+) =\s*$/gm)].map((m) => m[1]);
  assert.ok(empty.length > 0, 'Xvfb has empty keycodes');
  const r = run('xmodmap', ['-display', display, ...empty.flatMap((kc) => ['-e', `keycode ${kc} = F35`])], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const d = await startDeskd({ display });
  const bad = await d.tool('computer_use', { actions: [{ type: 'type', text: 'ok é' }] });
  assert.equal(bad.status, 409, JSON.stringify(bad.body));
  assert.equal(bad.body.error.code, 'no_spare_keys');
  assert.match(bad.body.error.message, /U\+00E9 is not on the keyboard map and the display has no free spare keycode/);
  // ASCII still types.
  await ok(d, { actions: [{ type: 'type', text: 'ok' }] });
});
