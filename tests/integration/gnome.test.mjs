// The GNOME desktop end to end: deskd starts its own headless Mutter with
// PipeWire and WirePlumber on a private session bus (--desktop gnome), a
// --launch program sees that desktop's environment and nothing of the
// caller's, a GTK 3 form started by the launch tool shows its widgets in
// ui_snapshot (AT-SPI on the private bus), and deskd's exit leaves none of
// the processes it started and no runtime dir. Start time and the
// compositor's memory are reported as diagnostics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { need, startDeskd, tempDir, waitUntil, ROOT, SLOW } from './lib/harness.mjs';

const FORM = process.env.GTK3_FORM_BIN || join(ROOT, 'build/tests/gtk3-form');
const T = Math.min(30000, 10000 * SLOW);

async function ok(d, name, args = {}) {
  const r = await d.tool(name, args);
  assert.equal(r.status, 200, `${name} ${JSON.stringify(args).slice(0, 200)} -> ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`);
  assert.ok(!r.body.isError, JSON.stringify(r.body).slice(0, 400));
  return r.body.structuredContent;
}

/** pid -> comm of every descendant of pid now (its threads' children, recursively). */
function descendants(pid, out = new Map()) {
  let tasks = [];
  try { tasks = readdirSync(`/proc/${pid}/task`); } catch { return out; }
  for (const task of tasks) {
    let kids = '';
    try { kids = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8'); } catch { continue; }
    for (const k of kids.split(/\s+/).filter(Boolean).map(Number)) {
      if (out.has(k)) continue;
      try { out.set(k, readFileSync(`/proc/${k}/comm`, 'utf8').trim()); } catch { continue; }
      descendants(k, out);
    }
  }
  return out;
}

/** Is pid still the same running process (not a zombie) with this comm? */
function running(pid, comm) {
  try {
    const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const name = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
    return name === comm && st.slice(st.lastIndexOf(')') + 2, st.lastIndexOf(')') + 3) !== 'Z';
  } catch { return false; }
}

function rssKiB(pid) {
  try { return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]); } catch { return 0; }
}

test('gnome (Mutter alone, --desktop mutter): deskd starts Mutter, PipeWire and WirePlumber; status says gnome; --launch gets the desktop\'s environment; a GTK 3 form shows its widgets in ui_snapshot; windows says why it cannot; the exit leaves no process and no runtime dir', { timeout: 180000 }, async (t) => {
  for (const p of ['mutter', 'pipewire', 'wireplumber', 'dbus-daemon']) need(p);   // spawns: mutter pipewire wireplumber dbus-daemon
  need(FORM);   // spawns: - (built by make: tests/apps/gtk3-form.c)
  const dir = tempDir('deskd-gnome-');
  const envFile = join(dir, 'env.txt');
  const t0 = Date.now();
  const d = await startDeskd({ args: ['--desktop', 'mutter', '--virtual', '1024x768',
    '--launch', `sh -c 'env > ${envFile}'`] });
  const startMs = Date.now() - t0;
  let stopped = false;
  t.after(async () => { if (!stopped) await d.stop(); });

  // The address: gnome:<bus>?pipewire=<rt>/pipewire-0&wayland=<rt>/wayland-deskd.
  const m = /^gnome:(unix:path=([^,?]+)\/bus[^?]*)\?pipewire=([^&]+)&wayland=(.+)$/.exec(d.display);
  assert.ok(m, `a gnome: address: ${d.display}`);
  const [, bus, rt, pipewire, wayland] = m;
  assert.equal(pipewire, `${rt}/pipewire-0`);
  assert.equal(wayland, `${rt}/wayland-deskd`);
  assert.ok(existsSync(wayland) && existsSync(pipewire), 'the sockets are in the runtime dir');

  const st = await ok(d, 'status');
  assert.equal(st.display.backend, 'gnome');
  assert.equal(st.display.embedded, true);
  assert.equal(st.display.available, true);
  assert.deepEqual([st.display.width, st.display.height], [1024, 768]);
  assert.equal(st.accessibility.available, true, JSON.stringify(st.accessibility));

  // --launch ran with the desktop's environment, not the caller's.
  const env = await waitUntil(() => existsSync(envFile) && readFileSync(envFile, 'utf8').includes('WAYLAND_DISPLAY')
    && Object.fromEntries(readFileSync(envFile, 'utf8').split('\n').filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])), { timeout: T, what: 'the --launch program wrote its environment' });
  assert.equal(env.WAYLAND_DISPLAY, wayland);
  assert.equal(env.XDG_RUNTIME_DIR, rt);
  assert.ok(env.DBUS_SESSION_BUS_ADDRESS?.startsWith(bus.split(',')[0]), env.DBUS_SESSION_BUS_ADDRESS);
  assert.equal(env.GDK_BACKEND, 'wayland');
  assert.equal(env.QT_QPA_PLATFORM, 'wayland');
  assert.equal(env.DISPLAY, undefined, 'no X display on GNOME');

  // Its processes, found as deskd's descendants (not by name: other
  // Mutters may run on this machine).
  const kids = descendants(d.proc.pid);
  const byName = (n) => [...kids].filter(([, c]) => c === n).map(([p]) => p);
  for (const n of ['mutter', 'pipewire', 'wireplumber', 'dbus-daemon']) assert.equal(byName(n).length >= 1, true, `deskd started ${n}: ${JSON.stringify([...kids])}`);

  // The form, through the launch tool: no window list to wait in, and it says so.
  const l = await ok(d, 'launch', { argv: [FORM], env: ['LANG=C.UTF-8'] });
  assert.ok(l.pid > 0);
  assert.match(l.message, /no window list/);
  const snap = await waitUntil(async () => {
    const r = await d.tool('ui_snapshot', { pid: l.pid });
    return r.status === 200 && !r.body.isError && r.body.structuredContent.elements.length > 5 && r.body;
  }, { timeout: T, what: 'the form in ui_snapshot' });
  const names = snap.structuredContent.elements.map((e) => e.name);
  for (const n of ['Name', 'Notes', 'Subscribe', 'Save']) assert.ok(names.includes(n), `${n} in ${JSON.stringify(names)}`);
  assert.equal(snap.structuredContent.app.pid, l.pid);
  // By the program's name too.
  const byApp = await ok(d, 'ui_snapshot', { app: 'gtk3-form' });
  assert.equal(byApp.app.pid, l.pid);

  const w = await d.tool('windows', {});
  assert.match(JSON.stringify(w.body), /Mutter alone offers no window list/);

  const all = descendants(d.proc.pid);
  const rss = Object.fromEntries(['mutter', 'pipewire', 'wireplumber'].map((n) =>
    [n, [...all].filter(([, c]) => c === n).reduce((s, [p]) => s + rssKiB(p), 0)]));
  t.diagnostic(`start to ready ${startMs} ms; RSS with the form: mutter ${rss.mutter} KiB, pipewire ${rss.pipewire} KiB, wireplumber ${rss.wireplumber} KiB`);

  const before = [...descendants(d.proc.pid)];
  const t1 = Date.now();
  await d.stop();
  stopped = true;
  t.diagnostic(`exit in ${Date.now() - t1} ms`);
  const left = before.filter(([p, c]) => running(p, c));
  assert.deepEqual(left, [], 'nothing deskd started outlives it');
  assert.equal(existsSync(rt), false, `the runtime dir ${rt} is removed`);
});

test('gnome: --desktop takes gnome and mutter and names them in its error', async () => {
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync(process.env.DESKD_BIN, ['--desktop', 'gnom'], { encoding: 'utf8', timeout: 5000 });   // spawns: - (deskd)
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /--desktop: 'gnom' is not x11, wayland, gnome or mutter/);
});
