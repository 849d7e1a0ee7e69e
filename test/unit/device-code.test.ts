import { formatUserCode, hashDeviceCode, hashUserCode, issueDeviceCodes, normalizeUserCode, USER_CODE_ALPHABET } from '../../services/platform/device-code';

describe('device-login codes', () => {
  it('issues a 43-character base64url device code and an XXXX-XXXX user code from the consonant alphabet', () => {
    const codes = issueDeviceCodes();
    expect(codes.deviceCode).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(codes.userCode).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(codes.deviceCodeHash).toBe(hashDeviceCode(codes.deviceCode));
    expect(codes.userCodeHash).toBe(hashUserCode(codes.userCode.replace('-', '')));
    expect(codes.deviceCodeHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('draws every letter of the alphabet and nothing else', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 500; i++) for (const ch of issueDeviceCodes().userCode.replace('-', '')) seen.add(ch);
    expect([...seen].sort().join('')).toBe(USER_CODE_ALPHABET);
  });

  it('does not repeat codes', () => {
    const users = new Set<string>();
    const devices = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const codes = issueDeviceCodes();
      users.add(codes.userCode);
      devices.add(codes.deviceCode);
    }
    expect(devices.size).toBe(1000);
    expect(users.size).toBeGreaterThan(995);
  });

  it('normalizes a typed user code: case, dashes and spaces do not matter', () => {
    expect(normalizeUserCode('bcdf-ghjk')).toBe('BCDFGHJK');
    expect(normalizeUserCode(' BCDF GHJK ')).toBe('BCDFGHJK');
    expect(normalizeUserCode('B-C-D-F-G-H-J-K')).toBe('BCDFGHJK');
    expect(formatUserCode('BCDFGHJK')).toBe('BCDF-GHJK');
  });

  it('refuses typed codes that cannot be ours: wrong length, vowels, digits', () => {
    expect(normalizeUserCode('BCDF-GHJ')).toBeNull();
    expect(normalizeUserCode('BCDF-GHJKL')).toBeNull();
    expect(normalizeUserCode('ABCD-EFGH')).toBeNull();
    expect(normalizeUserCode('BCDF-GH0K')).toBeNull();
    expect(normalizeUserCode('')).toBeNull();
  });
});
