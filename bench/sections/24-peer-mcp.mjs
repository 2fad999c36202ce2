// deskd beside computer-use-mcp (npm, bench/peers; PEERS.md's most used MCP
// peer), both over MCP stdio through the official SDK client, on one Xvfb
// with the fixture full screen: the spawn to the initialize reply, a click
// at a coordinate, a key, a screenshot, and each server's RSS after them,
// in alternating rounds. Ratios are the peer's p50 over deskd's. Skipped
// when bench/peers is not installed (scripts/npm-deps bench/peers).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { table, stats, fmt, loadFromTests } from '../lib.mjs';
import { startXvfb, startFixture, tempDir, sleep, ROOT } from '../../tests/integration/lib/harness.mjs';

const ROUNDS = Number(process.env.BENCH_PEER_ROUNDS || 4);
const PER_ROUND = Number(process.env.BENCH_PEER_N || 15);
const PEER = join(ROOT, 'bench/peers/node_modules/computer-use-mcp/dist/main.js');

/** An SDK client on a server it spawns; its pid for the RSS and the stop. */
async function connect(name, command, args, env) {
  const { Client } = await loadFromTests('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await loadFromTests('@modelcontextprotocol/sdk/client/stdio.js');
  const t0 = performance.now();
  const transport = new StdioClientTransport({ command, args, env, stderr: 'ignore' });
  const client = new Client({ name: 'bench-peer', version: '1' }, { capabilities: {} });
  await client.connect(transport);
  const startup = performance.now() - t0;
  const pid = transport.pid;
  const call = async (tool, a) => {
    const r = await client.callTool({ name: tool, arguments: a }, undefined, { timeout: 30000 });
    if (r.isError) throw new Error(`${name} ${tool}: ${JSON.stringify(r).slice(0, 300)}`);
    return r;
  };
  const rss = () => {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  };
  const stop = async () => {
    await client.close().catch(() => {});
    for (let i = 0; i < 50 && existsSync(`/proc/${pid}`); i++) await sleep(20);
    try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  };
  return { name, startup, call, rss, stop };
}

export default async function () {
  if (!existsSync(PEER)) {
    console.log('\n### MCP peers: skipped (bench/peers is not installed: scripts/npm-deps bench/peers)');
    return;
  }
  const x = await startXvfb({ width: 1280, height: 800 });
  const fixture = await startFixture(x.display, { geometry: '1280x800+0+0' });
  const env = { ...process.env, DISPLAY: x.display };
  delete env.WAYLAND_DISPLAY;
  const servers = [];
  try {
    servers.push(await connect('deskd', process.env.DESKD_BIN || join(ROOT, 'deskd'),
      ['--stdio', '--display', x.display, '--data-dir', tempDir('deskd-bench-peer-'), '--log-level', 'warning'], env));
    servers.push(await connect('computer-use-mcp', process.execPath, [PEER], env));   // spawns: -
    const [deskd, peer] = servers;
    let k = 0;
    const point = () => [200 + (k % 600), 150 + ((k++ * 7) % 400)];
    // The same effect through each one's vocabulary.
    const ops = {
      click: {
        deskd: ([cx, cy]) => deskd.call('computer_use', { actions: [{ type: 'click', x: cx, y: cy }] }),
        'computer-use-mcp': ([cx, cy]) => peer.call('computer', { action: 'left_click', coordinate: [cx, cy] }),
      },
      'key shift+F5': {
        deskd: () => deskd.call('computer_use', { actions: [{ type: 'keypress', keys: ['shift', 'F5'] }] }),
        'computer-use-mcp': () => peer.call('computer', { action: 'key', text: 'shift+F5' }),
      },
      // The pointer drawn (never cached), as the peer draws a crosshair.
      'screenshot, the pointer drawn': {
        deskd: () => deskd.call('screenshot', { cursor: true }),
        'computer-use-mcp': () => peer.call('computer', { action: 'get_screenshot' }),
      },
    };
    const rows = [];
    for (const [label, by] of Object.entries(ops)) {
      const times = { deskd: [], 'computer-use-mcp': [] };
      const n = /screenshot/.test(label) ? 3 : PER_ROUND;
      for (const name of Object.keys(by)) await by[name](point());   // warm
      for (let r = 0; r < ROUNDS; r++) {
        for (const name of r % 2 ? Object.keys(by).reverse() : Object.keys(by)) {
          for (let i = 0; i < n; i++) {
            const p = point();
            const t0 = performance.now();
            await by[name](p);
            times[name].push(performance.now() - t0);
          }
        }
      }
      const d = stats(times.deskd.sort((a, b) => a - b)), q = stats(times['computer-use-mcp'].sort((a, b) => a - b));
      rows.push([label, `${fmt(d.p50)} / ${fmt(d.p95)}`, `${fmt(q.p50)} / ${fmt(q.p95)}`, `${(q.p50 / d.p50).toFixed(1)}x`, String(d.n)]);
      // computer-use-mcp sleeps 1 s before every grab; what is left is its work.
      if (/screenshot/.test(label)) rows.push(['  the same, less its fixed 1 s sleep', '', fmt(q.p50 - 1000), `${((q.p50 - 1000) / d.p50).toFixed(1)}x`, '']);
    }
    // Both clicked where they were told: the fixture saw the last click of each.
    const last = [300, 333];
    for (const name of Object.keys(ops.click)) {
      await ops.click[name](last);
      const got = await fixture.waitFor((s) => {
        const e = s.events.filter((v) => v.type === 'button_press').at(-1);
        return e && e.root_x === last[0] && e.root_y === last[1];
      }, { timeout: 5000 }).then(() => 'yes', () => 'NO');
      rows.push([`  ${name}'s click reached the app at (${last})`, name === 'deskd' ? got : '', name === 'deskd' ? '' : got, '', '']);
      last[1]++;
    }
    rows.push(['spawn to the initialize reply (ms, one start)', fmt(deskd.startup), fmt(peer.startup), `${(peer.startup / deskd.startup).toFixed(1)}x`, '1']);
    rows.push(['RSS after these calls (MiB)', deskd.rss().toFixed(0), peer.rss().toFixed(0), `${(peer.rss() / deskd.rss()).toFixed(1)}x`, '']);
    table(`MCP servers over stdio through the SDK client, 1280x800 Xvfb (ms p50 / p95; ${ROUNDS} alternating rounds)`,
      ['call', 'deskd', 'computer-use-mcp 1.8.0', 'computer-use-mcp / deskd', 'n each'], rows);
  } finally {
    for (const s of servers.reverse()) await s.stop();
    await fixture.stop();
    await x.stop();
  }
}
