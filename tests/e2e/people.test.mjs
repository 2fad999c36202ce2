// The dashboard, second pass (issue 27), in headless Chromium through
// playwright-core: one note box whichever button ends the hold (P1), no Take
// control in the help banner while holding (P2), banners that never move the
// live picture (P3), the hand-back note for every agent refused during the
// hold (P4), the "another tab took control" notice gone once control is free
// (P5), and the header's state pill in every state (screenshots in
// build/people/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { desktop, sleep, ROOT, SLOW } from '../integration/lib/harness.mjs';
import { useBrowser } from '../integration/lib/browser.mjs';
import { openDashboard, sdkClient } from '../integration/lib/dashboard.mjs';
import { openLive } from '../integration/lib/live.mjs';

const chrome = useBrowser();
const SHOTS = join(ROOT, 'build/people');

const open = (t, deskd, token, opts) => openDashboard(chrome, t, deskd, token, opts);


const control = (page, holder) => page.waitForFunction((h) => document.body.dataset.control === h, holder);
const click = (x, y) => ({ actions: [{ type: 'click', x, y }] });
const box = (page) => page.evaluate(() => {
  const r = document.getElementById('screen').getBoundingClientRect();
  return { x: r.x, y: r.y, width: r.width, height: r.height };
});
const pill = (page) => page.evaluate(() => {
  const p = document.getElementById('ctl-pill');
  return { state: p.dataset.state, text: p.textContent, visible: !p.hidden && p.getBoundingClientRect().width > 0 };
});

test('P1: a note typed in the help banner reaches the agent when the toolbar\'s Hand back ends the hold', async (t) => {
  const { deskd } = await desktop(t, { fixture: true });
  const agent = await sdkClient(t, deskd);
  const page = await open(t, deskd);
  const help = agent.callTool({ name: 'request_human_help', arguments: { reason: 'log in please', timeout_s: 60 } },
    undefined, { timeout: 90000 });
  await page.waitForSelector('#ctl-help .card');
  await page.click('#ctl-help .take');
  await control(page, 'you');
  // A REST agent is refused meanwhile.
  assert.equal((await deskd.tool('computer_use', click(20, 20))).status, 409);
  // The one note box sits in the banner; the hold ends from the toolbar.
  assert.equal(await page.isVisible('#ctl-help #ctl-note'), true, 'the note box is in the help banner');
  assert.equal(await page.locator('#ctl-note').count(), 1);
  await page.fill('#ctl-help input', 'logged in as test');
  await page.click('#ctl-release');
  await control(page, 'none');
  const r = await help;
  assert.equal(r.structuredContent.outcome, 'handed_back');
  assert.equal(r.structuredContent.note, 'logged in as test', 'the help request got the note');
  const next = await deskd.tool('computer_use', click(30, 30));
  assert.equal(next.status, 200, JSON.stringify(next.body));
  assert.equal(next.body.structuredContent.human_control.note, 'logged in as test', 'the REST agent\'s next call carries it');
  assert.equal(await page.inputValue('#ctl-note'), '', 'the box is empty for the next hold');
  assert.deepEqual(page.problems, []);
});

test('P2: while the person holds control the help banner offers no Take control', async (t) => {
  const { deskd } = await desktop(t, { fixture: true });
  const page = await open(t, deskd);
  const help = deskd.tool('request_human_help', { reason: 'a captcha', timeout_s: 60 });
  await page.waitForSelector('#ctl-help .card');
  assert.equal(await page.isVisible('#ctl-help .take'), true, 'offered before the hold');
  await page.click('#ctl-take');
  await control(page, 'you');
  assert.equal(await page.isVisible('#ctl-help .take'), false, 'not offered while holding');
  assert.equal(await page.isVisible('#ctl-help .dismiss'), true);
  assert.equal(await page.isVisible('#ctl-release'), true);
  await page.click('#ctl-release');
  assert.equal((await help).body.structuredContent.outcome, 'handed_back');
  assert.deepEqual(page.problems, []);
});

test('P3: the live picture does not move when a help request or an approval appears', async (t) => {
  const { deskd, fixture } = await desktop(t, { fixture: { geometry: '400x300+100+450' }, deskdArgs: ['--approve', 'destructive', '--approve-timeout', '30'] });
  const page = await open(t, deskd);
  await page.waitForFunction(() => document.getElementById('screen').width > 0);
  await page.waitForFunction(() => document.getElementById('stage-msg').hidden);
  const start = await box(page);
  const same = async (what) => assert.deepEqual(await box(page), start, `the picture stays put: ${what}`);

  const help = deskd.tool('request_human_help', { reason: 'check the form', timeout_s: 60 });
  await page.waitForSelector('#ctl-help .card');
  await same('help banner');
  const approval = deskd.tool('computer_use', click(150, 100));
  await page.waitForSelector('#ctl-approvals .card');
  await same('help and approval banners');
  await page.click('#ctl-take');
  await control(page, 'you');
  await same('holding, with both banners');
  // A click on the picture below the banners lands where it was aimed
  // (desktop pixel 300,600: the fixture's middle).
  const b = await box(page);
  await page.mouse.click(b.x + 300.5 * b.width / 1280, b.y + 600.5 * b.height / 800);
  const st = await fixture.waitFor((s) => s.events.some((e) => e.type === 'button_press'), { timeout: 5000 * SLOW });
  const press = st.events.find((e) => e.type === 'button_press');
  assert.ok(Math.abs(press.root_x - 300) <= 2 && Math.abs(press.root_y - 600) <= 2, `landed at ${press.root_x},${press.root_y}`);
  await page.click('#ctl-release');
  await control(page, 'none');
  await page.click('#ctl-approvals .deny');
  await page.waitForSelector('#ctl-approvals', { state: 'hidden' });
  assert.equal((await approval).body.error.code, 'approval_denied');
  await page.waitForSelector('#ctl-help', { state: 'hidden' });
  await same('banners gone');
  assert.equal((await help).body.structuredContent.outcome, 'handed_back');
  // Taking control without a banner shows the note box and Keys in the bar.
  await page.click('#ctl-take');
  await control(page, 'you');
  assert.equal(await page.isVisible('.ctl-bar #ctl-note'), true);
  await same('holding, no banner');
  await page.click('#ctl-release');
  await control(page, 'none');
  assert.deepEqual(page.problems, []);
});

test('P4: an MCP session and a REST agent refused during the hold both get the note once', async (t) => {
  const { deskd } = await desktop(t, { fixture: true, deskdArgs: ['--tools', 'both'] });
  const mcp = await sdkClient(t, deskd);
  const c = await openLive(deskd, { token: deskd.personToken });
  c.keepJpegs = false;
  t.after(() => c.close());
  const send = (m) => c.ws.send(JSON.stringify(m));
  const state = () => [...c.texts].reverse().find((m) => m.type === 'control');
  await c.until((x) => x.hello && state());
  send({ type: 'take' });
  await c.until(() => state().holder === 'you');
  const m1 = await mcp.callTool({ name: 'computer_use', arguments: click(10, 10) });
  assert.equal(m1.structuredContent.code, 'human_in_control');
  assert.equal((await deskd.tool('computer_use', click(10, 10))).status, 409);
  send({ type: 'release', note: 'captcha solved' });
  await c.until(() => state().holder === 'none');

  // REST calls first, then the MCP session: each is told once.
  const r1 = await deskd.tool('computer_use', click(20, 20));
  assert.equal(r1.status, 200, JSON.stringify(r1.body));
  assert.equal(r1.body.structuredContent.human_control.note, 'captcha solved');
  const r2 = await deskd.tool('computer_use', click(21, 20));
  assert.equal(r2.body.structuredContent.human_control, undefined, 'REST: once');
  const m2 = await mcp.callTool({ name: 'computer_use', arguments: click(22, 20) });
  assert.notEqual(m2.isError, true, JSON.stringify(m2));
  assert.equal(m2.structuredContent.human_control?.note, 'captcha solved', 'the MCP session is told too');
  assert.ok(m2.content.some((x) => x.type === 'text' && /captcha solved/.test(x.text)));
  const m3 = await mcp.callTool({ name: 'computer_use', arguments: click(23, 20) });
  assert.equal(m3.structuredContent?.human_control, undefined, 'MCP: once');
});

test('P5: "another tab took control" goes once control is free again', async (t) => {
  const { deskd } = await desktop(t, { fixture: true });
  const page = await open(t, deskd);
  await page.click('#ctl-take');
  await control(page, 'you');
  const page2 = await open(t, deskd);
  await control(page2, 'other');
  await page2.click('#ctl-take');
  await control(page2, 'you');
  await control(page, 'other');
  await page.waitForFunction(() => !document.getElementById('toast').hidden
    && /another tab took control/i.test(document.getElementById('toast').textContent));
  await page2.click('#ctl-release');
  await control(page, 'none');
  // At once, not when the toast's 6 s run out.
  await page.waitForFunction(() => document.getElementById('toast').hidden, null, { timeout: 1000 });
  assert.deepEqual(page.problems, []);
});

test('the state pill names every state, on the person\'s page and the view-only page', async (t) => {
  mkdirSync(SHOTS, { recursive: true });
  const { deskd } = await desktop(t, { fixture: { geometry: '400x300+100+80', pattern: 'quadrants' },
    deskdArgs: ['--view-token', 'just-watching-27', '--approve', 'destructive', '--approve-timeout', '30'] });
  const page = await open(t, deskd);
  const view = await open(t, deskd, 'just-watching-27');
  await view.waitForFunction(() => document.body.classList.contains('view-only'));
  const expect = async (p, state, text, shot) => {
    await p.waitForFunction((s) => document.getElementById('ctl-pill').dataset.state === s, state);
    const got = await pill(p);
    assert.deepEqual(got, { state, text, visible: true });
    if (shot) await p.screenshot({ path: join(SHOTS, `pill-${shot}.png`) });
  };
  await page.waitForFunction(() => document.getElementById('screen').width > 0);
  await expect(page, 'agent', 'Agent acting', 'agent');
  await expect(view, 'agent', 'Agent acting', 'view-agent');

  await page.click('#ctl-take');
  await expect(page, 'you', 'You have control', 'you');
  await expect(view, 'other', 'Another tab has control', 'view-other');
  const page2 = await open(t, deskd);
  await expect(page2, 'other', 'Another tab has control', 'other');
  await page.click('#ctl-release');
  await expect(page, 'agent', 'Agent acting');

  await page.click('#ctl-pause');
  await expect(page, 'paused', 'Agent paused', 'paused');
  await expect(view, 'paused', 'Agent paused', 'view-paused');
  await page.click('#ctl-pause');
  await expect(page, 'agent', 'Agent acting');

  const help = deskd.tool('request_human_help', { reason: 'which account?', timeout_s: 60 });
  await expect(page, 'waiting', 'Waiting for you (help / approval)', 'waiting-help');
  await page.click('#ctl-help .dismiss');
  assert.equal((await help).body.structuredContent.outcome, 'dismissed');
  await expect(page, 'agent', 'Agent acting');
  const approval = deskd.tool('computer_use', click(150, 100));
  await expect(page, 'waiting', 'Waiting for you (help / approval)', 'waiting-approval');
  await expect(view, 'waiting', 'Waiting for you (help / approval)', 'view-waiting');

  // Approve is the primary button; Deny is plain, not the red one.
  const looks = await page.evaluate(() => {
    const bg = (sel) => getComputedStyle(document.querySelector(sel)).backgroundColor;
    const danger = document.createElement('button');
    danger.className = 'danger';
    document.body.append(danger);
    const red = getComputedStyle(danger).backgroundColor;
    danger.remove();
    return { approve: bg('#ctl-approvals .approve'), deny: bg('#ctl-approvals .deny'), red,
      denyClass: document.querySelector('#ctl-approvals .deny').className };
  });
  assert.notEqual(looks.approve, looks.deny, `Approve and Deny differ: ${JSON.stringify(looks)}`);
  assert.notEqual(looks.deny, looks.red, 'Deny is not the red button');
  assert.doesNotMatch(looks.denyClass, /danger/);
  await page.click('#ctl-approvals .approve');
  assert.equal((await approval).status, 200);
  await expect(page, 'agent', 'Agent acting');
  // The activity list: the approved call is one row that says it was
  // approved and by whom, no rows of the approval's own.
  await page.waitForFunction(() => document.querySelector('#timeline li[data-tool="computer_use"][data-approval="approved"]'));
  const lines = await page.$$eval('#timeline li', (lis) => lis.map((l) => ({ tool: l.dataset.tool, approval: l.dataset.approval, text: l.textContent })));
  assert.deepEqual(lines.filter((l) => l.tool === 'approval'), [], JSON.stringify(lines));
  const approved = lines.filter((l) => l.tool === 'computer_use');
  assert.equal(approved.length, 1, JSON.stringify(lines));
  assert.match(approved[0].text, /approved by \S+/);
  await sleep(100);
  assert.deepEqual(page.problems, []);
  assert.deepEqual(view.problems, []);
});

test('the special-keys menu sends Ctrl+Alt+Del, Super, Esc and F-keys while holding', async (t) => {
  const { deskd, fixture } = await desktop(t, { fixture: { geometry: '400x300+100+80' } });
  const page = await open(t, deskd);
  await page.waitForFunction(() => document.getElementById('screen').width > 0);
  assert.equal(await page.isVisible('#ctl-keys'), false, 'only while holding');
  await page.click('#ctl-take');
  await control(page, 'you');
  // Focus the fixture with a click, then the menu.
  const b = await box(page);
  await page.mouse.click(b.x + 300.5 * b.width / 1280, b.y + 230.5 * b.height / 800);
  await fixture.waitFor((s) => s.events.some((e) => e.type === 'button_release'), { timeout: 5000 * SLOW });
  for (const v of ['Control+Alt+Delete', 'Meta', 'Escape', 'F5']) await page.selectOption('#ctl-keys', v);
  const want = ['Control_L', 'Alt_L', 'Delete', 'Super_L', 'Escape', 'F5'];
  const st = await fixture.waitFor((s) => s.events.filter((e) => e.type === 'key_release' && e.name === 'F5').length === 1,
    { timeout: 5000 * SLOW }).catch(() => assert.fail(`keys: ${JSON.stringify(fixture.state().events.filter((e) => e.type === 'key_press').map((e) => e.name))}`));
  const presses = st.events.filter((e) => e.type === 'key_press');
  assert.deepEqual(presses.map((e) => e.name), want);
  const del = presses.find((e) => e.name === 'Delete');
  assert.ok((del.state & 4) && (del.state & 8), `Delete with Control and Alt held: state ${del.state}`);
  assert.deepEqual(st.events.filter((e) => e.type === 'key_release').slice(0, 3).map((e) => e.name),
    ['Delete', 'Alt_L', 'Control_L'], 'released in reverse');
  assert.equal(await page.inputValue('#ctl-keys'), '', 'the menu is ready for the next key');
  assert.deepEqual(page.problems, []);
});

test('the clipboard panel reads the desktop\'s clipboard and sends text to it', async (t) => {
  const { deskd } = await desktop(t, { fixture: true, deskdArgs: ['--view-token', 'only-looking-27'] });
  const page = await open(t, deskd);
  const text = 'Grüße from the dashboard ½';
  await page.fill('#clip-text', text);
  await page.click('#clip-send');
  await page.waitForFunction(() => /Sent/.test(document.getElementById('clip-msg').textContent));
  const read = await deskd.tool('clipboard_read', {});
  assert.equal(read.status, 200, JSON.stringify(read.body));
  assert.equal(read.body.content[0].text, text, 'the desktop has the text');

  assert.equal((await deskd.tool('clipboard_write', { text: 'from the agent' })).status, 200);
  await page.click('#clip-read');
  await page.waitForFunction(() => document.getElementById('clip-text').value === 'from the agent');

  // While this tab holds the desktop the person's clipboard still works
  // (the gate guards against the agent, which is refused meanwhile).
  await page.click('#ctl-take');
  await control(page, 'you');
  await page.fill('#clip-text', 'pasted while holding ✓');
  await page.click('#clip-send');
  await page.waitForFunction(() => /Sent/.test(document.getElementById('clip-msg').textContent) && !/Cannot/.test(document.getElementById('clip-msg').textContent));
  const agentMeanwhile = await deskd.tool('clipboard_write', { text: 'the agent, held' });
  assert.equal(agentMeanwhile.status, 409, JSON.stringify(agentMeanwhile.body));
  await page.fill('#clip-text', '');
  await page.click('#clip-read');
  await page.waitForFunction(() => document.getElementById('clip-text').value === 'pasted while holding ✓');
  await page.click('#ctl-release');
  await control(page, 'none');

  // The page's own reads do not use up the agent's hand-back note.
  await page.click('#clip-read');
  await page.waitForFunction(() => /Read/.test(document.getElementById('clip-msg').textContent));
  const next = await deskd.tool('computer_use', click(10, 10));
  assert.ok(next.body.structuredContent.human_control, 'the agent is still told after the page read the clipboard');

  const view = await open(t, deskd, 'only-looking-27');
  await view.waitForFunction(() => document.body.classList.contains('view-only'));
  assert.equal(await view.isVisible('#clip-panel'), false, 'not for the view token');
  assert.deepEqual(page.problems, []);
});
