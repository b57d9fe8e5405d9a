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
import { authenticate, HttpError, readJsonBody } from '../http.js';
import { mayDo, type Principal } from '../keys.js';
import type { RouteSpec } from '../schemas.js';
import { agentCard, type A2aMountOptions } from './card.js';
import { A2A_PATH, CARD_PATH } from './modules.js';
import { A2aTasks, GONE, PRINCIPAL } from './tasks.js';

const RPC_SPEC: RouteSpec = { method: 'post', path: A2A_PATH, operationId: 'a2a', action: 'read', summary: 'A2A JSON-RPC', responses: {} };

/** Adds the A2A routes to `app` (before its not-found handler). */
export function mountA2a(app: Hono, o: A2aMountOptions): void {
  const { server, sdk, errors } = o.modules;
  let origin = 'http://127.0.0.1';
  const card = (): AgentCard => agentCard(o, origin);
  const tasks = new A2aTasks({ engine: o.engine, workflows: o.workflows, hub: o.hub, closing: o.closing, sdk, errors, card });
  const rpc = new server.JsonRpcTransportHandler(tasks);

  app.get(CARD_PATH, (c) => {
    origin = new URL(c.req.url).origin;
    return c.json(sdk.AgentCard.toJSON(card()) as Record<string, unknown>);
  });

  app.post(A2A_PATH, async (c) => {
    origin = new URL(c.req.url).origin;
    const principal = authenticate(c, RPC_SPEC, o.edge);
    let body: Record<string, unknown>;
    try {
      body = await readJsonBody(c, o.edge.bodyLimit);
    } catch (e) {
      if (e instanceof HttpError && e.status === 413) throw e;
      return c.json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: e instanceof Error ? e.message : 'the body is not JSON' } });
    }
    const denied = refusal(body, principal);
    if (denied) return c.json({ jsonrpc: '2.0', id: idOf(body), error: { code: -32600, message: denied } }, 403);
    // the caller going away (its connection closed) ends any wait on the run
    const left = new AbortController();
    const context = new server.ServerCallContext({ requestedVersion: c.req.header('a2a-version') ?? '1.0', state: new Map<string, unknown>([[PRINCIPAL, principal], [GONE, AbortSignal.any([left.signal, c.req.raw.signal])]]) });
    try {
      server.validateVersion(context.requestedVersion, card(), 'JSONRPC');
    } catch (e) {
      return c.json({ jsonrpc: '2.0', id: idOf(body), error: server.JsonRpcTransportHandler.mapToJSONRPCError(e) });
    }
    const out = await rpc.handle(body, context);
    if (!(Symbol.asyncIterator in out)) return c.json(out as unknown as Record<string, unknown>);
    return sse(c, out, idOf(body), left);
  });
}

function sse(c: Context, out: AsyncGenerator<unknown>, id: string | number | null, left: AbortController): Response {
  return streamSSE(c, async (stream) => {
    stream.onAbort(() => left.abort());
    try {
      for await (const ev of out) await stream.writeSSE({ data: JSON.stringify(ev) });
    } catch (e) {
      await stream.writeSSE({ event: 'error', data: JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32603, message: e instanceof Error ? e.message : String(e) } }) });
    }
  });
}

function idOf(body: Record<string, unknown>): string | number | null {
  const id = body['id'];
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** Why the caller may not call this method (undefined: it may). Writes need operator or admin; reads any role but agent. */
function refusal(body: Record<string, unknown>, p: Principal): string | undefined {
  const method = typeof body['method'] === 'string' ? body['method'] : '';
  const write = method === 'SendMessage' || method === 'SendStreamingMessage' || method === 'CancelTask';
  if (write ? mayDo(p, 'start') : mayDo(p, 'read')) return undefined;
  return `key \`${p.name}\` may not call ${method || 'this method'}: ${write ? 'starting, answering or cancelling a task needs an operator or admin key' : 'reading needs a reader, operator or admin key'}`;
}

