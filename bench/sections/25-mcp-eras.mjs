// The two MCP eras side by side on one deskd: tools/call of status and
// screenshot (a 1280x800 screen with the fixture's gradient, answered from the
// screenshot cache) and tools/list, as a legacy 2025-11-25 session (SSE
// answer) and as stateless 2026-07-28 requests (_meta and the standard
// headers on every request, a plain JSON answer). Rounds alternate so both
// see the same machine load. The stateless path should not be slower.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { table, stats, fmt } from '../lib.mjs';
import { startXvfb, startDeskd, startFixture } from '../../tests/integration/lib/harness.mjs';

const ROUNDS = Number(process.env.BENCH_ERAS_ROUNDS || 6);
const PER_ROUND = Number(process.env.BENCH_ERAS_N || 60);
const V = '2026-07-28';

function transport(deskd) {
  const url = new URL(deskd.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const send = (msg, extra) => new Promise((resolve, reject) => {
    const body = JSON.stringify(msg);
    const headers = {
      'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'content-length': Buffer.byteLength(body), authorization: `Bearer ${deskd.token}`, ...extra,
    };
    const req = http.request({ host: url.hostname, port: url.port, path: '/mcp', method: 'POST', agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
  return { send, close: () => agent.destroy() };
}

async function legacyClient(deskd) {
  const t = transport(deskd);
  const r = await t.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
  const session = r.headers['mcp-session-id'];
  const h = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
  await t.send({ jsonrpc: '2.0', method: 'notifications/initialized' }, h);
  let id = 1;
  return {
    async call(method, params) {
      const res = await t.send({ jsonrpc: '2.0', id: id++, method, params }, h);
      if (res.status !== 200 || !res.body.includes('"result"')) throw new Error(`legacy ${method}: ${res.status} ${res.body.slice(0, 200)}`);
    },
    close: t.close,
  };
}

function modernClient(deskd) {
  const t = transport(deskd);
  let id = 1;
  return {
    async call(method, params) {
      const msg = { jsonrpc: '2.0', id: id++, method, params: { ...params, _meta: {
        'io.modelcontextprotocol/protocolVersion': V,
        'io.modelcontextprotocol/clientCapabilities': {},
        'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' } } } };
      const h = { 'mcp-protocol-version': V, 'mcp-method': method };
      if (params.name) h['mcp-name'] = params.name;
      const res = await t.send(msg, h);
      if (res.status !== 200 || !res.body.includes('"result"')) throw new Error(`modern ${method}: ${res.status} ${res.body.slice(0, 200)}`);
    },
    close: t.close,
  };
}

export default async function () {
  const x = await startXvfb();
  const fixture = await startFixture(x.display, { geometry: '1280x800+0+0' });
  const deskd = await startDeskd({ display: x.display, args: ['--log-level', 'warning'] });
  const legacy = await legacyClient(deskd);
  const modern = modernClient(deskd);
  try {
    const cases = [
      ['tools/call status', 'tools/call', { name: 'status', arguments: {} }],
      ['tools/call screenshot (cached PNG)', 'tools/call', { name: 'screenshot', arguments: {} }],
      ['tools/list', 'tools/list', {}],
    ];
    const rows = [];
    for (const [name, method, params] of cases) {
      for (let i = 0; i < 20; i++) {
        await legacy.call(method, params);
        await modern.call(method, params);
      }
      const times = { legacy: [], modern: [] };
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 ? ['modern', 'legacy'] : ['legacy', 'modern'];
        for (const era of order) {
          const c = era === 'legacy' ? legacy : modern;
          for (let i = 0; i < PER_ROUND; i++) {
            const t0 = performance.now();
            await c.call(method, params);
            times[era].push(performance.now() - t0);
          }
        }
      }
      const l = stats(times.legacy.sort((a, b) => a - b));
      const m = stats(times.modern.sort((a, b) => a - b));
      rows.push([name, fmt(l.p50), fmt(l.p95), fmt(m.p50), fmt(m.p95), (m.p50 / l.p50).toFixed(2), String(l.n)]);
    }
    table(`MCP eras on one deskd: a 2025-11-25 session vs stateless 2026-07-28, ${ROUNDS} alternating rounds of ${PER_ROUND} calls (the stateless path should not be slower: ratio <= 1)`,
      ['request', 'session p50 ms', 'session p95 ms', 'stateless p50 ms', 'stateless p95 ms', 'stateless/session p50', 'n each'], rows);
  } finally {
    legacy.close();
    modern.close();
    await deskd.stop();
    await fixture.stop();
    await x.stop();
  }
}
