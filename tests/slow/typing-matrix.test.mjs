// The typing matrix (issue 25's acceptance): the corpora typed into every app
// the tests cover, on us, de and ru,us, Caps Lock off and on, idle and with
// both cores loaded, each string read back byte-exact outside deskd (the
// app's records, the page's POST, Writer's copied text). One deskd and one
// start of each app; the layout and the lock change under them as a
// person's would. Slow (about 10 minutes): `make test-slow`, not make test.
// MATRIX_APPS=a,b and MATRIX_ROWS=0,3 pick a part.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startDeskd, startXvfb, startWm, tempDir, loadCores } from '../integration/lib/harness.mjs';
import { startApp, warmUp, typeAll } from '../integration/lib/apps.mjs';
import { lockOn, setLock, setLayout, xkbState } from '../integration/lib/keyboard.mjs';
import { appCorpus, hardCorpus } from '../integration/lib/corpus.mjs';

const APPS = ['xterm', 'gtk', 'gtk4', 'tk', 'qt', 'chromium', 'firefox', 'swing', 'writer'];
// Every string of the app corpus but the 2,000-character one (slot
// turnover: input.test), and the hard corpus.
const CORPORA = { app: appCorpus().filter((s) => [...s].length <= 300), hard: hardCorpus() };
// [symbols, Caps Lock, loaded, corpus]; pc+ru+us:2 is ru,us (no Latin
// letter in the active group).
const ROWS = [['pc+us', false, false, 'app'], ['pc+us', true, false, 'app'], ['pc+de', false, false, 'app'],
  ['pc+de', true, true, 'app'], ['pc+ru+us:2', true, false, 'app'], ['pc+ru+us:2', false, true, 'app'],
  ['pc+us', true, false, 'hard'], ['pc+de', false, true, 'hard']];
const pick = (all, env) => (env ? env.split(',').map((x) => all[x] ?? x) : all);

async function ok(deskd, args) {
  const r = await deskd.tool('computer_use', args);
  assert.equal(r.status, 200, `${JSON.stringify(args).slice(0, 200)} -> ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`);
  assert.ok(!r.body.isError, JSON.stringify(r.body).slice(0, 400));
  return r.body.structuredContent;
}


for (const kind of pick(APPS, process.env.MATRIX_APPS)) {
  test(`${kind}: the corpus byte-exact on us, de and ru,us, Caps Lock off and on, idle and loaded`, { timeout: 1200000 }, async (t) => {
    const x = await startXvfb();
    t.after(() => x.stop());
    const display = x.display;
    setLayout(display, 'pc+us');
    await startWm(display);
    const deskd = await startDeskd({ display });
    t.after(() => deskd.stop());
    const app = await startApp(kind, display, tempDir(`deskd-matrix-${kind}-`));
    t.after(() => app.stop());
    const batch = (target, actions) => ok(deskd, { ...target, actions });
    const target = await warmUp(deskd, app, batch, { timeout: 90000 });
    const call = (actions) => batch(target, actions);
    const table = [];
    const failures = [];
    for (const [symbols, caps, loaded, name] of pick(ROWS, process.env.MATRIX_ROWS)) {
      const corpus = CORPORA[name];
      setLayout(display, symbols);
      assert.equal(xkbState(display, 0).locked_group, 0);
      setLock(display, caps);
      const what = `${kind} ${name} ${symbols} caps ${caps ? 'on' : 'off'}${loaded ? ' loaded' : ''}`;
      const stopLoad = loaded ? loadCores() : () => {};
      const t0 = performance.now();
      let r;
      try { r = await typeAll(app, call, corpus, what); } finally { stopLoad(); }
      const s = (performance.now() - t0) / 1000;
      failures.push(...r.failures);
      if (lockOn(display) !== caps) failures.push(`${what}: Caps Lock ${caps ? 'off' : 'on'} after typing`);
      table.push({ app: kind, corpus: name, layout: symbols.replace(/^pc\+/, ''), caps: caps ? 'on' : 'off', load: loaded ? 'loaded' : 'idle',
        exact: `${r.exact}/${corpus.length}`, s: s.toFixed(1) });
    }
    console.log(table);
    t.diagnostic(JSON.stringify(table));
    assert.deepEqual(failures, []);
  });
}
