// The dashboard in headless Chromium (Debian's /usr/bin/chromium through
// playwright-core): token handling, live pixels, timeline, window switching,
// recordings, view-only and wrong tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { desktop, startFixture, tempDir } from '../integration/lib/harness.mjs';
import { useBrowser } from '../integration/lib/browser.mjs';

const chrome = useBrowser();

async function open(t, deskd, token) {
  const context = await chrome.browser.newContext({ acceptDownloads: true, viewport: { width: 1400, height: 900 } });
  t.after(() => context.close());
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/401|403|Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`); });
  await page.goto(`${deskd.url}/#token=${encodeURIComponent(token)}`);
  page.problems = problems;
  return page;
}

/** RGB of the live canvas at frame pixel (x, y). */
function pixel(page, x, y) {
  return page.evaluate(([px, py]) => {
    const c = document.getElementById('screen');
    return Array.from(c.getContext('2d').getImageData(px, py, 1, 1).data.slice(0, 3));
  }, [x, y]);
}

function near(rgb, want, tol = 40) {
  return rgb.every((v, i) => Math.abs(v - want[i]) <= tol);
}

test('the dashboard shows the live screen, the timeline, and switches to a window', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '400x300+100+80', pattern: 'quadrants' } });
  const { deskd, fixture } = env;
  const page = await open(t, deskd, deskd.personToken);

  await page.waitForSelector('#app:not([hidden])');
  assert.equal(new URL(page.url()).hash, '', 'the token is removed from the address bar');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('deskd.token')), deskd.personToken);
  await page.waitForFunction(() => document.querySelector('#conn').dataset.state === 'live');

  // The whole screen, native size: the fixture's quadrants at its position.
  await page.waitForFunction(() => document.getElementById('screen').dataset.target === 'screen' && document.getElementById('screen').width === 1280);
  assert.ok(near(await pixel(page, 100 + 100, 80 + 75), [255, 0, 0]), 'red quadrant');
  assert.ok(near(await pixel(page, 100 + 300, 80 + 75), [0, 255, 0]), 'green quadrant');
  assert.ok(near(await pixel(page, 100 + 100, 80 + 225), [0, 0, 255]), 'blue quadrant');
  assert.ok(near(await pixel(page, 100 + 300, 80 + 225), [255, 255, 0]), 'yellow quadrant');

  // A REST tool call shows up in the timeline within a second.
  const r = await deskd.tool('windows', { app: 'DeskdFixture' });
  assert.equal(r.status, 200);
  const t0 = Date.now();   // the call has ended: its end event is out
  await page.waitForSelector('#timeline li[data-tool="windows"][data-status="ok"]', { timeout: 1000 });
  assert.ok(Date.now() - t0 < 1000, 'in the timeline within a second');
  // Clicking an entry shows its details.
  await page.click('#timeline li[data-tool="windows"] .row');
  const details = await page.textContent('#timeline li[data-tool="windows"] pre');
  assert.match(details, /"app": "DeskdFixture"/);

  // Clicking the window in the list switches the view to it.
  await page.click(`#windows li[data-window="${fixture.window}"]`);
  await page.waitForFunction((id) => {
    const c = document.getElementById('screen');
    return c.dataset.target === 'window' && Number(c.dataset.window) === id && c.width === 400 && c.height === 300;
  }, fixture.window);
  assert.ok(near(await pixel(page, 100, 75), [255, 0, 0]), 'window view: red quadrant');
  assert.ok(near(await pixel(page, 300, 225), [255, 255, 0]), 'window view: yellow quadrant');
  assert.match(await page.textContent('#target-name'), /deskd fixture/);

  // A window appearing is seen in the list after a refresh.
  const other = await startFixture(env.display, { title: 'second window', geometry: '200x100+600+500', pattern: 'solid:00ff00' });
  t.after(() => other.stop());
  await page.click('#win-refresh');
  await page.waitForSelector(`#windows li[data-window="${other.window}"]`);
  assert.deepEqual(page.problems, []);
});

test('recording from the page produces a downloadable MP4', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '320x240+40+40', animate: 10 } });
  const { deskd, fixture } = env;
  const tools = await (await deskd.fetch('/api/v1/tools')).json().catch(() => null);
  const names = JSON.stringify(tools || '');
  if (!names.includes('record_start')) {
    t.skip('the record tools are not in this build');
    return;
  }
  const page = await open(t, deskd, deskd.personToken);
  await page.waitForSelector('#app:not([hidden])');
  assert.ok(await page.isDisabled('#rec-start'), 'recording needs a window');
  await page.click(`#windows li[data-window="${fixture.window}"]`);
  await page.waitForFunction(() => !document.getElementById('rec-start').disabled);
  await page.click('#rec-start');
  await page.waitForSelector('#rec-stop:not([hidden])');
  await page.waitForTimeout(1500);
  await page.click('#rec-stop');
  // A locator, not an element handle: the list re-renders as the recording
  // lands (events, then the refresh), which detached the handle.
  const link = page.locator('#recordings li a.download').first();
  await link.waitFor({ timeout: 15000 });
  const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
  const file = join(tempDir('deskd-dl-'), download.suggestedFilename());
  await download.saveAs(file);
  assert.ok(existsSync(file));
  const head = readFileSync(file).subarray(0, 12);
  assert.equal(head.subarray(4, 8).toString(), 'ftyp', 'an MP4 file');
  assert.match(download.suggestedFilename(), /\.mp4$/);
  assert.deepEqual(page.problems, []);
});

test('a view-only token hides the controls that act; a wrong token says so', async (t) => {
  const env = await desktop(t, { fixture: true, deskdArgs: ['--view-token', 'just-looking-123'] });
  const { deskd, fixture } = env;

  const page = await open(t, deskd, 'just-looking-123');
  await page.waitForSelector('#app:not([hidden])');
  await page.waitForFunction(() => document.body.classList.contains('view-only'));
  assert.ok(await page.isVisible('#role'), 'a "view only" badge');
  await page.click(`#windows li[data-window="${fixture.window}"]`);
  await page.waitForFunction(() => document.getElementById('screen').dataset.target === 'window');
  assert.equal(await page.isVisible('#rec-start'), false, 'no record button');
  assert.equal(await page.isVisible('#rec-stop'), false, 'no stop button');
  assert.equal(await page.locator('button.act:visible').count(), 0, 'no acting control is visible');

  const bad = await open(t, deskd, 'not-the-token');
  await bad.waitForSelector('#gate:not([hidden])');
  assert.equal(await bad.isVisible('#app'), false);
  assert.match(await bad.textContent('#gate-title'), /wrong token/i);
  assert.match(await bad.textContent('#gate-text'), /did not accept/);
  // Pasting the right token opens the dashboard.
  await bad.fill('#gate-token', deskd.personToken);
  await bad.click('#gate-form button[type="submit"]');
  await bad.waitForSelector('#app:not([hidden])');
  await bad.waitForFunction(() => document.querySelector('#conn').dataset.state === 'live');
});

test('the dashboard files carry a strict CSP and caching headers', async (t) => {
  const { deskd } = await desktop(t);
  const r = await fetch(deskd.url + '/');
  assert.equal(r.status, 200, 'no token needed for the page');
  assert.match(r.headers.get('content-type'), /^text\/html/);
  const csp = r.headers.get('content-security-policy');
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(r.headers.get('referrer-policy'), 'no-referrer');
  const etag = r.headers.get('etag');
  assert.ok(etag);
  const again = await fetch(deskd.url + '/', { headers: { 'if-none-match': etag } });
  assert.equal(again.status, 304);
  for (const [path, type] of [['/static/app.js', /javascript/], ['/static/style.css', /text\/css/], ['/static/favicon.svg', /image\/svg\+xml/]]) {
    const s = await fetch(deskd.url + path);
    assert.equal(s.status, 200, path);
    assert.match(s.headers.get('content-type'), type);
    assert.ok(s.headers.get('content-security-policy'));
    await s.arrayBuffer();
  }
  assert.equal((await fetch(deskd.url + '/static/nope.js')).status, 404);
  assert.equal((await fetch(deskd.url + '/static/../index.html')).status === 200 ? 'served' : 'refused', 'refused');
  const html = await (await fetch(deskd.url + '/')).text();
  assert.doesNotMatch(html, /<script>|\son\w+=|style=/i, 'no inline script, handler or style');
});

test('an agent click flashes where it landed, and the cursor follows the pointer', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '400x300+100+80', pattern: 'solid:202020' } });
  const { deskd } = env;
  const tools = JSON.stringify(await (await deskd.fetch('/api/v1/tools')).json().catch(() => ''));
  const batch = tools.includes('"computer_use"');
  if (!batch && !tools.includes('"computer_click"')) {
    t.skip('the input tools are not in this build');
    return;
  }
  const page = await open(t, deskd, deskd.personToken);
  await page.waitForFunction(() => document.getElementById('screen').width === 1280);
  // Sample the overlay (flashes and cursor are drawn there, never on the picture).
  const overlayHas = (x, y, r) => page.evaluate(([px, py, pr]) => {
    const o = document.getElementById('overlay');
    const d = o.getContext('2d').getImageData(px - pr, py - pr, 2 * pr, 2 * pr).data;
    let reds = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i] > 150 && d[i + 1] < 120) reds++;
    return reds;
  }, [x, y, r]);
  const click = batch
    ? deskd.tool('computer_use', { actions: [{ type: 'click', x: 300, y: 230 }] })
    : deskd.tool('computer_click', { x: 300, y: 230 });
  const r = await click;
  assert.equal(r.status, 200, JSON.stringify(r.body));
  await page.waitForFunction(() => document.querySelector('#timeline li[data-status="ok"]'));
  let best = 0;
  for (let i = 0; i < 10 && best === 0; i++) {
    best = await overlayHas(300, 230, 40);
    if (!best) await page.waitForTimeout(30);
  }
  assert.ok(best > 0, 'a red flash around the click point');
  await page.waitForTimeout(900);
  assert.equal(await overlayHas(300, 230, 40), 0, 'the flash fades');
  // The pointer is at the click point: the cursor arrow is drawn there.
  const cursor = await page.evaluate(() => {
    const d = document.getElementById('overlay').getContext('2d').getImageData(300, 230, 12, 20).data;
    let white = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 200 && d[i] > 200 && d[i + 1] > 200) white++;
    return white;
  });
  assert.ok(cursor > 10, 'the cursor arrow is drawn at the pointer');
  assert.deepEqual(page.problems, []);
});
