/** `/openapi.json`: OpenAPI 3.1, generated from the route table whose schemas validate the requests. */
import type { JsonObject } from '../core/json.js';
import { ERROR, type RouteSpec, type Schema } from './schemas.js';

/** Whether a body schema refuses `{}`: it names a required field (or requires one of several). */
function bodyRequired(schema: Schema): boolean {
  const required = schema['required'];
  if (Array.isArray(required) && required.length > 0) return true;
  const oneOf = schema['oneOf'] ?? schema['anyOf'];
  return Array.isArray(oneOf) && oneOf.length > 0 && oneOf.every((b) => typeof b === 'object' && b !== null && !Array.isArray(b) && bodyRequired(b));
}

/**
 * The A2A routes of `baton serve --a2a` (a2a/routes.ts), which the SDK's transport handler answers rather
 * than the route table: the card, and the JSON-RPC endpoint (the A2A methods, SSE for the streaming ones).
 * Their bodies are the A2A protocol's, checked by the SDK; the envelope is JSON-RPC 2.0.
 */
export function a2aPaths(a2aPath: string, cardPath: string): Record<string, Record<string, JsonObject>> {
  const rpcAnswer = { type: 'object', required: ['jsonrpc'], properties: { jsonrpc: { const: '2.0' }, id: { type: ['string', 'integer', 'null'] }, result: {}, error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'integer' }, message: { type: 'string' }, data: {} } } } };
  const error = (description: string): JsonObject => ({ description, content: { 'application/json': { schema: ERROR } } });
  return {
    [cardPath]: {
      get: {
        operationId: 'a2aAgentCard',
        summary: 'the A2A agent card: one skill per registered workflow (public, as discovery is)',
        responses: { '200': { description: 'the agent card (A2A 1.0)', content: { 'application/json': { schema: { type: 'object', required: ['name', 'supportedInterfaces', 'skills'] } } } } },
        security: [],
      },
    },
    [a2aPath]: {
      post: {
        operationId: 'a2a',
        summary: 'A2A 1.0 JSON-RPC: SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask (SendMessage, SendStreamingMessage and CancelTask need an operator or admin key)',
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { type: 'object', required: ['jsonrpc', 'method'], properties: { jsonrpc: { const: '2.0' }, id: { type: ['string', 'integer', 'null'], description: 'without it, a notification: carried out, answered 204' }, method: { type: 'string', minLength: 1 }, params: { type: 'object' } } } } },
        },
        responses: {
          '200': { description: 'a JSON-RPC response (errors included: a refused request is a JSON-RPC error), or an SSE stream of them for SendStreamingMessage and SubscribeToTask', content: { 'application/json': { schema: rpcAnswer }, 'text/event-stream': { schema: { type: 'string' } } } },
          '204': { description: 'a notification (no `id`): carried out, never answered' },
          '401': error('no key, or an unknown key'),
          '403': { description: 'the key’s roles do not allow the method (a JSON-RPC error, or an error object for a notification)', content: { 'application/json': { schema: { oneOf: [rpcAnswer, ERROR] } } } },
          '413': error('the body is larger than the server’s limit'),
        },
        'x-baton-action': 'read',
      },
    },
  };
}

export function openApiDocument(routes: readonly RouteSpec[], version: string, extra: Record<string, Record<string, JsonObject>> = {}): JsonObject {
  const paths: Record<string, Record<string, JsonObject>> = {};
  for (const r of routes) {
    const parameters: JsonObject[] = [];
    for (const [name, schema] of Object.entries(r.params ?? {})) parameters.push({ name, in: 'path', required: true, schema });
    const q = r.query?.['properties'] as Record<string, JsonObject> | undefined;
    for (const [name, schema] of Object.entries(q ?? {})) parameters.push({ name, in: 'query', required: false, schema, ...(typeof schema['description'] === 'string' ? { description: schema['description'] } : {}) });
    if (r.responses['200']?.resumable) parameters.push({ name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', pattern: '^[0-9]+$' }, description: 'resume a stream after this seq' });
    const responses: JsonObject = {};
    for (const [status, resp] of Object.entries(r.responses)) {
      const content: JsonObject = {};
      if (resp.schema) content['application/json'] = { schema: resp.schema };
      if (resp.sse) content['text/event-stream'] = { schema: { type: 'string' } };
      if (r.operationId === 'metrics' && status === '200') content['text/plain'] = { schema: { type: 'string' } };
      if (resp.raw) content['application/octet-stream'] = { schema: { type: 'string', contentMediaType: 'application/octet-stream' } };
      responses[status] = { description: resp.description, ...(Object.keys(content).length > 0 ? { content } : {}) };
    }
    if (r.body) responses['413'] = { description: 'the body is larger than the server’s limit', content: { 'application/json': { schema: ERROR } } };
    if (r.body) responses['415'] = { description: 'the body is not application/json', content: { 'application/json': { schema: ERROR } } };
    if (r.rawBody) responses['415'] = { description: 'the body is compressed (a Content-Encoding other than identity)', content: { 'application/json': { schema: ERROR } } };
    // every route behind a key reads or writes the store, whose failure is a 503 (docs/server.md#errors)
    if (r.action !== 'public' && !responses['503']) responses['503'] = { description: 'the store does not answer (`store`, `store-unreachable`, `store-locked`); also `server-stopping` while the server stops', content: { 'application/json': { schema: ERROR } } };
    const op: JsonObject = {
      operationId: r.operationId,
      summary: r.summary,
      ...(parameters.length > 0 ? { parameters } : {}),
      // an empty body is `{}` (http.ts): the body is required only when `{}` would not do
      ...(r.body ? { requestBody: { required: bodyRequired(r.body), content: { 'application/json': { schema: r.body } } } } : {}),
      ...(r.rawBody ? { requestBody: { required: true, content: { [r.rawBody]: { schema: { type: 'string', contentMediaType: r.rawBody } } } } } : {}),
      responses,
      ...(r.action === 'public' ? { security: [] } : { 'x-baton-action': r.action }),
    };
    (paths[r.path] ??= {})[r.method] = op;
  }
  for (const [path, item] of Object.entries(extra)) paths[path] = { ...paths[path], ...item };
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: { title: 'Baton', version, description: 'Runs, gates and live event streams of a Baton server (`baton serve`). See docs/server.md.' },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'an API key (BATON_API_KEYS or --keys FILE); `X-API-Key: KEY` works too' } },
      schemas: { Error: ERROR },
    },
    security: [{ bearer: [] }],
    paths,
  };
}
