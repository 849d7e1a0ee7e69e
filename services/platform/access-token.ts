import { createHash, randomBytes } from 'node:crypto';
import type { TokenKind } from '../contract';

/**
 * Access tokens: `<prefix>_<body><checksum>`.
 *
 * - prefix: `svc` for personal access tokens, `svcs` for device-flow session tokens, `svcb` for
 *   the web editor's browser sessions (sent as a cookie, never as a bearer token), `svco` for the
 *   access tokens of OAuth clients (MCP clients); `svcr` for their refresh tokens, which are
 *   not access tokens (`parseToken` refuses them; `parseRefreshToken` reads them);
 * - body: 43 base62 characters carrying 32 random bytes (256 bits);
 * - checksum: 6 base62 characters of CRC-32 over `<prefix>_<body>`, so a mistyped or truncated
 *   token is rejected without a database lookup (the idea GitHub uses for its tokens).
 *
 * Only the SHA-256 of the whole token is stored. The first characters of the body are kept as a
 * display prefix so a user can recognise a token in a list without the secret being stored.
 */

export type { TokenKind };

const PREFIXES: Record<TokenKind, string> = { personal: 'svc', session: 'svcs', browser: 'svcb', oauth: 'svco' };
const KINDS_BY_PREFIX = new Map<string, TokenKind>(Object.entries(PREFIXES).map(([kind, prefix]) => [prefix, kind as TokenKind]));
const REFRESH_PREFIX = 'svcr';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 43;
const CHECKSUM_LENGTH = 6;
const DISPLAY_LENGTH = 8;
const TOKEN_PATTERN = /^(svc|svcs|svcb|svco|svcr)_([0-9A-Za-z]+)$/;

export interface IssuedToken {
  /** The full secret: shown to its owner exactly once. */
  value: string;
  /** SHA-256 hex of `value`: the only form that is stored. */
  hash: string;
  /** Non-secret display prefix, e.g. `svc_4fQx91Ab`. */
  displayPrefix: string;
  kind: TokenKind;
}

export type TokenShapeProblem = 'unknown_prefix' | 'bad_length' | 'bad_checksum';

export type ParsedToken =
  | { ok: true; kind: TokenKind; hash: string; displayPrefix: string }
  | { ok: false; problem: TokenShapeProblem };

function toBase62(bytes: Buffer, length: number): string {
  let n = BigInt('0x' + (bytes.length ? bytes.toString('hex') : '0'));
  let out = '';
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(length, '0').slice(-length);
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[i] = c >>> 0;
  }
  return table;
})();

function crc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, 'utf8')) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function checksumOf(head: string): string {
  const buf = Buffer.alloc(4);
  buf.writeUInt32BE(crc32(head));
  return toBase62(buf, CHECKSUM_LENGTH);
}

/** SHA-256 hex of a token value: the lookup key in the token tables. */
export function hashToken(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

function issueWithPrefix(prefix: string): { value: string; hash: string; displayPrefix: string } {
  const head = `${prefix}_${toBase62(randomBytes(32), BODY_LENGTH)}`;
  const value = head + checksumOf(head);
  return { value, hash: hashToken(value), displayPrefix: head.slice(0, prefix.length + 1 + DISPLAY_LENGTH) };
}

/** Creates a new random token of the given kind. */
export function issueToken(kind: TokenKind): IssuedToken {
  return { ...issueWithPrefix(PREFIXES[kind]), kind };
}

/** A new OAuth refresh token (`svcr_…`, same format): exchanged at the token endpoint, never a bearer token. */
export function issueRefreshToken(): { value: string; hash: string } {
  const { value, hash } = issueWithPrefix(REFRESH_PREFIX);
  return { value, hash };
}

type Shape = { ok: true; prefix: string; hash: string; displayPrefix: string } | { ok: false; problem: TokenShapeProblem };

function checkShape(value: string): Shape {
  const match = TOKEN_PATTERN.exec(value);
  if (!match) return { ok: false, problem: 'unknown_prefix' };
  const prefix = match[1]!;
  const rest = match[2]!;
  if (rest.length !== BODY_LENGTH + CHECKSUM_LENGTH) return { ok: false, problem: 'bad_length' };
  const head = `${prefix}_${rest.slice(0, BODY_LENGTH)}`;
  if (checksumOf(head) !== rest.slice(BODY_LENGTH)) return { ok: false, problem: 'bad_checksum' };
  return { ok: true, prefix, hash: hashToken(value), displayPrefix: head.slice(0, prefix.length + 1 + DISPLAY_LENGTH) };
}

/** Checks an access token's shape and checksum without any I/O (a refresh token is `unknown_prefix`). */
export function parseToken(value: string): ParsedToken {
  const shape = checkShape(value);
  if (!shape.ok) return shape;
  const kind = KINDS_BY_PREFIX.get(shape.prefix);
  if (!kind) return { ok: false, problem: 'unknown_prefix' };
  return { ok: true, kind, hash: shape.hash, displayPrefix: shape.displayPrefix };
}

/** Checks a refresh token's shape and checksum; its hash is the lookup key. */
export function parseRefreshToken(value: string): { ok: true; hash: string } | { ok: false; problem: TokenShapeProblem } {
  const shape = checkShape(value);
  if (!shape.ok) return shape;
  return shape.prefix === REFRESH_PREFIX ? { ok: true, hash: shape.hash } : { ok: false, problem: 'unknown_prefix' };
}
