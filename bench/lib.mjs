// Shared helpers for make bench: timing, percentiles and plain-text tables.
import { performance } from 'node:perf_hooks';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The packages of tests/node_modules (the bench has none of its own but
 *  its peers, bench/peers): require() for CommonJS, loadFromTests for ES
 *  modules. */
const ROOT = new URL('..', import.meta.url).pathname;
export const requireFromTests = createRequire(join(ROOT, 'tests', 'package.json'));
export const loadFromTests = (spec) => import(pathToFileURL(requireFromTests.resolve(spec)).href);

/** Run fn(i) n times (after warmup runs, i < 0); returns sorted durations
 *  in ms. before(i), if given, runs untimed ahead of each (a change the
 *  call then has to see). */
export async function time(fn, { n = 200, warmup = 10, before = null } = {}) {
  const out = [];
  for (let i = -warmup; i < n; i++) {
    if (before) await before(i);
    const t0 = performance.now();
    await fn(i);
    if (i >= 0) out.push(performance.now() - t0);
  }
  return out.sort((a, b) => a - b);
}

export function pct(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function stats(sorted) {
  return { p50: pct(sorted, 50), p95: pct(sorted, 95), n: sorted.length };
}

export const fmt = (ms) => (ms < 1 ? ms.toFixed(3) : ms < 100 ? ms.toFixed(2) : ms.toFixed(0));

/** Print a table: header array + rows of arrays. */
export function table(title, header, rows) {
  const all = [header, ...rows].map((r) => r.map(String));
  const w = header.map((_, i) => Math.max(...all.map((r) => (r[i] || '').length)));
  const line = (r) => '| ' + r.map((c, i) => (c || '').padEnd(w[i])).join(' | ') + ' |';
  console.log(`\n### ${title}\n`);
  console.log(line(all[0]));
  console.log('|' + w.map((x) => '-'.repeat(x + 2)).join('|') + '|');
  for (const r of all.slice(1)) console.log(line(r));
}

/** Is a command on PATH? */
export function have(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

// A keep-alive node:http client: fetch() adds about a millisecond per call
// (more with large bodies) of its own, which would hide what deskd costs.
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function request(deskd, method, path, body, headers = {}) {
  const url = new URL(path, deskd.url);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, agent, headers: deskd.headers(headers) }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** POST /api/v1/tools/NAME; resolves to the whole tool result (parsed JSON). */
export async function toolCall(deskd, name, args = {}) {
  const body = JSON.stringify(args);
  const r = await request(deskd, 'POST', `/api/v1/tools/${name}`, body,
    { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  const text = r.body.toString();
  if (r.status !== 200) throw new Error(`${name}: ${r.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** GET a path; resolves to the body bytes (throws unless 200). */
export async function getBytes(deskd, path) {
  const r = await request(deskd, 'GET', path);
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.body.toString().slice(0, 300)}`);
  return r.body;
}

/** PUT bytes to a path; resolves to the answer's JSON (throws unless 200). */
export async function putBytes(deskd, path, bytes) {
  const r = await request(deskd, 'PUT', path, bytes, { 'content-length': bytes.length });
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.body.toString().slice(0, 300)}`);
  return JSON.parse(r.body.toString());
}
