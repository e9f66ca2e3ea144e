// The examples the documentation gives — `svc` commands in fenced blocks (and NOTES.txt's indented lines), and the
// proxy annotations it names — read out of the text, and checked against what they describe: the CLI's own
// commander parser (actions stubbed, nothing runs) and the manifests in deploy/.
import { CommanderError, type CommandUnknownOpts as Command } from '@commander-js/extra-typings';
import { loadAll } from 'js-yaml';
import { scopeFromFlags, type ScopeFlags } from '../../cli/commands/common.js';
import { DEFAULT_PREFIXES } from '../../core/index.js';
import { buildProgram } from '../../cli/program.js';
import { fakeIo } from '../cli/harness.js';
import { fences, read } from './markdown.js';

/** One command line as the documentation writes it, split into words as a POSIX shell would. */
export interface Example {
  readonly where: string;
  readonly words: readonly string[];
}

/** Shell words of one line (quotes, backslash escapes); stops at a comment. `$(...)` and operators are words too. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === '#' && word === undefined) break;
    if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      word = (word ?? '') + line.slice(i + 1, end < 0 ? line.length : end);
      i = end < 0 ? line.length : end;
    } else if (c === '\\' && i + 1 < line.length) {
      word = (word ?? '') + line[++i];
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

const OPERATORS = /^(\||\|\||&&|;|&|>|>>|<|2>|2>&1|\)|\$\(|`)$/;
const COMMAND_WORDS = new Set(['svc', 'kubectl-svc']);

/**
 * The `svc` commands of one shell line: `svc ...`, `kubectl-svc ...`, `kubectl svc ...`, `npx svc ...`, and what
 * follows `--` in `kubectl exec ... -- svc ...`. A word `svc` elsewhere (a namespace, `-n svc`) is not a command.
 */
export function svcCommands(line: string): string[][] {
  const out: string[][] = [];
  const simple: string[][] = [[]];
  for (const w of shellWords(line.replace(/\$\(/g, ' $( ').replace(/\)/g, ' ) '))) {
    if (OPERATORS.test(w) || /^[12]?>/.test(w)) simple.push([]);
    else simple.at(-1)!.push(w);
  }
  for (const words of simple) {
    let rest = words;
    if (rest[0] === '$') rest = rest.slice(1);
    if (rest[0] === 'npx') rest = rest.slice(1);
    if (rest[0] === 'kubectl' && rest[1] === 'svc') rest = ['kubectl-svc', ...rest.slice(2)];
    else if (rest[0] === 'kubectl' && rest.includes('--') && COMMAND_WORDS.has(rest[rest.indexOf('--') + 1] ?? '')) rest = rest.slice(rest.indexOf('--') + 1);
    if (COMMAND_WORDS.has(rest[0] ?? '')) out.push(rest.slice(1));
  }
  return out;
}

/** The shell lines of a block: comments dropped, `\` continuations joined. */
export function shellLines(body: string): { text: string; offset: number }[] {
  const out: { text: string; offset: number }[] = [];
  let pending: { text: string; offset: number } | undefined;
  body.split('\n').forEach((raw, i) => {
    const line = raw.replace(/^\s*\$\s+/, '');
    pending = pending ? { text: `${pending.text} ${line.trim()}`, offset: pending.offset } : { text: line, offset: i };
    if (/\\\s*$/.test(line)) pending.text = pending.text.replace(/\\\s*$/, '');
    else {
      out.push(pending);
      pending = undefined;
    }
  });
  if (pending) out.push(pending);
  return out;
}

const SHELL_FENCES = /^(sh|bash|shell|console|zsh|fish|)$/;

/** Every `svc` command in the fenced shell blocks of a Markdown file. */
export function markdownExamples(file: string): Example[] {
  return fences(read(file))
    .filter((f) => SHELL_FENCES.test(f.info))
    .flatMap((f) => shellLines(f.body).flatMap((l) => svcCommands(l.text).map((words) => ({ where: `${file}:${f.line + 1 + l.offset}`, words }))));
}

/** Every `svc` command on the lines of a plain text (NOTES.txt as rendered) set off as code: indented 4 or more. */
export function textExamples(text: string, where: string): Example[] {
  const code = text.split('\n').map((l) => (/^ {4,}\S/.test(l) ? l : '')).join('\n');
  return shellLines(code).flatMap((l) => svcCommands(l.text).map((words) => ({ where: `${where}:${l.offset + 1}`, words })));
}

/**
 * Parses the words as `svc` would, with every action replaced by a recorder: commander's own checks (commands,
 * options, choices, arguments), then the scope flags every scope command checks first. Returns why it would be
 * refused, or undefined. Nothing is read or written.
 */
export async function refusal(words: readonly string[]): Promise<string | undefined> {
  const io = fakeIo();
  const program = buildProgram(io, () => undefined);
  let ran: { cmd: Command; opts: Record<string, unknown> } | undefined;
  // Only the leaves run something; a command with subcommands keeps commander's dispatch (and its unknown-command error).
  const stub = (cmd: Command) => {
    if (cmd.commands.length > 0) return cmd.commands.forEach(stub);
    cmd.action((...args: unknown[]) => {
      const self = args.at(-1) as Command;
      ran = { cmd: self, opts: self.opts() };
    });
  };
  program.commands.forEach(stub);
  try {
    await program.parseAsync([...words], { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? undefined : io.stderr.trim() || e.message;
    throw e;
  }
  if (!ran) return 'no command ran';
  if (ran.cmd.name() === 'public' && ran.opts.path === undefined) return 'only a path scope can be public: give --path';
  const scopeCommand = ran.cmd.options.some((o) => o.long === '--path') && ran.cmd.name() !== 'show';
  if (scopeCommand) {
    try {
      scopeFromFlags(ran.opts as ScopeFlags, { commandPath: ran.cmd.name(), prefixes: DEFAULT_PREFIXES, io });
    } catch (e) {
      return (e as Error).message;
    }
  }
  return undefined;
}

/** An annotation as the documentation names it, with its value when it gives one. */
export interface AnnotationMention {
  readonly where: string;
  readonly key: string;
  readonly value?: string;
}

const ANNOTATION = /\b((?:nginx|traefik)\.ingress\.kubernetes\.io\/[A-Za-z0-9._-]+)(?:\s*:\s*(.*))?$/;

/** Unquotes `"..."`, and drops a trailing comment or clause (` — ...`) after a value. */
function valueOf(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const t = text.trim();
  const quoted = /^"([^"]*)"/.exec(t) ?? /^'([^']*)'/.exec(t);
  if (quoted) return quoted[1];
  const v = t.replace(/\s+#.*$/, '').trim();
  return v === '' ? undefined : v;
}

/**
 * The ingress annotations a text names: `nginx.ingress.kubernetes.io/...` and `traefik.ingress.kubernetes.io/...`
 * (with `: value` when given), anywhere; in Markdown also the short form deploy/README.md writes in code spans,
 * `` `auth-url: ...` `` or `` `auth-keepalive-requests` `` (ingress-nginx's annotations without their prefix).
 */
export function annotationMentions(text: string, where: string, markdown: boolean): AnnotationMention[] {
  const out: AnnotationMention[] = [];
  text.split('\n').forEach((line, i) => {
    const at = `${where}:${i + 1}`;
    const spans = markdown ? [...line.matchAll(/`([^`]+)`/g)].map((m) => m[1]!) : [line];
    for (const span of spans) {
      const full = ANNOTATION.exec(span);
      if (full) {
        const value = valueOf(full[2]);
        out.push({ where: at, key: full[1]!, ...(value !== undefined ? { value } : {}) });
        continue;
      }
      const short = markdown ? /^(auth-[a-z-]+)(?::\s*(.+))?$/.exec(span.trim()) : null;
      if (short) {
        const value = valueOf(short[2]);
        out.push({ where: at, key: `nginx.ingress.kubernetes.io/${short[1]}`, ...(value !== undefined ? { value } : {}) });
      }
    }
  });
  return out;
}

interface Metadata {
  kind?: string;
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> };
}

/** The annotations the manifests in deploy/ set, and the `traefik.ingress.kubernetes.io/router.middlewares` references their Middlewares answer to. */
export function deployAnnotations(files: readonly string[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (key: string, value: string) => (out.get(key) ?? out.set(key, new Set()).get(key)!).add(value);
  for (const file of files) {
    for (const doc of loadAll(read(file)) as Metadata[]) {
      if (!doc || typeof doc !== 'object') continue;
      for (const [k, v] of Object.entries(doc.metadata?.annotations ?? {})) add(k, String(v));
      if (doc.kind === 'Middleware' && doc.metadata?.name) add('traefik.ingress.kubernetes.io/router.middlewares', `${doc.metadata.namespace ?? 'default'}-${doc.metadata.name}@kubernetescrd`);
    }
  }
  return out;
}

/** Why a mention disagrees with the manifests, or undefined. */
export function annotationMismatch(m: AnnotationMention, manifests: ReadonlyMap<string, ReadonlySet<string>>): string | undefined {
  const values = manifests.get(m.key);
  if (!values) return `${m.where}: ${m.key} is set by no manifest in deploy/`;
  if (m.value !== undefined && !values.has(m.value)) return `${m.where}: ${m.key}: ${JSON.stringify(m.value)}, but deploy/ sets ${[...values].map((v) => JSON.stringify(v)).join(' or ')}`;
  return undefined;
}

/** Every value each key has anywhere in the given YAML manifests (nested keys included), as JSON. */
export function manifestSettings(files: readonly string[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const walk = (node: unknown) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      (out.get(k) ?? out.set(k, new Set()).get(k)!).add(JSON.stringify(v));
      walk(v);
    }
  };
  for (const file of files) for (const doc of loadAll(read(file))) walk(doc);
  return out;
}

/**
 * Settings a Markdown text quotes from the manifests, as `key: value` code spans (`trustForwardHeader: false`,
 * `authRequestHeaders: [Authorization]`, `http.path: /authz/ext-authz`): each whose key (its last dotted part) is a
 * key of the manifests must have a value one of them holds there. Spans whose key no manifest has are not settings.
 */
export function settingMismatches(text: string, where: string, settings: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(/`([A-Za-z_][A-Za-z0-9_.]*):\s+([^`]+)`/g)) {
      const key = m[1]!.split('.').at(-1)!;
      const values = settings.get(key);
      if (!values) continue;
      let value: unknown;
      try {
        value = loadAll(m[2]!)[0];
      } catch {
        value = m[2];
      }
      if (!values.has(JSON.stringify(value))) out.push(`${where}:${i + 1}: \`${m[0].slice(1, -1)}\`, but the manifests have ${key}: ${[...values].join(' or ')}`);
    }
  });
  return out;
}
