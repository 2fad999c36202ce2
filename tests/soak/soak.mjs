// make soak: deskd under mixed load and faults, bounded, on this machine
// only (loopback, its own X server). Runs inside scripts/isolate (private
// /tmp, network and pid namespaces), so the X server it kills can never be
// confused with anyone else's. Prints a table and exits 1 on any error,
// crash, sanitizer report, unbounded wait or leak.
//
// Phases: (1) SOAK_SECONDS (default 60) of REST, MCP, live and SSE clients
// at once, and a person (the person's token on /live) who takes control for
// 3 s every 8 s, moves the pointer and presses Shift, and hands back with a
// note: the agent's calls answer human_in_control meanwhile, and no click of
// theirs may reach the app while the person holds the desktop (the fixture's
// button events against the hold intervals); (2) an idle-connection flood past the limit and a slowloris while
// a well-behaved client keeps working; (3) a stopped X server; (4) a killed
// embedded Xvfb (deskd restarts it); then SIGTERM.
import { performance } from 'node:perf_hooks';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { connect } from 'node:net';
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startDeskd, startFixture, waitUntil, sleep, SLOW } from '../integration/lib/harness.mjs';
import { openLive, procStats } from '../integration/lib/live.mjs';

const SECONDS = Number(process.env.SOAK_SECONDS || 60);
const FLOOD = Number(process.env.SOAK_FLOOD || 1100);
// RSS bounds (issue #29 asks 20 MB idle, 64 MB under load). Idle: before any
// call, and again once deskd has given back what the load kept warm
// (--memory-idle, 3 s here). Peak: sampled every second under the load;
// 59-61 MB in 3 runs (was 96-101 before the thumbnails' reduced decode,
// PNG bands' buffers freed as they are done, shared images bounded by the
// gate, one malloc arena per core; 65-70 before screenshots read the X
// shared image itself, lent, instead of a copy). Of it (smaps at the peak,
// before lending): ~10.5 MB mapped files; 16 MB of X shared images (two
// pooled contexts at the gate, one per live feed), 24 at moments when a
// cold context captures; ~26 MB of mapped blocks (capture/'s buffer cache,
// 24 MB at most, and frames in flight: two feeds, a PNG state's previous
// frame), ~4 MB in glibc's arenas, ~3 MB small maps and stacks. The bound
// leaves ~10 MB.
const RSS_IDLE_MB = 20;
const RSS_SETTLED_MB = 24;
const RSS_PEAK_MB = 72;
const MEMORY_IDLE_S = 3;
const failures = [];
const fail = (what) => { failures.push(what); console.error(`soak: FAIL ${what}`); };
const rows = [];
const pct = (v, p) => (v.length ? v[Math.min(v.length - 1, Math.floor(p / 100 * v.length))] : NaN);
const ms = (x) => (Number.isFinite(x) ? x.toFixed(1) : '-');

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
function call(d, method, path, body, { via = agent } = {}) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const req = http.request(new URL(path, d.url), { method, agent: via, timeout: 30000 * SLOW,
      headers: { authorization: `Bearer ${d.token}`, 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t0 }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ status: 0, error: e.message, ms: performance.now() - t0 }));
    req.end(body);
  });
}
const tool = (d, name, args = {}, opts) => call(d, 'POST', `/api/v1/tools/${name}`, JSON.stringify(args), opts);
const fds = (pid) => readdirSync(`/proc/${pid}/fd`).length;
/** What a process's fds are: "tcp 3, unix 9, pipe 4, ..." (for failures). */
function fdKinds(pid) {
  const inodes = (file) => {
    try { return new Set(readFileSync(file, 'utf8').split('\n').slice(1).map((l) => l.trim().split(/\s+/)[file.endsWith('unix') ? 6 : 9])); } catch { return new Set(); }
  };
  const tcp = new Set([...inodes('/proc/net/tcp'), ...inodes('/proc/net/tcp6')]);
  const unix = inodes('/proc/net/unix');
  const kinds = {};
  for (const f of readdirSync(`/proc/${pid}/fd`)) {
    let t;
    try { t = readlinkSync(`/proc/${pid}/fd/${f}`); } catch { continue; }
    const m = /^socket:\[(\d+)\]$/.exec(t);
    const k = m ? (tcp.has(m[1]) ? 'tcp' : unix.has(m[1]) ? 'unix' : 'socket') : /^pipe:/.test(t) ? 'pipe'
      : /^anon_inode:/.test(t) ? t.slice(11) : t.startsWith('/') ? 'file' : t;
    kinds[k] = (kinds[k] || 0) + 1;
  }
  return Object.entries(kinds).map(([k, n]) => `${k} ${n}`).join(', ');
}
const rss = (pid) => Math.round(procStats(pid).rss / 1024);
/** "anon A + shm S + file F" MB: heap and stacks, X shared memory (capture
 *  images), mapped files. */
function rssParts(pid) {
  const st = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Math.round(Number((new RegExp(`${k}:\\s+(\\d+)`).exec(st) || [])[1] || 0) / 1024);
  return `anon ${kb('RssAnon')} + shm ${kb('RssShmem')} + file ${kb('RssFile')}`;
}

/** One call of each kind, so that what a used server keeps for good (its
 *  input connections, the capture contexts it keeps warm) is in the
 *  baseline; then idle until the extra capture contexts are closed. */
async function warmUp(d) {
  const once = { via: false };   // Connection: close
  for (const [name, args] of [['screenshot', {}], ['windows', {}],
    ['computer_use', { actions: [{ type: 'click', x: 5, y: 5 }, { type: 'type', text: 'w' }] }]]) {
    const r = await tool(d, name, args, once);
    if (r.status !== 200) fail(`warm-up ${name}: ${r.status}`);
  }
  const v = await openLive(d);
  v.keepJpegs = false;
  v.watch({ target: 'screen', fps: 5, max_dimension: 320 });
  await sleep(1000);
  v.close();
  await sleep(6000);
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;   // the fixture's t_ms clock

/** The person: take, 3 s of moves and Shift presses, hand back with a note,
 *  every 8 s until end. Returns the hold intervals (ms, nowMs clock) from the
 *  take's confirmation to the hand-back's sending. */
async function personLoop(d, end) {
  const holds = [];
  const c = await openLive(d);
  c.keepJpegs = false;
  const send = (m) => c.ws.send(JSON.stringify(m));
  const state = () => [...c.texts].reverse().find((m) => m.type === 'control');
  await c.until((x) => x.hello && state());
  c.watch({ target: 'screen', fps: 2, max_dimension: 640 });
  await c.until((x) => x.frames.length >= 1, { timeout: 10000 * SLOW });
  await sleep(3000);
  while (performance.now() + 4000 < end) {
    send({ type: 'take' });
    await c.until(() => state()?.holder === 'you', { timeout: 5000 * SLOW });
    const from = nowMs();
    const stop = performance.now() + 3000;
    for (let i = 0; performance.now() < stop; i++) {
      send({ type: 'move', x: 20 + (i * 7) % 600, y: 380 + (i % 40) });
      if (i % 10 === 0) { send({ type: 'key', key: 'Shift', down: true }); send({ type: 'key', key: 'Shift', down: false }); }
      await sleep(50);
    }
    holds.push({ from, to: nowMs() });
    send({ type: 'release', note: `soak hand-back ${holds.length}` });
    await c.until(() => state()?.holder === 'none', { timeout: 5000 * SLOW });
    await sleep(5000);
  }
  c.close();
  return holds;
}

async function mixedLoad(d, fixture) {
  const stats = {};
  // 409: human_in_control while the person holds the desktop (counted; the
  // X event check below is what proves nothing landed meanwhile).
  const note = (kind, r, okStatus = [200, 409]) => {
    const s = stats[kind] || (stats[kind] = { n: 0, errors: 0, held: 0, lat: [] });
    s.n++;
    s.lat.push(r.ms);
    if (r.status === 409) s.held++;
    if (!okStatus.includes(r.status)) {
      s.errors++;
      if (s.errors <= 3) fail(`${kind}: ${r.status} ${r.error || ''}`);
    }
  };
  const end = performance.now() + SECONDS * 1000;
  const rest = (kind, fn) => (async () => { while (performance.now() < end) note(kind, await fn()); })();
  const workers = [];
  for (let i = 0; i < 2; i++) workers.push(rest('REST screenshot', () => tool(d, 'screenshot', { format: i ? 'jpeg' : 'png' })));
  for (let i = 0; i < 2; i++) {
    workers.push(rest('REST computer_use', () => tool(d, 'computer_use', { actions: [
      { type: 'click', x: 100 + i * 200, y: 100 }, { type: 'type', text: 'soak ' }] })));
  }
  for (let i = 0; i < 2; i++) workers.push(rest('REST windows', () => tool(d, 'windows')));
  for (let i = 0; i < 2; i++) {
    workers.push((async () => {
      const client = new Client({ name: `soak-${i}`, version: '1' });
      const transport = new StreamableHTTPClientTransport(new URL(d.url + '/mcp'),
        { requestInit: { headers: { Authorization: `Bearer ${d.token}` } } });
      await client.connect(transport);
      while (performance.now() < end) {
        for (const [name, args] of [['screenshot', { max_dimension: 640 }], ['computer_use', { actions: [{ type: 'move', x: 300, y: 300 + i }] }]]) {
          const t0 = performance.now();
          let status = 200;
          try {
            const r = await client.callTool({ name, arguments: args });
            if (r.isError) status = r.structuredContent?.code === 'human_in_control' ? 409 : 500;
          } catch (e) { status = 0; }
          note(`MCP ${name}`, { status, ms: performance.now() - t0 });
        }
      }
      await client.close();
    })());
  }
  const viewers = await Promise.all([0, 1, 2].map(() => openLive(d)));
  for (const v of viewers) { v.keepJpegs = false; v.watch({ target: 'screen', fps: 10, max_dimension: 640 }); }
  const sse = [0, 1].map(() => {
    const s = { events: 0, req: null };
    s.req = http.get(new URL('/api/v1/events', d.url), { headers: { authorization: `Bearer ${d.token}` } }, (res) => {
      res.on('data', (c) => { s.events += (c.toString().match(/\ndata:/g) || []).length; });
    });
    s.req.on('error', () => {});
    return s;
  });
  const person = personLoop(d, end);
  const samples = [];
  const sampler = setInterval(() => samples.push({ rss: rss(d.proc.pid), fds: fds(d.proc.pid) }), 1000);
  await Promise.all(workers);
  const holds = await person.catch((e) => { fail(`the person: ${e.message}`); return []; });
  clearInterval(sampler);
  for (const v of viewers) v.close();
  for (const s of sse) s.req.destroy();
  for (const [kind, s] of Object.entries(stats)) {
    s.lat.sort((a, b) => a - b);
    rows.push([s.held ? `${kind} (human_in_control ${s.held})` : kind, s.n, s.errors, ms(pct(s.lat, 50)), ms(pct(s.lat, 99))]);
  }
  // No agent click while the person held the desktop. A click the X server
  // had before the take may still be read by the app just after it: 100 ms.
  const GRACE_MS = 100 * SLOW;
  const presses = fixture.state().events.filter((e) => e.type === 'button_press' && e.t_ms);
  const inHold = presses.filter((e) => holds.some((h) => e.t_ms > h.from + GRACE_MS && e.t_ms < h.to));
  const heldMs = holds.reduce((n, h) => n + h.to - h.from, 0);
  rows.push([`person: ${holds.length} takes, ${(heldMs / 1000).toFixed(1)} s held; agent clicks landed meanwhile (of ${presses.length} checked)`,
    holds.length, inHold.length, '-', '-']);
  if (holds.length < Math.floor((SECONDS - 7) / 8)) fail(`the person took control only ${holds.length} times`);
  if (inHold.length) fail(`${inHold.length} agent clicks reached the app while the person held the desktop (first at ${inHold[0].t_ms.toFixed(0)} ms)`);
  const frames = viewers.map((v) => v.frames.length);
  rows.push(['live viewers (frames each)', frames.join('/'), viewers.reduce((n, v) => n + v.errors.length, 0), '-', '-']);
  rows.push(['SSE readers (events each)', sse.map((s) => s.events).join('/'), 0, '-', '-']);
  if (frames.some((f) => f < SECONDS)) fail(`a live viewer got only ${Math.min(...frames)} frames in ${SECONDS} s`);
  return samples;
}

/** A well-behaved client during an attack: healthz and a screenshot every
 *  100 ms, each on a new connection (at the per-address limit deskd closes
 *  the oldest idle connection, which a keep-alive client may be reusing at
 *  that very moment; such a client retries, this one need not). */
async function probeDuring(d, until) {
  let n = 0, bad = 0;
  const lat = [];
  const fresh = { via: false };
  while (!until()) {
    for (const r of [await call(d, 'GET', '/healthz', undefined, fresh), await tool(d, 'screenshot', { max_dimension: 320 }, fresh)]) {
      n++;
      lat.push(r.ms);
      if (r.status !== 200) bad++;
    }
    await sleep(100);
  }
  lat.sort((a, b) => a - b);
  return { n, bad, p99: pct(lat, 99) };
}

async function flood(d) {
  const base = fds(d.proc.pid);
  const sockets = [];
  let done = false;
  const probe = probeDuring(d, () => done);
  const url = new URL(d.url);
  for (let i = 0; i < FLOOD; i++) {
    const s = connect(Number(url.port), url.hostname);
    s.on('error', () => {});
    sockets.push(s);
    if (i % 100 === 99) await sleep(50);
  }
  await sleep(3000);
  done = true;
  const p = await probe;
  rows.push([`idle flood (${FLOOD} connections): good client`, p.n, p.bad, '-', ms(p.p99)]);
  if (p.bad) fail(`${p.bad} of ${p.n} good requests failed during the idle flood`);
  for (const s of sockets) s.destroy();
  const t0 = performance.now();
  await waitUntil(() => fds(d.proc.pid) <= base + 5, { timeout: 10000 * SLOW, interval: 100, what: 'fds back after the flood' })
    .catch(() => fail(`fds stayed at ${fds(d.proc.pid)} (baseline ${base}) after the flood`));
  rows.push(['  fds after the flood (baseline, back after ms)', `${base}`, 0, ms(performance.now() - t0), '-']);

  // Slowloris: 100 connections, one header byte a second.
  const slow = [];
  for (let i = 0; i < 100; i++) {
    const s = connect(Number(url.port), url.hostname, () => s.write('G'));
    s.on('error', () => {});
    slow.push(s);
  }
  let closed = 0;
  for (const s of slow) s.on('close', () => closed++);
  const drip = setInterval(() => { for (const s of slow) if (!s.destroyed) s.write('E'); }, 1000);
  done = false;
  const probe2 = probeDuring(d, () => done);
  await waitUntil(() => closed === slow.length, { timeout: 40000 * SLOW, interval: 200, what: 'slowloris connections closed' })
    .catch(() => fail(`only ${closed} of ${slow.length} slowloris connections were closed`));
  done = true;
  clearInterval(drip);
  const p2 = await probe2;
  rows.push(['slowloris (100 connections): good client', p2.n, p2.bad, '-', ms(p2.p99)]);
  if (p2.bad) fail(`${p2.bad} of ${p2.n} good requests failed during the slowloris`);
  for (const s of slow) s.destroy();
}

async function xFaults(d, xvfbPid) {
  const healthz = async () => (await call(d, 'GET', '/healthz')).status;
  // Stopped.
  process.kill(xvfbPid, 'SIGSTOP');
  let t0 = performance.now();
  await waitUntil(async () => (await healthz()) === 503, { timeout: 5000 * SLOW, interval: 50, what: '503 for a stopped X server' })
    .catch(() => fail('a stopped X server was not noticed in 5 s'));
  const noticed = performance.now() - t0;
  const refused = await tool(d, 'screenshot');
  if (refused.status !== 503 || refused.ms > 1000) fail(`a call during the hang: ${refused.status} after ${refused.ms} ms`);
  await sleep(3000);
  process.kill(xvfbPid, 'SIGCONT');
  t0 = performance.now();
  await waitUntil(async () => (await tool(d, 'screenshot')).status === 200, { timeout: 5000 * SLOW, interval: 50, what: 'recovery after SIGCONT' })
    .catch(() => fail('no recovery within 5 s of SIGCONT'));
  rows.push(['stopped X server: noticed / recovered (ms)', '-', 0, ms(noticed), ms(performance.now() - t0)]);
  // Killed (deskd restarts its embedded Xvfb).
  process.kill(xvfbPid, 'SIGKILL');
  t0 = performance.now();
  await waitUntil(async () => (await healthz()) === 503, { timeout: 5000 * SLOW, interval: 20, what: '503 for a killed X server' }).catch(() => {});
  const down = performance.now() - t0;
  await waitUntil(async () => (await tool(d, 'computer_use', { actions: [{ type: 'click', x: 5, y: 5 }] })).status === 200,
    { timeout: 10000 * SLOW, interval: 50, what: 'the first click after the restart' })
    .catch(() => fail('no working click within 10 s of killing the X server'));
  rows.push(['killed X server: 503 after / first click after (ms)', '-', 0, ms(down), ms(performance.now() - t0)]);
}

if (process.env.DESKD_TEST_ISOLATED !== '1') {
  console.error('soak: run it with make soak (it needs the private namespaces of scripts/isolate)');
  process.exit(2);
}
const d = await startDeskd({ args: ['--virtual', '1280x800', '--wm', 'none', '--launch', 'none', '--log-level', 'warning',
  '--memory-idle', String(MEMORY_IDLE_S)] });
try {
  await sleep(500);
  const fresh = rss(d.proc.pid);
  rows.push(['RSS MB idle, before any call', `${fresh}: ${rssParts(d.proc.pid)}`, 0, '-', '-']);
  if (!process.env.ASAN_OPTIONS && fresh > RSS_IDLE_MB) fail(`idle RSS ${fresh} MB (bound ${RSS_IDLE_MB} MB)`);
  const status = await (await fetch(d.url + '/api/v1/tools/status', { method: 'POST', body: '{}',
    headers: { authorization: `Bearer ${d.token}`, 'content-type': 'application/json' } })).json();
  const display = status.structuredContent.display.name;
  const fixture = await startFixture(display, { geometry: '1280x800+0+0', animate: 10 });
  await warmUp(d);
  const start = { rss: rss(d.proc.pid), fds: fds(d.proc.pid), kinds: fdKinds(d.proc.pid) };
  const samples = await mixedLoad(d, fixture);
  const peak = Math.max(start.rss, ...samples.map((s) => s.rss));
  rows.push(['RSS MB: start / peak / end of load', `${start.rss}/${peak}/${rss(d.proc.pid)}`, 0, '-', '-']);
  rows.push(['  RSS MB at the end of load', rssParts(d.proc.pid), 0, '-', '-']);
  // The clients' keep-alive connections close; then deskd's fds are back.
  // Idle capture connections close after 5 s; a parked SSE stream learns
  // that its reader left from its keepalives (every 15 s): the first one
  // draws a reset, and libmicrohttpd closes the socket on the next.
  agent.destroy();
  const tBack = performance.now();
  await waitUntil(() => fds(d.proc.pid) <= start.fds + 4, { timeout: 45000 * SLOW, interval: 100, what: 'fds back after the load' })
    .catch(() => fail(`fds grew from ${start.fds} (${start.kinds}) to ${fds(d.proc.pid)} (${fdKinds(d.proc.pid)}) and stayed`));
  rows.push(['fds: start / after the load (back after ms)', `${start.fds}/${fds(d.proc.pid)}`, 0, ms(performance.now() - tBack), '-']);
  // What the load kept warm is given back --memory-idle after its last
  // capture, and the heap trimmed within a second.
  await sleep((MEMORY_IDLE_S + 2) * 1000);
  const idle = rss(d.proc.pid);
  rows.push(['  RSS MB settled (idle again)', `${idle}: ${rssParts(d.proc.pid)}`, 0, '-', '-']);
  // The release build's bounds (a sanitizer's allocator keeps far more).
  if (!process.env.ASAN_OPTIONS) {
    if (peak > RSS_PEAK_MB) fail(`RSS peaked at ${peak} MB under load (bound ${RSS_PEAK_MB} MB)`);
    if (idle > RSS_SETTLED_MB) fail(`RSS settled at ${idle} MB once idle (bound ${RSS_SETTLED_MB} MB)`);
  }
  await flood(d);
  const xvfb = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).find((p) => {
    try { return readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'Xvfb'; } catch { return false; }
  });
  await xFaults(d, Number(xvfb));
  await fixture.stop().catch(() => {});
} catch (e) {
  fail(`soak stopped: ${e.stack || e}`);
} finally {
  const t0 = performance.now();
  const r = await d.stop().catch((e) => { fail(String(e.message).slice(0, 2000)); return null; });
  const stopMs = performance.now() - t0;
  rows.push(['SIGTERM to exit (ms)', r ? `exit ${r.code}` : 'failed', 0, ms(stopMs), '-']);
  if (stopMs > 3000 * SLOW) fail(`SIGTERM took ${stopMs} ms`);
}

const w = [0, 1, 2, 3, 4].map((i) => Math.max(...[['what', 'calls', 'errors', 'p50 ms', 'p99 ms'], ...rows].map((r) => String(r[i]).length)));
const line = (r) => '| ' + r.map((c, i) => String(c).padEnd(w[i])).join(' | ') + ' |';
console.log(`\n### deskd soak (${SECONDS} s of mixed load, then faults)\n`);
console.log(line(['what', 'calls', 'errors', 'p50 ms', 'p99 ms']));
console.log('|' + w.map((x) => '-'.repeat(x + 2)).join('|') + '|');
for (const r of rows) console.log(line(r));
console.log(failures.length ? `\nsoak: ${failures.length} failures` : '\nsoak: passed');
process.exit(failures.length ? 1 : 0);
