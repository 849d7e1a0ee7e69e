export { BlobNotFoundError, checkBlobKey, InvalidBlobKeyError, type BlobInfo, type BlobObject, type BlobStore, type PutOptions } from './blob-store';
export { FsBlobStore } from './fs-blob-store';
export { S3BlobStore, type S3BlobStoreOptions } from './s3-blob-store';
export { BlobUrlSigner, type SignatureCheck } from './url-signer';
