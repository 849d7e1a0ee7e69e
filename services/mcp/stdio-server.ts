import type { Readable, Writable } from 'node:stream';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Client } from '../sdk/src/index';
import { buildServer } from './build-server';
import { SdkToolCaller } from './sdk-tool-caller';

/** What the local stdio server is configured with (SPEC Authentication: env only). */
export type StdioSettings = { ok: true; token: string; baseUrl: string | undefined } | { ok: false; message: string };

/** `SERVICE_TOKEN` (required) and `SERVICE_API_URL` (optional base URL override). */
export function readStdioSettings(env: { readonly SERVICE_TOKEN?: string; readonly SERVICE_API_URL?: string }): StdioSettings {
  const token = env.SERVICE_TOKEN?.trim();
  if (!token) {
    return {
      ok: false,
      message: 'SERVICE_TOKEN is not set: give the MCP server an access token in its environment (create one in the web editor under Settings, API tokens); SERVICE_API_URL optionally sets the API base URL',
    };
  }
  const url = env.SERVICE_API_URL?.trim();
  return { ok: true, token, baseUrl: url ? url.replace(/\/+$/, '') : undefined };
}

export interface StdioServeOptions {
  token: string;
  baseUrl: string | undefined;
  version?: string;
  /** Where logs go: stderr, since stdout carries the protocol. */
  log: (line: string) => void;
  stdin?: Readable;
  stdout?: Writable;
}

/**
 * Serves the five operations as tools named by their dotted names, over stdin and stdout, until
 * stdin ends. The tools call the HTTP API through the SDK, as the given token.
 */
export async function serveStdio(options: StdioServeOptions): Promise<void> {
  const client = new Client({ apiKey: options.token, ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}), headers: { 'user-agent': 'svc-mcp' } });
  const server = buildServer({
    caller: new SdkToolCaller(client),
    naming: 'stdio',
    version: options.version,
    onUnexpected: (err) => options.log(`svc-mcp: unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`),
  });
  const stdin = options.stdin ?? process.stdin;
  const transport = new StdioServerTransport(stdin, options.stdout ?? process.stdout);
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve;
  });
  server.onerror = (err) => options.log(`svc-mcp: ${err.message}`);
  await server.connect(transport);
  options.log(`svc-mcp: serving the five operations and the batch tools as MCP tools over stdio, calling ${client.baseUrl}`);
  // The client closing its end (stdin) ends the server; the transport does not watch for it.
  stdin.on('end', () => void server.close());
  await closed;
}
