// Accessibility answers stay bounded (docs/DESIGN.md 6.3, "Limits"): apps
// with huge accessible names (tests/apps/gtk3-names.py) give names cut at
// 1,024 bytes on a character boundary, marked, and answers under 512 KiB;
// one stopped app does not fail the whole-desktop ui_snapshot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDeskd, need, waitUntil, tempDir, ROOT, SLOW } from './lib/harness.mjs';

const APP = join(ROOT, 'tests/apps/gtk3-names.py');
const NAME_MAX = 1024;
const ANSWER_MAX = 512 * 1024;
const CHAR = '\u65e5';   // 3 bytes: a cut at 1,024 bytes lands inside one

const bytes = (s) => Buffer.byteLength(s, 'utf8');

/** POST a tool over REST; the answer's exact size in bytes as well. */
async function call(d, name, args) {
  const r = await d.fetch(`/api/v1/tools/${name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(args) });
  const text = await r.text();
  let body;
  try { body = JSON.parse(text); } catch { body = text; }
  return { status: r.status, body, bytes: bytes(text) };
}

async function ok(d, name, args) {
  const r = await call(d, name, args);
  assert.equal(r.status, 200, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r.body).slice(0, 2000)}`);
  return r;
}

test('accessibility limits: huge names are cut, answers are capped, a stopped app is skipped', { timeout: 180000 * SLOW }, async (t) => {
  need('python3');
  const dir = tempDir('deskd-a11y-limits-');
  const hugePid = join(dir, 'huge.pid');
  const manyPid = join(dir, 'many.pid');
  const listPid = join(dir, 'list.pid');
  // huge: 3 buttons whose names and descriptions are 1 MiB of 日; many: 600
  // buttons with 2 KB names and descriptions of '"' (1 KiB each once cut,
  // but escaped in JSON, and twice in the outline: about 8 KB of answer per
  // button, so 200 of them would be over 1.5 MB; most are scrolled out of
  // view, so all: true).
  const d = await startDeskd({ args: [   // spawns: python3
    '--launch', `python3 ${APP} --pid-file ${hugePid} --title huge-names`,
    '--launch', `python3 ${APP} --pid-file ${manyPid} --title many-names --buttons 600 --name-bytes 2000 --char-code 34`,
    '--launch', `python3 ${APP} --pid-file ${listPid} --title long-list --buttons 600 --plain`,
  ] });
  const pids = [];
  t.after(async () => {
    // Every app by its pid, also when the test failed half-way (a stopped
    // one must be continued to die of SIGTERM; SIGKILL does in any case).
    for (const pid of pids) {
      try { process.kill(pid, 'SIGCONT'); } catch {}
      try { process.kill(pid, 'SIGKILL'); } catch {}
    }
    await d.stop();
  });
  const pidOf = async (file) => {
    const pid = await waitUntil(() => existsSync(file) && Number(readFileSync(file, 'utf8')), { timeout: 15000 * SLOW, what: file });
    pids.push(pid);
    return pid;
  };
  const huge = await pidOf(hugePid);
  const many = await pidOf(manyPid);
  const list = await pidOf(listPid);
  const wins = await waitUntil(async () => {
    const w = (await ok(d, 'windows', {})).body.structuredContent.windows;
    return [huge, many, list].every((p) => w.some((x) => x.pid === p && x.visible)) && w;
  }, { timeout: 20000 * SLOW, what: 'the three windows' });
  const hugeWin = wins.find((x) => x.pid === huge).id;
  const manyWin = wins.find((x) => x.pid === many).id;
  const listWin = wins.find((x) => x.pid === list).id;
  const full = CHAR.repeat((1 << 20) / 3);
  const cut = CHAR.repeat(Math.floor(NAME_MAX / 3));   // 1,023 bytes: the last whole character
  const descCut = 'dd' + CHAR.repeat(Math.floor((NAME_MAX - 2) / 3));   // 1,022 bytes

  await t.test('1 MiB names: cut at 1,024 bytes on a character boundary, marked; the answer is small', async () => {
    const r = await waitUntil(async () => {
      const s = await call(d, 'ui_snapshot', { window: hugeWin });
      return s.status === 200 && s.body.structuredContent.elements.filter((e) => e.role === 'push button').length === 3 && s;
    }, { timeout: 15000 * SLOW, what: 'the three buttons' });
    t.diagnostic(`ui_snapshot of 3 buttons with 1 MiB names: ${r.bytes} bytes`);
    assert.ok(r.bytes < 64 * 1024, `answer is ${r.bytes} bytes`);
    for (const e of r.body.structuredContent.elements.filter((x) => x.role === 'push button')) {
      assert.equal(e.name, cut, `name cut to ${bytes(cut)} bytes, not ${bytes(e.name)}`);
      assert.ok(full.startsWith(e.name));
      assert.equal(e.name_truncated, true);
      assert.equal(e.description, descCut);
      assert.equal(e.description_truncated, true);
    }
    const text = r.body.content[0].text;
    assert.ok(text.includes(`push button "${cut}"… [e`), text.slice(0, 300));
    assert.ok(!text.includes('\ufffd'), 'no broken character');

    const f = await ok(d, 'ui_find', { window: hugeWin, role: 'push button' });
    t.diagnostic(`ui_find of the same: ${f.bytes} bytes`);
    assert.ok(f.bytes < 64 * 1024, `ui_find answer is ${f.bytes} bytes`);
    assert.equal(f.body.structuredContent.total, 3);
    for (const m of f.body.structuredContent.matches) {
      assert.equal(m.name, cut);
      assert.equal(m.name_truncated, true);
    }
    // ui_read: the name is cut the same way; the text (max_chars bytes)
    // ends on a character boundary and says it was cut.
    const rd = (await ok(d, 'ui_read', { ref: f.body.structuredContent.matches[0].ref })).body.structuredContent;
    assert.equal(rd.name, cut);
    assert.equal(rd.name_truncated, true);
    const entry = r.body.structuredContent.elements.find((e) => e.name === 'Entry');
    assert.ok(entry && entry.ref, 'the entry');
    const word = '\u65e5\u672c\u8a9e\u30c6\u30ad\u30b9\u30c8';
    assert.equal((await ok(d, 'ui_read', { ref: entry.ref })).body.structuredContent.text, word, 'read back exactly');
    const part = (await ok(d, 'ui_read', { ref: entry.ref, max_chars: 7 })).body.structuredContent;
    assert.equal(part.text, '\u65e5\u672c', '7 bytes: two whole characters');
    assert.equal(part.truncated, true);
  });

  await t.test('600 buttons: the answer stops at 512 KiB and says so', async () => {
    const r = await waitUntil(async () => {
      const s = await call(d, 'ui_snapshot', { window: manyWin, max_nodes: 5000, all: true });
      return s.status === 200 && s.body.structuredContent.elements.some((e) => e.role === 'push button') && s;
    }, { timeout: 15000 * SLOW, what: 'the buttons' });
    const s = r.body.structuredContent;
    const buttons = s.elements.filter((e) => e.role === 'push button').length;
    t.diagnostic(`ui_snapshot of 600 buttons with 2 KB names: ${r.bytes} bytes, ${buttons} buttons listed`);
    assert.ok(r.bytes <= ANSWER_MAX, `answer is ${r.bytes} bytes`);
    assert.ok(buttons > 30 && buttons < 600, `${buttons} buttons`);
    assert.equal(s.truncated, true);
    assert.equal(s.max_bytes_reached, true);
    assert.match(r.body.content[0].text, /512 KiB/);
    const name = s.elements.find((e) => e.role === 'push button').name;
    assert.equal(name, '"'.repeat(NAME_MAX));
    assert.ok(r.body.content[0].text.includes(`push button ${JSON.stringify(name)}… [e`));
    const f = await ok(d, 'ui_find', { window: manyWin, role: 'push button', limit: 200, all: true });
    t.diagnostic(`ui_find limit 200: ${f.bytes} bytes, ${f.body.structuredContent.matches.length} matches`);
    assert.ok(f.bytes <= ANSWER_MAX, `ui_find answer is ${f.bytes} bytes`);
    assert.equal(f.body.structuredContent.total, 600);
    assert.ok(f.body.structuredContent.matches.length < 200);
    assert.equal(f.body.structuredContent.max_bytes_reached, true);
  });

  await t.test('a 600-element list pages: a cut answer names where the rest starts, and following it shows every element once', async () => {
    const seen = [];
    let args = { window: listWin, all: true };
    let pages = 0;
    for (; pages < 10; pages++) {
      const r = await waitUntil(async () => {
        const a = await call(d, 'ui_snapshot', args);
        return a.status === 200 && a.body.structuredContent.elements.some((e) => e.role === 'push button') && a;
      }, { timeout: 15000 * SLOW, what: `page ${pages + 1}` });
      const s = r.body.structuredContent;
      seen.push(...s.elements.filter((e) => e.role === 'push button').map((e) => e.name));
      if (!s.next) {
        assert.equal(s.truncated, false, 'an answer without next is whole');
        break;
      }
      assert.equal(s.truncated, true);
      const text = r.body.content[0].text;
      assert.ok(text.includes(`(+${600 + 1 - s.next.from_child} more: ui_snapshot ref=${s.next.ref} from_child=${s.next.from_child})`),
        `the cut element's line says where the rest starts:\n${text.slice(-600)}`);
      assert.match(text, new RegExp(`"ref": "${s.next.ref}", "from_child": ${s.next.from_child}`));
      args = { ...s.next, all: true };
    }
    t.diagnostic(`600 buttons in ${pages + 1} pages of the default 400 nodes`);
    assert.ok(pages >= 1, 'the default outline was cut');
    assert.equal(seen.length, 600, `each button once: ${seen.length}`);
    assert.deepEqual([...seen].sort(), Array.from({ length: 600 }, (_, i) => `b${i + 1}`).sort());
    // from_child alone, and a ref that is no element, are refused clearly
    const bad = await call(d, 'ui_snapshot', { window: listWin, from_child: 3 });
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.match(bad.body.error.message, /from_child needs a ref/);
    const stale = await call(d, 'ui_snapshot', { ref: 'e999999' });
    assert.match(stale.body.error.code, /stale_ref/);
  });

  await t.test('the whole desktop: every window; a stopped app is marked timeout, the others answer', async () => {
    const r0 = await ok(d, 'ui_snapshot', { window: 0, max_nodes: 5000 });
    const all = r0.body.structuredContent;
    t.diagnostic(`whole-desktop ui_snapshot: ${r0.bytes} bytes, ${all.elapsed_ms} ms`);
    assert.ok(r0.bytes <= ANSWER_MAX, `answer is ${r0.bytes} bytes`);
    assert.equal(all.window, 0);
    for (const [pid, win] of [[huge, hugeWin], [many, manyWin]]) {
      const w = all.windows.find((x) => x.window === win);
      assert.ok(w, `window ${win} in ${JSON.stringify(all.windows)}`);
      assert.equal(w.status, 'ok', JSON.stringify(w));
      assert.equal(w.app.pid, pid);
      assert.ok(all.elements.some((e) => e.window === win && e.role === 'push button'));
    }
    process.kill(huge, 'SIGSTOP');
    try {
      const t0 = Date.now();
      const r = await ok(d, 'ui_snapshot', { window: 0, max_nodes: 5000 });
      const ms = Date.now() - t0;
      t.diagnostic(`whole-desktop ui_snapshot with one app stopped: ${r.status} in ${ms} ms`);
      assert.ok(ms < 2000 + 1000 * SLOW, `answered after ${ms} ms`);
      const s = r.body.structuredContent;
      const stopped = s.windows.find((x) => x.window === hugeWin);
      assert.equal(stopped.status, 'timeout', JSON.stringify(stopped));
      assert.equal(stopped.app.pid, huge);
      const live = s.windows.find((x) => x.window === manyWin);
      assert.equal(live.status, 'ok', JSON.stringify(live));
      assert.ok(s.elements.some((e) => e.window === manyWin && e.role === 'push button'), 'the live app\'s tree');
      assert.ok(!s.elements.some((e) => e.window === hugeWin));
      assert.match(r.body.content[0].text, /huge-names.*did not answer/);
      // That app alone: a timeout.
      const one = await call(d, 'ui_snapshot', { window: hugeWin, timeout_ms: 500 });
      assert.equal(one.status, 504, JSON.stringify(one.body));
      assert.equal(one.body.error.code, 'timeout');
    } finally {
      process.kill(huge, 'SIGCONT');
    }
    await waitUntil(async () => (await call(d, 'ui_snapshot', { window: hugeWin })).status === 200,
      { timeout: 10000 * SLOW, what: 'the app to answer again' });
  });
});
