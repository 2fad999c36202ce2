// The apps the typing tests read text back from: each appends what it got
// as one JSON string per line at each Escape (xterm, GTK3, Qt5), or keeps
// it in window.records (Chromium, over the DevTools protocol).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { launch, need, tempDir, waitUntil, ROOT, SLOW } from './harness.mjs';
import { devtoolsPage, CHROMIUM } from './browser.mjs';

const PY = { PATH: '/usr/bin:/bin' };   // Debian's python3 (python3-gi, python3-pyqt5)

/** Start app kind (xterm, gtk, qt, chromium) on display; its records in dir. */
export async function startApp(kind, display, dir) {
  const env = { ...process.env, ...PY, DISPLAY: display, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', NO_AT_BRIDGE: '1', QT_ACCESSIBILITY: '0' };
  const out = join(dir, `${kind}.records`);
  let p;
  if (kind === 'xterm') {
    p = launch('xterm', 'xterm', ['-u8', '-geometry', '120x40+0+0', '-e', 'python3', join(ROOT, 'tests/apps/tty_reader.py'), out], { env });
  } else if (kind === 'gtk') {
    p = launch('gtk', 'python3', [join(ROOT, 'tests/apps/gtk_text.py'), out], { env });
  } else if (kind === 'qt') {
    p = launch('qt', 'python3', [join(ROOT, 'tests/apps/qt_text.py'), out], { env: { ...env, QT_QPA_PLATFORM: 'xcb' } });
  }
  if (p) {
    await waitUntil(() => existsSync(out + '.ready'), { timeout: 20000 * SLOW, what: `${kind} ready` });
    const records = () => existsSync(out) ? readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
    return { name: kind, records: async () => records(), stop: () => p.stop() };
  }
  // Chromium: a local page; window.records over the DevTools protocol.
  need(CHROMIUM);   // spawns: chromium
  const profile = tempDir('deskd-chromium-');
  p = launch('chromium', CHROMIUM, ['--no-sandbox', '--disable-gpu', '--no-first-run', '--no-default-browser-check',   // spawns: chromium
    '--disable-extensions', '--disable-features=Translate', '--password-store=basic', `--user-data-dir=${profile}`,
    '--remote-debugging-port=0', '--window-position=0,0', '--window-size=900,600',
    `--app=file://${join(ROOT, 'tests/apps/textarea.html')}`], { env });
  let ws;
  await waitUntil(() => (ws = /DevTools listening on (ws:\S+)/.exec(p.log.join(''))?.[1]), { timeout: 30000 * SLOW, what: 'chromium DevTools' });
  const page = await devtoolsPage(new URL(ws).port, 'textarea.html', { timeout: 20000 * SLOW });
  const evaluate = page.evaluate;
  await waitUntil(async () => (await evaluate('document.readyState')) === 'complete', { timeout: 10000, what: 'page loaded' });
  return { name: 'chromium', records: async () => (await evaluate('JSON.stringify(window.records)').then(JSON.parse)) || [],
    stop: async () => { page.close(); await p.stop(); } };
}

