/**
 * A2A agents (`x-a2a: {url, skill?}`): each attempt is one A2A task on another framework's agent,
 * spoken to with `@a2a-js/sdk`'s client (JSON-RPC binding; protocol v1.0, or v0.3 when the agent's card
 * is of v0.3, through the SDK's own compatibility layer). The phase's input goes
 * in as a data part; the reply's data part (the completed task's artifacts, else its status
 * message, else a direct message reply) is the attempt's output, validated by the engine against
 * the phase's outputs as any agent's is. A reply with text only is handed over as
 * `{result_text}`, for the same extraction LLM replies get.
 *
 * - `input-required` / `auth-required` become an input gate (`ctx.requestInput`): the answer
 *   (`baton respond`) is sent as a follow-up message on the same task and context. The task's ids
 *   are checkpointed first, so an attempt that replaces this one after a restart continues the same
 *   A2A task instead of starting another.
 * - The attempt's AbortSignal (cancel, timeout, lost lease) cancels the A2A task (`CancelTask`).
 *   Without streaming the message is sent with `returnImmediately`, so the task id is known at once
 *   (the task is then polled with `GetTask`): a blocking send kept it unknown until the task ended,
 *   and an abort before then only dropped the request while the peer worked on.
 */
import { BatonError, networkErrorText } from '../core/errors.js';
import { isPlainObject, type Json, type JsonObject } from '../core/json.js';
import { AgentError, type AgentContext, type AgentHandler } from '../engine/agent.js';
import { StopSignal } from '../engine/attempt.js';
import type { A2aDecl } from '../workflow/model.js';
import { answerOf, dataOf, dataPart, isInterrupted, isTerminal, loadA2a, message, stateName, textOf, textPart, type A2aCard, type A2aClientSdk, type A2aMessage, type A2aTask } from './a2a-sdk.js';

export interface A2aAgentOptions extends A2aDecl {
  /** Names the agent in messages. */
  agentId: string;
  /** Where `tokenEnv` is read (default: process.env). */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /** The fetch the client uses (default: the global one). */
  fetch?: typeof fetch | undefined;
  /** How often, at most, a task that a non-streaming send left running is polled (default 1000 ms; the first polls come sooner). */
  pollMs?: number | undefined;
}

/** The SDK's v0.3 compatibility layer, on in the card resolver and the transport factory alike. */
export const LEGACY_COMPAT = { enabled: true } as const;

type Client = Awaited<ReturnType<InstanceType<A2aClientSdk['ClientFactory']>['createFromUrl']>>;

interface Connected {
  client: Client;
  card: A2aCard;
}

/** What one exchange left: a direct message, or the task as last seen. */
type Reply = { kind: 'message'; message: A2aMessage } | { kind: 'task'; task: A2aTask };

/** The card's URL split as the SDK's resolver wants it: a base and a path ('' when the URL is the card's own). */
export function cardLocation(url: string): { base: string; path: string | undefined } {
  return /\.json(\?.*)?$/i.test(url) ? { base: url, path: '' } : { base: url, path: undefined };
}

/** A fetch that sends the bearer token (when there is one). */
export function authFetch(token: string | undefined, f: typeof fetch = fetch): typeof fetch {
  if (token === undefined) return f;
  return (input, init) => {
    const headers = new Headers(init?.headers);
    if (!headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
    return f(input, { ...init, headers });
  };
}

/**
 * A fetch whose 401 or 403 fails the attempt for good (A2AAuthFailed, not retryable): the token sent
 * (or its absence) is refused, and trying again with the same one cannot help.
 */
export function refusalFetch(name: string, tokenEnv: string | undefined, f: typeof fetch): typeof fetch {
  return async (input, init) => {
    const res = await f(input, init);
    if (res.status === 401 || res.status === 403) {
      await res.body?.cancel().catch(() => undefined);
      const why = tokenEnv === undefined ? 'no token was sent (x-a2a.token_env names the variable that holds one)' : `the token in ${tokenEnv} was refused`;
      throw new AgentError('A2AAuthFailed', `${name}: the agent answered HTTP ${res.status}: ${why}`, { status: res.status, ...(tokenEnv !== undefined ? { token_env: tokenEnv } : {}) }, false);
    }
    return res;
  };
}

/** The AgentError an error is or carries (the SDK may wrap what a fetch threw). */
function agentErrorIn(e: unknown): AgentError | undefined {
  for (let c = e, k = 0; c !== undefined && c !== null && k < 5; c = (c as { cause?: unknown }).cause, k++) if (c instanceof AgentError) return c;
  return undefined;
}

export function tokenOf(decl: A2aDecl, env: Readonly<Record<string, string | undefined>>, agentId: string): string | undefined {
  if (decl.tokenEnv === undefined) return undefined;
  const t = env[decl.tokenEnv];
  if (t === undefined || t === '') throw new AgentError('A2AConfig', `agent ${agentId}: x-a2a.token_env names ${decl.tokenEnv}, which is not set`, { token_env: decl.tokenEnv }, false);
  return t;
}

/** Builds the handler; nothing is fetched until the first attempt (then the card is kept). */
export function a2aAgent(opts: A2aAgentOptions): AgentHandler {
  const name = `A2A agent ${opts.agentId} (${opts.url})`;
  let connecting: Promise<Connected> | undefined;
  const connect = (): Promise<Connected> => {
    connecting ??= (async () => {
      const { client: c } = await loadA2a('an `x-a2a` agent');
      const f = refusalFetch(name, opts.tokenEnv, authFetch(tokenOf(opts, opts.env ?? process.env, opts.agentId), opts.fetch));
      // legacyCompat: an agent whose card is of A2A v0.3 (most agents deployed before v1.0) is spoken to in
      // v0.3 (message/send, kind-tagged parts), chosen by the card's version; a v1.0 card is read as before
      const factory = new c.ClientFactory(
        c.ClientFactoryOptions.createFrom(c.ClientFactoryOptions.default, {
          transports: [new c.JsonRpcTransportFactory({ fetchImpl: f, legacyCompat: LEGACY_COMPAT })],
          cardResolver: new c.DefaultAgentCardResolver({ fetchImpl: f, legacyCompat: LEGACY_COMPAT }),
        }),
      );
      const { base, path } = cardLocation(opts.url);
      const client = await factory.createFromUrl(base, path);
      return { client, card: await client.getAgentCard() };
    })();
    // a failed connection is tried again by the next attempt
    connecting.catch(() => (connecting = undefined));
    return connecting;
  };

  // the attempt's span as a GenAI agent invocation (also when the card cannot be read), as an LLM agent's is
  const where = serverOf(opts.url);
  return async (ctx: AgentContext) => {
    ctx.trace?.describe(`invoke_agent ${opts.agentId}`, { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': opts.agentId, 'baton.a2a.url': opts.url, ...where });
    let conn: Connected;
    try {
      conn = await connect();
    } catch (e) {
      const own = agentErrorIn(e);
      if (own) throw own;
      // the SDK is not installed: retrying cannot help
      if (e instanceof BatonError && e.code === 'missing-package') throw new AgentError('A2AConfig', e.message, {}, false);
      throw new AgentError('A2AUnavailable', `${name}: cannot read its agent card: ${networkErrorText(e)}`, { url: opts.url });
    }
    const { sdk } = await loadA2a('an `x-a2a` agent');
    const stream = opts.streaming !== false && conn.card.capabilities?.streaming === true;
    const metadata: JsonObject | undefined = opts.skill !== undefined ? { skill: opts.skill } : undefined;
    let taskId: string | undefined;
    // the A2A task's ids, in the run's log (task.agent_event `a2a.task`) once known
    const known = (t: A2aTask): void => {
      if (taskId === t.id) return;
      taskId = t.id;
      ctx.record('a2a.task', { task_id: t.id, context_id: t.contextId });
      ctx.trace?.describe(undefined, { 'baton.a2a.task_id': t.id, ...(t.contextId !== '' ? { 'gen_ai.conversation.id': t.contextId } : {}) });
    };
    // an A2A task the attempt started is cancelled when the attempt is aborted
    let cancelSent = false;
    const onAbort = (): void => {
      // a hand-over (the worker stops, the lease is lost) keeps the A2A task for the next attempt (its ids are checkpointed)
      if (taskId === undefined || cancelSent || isHandOver(ctx.signal.reason)) return;
      cancelSent = true;
      void conn.client.cancelTask({ tenant: '', id: taskId, metadata: undefined }, { signal: AbortSignal.timeout(5000), ...traced(ctx) }).catch(() => undefined);
    };
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    // each call carries the attempt's W3C trace context (when tracing is on): the peer's spans join the run's trace
    const call = { signal: ctx.signal, ...traced(ctx) };
    const send = async (msg: A2aMessage): Promise<Reply> => {
      // Without a stream a new task is asked for at once (then polled), so its id is known and an abort can
      // cancel it. A follow-up (an answer) blocks as before: its task id is known, and the first event an
      // SDK executor publishes for it is the stored task, still input-required, which would ask the human again.
      const req = { tenant: '', message: msg, configuration: { acceptedOutputModes: ['application/json', 'text/plain'], taskPushNotificationConfig: undefined, returnImmediately: !stream && msg.taskId === '' }, metadata };
      try {
        if (!stream) {
          const r = await conn.client.sendMessage(req, call);
          if ('messageId' in r) return { kind: 'message', message: r };
          known(r);
          return { kind: 'task', task: r };
        }
        let task: A2aTask | undefined;
        for await (const ev of conn.client.sendMessageStream(req, call)) {
          const p = ev.payload;
          if (!p) continue;
          if (p.$case === 'message') return { kind: 'message', message: p.value };
          if (p.$case === 'task') {
            task = p.value;
            known(task);
            if (ctx.signal.aborted) onAbort();
          } else if (p.$case === 'statusUpdate' && task) {
            task = { ...task, status: p.value.status };
            // the SDK's server keeps an auth-required stream open (it expects credentials out of band): stop reading
            if (isInterrupted(stateOf(task))) break;
          }
          else if (p.$case === 'artifactUpdate' && task && p.value.artifact) task = { ...task, artifacts: mergeArtifact(task.artifacts, p.value.artifact, p.value.append) };
        }
        if (!task) throw new AgentError('A2ABadReply', `${name}: the stream ended without a task or a message`, {});
        return { kind: 'task', task };
      } catch (e) {
        throw failureOf(e, ctx, name);
      }
    };

    try {
      let reply: Reply | undefined = await resumed(ctx, conn.client, name);
      if (reply?.kind === 'task') known(reply.task);
      // the skill in the message's metadata too: an executor reads `requestContext.userMessage`, seldom the request
      reply ??= await send(message(sdk.Role.ROLE_USER, [dataPart(ctx.input)], {}, metadata));
      /** The agent's refusal of the last answer, told to the human with the question asked again. */
      let refused: string | undefined;
      for (;;) {
        if (reply.kind === 'message') return outputOf(reply.message.parts, name);
        let task: A2aTask = reply.task;
        // a send that returned at once (or a task read back after a restart) is polled until it ends or asks:
        // soon at first (a quick agent is not made to wait a second), then every pollMs
        for (let wait = Math.min(25, opts.pollMs ?? 1000); !isTerminal(stateOf(task)) && !isInterrupted(stateOf(task)); wait = Math.min(wait * 2, opts.pollMs ?? 1000)) {
          await pause(wait, ctx.signal);
          task = await conn.client.getTask({ tenant: '', id: task.id, historyLength: 0 }, call).catch((e: unknown) => {
            throw failureOf(e, ctx, name);
          });
        }
        const state = stateOf(task);
        if (isInterrupted(state)) {
          await ctx.checkpoint({ a2a: { task_id: task.id, context_id: task.contextId } });
          const said = textOf(task.status?.message?.parts ?? []);
          const question = said !== '' ? said : state === 8 ? `${name} asks for authentication (auth-required)` : `${name} asks for input (input-required)`;
          ctx.record('a2a.interrupted', { task_id: task.id, state: stateName(state), question });
          // a peer that names its choices (a Baton server's data part does): the gate checks the answer here
          const choices = choicesOf(task.status?.message?.parts ?? []);
          const answer = await ctx.requestInput({ question: refused !== undefined ? `${question} (${refused})` : question, ...(choices ? { choices } : {}) });
          try {
            reply = await send(message(sdk.Role.ROLE_USER, [typeof answer === 'string' ? textPart(answer) : dataPart(answer)], { taskId: task.id, contextId: task.contextId }));
            refused = undefined;
          } catch (e) {
            // The agent refused the answer (an invalid-params error: not one of its choices, say) and its task
            // still asks: the human is asked again, told why. Before, the attempt failed on the human's typo.
            const again: A2aTask | undefined = isRefusal(e) ? await conn.client.getTask({ tenant: '', id: task.id, historyLength: 0 }, call).catch(() => undefined) : undefined;
            if (!again || !isInterrupted(stateOf(again)) || ctx.signal.aborted) throw e;
            const said = (e as Error).message;
            refused = `the agent refused the answer: ${said.startsWith(`${name}: `) ? said.slice(name.length + 2) : said}`;
            ctx.record('a2a.answer_refused', { task_id: task.id, message: said });
            reply = { kind: 'task', task: again };
          }
          continue;
        }
        if (state === 3) return outputOf(resultParts(task), name);
        const why = textOf(task.status?.message?.parts ?? []);
        const code = state === 5 ? 'A2ATaskCanceled' : state === 7 ? 'A2ATaskRejected' : 'A2ATaskFailed';
        throw new AgentError(code, `${name}: task ${task.id} ${stateName(state)}${why !== '' ? `: ${why}` : ''}`, { task_id: task.id, state: stateName(state) }, state === 4);
      }
    } finally {
      ctx.signal.removeEventListener('abort', onAbort);
      if (ctx.signal.aborted && taskId !== undefined) onAbort();
    }
  };
}

/** `server.address` and `server.port` of the agent's URL (OpenTelemetry's attributes of a client call). */
function serverOf(url: string): { 'server.address'?: string; 'server.port'?: number } {
  try {
    const u = new URL(url);
    const port = u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
    return { 'server.address': u.hostname.replace(/^\[|\]$/g, ''), 'server.port': port };
  } catch {
    return {};
  }
}

/** The peer's own refusal of a request (JSON-RPC invalid params or request), not a network failure or a fault. */
function isRefusal(e: unknown): boolean {
  return e instanceof AgentError && e.code === 'A2AError' && e.details['error'] === 'RequestMalformedError';
}

/** `choices` of the status message's data part (a list of JSON values), when the peer names them. */
function choicesOf(parts: A2aMessage['parts']): Json[] | undefined {
  const c = dataOf(parts)?.['choices'];
  return Array.isArray(c) && c.length > 0 ? c : undefined;
}

function isHandOver(reason: unknown): boolean {
  return reason instanceof StopSignal && reason.handOver;
}

function stateOf(t: A2aTask): number {
  return t.status?.state ?? 0;
}

/** After a restart: the A2A task an earlier attempt of this task was waiting on, if it still exists. */
async function resumed(ctx: AgentContext, client: Client, name: string): Promise<Reply | undefined> {
  const cp = ctx.lastCheckpoint;
  if (!isPlainObject(cp) || !isPlainObject(cp['a2a']) || typeof cp['a2a']['task_id'] !== 'string') return undefined;
  try {
    const task = await client.getTask({ tenant: '', id: cp['a2a']['task_id'], historyLength: 0 }, { signal: ctx.signal, ...traced(ctx) });
    const state = stateOf(task);
    // an ended task is not continued: a new one starts. A failed or cancelled one (an attempt that timed out)
    // has nothing to give; a completed one may have given an output the phase rejected, which a retry must not get again
    if (isTerminal(state)) {
      ctx.log(`${name}: A2A task ${task.id} of an earlier attempt is ${stateName(state)}; starting another`);
      return undefined;
    }
    ctx.log(`${name}: continuing A2A task ${task.id} (${stateName(state)})`);
    return { kind: 'task', task };
  } catch {
    return undefined;
  }
}

/** The completed task's artifacts' parts (in order), then its status message's. */
function resultParts(task: A2aTask): A2aMessage['parts'] {
  return [...(task.status?.message?.parts ?? []), ...task.artifacts.flatMap((a) => a.parts)];
}

function outputOf(parts: A2aMessage['parts'], name: string): JsonObject {
  const data = dataOf(parts);
  if (data) return data;
  const text = textOf(parts);
  if (text !== '') return { result_text: text };
  const any = answerOf(parts);
  throw new AgentError('A2ABadReply', `${name}: the reply has no data part (a JSON object) and no text${any !== undefined ? ` (a data part holds ${JSON.stringify(any).slice(0, 100)})` : ''}`, {}, false);
}

function mergeArtifact(list: A2aTask['artifacts'], a: A2aTask['artifacts'][number], append: boolean): A2aTask['artifacts'] {
  const i = list.findIndex((x) => x.artifactId === a.artifactId);
  if (i < 0) return [...list, a];
  const out = [...list];
  out[i] = append ? { ...list[i]!, parts: [...list[i]!.parts, ...a.parts] } : a;
  return out;
}

function failureOf(e: unknown, ctx: AgentContext, name: string): unknown {
  const own = agentErrorIn(e);
  if (own) return own;
  if (ctx.signal.aborted) return ctx.signal.reason ?? e;
  return new AgentError('A2AError', `${name}: ${(e as Error).message}`, { error: (e as Error).name });
}

/** The attempt's `traceparent` as a request header (the SDK's transports send service parameters as headers); none untraced. */
function traced(ctx: AgentContext): { serviceParameters?: Record<string, string> } {
  return ctx.trace ? { serviceParameters: { traceparent: ctx.trace.traceparent } } : {};
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const t = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = (): void => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener('abort', stop, { once: true });
  });
}
