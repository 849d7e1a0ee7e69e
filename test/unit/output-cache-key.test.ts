import type { Artifact } from '../../services/contract';
import { IMAGE_NODES } from '../../services/nodes/image-nodes';
import { bytesHash, outputCacheKey } from '../../services/runs/steps/output-cache-key';

const resize = IMAGE_NODES.find((n) => n.spec.id === 'image-resize')!;

/** Refs resolved to bytes, as the step's artifact store would read them. */
function hashesOf(files: Record<string, string>) {
  return async (artifact: Artifact) => bytesHash(Buffer.from(files[artifact.ref as string]!));
}

const image = (ref: string): Artifact => ({ kind: 'image', ref, mimeType: 'image/png' });

describe('the output cache key', () => {
  const files = { 'https://svc/blobs/a.png?x': 'red pixels', 'https://svc/blobs/b.png?y': 'red pixels', 'https://svc/blobs/c.png?z': 'blue pixels' };
  const keyOf = (ref: string, inputs: Record<string, unknown> = { width: 10 }) => outputCacheKey(resize, { image: image(ref), ...inputs }, hashesOf(files));

  it('is the same for the same bytes under different refs', async () => {
    expect(await keyOf('https://svc/blobs/a.png?x')).toBe(await keyOf('https://svc/blobs/b.png?y'));
  });

  it('differs for different bytes', async () => {
    expect(await keyOf('https://svc/blobs/a.png?x')).not.toBe(await keyOf('https://svc/blobs/c.png?z'));
  });

  it('differs for a different value input, and treats an omitted input as its default', async () => {
    expect(await keyOf('https://svc/blobs/a.png?x', { width: 10 })).not.toBe(await keyOf('https://svc/blobs/a.png?x', { width: 11 }));
    expect(await keyOf('https://svc/blobs/a.png?x', { width: 10 })).toBe(await keyOf('https://svc/blobs/a.png?x', { width: 10, fit: 'cover' }));
  });

  it('differs between nodes given the same inputs', async () => {
    const crop = IMAGE_NODES.find((n) => n.spec.id === 'image-convert')!;
    const inputs = { image: image('https://svc/blobs/a.png?x') };
    expect(await outputCacheKey(resize, inputs, hashesOf(files))).not.toBe(await outputCacheKey(crop, inputs, hashesOf(files)));
  });

  it('declares only pure nodes deterministic', () => {
    expect(IMAGE_NODES.every((n) => n.cache?.kind === 'deterministic')).toBe(true);
  });
});
