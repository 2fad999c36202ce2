// make image-test: runs the image built by `make image` and checks it from
// the host, then plays deploy/k8s with podman kube play. Run by
// `scripts/image test`, which installs what is needed and builds the image.
//
// Traffic goes only to 127.0.0.1: the container's port is published on a
// free port of the host's loopback, and a kube pod is reached on its own
// loopback (nsenter into its network namespace). Every wait is bounded;
// everything started is removed at the end, also on failure.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const E = process.env.IMAGE_ENGINE || 'podman';
const IMAGE = process.env.DESKD_IMAGE || 'deskd:latest';
const MAX_MB = Number(process.env.IMAGE_MAX_MB || 350);
const TAG = `deskd-image-test-${process.pid}`;
const TMP = mkdtempSync(join(tmpdir(), 'deskd-image-test-'));
const REPORT = join(ROOT, 'build', 'image-test.txt');
const TYPED = 'deskd typed: héllo wörld 123';

const rows = [];      // the summary: [check, result, detail, seconds]
const notes = [];     // lines printed under it
const cleanups = [];  // run in reverse order at the end

/** Run the engine (or another command) with a time limit; throws unless it
 *  exits 0 (or allowFail). */
function run(args, { cmd = E, timeout = 60000, allowFail = false, encoding = 'utf8', input, cwd = TMP } = {}) {
  // spawns: podman ffprobe nsenter (the engine is podman unless IMAGE_ENGINE says docker)
  const r = spawnSync(cmd, args, { encoding, timeout, input, cwd, maxBuffer: 256 << 20 });
  if (!allowFail && r.status !== 0) {
    const err = encoding === 'utf8' ? r.stderr : r.stderr?.toString();
    throw new Error(`${cmd} ${args.join(' ')}: ${r.error ? r.error.message : `exit ${r.status}`}\n${(err || '').slice(-2000)}`);
  }
  return r;
}
const out = (args, opts) => run(args, opts).stdout.trim();

/** A test that adds a row to the summary; fn returns the detail. */
function check(name, fn, opts = {}) {
  test(name, opts, async (t) => {
    const t0 = Date.now();
    try {
      const detail = await fn(t);
      rows.push([name, 'ok', detail || '', (Date.now() - t0) / 1000]);
    } catch (e) {
      rows.push([name, 'FAIL', String(e.message).split('\n')[0].slice(0, 100), (Date.now() - t0) / 1000]);
      throw e;
    }
  });
}

async function waitFor(what, fn, { timeout = 10000, interval = 100 } = {}) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await sleep(interval);
  }
}

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
  });
}

function pngSize(buf) {
  assert.ok(buf.length > 24 && buf.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'a PNG');
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

/** The cgroup of a host pid: memory now, its working set (now less the
 *  inactive page cache: what Kubernetes counts against a limit), the peak
 *  (bytes, page cache included), and the CPU used (s). */
function cgroupStats(pid) {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n');
  const v1 = lines.find((l) => /^\d+:memory:/.test(l));
  const read = (p) => { try { return Number(readFileSync(p, 'utf8').trim()); } catch { return NaN; } };
  const field = (p, key) => {
    try { return Number((readFileSync(p, 'utf8').match(new RegExp(`^${key} (\\d+)$`, 'm')) || [])[1]); } catch { return NaN; }
  };
  if (v1) {
    const mem = `/sys/fs/cgroup/memory${v1.split(':')[2]}`;
    const cpuLine = lines.find((l) => /^\d+:[^:]*cpuacct[^:]*:/.test(l));
    const cpuDir = cpuLine ? `/sys/fs/cgroup/${cpuLine.split(':')[1]}${cpuLine.split(':')[2]}` : null;
    const now = read(`${mem}/memory.usage_in_bytes`);
    return { now, ws: now - field(`${mem}/memory.stat`, 'total_inactive_file'),
      peak: read(`${mem}/memory.max_usage_in_bytes`), cpu: cpuDir ? read(`${cpuDir}/cpuacct.usage`) / 1e9 : NaN };
  }
  const dir = `/sys/fs/cgroup${lines.find((l) => l.startsWith('0::')).slice(3)}`;
  const now = read(`${dir}/memory.current`);
  return { now, ws: now - field(`${dir}/memory.stat`, 'inactive_file'), peak: read(`${dir}/memory.peak`),
    cpu: field(`${dir}/cpu.stat`, 'usage_usec') / 1e6 };
}
const mib = (b) => (Number.isFinite(b) ? `${Math.round(b / 1048576)} MiB` : '?');

// Every process in a container (its /proc/PID/stat): [{pid, comm, state, ppid}].
function processes(ctr) {
  const text = out(['exec', ctr, 'sh', '-c', 'for f in /proc/[0-9]*/stat; do cat "$f" 2>/dev/null; echo; done']);
  return text.split('\n').filter(Boolean).map((s) => {
    const close = s.lastIndexOf(')');
    const rest = s.slice(close + 2).split(' ');
    return { pid: Number(s.slice(0, s.indexOf(' '))), comm: s.slice(s.indexOf('(') + 1, close), state: rest[0], ppid: Number(rest[1]) };
  });
}

// ---------------------------------------------------------------- one container

const C = { name: TAG, volume: TAG, port: 0, url: '', token: '', person: '' };
const H = () => ({ authorization: `Bearer ${C.token}` });
async function get(path, { auth = true, timeout = 15000 } = {}) {
  return fetch(C.url + path, { headers: auth ? H() : {}, signal: AbortSignal.timeout(timeout) });
}
async function tool(name, args = {}) {
  const r = await fetch(`${C.url}/api/v1/tools/${name}`, { method: 'POST', signal: AbortSignal.timeout(30000),
    headers: { ...H(), 'content-type': 'application/json' }, body: JSON.stringify(args) });
  const body = await r.json();
  if (r.status !== 200) throw new Error(`${name}: ${r.status} ${JSON.stringify(body)}`);
  return body.structuredContent;
}
const logs = () => { const r = run(['logs', C.name], { allowFail: true }); return r.stdout + r.stderr; };
const hostPid = (ctr) => Number(out(['inspect', '--format', '{{.State.Pid}}', ctr]));

before(async () => {
  mkdirSync(join(ROOT, 'build'), { recursive: true });
  run(['image', 'inspect', IMAGE], { timeout: 30000 });
  C.port = await freePort();
  C.url = `http://127.0.0.1:${C.port}`;
  cleanups.push(() => run(['rm', '-f', '-v', '-t', '0', C.name], { allowFail: true, timeout: 60000 }));
  cleanups.push(() => run(['volume', 'rm', '-f', C.volume], { allowFail: true }));
  const t0 = Date.now();
  run(['run', '-d', '--name', C.name, '-p', `127.0.0.1:${C.port}:7800`, '-v', `${C.volume}:/state`, IMAGE,
    '--log-level', 'debug', '--launch', "xterm -e sh -c 'cat > /tmp/typed'"], { timeout: 60000 });
  await waitFor('/healthz', async () => (await get('/healthz', { auth: false, timeout: 2000 })).status === 200,
    { timeout: 30000 }).catch((e) => { throw new Error(`${e.message}\n${logs()}`); });
  C.startToHealthy = (Date.now() - t0) / 1000;
  C.token = out(['exec', C.name, 'cat', '/state/token']);
  C.person = out(['exec', C.name, 'cat', '/state/person-token']);
  C.pid = hostPid(C.name);
  await sleep(1000);
  C.idle = cgroupStats(C.pid);
});

check('image size', () => {
  const size = Number(out(['image', 'inspect', '--format', '{{.Size}}', IMAGE]));
  const layers = out(['history', '--no-trunc', '--format', '{{.Size}}\t{{.CreatedBy}}', IMAGE]).split('\n')
    .filter((l) => !/^0 B\t/.test(l)).map((l) => `  ${l.replace(/\s+/g, ' ').replace(/^(\S+ \S+) \/bin\/sh -c (#\(nop\) )?/, '$1 ').replace(/file:[0-9a-f]{64} /, '').slice(0, 110)}`);
  notes.push(`${IMAGE} by layer (non-empty):`, ...layers);
  assert.ok(size <= MAX_MB * 1e6, `${(size / 1e6).toFixed(0)} MB is over ${MAX_MB} MB`);
  return `${(size / 1e6).toFixed(0)} MB (limit ${MAX_MB} MB)`;
});

check('start to healthy', async () => {
  const r = await get('/healthz', { auth: false });
  assert.equal((await r.text()).trim(), 'ok');
  return `${C.startToHealthy.toFixed(1)} s to /healthz 200; idle working set ${mib(C.idle.ws)}`;
});

check('HEALTHCHECK kept (docker format) and passing', async () => {
  const hc = out(['inspect', '--format', '{{json .Config.Healthcheck}}', C.name]);
  assert.match(hc, /healthz/, `the image has no HEALTHCHECK: ${hc}`);
  if (E === 'podman') {
    run(['healthcheck', 'run', C.name], { timeout: 30000 });
  } else {
    await waitFor('docker to report healthy', () => out(['inspect', '--format', '{{.State.Health.Status}}', C.name]) === 'healthy', { timeout: 40000, interval: 1000 });
  }
  return 'curl /healthz in the container';
});

check('dashboard reachable', async () => {
  const r = await get('/', { auth: false });
  const html = await r.text();
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type') || '', /text\/html/);
  assert.match(html, /<html/i);
  const no = await get('/api/v1/tools', { auth: false });
  await no.text();
  assert.equal(no.status, 401, 'the API needs the token');
  const tools = await (await get('/api/v1/tools')).json();
  assert.ok(JSON.stringify(tools).includes('"screenshot"'));
  return `GET / 200 (${html.length} B); API 401 without the token, 200 with it`;
});

check('deskd is PID 1, uid 10001', () => {
  assert.equal(out(['exec', C.name, 'id', '-u']), '10001');
  assert.equal(out(['exec', C.name, 'cat', '/proc/1/comm']), 'deskd');
  const status = out(['exec', C.name, 'cat', '/proc/1/status']);
  assert.match(status, /^Uid:\s+10001\s/m);
  return 'PID 1 deskd as 10001:10001';
});

check('banner: the generated tokens printed on the first start', () => {
  const log = logs();
  assert.notEqual(C.person, C.token);
  assert.ok(log.includes(`#token=${C.person} `), `the dashboard URL carries the person's token:\n${log}`);
  assert.ok(log.includes(`Authorization: Bearer ${C.token}"`), `the MCP line the agent's:\n${log}`);
  assert.match(log, /Token: +generated now, saved in \/state\/token/);
  assert.match(log, /Person: +generated now, saved in \/state\/person-token/);
  assert.match(log, /container's own addresses/);
  return 'printed once, with where it is saved';
});

check('screenshot', async () => {
  const r = await get('/api/v1/screenshot?format=png');
  assert.equal(r.status, 200);
  const png = Buffer.from(await r.arrayBuffer());
  const { width, height } = pngSize(png);
  assert.deepEqual([width, height], [1280, 800]);
  writeFileSync(join(TMP, 'screen.png'), png);
  return `PNG ${width}x${height}, ${Math.round(png.length / 1024)} KiB`;
});

let xterm;
check('typed text read back', async () => {
  const { windows } = await waitFor('the xterm window', async () => {
    const w = await (await get('/api/v1/windows')).json();
    return w.windows.some((x) => x.app === 'XTerm') && w;
  }, { timeout: 15000 });
  xterm = windows.find((x) => x.app === 'XTerm');
  await tool('window_focus', { window: xterm.id });
  await tool('computer_use', { window: xterm.id, actions: [{ type: 'type', text: TYPED + '\n' }] });
  const got = await waitFor('the typed line in /tmp/typed', () => {
    const s = run(['exec', C.name, 'cat', '/tmp/typed'], { allowFail: true }).stdout;
    return s.endsWith('\n') && s;
  }, { timeout: 10000 });
  assert.equal(got, TYPED + '\n');
  return `"${TYPED}" into xterm, read back from the container`;
});

check('recording downloaded, checked with ffprobe', async () => {
  assert.ok(xterm, 'the xterm window');
  const c0 = cgroupStats(C.pid);
  const t0 = Date.now();
  const started = await tool('record_start', { window: xterm.id, fps: 30 });
  for (let i = 0; i < 6; i++) {
    await tool('computer_use', { window: xterm.id, actions: [{ type: 'type', text: `frame ${i}\n` }] });
    await sleep(250);
  }
  await sleep(300);
  const stopped = await tool('record_stop', { id: started.id });
  const c1 = cgroupStats(C.pid);
  C.recordCpu = (100 * (c1.cpu - c0.cpu)) / ((Date.now() - t0) / 1000);
  const r = await get(`/api/v1/recordings/${encodeURIComponent(stopped.id)}`);
  assert.equal(r.status, 200);
  const mp4 = join(TMP, 'rec.mp4');
  writeFileSync(mp4, Buffer.from(await r.arrayBuffer()));
  const probe = JSON.parse(run(['-v', 'error', '-count_frames', '-show_entries',
    'stream=codec_name,width,height,nb_read_frames:format=duration', '-of', 'json', mp4], { cmd: 'ffprobe' }).stdout);
  const s = probe.streams[0];
  assert.equal(s.codec_name, 'h264');
  assert.equal(s.width, stopped.width);
  assert.equal(s.height, stopped.height);
  assert.equal(Number(s.nb_read_frames), stopped.frames);
  assert.ok(stopped.frames >= 2, `${stopped.frames} frames`);
  const duration = Number(probe.format.duration);
  assert.ok(duration > 1 && duration < 10, `duration ${duration}`);
  assert.equal(out(['exec', C.name, 'stat', '-c', '%a', stopped.path]), '600');
  return `h264 ${s.width}x${s.height}, ${s.nb_read_frames} frames, ${duration.toFixed(1)} s, mode 0600`;
});

check('memory and CPU (for deploy/k8s resources)', async () => {
  // A burst of full-size screenshots on top of what ran above.
  for (let i = 0; i < 20; i++) await (await get('/api/v1/screenshot?format=png&max=0')).arrayBuffer();
  const s = cgroupStats(C.pid);
  C.peak = s.peak;
  return `working set idle ${mib(C.idle.ws)}, after load ${mib(s.ws)}; peak with page cache ${mib(s.peak)}; recording ${C.recordCpu.toFixed(0)} % of a core`;
});

check('no zombies after launching and killing programs', async () => {
  // Orphans: what an exec leaves behind is re-parented to PID 1 (deskd).
  run(['exec', C.name, 'sh', '-c', 'sleep 60 & sleep 60 & (sleep 0.2 &); (sleep 61 &); exit 0']);
  const orphans = await waitFor('the orphans under PID 1', () => {
    const p = processes(C.name).filter((x) => x.comm === 'sleep' && x.ppid === 1 && x.state !== 'Z');
    return p.length >= 3 && p;
  }, { timeout: 5000 });
  // Kill them, and the launched xterm (its shell is orphaned in turn).
  const xt = processes(C.name).find((x) => x.comm === 'xterm');
  assert.ok(xt, 'the launched xterm is running');
  // (The short-lived one may be gone by now.)
  run(['exec', C.name, 'sh', '-c', `for p in ${[...orphans.map((x) => x.pid), xt.pid].join(' ')}; do kill $p 2>/dev/null; done; true`]);
  const left = await waitFor('no zombie and no sleep left', () => {
    const p = processes(C.name);
    return !p.some((x) => x.state === 'Z' || x.comm === 'sleep' || x.comm === 'xterm') && p;
  }, { timeout: 5000 }).catch((e) => { throw new Error(`${e.message}: ${JSON.stringify(processes(C.name))}`); });
  const log = logs();
  assert.match(log, /reaped orphan pid \d+/);
  assert.match(log, /'xterm -e sh -c 'cat > \/tmp\/typed'' exited/);
  return `${orphans.length + 1} killed, 0 zombies (${left.length} processes left)`;
});

check('restart: same token, not printed again', async () => {
  run(['restart', '-t', '10', C.name], { timeout: 60000 });
  await waitFor('/healthz after the restart', async () => (await get('/healthz', { auth: false, timeout: 2000 })).status === 200,
    { timeout: 30000 });
  assert.equal(out(['exec', C.name, 'cat', '/state/token']), C.token, 'the token survived in /state');
  const log = logs();
  assert.equal(log.split(C.token).length - 1, 1, 'the agent\'s token is in the log only from the first start (the paste line)');
  assert.equal(log.split(C.person).length - 1, 1, 'the person\'s token only from the first start (the dashboard URL)');
  assert.equal(out(['exec', C.name, 'cat', '/state/person-token']), C.person, 'the person\'s token survived in /state');
  assert.match(log, /Token: +not printed; it is in \/state\/token \(kept from an earlier run\)/);
  assert.match(log, /podman exec <container> cat \/state\/token|docker exec <container> cat \/state\/token/);
  assert.equal((await get('/api/v1/windows')).status, 200);
  return 'the banner says: podman exec <container> cat /state/token';
});

check('clean stop', () => {
  C.pid = hostPid(C.name);
  const t0 = Date.now();
  run(['stop', '-t', '10', C.name], { timeout: 60000 });
  const secs = (Date.now() - t0) / 1000;
  const code = out(['inspect', '--format', '{{.State.ExitCode}}', C.name]);
  assert.equal(code, '0', `exit code ${code}`);
  // deskd gives its programs 1 s and Xvfb 2 s before SIGKILL.
  assert.ok(secs < 8, `stop took ${secs} s`);
  const log = logs();
  assert.match(log, /Terminated: shutting down/);
  assert.doesNotMatch(log, /ignored SIGTERM/, 'every program stopped on SIGTERM');
  return `SIGTERM -> exit 0 in ${secs.toFixed(1)} s`;
});

check('read-only root (podman run --read-only)', async () => {
  // The engine puts a tmpfs on /tmp; Xvfb, not root, cannot make
  // /tmp/.X11-unix there and listens on its abstract socket alone.
  const name = `${TAG}-ro`;
  const port = await freePort();
  cleanups.push(() => run(['rm', '-f', '-v', '-t', '0', name], { allowFail: true, timeout: 60000 }));
  run(['run', '-d', '--read-only', '--name', name, '-p', `127.0.0.1:${port}:7800`, IMAGE, '--token', 'read-only-test-token'], { timeout: 60000 });
  const url = `http://127.0.0.1:${port}`;
  await waitFor('/healthz', async () => (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) })).status === 200,
    { timeout: 30000 }).catch((e) => { throw new Error(`${e.message}\n${run(['logs', name], { allowFail: true }).stderr}`); });
  const r = await fetch(`${url}/api/v1/screenshot?format=png`, { headers: { authorization: 'Bearer read-only-test-token' }, signal: AbortSignal.timeout(15000) });
  assert.equal(r.status, 200);
  const { width } = pngSize(Buffer.from(await r.arrayBuffer()));
  assert.notEqual(run(['exec', name, 'touch', '/usr/x'], { allowFail: true }).status, 0, 'the root is read-only');
  run(['stop', '-t', '10', name], { timeout: 60000 });
  assert.equal(out(['inspect', '--format', '{{.State.ExitCode}}', name]), '0');
  return `healthy, a ${width} px wide screenshot, exit 0`;
});

// ---------------------------------------------------------------- Kubernetes

const K = { file: join(TMP, 'k8s.yaml'), created: { volumes: [], secret: false } };

/** In the pod's own network namespace: curl http://127.0.0.1:7800/PATH. */
function podCurl(pod, path, token, { binary = false } = {}) {
  const args = ['-t', String(pod.pid), '-n', 'curl', '-fsS', '--max-time', '15'];
  if (token) args.push('-H', `Authorization: Bearer ${token}`);
  args.push(`http://127.0.0.1:7800${path}`);
  return run(args, { cmd: 'nsenter', encoding: binary ? 'buffer' : 'utf8', timeout: 30000 }).stdout;
}

check('kube play deploy/k8s: every desktop up', async () => {
  const manifest = readFileSync(join(ROOT, 'deploy/k8s/deskd.yaml'), 'utf8');
  const replicas = Number((manifest.match(/^  replicas: (\d+)$/m) || [])[1]);
  assert.ok(replicas >= 1, 'replicas in deploy/k8s/deskd.yaml');
  K.n = replicas;
  // Names the play creates; refuse to touch any that are there already.
  const exists = (args) => run(args, { allowFail: true }).status === 0;
  for (const v of ['deskd-token', 'state', 'tmp']) assert.ok(!exists(['volume', 'inspect', v]), `a podman volume named ${v} exists already`);
  assert.ok(!exists(['secret', 'inspect', 'deskd-token']), 'a podman secret named deskd-token exists already');
  for (let i = 0; i < replicas; i++) assert.ok(!exists(['pod', 'inspect', `deskd-pod-${i}`]), `pod deskd-pod-${i} exists already`);
  // The Secret the README has you create; podman 4.3 writes a secret
  // volume's `data` without base64-decoding it, so the token each pod
  // uses is read from the pod below.
  K.token = `k8s-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
  K.person = `k8s-person-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
  const secret = ['apiVersion: v1', 'kind: Secret', 'metadata:', '  name: deskd-token', 'type: Opaque', 'data:',
    `  token: ${Buffer.from(K.token).toString('base64')}`, `  person-token: ${Buffer.from(K.person).toString('base64')}`, ''].join('\n');
  // podman has no StatefulSet: the same documents, the StatefulSet played as
  // a Deployment (podman 4.3 makes `replicas` pods, deskd-pod-N). The
  // Service and NetworkPolicy are ignored by podman.
  const played = manifest.replace(/^kind: StatefulSet$/m, 'kind: Deployment');
  assert.notEqual(played, manifest);
  writeFileSync(K.file, `${secret}---\n${played}---\n${readFileSync(join(ROOT, 'deploy/k8s/networkpolicy.yaml'), 'utf8')}`);
  cleanups.push(() => {
    run(['kube', 'down', K.file], { allowFail: true, timeout: 120000 });
    for (let i = 0; i < replicas; i++) run(['pod', 'rm', '-f', `deskd-pod-${i}`], { allowFail: true, timeout: 60000 });
    for (const v of K.created.volumes) run(['volume', 'rm', '-f', v], { allowFail: true });
    if (K.created.secret) run(['secret', 'rm', 'deskd-token'], { allowFail: true });
  });
  K.created.volumes = ['deskd-token', 'state', 'tmp'];
  K.created.secret = true;
  const t0 = Date.now();
  // From an empty directory: podman 4.3 would build an image from a
  // directory named like the image (./deskd) if there was one.
  run(['kube', 'play', K.file], { timeout: 180000 });
  K.pods = [];
  for (let i = 0; i < replicas; i++) {
    const ctr = `deskd-pod-${i}-deskd`;
    const pod = { name: `deskd-pod-${i}`, ctr, pid: hostPid(ctr) };
    await waitFor(`${ctr} /healthz`, () => podCurl(pod, '/healthz').trim() === 'ok', { timeout: 30000, interval: 200 });
    K.pods.push(pod);
  }
  K.up = (Date.now() - t0) / 1000;
  return `${replicas} pods from the StatefulSet's template, all healthy in ${K.up.toFixed(1)} s`;
}, { skip: E !== 'podman' && 'podman kube play needs podman' });

check('kube: each desktop reached, screenshot from each', async () => {
  assert.equal(K.pods?.length, K.n, 'the pods are up');
  const sizes = [];
  for (const pod of K.pods) {
    pod.token = out(['exec', pod.ctr, 'cat', '/var/run/secrets/deskd/token']);
    assert.ok(pod.token === K.token || pod.token === Buffer.from(K.token).toString('base64'), `token file: ${pod.token}`);
    const png = podCurl(pod, '/api/v1/screenshot?format=png', pod.token, { binary: true });
    const { width, height } = pngSize(png);
    assert.deepEqual([width, height], [1280, 800]);
    const w = JSON.parse(await waitFor(`${pod.name}: the --launch xterm`, () => {
      const s = podCurl(pod, '/api/v1/windows', pod.token);
      return /"app":"XTerm"/.test(s) && s;
    }, { timeout: 15000 }));
    assert.ok(w.windows.length >= 1);
    // Without the token: 401 (curl -f fails).
    assert.notEqual(run(['-t', String(pod.pid), '-n', 'curl', '-fsS', '--max-time', '10', 'http://127.0.0.1:7800/api/v1/windows'],
      { cmd: 'nsenter', allowFail: true }).status, 0);
    writeFileSync(join(TMP, `${pod.name}.png`), png);
    sizes.push(`${Math.round(png.length / 1024)} KiB`);
  }
  return `${K.pods.length} PNGs 1280x800 (${sizes.join(', ')}), an xterm on each`;
}, { skip: E !== 'podman' && 'podman kube play needs podman' });

check('kube: securityContext, token file, probes', () => {
  assert.equal(K.pods?.length, K.n, 'the pods are up');
  for (const pod of K.pods) {
    const st = out(['exec', pod.ctr, 'cat', '/proc/1/status']);
    assert.match(st, /^Uid:\s+10001\s/m, `${pod.name} runs as 10001`);
    assert.match(st, /^NoNewPrivs:\s+1$/m, `${pod.name}: no privilege escalation`);
    assert.match(st, /^CapEff:\s+0+$/m, `${pod.name}: no capabilities`);
    assert.notEqual(run(['exec', pod.ctr, 'touch', '/usr/x'], { allowFail: true }).status, 0, 'read-only root file system');
    run(['exec', pod.ctr, 'sh', '-c', 'touch /state/w /tmp/w && rm /state/w /tmp/w']);
    // The liveness probe, as podman runs it (curl in the container).
    run(['healthcheck', 'run', pod.ctr], { timeout: 30000 });
    const log = run(['logs', pod.ctr], { allowFail: true });
    const text = log.stdout + log.stderr;
    assert.ok(!text.includes(pod.token), `${pod.name} printed its token`);
    assert.match(text, /it is in \/var\/run\/secrets\/deskd\/token \(given as a file\)/);
    assert.match(text, /it is in \/var\/run\/secrets\/deskd\/person-token \(given as a file\)/);
    pod.mem = cgroupStats(pod.pid);
  }
  return `uid 10001, no-new-privs, no caps, ro root, /state and /tmp writable, liveness ok; working sets ${K.pods.map((p) => mib(p.mem.ws)).join(', ')}`;
}, { skip: E !== 'podman' && 'podman kube play needs podman' });

check('kube down', () => {
  assert.ok(K.pods, 'the pods were played');
  const t0 = Date.now();
  run(['kube', 'down', K.file], { timeout: 120000 });
  for (const pod of K.pods) assert.notEqual(run(['pod', 'inspect', pod.name], { allowFail: true }).status, 0, `${pod.name} is gone`);
  for (const v of K.created.volumes) run(['volume', 'rm', '-f', v], { allowFail: true });
  run(['secret', 'rm', 'deskd-token'], { allowFail: true });
  K.created = { volumes: [], secret: false };
  return `${K.pods.length} pods removed in ${((Date.now() - t0) / 1000).toFixed(1)} s`;
}, { skip: E !== 'podman' && 'podman kube play needs podman' });

after(() => {
  for (const c of cleanups.reverse()) { try { c(); } catch { /* best effort */ } }
  rmSync(TMP, { recursive: true, force: true });
  const build = process.env.IMAGE_BUILD_SECONDS;
  if (build) rows.unshift(['build (make image)', 'ok', process.env.IMAGE_BUILD_NOTE || '', Number(build)]);
  const w = [0, 1, 2].map((i) => Math.max(...rows.map((r) => String(r[i]).length), ['check', 'result', 'detail'][i].length));
  const line = (r) => `| ${String(r[0]).padEnd(w[0])} | ${String(r[1]).padEnd(w[1])} | ${String(r[2]).padEnd(w[2])} | ${typeof r[3] === 'number' ? r[3].toFixed(1).padStart(6) : String(r[3]).padStart(6)} |`;
  const text = [`image-test: ${IMAGE} with ${E}`, line(['check', 'result', 'detail', 'secs']),
    `|${'-'.repeat(w[0] + 2)}|${'-'.repeat(w[1] + 2)}|${'-'.repeat(w[2] + 2)}|--------|`, ...rows.map(line), '', ...notes, ''].join('\n');
  writeFileSync(REPORT, text);
});
