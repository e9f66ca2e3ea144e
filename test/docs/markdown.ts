// What the documentation tests read out of the repository's text: its Markdown files, their links and headings,
// and the fenced code blocks of any text. Found by walking the files git tracks, never from a list kept by hand.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../cli/harness.js';

export { repoRoot };

/** The repository's files as git tracks them (plus new ones not ignored), relative to the root. */
export function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: repoRoot, encoding: 'utf8' });
  return out.split('\0').filter((f) => f !== '');
}

export const read = (file: string): string => readFileSync(join(repoRoot, file), 'utf8');

/** The fenced code blocks of a Markdown text: the info string and the lines, with the line number of the fence. */
export interface Fence {
  readonly info: string;
  readonly body: string;
  readonly line: number;
}

export function fences(text: string): Fence[] {
  const out: Fence[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^\s*(```+|~~~+)\s*(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !lines[j]!.trim().startsWith(open[1]!); j++) body.push(lines[j]!);
    out.push({ info: open[2]!.trim(), body: body.join('\n'), line: i + 1 });
    i = j;
  }
  return out;
}

/** The lines of a Markdown text with those of fenced code blocks (fences included) blanked. */
function outsideFences(text: string): string[] {
  let inFence: string | undefined;
  return text.split('\n').map((l) => {
    const fence = /^\s*(```+|~~~+)/.exec(l);
    if (fence && (inFence === undefined || l.trim().startsWith(inFence))) {
      inFence = inFence === undefined ? fence[1] : undefined;
      return '';
    }
    return inFence === undefined ? l : '';
  });
}

/** The text outside fenced code blocks and inline code spans (where a link is a link), line for line. */
export function prose(text: string): string {
  return outsideFences(text).map((l) => l.replace(/`[^`\n]*`/g, '``')).join('\n');
}

export interface Link {
  readonly target: string;
  readonly line: number;
}

/** Inline links and images `[text](target)` and reference definitions `[x]: target`, outside code. */
export function links(text: string): Link[] {
  const out: Link[] = [];
  const lines = prose(text).split('\n');
  let definitions = true; // a reference definition cannot interrupt a paragraph: it follows a blank line (or another)
  lines.forEach((l, i) => {
    for (const m of l.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ target: m[1]!, line: i + 1 });
    const ref = definitions ? /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)/.exec(l) : null;
    if (ref) out.push({ target: ref[1]!, line: i + 1 });
    definitions = l.trim() === '' || ref !== null;
  });
  return out;
}

/** GitHub's anchors for the headings of a Markdown text (lower case, punctuation dropped, spaces to "-", repeats numbered). */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const l of outsideFences(text)) {
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(l);
    if (!h) continue;
    const base = h[1]!.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').trim().replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}
