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
import { desktop, startFixture, waitUntil, SLOW } from './lib/harness.mjs';

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
