import { parseRange } from '../../services/api/routes/byte-range';

describe('parseRange: a Range header against a representation of some length', () => {
  it.each([
    ['bytes=0-3', 10, { start: 0, end: 3 }],
    ['bytes=4-', 10, { start: 4, end: 9 }],
    ['bytes=-3', 10, { start: 7, end: 9 }],
    ['bytes=-30', 10, { start: 0, end: 9 }],
    ['bytes=8-100', 10, { start: 8, end: 9 }],
    ['bytes = 1 - 2', 10, { start: 1, end: 2 }],
  ])('reads %s of %d bytes as one range', (header, size, range) => {
    expect(parseRange(header, size)).toEqual({ kind: 'partial', range });
  });

  it.each([
    ['bytes=10-', 10],
    ['bytes=10-20', 10],
    ['bytes=-0', 10],
    ['bytes=0-', 0],
    ['bytes=-5', 0],
  ])('finds %s of %d bytes unsatisfiable', (header, size) => {
    expect(parseRange(header, size)).toEqual({ kind: 'unsatisfiable' });
  });

  it.each([undefined, '', 'bytes=0-1,3-4', 'items=0-1', 'bytes=5-2', 'bytes=-', 'bytes=a-b', 'bytes=0x1-2'])('serves the whole body for %p', (header) => {
    expect(parseRange(header, 10)).toEqual({ kind: 'whole' });
  });
});
