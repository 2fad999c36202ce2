// The dashboard, third pass (issue 27), in headless Chromium through
// playwright-core: one activity row per help request or hold with its
// outcome and duration, actor chips that never cut a name, the "keyboard
// goes to the desktop" cue (and the note box keeping its typing), and the
// phone: pinch zoom with exact taps, the soft-keyboard button, a note box
// whose placeholder fits at 390 px (screenshots in build/people/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { desktop, sleep, ROOT, SLOW } from '../integration/lib/harness.mjs';
import { useBrowser } from '../integration/lib/browser.mjs';
import { sdkClient } from '../integration/lib/dashboard.mjs';

const chrome = useBrowser();
const SHOTS = join(ROOT, 'build/people');
mkdirSync(SHOTS, { recursive: true });

async function open(t, deskd, ctxOpts = { viewport: { width: 1400, height: 900 } }) {
  const ctx = await chrome.browser.newContext(ctxOpts);
  t.after(() => ctx.close().catch(() => {}));
  const page = await ctx.newPage();
  // Keep the page's sockets at hand (to drop one: the page reconnects).
  await page.addInitScript(() => {
    const Native = window.WebSocket;
    window.__sockets = [];
    window.WebSocket = class extends Native {
      constructor(...a) { super(...a); window.__sockets.push(this); }
    };
  });
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => d.accept());
  await page.goto(`${deskd.url}/#token=${encodeURIComponent(deskd.personToken)}`);
  await page.waitForSelector('#app:not([hidden])');
  await page.waitForFunction(() => document.querySelector('#conn').dataset.state === 'live');
  await page.waitForFunction(() => document.getElementById('screen').width > 0);
  page.problems = problems;
  return page;
}


const control = (page, holder) => page.waitForFunction((h) => document.body.dataset.control === h, holder);
const rows = (page) => page.$$eval('#timeline li', (lis) => lis.map((l) => ({
  kind: l.dataset.kind, tool: l.dataset.tool, outcome: l.dataset.outcome, status: l.dataset.status,
  who: l.querySelector('.who')?.textContent, text: l.querySelector('.row').textContent,
  outcomeText: l.querySelector('.outcome')?.textContent, dur: l.querySelector('.dur')?.textContent,
})));
const keyEvents = (fixture) => fixture.state().events.filter((e) => e.type === 'key_press' || e.type === 'key_release');
const cue = (page) => page.evaluate(() => ({
  label: !document.getElementById('kbd-cue').hidden && document.getElementById('kbd-cue').getBoundingClientRect().width > 0,
  outline: getComputedStyle(document.getElementById('stage')).outlineWidth,
  focused: document.activeElement && document.activeElement.id,
}));

test('the activity list: one row per help request and per hold, with outcome and duration; long actor names whole', async (t) => {
  const { deskd } = await desktop(t, { fixture: true });
  const longName = 'claude-code (session 3f9c2a7d-91be-4c1f-a0d2-5e7f11aa09c3)';
  const agent = await sdkClient(t, deskd, longName);
  const page = await open(t, deskd);

  // 1. Asked over MCP, answered by a hold with a note from the page.
  const help = agent.callTool({ name: 'request_human_help', arguments: { reason: 'log in please', timeout_s: 60 } },
    undefined, { timeout: 90000 });
  await page.waitForSelector('#ctl-help .card');
  await page.waitForSelector('#timeline li[data-kind="help"][data-status="started"]');
  await page.click('#ctl-help .take');
  await control(page, 'you');
  await page.fill('#ctl-note', 'logged in as test');
  await sleep(300);
  await page.click('#ctl-release');
  assert.equal((await help).structuredContent.outcome, 'handed_back');
  await page.waitForSelector('#timeline li[data-kind="help"][data-status="ok"]');
  let all = await rows(page);
  assert.equal(all.length, 1, `one row for the request, its hold and hand-back: ${JSON.stringify(all)}`);
  assert.equal(all[0].kind, 'help');
  assert.equal(all[0].outcome, 'handed_back');
  assert.equal(all[0].who, longName, 'the whole client name');
  assert.match(all[0].text, /help request.*log in please/);
  assert.match(all[0].outcomeText, /^handed back with the note “logged in as test”, held \d/);
  assert.match(all[0].dur, /^\d+(\.\d)? (ms|s)$/, `a duration: ${all[0].dur}`);

  // The chip is not clipped: its whole text fits (it wraps) and hovering
  // names it too.
  const chip = await page.$eval('#timeline li[data-kind="help"] .who', (w) => ({
    sw: w.scrollWidth, cw: w.clientWidth, sh: w.scrollHeight, ch: w.clientHeight, title: w.title,
    overflow: getComputedStyle(w).textOverflow, inside: w.getBoundingClientRect().right <= w.closest('.row').getBoundingClientRect().right + 0.5,
  }));
  assert.ok(chip.sw <= chip.cw && chip.sh <= chip.ch, `the chip shows all of its text: ${JSON.stringify(chip)}`);
  assert.ok(chip.inside, 'the chip stays inside its row');
  assert.ok(chip.title.startsWith(longName), 'the full name on hover');

  // 2. Dismissed from the page with a note; 3. timed out (REST).
  const dismissed = deskd.tool('request_human_help', { reason: 'which account?', timeout_s: 60 });
  await page.waitForSelector('#ctl-help .card');
  await page.fill('#ctl-note', 'use the test one');
  await page.click('#ctl-help .dismiss');
  assert.equal((await dismissed).body.structuredContent.outcome, 'dismissed');
  assert.equal((await deskd.tool('request_human_help', { reason: 'a captcha', timeout_s: 1 })).body.structuredContent.outcome, 'timeout');
  // 4. A hold with no request: one row too.
  await page.click('#ctl-take');
  await control(page, 'you');
  await sleep(200);
  await page.click('#ctl-release');
  await control(page, 'none');
  await page.waitForFunction(() => document.querySelectorAll('#timeline li[data-kind="hold"][data-status="ok"]').length === 1
    && document.querySelectorAll('#timeline li[data-kind="help"][data-status="ok"]').length === 3);
  all = await rows(page);
  assert.deepEqual(all.map((r) => [r.kind, r.outcome]), [['hold', 'handed_back'], ['help', 'timeout'], ['help', 'dismissed'], ['help', 'handed_back']],
    JSON.stringify(all));
  assert.equal(all[0].outcomeText, 'handed back');
  assert.equal(all[0].who, 'person');
  assert.match(all[1].outcomeText, /^timed out after 1 s$/);
  assert.match(all[1].dur, /^1\.\d s$/);
  assert.equal(all[2].outcomeText, 'dismissed with the note “use the test one”');
  assert.equal(all[2].who, 'rest');
  // The folded events are all there in the details.
  await page.click('#timeline li[data-kind="help"][data-outcome="handed_back"] .row');
  const details = await page.textContent('#timeline li[data-kind="help"][data-outcome="handed_back"] pre');
  for (const what of ['"tool":"take_control"', '"tool":"hand_back"', '"status":"waiting"', '"status":"handed_back"'])
    assert.ok(details.includes(what), `details list ${what}`);
  await page.locator('#timeline').screenshot({ path: join(SHOTS, 'activity.png') });

  // A reconnect replays the history: the rows stay as they were.
  const was = await rows(page);
  await page.evaluate(() => window.__sockets.at(-1).close());
  await page.waitForFunction(() => document.querySelector('#conn').dataset.state !== 'live');
  await page.waitForFunction(() => document.querySelector('#conn').dataset.state === 'live' && window.__sockets.length === 2);
  await sleep(500);
  assert.deepEqual(await rows(page), was, 'the same rows after the replay');

  // A narrow (phone) page cuts no chip either.
  const phone = await open(t, deskd, { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
  await phone.waitForFunction(() => document.querySelectorAll('#timeline li[data-kind="help"]').length === 3);
  const clipped = await phone.$$eval('#timeline .who', (ws) => ws.filter((w) => w.scrollWidth > w.clientWidth || w.scrollHeight > w.clientHeight).map((w) => w.textContent));
  assert.deepEqual(clipped, [], 'no chip clipped at 390 px');
  assert.equal(await phone.$eval('#timeline li[data-kind="help"][data-outcome="handed_back"] .who', (w) => w.textContent), longName);
  await phone.locator('#timeline').screenshot({ path: join(SHOTS, 'activity-phone.png') });
  assert.deepEqual(page.problems, []);
  assert.deepEqual(phone.problems, []);
});

test('the focus cue shows while the picture has the keyboard; typing a note sends nothing to the desktop', async (t) => {
  const { deskd, fixture } = await desktop(t, { fixture: { geometry: '400x300+100+80' } });
  const page = await open(t, deskd);
  const none = await cue(page);
  assert.equal(none.label, false, 'no cue before holding');
  await page.click('#ctl-take');
  await control(page, 'you');
  await page.waitForFunction(() => !document.getElementById('kbd-cue').hidden);
  const on = await cue(page);
  assert.deepEqual([on.label, on.focused], [true, 'ctl-input']);
  assert.equal(on.outline, '3px', 'a strong outline round the picture');
  assert.equal(await page.textContent('#kbd-cue'), '⌨ Keyboard goes to the desktop');
  // Click the fixture (focuses it on the desktop and the picture in the page).
  const r = await page.evaluate(() => { const b = document.getElementById('screen').getBoundingClientRect(); return { x: b.x, y: b.y, w: b.width, h: b.height }; });
  await page.mouse.click(r.x + 250.5 * r.w / 1280, r.y + 170.5 * r.h / 800);
  await fixture.waitFor((s) => s.events.some((e) => e.type === 'button_release'), { timeout: 5000 * SLOW });
  await page.screenshot({ path: join(SHOTS, 'focus-cue.png') });

  // The note box takes the focus: the cue goes, and what is typed stays there.
  await page.click('#ctl-note');
  await page.waitForFunction(() => document.getElementById('kbd-cue').hidden);
  const off = await cue(page);
  assert.deepEqual([off.label, off.focused], [false, 'ctl-note']);
  assert.notEqual(off.outline, '3px');
  await page.keyboard.type('secret note é');
  await page.keyboard.press('Backspace');
  await sleep(500);
  assert.equal(await page.inputValue('#ctl-note'), 'secret note ');
  assert.deepEqual(keyEvents(fixture), [], 'the desktop got no key');
  assert.equal(fixture.state().text, '');
  await page.screenshot({ path: join(SHOTS, 'focus-note.png') });

  // Back on the picture: the cue returns and keys go to the desktop.
  await page.mouse.click(r.x + 260.5 * r.w / 1280, r.y + 170.5 * r.h / 800);
  await page.waitForFunction(() => !document.getElementById('kbd-cue').hidden);
  await page.keyboard.type('ok');
  await fixture.waitFor((s) => s.text === 'ok', { timeout: 5000 * SLOW });
  // Another tab in front has the keyboard: no cue until this one is back.
  // (Playwright makes every page look focused unless told not to.)
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Emulation.setFocusEmulationEnabled', { enabled: false });
  const other = await page.context().newPage();
  await other.bringToFront();
  await page.waitForFunction(() => document.getElementById('kbd-cue').hidden);
  await page.bringToFront();
  await page.waitForFunction(() => !document.getElementById('kbd-cue').hidden);
  await other.close();
  await page.click('#ctl-release');
  await control(page, 'none');
  assert.equal((await cue(page)).label, false, 'no cue once handed back');
  assert.deepEqual(page.problems, []);
});

test('phone: pinch zoom, a tap on the zoomed picture lands on the exact pixel, the soft keyboard types exactly', async (t) => {
  const { deskd, fixture } = await desktop(t, { fixture: { geometry: '400x300+100+80' } });
  const page = await open(t, deskd, { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true });
  // The note box's placeholder fits at 390 px (while holding it is shown).
  await page.tap('#ctl-take');
  await control(page, 'you');
  const fit = await page.$eval('#ctl-note', (n) => {
    const cs = getComputedStyle(n);
    const g = document.createElement('canvas').getContext('2d');
    g.font = `${cs.fontSize} ${cs.fontFamily}`;
    const room = n.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    return { text: g.measureText(n.placeholder).width, room, right: n.getBoundingClientRect().right, vw: innerWidth };
  });
  assert.ok(fit.text <= fit.room, `the placeholder fits: ${JSON.stringify(fit)}`);
  assert.ok(fit.right <= fit.vw, 'the box is on the screen');

  // Pinch out with two fingers (real touch events through CDP).
  const cdp = await page.context().newCDPSession(page);
  const before = await page.evaluate(() => { const b = document.getElementById('screen').getBoundingClientRect(); return { x: b.x, y: b.y, w: b.width, h: b.height }; });
  const cx = before.x + before.w * 0.27, cy = before.y + before.h * 0.28;
  const fingers = (d) => [{ x: cx - d, y: cy, id: 1 }, { x: cx + d, y: cy, id: 2 }];
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: fingers(20) });
  for (let d = 30; d <= 90; d += 10) await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: fingers(d) });
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  const k = Number(await page.$eval('#stage', (s) => s.dataset.zoom));
  assert.ok(k > 3.5 && k < 5, `zoomed about 4.5x: ${k}`);
  const after = await page.evaluate(() => { const b = document.getElementById('screen').getBoundingClientRect(); return { x: b.x, y: b.y, w: b.width, h: b.height, fw: document.getElementById('screen').width }; });
  assert.ok(Math.abs(after.w / before.w - k) < 0.01, 'the picture is drawn k times larger');
  // The point between the fingers stayed under them.
  const ux = (cx - before.x) / before.w, vx = (cx - after.x) / after.w;
  assert.ok(Math.abs(ux - vx) < 0.01, `the pinch centre stays put: ${ux} vs ${vx}`);
  assert.equal(await page.isVisible('#view-unzoom'), true, 'a way back to 1x');
  assert.deepEqual(fixture.state().events.filter((e) => e.type === 'button_press'), [], 'the pinch clicked nothing');
  await page.screenshot({ path: join(SHOTS, 'phone-zoomed.png') });

  // A tap on desktop pixel (341, 219), near the pinch centre (desktop
  // 345.6, 224), of the zoomed picture: the frame is the 1280 px screen, so
  // frame pixel = desktop pixel.
  assert.equal(after.fw, 1280);
  const want = { x: 341, y: 219 };
  const tx = after.x + (want.x + 0.5) * after.w / 1280, ty = after.y + (want.y + 0.5) * after.h / 800;
  assert.equal(await page.evaluate(([x, y]) => document.elementFromPoint(x, y).id, [tx, ty]), 'screen', 'the point is on the visible picture');
  await page.touchscreen.tap(tx, ty);
  const st = await fixture.waitFor((s) => s.events.some((e) => e.type === 'button_release'), { timeout: 5000 * SLOW });
  const press = st.events.find((e) => e.type === 'button_press');
  assert.deepEqual([press.root_x, press.root_y, press.button], [want.x, want.y, 1], 'the tap lands on the exact desktop pixel');

  // The soft-keyboard button focuses the hidden input; what is typed there
  // (keys and the IME's inserted text) reaches the app exactly.
  await page.tap('#ctl-kbd');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'ctl-input');
  await page.waitForFunction(() => !document.getElementById('kbd-cue').hidden);
  await page.keyboard.type('ok ');
  await page.keyboard.insertText('Grüße, 世界 ½€');
  const text = 'ok Grüße, 世界 ½€';
  await fixture.waitFor((s) => s.text === text, { timeout: 15000 * SLOW })
    .catch(() => assert.fail(`the fixture got ${JSON.stringify(fixture.state().text)}`));
  await page.screenshot({ path: join(SHOTS, 'phone-keyboard.png') });
  await page.tap('#view-unzoom');
  assert.equal(await page.$eval('#stage', (s) => s.dataset.zoom), '1.000');
  await page.tap('#ctl-release');
  await control(page, 'none');
  assert.deepEqual(page.problems, []);
});
