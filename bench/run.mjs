// make bench: runs every section in bench/sections/*.mjs (sorted) and prints
// its tables. A section exports default async function(). BENCH_ONLY=name
// runs one section.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = new URL('./sections/', import.meta.url).pathname;
const only = process.env.BENCH_ONLY;
console.log(`# deskd bench (${new Date().toISOString()}, ${(await import('node:os')).cpus().length} cores)`);
let failed = 0;
for (const f of readdirSync(dir).filter((f) => f.endsWith('.mjs')).sort()) {
  if (only && !f.includes(only)) continue;
  try {
    const mod = await import(join(dir, f));
    await mod.default();
  } catch (e) {
    failed++;
    console.error(`bench section ${f} failed: ${e.stack || e}`);
  }
}
process.exit(failed ? 1 : 0);
