import path from 'node:path';
import { BlobUrlSigner, FsBlobStore, S3BlobStore, type BlobStore } from './index';
import type { Config } from '../platform/config';

/** The blob store the configuration names, ready to use, and the signer of its public URLs. */
export async function createBlobStoreFromConfig(
  config: Pick<Config, 'publicBaseUrl' | 'blobSigningSecret' | 'blobDriver' | 'blobDir' | 's3'>,
): Promise<{ store: BlobStore; signer: BlobUrlSigner }> {
  const signer = new BlobUrlSigner({ publicBaseUrl: config.publicBaseUrl, secret: config.blobSigningSecret });
  if (config.blobDriver === 's3' && config.s3) {
    const store = new S3BlobStore(config.s3);
    await store.init();
    return { store, signer };
  }
  const store = new FsBlobStore(path.resolve(config.blobDir));
  await store.init();
  return { store, signer };
}
