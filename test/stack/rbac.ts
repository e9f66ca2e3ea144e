// The RBAC matrix of the chart's components: each row a question to the real authorizer ("may this ServiceAccount do
// this verb on this resource there?"), asked twice — `kubectl auth can-i --as=system:serviceaccount:...` and a
// SubjectAccessReview through the API — with the answer the chart should give.
import * as k8s from '@kubernetes/client-node';
import { kubectlBinary } from './kubectl.js';
import { runCommand } from '../support/process.js';

export type Subject = 'svc-operator' | 'svc-auth' | 'svc-management';
/** own: the release namespace; other: another namespace; all: every namespace at once; cluster: a cluster-scoped resource. */
export type Where = 'own' | 'other' | 'all' | 'cluster';

export interface AccessRow {
  readonly subject: Subject;
  readonly verb: string;
  /** kubectl's form: `configmaps`, `protectedscopes.auth.svc.io`, `leases.coordination.k8s.io`. */
  readonly resource: string;
  readonly subresource?: string;
  readonly name?: string;
  readonly where: Where;
  readonly expected: boolean;
}

export interface AccessResult {
  readonly row: AccessRow;
  readonly kubectl: boolean;
  readonly sar: boolean;
}

export const serviceAccountUser = (namespace: string, name: string): string => `system:serviceaccount:${namespace}:${name}`;
export const serviceAccountGroups = (namespace: string): string[] => ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'];

function split(resource: string): { group: string; resource: string } {
  const dot = resource.indexOf('.');
  return dot < 0 ? { group: '', resource } : { group: resource.slice(dot + 1), resource: resource.slice(0, dot) };
}

function namespaceOf(row: AccessRow, own: string, other: string): string | undefined {
  return row.where === 'own' ? own : row.where === 'other' ? other : undefined;
}

/** `kubectl auth can-i` as the row's ServiceAccount (impersonated by the admin kubeconfig). */
export function kubectlCanI(kubeconfig: string, row: AccessRow, own: string, other: string): Promise<boolean> {
  const args = ['auth', 'can-i', row.verb, row.name ? `${row.resource}/${row.name}` : row.resource, `--as=${serviceAccountUser(own, row.subject)}`];
  if (row.subresource) args.push(`--subresource=${row.subresource}`);
  const ns = namespaceOf(row, own, other);
  if (ns) args.push('-n', ns);
  else if (row.where === 'all') args.push('--all-namespaces');
  return runCommand(kubectlBinary(), args, { env: { ...process.env, KUBECONFIG: kubeconfig } }).then(({ code, stdout, stderr }) => {
    const out = `${stdout}${stderr}`;
    // kubectl prints the answer last on stdout; warnings go to stderr.
    const answer = stdout.trim().split('\n').at(-1)?.trim();
    if (code === 0 && answer === 'yes') return true;
    if (code === 1 && answer === 'no') return false;
    throw new Error(`kubectl ${args.join(' ')} exited ${code}: ${out.trim()}`);
  });
}

/** The same question as a SubjectAccessReview (user and the groups a ServiceAccount token carries). */
export async function subjectAccessReview(kc: k8s.KubeConfig, row: AccessRow, own: string, other: string): Promise<boolean> {
  const { group, resource } = split(row.resource);
  const ns = namespaceOf(row, own, other);
  const review = await kc.makeApiClient(k8s.AuthorizationV1Api).createSubjectAccessReview({
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: serviceAccountUser(own, row.subject),
        groups: serviceAccountGroups(own),
        resourceAttributes: {
          verb: row.verb,
          group,
          resource,
          ...(row.subresource ? { subresource: row.subresource } : {}),
          ...(row.name ? { name: row.name } : {}),
          ...(ns ? { namespace: ns } : {}),
        },
      },
    },
  });
  return review.status?.allowed === true;
}

/** Asks every row both ways, a few at a time. */
export async function checkMatrix(kubeconfig: string, kc: k8s.KubeConfig, rows: readonly AccessRow[], own: string, other: string): Promise<AccessResult[]> {
  const results: AccessResult[] = new Array(rows.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < rows.length; i = next++) {
      const row = rows[i]!;
      const [kubectl, sar] = await Promise.all([kubectlCanI(kubeconfig, row, own, other), subjectAccessReview(kc, row, own, other)]);
      results[i] = { row, kubectl, sar };
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return results;
}

function resourceLabel(row: AccessRow): string {
  return `${row.resource}${row.subresource ? `/${row.subresource}` : ''}${row.name ? ` (name ${row.name})` : ''}`;
}

const WHERE: Record<Where, string> = { own: 'own namespace', other: 'other namespace', all: 'all namespaces', cluster: 'cluster-scoped' };
const yesNo = (b: boolean) => (b ? 'yes' : 'no');

/** The matrix as a Markdown table: expected vs what kubectl and the SubjectAccessReview said. */
export function formatMatrix(results: readonly AccessResult[]): string {
  const lines = [
    '| subject | verb | resource | where | expected | kubectl auth can-i | SubjectAccessReview |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const { row, kubectl, sar } of results) {
    const mark = (b: boolean) => `${yesNo(b)}${b === row.expected ? '' : ' ✗'}`;
    lines.push(`| ${row.subject} | ${row.verb} | ${resourceLabel(row)} | ${WHERE[row.where]} | ${yesNo(row.expected)} | ${mark(kubectl)} | ${mark(sar)} |`);
  }
  return lines.join('\n');
}
