/**
 * `svc auth add-network SCOPE --cidr CIDR` (or `--from-file FILE`) and `remove-network SCOPE --cidr CIDR`: grants by
 * client address, kept in `spec.networks` next to the tokens (docs/wis2.md). A network closes the scope as a token
 * does. Adding writes the scope's own object (created when the scope has none), and updates the description of a
 * network already listed wherever it is; `--replace` makes the given list the scope's whole list, taking the others
 * out of every object (the way to keep the Secretariat's list current). Removing edits every object that lists the
 * network. Every edit goes through the store's update, so a concurrent edit is never lost; a bad network is a usage
 * error naming the form to use, and nothing is written.
 */
import { readFile } from 'node:fs/promises';
import {
  closedByFlag, describeState, everyAddressWords, MAX_NETWORKS_PER_OBJECT, networkReach, networksOf, newProtectedScope, parseNetwork, publicByFlag, scopeKey, scopeObjectName, stateOf, wideNetworkRefusal, withSpec, type NetworkRecord, type ProtectedScope, type Scope, type ScopeState, tokenHashesOf } from '../../core/index.js';
import type { Mutate } from '../backends/backend.js';
import { failure, usageError } from '../errors.js';
import { structured } from '../output.js';
import {
  followUp, networkCount, noticingNew, openForWrite, reportInForce, reportNewScope, requireScope, scopeArgs, scopeFromFlags, scopeJson, scopeLabel, subjectCount, updateExisting,
  writtenObjects, type CommandContext, type ScopeFlags, type WriteFlags,
} from './common.js';
import { checkEntries, entriesOfFile, entriesOfFlags, problemLine } from './network-list.js';

interface NetworkOptions extends ScopeFlags, WriteFlags {
  readonly cidr?: readonly string[];
  readonly output: 'text' | 'json' | 'yaml';
}

interface AddNetworkOptions extends NetworkOptions {
  readonly description?: string;
  readonly fromFile?: string;
  readonly replace?: boolean;
  readonly allowWideNetwork?: boolean;
}

/** A list file is a few hundred lines; anything much larger is not one. */
const MAX_LIST_BYTES = 1024 * 1024;

async function readList(ctx: CommandContext, file: string): Promise<string> {
  let text: string;
  try {
    text = file === '-' ? await ctx.io.readStdin() : await readFile(file, 'utf8');
  } catch (e) {
    throw usageError(`--from-file: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message} (nothing was changed)`);
  }
  if (text.length > MAX_LIST_BYTES) throw usageError(`--from-file: ${file} is larger than a list of networks can be (1 MiB; nothing was changed)`);
  return text;
}

/** The networks given, checked before the store is opened. */
async function networksGiven(ctx: CommandContext, options: AddNetworkOptions): Promise<readonly NetworkRecord[]> {
  const cidrs = options.cidr ?? [];
  if (cidrs.length === 0 && options.fromFile === undefined) throw usageError(`${ctx.commandPath}: give --cidr CIDR (repeat it for more) or --from-file FILE`);
  if (options.description !== undefined && cidrs.length === 0) {
    throw usageError(`${ctx.commandPath}: --description describes the networks of --cidr; a line of --from-file carries its own description after the network`);
  }
  const entries = entriesOfFlags(cidrs, options.description);
  if (options.fromFile !== undefined) entries.push(...entriesOfFile(await readList(ctx, options.fromFile), options.fromFile === '-' ? 'stdin' : options.fromFile));
  const checked = checkEntries(entries);
  if (!checked.ok) throw usageError(`${problemLine(checked.problems)} (nothing was changed)`);
  if (checked.networks.length === 0) {
    throw usageError(`${options.fromFile} lists no network${options.replace ? `: to take every network away use ${followUp(ctx, 'remove-network')}` : ''} (nothing was changed)`);
  }
  checkWidth(ctx, checked.networks, options.allowWideNetwork === true);
  return checked.networks;
}

/**
 * Networks wider than one organisation's (core's WIDEST_PREFIX: /8, /32) are refused unless --allow-wide-network says
 * so on purpose; admitted, they are said on stderr with what they let in, as every view says it.
 */
function checkWidth(ctx: CommandContext, networks: readonly NetworkRecord[], allowed: boolean): void {
  const wide = networks.flatMap((n) => {
    const parsed = parseNetwork(n.cidr);
    const why = parsed.ok ? wideNetworkRefusal(parsed.value) : undefined;
    return why !== undefined ? [why] : [];
  });
  if (wide.length === 0) return;
  if (!allowed) {
    throw usageError(`${wide.join('; ')}: grant the addresses of the clients meant (a Global Service's /32, a gateway's /27), or add --allow-wide-network if admitting that many is the intent (nothing was changed)`);
  }
  for (const why of wide) ctx.io.err(`warning: ${why}; granted anyway (--allow-wide-network)\n`);
}

function withNetworks(o: ProtectedScope, networks: readonly NetworkRecord[]): ProtectedScope {
  return withSpec(o, { networks: networks.length > 0 ? networks : undefined });
}

/** What an add-network does to the scope's objects: the networks added, whose description changed, removed (--replace), left as they were. */
interface Plan {
  readonly added: readonly string[];
  readonly updated: readonly string[];
  readonly removed: readonly string[];
  readonly unchanged: readonly string[];
  readonly objects: readonly ProtectedScope[];
}

/** The objects to write so that the scope grants `given` (and, with `replace`, nothing else). Pure. */
function plan(scope: Scope, current: readonly ProtectedScope[], given: readonly NetworkRecord[], replace: boolean, namespace: string | undefined): Plan {
  const wanted = new Map(given.map((n) => [n.cidr, n]));
  const changed = new Map<string, ProtectedScope>();
  const updated: string[] = [];
  const removed: string[] = [];
  for (const o of current) {
    const list = networksOf(o);
    const next = list.flatMap((n): NetworkRecord[] => {
      const w = wanted.get(n.cidr);
      if (w === undefined && replace) removed.push(n.cidr);
      if (w === undefined) return replace ? [] : [n];
      if (w.description === undefined || w.description === n.description) return [n];
      updated.push(n.cidr);
      return [{ ...n, description: w.description }];
    });
    if (next.length !== list.length || next.some((n, i) => n !== list[i])) changed.set(o.metadata.name, withNetworks(o, next));
  }
  const listed = new Set(current.flatMap((o) => networksOf(o).map((n) => n.cidr)));
  const missing = given.filter((n) => !listed.has(n.cidr));
  if (missing.length > 0) {
    const name = scopeObjectName(scope);
    const base = changed.get(name) ?? current.find((o) => o.metadata.name === name) ?? newProtectedScope(scope, name, namespace, []);
    const all = [...networksOf(base), ...missing];
    if (all.length > MAX_NETWORKS_PER_OBJECT) {
      throw failure(`${name} would hold ${all.length} networks, more than the ${MAX_NETWORKS_PER_OBJECT} an object may: grant wider networks, or fewer (nothing was changed)`);
    }
    changed.set(name, withNetworks(base, all));
  }
  const unchanged = given.map((n) => n.cidr).filter((c) => listed.has(c) && !updated.includes(c));
  return { added: missing.map((n) => n.cidr), updated: [...new Set(updated)], removed: [...new Set(removed)], unchanged, objects: [...changed.values()] };
}

function addMutation(scope: Scope, given: readonly NetworkRecord[], replace: boolean, namespace: string | undefined, seen: (p: Plan) => void): Mutate {
  return (current) => {
    // A network closes the scope, which public contradicts (the CRD refuses the pair).
    if (current.some(publicByFlag)) throw usageError(`${scopeKey(scope)} is public (every method open): take that back first with public --off, then add the network (nothing was changed)`);
    const p = plan(scope, current, given, replace, namespace);
    seen(p);
    return p.objects;
  };
}

function removeMutation(scope: Scope, cidrs: readonly string[], hint: string): Mutate {
  return requireScope(scope, 'no network', (current, attempt) => {
    const listed = new Set(current.flatMap((o) => networksOf(o).map((n) => n.cidr)));
    const absent = cidrs.filter((c) => !listed.has(c));
    // On a retry a concurrent removal may have done it already: that is the outcome asked for.
    if (absent.length > 0 && attempt === 0) {
      throw failure(`${absent.join(', ')} ${absent.length === 1 ? 'is not a network' : 'are not networks'} of ${scopeKey(scope)}: list them with ${hint} (nothing was changed)`);
    }
    return current.filter((o) => networksOf(o).some((n) => cidrs.includes(n.cidr))).map((o) => withNetworks(o, networksOf(o).filter((n) => !cidrs.includes(n.cidr))));
  });
}

/** The scope's state after the edit, as the other commands tell it. */
function stateAfter(ctx: CommandContext, scope: Scope, objects: readonly ProtectedScope[]): { state: ScopeState; tokens: number; subjects: number; networks: number } {
  const tokens = tokenHashesOf(objects).size;
  const subjects = subjectCount(objects);
  const networks = networkCount(objects);
  const reach = networkReach(objects.flatMap((o) => networksOf(o).map((n) => n.cidr)));
  return { state: stateOf(scope, tokens, objects.some(closedByFlag), ctx.openPathsByDefault, subjects, false, ctx.prefixes, networks, reach), tokens, subjects, networks };
}

/** `203.0.113.7/32, 2001:db8::/32 and 3 more`. */
function listed(cidrs: readonly string[], shown = 5): string {
  return `${cidrs.slice(0, shown).join(', ')}${cidrs.length > shown ? ` and ${cidrs.length - shown} more` : ''}`;
}

function report(ctx: CommandContext, options: NetworkOptions, scope: Scope, where: string, written: readonly string[], did: Omit<Plan, 'objects'>, objects: readonly ProtectedScope[]): void {
  const after = stateAfter(ctx, scope, objects);
  if (options.output !== 'text') {
    const networks = objects.flatMap((o) => networksOf(o));
    ctx.io.out(structured(options.output, {
      scope: scopeJson(scope), store: where, written, added: did.added, updated: did.updated, removed: did.removed, unchanged: did.unchanged,
      state: after.state.state, ...(after.state.state === 'Closed' ? { closedBy: after.state.by } : {}),
      ...(after.state.state === 'Open' && after.state.everyAddress !== undefined ? { openTo: everyAddressWords(after.state.everyAddress) } : {}),
      tokens: after.tokens, subjects: after.subjects, networks,
    }));
    return;
  }
  const parts = [
    did.added.length > 0 ? `grants ${listed(did.added)}` : '',
    did.updated.length > 0 ? `describes ${listed(did.updated)} anew` : '',
    did.removed.length > 0 ? `no longer grants ${listed(did.removed)}` : '',
    did.unchanged.length > 0 ? `already granted ${listed(did.unchanged)}` : '',
  ].filter((p) => p !== '');
  const now = describeState(after.state, after.tokens, after.subjects, after.networks);
  // What the store now says; svc-auth enforces it once it has loaded it (reportInForce says when).
  ctx.io.out(`${scopeLabel(scope)} ${parts.join('; ')}; ${written.length > 0 ? 'the store now says' : 'still'} ${now} (${where})\n`);
}

export async function addNetwork(ctx: CommandContext, options: AddNetworkOptions): Promise<number> {
  const scope = scopeFromFlags(options, ctx);
  const given = await networksGiven(ctx, options);
  const target = await openForWrite(ctx, options);
  const { store } = target;
  let did: Plan | undefined;
  let existed = true;
  const result = await store.update(scope, noticingNew(addMutation(scope, given, options.replace === true, store.namespace, (p) => (did = p)), (e) => (existed = e)));
  report(ctx, options, scope, store.where, result.written, did!, result.objects);
  if (!existed) await reportNewScope(ctx, store, scope, `${followUp(ctx, 'remove-network')} ${scopeArgs(scope)} ${given.map((n) => `--cidr ${n.cidr}`).join(' ')}`);
  // Closing an open scope, or (--replace) taking networks away, takes access away.
  await reportInForce(ctx, target, writtenObjects(result), did!.removed.length > 0 || networkCount(result.objects) === did!.added.length);
  return 0;
}

export async function removeNetwork(ctx: CommandContext, options: NetworkOptions): Promise<number> {
  const scope = scopeFromFlags(options, ctx);
  const cidrs = options.cidr ?? [];
  if (cidrs.length === 0) throw usageError(`${ctx.commandPath}: give --cidr CIDR (repeat it for more)`);
  const problems: string[] = [];
  for (const c of cidrs) {
    const parsed = parseNetwork(c.trim());
    if (!parsed.ok) problems.push(`--cidr: ${parsed.error}`);
  }
  if (problems.length > 0) throw usageError(`${problemLine(problems)} (nothing was changed)`);
  const wanted = [...new Set(cidrs.map((c) => c.trim()))];
  const target = await openForWrite(ctx, options);
  const { store } = target;
  const hint = `${followUp(ctx, 'show')} ${scopeArgs(scope)}`;
  const result = await updateExisting(ctx, store, () => store.update(scope, removeMutation(scope, wanted, hint)));
  report(ctx, options, scope, store.where, result.written, { added: [], updated: [], removed: wanted, unchanged: [] }, result.objects);
  await reportInForce(ctx, target, writtenObjects(result), true);
  return 0;
}
