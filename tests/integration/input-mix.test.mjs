// Off-keymap characters typed right after other input: a second new symbol
// soon after another (in the next action, or the next call), one after a
// keypress, one after a Ctrl chord. Each must reach the app as its own
// symbol, never NoSymbol. A plain Xlib client (the fixture) can miss a
// keymap change for good when it comes in while the client fetches the map
// (its first key lookup fetches the whole map before it selects MapNotify; a
// later one forgets every note when its fetch returns), and keys deskd had
// just sent start such fetches. Every round uses a new fixture (a new Xlib
// client) and symbols not bound yet, as the first call to a fresh app does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { desktop, startFixture, launch, need, tempDir, waitUntil, SLOW, ROOT } from './lib/harness.mjs';

const ROUNDS = 10;
// Never on the us keymap; each round takes new ones.
const POOL = [...'éèêëàâäçôöùûüîïñåæøœßþðłśźżčřšžğıăąęőűαβγδεζηθικλμνξπρστφχψωабвгдежзиклмнопрстуфхцчшщэюя✓✗★☆♠♣♥♦'];
let next = 0;
const fresh = () => POOL[next++ % POOL.length];

// Each case: the actions (after a click into the fixture), the text they add.
const CASES = [
  { name: 'é, Return, then a new ✓ (the helper\'s paste note)', make: () => {
    const a = fresh(), b = fresh();
    return { want: `${a}\npasted ${b}`, keys: 10, actions: [{ type: 'type', text: a }, { type: 'keypress', keys: ['Return'] }, { type: 'type', text: `pasted ${b}` }] };
  } },
  { name: 'ctrl+a, then a new é', make: () => {
    const a = fresh();
    return { want: a, keys: 3, actions: [{ type: 'keypress', keys: ['ctrl', 'a'] }, { type: 'type', text: a }] };
  } },
  { name: 'two new symbols in two type actions', make: () => {
    const a = fresh(), b = fresh();
    return { want: `${a}0${b}`, keys: 3, actions: [{ type: 'type', text: `${a}0` }, { type: 'type', text: b }] };
  } },
  { name: 'a new symbol in the next call, right after', make: () => {
    const a = fresh(), b = fresh();
    return { want: `${a}1${b}`, keys: 3, actions: [{ type: 'type', text: `${a}1` }], then: [{ type: 'type', text: b }] };
  } },
];

for (const c of CASES) {
  test(`fixture: ${c.name}, ${ROUNDS} times, every character exact`, async (t) => {
    const env = await desktop(t, {});
    let exact = 0;
    const bad = [];
    for (let i = 0; i < ROUNDS; i++) {
      if (env.fixture) await env.fixture.stop();
      env.fixture = null;
      env.fixture = await startFixture(env.display, { geometry: '600x400+0+0' });
      const { want, keys, actions, then } = c.make();
      const r = await env.deskd.tool('computer_use', { actions: [{ type: 'click', x: 10, y: 10 }, ...actions] });
      assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 500));
      if (then) {
        const r2 = await env.deskd.tool('computer_use', { actions: then });
        assert.equal(r2.status, 200, JSON.stringify(r2.body).slice(0, 500));
      }
      // Every key press is in the state file once it was handled.
      // (Shift and Level3 presses that pick a slot's level not counted.)
      const presses = (s) => s.events.filter((e) => e.type === 'key_press'
        && e.name !== 'Shift_L' && e.name !== 'ISO_Level3_Shift').length;
      await waitUntil(() => presses(env.fixture.state()) >= keys, { timeout: 3000 * SLOW, what: `round ${i}: the keys of ${JSON.stringify(want)}` })
        .catch(() => {});
      const s = env.fixture.state();
      if (s.text === want) exact++;
      else {
        const got = s.events.filter((e) => e.type === 'key_press').map((e) => `${e.keycode}:${e.name || 'NoSymbol'}`);
        bad.push(`${JSON.stringify(want)} -> ${JSON.stringify(s.text)} (keys ${got.join(' ')})`);
      }
    }
    t.diagnostic(`${c.name}: ${exact}/${ROUNDS} exact${bad.length ? '; ' + bad.slice(0, 3).join('; ') : ''}`);
    assert.equal(exact, ROUNDS, bad.join('; '));
  });
}

// The same sequences into a GTK3 text view (one app for all rounds: new
// symbols each round; Escape saves the view's text and clears it).
const PY = { PATH: '/usr/bin:/bin' };   // Debian's python3 (python3-gi)
test(`GTK3: the same sequences, ${ROUNDS} times each, every character exact`, { timeout: 180000 }, async (t) => {
  need('python3');
  const env = await desktop(t, { wm: 'openbox' });
  const dir = tempDir('deskd-mix-');
  const out = join(dir, 'gtk.records');
  // spawns: python3
  const app = launch('gtk', 'python3', [join(ROOT, 'tests/apps/gtk_text.py'), out],
    { env: { ...process.env, ...PY, DISPLAY: env.display, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', NO_AT_BRIDGE: '1' } });
  t.after(() => app.stop());
  await waitUntil(() => existsSync(out + '.ready'), { timeout: 20000 * SLOW, what: 'gtk ready' });
  const records = () => existsSync(out) ? readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  const tool = async (actions) => {
    const r = await env.deskd.tool('computer_use', { actions });
    assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 500));
  };
  await tool([{ type: 'click', x: 300, y: 300 }, { type: 'wait', ms: 500 }]);
  const lines = [];
  let failed = 0;
  for (const c of CASES) {
    let exact = 0;
    const bad = [];
    for (let i = 0; i < ROUNDS; i++) {
      const { want, actions, then } = c.make();
      const had = records().length;
      const esc = { type: 'keypress', keys: ['Escape'] };
      await tool([{ type: 'click', x: 300, y: 300 }, ...actions, ...(then ? [] : [esc])]);
      if (then) await tool([...then, esc]);
      await waitUntil(() => records().length > had, { timeout: 5000 * SLOW, what: `round ${i}: the record` }).catch(() => {});
      const got = records()[had];
      if (got === want) exact++;
      else bad.push(`${JSON.stringify(want)} -> ${JSON.stringify(got)}`);
    }
    if (exact < ROUNDS) failed++;
    lines.push(`${c.name}: ${exact}/${ROUNDS}${bad.length ? ' (' + bad.slice(0, 3).join('; ') + ')' : ''}`);
  }
  t.diagnostic(lines.join(' | '));
  assert.equal(failed, 0, lines.join('\n'));
});
