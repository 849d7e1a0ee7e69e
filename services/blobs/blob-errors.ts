import { AppError } from '../platform/app-error';

/** Thrown by `BlobStore.get` for a key with no blob (code `not_found`). */
export class BlobNotFoundError extends AppError {
  constructor(readonly key: string) {
    super({ code: 'not_found', message: `no blob with key "${key}"` });
    this.name = 'BlobNotFoundError';
  }
}

/** Thrown for a key that could escape the store, or that a filesystem and S3 would treat differently (code `bad_request`). */
export class InvalidBlobKeyError extends AppError {
  constructor(readonly key: string, reason: string) {
    super({ code: 'bad_request', message: `invalid blob key ${JSON.stringify(key.slice(0, 100))}: ${reason}` });
    this.name = 'InvalidBlobKeyError';
  }
}

/** Thrown for a content type that is not a plain `type/subtype[; parameters]` header value (code `bad_request`). */
export class InvalidContentTypeError extends AppError {
  constructor(readonly contentType: string) {
    super({ code: 'bad_request', message: `invalid blob content type ${JSON.stringify(contentType.slice(0, 100))}: expected "type/subtype", e.g. "image/png"` });
    this.name = 'InvalidContentTypeError';
  }
}

/** Thrown by `put` when the body's length differs from the announced `size` (code `bad_request`). */
export class BlobSizeMismatchError extends AppError {
  constructor(readonly key: string, expected: number, actual: number) {
    super({ code: 'bad_request', message: `blob "${key}" was announced as ${expected} bytes but the body had ${actual}; nothing was stored` });
    this.name = 'BlobSizeMismatchError';
  }
}
