#!/usr/bin/env node
// kubectl_complete-svc: what `kubectl svc <TAB>` offers. kubectl (1.26+) runs this executable, found on the PATH
// beside kubectl-svc, with the words typed after `kubectl svc` (the last one being completed, "" for a new word),
// and reads the candidates from stdout, one a line, `candidate<TAB>description`, then `:<directive>` (Cobra's
// ShellCompDirective: whether the shell may add file or directory names). The candidates come from the same
// command tree and the same walk as `svc completion bash|zsh|fish`.
import { spawnSync } from 'node:child_process';
import { completeWords } from './completion.js';
import { processIo } from './io.js';
import { buildProgram } from './program.js';

const words = process.argv.slice(2);
const program = buildProgram(processIo('kubectl svc'), () => undefined);
const result = completeWords(program, words.length > 0 ? words : ['']);
const lines = [...result.candidates];
if (result.contexts) {
  const r = spawnSync('kubectl', ['config', 'get-contexts', '-o', 'name'], { encoding: 'utf8', timeout: 5000 });
  const typed = words.at(-1) ?? '';
  if (r.status === 0) lines.push(...r.stdout.split('\n').filter((c) => c !== '' && c.startsWith(typed)));
}
process.stdout.write(`${[...lines, `:${result.directive}`].join('\n')}\n`);
