// Typing into apps whose toolkits take keys their own way (issue 25,
// INPUT2.md I4 and I5), read back byte-exact outside deskd:
//  - Java Swing (OpenJDK): AWT keeps only the low 16 bits of a keysym above
//    U+FFFF, so `type` sends text with such characters by paste there
//    (method paste, client java) and other text as keys;
//  - LibreOffice Writer (VCL's X11 backend): it drops a release+press of one
//    keycode with one timestamp as autorepeat (deskd spaces them 1 ms apart
//    in server time) and inserts a character above U+FFFF ahead of the
//    characters it still buffers (deskd waits for it to take them: paced).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startDeskd, startXvfb, startWm, tempDir } from './lib/harness.mjs';
import { startApp, warmUp } from './lib/apps.mjs';
import { lockOn, setLock } from './lib/keyboard.mjs';
import { appCorpus } from './lib/corpus.mjs';

async function ok(deskd, args) {
  const r = await deskd.tool('computer_use', args);
  assert.equal(r.status, 200, `${JSON.stringify(args).slice(0, 200)} -> ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`);
  assert.ok(!r.body.isError, JSON.stringify(r.body).slice(0, 400));
  return r.body.structuredContent;
}

const astral = (s) => /[\u{10000}-\u{10FFFF}]/u.test(s);

/** deskd on a display of its own with app kind warmed up; call(actions)
 *  runs a batch at the app's window and keeps the type action's result
 *  (last.type). */
async function typingDesk(t, kind) {
  const x = await startXvfb();
  t.after(() => x.stop());
  await startWm(x.display);
  const deskd = await startDeskd({ display: x.display });
  t.after(() => deskd.stop());
  const app = await startApp(kind, x.display, tempDir(`deskd-${kind}-`));
  t.after(() => app.stop());
  const last = {};
  const batch = async (target, actions) => {
    const r = await ok(deskd, { ...target, actions });
    last.type = r.results[actions.findIndex((a) => a.type === 'type')];
    return r;
  };
  const target = await warmUp(deskd, app, batch, { timeout: 90000 });
  return { display: x.display, app, last, call: (actions) => batch(target, actions) };
}

test('Java Swing: the corpus typed arrives exact; text with characters above U+FFFF goes by paste, the rest as keys', { timeout: 300000 }, async (t) => {
  const { display, app, last, call } = await typingDesk(t, 'swing');
  const corpus = appCorpus().filter((s) => [...s].length <= 300);
  assert.ok(corpus.filter(astral).length >= 3, 'the corpus has characters above U+FFFF');
  const failures = [];
  // Caps Lock off, then on (typing unlocks it for its keys: PITFALLS 27a).
  for (const caps of [false, true]) {
    setLock(display, caps);
    for (const s of corpus) {
      const got = await app.submit(call, s);
      const res = last.type;
      if (got !== s) failures.push(`caps ${caps ? 'on' : 'off'}: ${JSON.stringify(s).slice(0, 60)} arrived as ${JSON.stringify(got).slice(0, 80)}`);
      // The route: by paste only for text with a character above U+FFFF,
      // and the result says so; every character is counted once.
      if (astral(s)) {
        if (res.method !== 'paste' || res.client !== 'java')
          failures.push(`${JSON.stringify(s).slice(0, 40)}: result ${JSON.stringify(res)} does not say paste for java`);
      } else if (res.method !== undefined) {
        failures.push(`${JSON.stringify(s).slice(0, 40)}: BMP text went ${res.method}`);
      }
      if (res.chars !== [...s.replace(/\r\n/g, '\n')].length) failures.push(`${JSON.stringify(s).slice(0, 40)}: chars ${res.chars}`);
    }
    if (lockOn(display) !== caps) failures.push(`Caps Lock ${caps ? 'off' : 'on'} after typing`);
  }
  assert.deepEqual(failures, []);
});

// Repeats (letters, accented, Cyrillic, Greek, digits, spaces, Return, Tab)
// and emoji sequences with joiners, selectors and modifiers.
const loStrings = [
  'Hello aa bb 1000 xxxx ééééé жж λλ сс II',
  'one\n\n\ntwo',
  'a\t\t\tb  c   d',
  'ŧ'.repeat(40),
  'emoji 👩‍💻 ✌🏿 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️‍🔥 🇩🇪🇩🇪 𝕏𝕏',
  'skin 👍🏽👋🏿 flags 🇫🇷🇯🇵 🏴󠁧󠁢󠁳󠁣󠁴󠁿 end',
  'Mississippi bookkeeper "quoted" \'single\' 100%',
  // 55 symbols off the keymap: more than Xvfb's spare keys hold in one
  // group (48), so some go with another group locked (PITFALLS 27g).
  'абвгдежзийклмнопрстуфхцчшщъыьэюя αβγδεζηθικλμνξοπρστυφχψ',
];

test('LibreOffice Writer: repeated characters, Returns and emoji sequences arrive exact', { timeout: 300000 }, async (t) => {
  const { display, app, last, call } = await typingDesk(t, 'writer');
  const failures = [];
  const table = [];
  for (const caps of [false, true]) {
    setLock(display, caps);
    for (const s of loStrings) {
      const t0 = Date.now();
      const got = await app.submit(call, s);
      const ms = Date.now() - t0;
      const res = last.type;
      table.push({ caps, string: JSON.stringify(s).slice(0, 40), exact: got === s, ms, paced: res.paced ?? 0 });
      if (got !== s) failures.push(`caps ${caps ? 'on' : 'off'}: ${JSON.stringify(s)} arrived as ${JSON.stringify(got)}`);
      // Where a character above U+FFFF follows others, typing waited for Writer.
      if (astral(s) && !(res.paced > 0)) failures.push(`${JSON.stringify(s).slice(0, 40)}: not paced: ${JSON.stringify(res)}`);
      if (!astral(s) && res.paced !== undefined) failures.push(`${JSON.stringify(s).slice(0, 40)}: paced without a character above U+FFFF`);
    }
    if (lockOn(display) !== caps) failures.push(`Caps Lock ${caps ? 'off' : 'on'} after typing`);
  }
  t.diagnostic(JSON.stringify(table));
  assert.deepEqual(failures, []);
});

// Qt 5 decodes each key's text with QString::fromUtf8, which skips a UTF-8
// byte-order mark: U+FEFF typed as a key arrived as nothing (the hard
// corpus, tests/slow). deskd finds Qt 5 in the focused client's libraries
// and pastes such text; a text that starts with U+FEFF loses it by paste
// too, so it is refused with nothing typed.
test('Qt 5: text with U+FEFF goes by paste (client qt) and arrives exact; a leading U+FEFF is refused and nothing is typed', { timeout: 120000 }, async (t) => {
  const { app, last, call } = await typingDesk(t, 'qt');
  for (const s of ['invisible: a\u200bb\ufeffc\u2060d', 'é\ufeff😀']) {
    assert.equal(await app.submit(call, s), s);
    assert.equal(last.type.method, 'paste', JSON.stringify(last.type));
    assert.equal(last.type.client, 'qt', JSON.stringify(last.type));
  }
  // Without U+FEFF: keys, as everywhere.
  assert.equal(await app.submit(call, 'ä\u200bb'), 'ä\u200bb');
  assert.equal(last.type.method, undefined, JSON.stringify(last.type));
  await assert.rejects(call([{ type: 'type', text: '\ufeffab' }]), /U\+FEFF at the start/);
  assert.equal(await app.submit(call, 'z'), 'z', 'nothing of the refused text arrived');
});
