import type { TSchema } from '@sinclair/typebox';
import { ERROR_CODES } from './error-codes';
import { OPERATIONS, OP_NAMES } from './registry';
import { ErrorBodySchema } from './schemas/error-body';
import { RunEventSchema } from './schemas/run-event';

type JsonObject = Record<string, unknown>;

/** A plain JSON copy of a schema (TypeBox's symbol keys dropped). */
function plain(schema: TSchema): JsonObject {
  return JSON.parse(JSON.stringify(schema)) as JsonObject;
}

function parameters(name: (typeof OP_NAMES)[number]): JsonObject[] {
  const op = OPERATIONS[name];
  const properties = (op.input as { properties: Record<string, TSchema> }).properties;
  const required = new Set((op.input as { required?: string[] }).required ?? []);
  const out: JsonObject[] = [];
  for (const param of op.http.pathParams) {
    out.push({ name: param, in: 'path', required: true, schema: plain(properties[param]!) });
  }
  if (op.http.method === 'GET') {
    for (const [key, schema] of Object.entries(properties)) {
      if (op.http.pathParams.includes(key)) continue;
      out.push({ name: key, in: 'query', required: required.has(key), schema: plain(schema) });
    }
  }
  return out;
}

/** The OpenAPI 3.1 document of the HTTP surface: one loop over the registry. */
export function buildOpenApiDocument(options: { serverUrl: string; version: string }): JsonObject {
  const paths: Record<string, JsonObject> = {};
  for (const name of OP_NAMES) {
    const op = OPERATIONS[name];
    const path = op.http.path.replace(/:(\w+)/g, '{$1}');
    const errorResponses = Object.fromEntries(
      [...new Set(op.errors.map((code) => ERROR_CODES[code].status))].map((status) => [
        String(status),
        { description: op.errors.filter((c) => ERROR_CODES[c].status === status).join(', '), content: { 'application/json': { schema: plain(ErrorBodySchema) } } },
      ]),
    );
    const success =
      op.response === 'sse'
        ? { description: 'A stream of run events, each `data: <json>`, ending with `data: [DONE]`', content: { 'text/event-stream': { schema: plain(RunEventSchema) } } }
        : { description: 'OK', content: { 'application/json': { schema: plain(op.output) } } };
    paths[path] = {
      ...(paths[path] ?? {}),
      [op.http.method.toLowerCase()]: {
        operationId: name,
        summary: op.summary,
        tags: [name.split('.')[0]],
        security: op.auth === 'optional' ? [{}, { bearer: [] }] : [{ bearer: [] }],
        'x-scope': op.scope,
        'x-mcp-tool': op.mcpTool,
        parameters: parameters(name),
        ...(op.http.method === 'POST' ? { requestBody: { required: true, content: { 'application/json': { schema: plain(op.input) } } } } : {}),
        responses: { '200': success, ...errorResponses },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Workflow execution service', version: options.version },
    servers: [{ url: options.serverUrl }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    paths,
  };
}
