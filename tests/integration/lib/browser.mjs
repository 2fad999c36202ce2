// Headless Chromium for a test file (Debian's /usr/bin/chromium through
// playwright-core): launched before the file's tests, closed after them.
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';
import { need } from './harness.mjs';

export const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';

/** Registers the file's before/after hooks; the result's .browser is the
 *  browser once the tests run. */
export function useBrowser() {
  const chrome = { browser: null };
  before(async () => {
    need(CHROMIUM);   // spawns: chromium
    chrome.browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  after(async () => { if (chrome.browser) await chrome.browser.close(); });
  return chrome;
}

/** A page of a Chromium that deskd's desktop runs (not playwright's), over
 *  the DevTools protocol at port: evaluate(expression) gives its value. The
 *  page is the first whose URL includes name. */
export async function devtoolsPage(port, name, { timeout = 20000 } = {}) {
  let page;
  const end = Date.now() + timeout;
  while (!page) {
    const list = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json().catch(() => []);
    page = list.find((x) => x.type === 'page' && x.url.includes(name));
    if (!page && Date.now() > end) throw new Error(`no DevTools page ${name} within ${timeout} ms`);
    if (!page) await new Promise((r) => setTimeout(r, 100));
  }
  const sock = new WebSocket(page.webSocketDebuggerUrl);
  await new Promise((res, rej) => { sock.onopen = res; sock.onerror = rej; });
  let id = 0;
  const pending = new Map();
  sock.onmessage = (m) => { const r = JSON.parse(m.data); pending.get(r.id)?.(r); pending.delete(r.id); };
  const evaluate = (expression) => new Promise((res) => {
    pending.set(++id, (r) => res(r.result?.result?.value));
    sock.send(JSON.stringify({ id, method: 'Runtime.evaluate', params: { expression, returnByValue: true } }));
  });
  return { evaluate, close: () => sock.close() };
}
