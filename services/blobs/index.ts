export { BlobNotFoundError, BlobSizeMismatchError, InvalidBlobKeyError, InvalidContentTypeError } from './blob-errors';
export { checkBlobKey, checkContentType, MAX_BLOB_KEY_LENGTH } from './blob-key';
export type { BlobInfo, BlobObject, BlobStore, ByteRange, PutOptions } from './blob-store';
export { FsBlobStore } from './fs-blob-store';
export { S3BlobStore, type S3BlobStoreOptions } from './s3-blob-store';
export { BlobUrlSigner, type BlobUrlSignerOptions, type SignatureCheck } from './url-signer';
