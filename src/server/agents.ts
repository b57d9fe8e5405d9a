/**
 * The remote-agent routes (issue 17's pull protocol): claim, heartbeat, complete, fail, release,
 * input, cost, log. A remote claim takes an attempt the server's worker already claimed in the store
 * (remote.ts): the same claim, lease and fencing as a local one. Every route is in ROUTES
 * (schemas.ts) with `action: 'agent'` (an `agent:<id>` key or admin at the edge), then checked here
 * per request with `mayActAsAgent` against the task's own agent.
 */
import type { Json, JsonObject } from '../core/json.js';
import { AgentError } from '../engine/agent.js';
import { StopSignal, toOutcome } from '../engine/attempt.js';
import { OUTPUT_REJECTED_KIND } from '../engine/events.js';
import type { Engine } from '../api/engine.js';
import { checkTaskOutputs } from '../workflow/runtime.js';
import { HttpError, rawBody, type PlainRequest, type Request } from './http.js';
import { mayActAsAgent } from './keys.js';
import { isRejection, remainingBudgetOf, type RemoteAgents, type RemoteTask } from './remote.js';
import { DEFAULT_FILE_LIMIT, UPLOAD_STALL_MS, fileBody, openTaskFile, tooLarge, uploadTarget, uploadsSettled, writeUpload } from './remote-files.js';
import type { ClaimRejection } from './remote-rejections.js';
import { linkRemoteSpan } from './trace.js';

export interface AgentRoutesHost {
  engine: Engine;
  remote: RemoteAgents;
  log: (line: string) => void;
  /** Largest file a remote agent may upload, bytes (default DEFAULT_FILE_LIMIT). */
  fileLimit?: number | undefined;
}

type Handler = (r: Request) => Promise<Response>;

const DEFAULT_WAIT_S = 20;

/**
 * The handlers of the remote-agent routes, by operationId, and the completion alone as a plain function
 * (its answer's body, or an HttpError thrown) for app.ts's fast path, which serves the same route
 * without Hono's request and response objects.
 */
export function agentRouteHandlers(host: AgentRoutesHost): { handlers: Record<string, Handler>; complete: (r: PlainRequest) => Promise<JsonObject> } {
  const { remote, engine } = host;
  remote.attach({
    handBack: async (runId, phase, attempt) => {
      const w = engine.work;
      if (!w.holds(runId)) return false;
      await w.submit(runId, { kind: 'lease_expired', phase, attempt, owner: w.id, handBack: true });
      return true;
    },
  });

  /** The live task of a token, for a caller who may act as its agent; 409 (with why) when it ended or is unknown. */
  const live = (r: PlainRequest, outcome?: 'completed' | 'failed'): RemoteTask => {
    const token = r.params['token']!;
    // a key that may not act for the task's agent (403) does not count as its agent's use of the token
    const t = remote.peek(token);
    if (t) {
      if (!mayActAsAgent(r.principal, t.agent, t.delegatedTo)) throw forbidden(r, t.agent);
      remote.used(t);
      remote.beat(t);
      return t;
    }
    const ended = remote.endedTask(token);
    if (!ended) {
      // a token made before a restart, or by another server with the same keys on this store, still names its attempt: its late outcome is recorded there (never applied: the outcome's worker is not the lease holder)
      const named = remote.attemptOfToken(token);
      if (named && mayActAsAgent(r.principal, named.agent)) {
        if (outcome) void recordStale(named.runId, named.key, named.attempt, `remote agent ${r.principal.name}`, outcome === 'completed');
        throw new HttpError(409, 'unknown-token', `this server holds no live task with this token: attempt ${named.attempt} of ${named.key} (run ${named.runId}) ended before it started, or another server holds it${outcome ? '; the outcome is recorded, not applied' : ''}; claim again`, { status: 'unknown', stop: true });
      }
      if (outcome) host.log(`remote agent ${r.principal.name}: ${outcome === 'completed' ? 'a completion' : 'a failure'} with an unknown token (made up, or from a server with other keys): refused`);
      throw new HttpError(409, 'unknown-token', 'this server knows no task with this token: it ended before a restart, or never was; claim again', { status: 'unknown', stop: true });
    }
    if (!mayActAsAgent(r.principal, ended.agent, ended.delegatedTo)) throw forbidden(r, ended.agent);
    // a late outcome is recorded on the run (task.stale_outcome), never applied: its worker is not the lease holder
    if (outcome) void recordStale(ended.runId, ended.phase, ended.attempt, `remote agent ${r.principal.name}`, outcome === 'completed');
    throw new HttpError(409, 'task-ended', `attempt ${ended.attempt} of ${ended.phase} (run ${ended.runId}) has ended (${ended.status}): ${ended.reason}`, { status: ended.status, reason: ended.reason, stop: true });
  };

  /** A run's commit may race the worker's own (the command's transaction then says "changed"): a few tries. */
  const recordStale = async (runId: string, phase: string, attempt: number, by: string, completed: boolean): Promise<void> => {
    for (let i = 0; ; i++) {
      try {
        await engine.recordStaleOutcome(runId, phase, attempt, by, completed);
        return;
      } catch (e) {
        if (i >= 4) {
          host.log(`recording a stale remote outcome of run ${runId}: ${(e as Error).message}`);
          return;
        }
        await new Promise((res) => setTimeout(res, 20 * (i + 1)));
      }
    }
  };

  const complete = async (r: PlainRequest): Promise<JsonObject> => {
    let t = live(r, 'completed');
    const output = r.body['output'];
    // the same rules as the engine's own, before the attempt is settled: a rejection keeps the task claimed
    const outcome = toOutcome(true, output);
    if (!outcome.ok) throw new HttpError(422, outcome.failure.code, outcome.failure.message, { retryable: outcome.failure.retryable });
    const checked = checkTaskOutputs(t.phase, outcome.output, { taskId: t.ctx.taskId });
    if (!checked.ok) {
      const payload: JsonObject = checked.error.toJSON();
      t.ctx.record('remote_output_rejected', payload);
      throw new HttpError(422, checked.error.error, checked.error.message, payload);
    }
    if (t.uploads && t.uploads.size > 0) {
      // the engine checks the output files once the attempt returns: every upload sent before this completion lands (or fails) first
      // while they move: an abandoned one (no bytes for a while) does not hold the completion, nor lose the task its lease
      await uploadsSettled(t.uploads, Math.min(UPLOAD_STALL_MS, remote.leaseMs / 3));
      t = live(r, 'completed');
    }
    const { runId, attempt } = t.ctx;
    const phase = t.key;
    linkRemoteSpan(t.ctx, r.body['traceparent']);
    remote.end(t, 'completed', 'the remote agent completed it', true, output);
    const status = await remote.committed(runId, phase, attempt);
    if (r.body['claim_next'] !== true) return { status, committed: applied(status) };
    // the next claim folded into this completion: a task the same key may take, without waiting. Under the
    // agent's claim id when it sent one: an agent whose answer was lost cancels it, and the task goes back at once
    const next = await remote.claim(t.agent, (x) => mayActAsAgent(r.principal, t.agent, x.delegatedTo), 0, undefined, claimKey(t.agent, r.body['claim_id']));
    // a task of the agent refused at claim time is told here as a claim would be: what its 422 or 409 would carry
    if (next && isRejection(next)) return { status, committed: applied(status), next: null, next_rejection: { status: next.status, error: rejectionError(next) } };
    return { status, committed: applied(status), next: next ? (remote.view(next) as unknown as JsonObject) : null };
  };

  const handlers: Record<string, Handler> = {
    claimTask: async (r) => {
      const agent = r.params['agent']!;
      if (!mayActAsAgent(r.principal, agent, remote.delegatesOf(agent))) throw forbidden(r, agent);
      const waitS = typeof r.query['wait'] === 'number' ? r.query['wait'] : DEFAULT_WAIT_S;
      const t = await remote.claim(agent, (x) => mayActAsAgent(r.principal, agent, x.delegatedTo), waitS * 1000, r.c.req.raw.signal, claimKey(agent, r.body['claim_id']));
      if (!t) return r.c.body(null, 204);
      // the engine refused a task of this agent at claim time: 422 UnresolvableInputError, 409 UpstreamIntentSuspendedError
      if (isRejection(t)) {
        const { code, message, ...payload } = rejectionError(t);
        throw new HttpError(t.status, code as string, message as string, payload);
      }
      return r.c.json(remote.view(t) as unknown as JsonObject);
    },

    cancelClaim: (r) => {
      const agent = r.params['agent']!;
      if (!mayActAsAgent(r.principal, agent, remote.delegatesOf(agent))) throw forbidden(r, agent);
      return Promise.resolve(r.c.json(remote.cancelClaim(claimKey(agent, r.params['claim'])!)));
    },

    heartbeatTask: (r) => {
      const token = r.params['token']!;
      const t = remote.peek(token);
      if (t) {
        if (!mayActAsAgent(r.principal, t.agent, t.delegatedTo)) throw forbidden(r, t.agent);
        remote.used(t);
        const until = remote.beat(t);
        return Promise.resolve(r.c.json({ status: t.inputs.some((s) => !s.answered) ? 'waiting_input' : 'running', stop: false, cancelled: false, lease_expires_at: until, ...remainingBudgetOf(t.ctx, true) }));
      }
      const ended = remote.endedTask(token);
      if (!ended) throw new HttpError(409, 'unknown-token', 'this server knows no task with this token: it ended before a restart, or never was; claim again', { status: 'unknown', stop: true });
      if (!mayActAsAgent(r.principal, ended.agent, ended.delegatedTo)) throw forbidden(r, ended.agent);
      return Promise.resolve(r.c.json({ status: ended.status, stop: true, cancelled: ended.status === 'aborted' || ended.status === 'lost', reason: ended.reason }));
    },

    completeTask: async (r) => r.c.json(await complete(r)),

    failTask: async (r) => {
      const t = live(r, 'failed');
      const b = r.body as { code: string; message: string; retryable?: boolean; details?: JsonObject };
      const { runId, attempt } = t.ctx;
      const phase = t.key;
      linkRemoteSpan(t.ctx, r.body['traceparent']);
      remote.end(t, 'failed', `the remote agent failed it: ${b.code}`, false, new AgentError(b.code, b.message, b.details ?? {}, b.retryable !== false));
      const status = await remote.committed(runId, phase, attempt);
      return r.c.json({ status, committed: applied(status) });
    },

    releaseTask: async (r) => {
      const t = live(r);
      await remote.giveBack(t, 'released', `the remote agent ${r.principal.name} released it`);
      return r.c.json({ status: 'released' });
    },

    taskInput: async (r) => {
      const t = live(r);
      let n: number;
      if (typeof r.body['input'] === 'number') {
        n = r.body['input'];
        if (n >= t.inputs.length) throw new HttpError(400, 'invalid-request', `this attempt asked ${t.inputs.length} question${t.inputs.length === 1 ? '' : 's'}; there is no input ${n}`);
      } else {
        const b = r.body as { question: string; choices?: Json[]; schema?: JsonObject; timeout_ms?: number };
        n = remote.ask(t, { question: b.question, ...(b.choices !== undefined ? { choices: b.choices } : {}), ...(b.schema !== undefined ? { schema: b.schema } : {}), ...(b.timeout_ms !== undefined ? { timeoutMs: b.timeout_ms } : {}) });
      }
      const waitS = typeof r.query['wait'] === 'number' ? r.query['wait'] : DEFAULT_WAIT_S;
      const slot = await remote.answer(t, n, waitS * 1000, r.c.req.raw.signal);
      if (slot.error !== undefined) {
        const e = slot.error;
        if (e instanceof AgentError && e.code === 'InvalidInputRequest') throw new HttpError(400, 'invalid-request', e.message);
        if (e instanceof StopSignal || e instanceof AgentError) throw new HttpError(409, 'task-ended', `the input request ended the attempt: ${e.message}`, { stop: true });
        throw new HttpError(409, 'task-ended', 'the attempt ended while it waited for input', { stop: true });
      }
      // the attempt ended while the poll waited (a cancel, a timeout, a lost lease): the 409 every call with
      // its token now gets, stop: true, rather than a 202 that asks the agent to poll again (a server that
      // stops answers 202, docs/server.md: the agent polls the server that comes back)
      if (!slot.answered && !remote.stopping && remote.peek(r.params['token']!) === undefined) live(r);
      if (!slot.answered) return r.c.json({ input: n, answered: false }, 202);
      return r.c.json({ input: n, answered: true, value: slot.value ?? null });
    },

    taskCost: (r) => {
      const t = live(r);
      t.ctx.reportCost(r.body['usd'] as number);
      // what is left after this report (it counts from now, though its commit may not have come yet)
      return Promise.resolve(r.c.json({ recorded: true, ...remainingBudgetOf(t.ctx, true) }));
    },

    taskCheckpoint: async (r) => {
      const t = live(r);
      try {
        await t.ctx.checkpoint(r.body['value'] ?? null);
      } catch (e) {
        if (e instanceof StopSignal) throw new HttpError(409, 'task-ended', `the attempt ended before its checkpoint was saved: ${e.message}`, { stop: true });
        throw e;
      }
      return r.c.json({ recorded: true });
    },

    taskSibling: (r) => {
      const t = live(r);
      const phase = r.body['phase'] as string;
      return Promise.resolve(r.c.json({ phase, output: t.ctx.getSiblingOutput(phase) ?? null }));
    },

    taskEvent: (r) => {
      const t = live(r);
      const kind = r.body['kind'] as string;
      // the server's own record of a refused completion (a contract rejection on the attempt span): not the agent's to write
      if (kind === OUTPUT_REJECTED_KIND) throw new HttpError(400, 'invalid-request', `\`kind\`: \`${kind}\` is recorded by the server when it refuses a completion (422); name your event otherwise`);
      t.ctx.record(kind, r.body['data'] as JsonObject);
      return Promise.resolve(r.c.json({ recorded: true }));
    },

    getTaskFile: async (r) => {
      const t = live(r);
      const f = await openTaskFile(t.files, r.params['key']!);
      // bytes going out are the agent's heartbeat too: a long download alone keeps the task
      try {
        return r.c.body(fileBody(f.handle, () => t.state === 'claimed' && remote.beat(t)), 200, { 'content-type': f.contentType, 'content-length': String(f.size) });
      } catch (e) {
        await f.handle.close();
        throw e;
      }
    },

    putTaskFile: async (r) => {
      const t = live(r);
      const target = uploadTarget(t.files, r.params['key']!);
      const limit = host.fileLimit ?? DEFAULT_FILE_LIMIT;
      // a token that ended while the bytes came is answered as any ended token is (409), and nothing is written
      const stillHeld = (): void => {
        if (t.state !== 'claimed') live(r);
      };
      const progress = { lastByteAt: performance.now() };
      // bytes arriving are the agent's heartbeat: a long upload alone keeps the task
      const upload = writeUpload(target, rawBody(r.c, limit, tooLarge), limit, stillHeld, () => {
        progress.lastByteAt = performance.now();
        if (t.state === 'claimed') remote.beat(t);
      });
      const uploads = (t.uploads ??= new Map());
      uploads.set(upload, progress);
      try {
        return r.c.json(await upload);
      } catch (e) {
        // the root went with its attempt between the check and the rename
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') stillHeld();
        throw e;
      } finally {
        uploads.delete(upload);
      }
    },

    taskLog: (r) => {
      const t = live(r);
      t.ctx.log(r.body['message'] as string);
      return Promise.resolve(r.c.json({ recorded: true }));
    },
  };
  return { handlers, complete };
}

/**
 * Whether the engine applied the outcome, from what its commit became: `completed`, `failed`,
 * `rejected` (a contract refused the output after), `released`. Not `stale` (the attempt had lost its
 * task in the same instant: recorded as task.stale_outcome, never applied), `aborted` (a cancel or a
 * timeout ended the attempt first) nor `unknown` (no commit seen).
 */
function applied(status: string): boolean {
  return status !== 'unknown' && status !== 'aborted' && status !== 'stale';
}

/**
 * A claim-time rejection as an error body: `code` is the error's name, then the RFC-0024 payload as
 * `task.claim_rejected` records it (`error`, `task_id`, `phase_name`, `unresolvable_refs` or
 * `suspended_intent_id` and `expected_resume_at`, `message`), and the run and task key it concerns.
 */
function rejectionError(x: ClaimRejection): JsonObject {
  const name = typeof x.error['error'] === 'string' ? x.error['error'] : x.status === 409 ? 'UpstreamIntentSuspendedError' : 'UnresolvableInputError';
  const message = typeof x.error['message'] === 'string' ? x.error['message'] : `the task ${x.phase} of run ${x.runId} was refused at claim time`;
  return { code: name, message, ...x.error, run_id: x.runId, phase: x.phase };
}

function forbidden(r: PlainRequest, agent: string): HttpError {
  return new HttpError(403, 'forbidden', `key \`${r.principal.name}\` may not act as agent \`${agent}\` (an agent:${agent} key, one its phase delegates to, or admin)`);
}

/** A claim id as the hub keeps it: the agent's own, so that a key of another agent cannot cancel it. */
function claimKey(agent: string, id: unknown): string | undefined {
  return typeof id === 'string' ? `${agent}\u0000${id}` : undefined;
}
