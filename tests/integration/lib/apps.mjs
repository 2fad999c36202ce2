// The apps the typing tests read text back from, each started on a test's
// display. Most append what they got as one JSON string per line at each
// Escape (xterm, GTK 3, GTK 4, Tk, Qt 5, Swing); Chromium keeps it in
// window.records (over the DevTools protocol); Firefox POSTs it to the
// test's server; Writer's text is copied out (ctrl+a, ctrl+c, xclip).
// An app's submit(call, s) types s into it and gives back what it got, its
// window(list) finds its window in a `windows` answer.
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { launch, need, run, tempDir, waitUntil, ROOT, SLOW } from './harness.mjs';
import { devtoolsPage, CHROMIUM } from './browser.mjs';

const PY = { PATH: '/usr/bin:/bin' };   // Debian's python3 (python3-gi, python3-pyqt5, python3-tk)

// The readers that write a records file: the command line for each.
const RECORDERS = {
  xterm: (out) => ['xterm', ['-u8', '-geometry', '120x40+0+0', '-e', 'python3', join(ROOT, 'tests/apps/tty_reader.py'), out]],
  gtk: (out) => ['python3', [join(ROOT, 'tests/apps/gtk_text.py'), out]],
  gtk4: (out) => ['python3', [join(ROOT, 'tests/apps/gtk4_text.py'), out]],
  tk: (out) => ['python3', [join(ROOT, 'tests/apps/tk_text.py'), out]],
  qt: (out) => ['python3', [join(ROOT, 'tests/apps/qt_text.py'), out]],
  swing: (out, dir) => {
    const javac = run('javac', ['-d', dir, join(ROOT, 'tests/apps/SwingText.java')], { encoding: 'utf8' });   // spawns: javac
    if (javac.status !== 0) throw new Error('javac: ' + javac.stderr);
    return ['java', ['-cp', dir, 'SwingText', out]];
  },
};

// A fresh Firefox profile: no first-run pages, no default-browser question,
// no session restore, nothing fetched from the network.
export const FIREFOX_PREFS = {
  'browser.shell.checkDefaultBrowser': false, 'browser.startup.homepage_override.mstone': 'ignore',
  'startup.homepage_welcome_url': '', 'startup.homepage_welcome_url.additional': '',
  'browser.aboutwelcome.enabled': false, 'datareporting.policy.dataSubmissionEnabled': false,
  'datareporting.healthreport.uploadEnabled': false, 'toolkit.telemetry.reportingpolicy.firstRun': false,
  'app.update.enabled': false, 'browser.sessionstore.resume_from_crash': false, 'signon.rememberSignons': false,
  'browser.translations.enable': false, 'network.captive-portal-service.enabled': false,
  'browser.newtabpage.enabled': false, 'extensions.autoDisableScopes': 15,
};

/** A Firefox profile directory under dir with FIREFOX_PREFS. */
export function firefoxProfile(dir) {
  const profile = join(dir, 'firefox-profile');
  mkdirSync(profile, { recursive: true });
  writeFileSync(join(profile, 'user.js'), Object.entries(FIREFOX_PREFS)
    .map(([k, v]) => `user_pref(${JSON.stringify(k)}, ${JSON.stringify(v)});\n`).join(''));
  return profile;
}

// LibreOffice with a profile of its own: no tip of the day, no autocorrect
// or word completion while typing (they would change the text themselves).
export const LO_PROFILE = `<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
${[['Common/Misc', 'ShowTipOfTheDay'], ['Common/Misc', 'FirstRun'],
  ['Writer/AutoFunction/Format/ByInput', 'Enable'], ['Writer/AutoFunction/Completion', 'Enable'],
  ...['UseReplacementTable', 'TwoCapitalsAtStart', 'CapitalAtStartSentence', 'ChangeUnderlineWeight', 'SetInetAttribute',
    'ChangeOrdinalNumber', 'ChangeDash', 'AddNonBreakingSpace', 'RemoveDoubleSpaces', 'CorrectAccidentalCapsLock',
    'ReplaceSingleQuote', 'ReplaceDoubleQuote'].map((p) => ['Common/AutoCorrect', p])]
  .map(([path, prop]) => `<item oor:path="/org.openoffice.Office.${path}"><prop oor:name="${prop}" oor:op="fuse"><value>false</value></prop></item>`).join('\n')}
</oor:items>
`;

/** Type s and Escape (call: one computer_use batch), then wait for the
 *  app's next record: what it got. */
function submitByEscape(records) {
  return async (call, s, { timeout = 60000 } = {}) => {
    const n = (await records()).length;
    await call([{ type: 'type', text: s }, { type: 'keypress', keys: ['Escape'] }]);
    await waitUntil(async () => (await records()).length > n, { timeout: timeout * SLOW, what: 'the record' });
    return (await records())[n];
  };
}

/** Start app kind (xterm, gtk, gtk4, tk, qt, swing, chromium, firefox,
 *  writer) on display, its files in dir (tag: a name for this start). */
export async function startApp(kind, display, dir, tag = '') {
  const env = { ...process.env, ...PY, DISPLAY: display, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', NO_AT_BRIDGE: '1', QT_ACCESSIBILITY: '0', QT_QPA_PLATFORM: 'xcb' };
  const out = join(dir, `${kind}${tag}.records`);
  if (RECORDERS[kind]) {
    const [cmd, args] = RECORDERS[kind](out, dir);
    const p = launch(kind, cmd, args, { env });   // spawns: xterm python3 java (RECORDERS)
    await waitUntil(() => existsSync(out + '.ready'), { timeout: 30000 * SLOW, what: `${kind} ready` });
    const records = async () => existsSync(out) ? readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
    return { name: kind, pid: p.proc.pid, records, submit: submitByEscape(records),
      window: (list) => list.find((w) => w.pid === p.proc.pid && w.width > 1 && w.height > 1), stop: () => p.stop() };
  }
  if (kind === 'chromium') {
    // A local page; window.records over the DevTools protocol.
    need(CHROMIUM);   // spawns: chromium
    const profile = tempDir('deskd-chromium-');
    const p = launch('chromium', CHROMIUM, ['--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check',   // spawns: chromium
      '--disable-extensions', '--disable-features=Translate', '--password-store=basic', `--user-data-dir=${profile}`,
      '--remote-debugging-port=0', '--window-position=0,0', '--window-size=900,600',
      `--app=file://${join(ROOT, 'tests/apps/textarea.html')}`], { env });
    let ws;
    await waitUntil(() => (ws = /DevTools listening on (ws:\S+)/.exec(p.log.join(''))?.[1]), { timeout: 30000 * SLOW, what: 'chromium DevTools' });
    const page = await devtoolsPage(new URL(ws).port, 'textarea.html', { timeout: 20000 * SLOW });
    await waitUntil(async () => (await page.evaluate('document.readyState')) === 'complete', { timeout: 10000, what: 'page loaded' });
    const records = async () => (await page.evaluate('JSON.stringify(window.records)').then(JSON.parse)) || [];
    return { name: kind, pid: p.proc.pid, records, submit: submitByEscape(records),
      window: (list) => list.find((w) => /deskd textarea/.test(w.title) && w.width > 100), stop: async () => { page.close(); await p.stop(); } };
  }
  if (kind === 'firefox') {
    // The same page served by the test: each Escape POSTs the value.
    const got = [];
    const srv = http.createServer((req, res) => {
      if (req.method !== 'POST') {
        res.setHeader('content-type', 'text/html; charset=utf-8');
        res.end(readFileSync(join(ROOT, 'tests/apps/textarea.html')));
        return;
      }
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => { got.push(Buffer.concat(chunks).toString('utf8')); res.end('ok'); });
    });
    await new Promise((res) => srv.listen(0, '127.0.0.1', res));
    const p = launch('firefox', 'firefox-esr', ['-no-remote', '-profile', firefoxProfile(dir), '-width', '900', '-height', '600',   // spawns: firefox-esr
      `http://127.0.0.1:${srv.address().port}/`], { env });
    const records = async () => got;
    return { name: kind, pid: p.proc.pid, records, submit: submitByEscape(records),
      window: (list) => list.find((w) => /^deskd textarea/.test(w.title) && w.width > 100),
      stop: async () => { srv.close(); await p.stop(); } };
  }
  if (kind === 'writer') {
    mkdirSync(join(dir, 'lo-profile/user'), { recursive: true });
    writeFileSync(join(dir, 'lo-profile/user/registrymodifications.xcu'), LO_PROFILE);
    const p = launch('soffice', 'soffice', ['--writer', '--norestore', '--nologo', '--nolockcheck',   // spawns: soffice
      `-env:UserInstallation=file://${join(dir, 'lo-profile')}`], { env: { ...env, SAL_USE_VCLPLUGIN: 'gen' } });
    const clip = () => {
      const r = run('xclip', ['-o', '-selection', 'clipboard'], { env, timeout: 5000 });   // spawns: xclip
      return r.status === 0 ? r.stdout.toString('utf8') : null;
    };
    // The document's text: select all, copy, read the clipboard until it
    // holds want (LibreOffice serves it a moment after the chord) or 10 s.
    const submit = async (call, s, { timeout = 10000 } = {}) => {
      await call([{ type: 'keypress', keys: ['ctrl', 'a'] }, { type: 'keypress', keys: ['BackSpace'] }, { type: 'type', text: s },
        { type: 'keypress', keys: ['ctrl', 'a'] }, { type: 'keypress', keys: ['ctrl', 'c'] }]);
      let text = null;
      await waitUntil(() => (text = clip()) === s, { timeout: timeout * SLOW, what: 'the copy' }).catch(() => {});
      return text;
    };
    return { name: kind, pid: p.proc.pid, records: async () => [], submit,
      window: (list) => list.find((w) => / - LibreOffice Writer$/.test(w.title) && w.width > 200), stop: () => p.stop() };
  }
  throw new Error(`no such app: ${kind}`);
}

/** The app's window, clicked into, and a first string through it (apps
 *  take a while with their first keys); call(target, actions) runs one
 *  computer_use batch. Gives the window's target for the next batches. */
export async function warmUp(deskd, app, call, { timeout = 60000 } = {}) {
  const until = Date.now() + timeout * SLOW;
  let last = 'no window';
  while (Date.now() < until) {
    const w = app.window((await deskd.tool('windows', {})).body.structuredContent?.windows || []);
    if (!w) { await new Promise((r) => setTimeout(r, 200)); continue; }
    // A click into its middle, in the same batch as the keys (the click's
    // focus must hold for them); a window that went away is refused and
    // the next round lists again.
    const target = { window: w.id };
    try {
      const click = { type: 'click', x: Math.floor(w.width / 2), y: Math.floor(w.height / 2) };
      const got = await app.submit((actions) => call(target, [click, ...actions]), 'w', { timeout: 5000 });
      if (got === 'w') return target;
      last = `got ${JSON.stringify(got)}`;
    } catch (e) { last = e.message; }
  }
  throw new Error(`${app.name}: no warm-up string within ${timeout * SLOW} ms (last: ${last})`);
}

/** Type each string into app (call(actions): one batch at its window);
 *  how many arrived exactly, and a message for each that did not. */
export async function typeAll(app, call, strings, what) {
  const failures = [];
  let exact = 0;
  for (const s of strings) {
    const got = await app.submit(call, s);
    if (got === s) exact++;
    else failures.push(`${what}: ${JSON.stringify(s).slice(0, 60)} arrived as ${JSON.stringify(got).slice(0, 80)}`);
  }
  return { exact, failures };
}
