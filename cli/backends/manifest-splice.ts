/**
 * Rewriting some documents of a hand-written manifest file and keeping the rest byte for byte: the file is split
 * at its `---` lines, an edited document is dumped again (after the comments and blank lines that led it), the
 * others keep their text. When the split does not reproduce the whole-file parse (directives, `...` markers, odd
 * layouts), the file is dumped whole; a JSON manifest (one object) is written as JSON.
 */
import { dumpManifests, parseManifests } from '../../core/index.js';
import { failure } from '../errors.js';

/** A manifest file as read. */
export interface ManifestText {
  readonly path: string;
  /** A JSON manifest: one object, written back as JSON. */
  readonly json: boolean;
  /** The text as read. */
  readonly text: string;
  /** Its documents as the whole-file parse gave them, in order. */
  readonly docs: readonly { readonly value: unknown }[];
}

interface Chunk {
  /** The raw text of this part of the file (a `---` line, comments, one document). */
  readonly text: string;
  /** Index into the file's docs of the document in this chunk, if any. */
  readonly doc?: number;
}

/** The file's new text with the documents `edits` names (by index) replaced; untouched ones keep their bytes where possible. */
export function renderFile(file: ManifestText, edits: ReadonlyMap<number, unknown>): string {
  if (file.json) {
    if (file.docs.length !== 1) throw failure(`${file.path}: a JSON manifest must hold one object`);
    return `${JSON.stringify(edits.get(0) ?? file.docs[0]!.value, null, 2)}\n`;
  }
  const chunks = splitChunks(file.text, file.docs.map((d) => d.value));
  if (!chunks) return dumpManifests(file.docs.map((d, i) => edits.get(i) ?? d.value));
  return chunks
    .map((chunk) => {
      const edited = chunk.doc === undefined ? undefined : edits.get(chunk.doc);
      if (!edited) return chunk.text.endsWith('\n') || chunk === chunks.at(-1) ? chunk.text : `${chunk.text}\n`;
      return leadingTrivia(chunk.text) + dumpManifests([edited]);
    })
    .join('');
}

/**
 * Splits a file at `---` lines so an edit can rewrite its own document and keep the others byte for byte.
 * Returns undefined when the split does not reproduce exactly what the whole-file parse gave (directives,
 * `...` markers, odd layouts): the file is then rewritten whole.
 */
function splitChunks(text: string, whole: readonly unknown[]): Chunk[] | undefined {
  const chunks: Chunk[] = [];
  let doc = 0;
  for (const part of partsOf(text)) {
    const parsed = parseManifests(part);
    if (!parsed.ok || parsed.value.length > 1) return undefined;
    if (parsed.value.length === 1) {
      if (JSON.stringify(parsed.value[0]) !== JSON.stringify(whole[doc])) return undefined;
      chunks.push({ text: part, doc: doc++ });
    } else {
      chunks.push({ text: part });
    }
  }
  return doc === whole.length ? chunks : undefined;
}

/** The text cut before each `---` line (but the first line), line endings kept. */
function partsOf(text: string): string[] {
  const parts: string[] = [];
  let current = '';
  for (const line of text.split(/(?<=\n)/)) {
    if (/^---(\s.*)?$/.test(line.replace(/\r?\n$/, '')) && current !== '') {
      parts.push(current);
      current = line;
    } else {
      current += line;
    }
  }
  if (current !== '') parts.push(current);
  return parts;
}

/** The `---` line, comments and blank lines before a document's first content line (kept when it is rewritten). */
function leadingTrivia(text: string): string {
  let out = '';
  for (const line of text.split(/(?<=\n)/)) {
    const bare = line.replace(/\r?\n$/, '');
    if (/^---\s*$/.test(bare) || /^\s*(#.*)?$/.test(bare)) out += line.endsWith('\n') ? line : `${line}\n`;
    else break;
  }
  return out;
}
