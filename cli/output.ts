// The CLI's output formats: json and yaml of plain values, kubectl-like tables, manifests without server fields.
import { dump } from 'js-yaml';
import { orderedSpec, type ProtectedScope, type ProtectedScopeSpec } from '../core/index.js';

function toJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

function toYaml(value: unknown): string {
  return dump(value, { lineWidth: -1, noRefs: true, sortKeys: false });
}

/** json or yaml of a plain value (text and table are rendered by each command). */
export function structured(format: 'json' | 'yaml', value: unknown): string {
  return format === 'json' ? toJson(value) : toYaml(value);
}

/** Columns padded to their widest cell, two spaces apart, like kubectl's tables; trailing spaces trimmed. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

/** RFC 3339 in UTC with whole seconds: how the CLI writes createdAt and expiresAt. */
export function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/** A ProtectedScope as a GitOps manifest: no status, no server-managed metadata. */
export function manifestOf(object: ProtectedScope): ProtectedScope {
  const { name, namespace, labels, annotations } = object.metadata;
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: {
      name,
      ...(namespace !== undefined ? { namespace } : {}),
      ...(labels !== undefined && Object.keys(labels).length > 0 ? { labels } : {}),
      ...(annotations !== undefined && Object.keys(annotations).length > 0 ? { annotations: withoutLastApplied(annotations) } : {}),
    },
    spec: canonicalSpec(object),
  };
}

/** The spec in core's one field order (orderedSpec): a manifest reads the same from either backend. */
export function canonicalSpec(object: ProtectedScope): ProtectedScopeSpec {
  return orderedSpec(object.spec);
}

function withoutLastApplied(annotations: Readonly<Record<string, string>>): Record<string, string> {
  const { 'kubectl.kubernetes.io/last-applied-configuration': _drop, ...rest } = annotations;
  return rest;
}
