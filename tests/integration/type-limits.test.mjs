// A long `type` never starves other clients: it types in chunks and lets the
// actions waiting for the desktop lock run between them (at word
// boundaries), and it is bounded in length (docs/RELIABILITY, D5).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { desktop, waitUntil, SLOW } from './lib/harness.mjs';

test('a 60 KB type arrives byte-exact across its chunks; over 64 KiB is refused', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '600x400+0+0' } });
  const words = [];
  for (let i = 0; words.join(' ').length < 60000; i++) words.push(`w${i}x`);
  const text = words.join(' ').slice(0, 60000).replace(/ \S*$/, '');
  const r = await env.deskd.tool('computer_use', { actions: [{ type: 'click', x: 300, y: 200 }, { type: 'type', text }] });
  assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 500));
  assert.equal(r.body.structuredContent.results[1].chars, text.length);
  await waitUntil(() => env.fixture.state().text.length >= text.length, { timeout: 20000 * SLOW, what: 'the whole text' });
  assert.equal(env.fixture.state().text, text, 'byte-exact, chunk boundaries invisible');

  const big = await env.deskd.tool('computer_use', { actions: [{ type: 'type', text: 'x'.repeat(65537) }] });
  assert.equal(big.status, 400);
  assert.equal(big.body.error.code, 'bad_arguments');
  assert.match(big.body.error.message, /at most 65536 bytes/);
});

test('another client clicks while a slow type runs: it waits one chunk, not the whole text', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '600x400+0+0' } });
  // 250 characters off the keymap: more than the spare slots of this
  // display (12 keycodes x 4 levels x 4 groups = 192), so slots are bound
  // again, each after a 3 s quarantine (the fixture does not answer
  // _NET_WM_PING): the text takes some 6 s. Those waits, like the chunks,
  // must leave the desktop lock to others.
  const letters = Array.from({ length: 250 }, (_, i) => String.fromCodePoint(0x4e00 + i));
  let text = '';
  for (let i = 0; [...text].length < 600; i++) text += letters[i % letters.length] + (i % 7 === 6 ? ' ' : '');
  let typedAt = 0;
  const typing = env.deskd.tool('computer_use', { actions: [{ type: 'click', x: 300, y: 200 }, { type: 'type', text }] })
    .then((r) => { typedAt = performance.now(); return r; });
  await waitUntil(() => env.fixture.state().text.length > 0, { timeout: 10000 * SLOW, what: 'typing to start' });
  const t0 = performance.now();
  const click = await env.deskd.tool('computer_use', { actions: [{ type: 'click', x: 310, y: 210 }] });
  const clickedAt = performance.now();
  assert.equal(click.status, 200, JSON.stringify(click.body));
  const typed = await typing;
  assert.equal(typed.status, 200, JSON.stringify(typed.body).slice(0, 500));
  t.diagnostic(`the click waited ${Math.round(clickedAt - t0)} ms; the type went on for ${Math.round(typedAt - clickedAt)} ms after it`);
  assert.ok(clickedAt - t0 < 3000 * SLOW, `the click waited ${Math.round(clickedAt - t0)} ms`);
  assert.ok(typedAt - clickedAt > 500, 'the click ran while the text was still being typed');
  // Waiting for slots to drain without the lock loses nothing: the click
  // hit the same window, so every character arrives, in order.
  await waitUntil(() => env.fixture.state().text.length >= text.length, { timeout: 5000 * SLOW, what: 'the whole text' });
  assert.equal(env.fixture.state().text, text);
});
