import type { Request } from 'express';
import type { TSchema } from '@sinclair/typebox';
import { carriesBody, type Operation } from '../../contract';
import { AppError } from '../../platform/app-error';
import type { UploadBody } from '../handlers/upload-body';

type PropertySchema = { type?: string | string[] };

/**
 * Query strings carry only text, so values of integer, number and boolean properties are
 * converted when they have the right form; anything else is left as it is for the validator to
 * reject with a message naming the field.
 */
function coerceQueryValue(schema: PropertySchema | undefined, value: unknown): unknown {
  if (typeof value !== 'string' || !schema) return value;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if ((types.includes('integer') || types.includes('number')) && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(value.trim())) {
    return Number(value);
  }
  if (types.includes('boolean') && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

/** The error of a POST without a body. */
export function emptyBodyError(): AppError {
  return new AppError({ code: 'invalid_json', message: 'the request body is empty; send a JSON object (Content-Type: application/json)' });
}

/**
 * Builds an operation's input object from the path and the query (GET, DELETE, and routes whose
 * body is a file) or the JSON body (POST, PATCH).
 */
export function requestInput(op: Operation, req: Request, options: { fromBody?: boolean } = {}): unknown {
  const params = req.params as Record<string, string>;
  const fromPath: Record<string, unknown> = {};
  for (const name of op.http.pathParams) fromPath[name] = params[name];

  if (!carriesBody(op) || options.fromBody === false) {
    const properties = ((op.input as TSchema & { properties?: Record<string, PropertySchema> }).properties ?? {});
    // fromEntries defines every key as the object's own (`query[key] = …` would make
    // `?__proto__=x` set the prototype, and the unknown parameter would pass unseen).
    const query: Record<string, unknown> = Object.fromEntries(
      Object.entries(req.query as Record<string, unknown>).map(([key, value]) => [key, coerceQueryValue(properties[key], value)]),
    );
    for (const name of op.http.pathParams) {
      if (name in query) {
        throw new AppError({ code: 'validation_failed', message: `"${name}" is given in the path; do not repeat it as a query parameter` });
      }
    }
    return { ...query, ...fromPath };
  }

  const body: unknown = req.body;
  if (body === undefined) throw emptyBodyError();
  const protoKey = protoKeyPath(body);
  if (protoKey !== null) {
    throw new AppError({ code: 'validation_failed', message: `a key named "__proto__" is not accepted (at ${protoKey}); rename or remove it` });
  }
  if (op.http.pathParams.length === 0) return body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  return { ...(body as Record<string, unknown>), ...fromPath };
}

/**
 * The file of a `body: 'bytes'` route, unread. Compressed bodies are refused: the file's bytes
 * are stored as sent, and inflating them would let a small body pass a size limit it breaks.
 */
export function uploadOf(req: Request): UploadBody {
  const encoding = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity') {
    throw new AppError({ code: 'unsupported_media_type', message: `the file is sent with Content-Encoding "${encoding}"; send its bytes as they are, without Content-Encoding` });
  }
  const length = req.headers['content-length'];
  return {
    mediaType: (req.get('content-type') ?? '').split(';', 1)[0]!.trim().toLowerCase(),
    declaredBytes: length !== undefined && /^\d+$/.test(length) ? Number(length) : null,
    body: req,
  };
}

/**
 * Where the first key named `__proto__` is in a parsed JSON body (JSON.parse makes it an own key),
 * or null. Refused at the door: such a key is never a field of ours, and libraries that copy
 * objects key by key (Prisma's JSON columns among them) turn it into a prototype, dropping the
 * value or failing on it. Walked with a stack, not recursion: a body may nest deeper than the
 * call stack.
 */
function protoKeyPath(body: unknown): string | null {
  const pending: [unknown, string][] = [[body, '']];
  for (let item = pending.pop(); item; item = pending.pop()) {
    const [value, path] = item;
    if (value === null || typeof value !== 'object') continue;
    if (Array.isArray(value)) {
      value.forEach((element, i) => pending.push([element, `${path}[${i}]`]));
      continue;
    }
    for (const [key, child] of Object.entries(value)) {
      const at = path ? `${path}.${key}` : key;
      if (key === '__proto__') return at;
      pending.push([child, at]);
    }
  }
  return null;
}
