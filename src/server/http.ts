/**
 * The HTTP edge of every route: the caller's key, then its path parameters, query and body checked
 * against the route's schemas, before any handler runs. Nothing is read from or written to the store
 * until a request has passed all of them, so a bad request never writes anything.
 */
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { Context } from 'hono';
import { BatonError } from '../core/errors.js';
import { jsonDepthExceeded, MAX_JSON_DEPTH } from '../core/json-depth.js';
import { jsonSyntaxError, type Json } from '../core/json.js';
import { ANONYMOUS, findKey, mayDo, roleText, type ApiKey, type Principal } from './keys.js';
import type { RouteSpec } from './schemas.js';
import { HttpError, type EdgeOptions } from './http-types.js';
import { compileRoute, issuesOf, type Issue, type RouteValidators } from './validate.js';

export { HttpError, type EdgeOptions };


export interface Request<B = Record<string, Json>> {
  principal: Principal;
  params: Record<string, string>;
  query: Record<string, Json>;
  body: B;
  c: Context;
}


/** A request's header by lower-case name (Hono's `c.req.header`, or a Node request's own). */
type HeaderOf = (name: string) => string | undefined;

/** The presented key: `Authorization: Bearer KEY`, else `X-API-Key: KEY`. */
function presentedKey(header: HeaderOf): string | undefined {
  const auth = header('authorization');
  if (auth !== undefined) {
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(auth);
    return m ? m[1] : '';
  }
  return header('x-api-key');
}

export function authenticate(c: Context, spec: RouteSpec, opts: EdgeOptions): Principal {
  return authenticateWith((name) => c.req.header(name), nodeIncoming(c)?.socket, spec, opts);
}

function authenticateWith(header: HeaderOf, socket: object | undefined, spec: RouteSpec, opts: EdgeOptions): Principal {
  if (opts.keys.length === 0) return ANONYMOUS;
  if (spec.action === 'public') {
    // no key needed; one that is known says who reads (/health shows a store's failure to readers only)
    const presented = presentedKey(header);
    const known = presented ? knownKey(socket, opts.keys, presented) : undefined;
    return known ? { name: known.name, roles: known.roles, anonymous: false } : { name: 'public', roles: [], anonymous: false };
  }
  const key = presentedKey(header);
  if (key === undefined) throw new HttpError(401, 'unauthorized', 'an API key is required: Authorization: Bearer KEY (or X-API-Key: KEY)');
  const found = key === '' ? undefined : knownKey(socket, opts.keys, key);
  if (!found) throw new HttpError(401, 'unauthorized', 'the API key is not known to this server');
  const principal: Principal = { name: found.name, roles: found.roles, anonymous: false };
  if (!mayDo(principal, spec.action)) throw new HttpError(403, 'forbidden', `key \`${found.name}\` (${found.roles.map(roleText).join(', ')}) may not ${spec.action === 'read' ? 'read' : spec.action === 'agent' ? 'act as an agent' : spec.action} here: ${spec.method.toUpperCase()} ${spec.path} needs ${needs(spec.action)}`);
  return principal;
}

/**
 * The key a keep-alive connection matched last: a remote agent presents the same key on every call of
 * its connection, and hashing and looking it up each time cost about 8 µs a call (a profile of
 * bench/remote.bench.ts). Only a match is kept, for as long as the connection lives (the raw header
 * is held by the request anyway), and only for the same key list.
 */
const matchedOn = new WeakMap<object, { presented: string; keys: readonly ApiKey[]; n: number; found: ApiKey }>();

function knownKey(socket: object | undefined, keys: readonly ApiKey[], presented: string): ApiKey | undefined {
  const last = socket ? matchedOn.get(socket) : undefined;
  if (last && last.presented === presented && last.keys === keys && last.n === keys.length) return last.found;
  const found = findKey(keys, presented);
  if (found && socket) matchedOn.set(socket, { presented, keys, n: keys.length, found });
  return found;
}

function needs(action: RouteSpec['action']): string {
  switch (action) {
    case 'read':
      return 'reader, operator or admin';
    case 'admin':
      return 'admin';
    case 'public':
      return 'no key';
    case 'agent':
      return 'an agent:<id> key or admin';
    default:
      return 'operator or admin';
  }
}

/** Checks a request against its route and hands the handler what it needs. */
export function edge(spec: RouteSpec, opts: EdgeOptions, handler: (r: Request) => Promise<Response>): (c: Context) => Promise<Response> {
  // compiled at the route's first request: all of them at once cost `baton serve` 0.3 s before its port opened
  let compiled: RouteValidators | undefined;
  return async (c) => {
    const principal = authenticate(c, spec, opts);
    const v = (compiled ??= compileRoute(spec, opts.compiler));
    const params = c.req.param() as Record<string, string>;
    if (v.params && !v.params(params)) throw invalid(issuesOf(v.params.errors, 'params'), 'path');
    const query: Record<string, Json> = { ...c.req.query() };
    const names = Object.keys(query);
    if (names.length > 0) {
      // a parameter given twice would be read as its first value, the rest dropped unchecked
      const all = c.req.queries();
      for (const k of names) {
        const n = all[k]?.length ?? 1;
        if (n > 1) throw new HttpError(400, 'invalid-request', `the query parameter ${k.slice(0, 60)} is given ${n} times; give it once (a list is comma-separated: ${k.slice(0, 60)}=a,b)`, { issues: [{ path: `?${k.slice(0, 60)}`, message: `given ${n} times` }] });
      }
    }
    if (v.query) {
      const issues = v.query(query);
      if (issues.length > 0) throw invalid(issues, 'query');
    } else if (names.length > 0) throw new HttpError(400, 'invalid-request', `${spec.method.toUpperCase()} ${spec.path} takes no query parameters, got \`${names[0]!.slice(0, 60)}\``, { issues: [{ path: `?${names[0]!.slice(0, 60)}`, message: 'unknown query parameter' }] });
    let body: Record<string, Json> = {};
    if (spec.body && v.body) {
      body = await readJsonBody(c, opts.bodyLimit);
      if (!v.body(body)) throw invalid(issuesOf(v.body.errors, 'body', spec.body), 'body');
    } else if (spec.method === 'post') await readJsonBody(c, opts.bodyLimit);
    // a PUT's body is raw bytes, read by its handler as they come (rawBody)
    return handler({ principal, params, query, body, c });
  };
}

/** What a handler of the Node fast path gets: a Request without Hono's context. */
export type PlainRequest<B = Record<string, Json>> = Omit<Request<B>, 'c'>;

/**
 * The same edge for a plain Node request (app.ts's fast path for a remote agent's completion, which
 * skips Hono's request and response objects): the same key, schemas, body rules and errors. Only a
 * route without a query is served this way (the caller sends anything else to Hono).
 */
export function nodeEdge(spec: RouteSpec, opts: EdgeOptions): (req: IncomingMessage, params: Record<string, string>) => Promise<PlainRequest> {
  let compiled: RouteValidators | undefined;
  return async (req, params) => {
    const v = (compiled ??= compileRoute(spec, opts.compiler));
    const header: HeaderOf = (name) => {
      const h = req.headers[name];
      return Array.isArray(h) ? h.join(', ') : h;
    };
    const principal = authenticateWith(header, req.socket, spec, opts);
    if (v.params && !v.params(params)) throw invalid(issuesOf(v.params.errors, 'params'), 'path');
    let body: Record<string, Json> = {};
    if (spec.body && v.body) {
      body = await jsonBodyOf(header, () => readIncoming(req, opts.bodyLimit), opts.bodyLimit);
      if (!v.body(body)) throw invalid(issuesOf(v.body.errors, 'body', spec.body), 'body');
    } else if (spec.method === 'post') await jsonBodyOf(header, () => readIncoming(req, opts.bodyLimit), opts.bodyLimit);
    return { principal, params, query: {}, body };
  };
}

function invalid(issues: Issue[], where: string): HttpError {
  const first = issues[0];
  const message = first ? `${where === 'body' ? 'the body' : where === 'query' ? 'the query' : 'the path'}${first.path && !first.path.startsWith('?') ? ` at ${first.path}` : first.path.startsWith('?') ? ` parameter ${first.path.slice(1)}` : ''}: ${first.message}${issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''}` : `the ${where} is invalid`;
  return new HttpError(400, 'invalid-request', message, { issues: issues as unknown as Json });
}

/**
 * The body as a JSON object. An empty body is `{}` (`curl -X POST` with nothing); anything else
 * must be `application/json`, at most `limit` bytes (counted as they arrive, whatever
 * Content-Length claims), UTF-8, and a JSON object.
 */
export async function readJsonBody(c: Context, limit: number): Promise<Record<string, Json>> {
  const incoming = nodeIncoming(c);
  return jsonBodyOf((name) => c.req.header(name), () => (incoming ? readIncoming(incoming, limit) : readLimited(c.req.raw, limit)), limit);
}

async function jsonBodyOf(header: HeaderOf, read: () => Promise<Uint8Array>, limit: number): Promise<Record<string, Json>> {
  refuseDeclaredOver(header, limit, tooLarge);
  const bytes = await read();
  if (bytes.length > 0) refuseEncoded(header);
  const text = decodeUtf8(bytes);
  if (text.trim() === '') return {};
  const type = header('content-type');
  if (type === undefined || !/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) throw new HttpError(415, 'unsupported-media-type', `the body must be JSON with Content-Type: application/json${type !== undefined ? `, got \`${type.slice(0, 100)}\`` : ''}`);
  const charset = /;\s*charset=("?)([^";]+)\1/i.exec(type)?.[2];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) throw new HttpError(415, 'unsupported-media-type', `the body must be UTF-8, got charset ${charset.slice(0, 40)}`);
  const deep = jsonDepthExceeded(text);
  if (deep >= 0) throw new HttpError(400, 'malformed-json', `the body nests deeper than ${MAX_JSON_DEPTH} levels (at offset ${deep})`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const at = jsonSyntaxError(e, text);
    throw new HttpError(400, 'malformed-json', `the body is not valid JSON${at.line !== undefined ? ` at line ${at.line}, column ${at.column}` : ''}: ${at.reason.slice(0, 300)}`, at.line !== undefined ? { line: at.line, column: at.column } : {});
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new HttpError(400, 'invalid-request', 'the body must be a JSON object');
  return value as Record<string, Json>;
}

/**
 * A compressed body (Content-Encoding: gzip, br, ...) is not read as such: 415, not "not UTF-8" (a gzip
 * body) or a plain body taken whatever its header said (RFC 9110 §8.4.1 allows the 415).
 */
function refuseEncoded(header: HeaderOf): void {
  const coding = header('content-encoding')?.trim();
  if (coding !== undefined && coding !== '' && !/^identity$/i.test(coding)) throw new HttpError(415, 'unsupported-media-type', `the body must not be compressed: Content-Encoding \`${coding.slice(0, 40)}\` is not taken (send it as it is)`);
}

/** A body whose Content-Length says more than `limit`: refused before a byte is read (the reader counts the bytes as they come too). */
function refuseDeclaredOver(header: HeaderOf, limit: number, over: (limit: number) => HttpError): void {
  const declared = header('content-length');
  if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > limit) throw over(limit);
}

function tooLarge(limit: number): HttpError {
  return new HttpError(413, 'body-too-large', `the body is larger than this server's limit of ${limit} bytes (baton serve --body-limit)`);
}

/**
 * A raw (not JSON) body, for an upload (`PUT /tasks/{token}/files/{key}`), as its bytes arrive: not
 * compressed (415), and not declared larger than `limit` (413 before a byte is read; the caller counts
 * the bytes as they come, whatever Content-Length says).
 */
export function rawBody(c: Context, limit: number, tooLarge: (limit: number) => HttpError): AsyncIterable<Uint8Array> {
  const header: HeaderOf = (name) => c.req.header(name);
  refuseEncoded(header);
  refuseDeclaredOver(header, limit, tooLarge);
  const incoming = nodeIncoming(c);
  if (incoming) return incomingChunks(incoming);
  const web = c.req.raw.body;
  return (async function* () {
    if (!web) return;
    const reader: ReadableStreamDefaultReader<Uint8Array> = web.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  })();
}

/**
 * The Node request under @hono/node-server (`c.env.incoming`): its body is read from it directly. The
 * web stream of `c.req.raw.body` would build a whole fetch Request and a stream adapter per request,
 * which cost more than the rest of a remote agent's completion (a profile of bench/remote.bench.ts).
 */
function nodeIncoming(c: Context): IncomingMessage | undefined {
  const env = c.env as { incoming?: unknown } | undefined;
  const inc = env?.incoming;
  return inc instanceof Readable ? (inc as IncomingMessage) : undefined;
}

/**
 * A Node request's body, chunk by chunk, one chunk read ahead at most (paused meanwhile). Not the
 * request's own async iterator: leaving that early destroys the socket, and the answer (a 413) with it.
 * A connection that closes before the body's end is an error.
 */
async function* incomingChunks(incoming: IncomingMessage): AsyncGenerator<Uint8Array> {
  if (incoming.readableEnded) return;
  const queue: Buffer[] = [];
  let ended = false;
  let failed: Error | undefined;
  let wake: (() => void) | undefined;
  const onData = (b: Buffer): void => {
    queue.push(b);
    incoming.pause();
    wake?.();
  };
  const onEnd = (): void => {
    ended = true;
    wake?.();
  };
  const onError = (e: Error): void => {
    failed ??= e;
    wake?.();
  };
  const onClose = (): void => {
    if (!incoming.complete) failed ??= new Error('the request body was cut short');
    ended = true;
    wake?.();
  };
  incoming.on('data', onData);
  incoming.on('end', onEnd);
  incoming.on('error', onError);
  incoming.on('close', onClose);
  try {
    for (;;) {
      const b = queue.shift();
      if (b !== undefined) {
        if (queue.length === 0 && !ended) incoming.resume();
        yield b;
        continue;
      }
      if (failed) throw failed;
      if (ended) return;
      await new Promise<void>((res) => (wake = res));
      wake = undefined;
    }
  } finally {
    incoming.off('data', onData);
    incoming.off('end', onEnd);
    incoming.off('error', onError);
    incoming.off('close', onClose);
    // the rest of a body left unread stays unread: the answer closes the connection
    if (!ended) incoming.pause();
  }
}

function readIncoming(incoming: IncomingMessage, limit: number): Promise<Buffer> {
  if (incoming.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const off = (): void => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('close', onClose);
    };
    const onData = (b: Buffer): void => {
      total += b.byteLength;
      if (total > limit) {
        // the rest is never read: the answer (413) closes the connection
        off();
        incoming.pause();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(b);
    };
    const onEnd = (): void => {
      off();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total));
    };
    const onError = (e: Error): void => {
      off();
      reject(e);
    };
    const onClose = (): void => {
      off();
      if (!incoming.complete) reject(new HttpError(400, 'invalid-request', 'the request body was cut short'));
      else resolve(Buffer.concat(chunks, total));
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  });
}

async function readLimited(req: globalThis.Request, limit: number): Promise<Buffer> {
  if (!req.body) return Buffer.alloc(0);
  const reader: ReadableStreamDefaultReader<Uint8Array> = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function decodeUtf8(bytes: Uint8Array): string {
  if (bytes.byteLength === 0) return '';
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new HttpError(400, 'malformed-json', 'the body is not UTF-8 text');
  }
}

/** A fault as an answer: the code a caller can act on, never a stack trace. */
export function errorResponse(e: unknown, log: (line: string) => void): { status: number; body: { error: Record<string, Json> } } {
  if (e instanceof HttpError) return { status: e.status, body: { error: { code: e.code, message: e.message, ...e.extra } } };
  if (e instanceof BatonError) {
    const status = STATUS_OF[e.code] ?? 500;
    if (status === 500) log(`${e.code}: ${e.message}`);
    return { status, body: { error: { code: e.code, message: status === 500 && e.code === 'internal' ? 'internal error (the server log has it)' : e.message } } };
  }
  log(`internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  return { status: 500, body: { error: { code: 'internal', message: 'internal error (the server log has it)' } } };
}

const STATUS_OF: Partial<Record<BatonError['code'], number>> = {
  usage: 400,
  'unknown-run': 404,
  'unknown-gate': 404,
  'run-exists': 409,
  'gate-refused': 409,
  'invalid-workflow': 422,
  'unbound-agent': 422,
  store: 503,
  'store-locked': 503,
  'store-unreachable': 503,
};

/** 405 for a path that exists under other methods: `Allow` lists them, as RFC 9110 asks. */
export function methodNotAllowed(c: Context, allowed: readonly string[]): Response {
  const methods = [...allowed].sort();
  return c.json({ error: { code: 'method-not-allowed', message: `${c.req.method} is not allowed on ${c.req.path.slice(0, 200)}; use ${methods.join(' or ')}` } }, 405, { allow: methods.join(', ') });
}
