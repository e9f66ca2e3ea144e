import { describe, expect, it } from '@jest/globals';
import { isRecord } from './is-record.js';

describe('isRecord', () => {
  it('is true for a mapping only', () => {
    expect([{}, { a: 1 }, Object.create(null)].map(isRecord)).toEqual([true, true, true]);
    expect([null, undefined, [], 'x', 1, true].map(isRecord)).toEqual([false, false, false, false, false, false]);
  });
});
