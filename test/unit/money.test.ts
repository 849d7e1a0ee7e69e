import { ceilMicros, effectiveCapMicros, microsToUsd, parseUsdText, sumMicros, usdToMicrosFloor } from '../../services/engine';

describe('money in integer micro-USD', () => {
  it('converts caller USD down to whole micro-USD without binary error', () => {
    expect(usdToMicrosFloor(0.29)).toBe(290_000);
    expect(usdToMicrosFloor(0.5)).toBe(500_000);
    expect(usdToMicrosFloor(0.0000019)).toBe(1);
    expect(usdToMicrosFloor(1.23456789)).toBe(1_234_567);
  });

  it('rounds computed prices up so a charge never falls short', () => {
    expect(ceilMicros(0.1)).toBe(1);
    expect(ceilMicros(2)).toBe(2);
    expect(ceilMicros(1500 * 0.15)).toBe(225);
    expect(() => ceilMicros(-1)).toThrow(RangeError);
  });

  it('gives USD with at most six decimals', () => {
    expect(microsToUsd(1)).toBe(0.000001);
    expect(microsToUsd(290_000)).toBe(0.29);
    expect(microsToUsd(123_456_789)).toBe(123.456789);
  });

  it('applies the default cap and the per-run ceiling', () => {
    expect(effectiveCapMicros(undefined)).toBe(500_000);
    expect(effectiveCapMicros(0.2)).toBe(200_000);
    expect(effectiveCapMicros(1)).toBe(1_000_000);
    expect(effectiveCapMicros(25)).toBe(1_000_000);
  });

  it('lowers caps too large for micro-USD to the ceiling instead of throwing', () => {
    expect(effectiveCapMicros(1e10)).toBe(1_000_000);
    expect(effectiveCapMicros(Number.MAX_VALUE)).toBe(1_000_000);
  });

  it('refuses sums that would lose precision', () => {
    expect(sumMicros([1, 2, 3])).toBe(6);
    expect(() => sumMicros([Number.MAX_SAFE_INTEGER, 1])).toThrow(RangeError);
  });
});

describe('USD amounts written as text', () => {
  it.each([
    ['25', 25_000_000],
    ['0.5', 500_000],
    ['12.345678', 12_345_678],
    ['0.29', 290_000],
    ['1000000', 1_000_000_000_000],
    [' 7.10 ', 7_100_000],
  ])('reads %j exactly as %d micro-USD', (text, micros) => {
    expect(parseUsdText(text)).toBe(micros);
  });

  it.each(['', '-5', '+5', '1e3', '1,000', '$5', '0.1234567', '.5', '5.', 'NaN', '12 USD'])('refuses %j', (text) => {
    expect(() => parseUsdText(text)).toThrow(RangeError);
  });
});
