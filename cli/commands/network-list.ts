/**
 * The networks an add-network command is given: `--cidr` flags, and a list file (`--from-file`), such as the list of
 * WIS2 Global Service addresses the WMO Secretariat sends. The file's grammar, one network a line:
 *
 *     # Global Caches (lines and line ends after "#" are comments; blank lines are skipped)
 *     203.0.113.7/32      Global Cache, Offenbach
 *     2001:db8:7::/48     Global Broker       # a comment after a description
 *
 * A line is a network in canonical form, then optionally whitespace and its description: the rest of the line
 * before any "#", trimmed (so a description cannot hold "#"), at most 256 characters. Every bad line is named
 * (`FILE:3: "203.0.113.9/24" has host bits set: use 203.0.113.0/24`) and nothing is written.
 */
import { MAX_DESCRIPTION_LENGTH, parseNetwork, type NetworkRecord } from '../../core/index.js';

/** Networks read, each once (the first description given wins), or every problem found. */
export type NetworkInput = { readonly ok: true; readonly networks: readonly NetworkRecord[] } | { readonly ok: false; readonly problems: readonly string[] };

/** One entry as given: where it came from (`--cidr`, `FILE:3`), the network text and its description. */
interface Given {
  readonly at: string;
  readonly cidr: string;
  readonly description?: string;
}

/** The entries of a list file's text; a line without a network is a comment or blank. */
export function entriesOfFile(text: string, name: string): Given[] {
  const out: Given[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const hash = raw.indexOf('#');
    const line = (hash >= 0 ? raw.slice(0, hash) : raw).trim();
    if (line === '') return;
    const m = /^(\S+)(?:\s+(.*))?$/.exec(line)!;
    out.push({ at: `${name}:${i + 1}`, cidr: m[1]!, ...(m[2] !== undefined && m[2] !== '' ? { description: m[2] } : {}) });
  });
  return out;
}

/** `--cidr` values, each with the --description given (if any). */
export function entriesOfFlags(cidrs: readonly string[], description: string | undefined): Given[] {
  return cidrs.map((cidr) => ({ at: '--cidr', cidr: cidr.trim(), ...(description !== undefined ? { description } : {}) }));
}

/** Checks every entry (canonical network, description length); the first description of a network repeated wins. */
export function checkEntries(entries: readonly Given[]): NetworkInput {
  const problems: string[] = [];
  const byCidr = new Map<string, NetworkRecord>();
  for (const e of entries) {
    const parsed = parseNetwork(e.cidr);
    if (!parsed.ok) {
      problems.push(`${e.at}: ${parsed.error}`);
      continue;
    }
    if (e.description !== undefined && e.description.length > MAX_DESCRIPTION_LENGTH) {
      problems.push(`${e.at}: the description of ${parsed.value.cidr} is longer than ${MAX_DESCRIPTION_LENGTH} characters`);
      continue;
    }
    if (!byCidr.has(parsed.value.cidr)) byCidr.set(parsed.value.cidr, { cidr: parsed.value.cidr, ...(e.description !== undefined ? { description: e.description } : {}) });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, networks: [...byCidr.values()] };
}

/** Problems as one line: the first few, and how many more. */
export function problemLine(problems: readonly string[], shown = 5): string {
  const more = problems.length - shown;
  return `${problems.slice(0, shown).join('; ')}${more > 0 ? `; and ${more} more` : ''}`;
}
