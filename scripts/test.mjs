#!/usr/bin/env node
// `npm test`: type-check, lint, then every Jest project; ends with the plain "N passed, N failed" line CI reads.
// Under CI=true a skipped or todo test is a failure: no suite may skip there.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';

const args = process.argv.slice(2);
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
const passthrough = args.filter((a, i) => a !== '--only' && args[i - 1] !== '--only');
const ci = process.env.CI === 'true';

let passed = 0;
let failed = 0;
let skipped = 0;

function step(name, cmd, cmdArgs, env = {}) {
  console.log(`\n=== ${name}: ${cmd} ${cmdArgs.join(' ')}`);
  const r = spawnSync(cmd, cmdArgs, { stdio: 'inherit', env: { ...process.env, ...env } });
  return r.status === 0;
}

if (!only) {
  for (const [name, script] of [['typecheck', 'typecheck'], ['lint', 'lint']]) {
    if (step(name, 'npm', ['run', '--silent', script])) passed++; else { failed++; console.error(`${name} failed`); }
  }
}

mkdirSync('.cache', { recursive: true });
const resultsFile = '.cache/jest-results.json';
rmSync(resultsFile, { force: true });
const jestArgs = ['--json', `--outputFile=${resultsFile}`, ...(only ? ['--selectProjects', only] : []), ...passthrough];
const jestOk = step('jest', process.execPath, ['node_modules/jest/bin/jest.js', ...jestArgs], {
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --experimental-vm-modules`.trim(),
});
try {
  const r = JSON.parse(readFileSync(resultsFile, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests + r.numRuntimeErrorTestSuites;
  skipped += r.numPendingTests + r.numTodoTests;
  if (!jestOk && r.numFailedTests + r.numRuntimeErrorTestSuites === 0) failed++;
} catch {
  failed++;
  console.error('jest wrote no results');
}
if (ci && skipped > 0) {
  console.error(`CI=true: ${skipped} test(s) skipped; under CI nothing may skip.`);
  failed += skipped;
}
console.log(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 ? 1 : 0);
