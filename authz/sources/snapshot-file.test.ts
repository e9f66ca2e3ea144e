import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_GROUP_VERSION, compileSnapshot, generationOf, hashToken, serializeSnapshot, SnapshotFileVerifier, tokenIdOf, type ProtectedScope } from '../../core/index.js';
import { SnapshotFileSource } from './snapshot-file.js';
import type { LoadedSnapshot, SourceFailure } from './source.js';
import { poll as until } from '../../test/support/wait.js';

// The source's own path: the file read as bytes and verified a chunk at a time between turns of the event
// loop, then built in slices. reload.test.ts covers it through the server (kubelet swaps, metrics, answers).

function snapshotText(scopes: number, salt = ''): string {
  const objects: ProtectedScope[] = [];
  for (let i = 0; i < scopes; i++) {
    const tokens = [0, 1, 2].map((j) => {
      const hash = hashToken(`snapshot-file-test-${salt}-${i}-${j}`);
      return { id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z' };
    });
    objects.push({ apiVersion: 'auth.svc.io/v1alpha1', kind: 'ProtectedScope', metadata: { name: `s${i}` }, spec: { metadataId: `urn:wmo:md:centre-${i}:surface-weather-observations`, tokens } } as unknown as ProtectedScope);
  }
  return serializeSnapshot(compileSnapshot(objects));
}

const dirs: string[] = [];
const sources: SnapshotFileSource[] = [];
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.stop()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function start(text: string | Buffer, sliceMs?: number) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-auth-snapshot-file-'));
  dirs.push(dir);
  const file = join(dir, 'snapshot');
  writeFileSync(file, text);
  const loaded: LoadedSnapshot[] = [];
  const failed: SourceFailure[] = [];
  const source = new SnapshotFileSource(file, { debounceMs: 10, rescanMs: 60_000, ...(sliceMs === undefined ? {} : { sliceMs }) });
  sources.push(source);
  await source.start({ loaded: (s) => loaded.push(s), failed: (f) => failed.push(f) });
  return { file, loaded, failed };
}

describe('SnapshotFileSource', () => {
  const good = snapshotText(3000); // ~0.8 MB, many chunks

  it('loads a large file verified in chunks between turns of the event loop', async () => {
    const { loaded, failed } = await start(good, 0.2);
    expect(failed).toEqual([]);
    expect(loaded).toHaveLength(1);
    expect(loaded[0]!.index.scopeCount).toBe(3000);
    expect(loaded[0]!.index.tokenCount).toBe(9000);
    expect(loaded[0]!.index.generation).toBe(JSON.parse(good.split('\n')[0]!).generation);
  });

  it('yields while verifying: with a zero budget, a turn of the event loop between every two chunks fed to the verifier', async () => {
    const corrupt = Buffer.from(good);
    corrupt[corrupt.length - 10] = corrupt[corrupt.length - 10]! ^ 0x01; // a hex digit of the last token hash: refused by the generation, never built
    let ticks = 0;
    let ticking = true;
    const tick = () => {
      ticks++;
      if (ticking) setImmediate(tick);
    };
    const update = SnapshotFileVerifier.prototype.update;
    let calls = 0;
    let afterATurn = 0;
    let ticksBefore = -1;
    const spy = jest.spyOn(SnapshotFileVerifier.prototype, 'update').mockImplementation(function (this: SnapshotFileVerifier, chunk: Uint8Array) {
      calls++;
      if (ticks > ticksBefore) afterATurn++;
      const r = update.call(this, chunk);
      ticksBefore = ticks;
      return r;
    });
    try {
      setImmediate(tick);
      const { loaded, failed } = await start(corrupt, 0);
      expect(loaded).toEqual([]);
      expect(failed[0]!.problems).toEqual([{ file: 'snapshot', field: 'header', message: 'the content does not match the header generation (corrupt or half-written)' }]);
    } finally {
      ticking = false;
      spy.mockRestore();
    }
    expect(corrupt.length).toBeGreaterThan(3 * 256 * 1024); // several chunks of the default size
    expect(calls).toBeGreaterThanOrEqual(Math.floor(corrupt.length / (256 * 1024)));
    expect(afterATurn).toBe(calls);
  });

  it.each([
    ['truncated', (b: Buffer) => b.subarray(0, b.length - 100), { field: 'header', message: 'the snapshot file does not end with a newline (truncated?)' }],
    ['cut after a whole line', (b: Buffer) => b.subarray(0, b.lastIndexOf(0x0a, b.length - 2) + 1), { field: 'header', message: 'the header announces 3000 scopes but the file has 2999 (truncated?)' }],
    ['not UTF-8 in scope line 1234', (b: Buffer) => {
      const c = Buffer.from(b);
      let at = 0;
      for (let n = 0; n < 1234; n++) at = c.indexOf(0x0a, at) + 1; // the start of file line 1235 (the header is line 1)
      c[c.indexOf('centre', at)] = 0xff;
      return c;
    }, { field: 'line 1235', message: 'not valid UTF-8' }],
    ['a bad header', (b: Buffer) => Buffer.concat([Buffer.from('{"kind":"Snapshot"}'), b.subarray(b.indexOf(0x0a))]), { field: 'line 1', message: 'not a auth.svc.io/v1alpha1 Snapshot header' }],
  ] as const)('refuses the whole file, keeping the snapshot in service: %s', async (_what, mangle, problem) => {
    const { file, loaded, failed } = await start(good, 0.5);
    writeFileSync(file, mangle(readFileSync(file)));
    await until(() => failed.length === 1);
    expect(loaded).toHaveLength(1);
    expect(failed[0]!.problems).toEqual([{ file: 'snapshot', ...problem }]);
  });

  it('loads lines with multi-byte characters wherever the chunks cut them', async () => {
    // Scope values are ASCII, but a line may carry other fields: three-byte characters along every line
    // make the default 256 KiB chunk boundaries fall inside characters (checked below).
    const [, ...plain] = good.trimEnd().split('\n');
    const lines = plain.map((l) => `${l.slice(0, -1)},"note":"${'✓'.repeat(300)}"}`);
    const header = { apiVersion: API_GROUP_VERSION, kind: 'Snapshot', generation: generationOf(lines), scopes: 3000, tokens: 9000 };
    const bytes = Buffer.from(`${JSON.stringify(header)}\n${lines.join('\n')}\n`);
    const cutInside = (at: number) => at < bytes.length && (bytes[at]! & 0xc0) === 0x80;
    expect(Array.from({ length: 12 }, (_, k) => cutInside((k + 1) * 256 * 1024)).filter(Boolean).length).toBeGreaterThan(2);
    const { loaded, failed } = await start(bytes);
    expect(failed).toEqual([]);
    expect(loaded[0]!.index.tokenCount).toBe(9000);
  });

  it('a file that verifies but holds a bad scope line is refused naming its line, after the generation check', async () => {
    const lines = ['{"kind":"topic","value":"a","tokens":[]}'];
    const { createHash } = await import('node:crypto');
    const generation = createHash('sha256').update(`${lines[0]}\n`).digest('hex');
    const { failed, loaded } = await start(`${JSON.stringify({ apiVersion: 'auth.svc.io/v1alpha1', kind: 'Snapshot', generation, scopes: 1, tokens: 0 })}\n${lines[0]}\n`);
    expect(loaded).toEqual([]);
    expect(failed[0]!.problems).toEqual([{ file: 'snapshot', field: 'line 2', message: expect.stringContaining('at least one token') }]);
  });

  it.each([
    ['far more tokens than the file could hold', 1e12],
    ['more tokens than it holds', 9001],
    ['fewer tokens than it holds', 8999],
  ])('refuses a header that announces %s (the count sizes the table only up to the file size)', async (_what, tokens) => {
    const [head, ...rest] = good.split('\n');
    const { failed, loaded } = await start(`${JSON.stringify({ ...JSON.parse(head!), tokens })}\n${rest.join('\n')}`);
    expect(loaded).toEqual([]);
    expect(failed[0]!.problems).toEqual([{ file: 'snapshot', field: 'header.tokens', message: `the header announces 3000 scopes and ${tokens} tokens, the file has 3000 and 9000` }]);
  });

  it('a corrupt file with a bad scope line is refused for the corruption: the index built along the way is dropped', async () => {
    const [head, ...rest] = good.split('\n');
    rest[5] = rest[5]!.replace('sha256:', 'sha1:');
    const { loaded, failed } = await start(`${head}\n${rest.join('\n')}`, 0.5);
    expect(loaded).toEqual([]);
    expect(failed[0]!.problems).toEqual([{ file: 'snapshot', field: 'header', message: 'the content does not match the header generation (corrupt or half-written)' }]);
  });

  it('reads a larger file after a smaller one and a smaller one after that (the read buffer is kept and grows)', async () => {
    const small = snapshotText(10, 'small');
    const { file, loaded, failed } = await start(small);
    writeFileSync(file, good);
    await until(() => loaded.length === 2);
    writeFileSync(file, snapshotText(20, 'smaller'));
    await until(() => loaded.length === 3);
    expect(failed).toEqual([]);
    expect(loaded.map((l) => l.index.scopeCount)).toEqual([10, 3000, 20]);
  });

  it('loads the next good file after a refused one', async () => {
    const { file, loaded, failed } = await start(good);
    writeFileSync(file, good.slice(0, 1000));
    await until(() => failed.length === 1);
    const next = snapshotText(10, 'next');
    writeFileSync(file, next);
    await until(() => loaded.length === 2);
    expect(loaded[1]!.index.scopeCount).toBe(10);
  });
});
