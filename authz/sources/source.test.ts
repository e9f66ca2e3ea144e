import { describe, expect, it } from '@jest/globals';
import { compileSnapshot, hashToken, newProtectedScope, tokenIdOf, type ProtectedScope } from '../../core/index.js';
import { buildIndexInSlices } from './source.js';

function snapshot(scopes: number) {
  const objects: ProtectedScope[] = [];
  for (let i = 0; i < scopes; i++) {
    const hash = hashToken(`token-number-${i}-of-the-test`);
    objects.push(newProtectedScope({ kind: 'topic', value: `a.b.c${i}` }, `s${i}`, undefined, [{ id: tokenIdOf(hash), hash, createdAt: '2026-11-01T00:00:00Z' }]));
  }
  return compileSnapshot(objects);
}

describe('buildIndexInSlices', () => {
  it('builds the same index as the lines describe, yielding to the event loop between slices', async () => {
    const s = snapshot(3000);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 0);
    const built = await buildIndexInSlices(s.lines, s.generation, { sliceMs: 0.5, maxLines: 100 });
    clearInterval(ticker);
    expect(built.ok && built.value.scopeCount).toBe(3000);
    expect(built.ok && built.value.tokenCount).toBe(3000);
    expect(built.ok && built.value.generation).toBe(s.generation);
    expect(ticks).toBeGreaterThan(0);
  });

  it('refuses the whole snapshot for one bad line, naming it', async () => {
    const s = snapshot(10);
    const lines = [...s.lines];
    lines[6] = lines[6]!.replace('sha256:', 'sha1:');
    const built = await buildIndexInSlices(lines, s.generation);
    expect(built.ok).toBe(false);
    expect(!built.ok && built.error.line).toBe(7);
  });

  it('stops when cancelled', async () => {
    const s = snapshot(500);
    const built = await buildIndexInSlices(s.lines, s.generation, { maxLines: 16, cancelled: () => true });
    expect(!built.ok && built.error.message).toBe('cancelled');
  });
});
