#!/usr/bin/env node
// Writes MCP tools/list, exactly as deskd sends it (every page, one response
// per line), for each tool surface: DIR/batch.json, DIR/split.json,
// DIR/both.json. Run it before and after a change to the tool tables or to
// tools/schemas/ and compare the directories (cmp): the schemas are data,
// and a refactoring of them must not change a byte.
//   scripts/dump-tools-list.mjs DIR [DESKD]
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const [dir, deskd = './deskd'] = process.argv.slice(2);
if (!dir || dir.startsWith('-')) {
	console.error('usage: dump-tools-list.mjs DIR [DESKD]');
	process.exit(2);
}
mkdirSync(dir, { recursive: true });

function dump(surface) {
	const data = mkdtempSync(join(tmpdir(), 'dump-tools-list-'));
	// No display: tools/list needs none. A compositor socket that cannot
	// exist is never reached (and names no X display someone may run).
	// spawns: - (the deskd given)
	const child = spawn(deskd, ['--stdio', '--wayland-display', join(data, 'no-such-socket'),
		'--data-dir', data, '--tools', surface], { stdio: ['pipe', 'pipe', 'ignore'] });
	const send = (msg) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');
	const pages = [];
	let id = 1;
	return new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`${surface}: no answer`)), 20000);
		createInterface({ input: child.stdout }).on('line', (line) => {
			const msg = JSON.parse(line);
			if (msg.id === 1) {
				send({ method: 'notifications/initialized' });
				send({ id: ++id, method: 'tools/list', params: {} });
			} else if (msg.id === id) {
				pages.push(line);
				if (msg.result?.nextCursor) {
					send({ id: ++id, method: 'tools/list', params: { cursor: msg.result.nextCursor } });
				} else {
					clearTimeout(timer);
					child.stdin.end();
				}
			}
		});
		child.on('exit', () => {
			rmSync(data, { recursive: true, force: true });
			clearTimeout(timer);
			resolve(pages);
		});
		send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18',
			capabilities: {}, clientInfo: { name: 'dump-tools-list', version: '1' } } });
	});
}

for (const surface of ['batch', 'split', 'both']) {
	const pages = await dump(surface);
	if (!pages.length)
		throw new Error(`${surface}: no tools/list answer`);
	const file = join(dir, `${surface}.json`);
	writeFileSync(file, pages.join('\n') + '\n');
	const tools = pages.reduce((n, p) => n + JSON.parse(p).result.tools.length, 0);
	console.log(`${file}: ${tools} tools, ${pages.length} page(s)`);
}
