/**
 * `createRemoteAgent`: an agent that runs anywhere and pulls its tasks from `baton serve` (docs/server.md,
 * Remote agents). Its one HTTP client is undici's Pool: no server packages. Each slot long-polls a claim, runs the
 * handler with a ctx shaped like the in-process one, heartbeats while it runs (the signal aborts when
 * the server says the attempt was cancelled or lost, or when no heartbeat got through for the lease),
 * and completes or fails the task.
 */
import { randomBytes } from 'node:crypto';
import type { Dispatcher, Pool } from 'undici';
import { downloadInputs, removeRoot, uploadOutputs, type TaskFiles, type Transfer } from './remote-client-files.js';
import { BatonError } from '../core/errors.js';
import type { Json, JsonObject } from '../core/json.js';
import { AgentError, type AgentContext, type InputRequest } from '../engine/agent.js';
import type { Telemetry } from '../engine/telemetry.js';
import { MAX_WAIT_S } from './schemas.js';
import { remoteSpan } from './trace.js';

/**
 * What a remote handler gets: the in-process ctx. Two members differ, since the run's state is on the
 * server: `getSiblingOutput` asks the server and returns a promise (`await` it: the same code then runs
 * in process too), and `remainingBudgetUsd()` is the server's figure as of the claim or the last
 * heartbeat, less the costs reported since.
 */
export interface RemoteAgentContext extends Pick<AgentContext, 'input' | 'phase' | 'item' | 'taskId' | 'runId' | 'attempt' | 'idempotencyKey' | 'inputResponse' | 'lastCheckpoint' | 'checkpoint' | 'agent' | 'signal' | 'initialState' | 'reportCost' | 'log' | 'record' | 'remainingBudgetUsd' | 'requestInput' | 'trace'> {
  /** RFC-0024 §5.2 escape hatch: a completed phase's recorded output (recorded as an event when used), asked of the server. */
  getSiblingOutput(phase: string): Promise<JsonObject | undefined>;
  /** The task's fencing token (for logs; the client sends it). */
  readonly token: string;
  /**
   * W3C traceparent for the handler's own spans: this process's span for the task (with `telemetry`),
   * else the server's attempt span (when the server traces). Undefined when neither traces.
   */
  readonly traceparent: string | undefined;
}

/** The server's 422: the output did not fit the phase's declared outputs (the RFC payload). */
export interface OutputRejection {
  code: string;
  message: string;
  payload: Record<string, unknown>;
}

/**
 * A task of this agent the engine refused at claim time, before it was handed to any agent: a claim's
 * 422 (`UnresolvableInputError`: its input cannot be resolved, and the task failed) or 409
 * (`UpstreamIntentSuspendedError`: an upstream phase waits for a human's answer; the task runs once it
 * is given). `payload` is the RFC-0024 payload the run records as `task.claim_rejected`.
 */
export interface ClaimRejection {
  status: 409 | 422;
  code: string;
  message: string;
  runId: string;
  /** The task's key: its phase, or `phase[index]` for a fan-out item. */
  phase: string;
  taskId: string;
  payload: Record<string, unknown>;
}

export interface RemoteAgentOptions {
  /** The server, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** An `agent:<id>` key (or admin); none for a server without keys. */
  key?: string | undefined;
  /** The agent id whose tasks this process takes. */
  agent: string;
  handler: (ctx: RemoteAgentContext) => unknown;
  /** Tasks at once (default 1). */
  concurrency?: number | undefined;
  /**
   * The server refused the output (422): return a fixed output to complete again, or undefined to fail
   * the attempt with the rejection's code (retryable: the engine may try again). Called at most 3 times per task.
   */
  onRejected?: ((rejection: OutputRejection, ctx: RemoteAgentContext) => unknown) | undefined;
  /**
   * A claim answered with a task the engine refused at claim time (ClaimRejection): nothing to run, the
   * slot claims again at once. Default: told to `onError`.
   */
  onClaimRejected?: ((rejection: ClaimRejection) => void) | undefined;
  /** Seconds a claim waits on the server (default 20). */
  waitS?: number | undefined;
  /**
   * Traces (docs/telemetry.md): each task runs in a span (`baton.remote {agent}`) under the server's
   * attempt span, which links back to it; `ctx.trace` makes children of it.
   */
  telemetry?: Telemetry | undefined;
  /** Errors that are not a task's (the server unreachable, a refused key): default stderr, once per distinct message. */
  onError?: ((e: Error) => void) | undefined;
}

export interface RemoteAgent {
  /** Stops claiming; running tasks may finish for `graceMs` (default 10 s), then are aborted and handed back. */
  stop(graceMs?: number): Promise<void>;
  /** Tasks this process completed (the server accepted the completion). */
  readonly completed: number;
}

class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    const err = body['error'] as { code?: string; message?: string } | undefined;
    super(`HTTP ${status}${err?.code !== undefined ? ` ${err.code}` : ''}: ${err?.message ?? 'no message'}`);
    this.name = 'HttpFailure';
  }
}

interface ClaimedTask {
  token: string;
  task_id: string;
  run_id: string;
  phase: string;
  attempt: number;
  agent: string;
  input: JsonObject;
  initial_state?: JsonObject;
  idempotency_key?: string;
  input_response?: Json;
  last_checkpoint?: Json;
  item?: { index: number; value: Json };
  remaining_budget_usd?: number;
  lease_ms: number;
  traceparent?: string;
  files?: TaskFiles;
}

/** The options a caller got wrong, said at once (BatonError `usage`), not found later as an undici error or a silent idle agent. */
function checkOptions(opts: RemoteAgentOptions): void {
  let url: URL | undefined;
  try {
    url = new URL(opts.url);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new BatonError('usage', `createRemoteAgent: url must be an http:// or https:// URL (the Baton server), got ${JSON.stringify(opts.url)}`);
  }
  if (typeof opts.agent !== 'string' || opts.agent === '') throw new BatonError('usage', `createRemoteAgent: agent must be an agent id, got ${JSON.stringify(opts.agent)}`);
  if (typeof opts.handler !== 'function') throw new BatonError('usage', 'createRemoteAgent: handler must be a function');
  const c = opts.concurrency;
  if (c !== undefined && !(Number.isInteger(c) && c >= 1)) throw new BatonError('usage', `createRemoteAgent: concurrency must be an integer >= 1, got ${String(c)}`);
  const w = opts.waitS;
  // past the server's longest poll every claim was refused (400) and the agent never took a task
  if (w !== undefined && !(Number.isFinite(w) && w >= 0 && w <= MAX_WAIT_S)) throw new BatonError('usage', `createRemoteAgent: waitS must be a number of seconds from 0 to ${MAX_WAIT_S}, got ${String(w)}`);
}

export function createRemoteAgent(opts: RemoteAgentOptions): RemoteAgent {
  checkOptions(opts);
  const base = opts.url.replace(/\/+$/, '');
  const stopping = new AbortController();
  const seen = new Set<string>();
  const onError =
    opts.onError ??
    ((e: Error) => {
      if (seen.has(e.message)) return;
      seen.add(e.message);
      process.stderr.write(`remote agent ${opts.agent}: ${e.message}\n`);
    });
  const waitS = opts.waitS ?? 20;
  const claimRejected = (status: number, body: Record<string, unknown>): void => {
    const r = claimRejectionOf(status, body);
    if (!r) return;
    if (opts.onClaimRejected) opts.onClaimRejected(r);
    else onError(new Error(`task ${r.taskId} (run ${r.runId}) was refused at claim time, ${r.status} ${r.code}: ${r.message}`));
  };
  // claim ids of the completions' next claims: this process's own prefix and a count (one random draw, not one per task)
  const claimPrefix = randomBytes(9).toString('base64url');
  let claims = 0;
  let claimIds = true;
  const nextClaimId = (): string => `${claimPrefix}-${(claims++).toString(36)}`;
  const running = new Set<{ abort: TaskAbort; release: () => Promise<void> }>();
  let completed = 0;

  // undici's Pool (Node's own HTTP client, loaded on the first call) with keep-alive connections: a round
  // trip costs the agent's process about half the CPU of node:http's request (and a third of fetch's,
  // which builds web streams and a Response per call), which on a machine it shares with the server is
  // the server's too (bench/remote.bench.ts)
  const target = new URL(base);
  // the URL is parsed once: each call names only its path (a server behind a path prefix keeps it)
  const prefix = target.pathname.replace(/\/+$/, '');
  const auth = opts.key !== undefined ? `Bearer ${opts.key}` : undefined;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (auth !== undefined) headers['authorization'] = auth;
  let pool: Promise<Pool> | undefined;
  let closed = false;
  // no timeouts of the client's own, as node:http had none: a claim and an input long-poll for as long as
  // the agent asked, and a lost server is found by the heartbeats
  let ready: Pool | undefined;
  const connections = (): Promise<Pool> =>
    (pool ??= import('undici').then((u) => {
      ready = new u.Pool(target.origin, { headersTimeout: 0, bodyTimeout: 0 });
      return ready;
    }));

  /**
   * One request. `timeoutMs` bounds the wait for the answer's headers and between its bytes: a server
   * that vanished without closing the connection (a partition, a machine gone) fails the call instead of
   * holding it for ever. A heartbeat's is a lease (then the task counts as lost and its handler is
   * aborted, before the server hands it to another agent); a long poll's is its wait and a margin.
   */
  async function call(path: string, body: unknown, signal?: AbortSignal, timeoutMs = CALL_TIMEOUT_MS): Promise<{ status: number; body: Record<string, unknown> }> {
    if (closed) throw new Error('the remote agent has stopped');
    const payload = JSON.stringify(body ?? {});
    const p = ready ?? (await connections());
    let status: number;
    let text: string;
    if (signal) {
      const res = await p.request({ path: prefix + path, method: 'POST', headers, body: payload, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal });
      status = res.statusCode;
      text = await res.body.text();
    } else {
      // a call no signal ends (a completion, a heartbeat: most calls) goes through undici's dispatch, its answer
      // gathered by a handler of this module's: request()'s body stream and its reading cost a round trip
      // more than the rest of the client's work for it
      const answer = new Answer();
      p.dispatch({ path: prefix + path, method: 'POST', headers, body: payload, headersTimeout: timeoutMs, bodyTimeout: timeoutMs }, answer);
      ({ status, text } = await answer.done);
    }
    let parsed: Record<string, unknown> = {};
    if (text !== '') {
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        parsed = { error: { code: 'not-json', message: text.slice(0, 200) } };
      }
    }
    return { status, body: parsed };
  }

  /** File transfers (remote-client-files.ts): a request of its own method and body on the same connections, sent again as `again` does. */
  const transfer: Transfer = {
    request: async (path, init) => {
      if (closed) throw new Error('the remote agent has stopped');
      const p = ready ?? (await connections());
      const h: Record<string, string> = { ...init.headers };
      if (auth !== undefined) h['authorization'] = auth;
      const options: Dispatcher.RequestOptions = { path: prefix + path, method: init.method, headers: h, headersTimeout: CALL_TIMEOUT_MS, bodyTimeout: CALL_TIMEOUT_MS, signal: init.signal };
      if (init.body) options.body = init.body as unknown as NonNullable<Dispatcher.RequestOptions['body']>;
      return p.request(options);
    },
    again: (send, leaseMs, abort) => again(send as unknown as () => Promise<{ status: number; body: Record<string, unknown> }>, leaseMs, abort as TaskAbort) as unknown as ReturnType<typeof send>,
  };

  /** Gives up a claim by its id (a task handed to it and never read goes back to the queue); undefined when the server was not reached. */
  function cancelClaim(claimId: string): Promise<{ status: number; body: Record<string, unknown> } | undefined> {
    return call(`/agents/${encodeURIComponent(opts.agent)}/claims/${claimId}/cancel`, {}).catch(() => undefined);
  }

  async function slot(): Promise<void> {
    let backoff = 100;
    // a claim whose answer never came (the connection dropped): a task the server handed to it goes back
    // to the queue when it is cancelled, before the next claim, instead of waiting out a lease nobody holds
    const lost: string[] = [];
    while (!stopping.signal.aborted) {
      let claimed: ClaimedTask | undefined;
      // the claim's own id: when the agent stops during the long poll it cancels it, so that a task the
      // server handed to it just as it went away goes back to the queue at once, not after a lease
      const claimId = randomBytes(12).toString('base64url');
      while (lost.length > 0) {
        const r = await cancelClaim(lost[0]!);
        // not reached (the server still away): tried again before the next claim
        if (r === undefined) break;
        lost.shift();
      }
      try {
        const r = await call(`/agents/${encodeURIComponent(opts.agent)}/claim?wait=${waitS}`, { claim_id: claimId }, stopping.signal, (waitS + POLL_MARGIN_S) * 1000);
        if (r.status === 200) claimed = r.body as unknown as ClaimedTask;
        // a task the engine refused at claim time: heard of, and the slot claims again at once
        else if (claimRejectionOf(r.status, r.body)) claimRejected(r.status, r.body);
        else if (r.status !== 204) throw new HttpFailure(r.status, r.body);
        backoff = 100;
      } catch (e) {
        if (stopping.signal.aborted) {
          await cancelClaim(claimId);
          return;
        }
        if (!(e instanceof HttpFailure) && lost.push(claimId) > 8) lost.shift();
        onError(e as Error);
        await sleep(backoff, stopping.signal);
        backoff = Math.min(backoff * 2, 5000);
        continue;
      }
      // a completion may hand the next task back at once (claim_next): no claim round trip between tasks
      while (claimed) {
        if (stopping.signal.aborted) {
          await call(`/tasks/${claimed.token}/release`, {}).catch(() => undefined);
          break;
        }
        claimed = await runTask(claimed);
      }
    }
  }

  /** Runs one task to its outcome; the next task when the completion brought one. */
  async function runTask(t: ClaimedTask): Promise<ClaimedTask | undefined> {
    const abort = new TaskAbort();
    const path = (what: string): string => `/tasks/${t.token}/${what}`;
    // cost and log lines go in order, before the outcome
    // (none until a first one: a task that sends none waits for no chain)
    let chain: Promise<unknown> | undefined;
    const send = (what: string, body: unknown, answered?: (body: Record<string, unknown>) => void): void => {
      chain = (chain ?? RESOLVED).then(() =>
        call(path(what), body).then(
          // a refusal other than the attempt's end (a malformed record, a key that may not) is heard of too
          (r) => (r.status === 200 ? answered?.(r.body) : r.status !== 409 ? onError(new HttpFailure(r.status, r.body)) : undefined),
          (e: unknown) => onError(e as Error),
        ),
      );
    };
    let inputs = 0;
    // the server's figure as of the claim (and each heartbeat), less what this attempt reported since
    let budget = typeof t.remaining_budget_usd === 'number' ? t.remaining_budget_usd : undefined;
    const traced = remoteSpan(opts.telemetry, t.traceparent, t);
    const tp = traced ? { traceparent: traced.span.traceparent } : {};
    // an instance of a class, its fields set in its constructor: an object literal with a getter (signal) and a
    // spread (item) is built the slow way, a microsecond and more per task
    const ctx = new TaskContext(t, abort, traced?.span.traceparent ?? t.traceparent, traced?.trace) as TaskContext & RemoteAgentContext;
    Object.assign(ctx, {
      reportCost: (usd: number) => {
        if (typeof usd !== 'number' || !Number.isFinite(usd) || usd < 0) throw new TypeError(`reportCost expects a finite, non-negative number of USD, got ${String(usd)}`);
        if (usd > 0) {
          if (budget !== undefined) budget = Math.max(0, budget - usd);
          // the server answers what is left after this report (others' spend too): it may only lower this figure
          send('cost', { usd }, (b) => {
            if (typeof b['remaining_budget_usd'] === 'number') budget = budget === undefined ? b['remaining_budget_usd'] : Math.min(budget, b['remaining_budget_usd']);
          });
        }
      },
      log: (message: string) => send('log', { message: String(message) }),
      record: (kind: string, data: JsonObject) => send('event', { kind: String(kind), data }),
      remainingBudgetUsd: () => budget,
      checkpoint: async (value: Json): Promise<void> => {
        if (chain) await chain;
        // as in process: a checkpoint is a JSON value (undefined is none)
        if (value === undefined) throw new AgentError('InvalidCheckpoint', 'ctx.checkpoint needs a JSON value: it is undefined', {}, false);
        const r = await again(() => call(path('checkpoint'), { value }, abort.signal), t.lease_ms, abort);
        if (r.status !== 200) throw new HttpFailure(r.status, r.body);
      },
      getSiblingOutput: async (phase: string): Promise<JsonObject | undefined> => {
        if (chain) await chain;
        const r = await again(() => call(path('sibling'), { phase: String(phase) }, abort.signal), t.lease_ms, abort);
        if (r.status !== 200) throw new HttpFailure(r.status, r.body);
        const out = r.body['output'];
        return out !== null && typeof out === 'object' && !Array.isArray(out) ? (out as JsonObject) : undefined;
      },
      requestInput: async (req: InputRequest): Promise<Json> => {
        if (chain) await chain;
        const body = { question: req.question, ...(req.choices !== undefined ? { choices: req.choices } : {}), ...(req.schema !== undefined ? { schema: req.schema } : {}), ...(req.timeoutMs !== undefined ? { timeout_ms: req.timeoutMs } : {}) };
        const n = inputs++;
        const wait = (INPUT_WAIT_S + POLL_MARGIN_S) * 1000;
        let sent = false;
        // the question, once: a try whose answer was lost is followed by a poll of its index, and the question
        // goes again only when the server says it has no such input (the try never reached it)
        let r = await again(
          async () => {
            if (sent) {
              const p = await call(path('input'), { input: n }, abort.signal, wait);
              if (!(p.status === 400 && noSuchInput(p.body, n))) return p;
            }
            sent = true;
            return call(path('input'), body, abort.signal, wait);
          },
          t.lease_ms,
          abort,
        );
        for (;;) {
          if (r.status === 200) return (r.body['value'] ?? null) as Json;
          if (r.status !== 202) throw new HttpFailure(r.status, r.body);
          const k = typeof r.body['input'] === 'number' ? r.body['input'] : n;
          r = await again(() => call(path('input'), { input: k }, abort.signal, wait), t.lease_ms, abort);
        }
      },
    } satisfies Omit<RemoteAgentContext, keyof TaskContext>);
    const handle = {
      abort,
      release: async () => {
        abort.abort(new Error('the remote agent stopped'));
        await call(path('release'), {}).catch(() => undefined);
      },
    };
    running.add(handle);
    const stopBeats = heartbeat(t, abort, (usd) => {
      // spend only adds up: the server's figure lowers this one (others' spend), never raises it (a cost of
      // this attempt's may still be on its way)
      budget = budget === undefined ? usd : Math.min(budget, usd);
    });
    // AIP-16 files: a scratch root of this process's own, the inputs fetched into it, the outputs sent back from it
    let root: string | undefined;
    try {
      let value: unknown;
      try {
        if (hasFiles(t.files)) {
          root = await downloadInputs(transfer, t.token, t.files, abort, t.lease_ms);
          ctx.input = { ...t.input, [FS_ROOT]: root };
        }
        value = await opts.handler(ctx);
      } catch (e) {
        if (abort.aborted) return; // the server ended the attempt: nothing to report
        if (chain) await chain;
        const err = e as { code?: unknown; message?: unknown; retryable?: unknown; name?: unknown };
        const code = typeof err?.code === 'string' && err.code !== '' ? err.code : typeof err?.name === 'string' && err.name !== '' ? err.name : 'Error';
        traced?.span.fail(code, typeof err?.message === 'string' ? err.message : String(e));
        await report(path('fail'), { code, message: typeof err?.message === 'string' ? err.message : String(e), retryable: err?.retryable !== false, ...tp }, t.lease_ms, abort);
        return;
      }
      if (abort.aborted) return;
      if (chain) await chain;
      if (root !== undefined && t.files) {
        await uploadOutputs(transfer, t.token, t.files, root, abort, t.lease_ms, ctx.log);
        if (abort.aborted) return;
        if (chain) await chain;
      }
      for (let fixes = 0; ; fixes++) {
        // the next task comes back with the answer, claimed under an id of this completion's own (below)
        const next = !stopping.signal.aborted;
        const claimId = next && claimIds ? nextClaimId() : undefined;
        const body: Record<string, unknown> = { output: value === undefined ? null : value, claim_next: next };
        if (claimId !== undefined) body['claim_id'] = claimId;
        if (traced) body['traceparent'] = traced.span.traceparent;
        let r = await settle(path('complete'), body, t.lease_ms, abort);
        if (claimId !== undefined && r.status === 400 && JSON.stringify(r.body).includes('claim_id')) {
          // a server older than the completion's claim id refuses the field: this agent stops sending it
          claimIds = false;
          r = await settle(path('complete'), { output: value === undefined ? null : value, claim_next: next, ...tp }, t.lease_ms, abort);
        }
        if (r.status === 200) {
          completed++;
          const refused = r.body['next_rejection'];
          if (refused !== null && typeof refused === 'object') {
            const x = refused as { status?: unknown; error?: unknown };
            claimRejected(typeof x.status === 'number' ? x.status : 0, { error: x.error });
          }
          const next = r.body['next'];
          return next !== null && typeof next === 'object' ? (next as unknown as ClaimedTask) : undefined;
        }
        if (r.doubted && r.status === 409 && endedAs(r.body) === 'completed') {
          // an earlier try landed and its answer was lost, with the next task it claimed: that one goes back to the queue now
          completed++;
          if (claimId !== undefined) await cancelClaim(claimId);
          return;
        }
        if (r.status !== 422) {
          if (r.status !== 409) onError(new HttpFailure(r.status, r.body));
          return;
        }
        const err = (r.body['error'] ?? {}) as Record<string, unknown>;
        const rejection: OutputRejection = { code: typeof err['code'] === 'string' ? err['code'] : 'OutputRejected', message: typeof err['message'] === 'string' ? err['message'] : '', payload: err };
        const fixed = fixes < 3 && opts.onRejected ? await opts.onRejected(rejection, ctx) : undefined;
        if (fixed === undefined) {
          traced?.span.fail(rejection.code, rejection.message);
          await report(path('fail'), { code: rejection.code, message: rejection.message, retryable: true, ...tp }, t.lease_ms, abort);
          return;
        }
        value = fixed;
      }
    } catch (e) {
      onError(e as Error);
    } finally {
      abort.abort(TASK_ENDED);
      traced?.span.end();
      running.delete(handle);
      await stopBeats();
      if (root !== undefined) await removeRoot(root);
    }
  }

  async function report(p: string, body: unknown, leaseMs: number, abort: TaskAbort): Promise<void> {
    const r = await settle(p, body, leaseMs, abort);
    if (r.status !== 200 && r.status !== 409) onError(new HttpFailure(r.status, r.body));
  }

  /**
   * Sends an attempt's outcome (a completion or a failure). A try whose answer never came (the connection
   * reset or refused, no answer in time: a proxy or the network dropped it, the server restarting) is sent
   * again, the same body, after 100 ms doubling to 2 s, for up to a lease (at least 5 s): the heartbeats keep
   * the task this agent's meanwhile, and a task they lose (the server handed it back) ends the tries.
   * Without them the outcome was lost and the task ran again after its lease. `doubted` says a try's answer
   * was lost: a 409 then may be that try having landed (the token ended as this outcome).
   */
  async function settle(p: string, body: unknown, leaseMs: number, abort: TaskAbort): Promise<{ status: number; body: Record<string, unknown>; doubted: boolean }> {
    // (an outcome's call has no signal of the task's: the task's end does not abort it)
    return again(() => call(p, body), leaseMs, abort, false);
  }

  /**
   * `send` (a call of a running task, made with the task's signal unless `ownSignal` is false) sent again,
   * as `settle` says, when its answer never came. For the task's own calls that may go twice: a checkpoint (the same value), a sibling's output (a read), an
   * input poll (by its index; a question is asked again only once the server says it never got it).
   */
  async function again(send: () => Promise<{ status: number; body: Record<string, unknown> }>, leaseMs: number, abort: TaskAbort, ownSignal = true): Promise<{ status: number; body: Record<string, unknown>; doubted: boolean }> {
    const until = performance.now() + Math.max(leaseMs, SETTLE_RETRY_MIN_MS);
    let wait = 100;
    let doubted = false;
    let afterAbort = false;
    for (;;) {
      try {
        const r = (await send()) as { status: number; body: Record<string, unknown>; doubted: boolean };
        r.doubted = doubted;
        return r;
      } catch (e) {
        // a task call the task's end aborted (its own signal) is not a lost answer: nothing to tell, nothing to try again
        if (closed || afterAbort || (ownSignal && abort.aborted) || performance.now() + wait > until) throw e;
        doubted = true;
        onError(e as Error);
        // a heartbeat that found the attempt ended (by this very outcome, landed, perhaps) ends the wait but
        // not the tries: one more, at once, says which
        if (abort.aborted) afterAbort = true;
        else await sleep(wait, abort.signal);
        if (abort.aborted) afterAbort = true;
        wait = Math.min(wait * 2, 2_000);
      }
    }
  }

  /**
   * Heartbeats: each running task beats every third of its lease until it ends; a task is aborted when the
   * server says stop, or no beat got through for a lease; each beat's answer hands on the budget. One timer
   * for all the agent's tasks, armed for the earliest beat due (a task that ends before its first beat costs
   * no timer of its own: a timer made and cleared per task was a tenth of the client's work per task).
   */
  interface Beating {
    t: ClaimedTask;
    abort: TaskAbort;
    onBudget: (usd: number) => void;
    every: number;
    /** When its next beat is due (monotonic); Infinity while a beat is in flight. */
    due: number;
    lastOk: number;
    inFlight: Promise<void> | undefined;
  }
  const beating = new Set<Beating>();
  let beatTimer: NodeJS.Timeout | undefined;
  let beatTimerAt = Infinity;
  function armBeats(at: number): void {
    if (at >= beatTimerAt) return;
    clearTimeout(beatTimer);
    beatTimerAt = at;
    beatTimer = setTimeout(beatsDue, Math.max(0, at - performance.now()));
  }
  function beatsDue(): void {
    beatTimer = undefined;
    beatTimerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const b of beating) {
      if (b.due <= now) {
        b.due = Infinity;
        if (!b.abort.aborted) b.inFlight = beatOnce(b);
      } else if (b.due < next) next = b.due;
    }
    if (next !== Infinity) armBeats(next);
  }
  async function beatOnce(b: Beating): Promise<void> {
    const { t, abort } = b;
    try {
      const r = await call(`/tasks/${t.token}/heartbeat`, {}, undefined, Math.max(50, t.lease_ms));
      if (r.status === 200 && r.body['stop'] !== true) {
        b.lastOk = performance.now();
        if (typeof r.body['remaining_budget_usd'] === 'number') b.onBudget(r.body['remaining_budget_usd']);
      }
      else if (r.status === 200 || r.status === 409) {
        abort.abort(new Error(`the server ended the attempt: ${String(r.body['reason'] ?? (r.body['error'] as { message?: string } | undefined)?.message ?? r.body['status'])}`));
        return;
      } else onError(new HttpFailure(r.status, r.body));
    } catch (e) {
      onError(e as Error);
    }
    if (abort.aborted) return;
    if (performance.now() - b.lastOk > t.lease_ms) {
      abort.abort(new Error('no heartbeat reached the server for a lease: the task is lost'));
      return;
    }
    if (!beating.has(b)) return;
    b.due = performance.now() + b.every;
    armBeats(b.due);
  }
  /** Starts a task's heartbeats; returns their stop, which waits for a beat in flight. */
  function heartbeat(t: ClaimedTask, abort: TaskAbort, onBudget: (usd: number) => void): () => Promise<void> {
    const every = Math.max(50, Math.floor(t.lease_ms / 3));
    // durations on the monotonic clock: a step of this machine's clock neither loses a healthy task nor keeps a lost one
    const now = performance.now();
    const b: Beating = { t, abort, onBudget, every, due: now + every, lastOk: now, inFlight: undefined };
    beating.add(b);
    armBeats(b.due);
    return () => {
      // the timer stays armed when no task is left (it then finds none): a slot's next task needs no new one
      beating.delete(b);
      return b.inFlight ?? RESOLVED;
    };
  }

  const slots = Array.from({ length: Math.max(1, opts.concurrency ?? 1) }, () => slot());
  const all = Promise.all(slots);

  return {
    get completed() {
      return completed;
    },
    async stop(graceMs = 10_000) {
      stopping.abort();
      const end = performance.now() + graceMs;
      while (running.size > 0 && performance.now() < end) await sleep(20);
      await Promise.all([...running].map((h) => h.release()));
      await all;
      closed = true;
      clearTimeout(beatTimer);
      beatTimer = undefined;
      beatTimerAt = Infinity;
      if (pool) await (await pool).destroy();
    },
  };
}

/**
 * A remote handler's ctx: the task's fields (own properties, as in an object literal), its calls (set
 * by runTask), and `signal`, whose AbortController is made only when it is read (TaskAbort).
 */
class TaskContext {
  readonly #abort: TaskAbort;
  readonly token: string;
  readonly traceparent: string | undefined;
  readonly trace: RemoteAgentContext['trace'];
  /** The claim's input; with files, `_workflowFsRoot` set to this process's own root once the inputs are fetched. */
  input: JsonObject;
  readonly phase: string;
  readonly item?: { index: number; value: Json };
  readonly taskId: string;
  readonly runId: string;
  readonly attempt: number;
  readonly agent: string;
  readonly idempotencyKey: string;
  readonly inputResponse: Json | undefined;
  readonly lastCheckpoint: Json | undefined;
  readonly initialState: JsonObject;

  constructor(t: ClaimedTask, abort: TaskAbort, traceparent: string | undefined, trace: RemoteAgentContext['trace']) {
    this.#abort = abort;
    this.token = t.token;
    this.traceparent = traceparent;
    this.trace = trace;
    this.input = t.input;
    this.phase = t.phase;
    if (t.item !== undefined) this.item = t.item;
    this.taskId = t.task_id;
    this.runId = t.run_id;
    this.attempt = t.attempt;
    this.agent = t.agent;
    this.idempotencyKey = t.idempotency_key ?? t.task_id;
    this.inputResponse = t.input_response;
    this.lastCheckpoint = t.last_checkpoint;
    this.initialState = t.initial_state ?? {};
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }
}

/**
 * One answer read through undici's dispatch (its handler interface, Dispatcher.DispatchHandler): the
 * status and the body as text, or the error that ended the request (a refused or reset connection, a
 * timeout).
 */
class Answer implements Dispatcher.DispatchHandler {
  readonly done: Promise<{ status: number; text: string }>;
  private resolve!: (a: { status: number; text: string }) => void;
  private reject!: (e: Error) => void;
  private status = 0;
  private chunks: Buffer[] = [];

  constructor() {
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  onRequestStart(): void {}

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number): void {
    this.status = statusCode;
    this.chunks.length = 0;
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    const c = this.chunks;
    this.resolve({ status: this.status, text: c.length === 0 ? '' : c.length === 1 ? c[0]!.toString('utf8') : Buffer.concat(c).toString('utf8') });
  }

  onResponseError(_c: Dispatcher.DispatchController, error: Error): void {
    this.reject(error);
  }
}

/**
 * A task's abort: its AbortController is made only when the handler reads `ctx.signal` (most never do,
 * and making and aborting one per task was a tenth of a remote agent's CPU per task).
 */
class TaskAbort {
  private ctl: AbortController | undefined;
  private why: { reason: unknown } | undefined;

  get signal(): AbortSignal {
    if (!this.ctl) {
      this.ctl = new AbortController();
      if (this.why) this.ctl.abort(this.why.reason);
    }
    return this.ctl.signal;
  }

  get aborted(): boolean {
    return this.why !== undefined;
  }

  abort(reason: unknown): void {
    if (this.why) return;
    this.why = { reason };
    this.ctl?.abort(reason);
  }
}

/** A claim's 422 or 409 that names a claim-time rejection (`UnresolvableInputError`, `UpstreamIntentSuspendedError`). */
function claimRejectionOf(status: number, body: Record<string, unknown>): ClaimRejection | undefined {
  if (status !== 422 && status !== 409) return undefined;
  const err = body['error'];
  if (err === null || typeof err !== 'object') return undefined;
  const e = err as Record<string, unknown>;
  const code = e['code'];
  if (typeof code !== 'string' || (status === 422 && code !== 'UnresolvableInputError') || (status === 409 && code !== 'UpstreamIntentSuspendedError')) return undefined;
  const text = (k: string): string => (typeof e[k] === 'string' ? e[k] : '');
  return { status, code, message: text('message'), runId: text('run_id'), phase: text('phase'), taskId: text('task_id'), payload: e };
}

/** AIP-16's reserved input field: the scratch root a body reads and writes its files under. */
const FS_ROOT = '_workflowFsRoot';

function hasFiles(f: TaskFiles | undefined): f is TaskFiles {
  return f !== undefined && f !== null && (f.inputs.length > 0 || f.outputs.length > 0);
}

/** The least time an outcome whose answer was lost is sent again for (settle; a lease if longer). */
const SETTLE_RETRY_MIN_MS = 5_000;

/** Whether a 400 says the attempt has no input `n` (an input poll for a question that never reached the server). */
function noSuchInput(body: Record<string, unknown>, n: number): boolean {
  const err = body['error'];
  const message = err !== null && typeof err === 'object' ? (err as Record<string, unknown>)['message'] : undefined;
  return typeof message === 'string' && message.endsWith(`there is no input ${n}`);
}

/** How an attempt ended, from a 409's error (`status`: completed, failed, aborted, lost, released, unknown). */
function endedAs(body: Record<string, unknown>): unknown {
  const err = body['error'];
  return err !== null && typeof err === 'object' ? (err as Record<string, unknown>)['status'] : undefined;
}

/** How long any other call may wait for its answer (a completion waits for its commit): then it fails. */
const CALL_TIMEOUT_MS = 120_000;
/** Seconds a long poll may run past its own wait before the client gives up on the server. */
const POLL_MARGIN_S = 30;
/** The server's wait on an input poll (no `?wait=`: its default). */
const INPUT_WAIT_S = 20;

const RESOLVED = Promise.resolve();

/** The reason a finished task's signal carries (one instance: a task's end is no error to trace). */
const TASK_ENDED = new Error('the task ended');

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
