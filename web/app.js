// deskd dashboard: live view, activity timeline, windows, recordings, status.
// Plain JS, no build step. The token comes from the URL fragment (#token=...),
// is kept in sessionStorage and sent as a bearer header (REST) or as the
// "bearer.<token>" WebSocket subprotocol (/live).
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = 'deskd.token';
  const CLICK_TYPES = new Set(['click', 'left_click', 'right_click', 'middle_click',
    'double_click', 'triple_click']);
  const MAX_TIMELINE = 400;

  const state = {
    token: null,
    role: 'full',
    screen: { width: 0, height: 0 },
    maxDim: 1280,
    windows: [],
    watch: { target: 'screen', window: 0 },
    frame: null,          // last frame header
    cursor: null,         // {x, y, visible} in frame pixels
    ws: null,
    wsBackoff: 500,
    pendingHeader: null,  // a frame header waiting for its JPEG
    decoding: false,
    nextJpeg: null,       // newest JPEG not yet decoded {header, data}
    calls: new Map(),     // event id -> { li, start, end } (a row; help and hold groups too)
    helps: new Map(),     // help request's call id -> its group (app.js helpOnEvent)
    hold: null,           // the hold going on, lastHold: the one that ended last
    folded: new Set(),    // "kind:id:status" of the events folded into those rows
    flashes: [],          // { x, y, t0 } in frame pixels
    recordings: [],
    activeRec: null,      // { id, window }
    viewMode: 'fit',      // 'fit' | 'actual' (one frame pixel per CSS pixel)
  };

  // ---- token ----

  function readToken() {
    const m = /(?:^|[#&])token=([^&]*)/.exec(location.hash);
    if (m) {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
      history.replaceState(null, '', location.pathname + location.search);
    }
    return sessionStorage.getItem(TOKEN_KEY);
  }

  // X-Deskd-Client: dashboard marks the page's own calls: its reads are
  // refreshes (counted in /metrics, kept out of the timeline), what it sends
  // that acts is a person's doing.
  function authHeaders(extra = {}) {
    const h = { ...extra, 'x-deskd-client': 'dashboard' };
    return state.token ? { ...h, authorization: `Bearer ${state.token}` } : h;
  }

  class HttpError extends Error {
    constructor(status, code, message) {
      super(message || `HTTP ${status}`);
      this.status = status;
      this.code = code;
    }
  }

  async function api(path, init = {}) {
    const r = await fetch(path, { ...init, headers: authHeaders(init.headers || {}), cache: 'no-store' });
    if (!r.ok) {
      let code = null, message = null;
      try {
        const body = await r.json();
        code = body.error && body.error.code;
        message = body.error && body.error.message;
      } catch { /* not JSON */ }
      throw new HttpError(r.status, code, message || `${r.status} ${r.statusText}`);
    }
    const type = r.headers.get('content-type') || '';
    return type.includes('json') ? r.json() : r;
  }

  function tool(name, args = {}) {
    return api(`/api/v1/tools/${encodeURIComponent(name)}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(args),
    });
  }

  // ---- small DOM helpers ----

  function el(tag, props = {}, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'dataset') Object.assign(e.dataset, v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  let toastTimer = 0;
  function toast(text, isError = false) {
    const t = $('toast');
    t.textContent = text;
    t.className = 'toast' + (isError ? ' err' : '');
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, isError ? 6000 : 3000);
  }

  const hex = (id) => '0x' + Number(id).toString(16);
  const fmtBytes = (n) => n >= 1 << 20 ? (n / (1 << 20)).toFixed(1) + ' MB'
    : n >= 1024 ? Math.round(n / 1024) + ' KB' : n + ' B';
  const fmtTime = (ts) => {
    const d = new Date(ts * 1000);
    return d.toTimeString().slice(0, 8);
  };

  // ---- gate: missing or wrong token ----

  function showGate(title, text, bad) {
    $('app').hidden = true;
    $('gate').hidden = false;
    $('gate-title').textContent = title;
    $('gate-text').textContent = text;
    $('gate-where').hidden = true;
    document.querySelector('#gate .card').classList.toggle('bad', !!bad);
    setConn('down', 'not connected');
    $('gate-token').focus();
  }

  // Where the token is, as deskd says (GET /api/v1/token-help, no token
  // needed; it never tells the token itself).
  async function showTokenHelp() {
    const p = $('gate-where');
    let h = null;
    try {
      const r = await fetch('/api/v1/token-help', { cache: 'no-store' });
      if (r.ok) h = await r.json();
    } catch { /* an older deskd */ }
    p.replaceChildren();
    p.hidden = false;
    const code = (text) => el('code', { text });
    if (h && h.source === 'given') {
      p.append('deskd was started with --person-token (or DESKD_PERSON_TOKEN): use that token.');
    } else if (h && h.source === 'file' && h.path) {
      p.append('deskd reads the person\'s token from --person-token-file ', code(h.path), '. Print it on the machine deskd runs on: ', code(h.print || `cat ${h.path}`));
    } else if (h && h.path) {
      p.append('deskd keeps the person\'s token (the dashboard\'s) across restarts in ', code(h.path),
        '. Print it on the machine deskd runs on: ', code(h.print || `cat ${h.path}`),
        ' (in a container, through podman exec, docker exec or kubectl exec).');
    } else {
      p.append('deskd keeps the person\'s token across restarts in its data directory: ', code('<data-dir>/person-token'),
        ' (by default ', code('~/.local/state/deskd/person-token'), '). Print it with ', code('cat ~/.local/state/deskd/person-token'), '.');
    }
  }

  // The field takes the token, or a whole dashboard URL with #token=.
  function tokenFromInput(v) {
    const m = /#(?:.*&)?token=([^&\s]+)/.exec(v);
    if (m) { try { return decodeURIComponent(m[1]); } catch { return m[1]; } }
    return v;
  }

  $('gate-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const v = tokenFromInput($('gate-token').value.trim());
    if (!v) return;
    sessionStorage.setItem(TOKEN_KEY, v);
    $('gate-token').value = '';
    start();
  });

  // ---- connection chip ----

  function setConn(s, text) {
    const c = $('conn');
    c.dataset.state = s;
    c.querySelector('span').textContent = text;
  }

  // ---- live view ----

  const screenCanvas = $('screen');
  const overlay = $('overlay');
  const ctx2d = screenCanvas.getContext('2d');
  const octx = overlay.getContext('2d');

  function liveUrl() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    return `${proto}//${location.host}/live`;
  }

  // The token rides in a subprotocol, never in the URL (URLs end up in logs
  // and history). A subprotocol carries only token characters (RFC 7230
  // tchar): the others, and '%', travel percent-encoded; deskd decodes them.
  function bearerProtocol(token) {
    return 'bearer.' + token.replace(/[^A-Za-z0-9!#$&'*+\-.^_`|~]/g,
      (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
  }

  function connectLive() {
    const url = liveUrl();
    const ws = state.token ? new WebSocket(url, ['deskd.live', bearerProtocol(state.token)])
      : new WebSocket(url, ['deskd.live']);
    // An ArrayBuffer is handed over as it arrived; a Blob is first put in
    // the browser's blob store, and decoding reads it back from there.
    ws.binaryType = 'arraybuffer';
    state.ws = ws;
    state.pendingHeader = null;
    setConn('connecting', 'connecting');
    ws.addEventListener('open', () => {
      state.wsBackoff = 500;
      setConn('live', 'live');
      sendWatch();
    });
    ws.addEventListener('message', (e) => {
      if (typeof e.data === 'string') onText(e.data);
      else onBinary(e.data);
    });
    ws.addEventListener('close', () => {
      if (state.ws !== ws) return;
      state.ws = null;
      setConn('down', 'reconnecting');
      setTimeout(async () => {
        // A rejected token closes the socket too; let REST tell us why.
        try { await api('/api/v1/windows'); } catch (err) {
          if (err.status === 401) { authFailed(); return; }
        }
        connectLive();
      }, state.wsBackoff);
      state.wsBackoff = Math.min(state.wsBackoff * 2, 8000);
    });
  }

  function sendWatch() {
    if (!state.ws || state.ws.readyState !== WebSocket.OPEN || document.hidden) return;
    const msg = { type: 'watch', target: state.watch.target, fps: Number($('fps').value) };
    if (state.watch.target === 'window') msg.window = state.watch.window;
    const size = $('size').value;
    if (size !== '') msg.max_dimension = Number(size);
    state.ws.send(JSON.stringify(msg));
  }

  function watch(target, window = 0) {
    state.watch = { target, window };
    state.frame = null;
    state.cursor = null;
    state.flashes = [];
    $('stage-msg').textContent = 'Waiting for the first frame…';
    $('stage-msg').hidden = false;
    renderWindows();
    updateTargetName();
    updateRecButtons();
    sendWatch();
  }

  function updateTargetName() {
    if (state.watch.target === 'screen') {
      $('target-name').textContent = 'Screen';
    } else {
      const w = state.windows.find((x) => x.id === state.watch.window);
      $('target-name').textContent = w ? (w.title || w.app || hex(w.id)) : hex(state.watch.window);
    }
  }

  function onText(text) {
    let m;
    try { m = JSON.parse(text); } catch { return; }
    switch (m.type) {
      case 'hello': onHello(m); break;
      case 'frame': state.pendingHeader = m; break;
      case 'cursor':
        state.cursor = { x: m.x, y: m.y, visible: m.visible !== false };
        drawOverlay();
        break;
      case 'event': onEvent(m); break;
      case 'control': ctlOnState(m); break;                        // control
      case 'taken':                                                // until control is free again
        toast(m.message || 'Another tab took control', true);
        ctl.takenToast = $('toast').textContent;
        break;
      case 'released': toast(m.message || 'Control was released', true); break;
      case 'error':
        if (m.for) ctl.lastError = m;
        if (m.target) {
          $('stage-msg').textContent = `Cannot watch this ${m.target}: ${m.message}`;
          $('stage-msg').hidden = false;
          if (m.code === 'window_not_found') refreshWindows();
          // The display may come back (deskd reconnects): try again later.
          if (m.code === 'display_unavailable') {
            const w = { ...state.watch };
            setTimeout(() => {
              if (state.watch.target === w.target && state.watch.window === w.window) sendWatch();
            }, 3000);
          }
        } else {
          toast(`Live view: ${m.message}`, true);
        }
        break;
      default: break;
    }
  }

  function onHello(m) {
    state.screen = m.screen || state.screen;
    if (typeof m.max_image_dimension === 'number') state.maxDim = m.max_image_dimension;
    setRole(m.role === 'view' || m.role === 'agent' ? m.role : 'full');
    if (Array.isArray(m.windows)) setWindows(m.windows);
    $('display').textContent = `${state.screen.width}×${state.screen.height}` + (m.display === false ? ' · display down' : '');
  }

  function onBinary(data) {
    const header = state.pendingHeader;
    state.pendingHeader = null;
    if (!header) return;
    // Decode one at a time; keep only the newest waiting JPEG.
    state.nextJpeg = { header, data };
    if (!state.decoding) decodeNext();
  }

  async function decodeNext() {
    const job = state.nextJpeg;
    if (!job) return;
    state.nextJpeg = null;
    state.decoding = true;
    try {
      const bmp = await createImageBitmap(new Blob([job.data], { type: 'image/jpeg' }));
      const h = job.header;
      if (screenCanvas.width !== bmp.width || screenCanvas.height !== bmp.height) {
        screenCanvas.width = overlay.width = bmp.width;
        screenCanvas.height = overlay.height = bmp.height;
        layoutCanvas();
      }
      ctx2d.drawImage(bmp, 0, 0);
      bmp.close();
      state.frame = h;
      if (h.cursor) state.cursor = { x: h.cursor.x, y: h.cursor.y, visible: h.cursor.visible !== false };
      screenCanvas.dataset.seq = h.seq;
      screenCanvas.dataset.target = h.target;
      screenCanvas.dataset.window = h.window || 0;
      $('stage-msg').hidden = true;
      const now = performance.now();
      state.frameTimes = (state.frameTimes || []).filter((t) => now - t < 2000);
      state.frameTimes.push(now);
      const fps = state.frameTimes.length > 1 ? (state.frameTimes.length - 1) * 1000 / (now - state.frameTimes[0]) : 0;
      $('frame-info').textContent = `${h.width}×${h.height} · #${h.seq}` + (fps >= 1 ? ` · ${fps.toFixed(0)} fps` : '');
      clearTimeout(state.idleTimer);
      state.idleTimer = setTimeout(() => { $('frame-info').textContent = `${h.width}×${h.height} · #${h.seq} · still`; }, 2500);
      drawOverlay();
    } catch {
      /* a broken JPEG: skip it */
    }
    state.decoding = false;
    if (state.nextJpeg) decodeNext();
  }

  // Desktop pixels -> pixels of the current frame, or null if not visible.
  function desktopToFrame(x, y) {
    const f = state.frame;
    if (!f) return null;
    if (f.target === 'window') {
      const w = state.windows.find((v) => v.id === f.window);
      if (!w || !w.width) return null;
      return { x: (x - w.x) * f.width / w.width, y: (y - w.y) * f.height / w.height };
    }
    if (!state.screen.width) return null;
    return { x: x * f.width / state.screen.width, y: y * f.height / state.screen.height };
  }

  // A point in the agent's screenshot space of a target -> desktop pixels
  // (DESIGN 6: the space is a function of the target's size and the max dimension).
  function shotToDesktop(x, y, win, space, maxDim) {
    let ox = 0, oy = 0, w = state.screen.width, h = state.screen.height;
    if (win) {
      const g = state.windows.find((v) => v.id === Number(win));
      if (!g) return null;
      ox = g.x; oy = g.y; w = g.width; h = g.height;
    }
    if (space === 'desktop') return win ? { x: ox + x, y: oy + y } : { x, y };
    const md = typeof maxDim === 'number' ? maxDim : state.maxDim;
    const s = md > 0 && Math.max(w, h) > md ? md / Math.max(w, h) : 1;
    const sw = Math.max(1, Math.round(w * s)), sh = Math.max(1, Math.round(h * s));
    return { x: ox + x * w / sw, y: oy + y * h / sh };
  }

  function clickPoints(tool, args) {
    if (!args || typeof args !== 'object') return [];
    const pts = [];
    const take = (a, win, space, md) => {
      let x = a.x, y = a.y;
      if (Array.isArray(a.coordinate)) [x, y] = a.coordinate;
      if (typeof x !== 'number' || typeof y !== 'number') return;
      const d = shotToDesktop(x, y, win, a.coordinate_space || space, md);
      if (d) pts.push(d);
    };
    if (Array.isArray(args.actions)) {
      for (const a of args.actions) {
        if (a && CLICK_TYPES.has(a.type)) take(a, args.window, args.coordinate_space, args.max_dimension);
      }
    } else {
      const type = tool.replace(/^computer_/, '');
      if (CLICK_TYPES.has(type)) take(args, args.window, args.coordinate_space, args.max_dimension);
    }
    return pts;
  }

  function flashAt(desktopPts) {
    const now = performance.now();
    for (const p of desktopPts) state.flashes.push({ dx: p.x, dy: p.y, t0: now });
    if (state.flashes.length) requestAnimationFrame(drawOverlay);
  }

  function drawOverlay() {
    const W = overlay.width, H = overlay.height;
    if (!W || !H) return;
    octx.clearRect(0, 0, W, H);
    const scale = Math.max(1, W / (overlay.clientWidth || W));
    const now = performance.now();
    state.flashes = state.flashes.filter((f) => now - f.t0 < 700);
    for (const f of state.flashes) {
      const p = desktopToFrame(f.dx, f.dy);
      if (!p) continue;
      const k = (now - f.t0) / 700;
      // A red ring with a white halo: visible on any background.
      octx.beginPath();
      octx.arc(p.x, p.y, (6 + 22 * k) * scale, 0, Math.PI * 2);
      octx.strokeStyle = `rgba(255, 255, 255, ${0.9 * (1 - k)})`;
      octx.lineWidth = 5 * scale;
      octx.stroke();
      octx.strokeStyle = `rgba(255, 40, 40, ${1 - k})`;
      octx.lineWidth = 2.5 * scale;
      octx.stroke();
      octx.beginPath();
      octx.arc(p.x, p.y, 3 * scale, 0, Math.PI * 2);
      octx.fillStyle = `rgba(255, 64, 64, ${1 - k})`;
      octx.fill();
    }
    const c = state.cursor;
    if (c && c.visible && c.x >= 0 && c.y >= 0 && c.x < W && c.y < H) {
      // An arrow with its tip at the pointer.
      const s = 1.1 * scale;
      octx.save();
      octx.translate(c.x, c.y);
      octx.scale(s, s);
      octx.beginPath();
      octx.moveTo(0, 0); octx.lineTo(0, 17); octx.lineTo(4.5, 13); octx.lineTo(8, 20.5);
      octx.lineTo(10.5, 19.5); octx.lineTo(7, 12.3); octx.lineTo(12.5, 12.3); octx.closePath();
      octx.fillStyle = '#fff'; octx.strokeStyle = '#000'; octx.lineWidth = 1.3;
      octx.fill(); octx.stroke();
      octx.restore();
    }
    if (state.flashes.length) requestAnimationFrame(drawOverlay);
  }

  // A hidden tab costs the server nothing: stop watching until it shows again.
  document.addEventListener('visibilitychange', () => {
    if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return;
    if (document.hidden) state.ws.send(JSON.stringify({ type: 'unwatch' }));
    else sendWatch();
  });

  $('fps').addEventListener('change', sendWatch);
  $('size').addEventListener('change', sendWatch);

  // ---- view controls: fit, 100%, fullscreen ----
  // The picture's CSS size is set here (the canvas keeps the frame's pixels):
  // fit scales it to the stage (on a narrow screen, to its width), 100% shows
  // one frame pixel per CSS pixel and the stage scrolls. Pointer mapping from
  // the page to the frame goes through getBoundingClientRect, whatever the size.

  const stage = $('stage');
  const narrow = window.matchMedia('(max-width: 900px)');

  function layoutCanvas() {
    const fw = screenCanvas.width, fh = screenCanvas.height;
    if (!fw || !fh) return;
    let w = fw, h = fh;
    if (state.viewMode === 'fit') {
      const cs = getComputedStyle(stage);
      const aw = stage.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      const ah = stage.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
      // A narrow page scrolls down, so only its width bounds the picture.
      const full = document.fullscreenElement != null;
      const k = narrow.matches && !full ? aw / fw : Math.min(aw / fw, ah / fh);
      if (!(k > 0)) return;
      w = Math.max(1, Math.floor(fw * k));
      h = Math.max(1, Math.floor(fh * k));
    }
    for (const c of [screenCanvas, overlay]) {
      if (c.style.width !== `${w}px`) c.style.width = `${w}px`;
      if (c.style.height !== `${h}px`) c.style.height = `${h}px`;
    }
    zoomApply();   // the pan limits follow the size
  }

  function setViewMode(mode) {
    state.viewMode = mode;
    stage.classList.toggle('actual', mode === 'actual');
    for (const [id, m] of [['view-fit', 'fit'], ['view-actual', 'actual']]) {
      $(id).classList.toggle('on', mode === m);
      $(id).setAttribute('aria-pressed', String(mode === m));
    }
    layoutCanvas();
    drawOverlay();
  }

  $('view-fit').addEventListener('click', () => setViewMode('fit'));
  $('view-actual').addEventListener('click', () => setViewMode('actual'));
  $('view-full').addEventListener('click', async () => {
    const viewer = stage.closest('.viewer');
    try {
      if (document.fullscreenElement) await document.exitFullscreen();
      else await viewer.requestFullscreen();
    } catch (err) {
      toast(`Fullscreen: ${err.message}`, true);
    }
  });
  document.addEventListener('fullscreenchange', () => {
    $('view-full').classList.toggle('on', document.fullscreenElement != null);
    layoutCanvas();
  });
  new ResizeObserver(() => layoutCanvas()).observe(stage);
  narrow.addEventListener('change', layoutCanvas);
  // ---- control: take the desktop, help requests, pause, approvals ----
  // The protocol is docs/CONTROL.md; the server decides who may do what
  // (a view token's messages are refused there, hiding buttons is cosmetic).

  const ctl = {
    holder: 'none', canControl: false, paused: false,
    help: [], approvals: [], notified: new Set(),
    lastMove: null, moveTimer: 0, lastError: null,
  };

  function ctlSend(msg) {
    if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return false;
    state.ws.send(JSON.stringify(msg));
    return true;
  }

  function ctlAskNotifications() {
    if ('Notification' in window && Notification.permission === 'default') {
      Notification.requestPermission().catch(() => {});
    }
  }

  function ctlOnState(m) {
    const was = ctl.holder;
    ctl.holder = m.holder;
    ctl.canControl = !!m.can_control;
    ctl.paused = !!m.paused;
    ctl.help = Array.isArray(m.help) ? m.help : [];
    ctl.approvals = Array.isArray(m.approvals) ? m.approvals : [];
    if (was === 'you' && m.holder !== 'you') ctlReleaseKeys();
    ctlRender();
    for (const h of ctl.help) {
      if (ctl.notified.has('h' + h.id)) continue;
      ctl.notified.add('h' + h.id);
      ctlNotify('The agent asks for help', h.reason);
    }
    for (const a of ctl.approvals) {
      if (ctl.notified.has('a' + a.id)) continue;
      ctl.notified.add('a' + a.id);
      ctlNotify('The agent waits for approval', a.tool);
    }
  }

  function ctlNotify(title, body) {
    if (!document.hidden && document.hasFocus()) return;
    if ('Notification' in window && Notification.permission === 'granted') {
      try { new Notification(`deskd: ${title}`, { body, tag: 'deskd-control' }); } catch { /* not allowed here */ }
    }
  }

  // The header's pill, on every page (the view token gets the state too).
  const PILL = {
    you: ['You have control', 'The agent is refused until you hand back'],
    other: ['Another tab has control', 'A person is using the desktop from another tab'],
    waiting: ['Waiting for you (help / approval)', 'The agent waits for a person: see the banner over the picture'],
    paused: ['Agent paused', 'Acting tools return paused until a person resumes the agent'],
    agent: ['Agent acting', 'The agent has the desktop'],
  };

  function ctlPillState() {
    if (ctl.holder === 'you' || ctl.holder === 'other') return ctl.holder;
    if (ctl.help.length || ctl.approvals.length) return 'waiting';
    return ctl.paused ? 'paused' : 'agent';
  }

  function ctlRender() {
    const mine = ctl.holder === 'you';
    const noteFocused = document.activeElement === $('ctl-note');
    $('ctl-bar').hidden = !ctl.canControl;
    $('ctl-take').hidden = mine;
    $('ctl-take').textContent = ctl.holder === 'other' ? 'Take over' : 'Take control';
    $('ctl-release').hidden = !mine;
    $('ctl-keys').hidden = !mine;
    $('ctl-pause').textContent = ctl.paused ? 'Resume agent' : 'Pause agent';
    $('ctl-pause').classList.toggle('on', ctl.paused);
    const pill = $('ctl-pill'), ps = ctlPillState();
    pill.dataset.state = ps;
    [pill.textContent, pill.title] = PILL[ps];
    pill.hidden = false;
    // "Another tab took control" is stale once control is free or ours again.
    if (ctl.takenToast && ctl.holder !== 'other') {
      if ($('toast').textContent === ctl.takenToast) $('toast').hidden = true;
      ctl.takenToast = null;
    }
    document.querySelector('.viewer').classList.toggle('held', mine);
    $('ctl-kbd').hidden = !mine;
    document.body.dataset.control = ctl.holder;
    // Keyboard focus when control arrives (not on later updates: the person
    // may be typing a note).
    if (mine && !ctl.hadFocus) $('ctl-input').focus({ preventScroll: true });
    ctl.hadFocus = mine;
    ctlRenderHelp();
    ctlRenderApprovals();
    ctlPlaceNote(noteFocused);
    clipRender();
    ctlKbdCue();
  }

  // "Keyboard goes to the desktop": shown exactly while this tab holds
  // control and the hidden input (the picture's keyboard) has the focus.
  function ctlKbdCue() {
    // hasFocus: another window or tab in front takes the keyboard too.
    const on = ctl.holder === 'you' && document.activeElement === $('ctl-input') && document.hasFocus();
    $('kbd-cue').hidden = !on;
    document.querySelector('.viewer').classList.toggle('kbd', on);
  }

  // One note box, whichever button ends the hold (Hand back or a help
  // request's Dismiss): it sits in the first help banner while there is one,
  // else in the control bar while this tab holds the desktop.
  function ctlPlaceNote(focused) {
    const note = $('ctl-note');
    const card = $('ctl-help').querySelector('.card');
    if (card && ctl.canControl) {
      if (note.parentNode !== card) card.insertBefore(note, card.querySelector('.dismiss'));
      note.hidden = false;
    } else {
      if (note.parentNode !== $('ctl-bar')) $('ctl-bar').insertBefore(note, $('ctl-pause'));
      note.hidden = ctl.holder !== 'you';
    }
    if (focused && !note.hidden && document.activeElement !== note) note.focus({ preventScroll: true });
  }

  function ctlNoteTake() {
    const text = $('ctl-note').value;
    $('ctl-note').value = '';
    ctl.sentNote = text ? { text, at: Date.now() } : null;   // for the activity row
    return text;
  }

  function ctlRenderHelp() {
    const box = $('ctl-help');
    box.hidden = !ctl.help.length;
    const open = new Map([...box.querySelectorAll('.card')].map((c) => [c.dataset.id, c]));
    // Keep the note box (and what is typed in it) out of a card that goes.
    const noteCard = $('ctl-note').closest('#ctl-help .card');
    if (noteCard && !ctl.help.some((h) => String(h.id) === noteCard.dataset.id)) {
      $('ctl-bar').insertBefore($('ctl-note'), $('ctl-pause'));
    }
    const cards = ctl.help.map((h) => {
      const keep = open.get(String(h.id));
      if (keep) return keep;
      return el('div', { class: 'card', dataset: { id: String(h.id) }, role: 'alert' },
        el('span', { class: 'reason', text: `The agent asks for help: ${h.reason}` }),
        el('button', { type: 'button', class: 'act take', text: 'Take control', onclick: () => ctlTake() }),
        el('button', { type: 'button', class: 'act dismiss', text: 'Dismiss', onclick: () => ctlSend({ type: 'help_dismiss', id: h.id, note: ctlNoteTake() }) }));
    });
    box.replaceChildren(...cards);
    // Holding already: nothing to take (Hand back is in the control bar).
    for (const b of box.querySelectorAll('.take')) {
      b.hidden = ctl.holder === 'you';
      b.textContent = ctl.holder === 'other' ? 'Take over' : 'Take control';
    }
  }

  function ctlRenderApprovals() {
    const box = $('ctl-approvals');
    box.hidden = !ctl.approvals.length;
    const open = new Map([...box.querySelectorAll('.card')].map((c) => [c.dataset.id, c]));
    const cards = ctl.approvals.map((a) => {
      const keep = open.get(String(a.id));
      if (keep) return keep;
      const left = el('span', { class: 'left' });
      const tick = () => {
        const s = Math.max(0, Math.round(a.since + a.timeout_s - Date.now() / 1000));
        left.textContent = `${s} s left`;
        if (left.isConnected) setTimeout(tick, 1000);
      };
      const card = el('div', { class: 'card', dataset: { id: String(a.id), tool: a.tool } },
        ctlSnapshot(a),
        el('span', { class: 'what', text: `${a.tool} ${argSummary(a.args)}` }),
        left,
        el('button', { type: 'button', class: 'act approve', text: 'Approve', onclick: () => ctlSend({ type: 'approve', id: a.id }) }),
        el('button', { type: 'button', class: 'act deny', text: 'Deny', onclick: () => ctlSend({ type: 'deny', id: a.id }) }));
      setTimeout(tick, 0);
      return card;
    });
    box.replaceChildren(...cards);
  }

  // The live picture now, with the action's target points outlined.
  function ctlSnapshot(a) {
    if (!screenCanvas.width) return null;
    const c = el('canvas', { width: String(screenCanvas.width), height: String(screenCanvas.height), 'aria-label': 'The screen and where the action lands' });
    const g = c.getContext('2d');
    g.drawImage(screenCanvas, 0, 0);
    const scale = Math.max(2, c.width / 240);
    for (const d of clickPoints(a.tool, a.args)) {
      const p = desktopToFrame(d.x, d.y);
      if (!p) continue;
      g.beginPath();
      g.arc(p.x, p.y, 8 * scale, 0, Math.PI * 2);
      g.lineWidth = 2 * scale;
      g.strokeStyle = '#fff';
      g.stroke();
      g.lineWidth = scale;
      g.strokeStyle = '#f33';
      g.stroke();
    }
    return c;
  }

  function ctlTake() {
    ctlAskNotifications();
    if (ctl.holder === 'other' && !confirm('Another tab has control of the desktop. Take it over?')) return;
    ctlSend({ type: 'take', force: ctl.holder === 'other' });
  }

  $('ctl-take').addEventListener('click', ctlTake);
  $('ctl-release').addEventListener('click', () => {
    ctlFlushMove();
    ctlSend({ type: 'release', note: ctlNoteTake() });
  });
  // A chord from the menu: keys down in order, up in reverse (as a hand would).
  $('ctl-keys').addEventListener('change', (e) => {
    const keys = e.target.value ? e.target.value.split('+') : [];
    e.target.value = '';
    if (ctl.holder !== 'you') return;
    for (const key of keys) ctlSend({ type: 'key', key, down: true });
    for (const key of keys.reverse()) ctlSend({ type: 'key', key, down: false });
    $('ctl-input').focus({ preventScroll: true });
  });
  $('ctl-pause').addEventListener('click', () => {
    ctlAskNotifications();
    ctlSend({ type: ctl.paused ? 'resume' : 'pause' });
  });

  // Pointer: client pixels -> pixels of the frame on the canvas (floor), or
  // null outside the picture. The server maps frame -> desktop exactly.
  function ctlFramePoint(e) {
    const r = screenCanvas.getBoundingClientRect();
    if (!screenCanvas.width || !r.width || !r.height) return null;
    const x = Math.floor((e.clientX - r.left) * screenCanvas.width / r.width);
    const y = Math.floor((e.clientY - r.top) * screenCanvas.height / r.height);
    if (x < 0 || y < 0 || x >= screenCanvas.width || y >= screenCanvas.height) return null;
    return { x, y };
  }

  function ctlFlushMove() {
    clearTimeout(ctl.moveTimer);
    ctl.moveTimer = 0;
    if (ctl.lastMove) ctlSend({ type: 'move', ...ctl.lastMove });
    ctl.lastMove = null;
  }

  const BROWSER_BUTTONS = [1, 2, 3, 8, 9];   // MouseEvent.button 0..4 -> X buttons
  const stageEl = $('stage');
  stageEl.addEventListener('pointerdown', (e) => {
    if (ctl.holder !== 'you' || e.pointerType === 'touch') return;   // touch: below
    const p = ctlFramePoint(e);
    if (!p || BROWSER_BUTTONS[e.button] === undefined) return;
    e.preventDefault();
    $('ctl-input').focus({ preventScroll: true });
    try { stageEl.setPointerCapture(e.pointerId); } catch { /* synthetic */ }
    ctlFlushMove();
    ctlSend({ type: 'button', ...p, button: BROWSER_BUTTONS[e.button], down: true });
  });
  stageEl.addEventListener('pointerup', (e) => {
    if (ctl.holder !== 'you' || e.pointerType === 'touch') return;   // touch: below
    const p = ctlFramePoint(e);
    if (BROWSER_BUTTONS[e.button] === undefined) return;
    e.preventDefault();
    ctlFlushMove();
    // Released outside the picture: at its nearest edge, so nothing stays down.
    const r = p || { x: Math.min(Math.max(0, ctl.lastPoint ? ctl.lastPoint.x : 0), screenCanvas.width - 1),
      y: Math.min(Math.max(0, ctl.lastPoint ? ctl.lastPoint.y : 0), screenCanvas.height - 1) };
    ctlSend({ type: 'button', ...r, button: BROWSER_BUTTONS[e.button], down: false });
  });
  stageEl.addEventListener('pointermove', (e) => {
    if (ctl.holder !== 'you' || e.pointerType === 'touch') return;   // touch: below
    const p = ctlFramePoint(e);
    if (!p) return;
    ctl.lastPoint = p;
    ctl.lastMove = p;
    if (!ctl.moveTimer) ctl.moveTimer = setTimeout(ctlFlushMove, 16);
  });
  stageEl.addEventListener('wheel', (e) => {
    if (ctl.holder !== 'you') return;
    const p = ctlFramePoint(e);
    if (!p) return;
    e.preventDefault();
    const k = e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? 800 : 1;
    ctlFlushMove();
    ctlSend({ type: 'wheel', ...p, dx: e.deltaX * k, dy: e.deltaY * k });
  }, { passive: false });
  stageEl.addEventListener('contextmenu', (e) => { if (ctl.holder === 'you') e.preventDefault(); });

  // ---- touch: one finger is the pointer, two fingers zoom and pan ----
  // The zoom is a CSS transform on both canvases (from their top-left
  // corner). ctlFramePoint maps through getBoundingClientRect, which includes
  // the transform, so a tap on a zoomed picture lands on the desktop pixel
  // under the finger.

  const zoom = { k: 1, tx: 0, ty: 0 };
  const ZOOM_MAX = 8;

  function zoomApply() {
    const w = screenCanvas.offsetWidth, h = screenCanvas.offsetHeight;
    zoom.k = Math.min(ZOOM_MAX, Math.max(1, zoom.k));
    // The zoomed picture keeps covering its own box: no panning into the void.
    zoom.tx = Math.min(0, Math.max(w - w * zoom.k, zoom.tx));
    zoom.ty = Math.min(0, Math.max(h - h * zoom.k, zoom.ty));
    const on = zoom.k > 1.001;
    if (!on) Object.assign(zoom, { k: 1, tx: 0, ty: 0 });
    const t = on ? `translate(${zoom.tx}px, ${zoom.ty}px) scale(${zoom.k})` : '';
    for (const c of [screenCanvas, overlay]) c.style.transform = t;
    stage.classList.toggle('zoomed', on);
    stage.dataset.zoom = zoom.k.toFixed(3);
    $('view-unzoom').hidden = !on;
    $('view-unzoom').textContent = on ? `${zoom.k.toFixed(1)}× ✕` : '1×';
  }

  // A pinch: zoom by the fingers' spread, keeping the picture point that
  // was under their midpoint at the start under their midpoint now.
  const touches = new Map();   // pointerId -> {x, y} (client)
  let pinch = null, tap = null;
  const twoFingers = () => {
    const [a, b] = [...touches.values()];
    return { d: Math.hypot(a.x - b.x, a.y - b.y) || 1, mx: (a.x + b.x) / 2, my: (a.y + b.y) / 2 };
  };
  function pinchStart() {
    const f = twoFingers(), r = screenCanvas.getBoundingClientRect();
    const ox = r.left - zoom.tx, oy = r.top - zoom.ty;   // the untransformed box
    pinch = { ...f, k: zoom.k, ox, oy, lx: (f.mx - r.left) / zoom.k, ly: (f.my - r.top) / zoom.k };
  }
  function pinchMove() {
    const f = twoFingers();
    zoom.k = Math.min(ZOOM_MAX, Math.max(1, pinch.k * f.d / pinch.d));
    zoom.tx = f.mx - pinch.ox - pinch.lx * zoom.k;
    zoom.ty = f.my - pinch.oy - pinch.ly * zoom.k;
    zoomApply();
  }

  // One finger while holding: a tap clicks where it went down; a drag
  // (past a few pixels) presses there, moves and releases.
  function tapSend(p, down) { if (p) ctlSend({ type: 'button', ...p, button: 1, down }); }
  function tapEnd(e, cancelled) {
    if (!tap || e.pointerId !== tap.id) return;
    const t = tap;
    tap = null;
    if (ctl.holder !== 'you') return;
    if (t.dragging) tapSend(ctlFramePoint(e) || t.last, false);
    else if (!cancelled) { tapSend(t.p, true); tapSend(t.p, false); }
  }
  stageEl.addEventListener('pointerdown', (e) => {
    if (e.pointerType !== 'touch') return;
    touches.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (touches.size === 2) {
      // A second finger: a pinch, not a click (a drag already begun ends).
      if (tap && tap.dragging && ctl.holder === 'you') tapSend(tap.last, false);
      tap = null;
      pinchStart();
      e.preventDefault();
    } else if (touches.size === 1 && ctl.holder === 'you') {
      const p = ctlFramePoint(e);
      if (p) tap = { id: e.pointerId, x: e.clientX, y: e.clientY, p, last: p, dragging: false };
      e.preventDefault();
    }
  });
  stageEl.addEventListener('pointermove', (e) => {
    if (e.pointerType !== 'touch' || !touches.has(e.pointerId)) return;
    touches.set(e.pointerId, { x: e.clientX, y: e.clientY });
    if (pinch && touches.size === 2) { pinchMove(); return; }
    if (!tap || e.pointerId !== tap.id || ctl.holder !== 'you') return;
    const p = ctlFramePoint(e);
    if (!tap.dragging && Math.hypot(e.clientX - tap.x, e.clientY - tap.y) > 8) {
      tap.dragging = true;
      ctlFlushMove();
      tapSend(tap.p, true);
    }
    if (tap.dragging && p) { tap.last = p; ctlSend({ type: 'move', ...p }); }
  });
  for (const type of ['pointerup', 'pointercancel']) {
    stageEl.addEventListener(type, (e) => {
      if (e.pointerType !== 'touch') return;
      touches.delete(e.pointerId);
      if (touches.size < 2) pinch = null;
      tapEnd(e, type === 'pointercancel');
    });
  }
  $('view-unzoom').addEventListener('click', () => { zoom.k = 1; zoomApply(); });

  // Keyboard: a hidden textarea has the focus while this tab holds control,
  // so composition (IME) and the browser's text insertion work; keys are
  // sent as they are, characters the keyboard cannot make come as text.
  const input = $('ctl-input');
  const downKeys = new Map();   // code -> key, to release on blur
  function ctlReleaseKeys() {
    for (const [code, key] of downKeys) ctlSend({ type: 'key', key, code, down: false });
    downKeys.clear();
  }
  input.addEventListener('keydown', (e) => {
    // A soft keyboard's keydown names no key ('Unidentified'): its input
    // event brings the text.
    if (ctl.holder !== 'you' || e.isComposing || e.key === 'Process' || e.key === 'Dead' || e.key === 'Unidentified') return;
    // Ctrl/Cmd+V: let the browser paste (the paste event sends the text).
    if ((e.ctrlKey || e.metaKey) && !e.altKey && (e.key === 'v' || e.key === 'V')) return;
    e.preventDefault();
    if (!e.repeat) downKeys.set(e.code || e.key, e.key);
    ctlSend({ type: 'key', key: e.key, code: e.code, down: true });
  });
  input.addEventListener('keyup', (e) => {
    if (ctl.holder !== 'you' || e.key === 'Process' || e.key === 'Dead' || e.key === 'Unidentified') return;
    e.preventDefault();
    downKeys.delete(e.code || e.key);
    ctlSend({ type: 'key', key: e.key, code: e.code, down: false });
  });
  input.addEventListener('compositionend', (e) => {
    if (ctl.holder === 'you' && e.data) ctlSend({ type: 'text', text: e.data });
    input.value = '';
  });
  input.addEventListener('input', (e) => {
    if (ctl.holder === 'you' && !e.isComposing && e.inputType === 'insertText' && e.data) {
      ctlSend({ type: 'text', text: e.data });
    }
    // A soft keyboard's Backspace and Enter arrive as edits, not keys (a
    // hardware key's keydown was prevented, so it makes no edit).
    const edit = { deleteContentBackward: 'Backspace', insertLineBreak: 'Enter', insertParagraph: 'Enter' }[e.inputType];
    if (ctl.holder === 'you' && edit) {
      ctlSend({ type: 'key', key: edit, down: true });
      ctlSend({ type: 'key', key: edit, down: false });
    }
    if (!e.isComposing) input.value = '';
  });
  input.addEventListener('paste', (e) => {
    if (ctl.holder !== 'you') return;
    e.preventDefault();
    const text = e.clipboardData ? e.clipboardData.getData('text/plain') : '';
    if (text) ctlSend({ type: 'paste', text: text.slice(0, 12000) });
  });
  input.addEventListener('blur', () => { ctlReleaseKeys(); ctlKbdCue(); });
  input.addEventListener('focus', ctlKbdCue);
  window.addEventListener('blur', ctlKbdCue);
  window.addEventListener('focus', ctlKbdCue);
  // The soft keyboard comes up for a focus inside the tap's own handler.
  $('ctl-kbd').addEventListener('click', () => input.focus({ preventScroll: true }));

  // ---- activity timeline ----

  function argSummary(args) {
    if (!args || typeof args !== 'object') return '';
    if (Array.isArray(args.actions)) {
      return args.actions.map((a) => {
        if (!a || typeof a !== 'object') return '?';
        const bits = [a.type];
        if (typeof a.x === 'number') bits.push(`${a.x},${a.y}`);
        if (Array.isArray(a.coordinate)) bits.push(a.coordinate.join(','));
        if (typeof a.text === 'string') bits.push(JSON.stringify(a.text.length > 24 ? a.text.slice(0, 24) + '…' : a.text));
        if (Array.isArray(a.keys)) bits.push(a.keys.join('+'));
        return bits.join(' ');
      }).join(' · ');
    }
    return Object.entries(args).map(([k, v]) => {
      let s = typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v);
      if (s && s.length > 40) s = s.slice(0, 40) + '…';
      return `${k}=${s}`;
    }).join(' ');
  }

  // ---- timeline: who acted ----
  // Every event names its actor (DESIGN.md 5.5): an agent (the MCP client's
  // name, REST, stdio), a person in the dashboard, or deskd itself.

  function actorOf(ev) {
    const a = ev.actor && typeof ev.actor === 'object' ? ev.actor : null;
    const kind = a && ['agent', 'person', 'deskd'].includes(a.kind) ? a.kind : 'agent';
    const name = (a && a.name) || ev.source || 'rest';
    const text = kind === 'person' ? (name === 'dashboard' ? 'person' : `person: ${name}`)
      : kind === 'deskd' ? 'deskd' : name;
    // The whole name on hover too (the chip wraps it, but a title survives
    // any width).
    const title = [text, kind, a && a.via && a.via !== name ? `via ${a.via}` : '',
      a && a.session ? `session ${a.session}` : ''].filter(Boolean).join(' · ');
    return { kind, text, title };
  }

  function whoSpan(ev) {
    const a = actorOf(ev);
    return el('span', { class: `who ${a.kind}`, title: a.title, text: a.text });
  }

  // A thumbnail for an agent's screenshot: fetched with the token (an <img>
  // cannot send it), freed when the entry leaves. deskd makes it just after
  // the call, so a fresh one may need a retry; an old one (history replayed
  // on connect) that is gone stays gone.
  async function loadThumb(id, call, ts) {
    if (call.thumb) return;
    call.thumb = el('img', { class: 'thumb', alt: 'what the agent saw', dataset: { event: String(id) } });
    const fresh = Math.abs(Date.now() / 1000 - ts) < 10;
    const waits = fresh ? [250, 500, 1000, 2000] : [];
    for (let i = 0; i <= waits.length; i++) {
      try {
        const r = await api(`/api/v1/events/${encodeURIComponent(id)}/thumbnail`);
        const url = URL.createObjectURL(await r.blob());
        if (!state.calls.has(id)) { URL.revokeObjectURL(url); return; }
        call.thumbUrl = url;
        call.thumb.src = url;
        if (call.li && !call.thumb.isConnected) call.li.querySelector('.row').after(call.thumb);
        return;
      } catch (err) {
        if (err.status === 401 || i === waits.length) return;
        await new Promise((res) => setTimeout(res, waits[i]));
      }
    }
  }

  // Events that are no tool call (take control, hand back, a help request,
  // pause, an approval, a person's input summarised): one line each.
  function onNote(ev) {
    const key = ev.id;
    if (state.calls.has(key)) return;
    const ds = { id: String(ev.id), kind: String(ev.kind), actor: actorOf(ev).kind };
    if (typeof ev.tool === 'string') ds.tool = ev.tool;         // control events name what happened here
    if (typeof ev.status === 'string') ds.status = ev.status;
    const li = el('li', { class: 'note', dataset: ds },
      el('div', { class: 'row', title: JSON.stringify(ev, null, 2) },
        el('span', { class: 't', text: fmtTime(ev.ts) }),
        whoSpan(ev),
        el('span', { class: 'tool', text: String(ev.tool || ev.kind).replace(/_/g, ' ') }),
        el('span', { class: 'args', text: ev.summary || '' })));
    state.calls.set(key, { li, note: true });
    const tl = $('timeline');
    const atTop = tl.scrollTop < 8;
    tl.prepend(li);
    if (!atTop) tl.scrollTop += li.offsetHeight;
    applyFilter(li);
  }

  function forget(call) {
    if (call.kind === 'help') state.helps.delete(call.key);
    if (call.li) call.li.remove();
    if (call.thumbUrl) URL.revokeObjectURL(call.thumbUrl);
  }

  function onEvent(ev) {
    if (ev.id === undefined) return;
    const approval = ev.kind === 'control' && ev.tool === 'approval' && ev.call !== undefined;
    const folds = (ev.tool === 'request_human_help' && (ev.kind === 'tool' || ev.call !== undefined))
      || (ev.kind === 'control' && (ev.tool === 'take_control' || ev.tool === 'hand_back')) || approval;
    // A reconnect replays the history: a folded event counts once.
    const seen = `${ev.kind}:${ev.id}:${ev.status}`;
    if (folds && state.folded.has(seen)) return;
    if (folds) state.folded.add(seen);
    for (const old of state.folded) { if (state.folded.size <= 4 * MAX_TIMELINE) break; state.folded.delete(old); }
    if (ev.tool === 'request_human_help' && (ev.kind === 'tool' || ev.call !== undefined)) {
      helpOnEvent(ev);
    } else if (ev.kind === 'control' && (ev.tool === 'take_control' || ev.tool === 'hand_back')) {
      holdOnEvent(ev);
    } else if (approval) {
      approvalOnEvent(ev);
    } else if (ev.kind && ev.kind !== 'tool') {
      onNote(ev);
    } else {
      onToolEvent(ev);
    }
    while (state.calls.size > MAX_TIMELINE) {
      const [oldId, old] = state.calls.entries().next().value;
      forget(old);
      state.calls.delete(oldId);
    }
    $('act-count').textContent = String(state.calls.size);
  }

  // ---- timeline: a help request or a hold is one row ----
  // A help request is several events: the call (started, ended), the request
  // (waiting, then its outcome; both name the call as "call") and the
  // person's take and hand-back in between. They fold into one row: who
  // asked what, how it ended and how long it took. A hold without a request
  // (Take control ... Hand back) is one row as well.

  const HELP_END = { handed_back: 'handed back', dismissed: 'dismissed', timeout: 'timed out', cancelled: 'cancelled (the agent gave up)' };
  const HOLD_END = { handed_back: 'handed back', idle: 'ended: no input for the idle timeout', tab_closed: 'ended: the tab closed', tab_gone: 'ended: the tab went away' };
  // Rounded first, then the unit chosen (999.6 ms is "1.0 s", not "1000 ms").
  const fmtDur = (ms) => {
    if (Math.round(ms) < 1000) return `${Math.round(ms)} ms`;
    const tenths = Math.round(ms / 100);
    if (tenths < 600) return `${(tenths / 10).toFixed(1)} s`;
    const s = Math.round(ms / 1000);
    return `${Math.floor(s / 60)} min ${s % 60} s`;
  };

  // The note this page sent with its last hand-back or dismissal: events say
  // only whether there was one (it may be a secret), this tab knows the text.
  function ctlTakeSentNote() {
    const n = ctl.sentNote;
    ctl.sentNote = null;
    return n && Date.now() - n.at < 15000 ? n.text : null;
  }

  function noteText(withNote, text) {
    if (text) return ` with the note \u201c${text}\u201d`;
    return withNote ? ' with a note' : '';
  }

  function groupRow(key, g) {
    const li = g.li || el('li', { class: 'group', dataset: { id: String(key), kind: g.kind } });
    g.li = li;
    const first = g.events[0];
    const running = g.kind === 'help' ? !g.outcome && !g.failed : !g.end;
    li.dataset.tool = g.kind === 'help' ? 'request_human_help' : 'take_control';
    li.dataset.status = running ? 'started' : g.failed ? 'error' : 'ok';
    li.dataset.outcome = g.kind === 'help' ? (g.outcome || g.failed || '') : (g.end ? g.end.status : '');
    li.dataset.actor = actorOf(g.actorEv || first).kind;
    li.classList.toggle('err', !!g.failed && g.outcome !== 'cancelled');
    let what, end, ms = null;
    if (g.kind === 'help') {
      what = g.reason !== undefined ? `\u201c${g.reason}\u201d` : '';
      const hold = g.hold && g.hold.end ? `, held ${fmtDur((g.hold.end.ts - g.hold.ts) * 1000)}` : '';
      // The request's own outcome says more than the call's status (a
      // cancelled request ends its call with an error).
      end = g.outcome === 'timeout' ? `timed out after ${g.timeout_s ?? '?'} s`
        : g.outcome ? `${HELP_END[g.outcome] || g.outcome}${noteText(g.withNote, g.note)}${hold}`
        : g.failed ? `failed: ${g.failed}`
        : g.hold ? 'a person has the desktop\u2026' : 'waiting for a person\u2026';
      if (g.outcome || g.failed) ms = g.durationMs ?? ((g.endTs - first.ts) * 1000);
    } else {
      what = g.takenOver ? 'taken over by another tab' : '';
      end = g.end ? `${HOLD_END[g.end.status] || g.end.status}${noteText(g.end.with_note, g.note)}` : 'holding\u2026';
      if (g.end) ms = (g.end.ts - g.ts) * 1000;
    }
    const row = el('div', { class: 'row', role: 'button', tabindex: '0', title: 'Show the events' },
      el('span', { class: 't', text: fmtTime(g.ts) }),
      whoSpan(g.actorEv || first),
      el('span', { class: 'tool', text: g.kind === 'help' ? 'help request' : 'took control' }),
      el('span', { class: 'args', text: what, title: what }),
      el('span', { class: 'dur', text: ms === null ? '' : fmtDur(ms) }),
      el('span', { class: 'st', title: li.dataset.status }),
      el('span', { class: 'outcome', text: end }));
    const open = li.querySelector('pre');
    li.replaceChildren(row);
    if (open) li.append(groupDetails(g));
    const toggle = () => {
      const pre = li.querySelector('pre');
      if (pre) pre.remove(); else li.append(groupDetails(g));
    };
    row.addEventListener('click', toggle);
    row.addEventListener('keydown', (k) => { if (k.key === 'Enter' || k.key === ' ') { k.preventDefault(); toggle(); } });
    if (!li.isConnected) {
      const tl = $('timeline');
      const atTop = tl.scrollTop < 8;
      tl.prepend(li);
      if (!atTop) tl.scrollTop += li.offsetHeight;
    }
    applyFilter(li);
  }

  function groupDetails(g) {
    const evs = [...g.events, ...(g.hold ? g.hold.events : [])].sort((a, b) => a.ts - b.ts);
    return el('pre', { text: evs.map((e) => JSON.stringify(e)).join('\n') });
  }

  function helpGroup(callId, ev) {
    let g = state.helps.get(callId);
    if (!g) {
      g = { kind: 'help', key: callId, ts: ev.ts, events: [], li: null };
      state.helps.set(callId, g);
      state.calls.set(callId, g);
    }
    return g;
  }

  function helpOnEvent(ev) {
    const g = helpGroup(ev.kind === 'tool' ? ev.id : ev.call, ev);
    g.events.push(ev);
    if (ev.kind === 'tool') {
      if (ev.status === 'started') {
        g.actorEv = ev;
        g.ts = ev.ts;
        if (ev.args && typeof ev.args.reason === 'string') g.reason = ev.args.reason;
      } else {
        g.durationMs = ev.duration_ms;
        g.endTs = ev.ts;
        if (ev.status !== 'ok') g.failed = ev.status;
      }
    } else if (ev.status === 'waiting') {
      if (typeof ev.reason === 'string') g.reason = ev.reason;
      g.timeout_s = ev.timeout_s;
    } else {
      g.outcome = ev.status;
      g.endTs = ev.ts;
      g.withNote = !!ev.with_note;
      if (ev.status === 'handed_back' && !g.hold && state.lastHold && !state.lastHold.help
          && Math.abs(state.lastHold.end.ts - ev.ts) < 2) {
        // The hand-back that answered this request: its row folds in here.
        const h = state.lastHold;
        forget(h);
        state.calls.delete(h.key);
        h.help = g;
        g.hold = h;
      }
      if (g.withNote) g.note = (g.hold && g.hold.note) || ctlTakeSentNote();
    }
    groupRow(g.key, g);
  }

  function holdOnEvent(ev) {
    let h = state.hold;
    if (ev.tool === 'take_control') {
      if (h && ev.status === 'taken_over') {
        h.takenOver = true;
        h.events.push(ev);
      } else {
        h = state.hold = { kind: 'hold', key: `hold-${ev.id}`, ts: ev.ts, events: [ev], li: null };
        // Taking control while a request waits answers it: one row.
        const waiting = [...state.helps.values()].filter((g) => !g.outcome && !g.failed && !g.hold);
        if (waiting.length) {
          h.help = waiting[waiting.length - 1];
          h.help.hold = h;
        } else {
          state.calls.set(h.key, h);
        }
      }
    } else {
      if (!h) {   // its take is older than the history replayed
        h = { kind: 'hold', key: `hold-${ev.id}`, ts: ev.ts, events: [], li: null };
        state.calls.set(h.key, h);
      }
      h.events.push(ev);
      h.end = ev;
      if (ev.with_note) h.note = ctlTakeSentNote();
      state.hold = null;
      state.lastHold = h;
    }
    if (h.help) groupRow(h.help.key, h.help);
    else groupRow(h.key, h);
  }

  // An approval's events (pending, asked of the client, its answer) name
  // their call: they are said on the call's own row, not rows of their own.
  const APPROVAL_TEXT = { pending: 'waiting for approval\u2026', asked: 'asked the client to approve\u2026',
    approved: 'approved', denied: 'denied', timeout: 'approval timed out', cancelled: 'approval cancelled' };

  function callOf(id) {
    let call = state.calls.get(id);
    if (!call) {
      call = { start: null, end: null, li: null };
      state.calls.set(id, call);
    }
    return call;
  }

  function approvalOnEvent(ev) {
    const call = callOf(ev.call);
    (call.approvals = call.approvals || []).push(ev);
    if (call.start || call.end) renderCall(ev.call, call);
  }

  function approvalText(call) {
    const last = call.approvals && call.approvals[call.approvals.length - 1];
    if (!last) return '';
    const by = ['approved', 'denied'].includes(last.status) ? ` by ${actorOf(last).text}` : '';
    return `${APPROVAL_TEXT[last.status] || last.status}${by}`;
  }

  function onToolEvent(ev) {
    const call = callOf(ev.id);
    if (ev.status === 'started') call.start = ev;
    else call.end = ev;
    renderCall(ev.id, call);
    if (call.end && call.end.screenshot && call.end.screenshot.thumbnail) loadThumb(ev.id, call, ev.ts);
    if (call.end && call.end.status === 'ok' && call.start) {
      const pts = clickPoints(call.end.tool || call.start.tool, call.start.args);
      if (pts.length) flashAt(pts);
      if (/^record_/.test(call.end.tool)) refreshRecordings();
      if (/^window_/.test(call.end.tool)) refreshWindows();
    }
  }

  function renderCall(id, call) {
    const s = call.start || call.end;
    const e = call.end;
    const status = e ? e.status : 'started';
    const isErr = e && e.status !== 'ok';
    const li = call.li || el('li', { dataset: { id: String(id) } });
    li.dataset.tool = s.tool;
    li.dataset.status = status;
    li.dataset.actor = actorOf(s).kind;
    li.classList.toggle('err', !!isErr);
    const dur = e && typeof e.duration_ms === 'number'
      ? (e.duration_ms < 10 ? e.duration_ms.toFixed(1) : Math.round(e.duration_ms)) + ' ms' : '';
    const row = el('div', { class: 'row', role: 'button', tabindex: '0', title: 'Show details' },
      el('span', { class: 't', text: fmtTime(s.ts) }),
      whoSpan(s),
      el('span', { class: 'tool', text: s.tool }),
      el('span', { class: 'args', text: argSummary(call.start ? call.start.args : null) }),
      el('span', { class: 'dur', text: dur }),
      el('span', { class: 'st', title: status }));
    if (call.approvals) {
      li.dataset.approval = call.approvals[call.approvals.length - 1].status;
      row.append(el('span', { class: 'approval', text: approvalText(call) }));
    }
    if (isErr && (e.error || e.status)) {
      row.append(el('span', { class: 'errtext', text: `${e.status}: ${e.error || ''}` }));
    }
    const open = li.querySelector('pre');
    li.replaceChildren(row);
    if (call.thumb && call.thumb.src) li.append(call.thumb);
    if (open) li.append(detailsOf(call));
    const toggle = () => {
      const pre = li.querySelector('pre');
      if (pre) pre.remove(); else li.append(detailsOf(call));
    };
    row.addEventListener('click', toggle);
    row.addEventListener('keydown', (k) => { if (k.key === 'Enter' || k.key === ' ') { k.preventDefault(); toggle(); } });
    if (!call.li) {
      call.li = li;
      const tl = $('timeline');
      const atTop = tl.scrollTop < 8;
      tl.prepend(li);
      if (!atTop) tl.scrollTop += li.offsetHeight;
    }
    applyFilter(li);
  }

  function detailsOf(call) {
    const s = call.start || call.end;
    const e = call.end;
    const d = {
      id: s.id, tool: s.tool, actor: s.actor, source: s.source, session: s.session,
      started: new Date(s.ts * 1000).toISOString(),
      status: e ? e.status : 'running',
      duration_ms: e ? e.duration_ms : undefined,
      error: e ? e.error : undefined,
      args: call.start ? call.start.args : undefined,
      approval: call.approvals ? call.approvals.map((a) => `${a.status} (${actorOf(a).text})`) : undefined,
    };
    if (e) {
      for (const [k, v] of Object.entries(e)) {
        if (!['type', 'id', 'ts', 'kind', 'actor', 'source', 'session', 'tool', 'status', 'duration_ms', 'error'].includes(k)) d[k] = v;
      }
    }
    return el('pre', { text: JSON.stringify(d, null, 2) });
  }

  function applyFilter(li) {
    li.hidden = $('act-errors').checked && !li.classList.contains('err');
  }
  $('act-errors').addEventListener('change', () => {
    for (const li of $('timeline').children) applyFilter(li);
  });

  // ---- windows ----

  function setWindows(list) {
    state.windows = list.map((w) => ({ ...w, id: Number(w.id) }));
    renderWindows();
    updateTargetName();
  }

  async function refreshWindows() {
    try {
      const body = await api('/api/v1/windows');
      setWindows(Array.isArray(body) ? body : (body.windows || []));
    } catch (err) {
      if (err.status === 401) authFailed();
    }
  }

  function renderWindows() {
    const ul = $('windows');
    const items = [];
    const pick = (target, id) => () => watch(target, id);
    const key = (fn) => (k) => { if (k.key === 'Enter' || k.key === ' ') { k.preventDefault(); fn(); } };
    const screenSel = state.watch.target === 'screen';
    const onScreen = pick('screen', 0);
    items.push(el('li', { class: 'pick' + (screenSel ? ' sel' : ''), tabindex: '0', dataset: { target: 'screen' }, onclick: onScreen, onkeydown: key(onScreen) },
      el('span', { class: 'title', text: 'Whole screen' }),
      el('span', { class: 'sub', text: state.screen.width ? `${state.screen.width}×${state.screen.height}` : '' })));
    for (const w of state.windows) {
      const sel = state.watch.target === 'window' && state.watch.window === w.id;
      const fn = pick('window', w.id);
      const title = w.title || '(untitled)';
      items.push(el('li', { class: 'pick' + (sel ? ' sel' : ''), tabindex: '0', title: `${title}\n${w.app || ''} ${hex(w.id)}`,
        dataset: { target: 'window', window: String(w.id) }, onclick: fn, onkeydown: key(fn) },
      el('span', { class: 'title', text: title }),
      w.focused ? el('span', { class: 'badge', text: 'focused' }) : null,
      el('span', { class: 'sub', text: `${w.width}×${w.height}` })));
    }
    if (!state.windows.length) items.push(el('li', { class: 'empty', text: 'No windows' }));
    ul.replaceChildren(...items);
  }

  $('win-refresh').addEventListener('click', refreshWindows);

  // ---- recordings ----

  function recMsg(text, isError) {
    const p = $('rec-msg');
    p.textContent = text || '';
    p.className = 'msg' + (isError ? ' err' : '');
    p.hidden = !text;
  }

  function updateRecButtons() {
    const start = $('rec-start');
    const stop = $('rec-stop');
    const active = state.activeRec;
    stop.hidden = !active;
    start.hidden = !!active;
    start.disabled = state.watch.target !== 'window';
    start.title = start.disabled ? 'Pick a window in the list to record it' : 'Record the watched window to MP4';
  }

  const ACTIVE_STATES = new Set(['recording', 'active', 'running', 'starting', 'stopping', 'finalizing']);
  function isRecording(r) {
    return r.active === true || ACTIVE_STATES.has(r.state) || ACTIVE_STATES.has(r.status);
  }

  async function refreshRecordings() {
    try {
      const body = await api('/api/v1/recordings');
      const list = body.recordings || [];
      state.recordings = list;
      const active = list.find(isRecording);
      if (active) state.activeRec = { id: active.id, window: active.window };
      else if (state.activeRec && list.some((r) => r.id === state.activeRec.id)) state.activeRec = null;
      renderRecordings();
      updateRecButtons();
    } catch (err) {
      if (err.status === 401) authFailed();
      else if (err.status !== 404) recMsg(`Cannot list recordings: ${err.message}`, true);
    }
  }

  function renderRecordings() {
    const ul = $('recordings');
    // Newest first: by start time, ties in the server's order (newest first).
    const started = (r) => Date.parse(r.started || '') || 0;
    const items = state.recordings.slice().sort((a, b) => started(b) - started(a)).map((r) => {
      const recording = isRecording(r);
      const failed = /fail|error|abort/.test(String(r.state || r.status || ''));
      const name = (r.path || '').split('/').pop() || `${r.id}.mp4`;
      const sub = [r.duration_seconds ? `${Number(r.duration_seconds).toFixed(1)} s` : '',
        typeof r.bytes === 'number' ? fmtBytes(r.bytes) : ''].filter(Boolean).join(' · ');
      return el('li', { dataset: { id: String(r.id) }, title: r.path || '' },
        recording ? el('span', { class: 'badge rec', text: 'REC' }) : null,
        el('span', { class: 'title', text: name }),
        el('span', { class: 'sub', text: sub }),
        failed ? el('span', { class: 'badge', title: r.error || '', text: 'failed' }) : null,
        recording || failed ? null : el('a', { href: '#', class: 'download', text: 'download', onclick: (e) => { e.preventDefault(); download(r, name); } }),
        recording ? null : el('button', { type: 'button', class: 'act ghost del', title: `Delete ${name}`, text: 'delete', onclick: (e) => deleteRecording(e.currentTarget, r, name) }));
    });
    if (!items.length) items.push(el('li', { class: 'empty', text: 'No recordings yet' }));
    ul.replaceChildren(...items);
  }

  // Two clicks: the first arms the button for a few seconds.
  async function deleteRecording(btn, r, name) {
    if (!btn.classList.contains('armed')) {
      btn.classList.add('armed');
      btn.textContent = 'delete?';
      setTimeout(() => { if (btn.isConnected) { btn.classList.remove('armed'); btn.textContent = 'delete'; } }, 4000);
      return;
    }
    btn.disabled = true;
    try {
      await api(`/api/v1/recordings/${encodeURIComponent(r.id)}`, { method: 'DELETE' });
      recMsg(`Deleted ${name}`);
    } catch (err) {
      if (err.status === 403 && state.role === 'view') recMsg('This token may only watch.', true);
      else recMsg(`Cannot delete ${name}: ${err.message}`, true);
    }
    refreshRecordings();
  }

  async function download(r, name) {
    try {
      const res = await api(`/api/v1/recordings/${encodeURIComponent(r.id)}`);
      const blob = await res.blob();
      const url = URL.createObjectURL(blob);
      const a = el('a', { href: url, download: name.endsWith('.mp4') ? name : name + '.mp4' });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } catch (err) {
      toast(`Download failed: ${err.message}`, true);
    }
  }

  $('rec-start').addEventListener('click', async () => {
    if (state.watch.target !== 'window') return;
    recMsg('Starting…');
    try {
      const res = await tool('record_start', { window: state.watch.window });
      const sc = res.structuredContent || {};
      state.activeRec = { id: sc.id, window: state.watch.window };
      recMsg(sc.path ? `Recording to ${sc.path}` : 'Recording');
      updateRecButtons();
      refreshRecordings();
    } catch (err) {
      if (err.status === 403) { setRole('view'); recMsg('This token may only watch.', true); } else recMsg(`Cannot record: ${err.message}`, true);
    }
  });

  $('rec-stop').addEventListener('click', async () => {
    const rec = state.activeRec;
    recMsg('Finishing the MP4…');
    try {
      const res = await tool('record_stop', rec && rec.id !== undefined ? { id: rec.id } : {});
      const sc = res.structuredContent || {};
      state.activeRec = null;
      recMsg(sc.bytes ? `Saved ${fmtBytes(sc.bytes)}, ${Number(sc.duration_seconds || 0).toFixed(1)} s` : 'Saved');
      updateRecButtons();
      refreshRecordings();
    } catch (err) {
      if (err.status === 404) state.activeRec = null;
      recMsg(`Cannot stop: ${err.message}`, true);
      updateRecButtons();
    }
  });
  $('rec-refresh').addEventListener('click', refreshRecordings);

  // ---- clipboard: the desktop's, through the tools (a person's page) ----
  // The person's own calls pass the gate, also while they hold the desktop.

  function clipMsg(text, isError) {
    $('clip-msg').textContent = text;
    $('clip-msg').className = 'msg' + (isError ? ' err' : '');
    $('clip-msg').hidden = !text;
  }

  function clipRender() {
    $('clip-read').title = "Show the text on the desktop's clipboard";
    $('clip-send').title = "Put this text on the desktop's clipboard, for Ctrl+V there";
  }

  $('clip-read').addEventListener('click', async () => {
    try {
      const r = await tool('clipboard_read', {});
      const s = r.structuredContent || {};
      $('clip-text').value = r.content?.[0]?.text ?? '';
      clipMsg(`Read ${fmtBytes(s.bytes || 0)} from the desktop`);
    } catch (err) {
      clipMsg(err.code === 'clipboard_empty' ? 'The desktop\'s clipboard is empty' : `Cannot read: ${err.message}`, err.code !== 'clipboard_empty');
    }
  });
  $('clip-send').addEventListener('click', async () => {
    const text = $('clip-text').value;
    try {
      await tool('clipboard_write', { text });
      clipMsg(`Sent ${fmtBytes(new TextEncoder().encode(text).length)} to the desktop's clipboard`);
    } catch (err) {
      clipMsg(`Cannot send: ${err.message}`, true);
    }
  });

  // ---- role ----

  function setRole(role) {
    state.role = role;
    document.body.classList.add('role-known');
    document.body.classList.toggle('view-only', role === 'view');
    // The agent's token watches and records, but control is the person's.
    $('role').textContent = role === 'agent' ? "agent's token: watch only (control needs the person's token)" : 'view only';
    $('role').title = role === 'agent' ? 'The dashboard URL deskd printed carries the person\'s token (<data-dir>/person-token).' : '';
    $('role').hidden = role !== 'view' && role !== 'agent';
  }

  // ---- status ----

  function showValue(v) {
    if (Array.isArray(v)) {
      if (!v.length) return 'none';
      return typeof v[0] === 'object' ? `${v.length} items` : v.join(', ');
    }
    if (typeof v === 'number' && !Number.isInteger(v)) return String(Math.round(v * 100) / 100);
    if (v && typeof v === 'object') return JSON.stringify(v);
    return String(v);
  }

  function flatten(obj, prefix, out) {
    for (const [k, v] of Object.entries(obj || {})) {
      const key = prefix ? `${prefix}.${k}` : k;
      if (v && typeof v === 'object' && !Array.isArray(v) && prefix.split('.').length < 2) flatten(v, key, out);
      else out.push([key, showValue(v)]);
    }
    return out;
  }

  async function refreshStatus() {
    const dl = $('status');
    try {
      const res = await tool('status');
      const rows = flatten(res.structuredContent || {}, '', []);
      dl.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v })]));
      if (!rows.length) dl.replaceChildren(el('dd', { text: 'No status' }));
    } catch (err) {
      if (err.status === 401) authFailed();
      dl.replaceChildren(el('dd', { text: `Cannot read the status: ${err.message}` }));
    }
  }

  $('status-btn').addEventListener('click', () => {
    const p = $('status-panel');
    p.hidden = !p.hidden;
    $('status-btn').setAttribute('aria-expanded', String(!p.hidden));
    if (!p.hidden) refreshStatus();
  });
  $('status-close').addEventListener('click', () => { $('status-panel').hidden = true; $('status-btn').setAttribute('aria-expanded', 'false'); });
  $('status-refresh').addEventListener('click', refreshStatus);
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape') $('status-panel').hidden = true; });

  // ---- start ----

  function authFailed() {
    const had = !!state.token;
    if (state.ws) { const ws = state.ws; state.ws = null; ws.close(); }
    sessionStorage.removeItem(TOKEN_KEY);
    state.token = null;
    showGate(had ? 'Wrong token' : 'Token needed',
      had ? 'deskd did not accept this token (401). It is not the one deskd uses now (it keeps the same token across restarts; a new one only comes with a new data directory, --token or --token-file). Paste the current token below.'
        : 'This dashboard needs deskd\'s token: the address had none after #token=. Paste it below.', had);
    showTokenHelp();
  }

  async function start() {
    state.token = readToken();
    $('gate').hidden = true;
    try {
      // A cheap authenticated probe: tells a wrong token from a good one.
      const body = await api('/api/v1/windows');
      setWindows(Array.isArray(body) ? body : (body.windows || []));
    } catch (err) {
      if (err.status === 401) { authFailed(); return; }
      if (err.status === 403) {
        showGate('Refused', `deskd refused this page: ${err.message}. If you use another host name or port forwarding, start deskd with --allow-origin.`, true);
        return;
      }
      toast(`Window list: ${err.message}`, true);
    }
    $('app').hidden = false;
    renderWindows();
    updateRecButtons();
    renderRecordings();
    if (!state.ws) connectLive();
    // Without a hello (a proxy eating WebSockets), show the controls anyway:
    // a view token still gets a 403 when it tries them.
    setTimeout(() => { if (!document.body.classList.contains('role-known')) setRole(state.role); }, 4000);
    refreshRecordings();
  }

  start();
})();
