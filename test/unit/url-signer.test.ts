import { BlobUrlSigner, InvalidBlobKeyError } from '../../services/blobs';

describe('signed blob URLs', () => {
  const signer = new BlobUrlSigner({ publicBaseUrl: 'https://svc.example/api/', secret: 's'.repeat(32) });
  const now = new Date('2026-01-01T00:00:00Z');
  const partsOf = (url: string) => {
    const parsed = new URL(url);
    return { expires: parsed.searchParams.get('expires')!, signature: parsed.searchParams.get('signature')! };
  };

  it('have the form <base>/blobs/<key>?expires=<unix s>&signature=<base64url>', () => {
    const url = signer.sign('runs/a_b/x.png', new Date(now.getTime() + 60_500));
    expect(url).toMatch(/^https:\/\/svc\.example\/api\/blobs\/runs\/a_b\/x\.png\?expires=1767225660&signature=[A-Za-z0-9_-]{43}$/);
  });

  it('verify until they expire, and not at or after the expiry second', () => {
    const { expires, signature } = partsOf(signer.sign('runs/a_b/x.png', new Date(now.getTime() + 60_000)));
    expect(signer.verify('runs/a_b/x.png', expires, signature, now)).toEqual({ ok: true });
    expect(signer.verify('runs/a_b/x.png', expires, signature, new Date(now.getTime() + 59_999))).toEqual({ ok: true });
    expect(signer.verify('runs/a_b/x.png', expires, signature, new Date(now.getTime() + 60_000))).toEqual({ ok: false, reason: 'expired' });
  });

  it('refuse another key, another expiry, another secret and a truncated signature', () => {
    const { expires, signature } = partsOf(signer.sign('k', new Date(now.getTime() + 60_000)));
    expect(signer.verify('k2', expires, signature, now)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(signer.verify('k', String(Number(expires) + 1), signature, now)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(signer.verify('k', expires, signature.slice(0, -1), now)).toEqual({ ok: false, reason: 'bad_signature' });
    const other = new BlobUrlSigner({ publicBaseUrl: 'https://svc.example', secret: 't'.repeat(32) });
    expect(other.verify('k', expires, signature, now)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('check the signature before the expiry, so a forged URL learns nothing from the answer', () => {
    const { expires } = partsOf(signer.sign('k', new Date(now.getTime() - 60_000)));
    expect(signer.verify('k', expires, 'forged', now)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('say which parameter is missing or malformed', () => {
    const { expires, signature } = partsOf(signer.sign('k', new Date(now.getTime() + 60_000)));
    expect(signer.verify('k', undefined, signature, now)).toEqual({ ok: false, reason: 'missing' });
    expect(signer.verify('k', expires, undefined, now)).toEqual({ ok: false, reason: 'missing' });
    expect(signer.verify('k', '', '', now)).toEqual({ ok: false, reason: 'missing' });
    expect(signer.verify('k', 'soon', signature, now)).toEqual({ ok: false, reason: 'malformed' });
    expect(signer.verify('k', '-5', signature, now)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('accept the secret as bytes, giving the same signatures', () => {
    const bytes = new BlobUrlSigner({ publicBaseUrl: 'https://svc.example/api', secret: Buffer.from('s'.repeat(32)) });
    const at = new Date(now.getTime() + 60_000);
    expect(bytes.sign('k', at)).toBe(signer.sign('k', at));
  });

  it('refuse to sign an invalid key or an invalid date, and refuse a short secret', () => {
    expect(() => signer.sign('../etc/passwd', now)).toThrow(InvalidBlobKeyError);
    expect(() => signer.sign('k', new Date('not a date'))).toThrow('cannot sign');
    expect(() => new BlobUrlSigner({ publicBaseUrl: 'x', secret: 'short' })).toThrow('at least 32');
  });
});
