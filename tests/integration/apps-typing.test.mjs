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
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { run, startDeskd, startXvfb, startWm, waitUntil, launch, tempDir, ROOT, SLOW, sleep } from './lib/harness.mjs';
import { appCorpus } from './lib/corpus.mjs';

async function ok(deskd, args) {
  const r = await deskd.tool('computer_use', args);
  assert.equal(r.status, 200, `${JSON.stringify(args).slice(0, 200)} -> ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`);
  assert.ok(!r.body.isError, JSON.stringify(r.body).slice(0, 400));
  return r.body.structuredContent;
}

const astral = (s) => /[\u{10000}-\u{10FFFF}]/u.test(s);

/** Caps Lock set as a person's key press would, checked by the server's
 *  indicator (xset q). */
function setCaps(display, on) {
  const state = () => {
    const r = run('xset', ['-display', display, 'q'], { encoding: 'utf8' });   // spawns: xset
    assert.equal(r.status, 0, 'xset q: ' + r.stderr);
    return /Caps Lock:\s*on/.test(r.stdout);
  };
  if (state() !== on) assert.equal(run('xdotool', ['key', 'Caps_Lock'], { env: { ...process.env, DISPLAY: display } }).status, 0);   // spawns: xdotool
  assert.equal(state(), on, `Caps Lock ${on ? 'on' : 'off'}`);
  return state;
}

test('Java Swing: the corpus typed arrives exact; text with characters above U+FFFF goes by paste, the rest as keys', { timeout: 300000 }, async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  await startWm(x.display);
  const deskd = await startDeskd({ display: x.display });
  t.after(() => deskd.stop());
  const dir = tempDir('deskd-swing-');
  const env = { ...process.env, DISPLAY: x.display, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' };
  const javac = run('javac', ['-d', dir, join(ROOT, 'tests/apps/SwingText.java')], { encoding: 'utf8', env });   // spawns: javac
  assert.equal(javac.status, 0, 'javac: ' + javac.stderr);
  const out = join(dir, 'swing.records');
  const app = launch('swing', 'java', ['-cp', dir, 'SwingText', out], { env });   // spawns: java
  t.after(() => app.stop());
  await waitUntil(() => existsSync(out + '.ready'), { timeout: 30000, what: 'the Swing window' });
  const records = () => existsSync(out) ? readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  // Its window by its pid, then a first record through (the JVM takes a
  // while with its first keys).
  const win = await waitUntil(async () => (await deskd.tool('windows', {})).body.structuredContent?.windows
    ?.find((w) => w.pid === app.proc.pid && w.width > 100 && w.height > 100), { timeout: 20000, what: 'the Swing window listed' });
  const target = { window: win.id };
  await ok(deskd, { ...target, actions: [{ type: 'click', x: Math.floor(win.width / 2), y: Math.floor(win.height / 2) },
    { type: 'type', text: 'w' }, { type: 'keypress', keys: ['Escape'] }] });
  await waitUntil(() => records().length >= 1, { timeout: 20000, what: 'the warm-up record' });
  assert.equal(records()[0], 'w');

  const corpus = appCorpus().filter((s) => [...s].length <= 300);
  assert.ok(corpus.filter(astral).length >= 3, 'the corpus has characters above U+FFFF');
  const failures = [];
  let done = records().length;
  // Caps Lock off, then on (typing unlocks it for its keys: PITFALLS 27a).
  for (const caps of [false, true]) {
    const capsOn = setCaps(x.display, caps);
    for (const s of corpus) {
      const r = await ok(deskd, { ...target, actions: [{ type: 'type', text: s }, { type: 'keypress', keys: ['Escape'] }] });
      const res = r.results[0];
      done++;
      await waitUntil(() => records().length >= done, { timeout: 30000, what: `record ${done}` });
      const got = records()[done - 1];
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
    if (capsOn() !== caps) failures.push(`Caps Lock ${caps ? 'off' : 'on'} after typing`);
  }
  assert.deepEqual(failures, []);
});

// LibreOffice with a profile of its own: no tip of the day, no autocorrect
// or word completion while typing (they would change the text themselves).
const LO_PROFILE = `<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
${[['Common/Misc', 'ShowTipOfTheDay'], ['Common/Misc', 'FirstRun'],
  ['Writer/AutoFunction/Format/ByInput', 'Enable'], ['Writer/AutoFunction/Completion', 'Enable'],
  ...['UseReplacementTable', 'TwoCapitalsAtStart', 'CapitalAtStartSentence', 'ChangeUnderlineWeight', 'SetInetAttribute',
    'ChangeOrdinalNumber', 'ChangeDash', 'AddNonBreakingSpace', 'RemoveDoubleSpaces', 'CorrectAccidentalCapsLock',
    'ReplaceSingleQuote', 'ReplaceDoubleQuote'].map((p) => ['Common/AutoCorrect', p])]
  .map(([path, prop]) => `<item oor:path="/org.openoffice.Office.${path}"><prop oor:name="${prop}" oor:op="fuse"><value>false</value></prop></item>`).join('\n')}
</oor:items>
`;

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
  const x = await startXvfb();
  t.after(() => x.stop());
  await startWm(x.display);
  const deskd = await startDeskd({ display: x.display });
  t.after(() => deskd.stop());
  const dir = tempDir('deskd-lo-');
  mkdirSync(join(dir, 'profile/user'), { recursive: true });
  writeFileSync(join(dir, 'profile/user/registrymodifications.xcu'), LO_PROFILE);
  const env = { ...process.env, DISPLAY: x.display, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', SAL_USE_VCLPLUGIN: 'gen' };
  const lo = launch('soffice', 'soffice', ['--writer', '--norestore', '--nologo', '--nolockcheck',   // spawns: soffice
    `-env:UserInstallation=file://${join(dir, 'profile')}`], { env });
  t.after(() => lo.stop());
  const win = await waitUntil(async () => (await deskd.tool('windows', {})).body.structuredContent?.windows
    ?.find((w) => / - LibreOffice Writer$/.test(w.title) && w.width > 200), { timeout: 90000, what: 'the Writer window' });
  const target = { window: win.id };
  const clip = () => {
    const r = run('xclip', ['-o', '-selection', 'clipboard'], { env, timeout: 5000 });   // spawns: xclip
    return r.status === 0 ? r.stdout.toString('utf8') : null;
  };
  // The document's text: select all, copy, read the clipboard until it holds
  // want (LibreOffice serves it a moment after the chord) or 10 s passed.
  const readBack = async (want) => {
    await ok(deskd, { ...target, actions: [{ type: 'keypress', keys: ['ctrl', 'a'] }, { type: 'keypress', keys: ['ctrl', 'c'] }] });
    let got = null;
    await waitUntil(() => (got = clip()) === want, { timeout: 10000, what: 'the copy' }).catch(() => {});
    return got;
  };
  // A first string through: Writer's first keys after its start.
  await ok(deskd, { ...target, actions: [{ type: 'click', x: Math.floor(win.width / 2), y: Math.floor(win.height / 2) }, { type: 'type', text: 'warm' }] });
  assert.equal(await readBack('warm'), 'warm', 'the warm-up word');
  const failures = [];
  const table = [];
  for (const caps of [false, true]) {
    const capsOn = setCaps(x.display, caps);
    for (const s of loStrings) {
      await ok(deskd, { ...target, actions: [{ type: 'keypress', keys: ['ctrl', 'a'] }, { type: 'keypress', keys: ['BackSpace'] }] });
      const t0 = Date.now();
      const r = await ok(deskd, { ...target, actions: [{ type: 'type', text: s }] });
      const ms = Date.now() - t0;
      const got = await readBack(s);
      const res = r.results[0];
      table.push({ caps, string: JSON.stringify(s).slice(0, 40), exact: got === s, ms, paced: res.paced ?? 0 });
      if (got !== s) failures.push(`caps ${caps ? 'on' : 'off'}: ${JSON.stringify(s)} arrived as ${JSON.stringify(got)}`);
      // Where a character above U+FFFF follows others, typing waited for Writer.
      if (astral(s) && !(res.paced > 0)) failures.push(`${JSON.stringify(s).slice(0, 40)}: not paced: ${JSON.stringify(res)}`);
      if (!astral(s) && res.paced !== undefined) failures.push(`${JSON.stringify(s).slice(0, 40)}: paced without a character above U+FFFF`);
    }
    if (capsOn() !== caps) failures.push(`Caps Lock ${caps ? 'off' : 'on'} after typing`);
  }
  t.diagnostic(JSON.stringify(table));
  assert.deepEqual(failures, []);
});
