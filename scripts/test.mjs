#!/usr/bin/env node
// `npm test`: type-check, lint, then every Jest project; ends with the plain "N passed, N failed" line CI reads.
// Under CI=true a skipped or todo test is a failure: no suite may skip there.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';

const args = process.argv.slice(2);
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
const passthrough = args.filter((a, i) => a !== '--only' && args[i - 1] !== '--only');
const ci = process.env.CI === 'true';

let passed = 0;
let failed = 0;
let skipped = 0;

function announce(name, cmd, cmdArgs) {
  console.log(`\n=== ${name}: ${cmd} ${cmdArgs.join(' ')}`);
}

function step(name, cmd, cmdArgs, env = {}) {
  announce(name, cmd, cmdArgs);
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
// Files and patterns go before --selectProjects: that flag takes several values, so a path after it would be read as
// a project name and the whole project would run.
const jestArgs = ['--json', `--outputFile=${resultsFile}`, ...passthrough, ...(only ? ['--selectProjects', only] : [])];
// On 2 cores jest runs every test file in band, in its own process, so one handle a test leaves open (a child process
// whose pipes are still read, a server) keeps jest alive after its last test, and CI would wait out its whole time limit. Jest's
// --forceExit would hide that; instead, once jest has written its results it gets EXIT_GRACE_MS to exit, after which
// what it still runs is named, killed, and counted as a failure.
const EXIT_GRACE_MS = 60_000;

/** The pids below `root` (from /proc; empty where there is none). */
function descendants(root) {
  let parents;
  try {
    parents = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return [Number(pid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])];
      } catch {
        return [Number(pid), -1];
      }
    });
  } catch {
    return [];
  }
  const found = [];
  for (let frontier = [root]; frontier.length > 0;) {
    const next = parents.filter(([, ppid]) => frontier.includes(ppid)).map(([pid]) => pid);
    found.push(...next);
    frontier = next;
  }
  return found;
}

function commandOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim().slice(0, 200);
  } catch {
    return '?';
  }
}

/** Runs jest like step(), and resolves whether it passed and exited by itself within EXIT_GRACE_MS of its results. */
function runJest(cmdArgs, env) {
  announce('jest', process.execPath, cmdArgs);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, cmdArgs, { stdio: 'inherit', env: { ...process.env, ...env } });
    let resultsAt;
    let lingered = false;
    const watch = setInterval(() => {
      if (resultsAt === undefined && existsSync(resultsFile)) resultsAt = Date.now();
      if (resultsAt === undefined || Date.now() - resultsAt < EXIT_GRACE_MS || lingered) return;
      lingered = true;
      const left = descendants(child.pid);
      console.error(`jest did not exit ${EXIT_GRACE_MS / 1000} s after writing its results: a test left something open.` +
        (left.length ? ` Still running under it:\n${left.map((pid) => `  ${pid} ${commandOf(pid)}`).join('\n')}` : ' (no child process: a socket, server or timer)'));
      for (const pid of [...left, child.pid]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }, 1000);
    child.on('exit', (code) => {
      clearInterval(watch);
      resolve(code === 0 && !lingered);
    });
  });
}

const jestOk = await runJest(['node_modules/jest/bin/jest.js', ...jestArgs], {
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
