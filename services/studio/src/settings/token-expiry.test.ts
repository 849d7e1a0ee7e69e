import { describe, expect, it } from 'vitest';
import { customDateBounds, expiryDate, expiryDays } from './token-expiry';

const now = new Date(2026, 10, 25, 14, 30); // 25 Nov 2026, 14:30 local

describe('expiryDays', () => {
  it('sends the preset days', () => {
    expect(expiryDays('7', '', now)).toEqual({ ok: true, expiresInDays: 7 });
    expect(expiryDays('365', '', now)).toEqual({ ok: true, expiresInDays: 365 });
  });
  it('omits expiresInDays for no expiry', () => {
    expect(expiryDays('none', '', now)).toEqual({ ok: true, expiresInDays: undefined });
  });
  it('counts whole days to a custom date', () => {
    expect(expiryDays('custom', '2026-11-26', now)).toEqual({ ok: true, expiresInDays: 1 });
    expect(expiryDays('custom', '2026-12-25', now)).toEqual({ ok: true, expiresInDays: 30 });
    expect(expiryDays('custom', '2027-11-25', now)).toEqual({ ok: true, expiresInDays: 365 });
  });
  it('refuses today, the past and more than 365 days', () => {
    expect(expiryDays('custom', '2026-11-25', now)).toMatchObject({ ok: false, message: expect.stringMatching(/after today/) });
    expect(expiryDays('custom', '2026-01-01', now)).toMatchObject({ ok: false });
    expect(expiryDays('custom', '2027-11-26', now)).toMatchObject({ ok: false, message: expect.stringMatching(/at most 365 days.*2027-11-25/) });
  });
  it('asks for a date when there is none', () => {
    expect(expiryDays('custom', '', now)).toMatchObject({ ok: false, message: expect.stringMatching(/Pick the date/) });
    expect(expiryDays('custom', '2026-02-31', now)).toMatchObject({ ok: false });
  });
});

describe('customDateBounds and expiryDate', () => {
  it('spans tomorrow to 365 days ahead', () => {
    expect(customDateBounds(now)).toEqual({ min: '2026-11-26', max: '2027-11-25' });
  });
  it('adds the days to now, or none', () => {
    expect(expiryDate(undefined, now)).toBeNull();
    expect(expiryDate(30, now)!.getTime() - now.getTime()).toBe(30 * 24 * 3600_000);
  });
});
