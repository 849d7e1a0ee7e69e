import type { TSchema } from '@sinclair/typebox';
import { CALL_OPTIONS } from './call-options';
import { ERROR_CODES } from './error-codes';
import type { Operation } from './operation';
import { OPERATIONS } from './registry';
import { ROUTES } from './route-registry';
import { ErrorBodySchema } from './schemas/error-body';
import { RunEventSchema } from './schemas/run-event';

type JsonObject = Record<string, unknown>;

/** A plain JSON copy of a schema (TypeBox's symbol keys dropped). */
function plain(schema: TSchema): JsonObject {
  return JSON.parse(JSON.stringify(schema)) as JsonObject;
}

function parameters(op: Operation): JsonObject[] {
  const properties = (op.input as unknown as { properties: Record<string, TSchema> }).properties;
  const required = new Set((op.input as unknown as { required?: string[] }).required ?? []);
  const out: JsonObject[] = [];
  for (const param of op.http.pathParams) {
    out.push({ name: param, in: 'path', required: true, schema: plain(properties[param]!) });
  }
  for (const name of op.http.options ?? []) {
    const option = CALL_OPTIONS[name];
    out.push({ name: option.header, in: 'header', required: false, description: option.description, schema: plain(option.schema) });
  }
  // A route whose body is a file takes its other input in the query.
  if (!carriesBody(op) || op.http.body === 'bytes' || op.http.body === 'empty') {
    for (const [key, schema] of Object.entries(properties)) {
      if (op.http.pathParams.includes(key)) continue;
      out.push({ name: key, in: 'query', required: required.has(key), schema: plain(schema) });
    }
  }
  return out;
}

/** POST and PATCH carry their input (less the path's) in the body; GET and DELETE in the query. */
export function carriesBody(op: Operation): boolean {
  return op.http.method === 'POST' || op.http.method === 'PATCH';
}

function requestBody(op: Operation): JsonObject {
  if (!carriesBody(op)) return {};
  if (op.http.body === 'bytes') return { requestBody: { required: true, content: { '*/*': { schema: { type: 'string', format: 'binary' } } } } };
  if (op.http.body === 'empty') return {};
  return { requestBody: { required: true, content: { 'application/json': { schema: plain(op.input) } } } };
}

/**
 * The OpenAPI 3.1 document of the HTTP surface: one loop over the five operations (marked with
 * their MCP tool) and the routes beside them.
 */
export function buildOpenApiDocument(options: { serverUrl: string; version: string }): JsonObject {
  const paths: Record<string, JsonObject> = {};
  const entries: [Operation, boolean][] = [...Object.values(OPERATIONS).map((op): [Operation, boolean] => [op, true]), ...Object.values(ROUTES).map((op): [Operation, boolean] => [op, false])];
  for (const [op, isTool] of entries) {
    const name = op.name;
    const path = op.http.path.replace(/:(\w+)/g, '{$1}');
    const errorResponses = Object.fromEntries(
      [...new Set(op.errors.map((code) => ERROR_CODES[code].status))].map((status) => [
        String(status),
        { description: op.errors.filter((c) => ERROR_CODES[c].status === status).join(', '), content: { 'application/json': { schema: plain(ErrorBodySchema) } } },
      ]),
    );
    const status = op.http.status ?? 200;
    const success =
      op.response === 'sse'
        ? { description: 'A stream of run events, each `id: <seq>` and `data: <json>`, ending with `data: [DONE]`', content: { 'text/event-stream': { schema: plain(RunEventSchema) } } }
        : status === 204
          ? { description: 'Done; no body' }
          : { description: 'OK', content: { 'application/json': { schema: plain(op.output) } } };
    paths[path] = {
      ...(paths[path] ?? {}),
      [op.http.method.toLowerCase()]: {
        operationId: name,
        summary: op.summary,
        tags: [name.split('.')[0]],
        security: op.auth === 'optional' ? [{}, { bearer: [] }] : [{ bearer: [] }],
        'x-scope': op.scope,
        ...(op.kinds ? { 'x-token-kinds': op.kinds } : {}),
        ...(isTool ? { 'x-mcp-tool': op.mcpTool } : {}),
        parameters: parameters(op),
        ...requestBody(op),
        responses: { [String(status)]: success, ...errorResponses },
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
