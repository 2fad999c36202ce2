// A small /live client for tests and benchmarks: collects hello, frames
// (header + JPEG), cursor updates, events and errors.
import WebSocket from 'ws';
import { readFileSync } from 'node:fs';
import { waitUntil } from './harness.mjs';

/** Open /live on a started deskd. opts: token (default the person's,
 *  deskd.personToken, since /live is the dashboard's; null for none), via: 'protocol' | 'query', origin, protocols (override). Resolves
 *  once open; rejects with err.status on a refused handshake. */
export function openLive(deskd, { token = deskd.personToken ?? deskd.token, via = 'protocol', origin, protocols } = {}) {
  const base = deskd.url.replace(/^http/, 'ws') + '/live';
  const url = via === 'query' && token ? `${base}?token=${encodeURIComponent(token)}` : base;
  const protos = protocols || (via === 'protocol' && token ? ['deskd.live', `bearer.${token}`] : ['deskd.live']);
  const ws = new WebSocket(url, protos, origin ? { origin } : {});
  const c = {
    ws, hello: null, frames: [], texts: [], events: [], errors: [], cursors: [],
    binaries: 0, bytes: 0, pendingHeader: null, keepJpegs: true,
    /** Send a watch message. */
    watch(msg = {}) { ws.send(JSON.stringify({ type: 'watch', ...msg })); },
    /** Wait until pred(c) is truthy. */
    until(pred, opts = {}) { return waitUntil(() => pred(c), { what: 'live messages', ...opts }); },
    close() { try { ws.terminate(); } catch { /* gone */ } },
  };
  ws.on('message', (data, isBinary) => {
    if (isBinary) {
      c.binaries++;
      c.bytes += data.length;
      const header = c.pendingHeader;
      c.pendingHeader = null;
      if (!header) { c.errors.push({ type: 'error', code: 'binary_without_header' }); return; }
      c.frames.push({ header, jpeg: c.keepJpegs ? data : null, size: data.length, at: Date.now() });
      return;
    }
    const m = JSON.parse(data.toString());
    c.texts.push(m);
    if (m.type === 'hello') c.hello = m;
    else if (m.type === 'frame') {
      if (c.pendingHeader) c.errors.push({ type: 'error', code: 'header_without_binary' });
      c.pendingHeader = m;
    } else if (m.type === 'event') c.events.push(m);
    else if (m.type === 'cursor') c.cursors.push(m);
    else if (m.type === 'error') c.errors.push(m);
  });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(c));
    ws.once('unexpected-response', (req, res) => {
      const e = new Error(`handshake refused: ${res.statusCode}`);
      e.status = res.statusCode;
      reject(e);
    });
    ws.once('error', (e) => reject(e));
  });
}

/** Width and height from a JPEG's SOF marker. */
export function jpegSize(buf) {
  if (buf[0] !== 0xff || buf[1] !== 0xd8) throw new Error('not a JPEG');
  let i = 2;
  while (i + 9 < buf.length) {
    if (buf[i] !== 0xff) { i++; continue; }
    const marker = buf[i + 1];
    const len = buf.readUInt16BE(i + 2);
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: buf.readUInt16BE(i + 5), width: buf.readUInt16BE(i + 7) };
    }
    i += 2 + len;
  }
  throw new Error('no SOF marker');
}

/** Counters of a Prometheus text exposition: { name: value } (labels kept in the key). */
export async function metrics(deskd) {
  const r = await deskd.fetch('/metrics');
  const text = await r.text();
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^(\S+)\s+(\S+)/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

/** utime + stime of a process in seconds, and its VmRSS in KiB. */
export function procStats(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(f[11]) + Number(f[12]);
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
  return { cpu: ticks / 100, rss };
}
