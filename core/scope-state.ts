/**
 * Whether a scope is closed, and why (docs/access-rules.md): while it has a token record (expired ones
 * included), while it grants a subject (an identity of the OpenID provider) or a network (clients by address), while an object says
 * `closed: true`, or, for a path scope (process execution, stations writes), by default until a token grants it,
 * unless svc-auth runs with `--open-paths-by-default`. The operator's status, its Events and the CLI all say it the
 * same way: in the words of whyClosed below, and nowhere else.
 */
import { addressCount, everyAddressWords, parseNetwork, type EveryAddress, type NetworkReach } from './network.js';
import { DEFAULT_PREFIXES, isJobsPath, type PathPrefixes } from './path-scope.js';
import { isPrefixPath, type Scope } from './scope.js';

/**
 * Why a closed scope is closed: a token record, a subject, `closed: true`, the default of path scopes, or (for a
 * scope declared public) another scope with a grant that covers its requests, which public never opens.
 */
export type ClosedBy = 'tokens' | 'subjects' | 'networks' | 'flag' | 'default' | 'covered';

/**
 * Whether a scope is open or closed, the one spelling of it: `status.state`, the `state` label of
 * `svc_operator_scopes`, `show`'s state, and the discriminant of ScopeState.
 */
export type OpenOrClosed = 'Open' | 'Closed';

/**
 * `public` is set on an Open state when the scope is declared public (a path open for every method); `everyAddress`
 * on a scope whose networks hold every address of both families (`all`) or of one (4, 6): those clients get in without
 * a credential, so the scope is never told as closed. `governing` is set on a scope closed because others cover it
 * (their keys, `path:processes/station`); `wide` on a closed scope granting networks wider than one organisation's
 * (network.ts WIDEST_PREFIX), which every report names with how many addresses they admit.
 */
export type ScopeState =
  | { readonly state: 'Closed'; readonly by: ClosedBy; readonly governing?: readonly string[]; readonly wide?: readonly string[] }
  | { readonly state: 'Open'; readonly public?: true; readonly everyAddress?: EveryAddress };

type ClosedState = Extract<ScopeState, { state: 'Closed' }>;

/**
 * Why a scope is closed, written once for every report: `svc auth show` (its STATE column and describeState), the
 * CLI's answers to close, open, public and remove-token(s), the operator's Ready message and its ScopeClosed Event.
 * `reason` says it in words; `tag` is the word a table cell has room for (`Closed (default)`), absent for tokens,
 * subjects and networks, which the counts beside the state say.
 */
export function whyClosed(s: Pick<ClosedState, 'by' | 'governing'>): { readonly reason: string; readonly tag?: string } {
  switch (s.by) {
    case 'tokens':
      return { reason: 'it has tokens' };
    case 'subjects':
      return { reason: 'it grants subjects' };
    case 'networks':
      return { reason: 'it grants networks' };
    case 'flag':
      return { reason: 'closed: true', tag: 'closed: true' };
    case 'default':
      return { reason: 'closed by default: nothing executes or writes until a token grants it', tag: 'default' };
    case 'covered':
      return {
        reason: `declared public, but ${(s.governing ?? []).join(' and ')} covers it: public never opens what a grant or closed: true covers`,
        tag: 'covered',
      };
  }
}

/**
 * ` (why)` after a closed state's counts, where they do not say it (whyClosed); '' where they do (tokens, subjects,
 * networks). A wide network is named with what it admits: ` (10.0.0.0/7 admits 33,554,432 IPv4 addresses without a
 * credential)`.
 */
export function closedAside(s: Pick<ClosedState, 'by' | 'governing' | 'wide'>): string {
  const why = whyClosed(s);
  return `${why.tag !== undefined ? ` (${why.reason})` : ''}${wideAside(s.wide)}`;
}

/** ` (10.0.0.0/7 admits 33,554,432 IPv4 addresses without a credential)`, or '' without wide networks. */
function wideAside(wide: readonly string[] | undefined): string {
  if (wide === undefined || wide.length === 0) return '';
  const each = wide.map((cidr) => {
    const n = parseNetwork(cidr);
    return n.ok ? `${cidr} admits ${addressCount(n.value)} ${n.value.family === 4 ? 'IPv4' : 'IPv6'} addresses` : cidr;
  });
  return ` (${each.join(', ')} without a credential)`;
}

/**
 * Prefix paths (`wis2downloader`) are open until their first token, like topics: only process execution, stations
 * writes and unsafe requests on `<api prefix>/jobs` are closed by default. A public flag never opens what tokens,
 * subjects, networks or closed close (and the caller passes it only where public is allowed: path-scope.ts publicRefusal).
 */
export function stateOf(
  scope: Scope, tokens: number, closedFlag: boolean, openPathsByDefault: boolean, subjects = 0, publicFlag = false, prefixes: PathPrefixes = DEFAULT_PREFIXES, networks = 0,
  reach?: NetworkReach,
): ScopeState {
  // A network that holds every address of a family lets those clients in with nothing else: never told as closed.
  if (networks > 0 && reach?.every !== undefined) return { state: 'Open', everyAddress: reach.every };
  const s = closedOrOpen(scope, tokens, closedFlag, openPathsByDefault, subjects, publicFlag, prefixes, networks);
  return s.state === 'Closed' && networks > 0 && reach !== undefined && reach.wide.length > 0 ? { ...s, wide: reach.wide } : s;
}

function closedOrOpen(scope: Scope, tokens: number, closedFlag: boolean, openPathsByDefault: boolean, subjects: number, publicFlag: boolean, prefixes: PathPrefixes, networks: number): ScopeState {
  if (tokens > 0) return { state: 'Closed', by: 'tokens' };
  if (subjects > 0) return { state: 'Closed', by: 'subjects' };
  if (networks > 0) return { state: 'Closed', by: 'networks' };
  if (closedFlag) return { state: 'Closed', by: 'flag' };
  if (publicFlag && scope.kind === 'path') return { state: 'Open', public: true };
  if (scope.kind === 'path' && !openPathsByDefault && (!isPrefixPath(scope.value) || isJobsPath(scope.value, prefixes))) return { state: 'Closed', by: 'default' };
  return { state: 'Open' };
}

/**
 * `Closed, 2 tokens`, `Closed, 0 tokens, 1 subject`, `Closed, 0 tokens, 2 networks`, `Closed, 0 tokens (closed: true)`,
 * `Closed, 0 tokens (closed by default: ...)`, `Open, 0 tokens`: the counts, and why it is closed where they do not say
 * it (whyClosed). Subjects and networks are named only when there are some.
 */
export function describeState(s: ScopeState, tokens: number, subjects = 0, networks = 0): string {
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  const count = [plural(tokens, 'token'), ...(subjects > 0 ? [plural(subjects, 'subject')] : []), ...(networks > 0 ? [plural(networks, 'network')] : [])].join(', ');
  if (s.state === 'Open') {
    if (s.everyAddress !== undefined) return `Open to ${everyAddressWords(s.everyAddress)} (a granted network holds ${s.everyAddress === 'all' ? 'them all' : 'every one'}${s.everyAddress === 'all' ? '' : '; other clients need a grant'}), ${count}`;
    return s.public ? 'Open, public (every method)' : `Open, ${count}`;
  }
  return `Closed, ${count}${closedAside(s)}`;
}

/**
 * The state in a word or two, for a table cell: `Closed`, `Closed (default)`, `Closed (closed: true)`, `Closed (covered)`,
 * `Closed (wide network)`, `Open`, `Open (public)`, `Open (every address)`, `Open (every IPv4 address)`.
 */
export function stateLabel(s: ScopeState): string {
  if (s.state === 'Open') return s.everyAddress !== undefined ? `Open (${everyAddressWords(s.everyAddress)})` : s.public ? 'Open (public)' : 'Open';
  const { tag } = whyClosed(s);
  const tags = [...(tag !== undefined ? [tag] : []), ...(s.wide !== undefined && s.wide.length > 0 ? ['wide network'] : [])];
  return tags.length > 0 ? `Closed (${tags.join(', ')})` : 'Closed';
}
