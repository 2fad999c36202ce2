// Paste: 10 KB and 100 KB into a GTK3 text view (tests/apps/gtk3-text.py)
// through the clipboard (computer_paste) against typing the same text
// (computer_type: XTest keys), in characters per second from the call until
// the application's buffer holds it, checked exact; and the clipboard's
// write + read round trip (deskd owns it, deskd reads it back through the X
// server), against xclip -i + xclip -o when xclip is there: as JSON tool
// calls, and as bytes (PUT and GET /api/v1/clipboard, what curl sends).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawnSync } from 'node:child_process';
import { time, stats, fmt, table, have, toolCall, getBytes, putBytes } from '../lib.mjs';
import { startXvfb, startDeskd, launch, waitUntil, tempDir, ROOT } from '../../tests/integration/lib/harness.mjs';

const N = Number(process.env.BENCH_PASTE_N || 100);
// Keymap characters only, so that typing measures XTest keys, not remapping.
const LINE = 'The quick brown fox jumps over the lazy dog, 0123456789 (+-*/).\n';
const text = (bytes) => LINE.repeat(Math.ceil(bytes / LINE.length)).slice(0, bytes - 1) + '\n';

async function gtkText(display) {
  const state = join(tempDir('deskd-bench-gtk-'), 'buffer.txt');
  const env = { ...process.env, DISPLAY: display, LC_ALL: 'C.UTF-8', NO_AT_BRIDGE: '1', GTK_A11Y: 'none',
    DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent' };
  const p = launch('gtk3-text', 'python3', [join(ROOT, 'tests/apps/gtk3-text.py'), '--state', state, '--title', 'bench paste'], { env });
  await waitUntil(() => existsSync(state), { timeout: 15000, what: 'the GTK3 app' });
  p.text = () => readFileSync(state, 'utf8');
  return p;
}

async function windowOf(deskd, title) {
  return waitUntil(async () => (await toolCall(deskd, 'windows', {})).structuredContent.windows.find((w) => w.title === title)?.id,
    { timeout: 10000, what: title });
}

/** One way of putting text into the app: ms from the call to the buffer holding it. */
async function into(deskd, app, window, how, body) {
  await toolCall(deskd, 'computer_use', { window, actions: [{ type: 'keypress', keys: ['ctrl', 'a'] }, { type: 'keypress', keys: ['Delete'] }] });
  await waitUntil(() => app.text() === '', { what: 'an empty buffer' });
  const t0 = performance.now();
  if (how === 'paste') {
    await toolCall(deskd, 'computer_paste', { window, text: body });
  } else {
    // type takes at most 64 KiB per action: one batch of 32 KB actions.
    const actions = [];
    for (let i = 0; i < body.length; i += 32768) actions.push({ type: 'type', text: body.slice(i, i + 32768) });
    await toolCall(deskd, 'computer_use', { window, actions });
  }
  await waitUntil(() => app.text().length >= body.length, { timeout: 120000, interval: 10, what: `${how} to arrive` }).catch(() => {});
  const ms = performance.now() - t0;
  return { ms, exact: app.text() === body };
}

export default async function () {
  const x = await startXvfb({ width: 1280, height: 800 });
  const procs = [x];
  try {
    const deskd = await startDeskd({ display: x.display, args: ['--log-level', 'warning', '--tools', 'both'] });
    procs.push(deskd);
    const app = await gtkText(x.display);
    procs.push(app);
    const window = await windowOf(deskd, 'bench paste');
    const rows = [];
    const speeds = {};
    for (const kb of [10, 100]) {
      const body = text(kb * 1024);
      for (const how of ['paste', 'type']) {
        const r = await into(deskd, app, window, how, body);
        const cps = body.length / (r.ms / 1000);
        speeds[`${how}${kb}`] = cps;
        rows.push([`${how} ${kb} KB`, fmt(r.ms), String(Math.round(cps)), r.exact ? 'exact' : 'MISMATCH']);
      }
      rows.push([`ratio ${kb} KB: paste / type`, '', (speeds[`paste${kb}`] / speeds[`type${kb}`]).toFixed(0) + 'x', '']);
    }
    table('paste: into a GTK3 text view (chars/s from the call until the app holds the text)', ['operation', 'ms', 'chars/s', 'check'], rows);

    // The clipboard round trip, deskd and xclip on one row per size: write
    // then read back, checked exact. The non-ASCII megabyte is mostly 2-
    // to 4-byte characters (JSON carries them as they are).
    const crow = [];
    const utf8 = (bytes) => {
      const parts = ['Grüße, ça va? ', 'Привет, мир ', '日本語のテキスト ', '😀 👩‍👩‍👧 🇫🇷 ', 'שלום عالم '];
      let s = '';
      for (let i = 0; Buffer.byteLength(s) < bytes; i++) s += parts[i % parts.length];
      return s;
    };
    const env = { ...process.env, DISPLAY: x.display };
    for (const [label, body] of [['12 bytes', 'hello, world'], ['100 KB', text(100 * 1024)], ['1 MB', text(1 << 20)], ['1 MB non-ASCII', utf8(1 << 20)]]) {
      const n = body.length > 1e5 ? Math.min(N, 20) : N;
      const s = stats(await time(async () => {
        await toolCall(deskd, 'clipboard_write', { text: body });
        const r = await toolCall(deskd, 'clipboard_read', {});
        if (r.content[0].text !== body) throw new Error('clipboard round trip not exact');
      }, { n, warmup: 3 }));
      const bytes = Buffer.from(body);
      const raw = stats(await time(async () => {
        await putBytes(deskd, '/api/v1/clipboard', bytes);
        if (!(await getBytes(deskd, '/api/v1/clipboard')).equals(bytes)) throw new Error('clipboard bytes round trip not exact');
      }, { n, warmup: 3 }));
      let xs = null;
      if (have('xclip')) {
        xs = stats(await time(async () => {
          // xclip -i forks a server that waits for a request; -o converts from it.
          // Its server keeps inherited pipes open: give it none, or this waits for it.
          spawnSync('xclip', ['-i', '-selection', 'clipboard'], { input: body, env, stdio: ['pipe', 'ignore', 'ignore'] });   // spawns: xclip
          const o = spawnSync('xclip', ['-o', '-selection', 'clipboard'], { env, maxBuffer: 64 << 20 });
          if (o.stdout.toString() !== body) throw new Error('xclip round trip not exact');
        }, { n: Math.min(n, 30), warmup: 2 }));
      }
      const ratio = (d) => (xs ? `${(xs.p50 / d.p50).toFixed(1)}x` : '');
      crow.push([label, `${fmt(s.p50)} / ${fmt(s.p95)}`, `${fmt(raw.p50)} / ${fmt(raw.p95)}`,
        xs ? `${fmt(xs.p50)} / ${fmt(xs.p95)}` : 'no xclip', ratio(s), ratio(raw), String(s.n)]);
    }
    table('clipboard: write + read back, exact: deskd over REST (JSON tool calls; bytes: PUT + GET /api/v1/clipboard) against xclip -i + xclip -o (ms p50 / p95)',
      ['text', 'deskd JSON', 'deskd bytes', 'xclip', 'xclip / JSON', 'xclip / bytes', 'n'], crow);
  } finally {
    for (const p of procs.reverse()) await p.stop().catch(() => {});
  }
}
