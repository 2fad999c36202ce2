// scripts/check-deps (run by make test, after install-deps and npm-deps):
// what the tests, scripts and bench spawn is what scripts/install-deps
// installs, and the Node they run under is one every pinned npm package
// accepts. A test that passes only because this machine happens to have a
// program (or a newer Node) fails here first, with what to change.
//
// 1. Finds the programs the sources spawn:
//    - JavaScript (tests/, bench/, scripts/*.mjs): the literal command of
//      spawn/spawnSync/execFile/execFileSync/execSync, of the harness's run(),
//      launch() (second argument) and need(), the `needs: [...]` of run() and
//      launch() (what a shell they start runs), have('x') (an optional probe),
//      chromium.launch (Debian's chromium) and `command -v x`. A command that
//      is not a literal must be a binary this project builds (DESKD_BIN,
//      FIXTURE_BIN, DESKD) or carry a `// spawns: a b` comment on its line or
//      the line above (`// spawns: -` for a wrapper whose callers are scanned).
//      A spawn of 'node' is refused: process.execPath is the project's Node.
//    - Shell scripts (scripts/*, .ci/run): the command word of every simple
//      command that is not a builtin, and the programs a `# spawns: a b`
//      comment names (for scripts given to sh -c in a string). A bare `node`
//      is refused: scripts/node.
//    - deskd itself (*.c): desktop_find_program("x"), the programs it starts,
//      and a `/* spawns: a b */` comment (a program started by its path).
//    - Makefile recipes: a bare `node` is refused.
// 2. Each one must be in scripts/programs with its Debian package, and that
//    package must be installed by `scripts/install-deps SCOPE` for the scope of
//    the file that spawns it (tests/ and the test scripts: test; bench/:
//    bench; scripts/fresh-test and scripts/gnome-next: fresh; scripts/image and tests/image/: image;
//    deskd: run), or be Essential (always
//    installed). A listed program that nothing spawns is an error too.
// 3. Once installed (make test ran install-deps test): every program of the
//    build, run and test scopes is on PATH and belongs to its package (or to
//    one it depends on).
// 4. The Node running this (scripts/node: tests/node_modules/node, pinned in
//    tests/package-lock.json) satisfies the engines.node of every package in
//    the lockfile.
import { readFileSync, readdirSync, statSync, existsSync, realpathSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join, relative, resolve, delimiter, isAbsolute } from 'node:path';

const ROOT = resolve(new URL('..', import.meta.url).pathname);
const errors = [];
const err = (m) => errors.push(m);
const rel = (f) => relative(ROOT, f);

// ---------------------------------------------------------------- sources

function walk(dir, pred, out = []) {
  let names;
  try { names = readdirSync(dir); } catch { return out; }
  for (const n of names) {
    if (n === 'node_modules' || n.startsWith('.git') || n.startsWith('build')) continue;
    const p = join(dir, n);
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) walk(p, pred, out);
    else if (pred(p)) out.push(p);
  }
  return out;
}

/** The install-deps scope a source file's spawns belong to. */
function scopeOf(file) {
  const r = rel(file);
  if (r.startsWith('bench/')) return 'bench';
  if (r === 'scripts/fresh-test' || r === 'scripts/gnome-next') return 'fresh';
  if (r === 'scripts/image' || r.startsWith('tests/image/')) return 'image';
  if (r === 'scripts/install-deps') return 'build';
  if (r.endsWith('.c')) return 'run';
  return 'test';   // tests/, the scripts make test and make check run, .ci/run
}

const found = [];   // { prog, file, line, scope, optional }
const add = (prog, file, line, optional = false) => found.push({ prog, file, line, scope: scopeOf(file), optional });
const BUILT = new Set(['DESKD_BIN', 'FIXTURE_BIN', 'DESKD']);

function scanJs(file) {
  const lines = readFileSync(file, 'utf8').split('\n');
  // Whole-line comments say what code does, they do not do it (line numbers kept).
  const text = lines.map((l) => (/^\s*(\/\/|\/\*|\*)/.test(l) ? '' : l)).join('\n');
  const lineOf = (i) => text.slice(0, i).split('\n').length;
  // Harness functions count only where they are the harness's.
  const isHarness = rel(file) === 'tests/integration/lib/harness.mjs';
  const imported = new Set();
  for (const m of text.matchAll(/import\s*{([^}]*)}\s*from\s*'[^']*(?:harness|lib)\.mjs'/g)) {
    for (const n of m[1].split(',')) imported.add(n.trim().split(/\s+as\s+/)[0]);
  }
  const harnessFn = (n) => isHarness || imported.has(n);
  const annotation = (ln) => {
    for (const l of [lines[ln - 1], lines[ln - 2]]) {
      const m = /\/\/\s*spawns:\s*(.*)$/.exec(l || '');
      if (m) return m[1].split('(')[0].trim().split(/\s+/).filter((w) => w && w !== '-');   // "(why)" is a remark
    }
    return null;
  };
  const literal = (arg) => {
    const m = /^\s*(['"`])([^'"`$]+)\1/.exec(arg);
    return m ? m[2] : null;
  };
  const command = (arg, i, optional = false) => {
    const ln = lineOf(i);
    const lit = literal(arg);
    if (lit === 'node') {
      err(`${rel(file)}:${ln}: spawns "node" from PATH: spawn process.execPath (the project's Node) instead`);
      return;
    }
    if (lit) { add(lit, file, ln, optional); return; }
    const id = /^\s*([\w.]+)/.exec(arg)?.[1];
    const notes = annotation(ln);
    if (notes) { for (const p of notes) add(p, file, ln, optional); return; }
    if (id && BUILT.has(id)) return;
    err(`${rel(file)}:${ln}: spawns "${arg.trim().slice(0, 40)}", not a literal: name the programs in a // spawns: comment`);
  };
  const calls = [
    [/(?<![\w.])(?:spawn|spawnSync|execFile|execFileSync|execSync)\(([^)\n]*)/g, (m) => command(m[1], m.index)],
    [/(?<![\w.])(run|need)\(([^)\n]*)/g, (m) => {
      if (!harnessFn(m[1]) || /function\s+$/.test(text.slice(Math.max(0, m.index - 10), m.index))) return;
      // In the harness, need(cmd) and need(n) pass their callers' commands on.
      if (m[2].trim() === '' || (isHarness && /^\s*(cmd|n)\b/.test(m[2]))) return;
      command(m[2], m.index);
    }],
    [/(?<![\w.])launch\(\s*[^,]+,([^,)\n]*)/g, (m) => {
      if (!harnessFn('launch') || /function\s+$/.test(text.slice(Math.max(0, m.index - 10), m.index))) return;
      command(m[1], m.index);
    }],
    [/needs:\s*\[([^\]]*)\]/g, (m) => {
      for (const a of m[1].split(',').filter((s) => s.trim())) command(a, m.index);
    }],
    [/(?<![\w.])have\(([^)\n]*)/g, (m) => {
      if (/function\s+$/.test(text.slice(Math.max(0, m.index - 10), m.index))) return;
      command(m[1], m.index, true);
    }],
    [/\bchromium\.launch\(/g, (m) => add('chromium', file, lineOf(m.index))],
    [/command -v ([\w.-]+)/g, (m) => add(m[1], file, lineOf(m.index))],
  ];
  for (const [re, fn] of calls) for (const m of text.matchAll(re)) fn(m);
}

const SH_BUILTINS = new Set(`: . [ [[ alias break cd command continue echo eval exec exit export false
  getopts hash kill local printf pwd read readonly return set shift test times trap true type ulimit
  umask unalias unset wait`.split(/\s+/));
const SH_KEYWORDS = new Set('if then else elif fi do done while until ! { } time esac in'.split(' '));

/** The command words of a POSIX shell script (quotes, $( ), backquotes,
 *  case patterns, comments and here-strings of a plain script). */
function shellCommands(text) {
  const out = [];   // { word, line }
  const args = [];  // every word: { word, line }
  const functions = new Set([...text.matchAll(/^\s*([A-Za-z_]\w*)\s*\(\)/gm)].map((m) => m[1]));
  let line = 1;
  let words = [];
  let word = null;
  let cmdStart = true;   // the next word may be a command word
  let skipRest = false;  // for/case clauses: no command words until a separator
  const stack = ['cmd'];
  const saved = [];      // the command a $( ) interrupted, restored at its )
  const endWord = () => {
    endWordAll();
    if (word === null) return;
    const w = word;
    word = null;
    if (skipRest) return;
    if (!cmdStart) { words.push(w); return; }
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) return;         // an assignment
    if (/^[0-9]*[<>]/.test(w)) return;                        // a redirection
    if (SH_KEYWORDS.has(w)) return;
    if (functions.has(w)) { cmdStart = false; return; }       // a function of the script
    if (w === 'for' || w === 'case') { skipRest = true; return; }
    if (w === 'exec' || w === 'command' || w === 'nohup' || w === 'env') return;
    cmdStart = false;
    out.push({ word: w, line });
    words.push(w);
  };
  const endWordAll = () => {   // every word, for the arguments check below
    if (word !== null && !skipRest) args.push({ word, line, first: cmdStart });
  };
  const separator = () => { endWord(); cmdStart = true; skipRest = false; words = []; };
  const openSub = () => {
    saved.push({ words, word, cmdStart, skipRest });
    stack.push('sub');
    words = []; word = null; cmdStart = true; skipRest = false;
  };
  const closeSub = () => {
    endWord();
    stack.pop();
    ({ words, word, cmdStart, skipRest } = saved.pop());
    word = (word ?? '') + '$';   // the substitution is part of the word it is in
  };
  let heredoc = null;    // the word that ends the here-document being skipped
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = stack[stack.length - 1];
    if (heredoc !== null && c === '\n') {
      // A here-document is data (or a script for elsewhere), not commands.
      line++;
      for (;;) {
        const end = text.indexOf('\n', i + 1);
        const l = text.slice(i + 1, end < 0 ? text.length : end);
        i = end < 0 ? text.length : end;
        line++;
        if (l.replace(/^\t+/, '') === heredoc || end < 0) break;
      }
      heredoc = null;
      line--;
      separator();
      continue;
    }
    if (top !== 'dq' && c === '<' && text[i + 1] === '<' && word === null) {
      const m = /^<<-?\s*(['"]?)(\w+)\1/.exec(text.slice(i));
      if (m) { heredoc = m[2]; i += m[0].length - 1; continue; }
    }
    if (top === 'dq') {
      if (c === '\\') { word = (word ?? '') + text[++i]; continue; }
      if (c === '"') { stack.pop(); continue; }
      if (c === '$' && text[i + 1] === '(' && text[i + 2] !== '(') { i++; openSub(); continue; }
      if (c === '\n') line++;
      word = (word ?? '') + c;
      continue;
    }
    // Command context (top level, $( ), ( )).
    if (c === '#' && word === null) { while (i < text.length && text[i] !== '\n') i++; i--; continue; }
    if (c === '\\' && text[i + 1] === '\n') { i++; line++; continue; }
    if (c === '\\') { word = (word ?? '') + text[++i]; continue; }
    if (c === "'") {
      const j = text.indexOf("'", i + 1);
      const s = text.slice(i + 1, j < 0 ? text.length : j);
      line += (s.match(/\n/g) || []).length;
      word = (word ?? '') + s;
      i = j < 0 ? text.length : j;
      continue;
    }
    if (c === '"') { word = word ?? ''; stack.push('dq'); continue; }
    if (c === '$' && text[i + 1] === '(' && text[i + 2] === '(') {   // $(( arithmetic ))
      const j = text.indexOf('))', i);
      word = (word ?? '') + '0';
      i = j < 0 ? text.length : j + 1;
      continue;
    }
    if (c === '$' && text[i + 1] === '(') { i++; openSub(); continue; }
    if (c === '$' && text[i + 1] === '{') {
      const j = text.indexOf('}', i);
      word = (word ?? '') + '$';
      i = j < 0 ? text.length : j;
      continue;
    }
    if (c === '`') { separator(); continue; }
    if (c === '(') { separator(); stack.push('paren'); continue; }
    if (c === ')') {
      if (top === 'sub') { closeSub(); continue; }
      if (stack.length > 1) { stack.pop(); separator(); continue; }
      // A case pattern ("build)", "*)"): it was no command.
      word = null;
      if (out.length && words.length && out[out.length - 1].word === words[0]) out.pop();
      separator();
      continue;
    }
    if (c === '\n') { separator(); line++; continue; }
    if (c === ';' || c === '&' || c === '|') { separator(); continue; }
    if (c === ' ' || c === '\t') { endWord(); continue; }
    if ((c === '<' || c === '>') && (word === null || /^\d+$/.test(word))) {   // a redirection: skip its target
      word = null;
      let j = i + 1;
      while (text[j] === '>' || text[j] === '&' || text[j] === '<') j++;
      while (text[j] === ' ') j++;
      const m = /^("[^"]*"|'[^']*'|[^\s;&|()]+)/.exec(text.slice(j));
      i = j + (m ? m[0].length : 0) - 1;
      continue;
    }
    word = (word ?? '') + c;
  }
  endWord();
  return { commands: out, words: args };
}

function scanShell(file) {
  const text = readFileSync(file, 'utf8');
  // What a script gives sh -c in a string: a "# spawns: a b" comment names it.
  text.split('\n').forEach((l, i) => {
    const m = /^\s*#\s*spawns:\s*(.*)$/.exec(l);
    if (m) for (const p of m[1].split('(')[0].trim().split(/\s+/).filter(Boolean)) add(p, file, i + 1);
  });
  const { commands, words } = shellCommands(text);
  // `command -v x` probes a program the script then runs (install-deps
  // probes what to install; here-documents are not run here).
  let heredoc = null;
  text.split('\n').forEach((l, i) => {
    if (heredoc !== null) { if (l.replace(/^\t+/, '') === heredoc) heredoc = null; return; }
    const h = /<<-?\s*(['"]?)(\w+)\1/.exec(l);
    if (h) heredoc = h[2];
    if (/^\s*#/.test(l) || scopeOf(file) === 'build') return;
    for (const m of l.matchAll(/\bcommand\s+-[vV]\s+([A-Za-z][\w.+-]*)/g)) add(m[1], file, i + 1);
  });
  // A wrapper that runs its arguments (scripts/isolate node ...) runs them
  // from PATH too.
  for (const [k, { word, line }] of words.entries()) {
    if (word === 'node' && !/^-[vV]$/.test(words[k - 1]?.word || '')
        && !commands.some((c) => c.line === line && c.word === 'node')) {
      err(`${rel(file)}:${line}: runs "node" from PATH: run it with scripts/node (the project's Node)`);
    }
  }
  for (const { word, line } of commands) {
    if (SH_BUILTINS.has(word) || word.startsWith('$') || word === '') continue;
    if (word.includes('/') || word.startsWith('-')) continue;   // a path: a script or binary of ours
    if (word === 'node') {
      err(`${rel(file)}:${line}: runs "node" from PATH: run it with scripts/node (the project's Node)`);
      continue;
    }
    add(word, file, line);
  }
}

function scanC(file) {
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(/desktop_find_program\(\s*"([^"]+)"/g)) {
    add(m[1], file, text.slice(0, m.index).split('\n').length);
  }  // A program started by its path or from a table: "/* spawns: a b */".
  for (const m of text.matchAll(/\/\*\s*spawns:\s*([^*\n]*)\*\//g)) {
    for (const prog of m[1].trim().split(/\s+/).filter(Boolean)) {
      add(prog, file, text.slice(0, m.index).split('\n').length);
    }
  }
}

function scanMakefile(file) {
  readFileSync(file, 'utf8').split('\n').forEach((l, i) => {
    if (/^\t/.test(l) && /(^|[\s;&|@(])node\s/.test(l.replace(/scripts\/node\b/g, ''))) {
      err(`${rel(file)}:${i + 1}: a recipe runs "node" from PATH: use $(NODE) (scripts/node)`);
    }
  });
}

const isShell = (f) => /^#!\s*\/(usr\/)?bin\/(env\s+)?(ba|da)?sh\b/.test(readFileSync(f, 'utf8').slice(0, 40));
for (const f of walk(join(ROOT, 'tests'), (p) => /\.(mjs|js)$/.test(p))) scanJs(f);
for (const f of walk(join(ROOT, 'bench'), (p) => /\.(mjs|js)$/.test(p))) scanJs(f);
for (const f of walk(join(ROOT, 'scripts'), (p) => /\.(mjs|js)$/.test(p))) scanJs(f);
for (const f of [...walk(join(ROOT, 'scripts'), (p) => !/\.\w+$/.test(p)), join(ROOT, '.ci/run')]) {
  if (existsSync(f) && isShell(f)) scanShell(f);
}
for (const f of walk(ROOT, (p) => p.endsWith('.c') && !rel(p).startsWith('tests/'))) scanC(f);
scanMakefile(join(ROOT, 'Makefile'));

// ---------------------------------------------------------------- the list

const listFile = join(ROOT, 'scripts/programs');
const listed = new Map();   // prog -> { pkgs: [..], optional, line }
readFileSync(listFile, 'utf8').split('\n').forEach((l, i) => {
  const f = l.replace(/#.*/, '').trim().split(/\s+/).filter(Boolean);
  if (!f.length) return;
  if (f.length < 2) { err(`scripts/programs:${i + 1}: "${l.trim()}": want "program package [optional]"`); return; }
  if (listed.has(f[0])) err(`scripts/programs:${i + 1}: ${f[0]} is listed twice`);
  listed.set(f[0], { pkgs: f[1].split('|'), optional: f[2] === 'optional', line: i + 1 });
});

// install-deps' own lists, per scope (each includes the ones below it).
const SCOPES = ['build', 'run', 'test', 'bench', 'fresh', 'image'];
const installs = {};
for (const s of SCOPES) {
  const r = spawnSync(join(ROOT, 'scripts/install-deps'), ['--list', s], { encoding: 'utf8' });   // spawns: -
  if (r.status !== 0) { err(`scripts/install-deps --list ${s} failed: ${r.stderr}`); installs[s] = new Set(); continue; }
  installs[s] = new Set(r.stdout.split(/\s+/).filter(Boolean));
}

// Installed packages: Essential ones are always there (and for apt, apt-get).
const dpkg = new Map();   // package -> { essential, deps: [...] }
{
  const r = spawnSync('dpkg-query', ['-W', '-f', '${db:Status-Status}\t${Package}\t${Essential}\t${Pre-Depends}, ${Depends}\n'],
    { encoding: 'utf8', maxBuffer: 64 << 20 });
  for (const l of (r.stdout || '').split('\n')) {
    const [status, pkg, ess, deps] = l.split('\t');
    if (status !== 'installed') continue;
    dpkg.set(pkg, { essential: ess === 'yes', deps: (deps || '').split(/[,|]/).map((d) => d.trim().split(/[\s:(]/)[0]).filter(Boolean) });
  }
}
const ALWAYS = (pkg) => dpkg.get(pkg)?.essential || pkg === 'apt';

const byProg = new Map();
for (const f of found) {
  if (!byProg.has(f.prog)) byProg.set(f.prog, []);
  byProg.get(f.prog).push(f);
}
for (const [prog, uses] of byProg) {
  const entry = listed.get(prog);
  const where = uses.map((u) => `${rel(u.file)}:${u.line}`).slice(0, 3).join(', ');
  if (!entry) {
    err(`${where}: spawns ${prog}, which scripts/programs does not list: add it with its Debian package, and the package to scripts/install-deps`);
    continue;
  }
  if (entry.optional) {
    const hard = uses.filter((u) => !u.optional && u.scope !== 'bench');
    if (hard.length) err(`${rel(hard[0].file)}:${hard[0].line}: ${prog} is optional in scripts/programs, but spawned unconditionally`);
    continue;
  }
  for (const scope of new Set(uses.map((u) => u.scope))) {
    if (entry.pkgs.some((p) => installs[scope]?.has(p) || ALWAYS(p))) continue;
    const u = uses.find((x) => x.scope === scope);
    err(`${rel(u.file)}:${u.line}: spawns ${prog} (package ${entry.pkgs.join(' or ')}), which "scripts/install-deps ${scope}" does not install: add it there`);
  }
}
for (const [prog, e] of listed) {
  if (!byProg.has(prog)) err(`scripts/programs:${e.line}: ${prog} is spawned nowhere (any more?): remove it`);
}

// ---------------------------------------------------------------- installed?

function onPath(prog) {
  // An absolute path (a daemon in /usr/libexec) is where it is.
  if (isAbsolute(prog)) { try { return statSync(prog).isFile() ? prog : null; } catch { return null; } }
  for (const dir of (process.env.PATH || '').split(delimiter)) {
    const p = join(dir, prog);
    try { if (statSync(p).isFile()) return p; } catch { }
  }
  return null;
}

/** The packages that own each path (as given, resolved, with and without
 *  /usr: merged-/usr systems list either), in one dpkg-query call. */
function owners(paths) {
  const variants = new Map();   // path -> its variants
  for (const path of paths) {
    const v = new Set();
    for (const p of [path, realpathSync(path)]) {
      v.add(p);
      v.add(p.startsWith('/usr/') ? p.slice(4) : '/usr' + p);
    }
    variants.set(path, v);
  }
  const r = spawnSync('dpkg-query', ['-S', ...new Set([...variants.values()].flatMap((v) => [...v]))], { encoding: 'utf8' });
  const byFile = new Map();
  for (const l of (r.stdout || '').split('\n')) {
    const m = /^(.+?): (\/.*)$/.exec(l);
    if (!m || l.startsWith('diversion')) continue;
    byFile.set(m[2], new Set(m[1].split(', ').map((p) => p.split(':')[0])));
  }
  return new Map([...variants].map(([path, v]) => [path, new Set([...v].flatMap((f) => [...(byFile.get(f) || [])]))]));
}

/** The package and what it depends on, two levels deep. */
function closure(pkg) {
  const out = new Set([pkg]);
  for (const d of dpkg.get(pkg)?.deps || []) {
    out.add(d);
    for (const e of dpkg.get(d)?.deps || []) out.add(e);
  }
  return out;
}

const present = new Map();   // prog -> its path
for (const [prog, uses] of byProg) {
  const entry = listed.get(prog);
  if (!entry || entry.optional || !uses.some((u) => ['build', 'run', 'test'].includes(u.scope))) continue;
  const path = onPath(prog);
  if (path) present.set(prog, path);
  else err(`missing program ${prog} (package ${entry.pkgs.join(' or ')}): not on PATH after scripts/install-deps test: add its package to scripts/install-deps`);
}
const owned = owners([...present.values()]);
const checkedInstalled = present.size;
for (const [prog, path] of present) {
  const entry = listed.get(prog);
  const own = owned.get(path);
  if (!own.size) continue;   // not from a package (a local install): nothing to compare
  if (![...own].some((o) => entry.pkgs.some((p) => closure(p).has(o)))) {
    err(`scripts/programs:${entry.line}: ${prog} (${path}) comes from ${[...own].join(', ')}, not ${entry.pkgs.join(' or ')}`);
  }
}

// ---------------------------------------------------------------- Node

function parseVersion(v) {
  const m = /^\s*v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?/.exec(v);
  if (!m) return null;
  return [m[1], m[2], m[3]].map((x) => (x === undefined || /[xX*]/.test(x) ? null : Number(x)));
}
const cmp = (a, b) => { for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i]; return 0; };

/** Does version v ([maj, min, patch]) satisfy the npm semver range? */
function satisfies(v, range) {
  return range.split('||').some((set) => {
    set = set.trim().replace(/([<>=~^]+)\s+/g, '$1');
    const hy = /^(\S+)\s+-\s+(\S+)$/.exec(set);
    if (hy) set = `>=${hy[1]} <=${hy[2]}`;
    return set.split(/\s+/).filter(Boolean).every((c) => {
      const m = /^(>=|<=|>|<|=|\^|~)?(.*)$/.exec(c);
      const op = m[1] || '';
      const p = parseVersion(m[2]);
      if (!p || p[0] === null) return true;   // *, x
      const lo = p.map((x) => x ?? 0);
      const partial = p.findIndex((x) => x === null);   // -1: full version
      const up = (i) => { const u = [...lo]; u[i]++; for (let j = i + 1; j < 3; j++) u[j] = 0; return u; };
      switch (op) {
        case '>=': return cmp(v, lo) >= 0;
        case '>': return partial < 0 ? cmp(v, lo) > 0 : cmp(v, up(partial - 1)) >= 0;
        case '<': return cmp(v, lo) < 0;
        case '<=': return partial < 0 ? cmp(v, lo) <= 0 : cmp(v, up(partial - 1)) < 0;
        case '~': return cmp(v, lo) >= 0 && cmp(v, up(partial === 0 ? 0 : 1)) < 0;
        case '^': {
          const i = lo[0] !== 0 || partial === 1 ? 0 : lo[1] !== 0 || partial === 2 ? 1 : 2;
          return cmp(v, lo) >= 0 && cmp(v, up(i)) < 0;
        }
        default: return partial < 0 ? cmp(v, lo) === 0 : cmp(v, lo) >= 0 && cmp(v, up(partial - 1)) < 0;
      }
    });
  });
}

/** The lowest version a range admits (its lower bound; 0.0.0 when none). */
function minimum(range) {
  let best = null;
  for (let set of range.split('||')) {
    set = set.trim().replace(/([<>=~^]+)\s+/g, '$1').replace(/^(\S+)\s+-\s+\S+$/, '>=$1');
    let low = [0, 0, 0];
    for (const c of set.split(/\s+/).filter(Boolean)) {
      const m = /^(>=|>|=|\^|~)?(\d.*)$/.exec(c);
      const p = m && parseVersion(m[2]);
      if (!p) continue;
      const v = p.map((x) => x ?? 0);
      if (m[1] === '>') v[2]++;   // near enough for a lower bound
      if (cmp(v, low) > 0) low = v;
    }
    if (!best || cmp(low, best) < 0) best = low;
  }
  return best || [0, 0, 0];
}

const lock = JSON.parse(readFileSync(join(ROOT, 'tests/package-lock.json'), 'utf8'));
const running = parseVersion(process.versions.node);
const pinned = lock.packages?.['node_modules/node']?.version;
if (!pinned) err('tests/package-lock.json pins no "node" package: the tests would run under whatever Node is on PATH');
else if (pinned !== process.versions.node) err(`check-deps runs under Node ${process.versions.node}, not the pinned ${pinned}: run it with scripts/node after scripts/npm-deps`);
let needs = [0, 0, 0];
let needer = '';
for (const [name, p] of Object.entries(lock.packages || {})) {
  const range = p.engines?.node;
  if (!range) continue;
  const who = name || '(tests/package.json)';
  if (!satisfies(running, range)) err(`${who} ${p.version || ''} needs Node ${range}; the tests run under ${process.versions.node}`);
  const low = minimum(range);
  if (cmp(low, needs) > 0) { needs = low; needer = `${who} ${p.version || ''}`.trim(); }
}

// ---------------------------------------------------------------- verdict

if (process.argv.includes('--list')) {
  for (const [prog, uses] of [...byProg].sort()) {
    console.log(`${prog.padEnd(14)} ${(listed.get(prog)?.pkgs.join('|') || '?').padEnd(16)} ${[...new Set(uses.map((u) => u.scope))].join(',').padEnd(12)} ${uses.map((u) => `${rel(u.file)}:${u.line}`).slice(0, 4).join(' ')}`);
  }
}
if (errors.length) {
  for (const e of errors) console.error(`check-deps: ${e}`);
  console.error(`check-deps: FAILED (${errors.length} problem${errors.length > 1 ? 's' : ''})`);
  process.exit(1);
}
console.log(`check-deps: ${byProg.size} programs spawned, each installed by scripts/install-deps for its scope `
  + `(${checkedInstalled} on PATH here); Node ${process.versions.node} satisfies every pinned package `
  + `(the most demanding: ${needer} needs >= ${needs.join('.')})`);
