import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { blockedReason, fetchableUrlProblem, type AddressAllowList } from '../../platform/address-policy';
import { AppError } from '../../platform/app-error';
import { raceAbort } from '../abortable';
import { mimeOfContentType, sniffMimeType } from './sniff-mime';

/** One address a host name resolves to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses (default: `dns.lookup(host, { all: true })`). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface SafeFetchOptions {
  /** Aborts the fetch (the run stopped); the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Largest body accepted; a larger Content-Length or body is refused (`validation_failed`). */
  maxBytes: number;
  /** Time for the whole fetch, every redirect and the body included; then `unavailable`. */
  timeoutMs: number;
  /** Redirects followed, each re-checked (default 3); one more is refused. */
  maxRedirects?: number;
  /** Exceptions to the address rules (`FETCH_ALLOW_PRIVATE`, development only). */
  allow?: AddressAllowList;
  /** Replaces DNS (tests). */
  resolve?: Resolver;
}

/** A fetched file: its bytes, its media type (sniffed, else the server's, else octet-stream), the URL it came from. */
export interface FetchedFile {
  bytes: Buffer;
  mimeType: string;
  finalUrl: string;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const systemResolve: Resolver = async (hostname) =>
  (await dns.promises.lookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

/**
 * Fetches a caller-given URL without letting it reach the service's own network (SSRF):
 *
 * - only `http:`/`https:`, no credentials in the URL;
 * - the host is resolved once; if any of its addresses is loopback, private, link-local,
 *   unique-local, metadata or otherwise not public (and not allow-listed), nothing is sent;
 * - the connection goes to that vetted address (a `lookup` that returns it: no second DNS
 *   answer can rebind it), with the URL's own Host header and TLS server name;
 * - redirects are followed only after the same checks on each hop, at most `maxRedirects`;
 * - the body is capped at `maxBytes` while it streams, the whole fetch at `timeoutMs`.
 *
 * Refusals are `validation_failed` naming the host and the reason; timeouts, unreachable hosts
 * and 5xx answers are `unavailable`.
 */
export async function safeFetch(url: string, options: SafeFetchOptions): Promise<FetchedFile> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const maxRedirects = options.maxRedirects ?? 3;
  let current = checkUrl(url, 0, INPUT_URL);
  try {
    for (let hop = 0; ; hop += 1) {
      const target = await vet(current, hop, INPUT_URL, options, signal);
      const response = await send(current, target, signal);
      const status = response.statusCode ?? 0;
      if (REDIRECTS.has(status)) {
        response.destroy();
        if (hop >= maxRedirects) throw refused(current, hop, INPUT_URL, `redirects more than ${maxRedirects} times`);
        const location = response.headers.location;
        if (!location) throw refused(current, hop, INPUT_URL, `answered ${status} without a Location`);
        // A Location that does not parse is refused as such (validation_failed), not taken for an unreachable host.
        current = checkUrl(URL.canParse(location, current.href) ? new URL(location, current).href : location, hop + 1, INPUT_URL);
        continue;
      }
      if (status >= 500) {
        response.destroy();
        throw new AppError({ code: 'unavailable', message: `${where(current, hop, INPUT_URL)} answered ${status}; try again later` });
      }
      if (status < 200 || status > 299) {
        response.destroy();
        throw refused(current, hop, INPUT_URL, `answered ${status}`);
      }
      const bytes = await readCapped(response, current, hop, options.maxBytes);
      const mimeType = sniffMimeType(bytes) ?? mimeOfContentType(response.headers['content-type']) ?? 'application/octet-stream';
      return { bytes, mimeType, finalUrl: current.href };
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    if (options.signal?.aborted) throw options.signal.reason;
    if (timeout.aborted) {
      throw new AppError({ code: 'unavailable', message: `fetching the input URL on ${current.host} took longer than ${options.timeoutMs} ms`, cause: err });
    }
    const code = (err as { code?: string }).code;
    throw new AppError({ code: 'unavailable', message: `${where(current, -1, INPUT_URL)} could not be reached${code ? ` (${code})` : ''}`, cause: err });
  }
}

/** What the messages call the URL: a run's input URL (safeFetch), or a webhook's (safePost). */
const INPUT_URL = 'the input URL';
const WEBHOOK_URL = 'the webhook URL';

/** How messages name the URL being fetched: the URL (`label`), or its nth redirect, by host. */
function where(url: URL, hop: number, label: string): string {
  return hop > 0 ? `${label}'s redirect ${hop} (host "${url.hostname}")` : `${label}'s host "${url.hostname}"`;
}

function refused(url: URL, hop: number, label: string, reason: string): AppError {
  return new AppError({ code: 'validation_failed', message: `${where(url, hop, label)} ${reason}`, details: { host: url.hostname } });
}

function checkUrl(raw: string, hop: number, label: string): URL {
  const problem = fetchableUrlProblem(raw);
  if (problem) {
    const what = hop > 0 ? `${label}'s redirect ${hop}` : label;
    throw new AppError({ code: 'validation_failed', message: `${what} ${problem}` });
  }
  return new URL(raw);
}

function portOf(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/** The bare host of a URL (IPv6 literals without their brackets). */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/** Resolves the URL's host once and returns the address to connect to, after checking all of them. */
async function vet(url: URL, hop: number, label: string, options: Pick<SafeFetchOptions, 'resolve' | 'allow'>, signal: AbortSignal): Promise<ResolvedAddress> {
  const host = bareHost(url);
  let addresses: ResolvedAddress[];
  const literal = net.isIP(host);
  if (literal) {
    addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await raceAbort((options.resolve ?? systemResolve)(host), signal);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ENOTFOUND' || code === 'ENODATA') throw refused(url, hop, label, 'does not resolve to any address');
      throw err;
    }
    if (addresses.length === 0) throw refused(url, hop, label, 'does not resolve to any address');
  }
  const port = portOf(url);
  for (const { address } of addresses) {
    const reason = blockedReason(address);
    if (reason && !options.allow?.allows(host, address, port)) {
      const verb = literal ? 'is' : 'resolves to';
      throw refused(url, hop, label, `${verb} ${address}, ${reason}; the service fetches only public addresses`);
    }
  }
  return addresses[0]!;
}

/** What {@link safePost} got: the status and up to 1 KB of the body (for the delivery's record). */
export interface PostAnswer {
  status: number;
  body: string;
}

/**
 * POSTs `body` to a caller-given URL under the same address rules as {@link safeFetch} (webhook
 * deliveries, docs/webhooks.md): the host resolved once and vetted, the connection made to that
 * address, no redirect followed (a 3xx is an answer like any other, as Standard Webhooks asks),
 * the whole exchange within `timeoutMs`. Refusals are `validation_failed`; a host that cannot be
 * reached or a timeout is `unavailable`.
 */
export async function safePost(url: string, options: Omit<SafeFetchOptions, 'maxBytes' | 'maxRedirects'> & { body: string; headers: Record<string, string> }): Promise<PostAnswer> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const target = checkUrl(url, 0, WEBHOOK_URL);
  try {
    const address = await vet(target, 0, WEBHOOK_URL, options, signal);
    const response = await send(target, address, signal, { method: 'POST', headers: { 'content-type': 'application/json', ...options.headers }, body: options.body });
    let body = '';
    for await (const chunk of response) {
      if (body.length < 1024) body += (chunk as Buffer).toString('utf8');
    }
    return { status: response.statusCode ?? 0, body: body.slice(0, 1024) };
  } catch (err) {
    if (err instanceof AppError) throw err;
    if (options.signal?.aborted) throw options.signal.reason;
    if (timeout.aborted) throw new AppError({ code: 'unavailable', message: `${target.host} did not answer within ${options.timeoutMs} ms`, cause: err });
    const code = (err as { code?: string }).code;
    throw new AppError({ code: 'unavailable', message: `${target.host} could not be reached${code ? ` (${code})` : ''}`, cause: err });
  }
}

/** Sends the request (a GET unless told otherwise) to the vetted address; resolves with the response once its headers arrive. */
function send(url: URL, target: ResolvedAddress, signal: AbortSignal, message?: { method: 'POST'; headers: Record<string, string>; body: string }): Promise<http.IncomingMessage> {
  const host = bareHost(url);
  // Connects to the vetted address whatever name it is asked about: no second resolution.
  const lookup = ((_name: string, opts: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    if (opts?.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  }) as unknown as net.LookupFunction;
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request({
      method: message?.method ?? 'GET',
      hostname: host,
      port: portOf(url),
      path: `${url.pathname}${url.search}`,
      headers: message
        ? { host: url.host, 'user-agent': 'svc-webhooks/1', 'content-length': String(Buffer.byteLength(message.body)), ...message.headers }
        : { host: url.host, 'user-agent': 'svc-input-fetch/1', accept: '*/*', 'accept-encoding': 'identity' },
      agent: false,
      lookup,
      signal,
      ...(url.protocol === 'https:' && !net.isIP(host) ? { servername: host } : {}),
    });
    request.once('response', resolve);
    request.once('error', reject);
    request.end(message?.body);
  });
}

async function readCapped(response: http.IncomingMessage, url: URL, hop: number, maxBytes: number): Promise<Buffer> {
  const declared = Number(response.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    response.destroy();
    throw refused(url, hop, INPUT_URL, `sends ${declared} bytes; the limit is ${maxBytes} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      response.destroy();
      throw refused(url, hop, INPUT_URL, `sends more than ${maxBytes} bytes, the limit`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
