// YAML and JSON manifests both ways: documents parsed, and serialized with stable formatting.
import { dump, loadAll } from 'js-yaml';
import { err, ok, type Result } from './result.js';

/** Parses one or several YAML (or JSON) documents; empty documents (a stray `---`) are dropped. */
export function parseManifests(text: string): Result<unknown[]> {
  try {
    return ok(loadAll(text).filter((d) => d !== null && d !== undefined));
  } catch (e) {
    return err(`not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** Serializes documents as multi-document YAML with stable formatting (no line folding, no aliases). */
export function dumpManifests(docs: readonly unknown[]): string {
  return docs.map((d) => dump(d, { lineWidth: -1, noRefs: true, sortKeys: false })).join('---\n');
}
