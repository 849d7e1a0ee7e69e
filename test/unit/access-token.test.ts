import { hashToken, issueRefreshToken, issueToken, parseRefreshToken, parseToken } from '../../services/platform/access-token';

describe('access tokens', () => {
  it('issues personal tokens with the svc_ prefix, 256 random bits and a valid checksum', () => {
    const token = issueToken('personal');
    expect(token.value).toMatch(/^svc_[0-9A-Za-z]{49}$/);
    expect(token.hash).toBe(hashToken(token.value));
    expect(token.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(token.value.startsWith(token.displayPrefix)).toBe(true);
    expect(parseToken(token.value)).toEqual({ ok: true, kind: 'personal', hash: token.hash, displayPrefix: token.displayPrefix });
  });

  it('issues session tokens with their own prefix', () => {
    const token = issueToken('session');
    expect(token.value.startsWith('svcs_')).toBe(true);
    expect(parseToken(token.value)).toMatchObject({ ok: true, kind: 'session' });
  });

  it("issues MCP clients' access tokens (svco_) and refresh tokens (svcr_); a refresh token is no access token", () => {
    const access = issueToken('oauth');
    expect(access.value.startsWith('svco_')).toBe(true);
    expect(parseToken(access.value)).toMatchObject({ ok: true, kind: 'oauth' });
    const refresh = issueRefreshToken();
    expect(refresh.value).toMatch(/^svcr_[0-9A-Za-z]{49}$/);
    expect(parseToken(refresh.value)).toEqual({ ok: false, problem: 'unknown_prefix' });
    expect(parseRefreshToken(refresh.value)).toEqual({ ok: true, hash: hashToken(refresh.value) });
    expect(parseRefreshToken(access.value)).toEqual({ ok: false, problem: 'unknown_prefix' });
    expect(parseRefreshToken(`${refresh.value.slice(0, -1)}${refresh.value.endsWith('x') ? 'y' : 'x'}`)).toEqual({ ok: false, problem: 'bad_checksum' });
  });

  it('never issues the same token twice', () => {
    const values = new Set(Array.from({ length: 200 }, () => issueToken('personal').value));
    expect(values.size).toBe(200);
  });

  it('rejects a mistyped character, a truncated token and a foreign prefix without any lookup', () => {
    const { value } = issueToken('personal');
    const flipped = value.slice(0, 10) + (value[10] === 'a' ? 'b' : 'a') + value.slice(11);
    expect(parseToken(flipped)).toEqual({ ok: false, problem: 'bad_checksum' });
    expect(parseToken(value.slice(0, -1))).toEqual({ ok: false, problem: 'bad_length' });
    expect(parseToken('ghp_' + value.slice(4))).toEqual({ ok: false, problem: 'unknown_prefix' });
    expect(parseToken('')).toEqual({ ok: false, problem: 'unknown_prefix' });
  });
});
