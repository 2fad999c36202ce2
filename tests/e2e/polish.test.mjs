// Dashboard polish and "who acted" (issue 15) in headless Chromium (Debian's
// /usr/bin/chromium through playwright-core): the frame on a black desktop,
// fit / 100% / fullscreen, a phone's viewport, recordings newest first and
// deletable, the token pages, and a timeline that names the actor, leaves out
// the page's own refreshes and shows screenshot thumbnails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { desktop, launch, readyInfo, sleep, startFixture, startXvfb, tempDir, DESKD_BIN } from '../integration/lib/harness.mjs';
import { useBrowser } from '../integration/lib/browser.mjs';

const chrome = useBrowser();

async function open(t, url, { viewport = { width: 1400, height: 900 }, colorScheme = 'dark', ...more } = {}) {
  const context = await chrome.browser.newContext({ viewport, colorScheme, ...more });
  t.after(() => context.close());
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error' && !/401|403|404|Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`); });
  await page.goto(url);
  page.problems = problems;
  return page;
}

const withToken = (deskd, token = deskd.personToken) => `${deskd.url}/#token=${encodeURIComponent(token)}`;

async function live(page, width = 1280) {
  await page.waitForSelector('#app:not([hidden])');
  await page.waitForFunction((w) => document.getElementById('screen').width === w, width);
}

const canvasBox = (page) => page.evaluate(() => {
  const r = document.getElementById('screen').getBoundingClientRect();
  const o = document.getElementById('overlay').getBoundingClientRect();
  const s = document.getElementById('stage').getBoundingClientRect();
  return { x: r.x, y: r.y, width: r.width, height: r.height, overlay: { x: o.x, y: o.y, width: o.width, height: o.height },
    stage: { x: s.x, y: s.y, width: s.width, height: s.height } };
});

/** RGB of the page's screenshot at CSS pixel (x, y) (device scale 1). */
async function pagePixels(page, points) {
  const png = await page.screenshot({ type: 'png' });
  return page.evaluate(async ([b64, pts]) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = new OffscreenCanvas(img.width, img.height);
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    return pts.map(([x, y]) => Array.from(g.getImageData(Math.round(x), Math.round(y), 1, 1).data.slice(0, 3)));
  }, [png.toString('base64'), points]);
}

const dist = (a, b) => Math.max(...a.map((v, i) => Math.abs(v - b[i])));

test('the live view frames a black desktop, and fit / 100% / fullscreen size the picture', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '1280x800+0+0', pattern: 'solid:000000' } });
  const page = await open(t, withToken(env.deskd));
  await live(page);
  await page.waitForFunction(() => document.getElementById('stage-msg').hidden);

  // Fit: the whole picture inside the stage, its aspect kept, the overlay on top.
  let box = await canvasBox(page);
  assert.ok(box.width < 1280 && box.width > 600, `fit scales down: ${box.width}`);
  assert.ok(Math.abs(box.width / box.height - 1280 / 800) < 0.01, 'aspect kept');
  assert.ok(box.x >= box.stage.x && box.x + box.width <= box.stage.x + box.stage.width + 0.5);
  assert.ok(box.y >= box.stage.y && box.y + box.height <= box.stage.y + box.stage.height + 0.5);
  assert.deepEqual(box.overlay, { x: box.x, y: box.y, width: box.width, height: box.height }, 'the overlay covers the picture');

  // The frame: just outside the picture the edge is neither the desktop's
  // black nor the stage's background, on all four sides.
  const midX = box.x + box.width / 2, midY = box.y + box.height / 2;
  const [inside, stageBg, left, right, top, bottom] = await pagePixels(page, [
    [midX, midY], [box.stage.x + 3, box.stage.y + 3],
    [Math.ceil(box.x) - 2, midY], [Math.floor(box.x + box.width) + 1, midY],
    [midX, Math.ceil(box.y) - 2], [midX, Math.floor(box.y + box.height) + 1]]);
  assert.ok(dist(inside, [0, 0, 0]) < 8, `the desktop is black: ${inside}`);
  for (const [side, px] of Object.entries({ left, right, top, bottom })) {
    assert.ok(dist(px, [0, 0, 0]) > 40, `${side} edge ${px} stands out from the black desktop`);
    assert.ok(dist(px, stageBg) > 40, `${side} edge ${px} stands out from the stage ${stageBg}`);
  }

  // 100%: one frame pixel per CSS pixel; the stage scrolls.
  await page.click('#view-actual');
  box = await canvasBox(page);
  assert.equal(box.width, 1280);
  assert.equal(box.height, 800);
  assert.equal(await page.getAttribute('#view-actual', 'aria-pressed'), 'true');
  assert.ok(await page.evaluate(() => { const s = document.getElementById('stage'); return s.scrollWidth > s.clientWidth; }), 'the stage scrolls');
  // Back to fit.
  await page.click('#view-fit');
  const fit = await canvasBox(page);
  assert.ok(Math.abs(fit.width - (await canvasBox(page)).width) < 1 && fit.width < 1280);

  // Fullscreen: the viewer fills the window and the picture fits it, larger than before.
  await page.click('#view-full');
  await page.waitForFunction(() => document.fullscreenElement && document.fullscreenElement.classList.contains('viewer'));
  await page.waitForFunction((w) => document.getElementById('screen').getBoundingClientRect().width > w + 50, fit.width);
  box = await canvasBox(page);
  assert.ok(box.width <= 1400 && box.height <= 900, `fits the window: ${box.width}x${box.height}`);
  assert.ok(Math.abs(box.width / box.height - 1.6) < 0.01);
  await page.click('#view-full');
  await page.waitForFunction(() => !document.fullscreenElement);
  await page.waitForFunction((w) => Math.abs(document.getElementById('screen').getBoundingClientRect().width - w) < 1, fit.width);
  assert.deepEqual(page.problems, []);
});

test('on a phone (390x844) the page has no horizontal scroll and the picture fills the width', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '400x300+100+80', pattern: 'quadrants' } });
  // Long names in the lists and the timeline must not widen the page.
  await env.deskd.fetch('/api/v1/tools/windows', { method: 'POST', headers: { 'content-type': 'application/json', 'x-deskd-client': 'a-very-long-agent-name-that-goes-on-and-on' }, body: '{}' });
  const page = await open(t, withToken(env.deskd), { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  await live(page);
  await page.waitForSelector('#timeline li[data-tool="windows"]');
  const m = await page.evaluate(() => ({
    doc: document.documentElement.scrollWidth, body: document.body.scrollWidth, inner: window.innerWidth,
    canvas: document.getElementById('screen').getBoundingClientRect().width,
    stage: document.getElementById('stage').clientWidth,
    timeline: document.getElementById('timeline').scrollWidth - document.getElementById('timeline').clientWidth,
    wide: [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5 && e.offsetParent !== null).map((e) => e.id || e.className || e.tagName).slice(0, 5),
  }));
  assert.equal(m.inner, 390);
  assert.ok(m.doc <= 390 && m.body <= 390, `no horizontal scroll: ${JSON.stringify(m)}`);
  assert.deepEqual(m.wide, [], 'nothing sticks out on the right');
  assert.equal(m.timeline, 0, 'the timeline does not scroll sideways');
  assert.ok(m.canvas >= m.stage - 10 && m.canvas > 350, `the picture fills the width: ${m.canvas} of ${m.stage}`);
  assert.deepEqual(page.problems, []);
});

test('recordings are listed newest first by file name, and a full token deletes one', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '160x120+40+40', animate: 10 }, deskdArgs: ['--view-token', 'just-looking-123'] });
  const { deskd, fixture } = env;
  const tools = JSON.stringify(await (await deskd.fetch('/api/v1/tools')).json());
  if (!tools.includes('record_start')) { t.skip('no record tools in this build'); return; }
  const made = [];
  for (let i = 0; i < 2; i++) {
    let r = await deskd.tool('record_start', { window: fixture.window, fps: 10 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    await sleep(700);
    r = await deskd.tool('record_stop', { id: r.body.structuredContent.id });
    assert.equal(r.status, 200);
    made.push(r.body.structuredContent);
    await sleep(1100);   // "started" has seconds
  }
  const page = await open(t, withToken(deskd));
  await page.waitForSelector('#app:not([hidden])');
  await page.waitForSelector('#recordings li[data-id] .del');
  const rows = () => page.$$eval('#recordings li[data-id]', (lis) => lis.map((li) => ({ id: li.dataset.id, name: li.querySelector('.title').textContent })));
  assert.deepEqual(await rows(), made.slice().reverse().map((r) => ({ id: r.id, name: r.path.split('/').pop() })), 'newest first, named by file');

  // The view token sees no delete button, and the server refuses it anyway.
  const view = await open(t, withToken(deskd, 'just-looking-123'));
  await view.waitForFunction(() => document.body.classList.contains('view-only'));
  await view.waitForSelector('#recordings li[data-id]');
  assert.equal(await view.locator('#recordings .del:visible').count(), 0);
  const refused = await view.evaluate(async (id) => (await fetch(`/api/v1/recordings/${id}`, { method: 'DELETE', headers: { authorization: 'Bearer just-looking-123' } })).status, made[0].id);
  assert.equal(refused, 403);
  assert.ok(existsSync(made[0].path));

  // Delete the older one: two clicks (the first arms the button).
  const del = page.locator(`#recordings li[data-id="${made[0].id}"] .del`);
  await del.click();
  assert.equal(await del.textContent(), 'delete?');
  assert.ok(existsSync(made[0].path), 'one click deletes nothing');
  await del.click();
  await page.waitForSelector(`#recordings li[data-id="${made[0].id}"]`, { state: 'detached' });
  assert.equal(existsSync(made[0].path), false, 'the file is gone');
  assert.ok(existsSync(made[1].path), 'the other stays');
  assert.match(await page.textContent('#rec-msg'), /Deleted/);
  assert.deepEqual((await rows()).map((r) => r.id), [made[1].id]);
  // The deletion is a person's event in the timeline.
  await page.waitForSelector('#timeline li.note[data-kind="recording_delete"][data-actor="person"]');
  assert.deepEqual(page.problems, []);
});

test('the wrong-token page says where the token is kept; without a token the page offers to paste it', async (t) => {
  const x = await startXvfb();
  t.after(() => x.stop());
  const dir = tempDir('deskd-data-');
  const ready = join(dir, 'ready.json');
  const env = { ...process.env };
  delete env.DISPLAY;
  for (const k of Object.keys(env)) if (k.startsWith('DESKD_')) delete env[k];
  // No --token: deskd keeps its own in the data dir.
  const d = launch('deskd', DESKD_BIN, ['--listen', '127.0.0.1:0', '--ready-file', ready, '--data-dir', dir, '--display', x.display], { env });
  t.after(() => d.stop());
  Object.assign(d, await readyInfo(d, ready));
  const tokenPath = join(dir, 'person-token');
  const token = readFileSync(tokenPath, 'utf8').trim();

  const bad = await open(t, `${d.url}/#token=not-the-token`);
  await bad.waitForSelector('#gate:not([hidden])');
  assert.match(await bad.textContent('#gate-title'), /wrong token/i);
  await bad.waitForSelector('#gate-where:not([hidden]) code');
  const where = await bad.textContent('#gate-where');
  assert.ok(where.includes(`keeps the person's token (the dashboard's) across restarts in ${tokenPath}`), where);
  assert.ok(where.includes(`cat ${tokenPath}`), where);
  assert.doesNotMatch(await bad.textContent('#gate'), new RegExp(token), 'the page never shows the token');

  // No fragment: the field to paste it; a pasted dashboard URL works too.
  const page = await open(t, `${d.url}/`);
  await page.waitForSelector('#gate:not([hidden])');
  assert.match(await page.textContent('#gate-title'), /token needed/i);
  assert.match(await page.textContent('#gate-text'), /Paste it below/);
  assert.ok(await page.isVisible('#gate-token'));
  assert.equal(await page.evaluate(() => document.activeElement.id), 'gate-token', 'the field has the focus');
  await page.fill('#gate-token', `${d.url}/#token=${token}`);
  await page.press('#gate-token', 'Enter');
  await page.waitForSelector('#app:not([hidden])');
  await page.waitForFunction(() => document.querySelector('#conn').dataset.state === 'live');
  assert.equal(await page.evaluate(() => sessionStorage.getItem('deskd.token')), token);
  assert.deepEqual(page.problems, []);
  if (existsSync(ready)) unlinkSync(ready);
});

test('the timeline names the agent, leaves out the page\'s own refreshes, and shows screenshot thumbnails', async (t) => {
  const env = await desktop(t, { fixture: { geometry: '400x300+100+80', pattern: 'solid:ff0000' } });
  const { deskd, fixture } = env;
  const page = await open(t, withToken(deskd));
  await live(page);
  // The page's refreshes: the window list (at start and by hand), the status panel.
  await page.click('#win-refresh');
  await page.click('#status-btn');
  await page.waitForSelector('#status dt');
  await page.click('#status-close');
  await page.click('#rec-refresh');

  const client = new Client({ name: 'e2e-agent', version: '1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(deskd.url + '/mcp'), { requestInit: { headers: { authorization: `Bearer ${deskd.personToken}` } } });
  await client.connect(transport);
  t.after(() => client.close());
  const list = JSON.stringify(await client.listTools());
  const batch = list.includes('"computer_use"');
  const click = batch ? { name: 'computer_use', arguments: { actions: [{ type: 'click', x: 300, y: 230 }] } }
    : { name: 'computer_click', arguments: { x: 300, y: 230 } };
  const r = await client.callTool(click);
  assert.ok(!r.isError, JSON.stringify(r));
  const shot = await client.callTool({ name: 'screenshot', arguments: { window: fixture.window } });
  assert.ok(!shot.isError);

  const li = page.locator(`#timeline li[data-tool="${click.name}"][data-status="ok"]`);
  await li.waitFor();
  assert.equal(await li.getAttribute('data-actor'), 'agent');
  assert.equal(await li.locator('.who').textContent(), 'e2e-agent');
  assert.match(await li.locator('.who').getAttribute('title'), new RegExp(`session ${transport.sessionId}`));
  await li.locator('.row').click();
  assert.match(await li.locator('pre').textContent(), /"name": "e2e-agent"/);

  // The thumbnail: the window's red, at most 240 wide.
  const img = page.locator('#timeline li[data-tool="screenshot"][data-status="ok"] img.thumb');
  await img.waitFor();
  await page.waitForFunction(() => { const i = document.querySelector('#timeline li[data-tool="screenshot"] img.thumb'); return i && i.complete && i.naturalWidth > 0; });
  const px = await img.evaluate((i) => {
    const c = document.createElement('canvas');
    c.width = i.naturalWidth; c.height = i.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(i, 0, 0);
    return { w: i.naturalWidth, h: i.naturalHeight, rgb: Array.from(g.getImageData(c.width >> 1, c.height >> 1, 1, 1).data.slice(0, 3)) };
  });
  assert.deepEqual([px.w, px.h], [240, 180]);
  assert.ok(dist(px.rgb, [255, 0, 0]) < 40, `the thumbnail shows what the agent saw: ${px.rgb}`);

  // None of the page's own calls made an entry.
  const tools = await page.$$eval('#timeline li', (lis) => lis.map((l) => l.dataset.tool || l.dataset.kind));
  assert.deepEqual(tools.sort(), [click.name, 'screenshot'].sort(), `only the agent's calls: ${tools}`);
  assert.deepEqual(page.problems, []);
});
