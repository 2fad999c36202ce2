// MCP over Streamable HTTP: round-trip latency of ping, tools/list and a
// tools/call (SSE answer) on one keep-alive connection, and throughput with 8
// keep-alive clients (one session each) in parallel. Target: ping p50 < 0.3 ms.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { table, stats, fmt } from '../lib.mjs';
import { startXvfb, startDeskd } from '../../tests/integration/lib/harness.mjs';

const N = Number(process.env.BENCH_MCP_N || 2000);
const SECONDS = Number(process.env.BENCH_MCP_SECONDS || 3);

/** One client: its own keep-alive socket and MCP session. */
function client(deskd) {
  const url = new URL(deskd.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let session;
  let nextId = 1;
  const send = (msg) => new Promise((resolve, reject) => {
    const body = JSON.stringify(msg);
    const headers = {
      'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'content-length': Buffer.byteLength(body), authorization: `Bearer ${deskd.token}`,
    };
    if (session) { headers['mcp-session-id'] = session; headers['mcp-protocol-version'] = '2025-11-25'; }
    const req = http.request({ host: url.hostname, port: url.port, path: '/mcp', method: 'POST', agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
  return {
    async init() {
      const r = await send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
      session = r.headers['mcp-session-id'];
      await send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    },
    async call(method, params = {}) {
      const r = await send({ jsonrpc: '2.0', id: nextId++, method, params });
      if (r.status !== 200) throw new Error(`${method}: HTTP ${r.status} ${r.body}`);
      return r.body;
    },
    close: () => agent.destroy(),
  };
}

async function latency(c, method, params) {
  for (let i = 0; i < 100; i++) await c.call(method, params);
  const out = [];
  const n = method === 'tools/call' ? Math.min(N, 500) : N;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await c.call(method, params);
    out.push(performance.now() - t0);
  }
  return stats(out.sort((a, b) => a - b));
}

async function throughput(clients, method, params) {
  let count = 0;
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(clients.map(async (c) => {
    while (performance.now() < end) {
      await c.call(method, params);
      count++;
    }
  }));
  return count / SECONDS;
}

export default async function () {
  const x = await startXvfb();
  const deskd = await startDeskd({ display: x.display, args: ['--log-level', 'warning', '--conformance-fixtures'] });
  const clients = [];
  try {
    for (let i = 0; i < 8; i++) {
      const c = client(deskd);
      await c.init();
      clients.push(c);
    }
    const cases = [
      ['ping', 'ping', {}],
      ['tools/list', 'tools/list', {}],
      ['tools/call test_simple_text (SSE)', 'tools/call', { name: 'test_simple_text', arguments: {} }],
      ['tools/call status (SSE)', 'tools/call', { name: 'status', arguments: {} }],
    ];
    const rows = [];
    for (const [name, method, params] of cases) {
      const l = await latency(clients[0], method, params);
      const rps = await throughput(clients, method, params);
      rows.push([name, fmt(l.p50), fmt(l.p95), String(l.n), Math.round(rps).toString()]);
    }
    table(`MCP over HTTP, keep-alive; latency on 1 client, throughput with 8 clients for ${SECONDS} s (target: ping p50 < 0.3 ms)`,
      ['request', 'p50 ms', 'p95 ms', 'n', 'req/s (8 clients)'], rows);
  } finally {
    for (const c of clients) c.close();
    await deskd.stop();
    await x.stop();
  }
}
