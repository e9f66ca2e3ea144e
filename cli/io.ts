/**
 * Everything a command touches outside its store: the two output streams, the environment, the clock and
 * the source of randomness. main.ts binds them to the process; tests bind them to buffers, a fixed clock
 * and fixed bytes so output formats can be pinned by snapshots.
 */
import { randomBytes } from 'node:crypto';

export interface Io {
  out(text: string): void;
  err(text: string): void;
  readonly env: Readonly<Record<string, string | undefined>>;
  now(): number;
  random(bytes: number): Uint8Array;
  /** The whole of stdin (a token passed as "-"). */
  readStdin(): Promise<string>;
  /** How the user invoked us, for help and hints: "svc" or "kubectl svc". */
  readonly programName: string;
  /** Terminal width for help text; undefined (not a terminal) means 80. */
  readonly columns?: number;
}

export function processIo(programName: string): Io {
  return {
    out: (text) => void process.stdout.write(text),
    err: (text) => void process.stderr.write(text),
    env: process.env,
    now: () => Date.now(),
    random: (n) => randomBytes(n),
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    programName,
    ...(process.stdout.isTTY && process.stdout.columns ? { columns: process.stdout.columns } : {}),
  };
}
