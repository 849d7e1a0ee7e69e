import { describe, expect, it } from 'vitest';
import { relativeTime } from './relative-time';
import { filterWorkflows } from './workflow-filter';

const flows = [
  { name: 'Narrated clip', address: 'acme/narrated-clip' },
  { name: 'Thumbnail maker', address: null },
  { name: 'OCR receipts', address: 'acme/receipts' },
];

describe('filterWorkflows', () => {
  it('keeps everything for an empty query', () => {
    expect(filterWorkflows(flows, '  ')).toEqual(flows);
  });
  it('matches name or address, case-insensitively', () => {
    expect(filterWorkflows(flows, 'THUMB').map((f) => f.name)).toEqual(['Thumbnail maker']);
    expect(filterWorkflows(flows, 'acme/').map((f) => f.name)).toEqual(['Narrated clip', 'OCR receipts']);
  });
  it('needs every word', () => {
    expect(filterWorkflows(flows, 'acme clip').map((f) => f.name)).toEqual(['Narrated clip']);
    expect(filterWorkflows(flows, 'acme thumbnail')).toEqual([]);
  });
  it('does not match "null" on unpublished workflows', () => {
    expect(filterWorkflows(flows, 'null')).toEqual([]);
  });
});

describe('relativeTime', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  it('says just now, minutes, hours and days, past and future', () => {
    expect(relativeTime('2026-11-25T11:59:50Z', now)).toBe('just now');
    expect(relativeTime('2026-11-25T11:55:00Z', now)).toMatch(/5 minutes ago/);
    expect(relativeTime('2026-11-25T09:00:00Z', now)).toMatch(/3 hours ago/);
    expect(relativeTime('2026-11-28T12:00:00Z', now)).toMatch(/in 3 days/);
    expect(relativeTime('not a date', now)).toBe('—');
  });
});
