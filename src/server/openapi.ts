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

export function openApiDocument(routes: readonly RouteSpec[], version: string): JsonObject {
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
