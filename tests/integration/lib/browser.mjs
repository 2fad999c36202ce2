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
