import { randomUUID } from 'node:crypto';
import querystring from 'node:querystring';
import zlib from 'node:zlib';
import type { Request } from 'express';
import { requestInput } from '../../../services/api/http/request-input';
import { carriesBody, validate, type Operation } from '../../../services/contract';
import { asSchema, exampleOf, formatPath, sitesOf, typesOf, withValue, type Key, type Schema, type Site } from './schema-walk';

/**
 * S1's generator: malformed requests for one operation or route of the contract, made from its
 * input schema (never a hand list): each place of a valid example mutated to every wrong type,
 * past its bounds, huge, deeply nested, with text Postgres cannot store; prototype keys, unknown
 * fields, missing fields; broken JSON, bodies that are not objects, wrong content types,
 * charsets and encodings, oversize bodies, bad percent-escapes in paths and queries; and some
 * sent without a token or with a broken one. Each request says what a good answer names.
 */

export type MutationKind =
  | 'wrong-type'
  | 'bounds'
  | 'huge'
  | 'nesting'
  | 'unstorable'
  | 'prototype-key'
  | 'unknown-field'
  | 'missing-field'
  | 'invalid-json'
  | 'not-an-object'
  | 'empty-body'
  | 'content-type'
  | 'encoding'
  | 'oversize'
  | 'path-escape'
  | 'path-value'
  | 'query'
  | 'file-bytes'
  | 'no-token'
  | 'bad-token';

export interface HostileRequest {
  endpoint: string;
  method: string;
  /** Path and query, escaped as sent. */
  target: string;
  headers: Record<string, string>;
  body?: Buffer;
  kind: MutationKind;
  /** What was changed, for failure messages. */
  label: string;
  /**
   * What a 400 must name: the changed field (its path as the service writes it, or its name in
   * quotes) or, for a request broken below the schema, the problem; null: the change left the
   * input valid by the contract, so any refusal (a semantic one) only needs a non-empty error.
   */
  names: RegExp | null;
  /** The one status a correct service answers (413 for oversize, 401 without a usable token). */
  expect?: number;
}

export interface GeneratorContext {
  /** The token each request carries, by the credential kinds the declaration allows. */
  tokenFor(op: Operation): string;
  bodyLimitBytes: number;
}

export { seededRandom } from './seeded-random';

type Random = () => number;
const between = (rnd: Random, lo: number, hi: number): number => lo + Math.floor(rnd() * (hi - lo + 1));
const pick = <T>(rnd: Random, items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
const escapeRe = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** JSON text spliced in where a value is this marker: numbers JSON.stringify cannot write, nesting it would recurse on. */
const RAW = '__s1_raw_value__';

/** One change to the example input, made fresh for each request (sizes are drawn anew). */
interface SchemaMutation {
  kind: MutationKind;
  label: string;
  apply(rnd: Random, base: unknown): { input: unknown; raw?: string; names: RegExp };
}

/** How a 400 about the value at `path` names it: by its path, or by its name in quotes. */
function naming(path: readonly Key[]): RegExp {
  const last = [...path].reverse().find((k): k is string => typeof k === 'string');
  const alternatives = [escapeRe(formatPath(path))];
  if (last !== undefined) alternatives.push(escapeRe(`"${last}"`));
  return new RegExp(alternatives.join('|'));
}

/** Values of every JSON type but the ones `schema` takes (all of them for a union: the validator decides). */
function wrongTypes(schema: Schema): { name: string; value: unknown }[] {
  const types = typesOf(schema);
  const candidates: { name: string; types: string[]; value: unknown }[] = [
    { name: 'string', types: ['string'], value: 'wrong' },
    { name: 'integer', types: ['integer', 'number'], value: 12345 },
    { name: 'fraction', types: ['number'], value: 1.5 },
    { name: 'boolean', types: ['boolean'], value: true },
    { name: 'null', types: ['null'], value: null },
    { name: 'empty array', types: ['array'], value: [] },
    { name: 'array', types: ['array'], value: [1, 'a', null] },
    { name: 'empty object', types: ['object'], value: {} },
    { name: 'object', types: ['object'], value: { a: 1 } },
  ];
  return candidates.filter((c) => !c.types.some((t) => types.includes(t)));
}

function nestedText(depth: number, objects: boolean): string {
  return objects ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}` : `${'['.repeat(depth)}1${']'.repeat(depth)}`;
}

/** `inBody`: the site travels in a JSON body; in a path or query, huge and raw JSON values make no sense (Node refuses long URLs with 431). */
function mutationsAt(site: Site, limit: number, inBody: boolean): SchemaMutation[] {
  const { path, schema } = site;
  const at = formatPath(path);
  const names = naming(path);
  const set = (kind: MutationKind, label: string, value: (rnd: Random) => unknown, raw?: (rnd: Random) => string): SchemaMutation => ({
    kind,
    label: `${label} at ${at}`,
    apply: (rnd, base) => (raw ? { input: withValue(base, path, RAW), raw: raw(rnd), names } : { input: withValue(base, path, value(rnd)), names }),
  });
  const out: SchemaMutation[] = [];
  if (path.length > 0) {
    for (const wrong of wrongTypes(schema)) out.push(set('wrong-type', `${wrong.name}`, () => wrong.value));
    if (schema.minLength !== undefined && schema.minLength > 0) out.push(set('bounds', 'empty string', () => ''));
    if (schema.maxLength !== undefined) out.push(set('bounds', `${schema.maxLength + 1} characters`, () => 'm'.repeat(schema.maxLength! + 1)));
    if (schema.minimum !== undefined) out.push(set('bounds', 'below minimum', () => schema.minimum! - (typesOf(schema).includes('integer') ? 1 : schema.minimum! / 2 || 1)));
    if (schema.maximum !== undefined) out.push(set('bounds', 'above maximum', () => schema.maximum! + 1));
    if (typesOf(schema).includes('integer')) out.push(set('bounds', 'fraction for an integer', () => (schema.minimum ?? 0) + 0.5));
    if (schema.const !== undefined || schema.enum || schema.anyOf?.every((b) => b.const !== undefined)) out.push(set('bounds', 'enum miss', () => 'zz-not-allowed'));
    if (schema.maxItems !== undefined) out.push(set('bounds', `${schema.maxItems + 1} items`, () => Array.from({ length: schema.maxItems! + 1 }, () => exampleOf(schema.items ?? {}))));
    if (schema.minItems !== undefined && schema.minItems > 0) out.push(set('bounds', 'too few items', () => []));
    if (schema.maxProperties !== undefined) {
      out.push(set('bounds', `${schema.maxProperties + 1} fields`, () => Object.fromEntries(Array.from({ length: schema.maxProperties! + 1 }, (_, i) => [`f${i}`, 1]))));
    }
    if (inBody) {
      out.push(set('bounds', 'infinite number', () => 0, (rnd) => pick(rnd, ['1e400', '-1e400', '1e308', '-0', '123456789012345678901234567890'])));
      out.push(set('huge', 'huge string', (rnd) => 'h'.repeat(between(rnd, limit / 8, limit / 2))));
      out.push(set('huge', 'huge array', (rnd) => new Array(between(rnd, limit / 32, limit / 4)).fill(0)));
      out.push(set('nesting', 'deep nesting', () => null, (rnd) => nestedText(pick(rnd, [65, 200, 5_000, 20_000]), rnd() < 0.5)));
    }
    out.push(set('unstorable', 'NUL', () => 'a\u0000b'));
    out.push(set('unstorable', 'lone high surrogate', () => 'a\ud800'));
    out.push(set('unstorable', 'lone low surrogate', () => '\udc00b'));
    if (site.present) {
      const parent = path.slice(0, -1);
      const last = path[path.length - 1]!;
      if (typeof last === 'string') {
        out.push({ kind: 'missing-field', label: `${at} removed`, apply: (_rnd, base) => ({ input: withValue(base, path, undefined, true), names: naming(path) }) });
        // The field's own name made unstorable: the problem is in its parent object.
        out.push({
          kind: 'unstorable',
          label: `NUL in the name ${at}`,
          apply: (_rnd, base) => ({ input: withValue(base, [...parent, `${last}\u0000`], 1), names: new RegExp(`${escapeRe(formatPath(parent))}|U\\+0000`) }),
        });
      }
    }
  }
  const isObject = site.present && (typesOf(schema).includes('object') || schema.properties !== undefined);
  if (isObject) {
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      out.push({
        kind: 'prototype-key',
        label: `${key} in ${at}`,
        apply: (rnd, base) => ({
          input: withValue(base, [...path, key], pick(rnd, [{ polluted: true }, { prototype: { polluted: true } }, 'x', null])),
          names: naming([...path, key]),
        }),
      });
    }
    out.push({
      kind: 'unknown-field',
      label: `unknown field in ${at}`,
      apply: (rnd, base) => {
        const key = `zz_unknown_${between(rnd, 0, 999)}`;
        return { input: withValue(base, [...path, key], 'x'), names: naming([...path, key]) };
      },
    });
  }
  return out;
}

/** Every schema mutation of an example input. */
function schemaMutations(op: Operation, base: unknown, limit: number): SchemaMutation[] {
  const json = carriesBody(op) && op.http.body !== 'bytes';
  return sitesOf(asSchema(op.input), base).flatMap((site) => mutationsAt(site, limit, json && !op.http.pathParams.includes(String(site.path[0]))));
}

/**
 * The input as the service reads it from what is sent (path parameters decoded, the query
 * parsed as Express parses it, the body as JSON), by the service's own requestInput: whether the
 * change left it valid is judged on that, not on the value before it was written into a URL.
 * `malformed`: a path parameter's percent-escape does not decode (the router refuses it first).
 */
function serverView(op: Operation, target: string, body: Buffer | undefined): { malformed: boolean; unroutable?: boolean; input?: unknown } {
  const url = new URL(target, 'http://service');
  const segments = url.pathname.split('/');
  const params: Record<string, string> = {};
  try {
    op.http.path.split('/').forEach((part, i) => {
      if (part.startsWith(':')) params[part.slice(1)] = decodeURIComponent(segments[i] ?? '');
    });
  } catch {
    return { malformed: true };
  }
  // An empty path parameter is another path (`/v1/runs//events`): no route of this one answers it.
  if (Object.values(params).some((value) => value === '')) return { malformed: false, unroutable: true };
  const json = carriesBody(op) && op.http.body !== 'bytes';
  try {
    const req = { params, query: querystring.parse(url.search.slice(1)), body: json ? JSON.parse(body?.toString('utf8') ?? '') : undefined };
    return { malformed: false, input: requestInput(op, req as unknown as Request, { fromBody: json }) };
  } catch {
    return { malformed: false };
  }
}

const BAD_ESCAPE = /percent-escape/;

/** encodeURIComponent, but a lone surrogate is written as its WTF-8 bytes (%ED%A0%80) instead of throwing. */
function encode(text: string): string {
  return text
    .split(/([\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff])/)
    .map((part) => {
      if (part.length !== 1 || part.charCodeAt(0) < 0xd800 || part.charCodeAt(0) > 0xdfff) return encodeURIComponent(part);
      const c = part.charCodeAt(0);
      return [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    })
    .join('');
}

function queryString(input: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) parts.push(`${encode(key)}=${encode(typeof v === 'string' ? v : JSON.stringify(v) ?? '')}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** The request as the contract's HTTP surface reads it: path parameters in the path, the rest in the query or the body. */
function render(op: Operation, input: unknown, raw: string | undefined, rawPath?: Record<string, string>) {
  const record = (input ?? {}) as Record<string, unknown>;
  const rest: Record<string, unknown> = {};
  const params: Record<string, string> = {};
  const isObject = input !== null && typeof input === 'object' && !Array.isArray(input);
  if (isObject) {
    for (const [key, value] of Object.entries(record)) {
      if (op.http.pathParams.includes(key)) params[key] = encode(typeof value === 'string' ? value : JSON.stringify(value) ?? '');
      else Object.defineProperty(rest, key, { value, enumerable: true, writable: true, configurable: true });
    }
  }
  let path = op.http.path;
  for (const name of op.http.pathParams) path = path.replace(`:${name}`, rawPath?.[name] ?? params[name] ?? 'x');
  const json = carriesBody(op) && op.http.body !== 'bytes';
  let text = JSON.stringify(isObject ? rest : input) ?? '';
  if (raw !== undefined) text = text.replace(JSON.stringify(RAW), raw);
  if (json) return { target: path, body: Buffer.from(text, 'utf8') };
  return { target: `${path}${queryString(rest)}`, body: undefined };
}

const JSON_HEADERS = { 'Content-Type': 'application/json' };

/** Changes below the schema: the body's bytes, their declared type and encoding, the path's escapes. */
function wireMutations(op: Operation, base: unknown, limit: number) {
  const good = render(op, base, undefined);
  const baseText = good.body?.toString('utf8') ?? '{}';
  type Wire = { kind: MutationKind; label: string; names: RegExp | null; expect?: number; make(rnd: Random): { target?: string; body?: Buffer; headers: Record<string, string> } };
  const out: Wire[] = [];
  const json = carriesBody(op) && op.http.body !== 'bytes';
  if (json) {
    const invalid = ['{', '{"a":}', "{'a':1}", '{"a":1,}', '{"a":NaN}', '{"a":"\\q"}', '{"a":"\u0001"}', 'nul', '{"a":1}}', '\u00ef\u00bb\u00bf{}'];
    for (const text of invalid) out.push({ kind: 'invalid-json', label: `body ${JSON.stringify(text)}`, names: /JSON/, make: () => ({ body: Buffer.from(text, 'utf8'), headers: JSON_HEADERS }) });
    out.push({ kind: 'invalid-json', label: 'body cut short', names: /JSON/, make: (rnd) => ({ body: Buffer.from(baseText.slice(0, between(rnd, 1, baseText.length - 1))), headers: JSON_HEADERS }) });
    out.push({ kind: 'invalid-json', label: 'random bytes', names: /JSON/, make: (rnd) => ({ body: Buffer.from([0xff, 0xfe, ...Array.from({ length: 64 }, () => between(rnd, 0, 255))]), headers: JSON_HEADERS }) });
    for (const text of ['[]', '[1]', 'true', '-1', 'null', '"text"']) out.push({ kind: 'not-an-object', label: `body ${text}`, names: /JSON object|request must be object/, make: () => ({ body: Buffer.from(text), headers: JSON_HEADERS }) });
    out.push({ kind: 'empty-body', label: 'empty body', names: /empty/, make: () => ({ headers: JSON_HEADERS }) });
    // Every content type is read as JSON (docs: curl -d forgets the header): valid JSON stays the example.
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', '', 'application/json; charset=utf-8']) {
      out.push({ kind: 'content-type', label: `Content-Type ${JSON.stringify(type)}`, names: null, make: () => ({ body: Buffer.from(baseText), headers: type ? { 'Content-Type': type } : ({} as Record<string, string>) }) });
    }
    out.push({ kind: 'content-type', label: 'form body', names: /JSON/, make: () => ({ body: Buffer.from('a=1&b=2'), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }) });
    // Any utf-* charset iconv knows is decoded (utf-7 too); others are 415.
    out.push({ kind: 'encoding', label: 'charset utf-7', names: null, make: () => ({ body: Buffer.from(baseText), headers: { 'Content-Type': 'application/json; charset=utf-7' } }) });
    for (const charset of ['latin1', 'iso-8859-1', 'bogus']) {
      out.push({ kind: 'encoding', label: `charset ${charset}`, names: null, expect: 415, make: () => ({ body: Buffer.from(baseText), headers: { 'Content-Type': `application/json; charset=${charset}` } }) });
    }
    out.push({ kind: 'encoding', label: 'UTF-16 body', names: null, make: () => ({ body: Buffer.from(baseText, 'utf16le'), headers: { 'Content-Type': 'application/json; charset=utf-16le' } }) });
    out.push({ kind: 'encoding', label: 'UTF-8 body declared UTF-16', names: /JSON/, make: () => ({ body: Buffer.from(baseText), headers: { 'Content-Type': 'application/json; charset=utf-16le' } }) });
    for (const encoding of ['gzip', 'deflate', 'br']) {
      out.push({ kind: 'encoding', label: `plain body declared ${encoding}`, names: /Content-Encoding/, make: () => ({ body: Buffer.from(baseText), headers: { ...JSON_HEADERS, 'Content-Encoding': encoding } }) });
    }
    for (const encoding of ['compress', 'x-unknown', 'gzip, gzip']) {
      out.push({ kind: 'encoding', label: `Content-Encoding ${encoding}`, names: null, expect: 415, make: () => ({ body: Buffer.from(baseText), headers: { ...JSON_HEADERS, 'Content-Encoding': encoding } }) });
    }
    out.push({ kind: 'encoding', label: 'gzip body', names: null, make: () => ({ body: zlib.gzipSync(baseText), headers: { ...JSON_HEADERS, 'Content-Encoding': 'gzip' } }) });
    const padded = (rnd: Random) => `{"pad":"${'o'.repeat(between(rnd, limit + 1, limit + limit / 2))}"}`;
    out.push({ kind: 'oversize', label: 'body over the limit', names: null, expect: 413, make: (rnd) => ({ body: Buffer.from(padded(rnd)), headers: JSON_HEADERS }) });
    out.push({ kind: 'oversize', label: 'chunked body over the limit', names: null, expect: 413, make: (rnd) => ({ body: Buffer.from(padded(rnd)), headers: { ...JSON_HEADERS, 'Transfer-Encoding': 'chunked' } }) });
    out.push({ kind: 'oversize', label: 'gzip body inflating over the limit', names: null, expect: 413, make: (rnd) => ({ body: zlib.gzipSync(padded(rnd)), headers: { ...JSON_HEADERS, 'Content-Encoding': 'gzip' } }) });
  }
  if (op.http.body === 'bytes') {
    for (const type of ['image/png', 'application/octet-stream', 'text/html', '', 'application/json']) {
      out.push({ kind: 'file-bytes', label: `random file as ${JSON.stringify(type)}`, names: null, make: (rnd) => ({ body: Buffer.from(Array.from({ length: between(rnd, 0, 4096) }, () => between(rnd, 0, 255))), headers: type ? { 'Content-Type': type } : ({} as Record<string, string>) }) });
    }
    out.push({ kind: 'file-bytes', label: 'gzip-encoded file', names: null, expect: 415, make: () => ({ body: zlib.gzipSync('abc'), headers: { 'Content-Type': 'image/png', 'Content-Encoding': 'gzip' } }) });
  }
  for (const name of op.http.pathParams) {
    for (const escape of ['%', '%zz', '%ff', '%c3%28', '%E0%A4%A', 'a%']) {
      out.push({ kind: 'path-escape', label: `${name} = ${escape}`, names: /percent-escape/, make: () => ({ target: render(op, base, undefined, { [name]: escape }).target, headers: JSON_HEADERS, body: good.body }) });
    }
    for (const value of ['%00', '%ED%A0%80', encodeURIComponent('x'.repeat(4000)), '..%2F..%2Fetc', '%F0%9F%92%A9', encodeURIComponent(randomUUID().toUpperCase()), '0']) {
      out.push({ kind: 'path-value', label: `${name} = ${value.slice(0, 20)}`, names: new RegExp(`${escapeRe(name)}|percent-escape|U\\+0000|surrogate`), make: () => ({ target: render(op, base, undefined, { [name]: value }).target, headers: JSON_HEADERS, body: good.body }) });
    }
  }
  if (!json) {
    const fields = Object.keys(asSchema(op.input).properties ?? {}).filter((k) => !op.http.pathParams.includes(k));
    const sep = good.target.includes('?') ? '&' : '?';
    // A file route's query goes with a file: without one, "the upload is empty" would be the (right) answer.
    const fileBody = op.http.body === 'bytes' ? { body: Buffer.from('not a known file type'), headers: { 'Content-Type': 'application/octet-stream' } } : { headers: {} as Record<string, string> };
    for (const field of fields) {
      for (const value of ['abc', '1.5', '-1', '1e400', '', '%', '%zz', '%00', '%ED%A0%80', encodeURIComponent('q'.repeat(5000)), 'true']) {
        out.push({ kind: 'query', label: `?${field}=${value.slice(0, 20)}`, names: new RegExp(`${escapeRe(field)}|percent-escape|U\\+0000|surrogate`), make: () => ({ target: `${op.http.path.replace(/:(\w+)/g, () => randomUUID())}?${field}=${value}`, ...fileBody }) });
      }
      out.push({ kind: 'query', label: `?${field} twice`, names: new RegExp(escapeRe(field)), make: () => ({ target: `${op.http.path.replace(/:(\w+)/g, () => randomUUID())}?${field}=1&${field}=2`, ...fileBody }) });
    }
    for (const key of ['__proto__', 'constructor', 'prototype', 'zz_unknown', '%', 'a%zz', '__proto__[x]']) {
      out.push({ kind: 'query', label: `?${key}=1`, names: /unknown field|percent-escape/, make: () => ({ target: `${good.target}${sep}${key}=1`, ...fileBody }) });
    }
  }
  return out;
}

/** The example input of a declaration, path parameters naming nothing that exists (so a valid change is 404, never a real action). */
export function exampleInput(op: Operation): unknown {
  return exampleOf(asSchema(op.input));
}

/**
 * `count` hostile requests for `op`: every mutation once (in a shuffled order) while the count
 * allows, then drawn at random; about one in twenty without a token or with a broken one.
 */
export function hostileRequests(name: string, op: Operation, count: number, rnd: Random, ctx: GeneratorContext): HostileRequest[] {
  const base = exampleInput(op);
  const json = carriesBody(op) && op.http.body !== 'bytes';
  // Outside a JSON body (paths, queries) a huge value is a URL Node's parser refuses (431) before the service sees it.
  const schemaMuts = schemaMutations(op, base, ctx.bodyLimitBytes).filter((m) => json || (m.kind !== 'huge' && m.kind !== 'nesting'));
  const wires = wireMutations(op, base, ctx.bodyLimitBytes);
  const total = schemaMuts.length + wires.length;
  const order = Array.from({ length: total }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i -= 1) {
    const j = Math.floor(rnd() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const token = ctx.tokenFor(op);
  const out: HostileRequest[] = [];
  for (let n = 0; n < count; n += 1) {
    const index = n < total ? order[n]! : Math.floor(rnd() * total);
    let request: HostileRequest;
    if (index < schemaMuts.length) {
      const mutation = schemaMuts[index]!;
      const made = mutation.apply(rnd, base);
      const { target, body } = render(op, made.input, made.raw);
      const view = serverView(op, target, body);
      const validInput = !view.malformed && view.input !== undefined && validate(op.input, view.input).ok;
      const headers: Record<string, string> = body ? { ...JSON_HEADERS } : op.http.body === 'bytes' ? { 'Content-Type': 'application/octet-stream' } : {};
      const fileBody = op.http.body === 'bytes' ? Buffer.from('not a known file type') : body;
      request = { endpoint: name, method: op.http.method, target, body: fileBody, headers, kind: mutation.kind, label: mutation.label, names: view.malformed ? BAD_ESCAPE : validInput ? null : made.names, expect: view.malformed ? 400 : undefined };
    } else {
      const wire = wires[index - schemaMuts.length]!;
      const made = wire.make(rnd);
      const target = made.target ?? render(op, base, undefined).target;
      // A path or query value the service reads as valid (`0` as an id) leaves nothing of it to name.
      const fieldLevel = wire.kind === 'path-value' || wire.kind === 'query';
      const view = fieldLevel ? serverView(op, target, made.body) : null;
      const names = view && !view.malformed && view.input !== undefined && validate(op.input, view.input).ok ? null : wire.names;
      request = { endpoint: name, method: op.http.method, target, body: made.body, headers: made.headers, kind: wire.kind, label: wire.label, names, expect: wire.expect };
    }
    const roll = rnd();
    // The router refuses a path that does not decode before anyone is asked who calls: 400 with or without a token.
    const routed = serverView(op, request.target, undefined);
    if (routed.unroutable) {
      out.push({ ...request, names: null, expect: undefined, headers: { ...request.headers, Authorization: `Bearer ${token}` } });
    } else if (routed.malformed) {
      out.push({ ...request, names: BAD_ESCAPE, expect: 400, headers: { ...request.headers, ...(roll < 0.05 ? {} : { Authorization: `Bearer ${token}` }) } });
    } else if (roll < 0.03) {
      out.push({ ...request, kind: 'no-token', label: `${request.label}, no token`, names: null, expect: op.auth === 'required' ? 401 : undefined });
    } else if (roll < 0.05) {
      const broken = `${token.slice(0, -3)}${pick(rnd, ['aaa', 'ZZZ', '000'])}`;
      out.push({ ...request, kind: 'bad-token', label: `${request.label}, broken token`, headers: { ...request.headers, Authorization: `Bearer ${broken}` }, names: null, expect: op.auth === 'required' ? 401 : undefined });
    } else {
      out.push({ ...request, headers: { ...request.headers, Authorization: `Bearer ${token}` } });
    }
  }
  return out;
}
