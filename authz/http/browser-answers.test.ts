import { describe, expect, it } from '@jest/globals';
import { boundedLanding } from './browser-answers.js';

// The landing a sign-in or "no access" answer names stays short enough for nginx's 4 KiB of answer headers.
describe('boundedLanding', () => {
  const ORIGIN = 'https://data.example.org';

  it('keeps a landing of ordinary length exactly as asked', () => {
    const landing = `${ORIGIN}/data/2026/x.bufr4?a=1&b=2`;
    expect(decodeURIComponent(boundedLanding(ORIGIN, landing))).toBe(landing);
  });

  it('drops the query of a landing too long to name, then the path, never exceeding 2,048 characters', () => {
    const longQuery = `${ORIGIN}/data/x.bufr4?${'q'.repeat(8000)}`;
    expect(decodeURIComponent(boundedLanding(ORIGIN, longQuery))).toBe(`${ORIGIN}/data/x.bufr4`);
    const longPath = `${ORIGIN}/data/${'p'.repeat(8000)}`;
    expect(decodeURIComponent(boundedLanding(ORIGIN, longPath))).toBe(`${ORIGIN}/`);
    for (const n of [1000, 2000, 2040, 2100, 3582, 8192]) {
      expect(boundedLanding(ORIGIN, `${ORIGIN}/d?${'é'.repeat(n)}`).length).toBeLessThanOrEqual(2048);
    }
  });
});
