// Process helpers for tests that look at what deskd started (from /proc).
import { readdirSync, readFileSync } from 'node:fs';

/** Direct children of pid (all threads). */
export function children(pid) {
  const out = [];
  let tasks = [];
  try { tasks = readdirSync(`/proc/${pid}/task`); } catch { return out; }
  for (const t of tasks) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/)) {
        if (c) out.push(Number(c));
      }
    } catch { /* thread gone */ }
  }
  return out;
}

/** Every descendant of pid now (its threads' children, recursively):
 *  [{pid, comm}], parents before their children. */
export function descendants(pid) {
  const out = [];
  const todo = children(pid);
  while (todo.length) {
    const p = todo.shift();
    let comm = null;
    try { comm = readFileSync(`/proc/${p}/comm`, 'utf8').trim(); } catch { continue; }
    out.push({ pid: p, comm });
    todo.push(...children(p));
  }
  return out;
}

/** The resident set of pid in KiB (0 once it is gone). */
export function rssKiB(pid) {
  try { return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] || 0); } catch { return 0; }
}
