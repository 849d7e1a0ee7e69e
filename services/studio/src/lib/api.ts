import { Client } from '../../../sdk/src';

type Transport = Client['transport'];

/**
 * The studio's one connection to the service: the SDK's client on the same origin, under `/api`
 * (SPEC: a deployment serves the API under `/api` of the studio's host). No token: the browser
 * attaches the `svc_session` cookie to same-origin requests, and the server's CSRF guard accepts
 * them because the browser marks them same-origin. Every answer of 400 or more arrives as the
 * SDK's typed error, whose message is the server's own words.
 */
export const client = new Client({ baseUrl: apiBase() });

function apiBase(): string {
  const origin = typeof location === 'undefined' ? 'http://127.0.0.1:8080' : location.origin;
  return `${origin}/api`;
}

/** A JSON call to a route outside the contract's registries (the cookie session's own routes). */
export async function sendJson<T>(transport: Transport, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T | null> {
  const response = await transport.send({
    method,
    path,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  return (await response.json()) as T;
}

/** The message to show for a failed call: the service's words, or what went wrong on the way. */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
