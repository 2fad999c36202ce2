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
