import { BlobUrlSigner } from '../../services/blobs';

describe('signed blob URLs', () => {
  const signer = new BlobUrlSigner({ publicBaseUrl: 'https://svc.example/api', secret: 's'.repeat(32) });
  const now = new Date('2026-01-01T00:00:00Z');

  it('are the service’s own URLs and verify until they expire', () => {
    const url = new URL(signer.sign('runs/a_b/x.png', new Date(now.getTime() + 60_000)));
    expect(url.origin + url.pathname).toBe('https://svc.example/api/blobs/runs/a_b/x.png');
    const expires = url.searchParams.get('expires')!;
    const signature = url.searchParams.get('signature')!;
    expect(signer.verify('runs/a_b/x.png', expires, signature, now)).toEqual({ ok: true });
    expect(signer.verify('runs/a_b/x.png', expires, signature, new Date(now.getTime() + 61_000))).toEqual({ ok: false, reason: 'expired' });
  });

  it('refuse another key, another expiry, another secret and missing parameters', () => {
    const url = new URL(signer.sign('k', new Date(now.getTime() + 60_000)));
    const expires = url.searchParams.get('expires')!;
    const signature = url.searchParams.get('signature')!;
    expect(signer.verify('k2', expires, signature, now)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(signer.verify('k', String(Number(expires) + 1), signature, now)).toEqual({ ok: false, reason: 'bad_signature' });
    const other = new BlobUrlSigner({ publicBaseUrl: 'https://svc.example', secret: 't'.repeat(32) });
    expect(other.verify('k', expires, signature, now)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(signer.verify('k', undefined, signature, now)).toEqual({ ok: false, reason: 'missing' });
    expect(signer.verify('k', 'soon', signature, now)).toEqual({ ok: false, reason: 'missing' });
  });

  it('refuse a short secret', () => {
    expect(() => new BlobUrlSigner({ publicBaseUrl: 'x', secret: 'short' })).toThrow('at least 32');
  });
});
