/**
 * `svc auth add-subject SCOPE (--user U | --group G)` and `remove-subject`: grants to identities of the
 * OpenID provider, kept in `spec.subjects` next to the tokens. A subject closes the scope as a token does.
 * Adding writes the scope's own object (created when the scope has none); removing edits every object that
 * lists the subject. Both go through the store's update, so a concurrent edit is never lost.
 */
import {
  describeState, MAX_SUBJECTS_PER_OBJECT, mergeSubjects, newProtectedScope, publicByFlag, scopeKey, scopeObjectName, stateOf, subjectKey, subjectsOf, closedByFlag, checkSubject,
  withSpec,
  type ProtectedScope, type Scope, type Subject, tokenHashesOf } from '../../core/index.js';
import type { Mutate } from '../backends/backend.js';
import { failure, usageError } from '../errors.js';
import { structured } from '../output.js';
import {
  followUp, networkCount, noticingNew, openForWrite, reportInForce, reportNewScope, requireScope, scopeArgs, scopeFromFlags, scopeJson, scopeLabel, updateExisting, writtenObjects,
  type CommandContext, type ScopeFlags, type WriteFlags,
} from './common.js';

interface SubjectOptions extends ScopeFlags, WriteFlags {
  readonly output: 'text' | 'json' | 'yaml';
  readonly user?: string;
  readonly group?: string;
}

function subjectFrom(ctx: CommandContext, options: SubjectOptions): Subject {
  if ((options.user === undefined) === (options.group === undefined)) {
    throw usageError(`${ctx.commandPath}: give exactly one of --user USER or --group GROUP`);
  }
  const checked = options.user !== undefined ? checkSubject('User', options.user) : checkSubject('Group', options.group);
  if (!checked.ok) throw usageError(`${ctx.commandPath}: ${options.user !== undefined ? '--user' : '--group'} ${JSON.stringify(options.user ?? options.group)}: ${checked.error}`);
  return checked.value;
}

function withSubjects(o: ProtectedScope, subjects: readonly Subject[]): ProtectedScope {
  return withSpec(o, { subjects: subjects.length > 0 ? subjects : undefined });
}

const listed = (o: ProtectedScope, s: Subject) => subjectsOf(o).some((x) => subjectKey(x) === subjectKey(s));

function addSubjectMutation(scope: Scope, subject: Subject, namespace: string | undefined): Mutate {
  const name = scopeObjectName(scope);
  return (current) => {
    // A subject closes the scope, which public contradicts (the CRD refuses the pair).
    if (current.some(publicByFlag)) throw usageError(`${scopeKey(scope)} is public (every method open): take that back first with public --off, then add the subject (nothing was changed)`);
    if (current.some((o) => listed(o, subject))) return [];
    const target = current.find((o) => o.metadata.name === name) ?? current[0] ?? newProtectedScope(scope, name, namespace, []);
    if (subjectsOf(target).length >= MAX_SUBJECTS_PER_OBJECT) {
      throw failure(`${target.metadata.name} already lists ${MAX_SUBJECTS_PER_OBJECT} subjects: grant a group instead of more users (nothing was changed)`);
    }
    return [withSubjects(target, [...subjectsOf(target), subject])];
  };
}

function removeSubjectMutation(scope: Scope, subject: Subject, hint: string): Mutate {
  return requireScope(scope, 'no subject', (current, attempt) => {
    const holders = current.filter((o) => listed(o, subject));
    // On a retry a concurrent removal may have done it already: that is the outcome asked for.
    if (holders.length === 0 && attempt === 0) {
      throw failure(`${subject.kind.toLowerCase()} ${subject.name} is not a subject of ${scopeKey(scope)}: list the subjects with ${hint} (nothing was changed)`);
    }
    return holders.map((o) => withSubjects(o, subjectsOf(o).filter((x) => subjectKey(x) !== subjectKey(subject))));
  });
}

async function edit(ctx: CommandContext, options: SubjectOptions, add: boolean): Promise<number> {
  const scope = scopeFromFlags(options, ctx);
  const subject = subjectFrom(ctx, options);
  const target = await openForWrite(ctx, options);
  const { store } = target;
  const hint = `${followUp(ctx, 'show')} ${scopeArgs(scope)}`;
  let existed = true;
  const result = await updateExisting(ctx, store, () =>
    store.update(scope, add ? noticingNew(addSubjectMutation(scope, subject, store.namespace), (e) => (existed = e)) : removeSubjectMutation(scope, subject, hint)),
  );
  const tokens = tokenHashesOf(result.objects).size;
  const subjects = mergeSubjects(result.objects.map(subjectsOf));
  const networks = networkCount(result.objects);
  const state = stateOf(scope, tokens, result.objects.some(closedByFlag), ctx.openPathsByDefault, subjects.length, false, ctx.prefixes, networks);
  const who = `${subject.kind.toLowerCase()} ${subject.name}`;
  if (options.output === 'text') {
    const did = add ? (result.written.length === 0 ? `already grants ${who}` : `grants ${who}`) : `no longer grants ${who}`;
    ctx.io.out(`${scopeLabel(scope)} ${did}; ${result.written.length > 0 ? 'the store now says' : 'still'} ${describeState(state, tokens, subjects.length, networks)} (${store.where})\n`);
  } else {
    ctx.io.out(structured(options.output, {
      scope: scopeJson(scope), store: store.where, written: result.written, subject, state: state.state,
      ...(state.state === 'Closed' ? { closedBy: state.by } : {}), tokens, subjects,
    }));
  }
  const flag = subject.kind === 'User' ? '--user' : '--group';
  if (!existed) await reportNewScope(ctx, store, scope, `${followUp(ctx, 'remove-subject')} ${scopeArgs(scope)} ${flag} ${subject.name}`);
  // Taking a subject back takes access away; a first subject closes an open scope.
  await reportInForce(ctx, target, writtenObjects(result), !add || (tokens === 0 && subjects.length === 1 && networks === 0));
  return 0;
}

export const addSubject = (ctx: CommandContext, options: SubjectOptions): Promise<number> => edit(ctx, options, true);
export const removeSubject = (ctx: CommandContext, options: SubjectOptions): Promise<number> => edit(ctx, options, false);
