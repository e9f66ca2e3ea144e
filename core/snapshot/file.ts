/**
 * The single-file form of a snapshot (`svc-auth --snapshot-file`): a header line naming the generation and the
 * counts, then the scope lines, each ending with a newline. One verifier reads it, from bytes fed in chunks
 * (SnapshotFileVerifier); parseSnapshotFile is that verifier fed a whole text at once.
 */
import { createHash } from 'node:crypto';
import { API_GROUP_VERSION } from '../protected-scope.js';
import { err, ok, type Result } from '../result.js';
import type { Snapshot } from './lines.js';

interface SnapshotHeader {
  readonly apiVersion: typeof API_GROUP_VERSION;
  readonly kind: 'Snapshot';
  readonly generation: string;
  readonly scopes: number;
  readonly tokens: number;
}

export function snapshotHeader(s: Snapshot): SnapshotHeader {
  return { apiVersion: API_GROUP_VERSION, kind: 'Snapshot', generation: s.generation, scopes: s.scopeCount, tokens: s.tokenCount };
}

/** The single-file form (`svc-auth --snapshot-file`): a header line, then the scope lines. */
export function serializeSnapshot(s: Snapshot): string {
  return [JSON.stringify(snapshotHeader(s)), ...s.lines].join('\n') + '\n';
}

/** Parses and checks the header line of the single-file form; errors name `line 1`. */
export function parseSnapshotHeader(line: string): Result<SnapshotHeader> {
  let header: SnapshotHeader;
  try {
    header = JSON.parse(line) as SnapshotHeader;
  } catch {
    return err('line 1: the snapshot header is not JSON');
  }
  if (header?.kind !== 'Snapshot' || header.apiVersion !== API_GROUP_VERSION || typeof header.generation !== 'string') {
    return err(`line 1: not a ${API_GROUP_VERSION} Snapshot header`);
  }
  return ok(header);
}

/** A verified single-file snapshot: its header and its scope lines (each line still to be parsed). */
type SnapshotFile = { header: SnapshotHeader; lines: string[] };

/**
 * Parses and verifies the single-file form: header, line count and generation must agree, or the whole file is
 * refused (a half-written file never loads). SnapshotFileVerifier fed the text's bytes in one chunk.
 */
export function parseSnapshotFile(text: string): Result<SnapshotFile> {
  return new SnapshotFileVerifier().update(new TextEncoder().encode(text)).finish();
}

const NEWLINE = 0x0a;

/**
 * The single-file form verified from its bytes, fed in chunks of any size by a caller that may yield to the
 * event loop between them, so a large file is never verified in one synchronous block. The generation is the
 * SHA-256 of every scope line plus its newline, i.e. of exactly the bytes after the header's newline, so it is
 * hashed over the bytes as they come; complete lines are decoded as they come too (a chunk's lines at once, a
 * line cut by a chunk boundary once its end arrives, so a multi-byte character may be split anywhere).
 * `finish()` refuses, in this order: an empty file, one that does not end with a newline (cut short, maybe only
 * by that newline, but a writer that stopped there may not have finished either), a bad header, a line count
 * other than the header's, bytes that are not UTF-8 (`line N: not valid UTF-8`), and a generation that does not
 * match. Each line's validity and the header's token count are checked by whoever builds the decision index
 * from the lines (parsing 100,000 tokens twice stalled requests during reloads). The chunks are not retained: a
 * caller may reuse its buffer.
 */
export class SnapshotFileVerifier {
  private readonly hash = createHash('sha256');
  // fatal: refuse invalid UTF-8 rather than replace it; ignoreBOM: keep a U+FEFF as Buffer#toString does.
  private readonly decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  /** The bytes of the line under way (after the last newline seen), copied. */
  private partial: Uint8Array[] = [];
  private bytes = 0;
  private lastByte = -1;
  /** Complete lines seen, the header included. */
  private lineCount = 0;
  private parsedHeader: Result<SnapshotHeader> | undefined;
  private readonly lines: string[] = [];
  /** The first (1-based, header = 1) line that is not valid UTF-8; lines are no longer decoded after it. */
  private badLine = 0;
  private done = false;

  /** Feeds the next bytes of the file. */
  update(chunk: Uint8Array): this {
    if (this.done) throw new Error('SnapshotFileVerifier: update() after finish()');
    if (chunk.length === 0) return this;
    this.bytes += chunk.length;
    this.lastByte = chunk[chunk.length - 1]!;
    let body = chunk;
    if (this.parsedHeader === undefined) {
      const nl = chunk.indexOf(NEWLINE);
      if (nl < 0) {
        this.partial.push(new Uint8Array(chunk)); // a copy (Buffer#slice would not be one)
        return this;
      }
      const line = this.decode(this.completeLine(chunk.subarray(0, nl)));
      this.lineCount = 1;
      this.parsedHeader = line === undefined ? err('line 1: the snapshot header is not valid UTF-8') : parseSnapshotHeader(line);
      body = chunk.subarray(nl + 1);
    }
    // The generation covers exactly the bytes after the header's newline.
    this.hash.update(body);
    this.addLines(body);
    return this;
  }

  /**
   * The scope lines decoded since the last call, which the verifier then forgets (finish() returns only
   * the lines never taken). They are unverified until finish() says the whole file is good: a caller may
   * start building from them, but must not use what it built before that.
   */
  takeLines(): string[] {
    return this.lines.splice(0);
  }

  /** The header, once its line has been fed and parsed; unverified until finish() (the generation does not cover it). */
  get header(): SnapshotHeader | undefined {
    return this.parsedHeader?.ok ? this.parsedHeader.value : undefined;
  }

  /** The verdict, once every byte has been fed; the verifier cannot be fed after it. */
  finish(): Result<SnapshotFile> {
    this.done = true;
    if (this.bytes === 0) return err('empty snapshot file');
    if (this.lastByte !== NEWLINE) return err('the snapshot file does not end with a newline (truncated?)');
    const parsed = this.parsedHeader!; // the file ends with a newline, so its first line is complete
    if (!parsed.ok) return parsed;
    const header = parsed.value;
    const scopes = this.lineCount - 1;
    if (scopes !== header.scopes) return err(`the header announces ${header.scopes} scopes but the file has ${scopes} (truncated?)`);
    if (this.badLine > 0) return err(`line ${this.badLine}: not valid UTF-8`);
    if (this.hash.digest('hex') !== header.generation) return err('the content does not match the header generation (corrupt or half-written)');
    return ok({ header, lines: this.lines });
  }

  /** Counts and decodes the complete scope lines in body bytes; keeps the unfinished last one for later. */
  private addLines(bytes: Uint8Array): void {
    const first = bytes.indexOf(NEWLINE);
    if (first < 0) {
      if (bytes.length > 0) this.partial.push(new Uint8Array(bytes));
      return;
    }
    const last = bytes.lastIndexOf(NEWLINE);
    // The end of the line that earlier chunks began (or a whole line).
    this.addLine(this.completeLine(bytes.subarray(0, first)));
    if (last > first) this.addRun(bytes.subarray(first + 1, last + 1));
    if (last + 1 < bytes.length) this.partial.push(new Uint8Array(bytes.subarray(last + 1)));
  }

  /**
   * Whole lines, each ending with its newline: one decode and one split. A newline byte never occurs inside a
   * multi-byte sequence, so a run of whole lines decodes on its own.
   */
  private addRun(run: Uint8Array): void {
    const text = this.badLine > 0 ? undefined : this.decode(run);
    if (text !== undefined) {
      const lines = text.split('\n');
      lines.pop();
      for (const line of lines) this.lines.push(line);
      this.lineCount += lines.length;
      return;
    }
    // Not UTF-8 somewhere (here, or an earlier line already): line by line, to count them and name the first bad one.
    let start = 0;
    for (let nl = run.indexOf(NEWLINE); nl >= 0; nl = run.indexOf(NEWLINE, start)) {
      this.addLine(run.subarray(start, nl));
      start = nl + 1;
    }
  }

  /** The unfinished line's bytes followed by `end`; the next line starts empty. */
  private completeLine(end: Uint8Array): Uint8Array {
    if (this.partial.length === 0) return end;
    const parts = [...this.partial, end];
    this.partial = [];
    const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.length;
    }
    return bytes;
  }

  private addLine(bytes: Uint8Array): void {
    this.lineCount++;
    if (this.badLine > 0) return; // refused anyway: only counting
    const line = this.decode(bytes);
    if (line === undefined) this.badLine = this.lineCount;
    else this.lines.push(line);
  }

  private decode(bytes: Uint8Array): string | undefined {
    try {
      return this.decoder.decode(bytes);
    } catch {
      return undefined;
    }
  }
}

/** A verifier for the single-file form's bytes (see SnapshotFileVerifier). */
export function snapshotFileVerifier(): SnapshotFileVerifier {
  return new SnapshotFileVerifier();
}
