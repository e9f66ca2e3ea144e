#!/usr/bin/env node
// `npm run test:mutation`: StrykerJS (test/mutations/stryker.config.mjs) over the files that decide who gets in, one
// group at a time, then the score of each file and every surviving mutant that test/mutations/SURVIVORS.md does not
// explain. Fails when a file scores below MIN_SCORE or a survivor is unexplained. Not part of `npm test`: cold it
// takes the better part of an hour on 2 cores; incremental (test/mutations/incremental/, committed) it re-tests only
// the mutants whose code or tests changed. `npm run test:mutation -- normalize` runs one group; other arguments go
// to Stryker: `npm run test:mutation -- --force` re-tests everything (a cold run). `--report-only` runs nothing and
// reads the reports of the last run (.cache/stryker/<group>.json).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GROUPS } from '../test/mutations/stryker.config.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SURVIVORS = join(root, 'test', 'mutations', 'SURVIVORS.md');
const MIN_SCORE = 90;

const reportOnly = process.argv.includes('--report-only');
const args = process.argv.slice(2).filter((a) => a !== '--report-only');
const named = args.filter((a) => Object.hasOwn(GROUPS, a));
const strykerArgs = args.filter((a) => !Object.hasOwn(GROUPS, a));
const groups = named.length > 0 ? named : Object.keys(GROUPS);

/**
 * Keeps the committed incremental file small and free of this machine's paths: Stryker reads only its `files` and
 * `testFiles` back, and a killed mutant's reason needs no stack trace (the first line says which expectation failed).
 */
function compactIncremental(file) {
  const incremental = JSON.parse(readFileSync(file, 'utf8'));
  for (const { mutants } of Object.values(incremental.files)) {
    for (const m of mutants) if (m.statusReason) m.statusReason = m.statusReason.split('\n')[0].replaceAll(root, '.').slice(0, 200);
  }
  delete incremental.config;
  delete incremental.framework;
  incremental.projectRoot = '.';
  writeFileSync(file, `${JSON.stringify(incremental, null, 1)}\n`);
}

const started = process.hrtime.bigint();
const elapsed = () => Math.round(Number(process.hrtime.bigint() - started) / 1e9);
const reports = [];
for (const group of groups) {
  const report = join(root, '.cache', 'stryker', `${group}.json`);
  if (reportOnly) {
    if (!existsSync(report)) {
      console.error(`test:mutation --report-only: no report of ${group} (${report}); run npm run test:mutation first.`);
      process.exit(2);
    }
    reports.push(JSON.parse(readFileSync(report, 'utf8')));
    continue;
  }
  rmSync(report, { force: true });
  console.log(`\n=== test:mutation ${group}: ${GROUPS[group].mutate.join(', ')} against ${GROUPS[group].tests.join(', ')}`);
  const stryker = spawnSync(process.execPath, [join(root, 'node_modules', '@stryker-mutator', 'core', 'bin', 'stryker.js'), 'run', 'test/mutations/stryker.config.mjs', ...strykerArgs], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, MUTATION_GROUP: group },
  });
  if (stryker.status !== 0 || !existsSync(report)) {
    console.error(`test:mutation: Stryker failed on ${group} (exit ${stryker.status ?? stryker.signal}) after ${elapsed()} s; its output above says why.`);
    process.exit(1);
  }
  compactIncremental(join(root, 'test', 'mutations', 'incremental', `${group}.json`));
  reports.push(JSON.parse(readFileSync(report, 'utf8')));
}

/**
 * A survivor's id: its file, mutator, the code it replaces and the replacement, and which occurrence of that
 * in the file it is (among all the file's mutants, in the order of the code). Line numbers are left out, so
 * that an edit elsewhere in the file keeps the ids.
 */
function identify(file, source, mutants) {
  const lines = source.split('\n');
  const offset = (p) => lines.slice(0, p.line - 1).reduce((n, l) => n + l.length + 1, 0) + p.column - 1;
  const seen = new Map();
  const inOrder = [...mutants].sort((a, b) => offset(a.location.start) - offset(b.location.start) || offset(a.location.end) - offset(b.location.end) || a.mutatorName.localeCompare(b.mutatorName) || (a.replacement ?? '').localeCompare(b.replacement ?? ''));
  return inOrder.map((m) => {
    const original = source.slice(offset(m.location.start), offset(m.location.end)).replace(/\s+/g, ' ');
    const replacement = (m.replacement ?? '').replace(/\s+/g, ' ');
    const key = `${file}\0${m.mutatorName}\0${original}\0${replacement}`;
    const nth = (seen.get(key) ?? 0) + 1;
    seen.set(key, nth);
    const id = createHash('sha256').update(`${key}\0${nth}`).digest('hex').slice(0, 8);
    const cut = (s) => (s.length > 80 ? `${s.slice(0, 77)}...` : s);
    return { id, status: m.status, where: `${file}:${m.location.start.line}:${m.location.start.column}`, mutator: m.mutatorName, original: cut(original), replacement: cut(replacement) };
  });
}

const explained = new Set([...readFileSync(SURVIVORS, 'utf8').matchAll(/\[([0-9a-f]{8})\]/g)].map((m) => m[1]));
const detected = new Set(['Killed', 'Timeout']);
const undetected = new Set(['Survived', 'NoCoverage']);
let failed = false;
const unexplained = [];
const listed = new Set();
console.log('\ntest:mutation: score per file (killed or timed out / all but compile and runtime errors)');
const files = reports.flatMap((r) => Object.entries(r.files)).sort(([a], [b]) => a.localeCompare(b));
for (const [file, { source, mutants }] of files) {
  const killed = mutants.filter((m) => detected.has(m.status)).length;
  const valid = killed + mutants.filter((m) => undetected.has(m.status)).length;
  const score = valid === 0 ? 100 : (100 * killed) / valid;
  const low = score < MIN_SCORE;
  failed ||= low;
  console.log(`  ${file}: ${score.toFixed(2)}% (${killed} of ${valid} mutants killed, ${valid - killed} survived)${low ? ` — below ${MIN_SCORE}%` : ''}`);
  for (const s of identify(file, source, mutants).filter((m) => undetected.has(m.status))) {
    listed.add(s.id);
    if (!explained.has(s.id)) unexplained.push(s);
  }
}
if (unexplained.length > 0) {
  failed = true;
  console.log(`\n${unexplained.length} surviving mutant(s) not explained in test/mutations/SURVIVORS.md: kill each with a test, or add it there with why it is equivalent:`);
  for (const s of unexplained) console.log(`- [${s.id}] ${s.where} ${s.mutator}: \`${s.original}\` → \`${s.replacement}\` — why?`);
}
// Only when every group ran: a survivor of a group not run is not stale.
const stale = named.length > 0 ? [] : [...explained].filter((id) => !listed.has(id));
if (stale.length > 0) console.log(`\nListed in SURVIVORS.md but no longer surviving (remove them): ${stale.join(', ')}`);
console.log(`\ntest:mutation: ${failed ? 'FAILED' : 'passed'} in ${elapsed()} s`);
process.exit(failed ? 1 : 0);
