// The binary itself: --help, --version, bad usage exits 2.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { DESKD_BIN } from './lib/harness.mjs';

test('--help lists every option of the contract', () => {
  const r = spawnSync(DESKD_BIN, ['--help'], { encoding: 'utf8' });
  assert.equal(r.status, 0);
  for (const opt of ['--listen', '--ready-file', '--display', '--virtual', '--wm', '--launch', '--token',
    '--token-file', '--view-token', '--no-auth', '--allow-origin', '--data-dir', '--output-root',
    '--max-image-dimension', '--tools', '--stdio', '--log-format', '--log-level', '--conformance-fixtures']) {
    assert.match(r.stdout, new RegExp(`${opt}\\b`), opt);
  }
});

test('--version prints the version', () => {
  const r = spawnSync(DESKD_BIN, ['--version'], { encoding: 'utf8' });
  assert.equal(r.status, 0);
  assert.match(r.stdout, /^deskd \d+\.\d+\.\d+/);
});

test('bad usage exits 2 with a reason', () => {
  for (const args of [['--bogus'], ['--listen', 'nonsense'], ['--listen', '0.0.0.0:0', '--no-auth'], ['--tools', 'x']]) {
    const r = spawnSync(DESKD_BIN, args, { encoding: 'utf8' });
    assert.equal(r.status, 2, args.join(' '));
    assert.match(r.stderr, /deskd: /);
  }
});
