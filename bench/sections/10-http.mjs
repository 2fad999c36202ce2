// HTTP: startup-to-ready time, idle memory, and /healthz throughput and
// latency over 8 keep-alive connections (per libmicrohttpd thread-pool size).
import http from 'node:http';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stats, fmt, table, have } from '../lib.mjs';
import { launch, startXvfb, tempDir } from '../../tests/integration/lib/harness.mjs';

const DESKD = process.env.DESKD_BIN;

async function startDeskd(display, env = {}) {
  const dir = tempDir('deskd-bench-');
  const ready = join(dir, 'ready.json');
  const cleanEnv = { ...process.env, ...env };
  delete cleanEnv.DISPLAY;
  const t0 = performance.now();
  const p = launch('deskd', DESKD, ['--listen', '127.0.0.1:0', '--ready-file', ready, '--data-dir', dir,
    '--display', display, '--token', 'bench-token', '--log-level', 'warning'], { env: cleanEnv });
  for (;;) {
    if (existsSync(ready)) {
      try {
        const info = JSON.parse(readFileSync(ready, 'utf8'));
        return { p, url: info.url, ms: performance.now() - t0, dir };
      } catch { /* being renamed into place */ }
    }
    if (p.proc.exitCode !== null) throw new Error('deskd exited: ' + p.log.join(''));
    if (performance.now() - t0 > 15000) throw new Error('deskd did not get ready');
    await sleep(1);
  }
}

function rssKb(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return m ? Number(m[1]) : NaN;
}

/** n GETs over `conns` keep-alive connections; latencies (ms) and req/s. */
async function load(url, path, { n = 20000, conns = 8 } = {}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: conns });
  const sockets = new Set();
  const lat = [];
  let next = 0;
  const one = () => new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.get(url + path, { agent }, (res) => {
      res.resume();
      res.on('end', () => { lat.push(performance.now() - t0); resolve(); });
    });
    req.on('socket', (s) => sockets.add(s));
    req.on('error', reject);
  });
  const worker = async () => { while (next++ < n) await one(); };
  // warm up
  for (let i = 0; i < 200; i++) await one();
  lat.length = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: conns }, worker));
  const secs = (performance.now() - t0) / 1000;
  agent.destroy();
  return { lat: lat.sort((a, b) => a - b), rps: lat.length / secs, sockets: sockets.size };
}

export default async function () {
  if (!DESKD) throw new Error('DESKD_BIN is not set');
  const x = await startXvfb();
  try {
    // Startup to ready, p50 of 10.
    const starts = [];
    const rss = [];
    for (let i = 0; i < 10; i++) {
      const d = await startDeskd(x.display);
      starts.push(d.ms);
      if (i === 0) {
        await sleep(500);
        rss.push(rssKb(d.p.proc.pid));
      }
      await d.p.stop();
      rmSync(d.dir, { recursive: true, force: true });
    }
    const s = stats(starts.sort((a, b) => a - b));
    table('deskd startup and memory', ['metric', 'value'], [
      ['startup to ready, p50 (ms, 10 starts)', fmt(s.p50)],
      ['startup to ready, p95 (ms)', fmt(s.p95)],
      ['idle RSS (MiB)', (rss[0] / 1024).toFixed(1)],
    ]);

    const rows = [];
    for (const threads of ['1', '2', '4']) {
      const d = await startDeskd(x.display, { DESKD_HTTP_THREADS: threads });
      const r = await load(d.url, '/healthz');
      const st = stats(r.lat);
      rows.push([threads, String(r.lat.length), String(r.sockets), Math.round(r.rps).toString(), fmt(st.p50), fmt(st.p95)]);
      await d.p.stop();
      rmSync(d.dir, { recursive: true, force: true });
    }
    table('GET /healthz, 8 keep-alive connections (node client on the same host)',
      ['MHD threads', 'requests', 'sockets', 'req/s', 'p50 ms', 'p95 ms'], rows);
    if (have('wrk')) console.log('\n(wrk is installed but not wired in yet)');
  } finally {
    await x.stop();
  }
}
