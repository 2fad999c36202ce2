// MCP through the official SDK clients (v1 @modelcontextprotocol/sdk and
// v2 @modelcontextprotocol/client, both over Streamable HTTP, 2025-11-25
// sessions) beside the same calls over REST, in alternating rounds on one
// deskd: a cached screenshot (1280x800, the fixture's gradient) and a
// pointer move. A call that sends nothing before its result is answered as
// plain JSON, not as an SSE stream, so a client pays little over REST:
// the goal is MCP screenshot p50 within 1.3x of REST's.
import { performance } from 'node:perf_hooks';
import { table, stats, fmt, loadFromTests } from '../lib.mjs';
import { startXvfb, startDeskd, startFixture } from '../../tests/integration/lib/harness.mjs';

const ROUNDS = Number(process.env.BENCH_SDK_ROUNDS || 6);
const PER_ROUND = Number(process.env.BENCH_SDK_N || 40);

async function sdkClients(deskd) {
  const { Client } = await loadFromTests('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await loadFromTests('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const v2 = await loadFromTests('@modelcontextprotocol/client');
  const headers = { Authorization: `Bearer ${deskd.token}` };
  const url = new URL(deskd.url + '/mcp');
  const c1 = new Client({ name: 'bench-sdk-v1', version: '1' }, { capabilities: {} });
  await c1.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  const c2 = new v2.Client({ name: 'bench-sdk-v2', version: '1' }, { capabilities: {} });
  await c2.connect(new v2.StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  const viaSdk = (c) => async (name, args) => {
    const r = await c.callTool({ name, arguments: args });
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r).slice(0, 200)}`);
  };
  return { v1: viaSdk(c1), v2: viaSdk(c2), close: async () => { await c1.close(); await c2.close(); } };
}

export default async function () {
  const x = await startXvfb();
  const fixture = await startFixture(x.display, { geometry: '1280x800+0+0' });
  const deskd = await startDeskd({ display: x.display, args: ['--log-level', 'warning'] });
  const sdk = await sdkClients(deskd);
  const rest = async (name, args) => {
    const r = await deskd.fetch(`/api/v1/tools/${name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(args) });
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`REST ${name}: ${r.status}`);
  };
  const routes = { rest, 'SDK v1': sdk.v1, 'SDK v2': sdk.v2 };
  try {
    let mx = 100;
    const cases = [
      ['screenshot (cached PNG)', 'screenshot', () => ({})],
      ['pointer move (computer_use)', 'computer_use', () => ({ actions: [{ type: 'move', x: 100 + (mx++ % 400), y: 200 }] })],
    ];
    const rows = [];
    for (const [label, tool, args] of cases) {
      for (const f of Object.values(routes))
        for (let i = 0; i < 10; i++) await f(tool, args());
      const times = Object.fromEntries(Object.keys(routes).map((k) => [k, []]));
      for (let round = 0; round < ROUNDS; round++) {
        const order = Object.keys(routes);
        if (round % 2) order.reverse();
        for (const k of order) {
          for (let i = 0; i < PER_ROUND; i++) {
            const t0 = performance.now();
            await routes[k](tool, args());
            times[k].push(performance.now() - t0);
          }
        }
      }
      const s = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, stats(v.sort((a, b) => a - b))]));
      for (const k of Object.keys(routes))
        rows.push([label, k, fmt(s[k].p50), fmt(s[k].p95), (s[k].p50 / s.rest.p50).toFixed(2), String(s[k].n)]);
    }
    table(`MCP through the SDK clients vs REST, ${ROUNDS} alternating rounds of ${PER_ROUND} calls (goal: SDK screenshot p50 <= 1.3x REST)`,
      ['call', 'route', 'p50 ms', 'p95 ms', 'p50 / REST', 'n'], rows);
  } finally {
    await sdk.close();
    await deskd.stop();
    await fixture.stop();
    await x.stop();
  }
}
