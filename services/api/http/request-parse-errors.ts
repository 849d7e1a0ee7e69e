import type { Request } from 'express';
import type { ErrorCode } from '../../contract';
import { AppError } from '../../platform/app-error';

/** The fields body-parser (express.json) and Express's router put on the errors they raise. */
interface ParseError {
  type?: string;
  status?: number;
  length?: number;
  limit?: number;
  message?: string;
  /** The body text, on parse failures. */
  body?: unknown;
  /** zlib's code (`Z_DATA_ERROR`, `ERR__ERROR_FORMAT_PADDING_2`, ...) when inflating a compressed body failed. */
  code?: unknown;
  /** http-errors' mark of an error whose message may be shown to the client (every 4xx it makes). */
  expose?: boolean;
}

/** The code of the other 4xx refusals body-parser raises, by their status. */
const CODE_OF_STATUS: Record<number, ErrorCode> = { 403: 'forbidden', 413: 'payload_too_large', 415: 'unsupported_media_type' };

function contentEncoding(req: Request): string {
  return String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
}

/**
 * Whether a body that failed express.json's strict mode is valid JSON after all (`true`, `-1`,
 * `null`, `"text"`): then the caller sent the wrong kind of value, not broken text. Strict mode
 * rejects on the first character, so the text is parsed here, once, only in that case.
 */
function isJsonButNotContainer(body: unknown): boolean {
  if (typeof body !== 'string') return false;
  const first = body.trimStart()[0];
  if (first === '{' || first === '[') return false;
  try {
    JSON.parse(body);
    return true;
  } catch {
    return false;
  }
}

function describeScalar(body: string): string {
  const text = body.trim();
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

/**
 * Errors raised while a request is read, before any handler runs (a path's percent-escapes,
 * express.json's reading, inflating and parsing), turned into caller-facing ones; null for any
 * other error.
 */
export function fromRequestParsing(err: unknown, req: Request): AppError | null {
  const e = err as ParseError;
  // Express's router decodes path parameters with decodeURIComponent and raises its URIError.
  if (err instanceof URIError && e.status === 400) {
    return new AppError({
      code: 'bad_request',
      message: `the path ${JSON.stringify(req.path)} holds a malformed percent-escape; write a literal "%" as %25 and other characters as UTF-8 escapes (%C3%A9)`,
      cause: err,
    });
  }
  switch (e?.type) {
    case 'entity.parse.failed':
      if (isJsonButNotContainer(e.body)) {
        return new AppError({
          code: 'validation_failed',
          message: `the request body must be a JSON object ({ ... }), not ${describeScalar(e.body as string)}`,
          cause: err,
        });
      }
      return new AppError({ code: 'invalid_json', message: `the request body is not valid JSON: ${e.message ?? 'parse error'}`, cause: err });
    case 'entity.too.large': {
      const encoding = contentEncoding(req);
      if (encoding !== 'identity') {
        return new AppError({
          code: 'payload_too_large',
          message: `the request body is compressed (Content-Encoding "${encoding}") and inflated to more than the limit of ${e.limit} bytes; send less data`,
          cause: err,
        });
      }
      return new AppError({ code: 'payload_too_large', message: `the request body is ${e.length ?? 'too many'} bytes; the limit is ${e.limit} bytes`, cause: err });
    }
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError({ code: 'unsupported_media_type', message: `${e.message ?? 'unsupported encoding'}; send UTF-8 JSON`, cause: err });
    case 'request.aborted':
      return new AppError({ code: 'bad_request', message: 'the request was aborted by the client', cause: err });
    default:
      break;
  }
  // body-parser passes zlib's own error on (status 400, no type) when the body does not inflate:
  // gzip and deflate name it Z_*, brotli ERR__ERROR_* or ERR_BROTLI_* (once a 500).
  if (e?.status === 400 && typeof e.code === 'string' && /^(Z_|ERR__ERROR_|ERR_BROTLI_)/.test(e.code)) {
    const encoding = contentEncoding(req);
    return new AppError({
      code: 'bad_request',
      message: `the request body is declared Content-Encoding "${encoding}" but is not ${encoding} data (${e.message ?? e.code}); compress it that way or drop the header`,
      cause: err,
    });
  }
  // Any other refusal of the request by body-parser or raw-body (a 4xx they mark `expose`: too
  // many form parameters, a body shorter than its Content-Length, ...) is the client's too, and
  // says what is wrong; one they raise with a 5xx (a stream misused by our code) is not.
  if (typeof e?.type === 'string' && e.expose === true && typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    const what = e.type === 'parameters.too.many' ? 'the request body holds too many form parameters; send fewer' : `the request body could not be read: ${e.message ?? e.type}`;
    return new AppError({ code: CODE_OF_STATUS[e.status] ?? 'bad_request', message: what, cause: err });
  }
  return null;
}
