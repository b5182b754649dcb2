'use strict';
// index.d.ts: `tsc --noEmit` accepts a typed use of the package
// (test/types/example.ts) and rejects a wrong one (test/types/bad.ts).
// TypeScript is a devDependency; test/run.sh and `npm test` install it
// (npm's cache first) and set PTSCHED_REQUIRE_TSC, so there a missing tsc
// fails. Elsewhere (an installed package, offline) the check is skipped.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const dir = path.join(__dirname, 'types');
let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc', { paths: [path.join(__dirname, '..')] });
} catch {
  tsc = undefined;
}
const skip = tsc === undefined && !process.env.PTSCHED_REQUIRE_TSC ? 'typescript is not installed' : false;

function run(args) {
  return spawnSync(process.execPath, [tsc, ...args], { cwd: dir, encoding: 'utf8' });
}

test('index.d.ts: tsc --noEmit accepts a typed example', { skip }, () => {
  assert.ok(tsc, 'typescript is not installed (npm install in node/)');
  const r = run(['--noEmit', '-p', 'tsconfig.json']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('index.d.ts: tsc --noEmit rejects a wrong priority and a plain AbortSignal as TaskSignal', { skip }, () => {
  assert.ok(tsc, 'typescript is not installed (npm install in node/)');
  const r = run(['--noEmit', '-p', 'tsconfig.bad.json']);
  assert.notEqual(r.status, 0);
  assert.match(r.stdout, /bad\.ts\(2,.*'"urgent"'/);
  assert.match(r.stdout, /bad\.ts\(3,.*TaskSignal/);
});
