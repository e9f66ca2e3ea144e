// The `svc` command tree (commander), its global options and one-line usage errors.
import { Argument, Command, CommanderError, Option, type CommandUnknownOpts, type OptionValues } from '@commander-js/extra-typings';
import { parseDuration, TIMER_MAX_MS } from '../lib/duration.js';
import { VERSION } from '../lib/version.js';
import { CliError, EXIT_FAILED, EXIT_OK, EXIT_USAGE, usageError } from './errors.js';
import type { Io } from './io.js';
import type { ScopeStore, StoreOptions } from './backends/backend.js';
import type { CommandContext } from './commands/common.js';

/**
 * The `svc` command tree. Only commander and this file load for `svc --help`: each command's code, the
 * store backends, core and (for a cluster) client-node are imported when a command runs.
 */

interface GlobalOptions {
  openPathsByDefault?: boolean;
  wafPrefix?: string;
  apiPrefix?: string;
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  dir?: string;
  requestTimeout?: string;
  allowUnserved?: boolean;
}

const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A true/false environment setting (the chart sets SVC_OPEN_PATHS_BY_DEFAULT). Here, not in core: --help loads no core. */
function parseBooleanSetting(name: string, value: string | undefined): boolean | Error {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1') return true;
  return new Error(`${name}=${JSON.stringify(value)}: use true or false`);
}

/**
 * svc-auth's prefixes, as the CLI must read path scopes against them: the flag, else the environment (the chart sets
 * SVC_WAF_PREFIX and SVC_API_PREFIX in svc-management), else /data and /oapi. Core loads here, when a command runs.
 */
async function prefixesOf(g: GlobalOptions, env: Readonly<Record<string, string | undefined>>): Promise<CommandContext['prefixes']> {
  const { parsePrefix } = await import('../core/decide.js');
  const read = (flag: string, value: string | undefined, fallback: string): readonly string[] => {
    try {
      return parsePrefix(value === undefined || value === '' ? fallback : value);
    } catch (e) {
      throw usageError(`${flag}: ${(e as Error).message}`);
    }
  };
  return {
    wafPrefix: read(g.wafPrefix !== undefined ? '--waf-prefix' : 'SVC_WAF_PREFIX', g.wafPrefix ?? env.SVC_WAF_PREFIX, '/data'),
    apiPrefix: read(g.apiPrefix !== undefined ? '--api-prefix' : 'SVC_API_PREFIX', g.apiPrefix ?? env.SVC_API_PREFIX, '/oapi'),
  };
}

/** A timeout past what a timer honours would fire at once: refused rather than silently useless. */
function parseTimeout(text: string): number {
  try {
    return parseDuration(text, { positive: true, maxMs: TIMER_MAX_MS });
  } catch (e) {
    throw usageError(`--request-timeout: ${(e as Error).message}`);
  }
}

function storeOptions(g: GlobalOptions): StoreOptions {
  if (g.namespace !== undefined && (!NAMESPACE.test(g.namespace) || g.namespace.length > 63)) {
    throw usageError(`-n/--namespace: "${g.namespace}" is not a namespace name (lowercase letters, digits and "-", at most 63)`);
  }
  return {
    ...(g.kubeconfig !== undefined ? { kubeconfig: g.kubeconfig } : {}),
    ...(g.context !== undefined ? { context: g.context } : {}),
    ...(g.namespace !== undefined ? { namespace: g.namespace } : {}),
    ...(g.dir !== undefined ? { dir: g.dir } : {}),
    ...(g.requestTimeout !== undefined ? { requestTimeoutMs: parseTimeout(g.requestTimeout) } : {}),
    ...(g.allowUnserved === true ? { allowUnserved: true } : {}),
  };
}

/** One word for a POSIX shell: as it is when it needs no quoting, else in single quotes. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

/** The store flags as given, for the commands a command prints to run next (they must reach the same store). */
function storeFlagsOf(g: GlobalOptions): string {
  return [
    ...(g.kubeconfig !== undefined ? ['--kubeconfig', g.kubeconfig] : []),
    ...(g.context !== undefined ? ['--context', g.context] : []),
    ...(g.namespace !== undefined ? ['-n', g.namespace] : []),
    ...(g.dir !== undefined ? ['--dir', g.dir] : []),
  ].map(shellWord).join(' ');
}

/** The command's full name as typed, for hints: "svc auth add-token". */
function commandPath(cmd: CommandUnknownOpts): string {
  const names: string[] = [];
  for (let c: CommandUnknownOpts | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/**
 * Commander's own usage errors, as one line that says where to look. An unknown "option" that does not
 * look like one is probably a token starting with "-": it is not echoed.
 */
function usageLine(message: string, cmd: CommandUnknownOpts): string {
  let line = message.replace(/\s*\n\s*/g, ' ').trim();
  line = withOptionSuggestion(line, cmd);
  line = line.replace(/unknown option '([^']*)'/, (whole, flag: string) =>
    /^--[a-z][a-z0-9-]{0,40}(=.*)?$/.test(flag) || /^-[A-Za-z]$/.test(flag)
      ? whole
      : "unknown option (not shown, in case it is a token; put '--' before a token that starts with '-')",
  );
  line = line.replace(/unknown command '([^']*)'/, (whole, name: string) =>
    /^[a-z][a-z0-9-]{0,40}$/.test(name) ? whole : 'unknown command (not shown, in case it is a token)',
  );
  return `${line} (see ${commandPath(cmd)} --help)\n`;
}

/** Spellings of a scope flag that commander's edit-distance suggestion does not reach (`--topic`). */
const SCOPE_FLAG_SPELLINGS: Readonly<Record<string, string>> = {
  '--topic': '--topic-hierarchy', '--topics': '--topic-hierarchy', '--hierarchy': '--topic-hierarchy', '--topic-hierarchie': '--topic-hierarchy', '--topichierarchy': '--topic-hierarchy',
  '--metadata': '--metadata-id', '--metadata-identifier': '--metadata-id', '--dataset': '--metadata-id', '--dataset-id': '--metadata-id', '--urn': '--metadata-id', '--metadataid': '--metadata-id',
  '--paths': '--path', '--process': '--path',
};

/** An unknown option that is a known misspelling of a scope flag the command has gets commander's "(Did you mean ...?)". */
function withOptionSuggestion(line: string, cmd: CommandUnknownOpts): string {
  if (/did you mean/i.test(line)) return line;
  const m = /unknown option '(--[a-z][a-z-]*)(=[^']*)?'/.exec(line);
  const meant = m ? SCOPE_FLAG_SPELLINGS[m[1]!] : undefined;
  if (meant === undefined || !cmd.options.some((o) => o.long === meant)) return line;
  return `${line} (Did you mean ${meant}?)`;
}

/** How an argument that is a scope should have been given: its flag, when its shape tells the kind. */
function scopeFlagOf(operand: string): { flag: string; kind: string } | undefined {
  if (/^urn:/i.test(operand)) return { flag: '--metadata-id', kind: 'a dataset (metadata identifier)' };
  if (/^(origin|cache)([./]|$)/i.test(operand)) return { flag: '--topic-hierarchy', kind: 'a topic hierarchy' };
  if (/^\/?(processes|collections)\//i.test(operand) || operand.includes('/')) return { flag: '--path', kind: 'a path' };
  if (operand.includes('.')) return { flag: '--topic-hierarchy', kind: 'a topic hierarchy' };
  return undefined;
}

/**
 * Operands beyond those a command declares (`svc auth show origin.a.wis2...`): a usage error naming the flag a scope
 * takes, instead of commander's "too many arguments". The operand is repeated only when it has a scope's shape (lower
 * case, no token prefix): it may be a token pasted in the wrong place, which is never echoed.
 */
function refuseOperands(cmd: CommandUnknownOpts, declared: number): void {
  const extra = cmd.args.slice(declared);
  if (extra.length === 0) return;
  const path = commandPath(cmd);
  const flags = 'one of --topic-hierarchy T, --metadata-id M or --path P';
  if (declared > 0) throw usageError(`${path} takes one argument, the token; the scope goes in a flag: ${flags} (see ${path} --help)`);
  const operand = extra[0]!;
  const guess = scopeFlagOf(operand);
  const echo = /^[a-z0-9:._/-]{1,256}$/.test(operand) && !/^svc_/.test(operand);
  if (guess === undefined) throw usageError(`${path} takes no argument: a scope goes in a flag, ${flags} (see ${path} --help)`);
  throw usageError(`${path} takes the scope as a flag, not as an argument: ${echo ? `give ${guess.flag} ${operand}` : `this one looks like ${guess.kind}, given with ${guess.flag}`} (or ${flags}; see ${path} --help)`);
}

/** --wait and --wait-timeout, on every command that writes. */
const waitOptions = <A extends unknown[], O extends OptionValues, G extends OptionValues>(cmd: Command<A, O, G>) =>
  cmd
    .option('--wait', 'return once svc-operator has compiled the change into the snapshot svc-auth enforces (Kubernetes only); exit 1 if not within --wait-timeout, the change staying written')
    .option('--wait-timeout <duration>', 'how long --wait waits, e.g. 30s or 2m (default 30s; implies --wait)');

/** --topic-hierarchy, --metadata-id and --path, typed into the command's options (commander's extra typings). */
const scopeOptions = <A extends unknown[], O extends OptionValues, G extends OptionValues>(cmd: Command<A, O, G>, what: string) =>
  cmd
    .option('--topic-hierarchy <topic>', `${what} a topic hierarchy (dotted, or slash form a/b/c)`)
    .option('--metadata-id <urn>', `${what} a dataset by metadata identifier (urn:...)`)
    .option('--path <path>', `${what} a path: processes/<process-id-prefix>, collections/stations, or any other path of the host (wis2downloader)`);

const outputOption = <const C extends readonly string[]>(choices: C, fallback: C[number]) =>
  new Option('-o, --output <format>', 'output format').choices(choices).default(fallback);

/**
 * Runs a command: its code (imported when it runs) gets the context every command gets; its answer is the exit code.
 * Each action passes its own arguments and options, as commander's extra typings infer them from the declarations.
 */
type Runner = (cmd: CommandUnknownOpts, command: (ctx: CommandContext) => Promise<number>, operands?: number) => Promise<void>;

export function buildProgram(io: Io, setExit: (code: number) => void): CommandUnknownOpts {
  const name = io.programName;
  const program = withGlobalOptions(new Command(name));
  // The global options live on the program, wherever they stand on the command line.
  const run = runner(io, setExit, () => program.opts());
  const auth = program.command('auth').description('manage the tokens of protected scopes');
  // The order of `svc auth --help`.
  addTokenCommand(auth, run, name);
  readingCommands(auth, run);
  subjectCommands(auth, run);
  networkCommands(auth, run, name);
  stateCommands(auth, run, name);
  importCommand(auth, run);
  removeTokenCommand(auth, run);
  wiringCommand(auth, run, name);
  completionCommand(program, io, setExit);
  configureOutputs(program, io);
  return program;
}

function withGlobalOptions(program: Command) {
  return program
    .description('Token-based access control for the data service: manage the tokens of protected scopes (ProtectedScope objects).')
    .version(VERSION, '-V, --version', 'print the version')
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account)')
    .option('--context <name>', 'kubeconfig context to use')
    .option('-n, --namespace <namespace>', 'namespace of the ProtectedScopes (default: the context\'s, else the one namespace the chart\'s record in kube-public says an svc-operator serves)')
    .option('--dir <dir>', 'use a directory of ProtectedScope manifests instead of a cluster (also $SVC_SCOPES_DIR)')
    .option('--request-timeout <duration>', 'timeout of each Kubernetes API request, e.g. 30s (default 30s)')
    .option('--allow-unserved', 'write even where no svc-operator serves the namespace, because one is being set up (otherwise refused: nothing would enforce the change)')
    .option('--open-paths-by-default', "answer as an svc-auth run with --open-paths-by-default does (also $SVC_OPEN_PATHS_BY_DEFAULT=true)")
    .option('--waf-prefix <prefix>', "svc-auth's --waf-prefix (default /data; also $SVC_WAF_PREFIX)")
    .option('--api-prefix <prefix>', "svc-auth's --api-prefix, which paths below <prefix>/processes and <prefix>/collections are read against (default /oapi; also $SVC_API_PREFIX)")
    .showSuggestionAfterError(true)
    .exitOverride();
}

/** Each action gets the context (io, the global options checked up front, a lazily opened store) and sets the exit code. */
function runner(io: Io, setExit: (code: number) => void, globalOptions: () => GlobalOptions): Runner {
  // `operands`: how many arguments the command declares; more are refused with the flag a scope takes (refuseOperands).
  return async (cmd, command, operands) => {
    const globals = globalOptions();
    const fromEnv = parseBooleanSetting('SVC_OPEN_PATHS_BY_DEFAULT', io.env.SVC_OPEN_PATHS_BY_DEFAULT);
    if (fromEnv instanceof Error) throw usageError(fromEnv.message);
    const ctx: CommandContext = {
      io,
      commandPath: commandPath(cmd),
      openPathsByDefault: globals.openPathsByDefault === true || fromEnv,
      storeFlags: storeFlagsOf(globals),
      prefixes: await prefixesOf(globals, io.env),
      openStore: async (): Promise<ScopeStore> => {
        const { openStore } = await import('./backends/open.js');
        return openStore({ ...storeOptions(globals), note: (line) => io.err(`${line}\n`) }, io.env);
      },
    };
    // Validate the global options up front, so a bad one is a usage error even for commands that fail later.
    storeOptions(globals);
    if (operands !== undefined) refuseOperands(cmd, operands);
    setExit(await command(ctx));
  };
}

function addTokenCommand(auth: Command, run: Runner, name: string): void {
  scopeOptions(
    auth
      .command('add-token')
      .description('add a token to a scope (generated when none is given; shown once); the first token closes the scope')
      .argument('[token]', 'the token to add (printable ASCII, no whitespace, at least 16 characters; "-" reads it from stdin)'),
    'protect',
  )
    .option('--expires-in <duration>', 'expire the token after 30m, 12h, 90d, 2w, ...')
    .option('--expires-at <time>', 'expire the token at this RFC 3339 time, e.g. 2027-01-01T00:00:00Z')
    .option('--description <text>', 'what the token is for (shown by show; at most 256 characters)')
    .option('--dry-run', 'print the resulting object without writing it (with -o yaml|json: the manifest on stdout, the token on stderr)')
    .option('--wait', 'return once svc-operator has compiled the change into the snapshot svc-auth enforces (Kubernetes only); exit 1 if not within --wait-timeout, the change staying written')
    .option('--wait-timeout <duration>', 'how long --wait waits, e.g. 30s or 2m (default 30s; implies --wait)')
    .addOption(outputOption(['text', 'json', 'yaml'], 'text'))
    .allowExcessArguments(true)
    .addHelpText(
      'after',
      `
Examples:
  ${name} auth add-token --path processes/svc                  # execute processes (svc-synop2bufr, svc-csv2bufr)
  ${name} auth add-token --path collections/stations           # PUT/POST/DELETE on the stations collection
  ${name} auth add-token --topic-hierarchy origin/a/wis2/mw-met/data/core --expires-in 90d
  ${name} auth add-token --metadata-id urn:wmo:md:mw-met:surface-weather-observations "$TOKEN"
  ${name} --dir gitops/scopes auth add-token --topic-hierarchy origin.a.wis2 --description "partner NMHS"
  ${name} auth add-token --topic-hierarchy origin.a.wis2 --dry-run -o yaml > scope.yaml   # token on stderr
  ${name} -n svc auth add-token --path processes/svc --wait    # returns once svc-operator has compiled it

A change is in force once svc-operator has compiled it and svc-auth has loaded the snapshot (about a second; --wait
waits for it); a proxy that caches svc-auth's answers may allow what it takes away for auth.cacheMaxAge more (30 s).
A namespace no svc-operator serves is refused (--allow-unserved while one is being set up).`,
    )
    .action((token, opts, cmd) => run(cmd, async (ctx) => (await import('./commands/add-token.js')).addToken(ctx, token, opts), 1));

}

function removeTokenCommand(auth: Command, run: Runner): void {
  scopeOptions(
    auth
      .command('remove-token')
      .description('remove one token of a scope, given the token or its id; after the last one a topic hierarchy or dataset opens, a path scope stays closed by default')
      .argument('[token]', 'the token to remove ("-" reads it from stdin); or use --id'),
    'edit',
  )
    .option('--id <id>', 'the id of the token to remove (12 hex characters, as show lists them)')
    .option('--wait', 'return once svc-operator has compiled the change into the snapshot svc-auth enforces (Kubernetes only); exit 1 if not within --wait-timeout, the change staying written')
    .option('--wait-timeout <duration>', 'how long --wait waits, e.g. 30s or 2m (default 30s; implies --wait)')
    .addOption(outputOption(['text', 'json', 'yaml'], 'text'))
    .allowExcessArguments(true)
    .action((token, opts, cmd) => run(cmd, async (ctx) => (await import('./commands/remove.js')).removeToken(ctx, token, opts), 1));

}

/** show and has-access-topic: they read, never write. */
function readingCommands(auth: Command, run: Runner): void {
  scopeOptions(auth.command('show').description('list protected scopes: kind, state, token count, token ids, descriptions, expiry, subjects and networks (never a token)'), 'only')
    .addOption(outputOption(['table', 'text', 'json', 'yaml', 'wcmp2'], 'table'))
    .allowExcessArguments(true)
    .action((opts, cmd) => run(cmd, async (ctx) => (await import('./commands/show.js')).show(ctx, opts), 0));

  scopeOptions(
    auth
      .command('has-access-topic')
      .description('check whether a token, or an identity of the OpenID provider, is granted access to a scope, as svc-auth decides it (exit 0 granted, 1 denied)')
      .argument('[token]', 'the token to check ("-" reads it from stdin); or --user'),
    'check',
  )
    .option('--user <user>', "check an identity instead of a token: its username as svc-auth names it (kube-apiserver's: https://issuer#sub by default, the bare email for email)")
    .option('--group <group>', "one of the identity's groups (repeat for each)", collect)
    .option('--from <address>', 'the client address (IPv4 or IPv6, as the proxy sees it): granted when a network of a governing scope holds it, else the token or --user decides')
    .addOption(outputOption(['text', 'json', 'yaml'], 'text'))
    .allowExcessArguments(true)
    .action((token, opts, cmd) => run(cmd, async (ctx) => (await import('./commands/has-access.js')).hasAccess(ctx, token, opts), 1));

}

/** add-subject and remove-subject. */
function subjectCommands(auth: Command, run: Runner): void {
  for (const [verb, description, purpose] of [
    ['add-subject', 'grant an identity of the OpenID provider access to a scope (a user, or every member of a group); a subject closes the scope as a token does', 'grant'],
    ['remove-subject', 'take an identity\'s grant back; the scope opens when no token, subject, network or closed: true is left', 'revoke'],
  ] as const) {
    waitOptions(scopeOptions(auth.command(verb).description(description), purpose))
      .option('--user <user>', "a user, named as kube-apiserver names it: the issuer URL, # and the sub by default (https://login.example.org/dex#alice), the bare email with --oidc-username-claim email, or the configured prefix and the claim")
      .option('--group <group>', 'a group: an entry of the groups claim, with the groups prefix when svc-auth configures one (none by default)')
      .addOption(outputOption(['text', 'json', 'yaml'], 'text'))
      .allowExcessArguments(true)
      .action((opts, cmd) => run(cmd, async (ctx) => {
        const { addSubject, removeSubject } = await import('./commands/subjects.js');
        return (verb === 'add-subject' ? addSubject : removeSubject)(ctx, opts);
      }, 0));
  }

}

/** Repeatable string options (`--cidr A --cidr B`). */
const collect = (v: string, prev: string[] = []) => [...prev, v];

/** add-network and remove-network: grants by client address (docs/wis2.md). */
function networkCommands(auth: Command, run: Runner, name: string): void {
  waitOptions(scopeOptions(
    auth
      .command('add-network')
      .description("grant a network access to a scope by client address, as svc-auth's proxy saw it (e.g. the WIS2 Global Services); a network closes the scope as a token does"),
    'grant',
  ))
    .option('--cidr <cidr>', 'a network in canonical form, 203.0.113.7/32 or 2001:db8::/32 (repeat for more)', collect)
    .option('--description <text>', 'whose network it is (for the --cidr networks; at most 256 characters)')
    .option('--from-file <file>', 'read networks from a file ("-": stdin), one a line: the network, then its description; "#" starts a comment')
    .option('--replace', "make the networks given the scope's whole list: any other is taken away (keeps a list such as the Secretariat's current)")
    .option('--allow-wide-network', 'grant a network wider than one organisation\'s (IPv4 shorter than /8, IPv6 shorter than /32, 0.0.0.0/0 and ::/0: everyone) on purpose; refused otherwise')
    .addOption(outputOption(['text', 'json', 'yaml'], 'text'))
    .allowExcessArguments(true)
    .addHelpText('after', `
Examples:
  ${name} auth add-network --path data --cidr 203.0.113.7/32 --description "Global Cache"
  ${name} auth add-network --topic-hierarchy origin.a.wis2.mw-met.data.recommended --cidr 198.51.100.0/24 --cidr 2001:db8:5::/48
  ${name} auth add-network --path data --from-file global-services.txt --replace

A network is written in canonical form (the network address, no host bit set; IPv6 in lower case with "::"): a
network written otherwise is refused with the form to use (203.0.113.9/24: use 203.0.113.0/24). A network wider than
one organisation's (IPv4 shorter than /8, IPv6 shorter than /32) is refused unless --allow-wide-network: 0.0.0.0/0
or ::/0 lets everyone in, and the scope is then shown as open to every address, never as closed.`)
    .action((opts, cmd) => run(cmd, async (ctx) => (await import('./commands/networks.js')).addNetwork(ctx, opts), 0));

  waitOptions(scopeOptions(auth.command('remove-network').description('take a network\'s grant back; the scope opens when no token, subject, network or closed: true is left'), 'revoke'))
    .option('--cidr <cidr>', 'the network, as show lists it (repeat for more)', collect)
    .addOption(outputOption(['text', 'json', 'yaml'], 'text'))
    .allowExcessArguments(true)
    .action((opts, cmd) => run(cmd, async (ctx) => (await import('./commands/networks.js')).removeNetwork(ctx, opts), 0));

}

/** What opens or closes a scope besides its tokens: remove-tokens, close, open, public. */
function stateCommands(auth: Command, run: Runner, name: string): void {
  waitOptions(scopeOptions(auth.command('remove-tokens').description('remove every token of a scope: a topic hierarchy or dataset opens, unless closed: true, a subject or a network keeps it closed; a path scope stays closed with 0 tokens'), 'open'))
    .addOption(outputOption(['text', 'json', 'yaml'], 'text'))
    .allowExcessArguments(true)
    .addHelpText('after', `
Path scopes (processes/..., collections/stations, other paths) are closed by default: with their last token gone they
stay "Closed, 0 tokens (closed by default: ...)": nothing executes or writes until a token grants it again (unless svc-auth runs
with --open-paths-by-default). The objects stay, with an empty token list; nothing is deleted.`)
    .action((opts, cmd) => run(cmd, async (ctx) => (await import('./commands/remove.js')).removeTokens(ctx, opts), 0));

  waitOptions(scopeOptions(auth.command('close').description('keep a scope closed even with no token (closed: true), e.g. an embargoed dataset whose tokens come later'), 'close'))
    .addOption(outputOption(['text', 'json', 'yaml'], 'text'))
    .allowExcessArguments(true)
    .action((opts, cmd) => run(cmd, async (ctx) => (await import('./commands/close.js')).close(ctx, opts), 0));

  waitOptions(scopeOptions(auth.command('open').description('clear closed: true; a scope with tokens stays closed until they are removed'), 'open'))
    .addOption(outputOption(['text', 'json', 'yaml'], 'text'))
    .allowExcessArguments(true)
    .action((opts, cmd) => run(cmd, async (ctx) => (await import('./commands/close.js')).open(ctx, opts), 0));

  auth
    .command('public')
    .description('declare a path scope public: every method open where it is only closed by default, never where a token, subject or closed: true closes it (--off takes it back)')
    .option('--path <path>', 'the path: processes/<process-id> (that process only, not its -family), or another path of the host (never a prefix such as oapi or data)')
    // Not offered (help, completion): only a path can be public; given anyway, they get that answer rather than "unknown option".
    .addOption(new Option('--topic-hierarchy <topic>').hideHelp())
    .addOption(new Option('--metadata-id <urn>').hideHelp())
    .option('--off', 'no longer public (a process goes back to closed by default)')
    .option('--wait', 'return once svc-operator has compiled the change into the snapshot svc-auth enforces (Kubernetes only); exit 1 if not within --wait-timeout, the change staying written')
    .option('--wait-timeout <duration>', 'how long --wait waits, e.g. 30s or 2m (default 30s; implies --wait)')
    .addOption(outputOption(['text', 'json', 'yaml'], 'text'))
    .allowExcessArguments(true)
    .addHelpText('after', `
Examples:
  ${name} auth public --path processes/station-info         # wis2box-ui's station map calls it without a token
  ${name} auth public --path processes/station-info --off`)
    .action((opts, cmd) => run(cmd, async (ctx) => {
      const { setPublic } = await import('./commands/public.js');
      if (opts.path === undefined) throw usageError(`only a path scope can be public: give --path P (see ${ctx.commandPath} --help)`);
      return setPublic(ctx, opts);
    }, 0));

}

function importCommand(auth: Command, run: Runner): void {
  auth
    .command('import')
    .description("import a wis2box-auth token store (its SQLite auth.db) into the scopes its topics map to, each token's PBKDF2 hash kept as it is; all or nothing, every row it cannot carry over named")
    .argument('<file>', 'the wis2box-auth store (WIS2BOX_AUTH_STORE, /data/wis2box/auth.db by default)')
    .option('--dry-run', 'say what would be imported, write nothing')
    .option('--accept-narrower', 'import even where the protection becomes narrower than wis2box-auth\'s: rows of no scope are skipped, and a one-word topic keeps only the URL forms a scope can close (both listed)')
    .option('--wait', 'return once svc-operator has compiled the change into the snapshot svc-auth enforces (Kubernetes only); exit 1 if not within --wait-timeout, the change staying written')
    .option('--wait-timeout <duration>', 'how long --wait waits, e.g. 30s or 2m (default 30s; implies --wait)')
    .addOption(outputOption(['text', 'json', 'yaml'], 'text'))
    .action((file, opts, cmd) => run(cmd, async (ctx) => (await import('./commands/import.js')).importStore(ctx, file, opts)));

}

/** wiring: what the chart renders from protect.*, for your own manifests. */
function wiringCommand(auth: Command, run: Runner, name: string): void {
  const collect = (v: string, prev: string[] = []) => [...prev, v];
  auth
    .command('wiring')
    .description("print the objects that send a controller's routes to svc-auth, as the chart renders them from its protect values (for your own manifests or GitOps overlays)")
    .addOption(new Option('--controller <controller>', 'who reads them (protect.controller)').choices(['ingress-nginx', 'traefik', 'envoy-gateway', 'gateway-api']))
    .option('-f, --values <file>', "the chart's values file(s), merged in order as helm -f merges them", collect)
    .option('--route <host/path=service:port>', 'a protected path of a host and the Service serving it (repeat; replaces protect.hosts)', collect)
    .option('--gateway <namespace/name>', 'the Gateway the HTTPRoutes attach to, envoy-gateway and gateway-api (repeat; replaces their parentRefs)', collect)
    .addOption(outputOption(['yaml', 'json'], 'yaml'))
    .addHelpText('after', `
-n is svc-auth's namespace (the release's). Examples:
  ${name} -n svc auth wiring --controller ingress-nginx --route data.example.org/data=waf:80 --route data.example.org/oapi=oapi:80
  ${name} -n svc auth wiring --controller envoy-gateway --gateway envoy-gateway-system/eg --route data.example.org/data=waf:80
  ${name} -n svc auth wiring -f values.yaml > wiring.yaml      # protect.* of the values you install the chart with`)
    .action((opts, cmd) => run(cmd, async (ctx) => (await import('./commands/wiring.js')).wiring(ctx, (cmd.optsWithGlobals() as { namespace?: string }).namespace, opts)));
}

function completionCommand(program: CommandUnknownOpts, io: Io, setExit: (code: number) => void): void {
  const name = program.name();
  program
    .command('completion')
    .description('print a shell completion script (bash, zsh or fish) for this command tree')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(['bash', 'zsh', 'fish']))
    .addHelpText('after', `
Load it with:  source <(${name} completion bash)   or   source <(${name} completion zsh)   or   ${name} completion fish | source

For \`kubectl svc <TAB>\`, kubectl (1.26+) asks the executable kubectl_complete-svc on the PATH, which npm installs
(or npm link puts there) beside kubectl-svc; kubectl's own completion must be loaded (source <(kubectl completion bash)).`)
    .action(async (shell) => {
      const { bashCompletion, fishCompletion, zshCompletion } = await import('./completion.js');
      const names = ['svc', 'kubectl-svc'];
      const script = { bash: bashCompletion, zsh: zshCompletion, fish: fishCompletion }[shell];
      io.out(script(program, names));
      setExit(EXIT_OK);
    });

}

/** Output and one-line usage errors for every command, wherever it sits in the tree. */
function configureOutputs(program: CommandUnknownOpts, io: Io): void {
  const configure = (cmd: CommandUnknownOpts) => {
    cmd.exitOverride().configureOutput({
      writeOut: (s) => io.out(s),
      writeErr: (s) => io.err(s),
      getOutHelpWidth: () => io.columns ?? 80,
      getErrHelpWidth: () => io.columns ?? 80,
      getOutHasColors: () => false,
      getErrHasColors: () => false,
      outputError: (s, write) => write(usageLine(s, cmd)),
    });
    cmd.commands.forEach(configure);
  };
  configure(program);
}

/** Runs the program on argv (without node and script); returns the exit code. Never throws. */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  let code = EXIT_OK;
  const program = buildProgram(io, (c) => (code = c));
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.exitCode === 0) return EXIT_OK; // --help, help <command>, --version
      // Help shown because a command was missing (`svc`, `svc auth`) is a usage error too.
      if (e.code === 'commander.help') io.err('error: a command is needed: choose one of the commands listed above\n');
      return EXIT_USAGE;
    }
    if (e instanceof CliError) {
      io.err(`error: ${e.message}\n`);
      return e.exitCode;
    }
    io.err(`error: ${(e as Error)?.message?.split('\n')[0] ?? String(e)} (unexpected; please report it)\n`);
    return EXIT_FAILED;
  }
}
