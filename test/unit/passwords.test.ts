import { dummyPasswordHash, hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, passwordProblem, SCRYPT_PARAMS, verifyPassword } from '../../services/platform/passwords';

// Cheap parameters for most cases; one test uses the real ones.
const FAST = { N: 1024, r: 8, p: 1 };

describe('password hashing', () => {
  it('hashes with scrypt into a self-describing format and verifies with the real parameters', async () => {
    const hash = await hashPassword('correct horse battery staple');
    expect(hash).toMatch(new RegExp(`^scrypt\\$${SCRYPT_PARAMS.N}\\$8\\$1\\$[A-Za-z0-9+/]{22}==\\$[A-Za-z0-9+/]{43}=$`));
    await expect(verifyPassword('correct horse battery staple', hash)).resolves.toBe(true);
    await expect(verifyPassword('correct horse battery stapler', hash)).resolves.toBe(false);
  });

  it('salts every hash, so equal passwords hash differently', async () => {
    const [a, b] = await Promise.all([hashPassword('same password!', FAST), hashPassword('same password!', FAST)]);
    expect(a).not.toBe(b);
    await expect(verifyPassword('same password!', a)).resolves.toBe(true);
    await expect(verifyPassword('same password!', b)).resolves.toBe(true);
  });

  it('verifies hashes made with other parameters (they can be raised later)', async () => {
    const hash = await hashPassword('an older password', { N: 2048, r: 4, p: 2 });
    expect(hash.startsWith('scrypt$2048$4$2$')).toBe(true);
    await expect(verifyPassword('an older password', hash)).resolves.toBe(true);
  });

  it('normalizes Unicode, so a composed and a decomposed é are the same password', async () => {
    const hash = await hashPassword('caf\u00e9 au lait!', FAST);
    await expect(verifyPassword('cafe\u0301 au lait!', hash)).resolves.toBe(true);
  });

  it(`refuses passwords shorter than ${MIN_PASSWORD_LENGTH} or longer than ${MAX_PASSWORD_LENGTH} characters`, async () => {
    expect(passwordProblem('short')).toBe(`the password must be at least ${MIN_PASSWORD_LENGTH} characters long`);
    expect(passwordProblem('x'.repeat(MAX_PASSWORD_LENGTH + 1))).toBe(`the password must be at most ${MAX_PASSWORD_LENGTH} characters long`);
    expect(passwordProblem('x'.repeat(MIN_PASSWORD_LENGTH))).toBeNull();
    await expect(hashPassword('short')).rejects.toThrow(RangeError);
  });

  it.each([
    ['an empty value', ''],
    ['another format', '$2b$10$abcdefghijklmnopqrstuv'],
    ['a truncated hash', 'scrypt$1024$8$1$c2FsdHNhbHRzYWx0c2FsdA==$'],
    ['a cost that is not a power of two', 'scrypt$1000$8$1$c2FsdHNhbHRzYWx0c2FsdA==$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g='],
    ['an absurd cost', 'scrypt$1073741824$8$1$c2FsdHNhbHRzYWx0c2FsdA==$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g='],
  ])('never matches %s', async (_what, stored) => {
    await expect(verifyPassword('whatever password', stored)).resolves.toBe(false);
  });

  it('never matches a password longer than the maximum, without hashing it', async () => {
    const hash = await hashPassword('y'.repeat(MAX_PASSWORD_LENGTH), FAST);
    await expect(verifyPassword('y'.repeat(MAX_PASSWORD_LENGTH), hash)).resolves.toBe(true);
    await expect(verifyPassword('y'.repeat(MAX_PASSWORD_LENGTH + 1), hash)).resolves.toBe(false);
  });

  it('keeps one dummy hash of the real parameters for unknown users', async () => {
    const dummy = await dummyPasswordHash();
    expect(dummy.startsWith(`scrypt$${SCRYPT_PARAMS.N}$`)).toBe(true);
    await expect(dummyPasswordHash()).resolves.toBe(dummy);
    await expect(verifyPassword('anything at all', dummy)).resolves.toBe(false);
  });
});
