import { describe, expect, it } from 'vitest';
import { formatMs, formatUsd } from './format';

describe('formatUsd', () => {
  it.each([
    [0, '$0.00'],
    [0.5, '$0.50'],
    [10, '$10.00'],
    [9.99856, '$9.99856'],
    [0.000001, '$0.000001'],
    [0.0125, '$0.0125'],
    [1234.5, '$1,234.50'],
    [-0.25, '-$0.25'],
  ])('shows %s as %s, never rounding a balance up', (amount, text) => {
    expect(formatUsd(amount)).toBe(text);
  });
});

describe('formatMs', () => {
  it.each([
    [12.4, '12 ms'],
    [1500, '1.5 s'],
    [125_000, '2 min 5 s'],
  ])('shows %s ms as %s', (ms, text) => {
    expect(formatMs(ms)).toBe(text);
  });
});
