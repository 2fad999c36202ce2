// The size of tools/list for each --tools surface: every MCP client sends it
// to the model on every turn, so its bytes are context the agent pays for
// (tokens ~ bytes / 4). Target: the default surface at most 16 KB.
import http from 'node:http';
import { table } from '../lib.mjs';
import { startXvfb, startDeskd } from '../../tests/integration/lib/harness.mjs';

const SURFACES = [['batch (default)', []], ['split', ['--tools', 'split']], ['both', ['--tools', 'both']]];

/** One JSON-RPC request on POST /mcp; the message, from JSON or SSE. */
function rpc(deskd, msg, session) {
  const url = new URL('/mcp', deskd.url);
  const body = JSON.stringify(msg);
  const headers = deskd.headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream' });
  if (session) Object.assign(headers, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => {
        const data = text.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => l.slice(6));
        const json = data.length ? data[data.length - 1] : text;
        resolve({ session: res.headers['mcp-session-id'], message: json ? JSON.parse(json) : null });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function listTools(deskd) {
  const init = await rpc(deskd, { jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
  const session = init.session;
  await rpc(deskd, { jsonrpc: '2.0', method: 'notifications/initialized' }, session);
  const tools = [];
  let bytes = 0, cursor, id = 2;
  do {
    const { message } = await rpc(deskd, { jsonrpc: '2.0', id: id++, method: 'tools/list', params: cursor ? { cursor } : {} }, session);
    bytes += Buffer.byteLength(JSON.stringify(message.result));
    tools.push(...message.result.tools);
    cursor = message.result.nextCursor;
  } while (cursor);
  return { tools, bytes };
}

export default async function () {
  const x = await startXvfb();
  const rows = [];
  try {
    for (const [name, args] of SURFACES) {
      const deskd = await startDeskd({ display: x.display, args: ['--log-level', 'warning', ...args] });
      try {
        const { tools, bytes } = await listTools(deskd);
        const largest = tools.map((t) => [t.name, Buffer.byteLength(JSON.stringify(t))]).sort((a, b) => b[1] - a[1])[0];
        rows.push([name, String(tools.length), String(bytes), `~${Math.round(bytes / 4)}`, `${largest[0]} (${largest[1]} B)`]);
      } finally {
        await deskd.stop();
      }
    }
    table('tools/list size per --tools surface, compact JSON, all pages (target: default <= 16384 bytes)',
      ['--tools', 'tools', 'bytes', 'tokens (bytes/4)', 'largest tool'], rows);
  } finally {
    await x.stop();
  }
}
