#!/usr/bin/env node
// `svc` (and `kubectl-svc`, so `kubectl svc auth ...` works): see program.ts for the command tree.
import { basename } from 'node:path';
import { processIo } from './io.js';
import { run } from './program.js';

const invokedAs = basename(process.argv[1] ?? 'svc').replace(/\.(c|m)?[jt]s$/, '');
const programName = invokedAs === 'kubectl-svc' ? 'kubectl svc' : 'svc';

// `svc auth show | head -1` closes our stdout early: that is not an error worth a stack trace.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

const code = await run(process.argv.slice(2), processIo(programName));
// Let stdout and stderr drain before exiting: a client-node keep-alive socket must not keep us alive,
// and a large `show -o json` into a pipe must not be cut short.
await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
await new Promise<void>((resolve) => process.stderr.write('', () => resolve()));
process.exit(code);
