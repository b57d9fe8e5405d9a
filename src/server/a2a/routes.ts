/**
 * The A2A edge of `baton serve --a2a` on the server's Hono app: the agent card at
 * `/.well-known/agent-card.json` (public, as discovery is) and the JSON-RPC endpoint at `/a2a`,
 * answered by the SDK's own `JsonRpcTransportHandler` over `A2aTasks` (tasks.ts). Streams are SSE,
 * one `data:` line per JSON-RPC response, as the SDK's express glue writes them (express is not used).
 *
 * Keys: with API keys configured, `/a2a` takes `Authorization: Bearer KEY` as every route does (the
 * card says so: an HTTP bearer security scheme). Reading a task needs any role but agent; starting a
 * run, answering its gate or cancelling it needs operator or admin.
 */
import type { Context, Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { AgentCard } from '@a2a-js/sdk';
import { authenticate, HttpError, methodNotAllowed, readJsonBody } from '../http.js';
import { mayDo, type Principal } from '../keys.js';
import type { RouteSpec } from '../schemas.js';
import { WorkflowFolder } from '../workflows.js';
import { agentCard, legacyCard, type A2aMountOptions, type A2aSdkModules } from './card.js';
import { A2A_PATH, CARD_PATH } from './modules.js';
import { A2aTasks, GONE, PRINCIPAL } from './tasks.js';

const RPC_SPEC: RouteSpec = { method: 'post', path: A2A_PATH, operationId: 'a2a', action: 'read', summary: 'A2A JSON-RPC', responses: {} };

/** Adds the A2A routes to `app` (before its not-found handler). */
export function mountA2a(app: Hono, o: A2aMountOptions): void {
  const { server, sdk, errors, legacy, compat } = o.modules;
  let origin = 'http://127.0.0.1';
  const card = (): AgentCard => agentCard(o, origin);
  const tasks = new A2aTasks({ engine: o.engine, workflows: o.workflows, hub: o.hub, closing: o.closing, sdk, errors, card });
  const rpc = new server.JsonRpcTransportHandler(tasks);
  // A2A v0.3 clients (most agents deployed before v1.0) at the same endpoint, told apart by their
  // method names (`message/send`, `tasks/get`, ...) or an `A2A-Version: 0.3` header: the SDK's own
  // compatibility layer over the same tasks
  const legacyRpc = new legacy.LegacyJsonRpcTransportHandler(tasks);

  app.get(CARD_PATH, (c) => {
    origin = new URL(c.req.url).origin;
    // one skill per workflow the folder holds now, as GET /workflows lists them: one added since the last
    // read is offered, one removed is not (the card listed the folder as it was when last read otherwise)
    if (o.workflows instanceof WorkflowFolder) o.workflows.refresh();
    const now = card();
    const v1 = sdk.AgentCard.toJSON(now) as Record<string, unknown>;
    c.header('vary', 'A2A-Version');
    // v1.0 clients send `A2A-Version: 1.0` and get v1.0's card; v0.3 clients send none (the card then
    // carries v0.3's fields too) or `0.3` (v0.3's card alone)
    const asked = c.req.header('a2a-version');
    if (asked === undefined || asked === '') return c.json(legacyCard(v1, now, true));
    return c.json(isLegacyVersion(asked) ? legacyCard(v1, now, false) : v1);
  });

  app.post(A2A_PATH, async (c) => {
    origin = new URL(c.req.url).origin;
    const principal = authenticate(c, RPC_SPEC, o.edge);
    const asked = c.req.header('a2a-version');
    let body: Record<string, unknown>;
    try {
      body = await readJsonBody(c, o.edge.bodyLimit);
    } catch (e) {
      if (e instanceof HttpError && e.status === 413) throw e;
      return c.json({ jsonrpc: '2.0', id: null, error: bodyError(e, errors) });
    }
    const old = compat.isLegacyJsonRpcMethod(body['method']) || (asked !== undefined && isLegacyVersion(asked));
    const mapError = (e: unknown): unknown => (old ? legacy.LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(e) : server.JsonRpcTransportHandler.mapToJSONRPCError(e));
    const malformed = notRequest(body);
    if (malformed) return c.json({ jsonrpc: '2.0', id: idOf(body), error: { code: -32600, message: malformed } });
    const notification = isNotification(body);
    const denied = refusal(body['method'], old && typeof body['method'] === 'string' ? compat.legacyJsonRpcToV1Method(body['method']) : body['method'], principal);
    if (denied) {
      if (notification) throw new HttpError(403, 'forbidden', denied);
      return c.json({ jsonrpc: '2.0', id: idOf(body), error: { code: -32600, message: denied } }, 403);
    }
    // the caller going away (its connection closed) ends any wait on the run; a notification's caller waits for nothing
    const left = new AbortController();
    if (notification) left.abort();
    const context = new server.ServerCallContext({ requestedVersion: asked ?? (old ? '0.3' : '1.0'), state: new Map<string, unknown>([[PRINCIPAL, principal], [GONE, AbortSignal.any([left.signal, c.req.raw.signal])]]) });
    try {
      server.validateVersion(context.requestedVersion, card(), 'JSONRPC');
    } catch (e) {
      return notification ? c.body(null, 204) : c.json({ jsonrpc: '2.0', id: idOf(body), error: mapError(e) });
    }
    const out = await (old ? legacyRpc : rpc).handle(body, context);
    if (notification) return carriedOut(c, out);
    if (!(Symbol.asyncIterator in out)) return c.json(out as unknown as Record<string, unknown>);
    // The first event is awaited before the stream starts, as the SDK's own transport glue does: a
    // refusal (an unknown task, one that has ended, a bad message) is then a JSON-RPC error answer
    // with its A2A code, which clients read as such, not an error event inside a stream.
    let first: IteratorResult<unknown>;
    try {
      first = await out.next();
    } catch (e) {
      return c.json({ jsonrpc: '2.0', id: idOf(body), error: mapError(e) });
    }
    return sse(c, first, out, idOf(body), left, mapError);
  });

  // the endpoint and the card answer other methods as every route does (app.ts's not-found handler)
  app.all(A2A_PATH, (c) => methodNotAllowed(c, ['POST']));
  app.all(CARD_PATH, (c) => methodNotAllowed(c, ['GET']));
}

/**
 * A JSON-RPC notification (a request without `id`, JSON-RPC 2.0 §4.1): the server must not reply to it,
 * even with an error. `id: null` is a request (discouraged), answered with `id: null`.
 */
function isNotification(body: Record<string, unknown>): boolean {
  return body['jsonrpc'] === '2.0' && typeof body['method'] === 'string' && !('id' in body);
}

/**
 * Why an object is no JSON-RPC 2.0 request (undefined: it is one): JSON-RPC 2.0 §5.1 and A2A answer
 * that with -32600 Invalid Request. The SDK's handler answers it with -32602 (invalid params) and
 * echoes any `id`, an object's too; here the id is echoed only when it is a string or a number.
 */
function notRequest(body: Record<string, unknown>): string | undefined {
  if (body['jsonrpc'] !== '2.0') return 'not a JSON-RPC 2.0 request: `jsonrpc` must be "2.0"';
  if (typeof body['method'] !== 'string' || body['method'] === '') return 'not a JSON-RPC 2.0 request: `method` must be a non-empty string';
  const id = body['id'];
  if ('id' in body && id !== null && typeof id !== 'string' && !(typeof id === 'number' && Number.isInteger(id))) return 'not a JSON-RPC 2.0 request: `id` must be a string, an integer or null';
  return undefined;
}

/**
 * A notification is carried out and not answered: 204 with no body. Its context's caller has already
 * gone, so a SendMessage starts its run (or answers its gate) without waiting on it, and a stream
 * ends after its first event; whatever it failed with is dropped, as the caller asked.
 */
async function carriedOut(c: Context, out: unknown): Promise<Response> {
  if (out !== null && typeof out === 'object' && Symbol.asyncIterator in out) {
    try {
      for await (const _ of out as AsyncIterable<unknown>) void _;
    } catch {
      // not the caller's concern: it asked for no answer
    }
  }
  return c.body(null, 204);
}

/** What a body that is no JSON-RPC request gets (id null): the codes of JSON-RPC 2.0 and, for a content type, A2A's. */
function bodyError(e: unknown, errors: A2aSdkModules['errors']): unknown {
  const message = e instanceof Error ? e.message : 'the body is not JSON';
  if (e instanceof HttpError && e.status === 415) return errors.toJsonRpcError(new errors.ContentTypeNotSupportedError(message));
  if (e instanceof HttpError && e.code === 'invalid-request') return { code: -32600, message: `${message} (a JSON-RPC request; batches are not taken)` };
  return { code: -32700, message };
}

function sse(c: Context, first: IteratorResult<unknown>, rest: AsyncGenerator<unknown>, id: string | number | null, left: AbortController, rpcError: (e: unknown) => unknown): Response {
  return streamSSE(c, async (stream) => {
    stream.onAbort(() => left.abort());
    try {
      for (let r = first; !r.done; r = await rest.next()) await stream.writeSSE({ data: JSON.stringify(r.value) });
    } catch (e) {
      await stream.writeSSE({ event: 'error', data: JSON.stringify({ jsonrpc: '2.0', id, error: rpcError(e) }) });
    } finally {
      // a stream the caller left ends its wait on the run (the generator's own cleanup)
      await rest.return(undefined);
    }
  });
}

function idOf(body: Record<string, unknown>): string | number | null {
  const id = body['id'];
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
}

/** A2A-Version in v0.3's range ([0.3, 1.0)), as the SDK reads it. */
function isLegacyVersion(v: string): boolean {
  const m = /^(\d+)\.(\d+)/.exec(v.trim());
  return m !== null && m[1] === '0' && Number(m[2]) >= 3;
}

/** Why the caller may not call this method (`v1`: its v1.0 name; undefined: it may). Writes need operator or admin; reads any role but agent. */
function refusal(name: unknown, v1: unknown, p: Principal): string | undefined {
  const method = typeof name === 'string' ? name : '';
  const write = v1 === 'SendMessage' || v1 === 'SendStreamingMessage' || v1 === 'CancelTask';
  if (write ? mayDo(p, 'start') : mayDo(p, 'read')) return undefined;
  return `key \`${p.name}\` may not call ${method || 'this method'}: ${write ? 'starting, answering or cancelling a task needs an operator or admin key' : 'reading needs a reader, operator or admin key'}`;
}

