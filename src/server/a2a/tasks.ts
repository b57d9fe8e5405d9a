/**
 * `baton serve --a2a`: each registered workflow is a skill of one A2A agent, and each A2A task is a
 * run (the task id is the run id, so a task outlives the server and is read back from the store).
 * This is the SDK's `A2ARequestHandler` over the engine, behind the SDK's own JSON-RPC transport
 * handler (routes.ts); nothing is kept in memory that the store does not already hold.
 *
 * Task states map from the run: running or waiting -> working; an open gate (an input gate, an
 * approval) -> input-required; completed -> completed, with the outputs of the workflow's last
 * phases as a data-part artifact; failed -> failed; cancelled -> canceled. A message on an
 * input-required task answers its open gate: an input gate gets the message's data part (or its
 * text), an approval gate `approve` / `deny` (or true / false).
 */
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type { Engine } from '../../api/engine.js';
import type { RunRecord } from '../../engine/ports.js';
import { WorkflowSpec } from '../../api/spec.js';
import { BatonError } from '../../core/errors.js';
import type { Json, JsonObject } from '../../core/json.js';
import type { GateResult } from '../../engine/result.js';
import { loadWorkflow } from '../../workflow/compile.js';
import { answerOf, dataOf, dataPart, isInterrupted, isTerminal, message, stateName, textPart, type A2aMessage, type A2aSdk, type A2aTask } from '../../agents/a2a-sdk.js';
import type { ChangeHub } from '../../api/changes.js';
import type { Principal } from '../keys.js';
import type { RegisteredWorkflow } from '../workflows.js';

type SdkErrors = typeof import('@a2a-js/sdk/errors');
type Req<K extends keyof A2ARequestHandler> = Parameters<A2ARequestHandler[K]>[0];

export interface A2aTasksHost {
  engine: Engine;
  workflows: ReadonlyMap<string, RegisteredWorkflow>;
  hub: ChangeHub;
  closing: AbortSignal;
  sdk: A2aSdk;
  errors: SdkErrors;
  card: () => import('@a2a-js/sdk').AgentCard;
}

/** The key under which the routes put the caller (keys.ts) in the SDK's call context. */
export const PRINCIPAL = 'baton.principal';
/** The key of an AbortSignal that fires when the caller goes away (a stream closed): waits on the run stop. */
export const GONE = 'baton.gone';

const WAIT_MS = 1000;

export class A2aTasks implements A2ARequestHandler {
  constructor(private readonly h: A2aTasksHost) {}

  getAgentCard(): Promise<import('@a2a-js/sdk').AgentCard> {
    return Promise.resolve(this.h.card());
  }

  /** The card declares `extendedAgentCard: false`, so UnsupportedOperationError (A2A 1.0 §3.3.4; ExtendedAgentCardNotConfiguredError is for a card that declares one). */
  getAuthenticatedExtendedAgentCard(): Promise<import('@a2a-js/sdk').AgentCard> {
    return Promise.reject(new this.h.errors.UnsupportedOperationError('this agent has no extended card (capabilities.extendedAgentCard is false)'));
  }

  async sendMessage(params: Req<'sendMessage'>, context: ServerCallContext): Promise<A2aTask> {
    const runId = await this.accept(params, context);
    if (params.configuration?.returnImmediately === true) return this.task(runId);
    let last: A2aTask | undefined;
    for await (const t of this.watch(runId, gone(context))) last = t;
    return last ?? this.task(runId);
  }

  async *sendMessageStream(params: Req<'sendMessageStream'>, context: ServerCallContext): AsyncGenerator<import('@a2a-js/sdk').StreamResponse, void, undefined> {
    const runId = await this.accept(params, context);
    yield* this.updates(runId, gone(context));
  }

  /** A stream of a task that has not ended: one that has is UnsupportedOperationError (A2A 1.0 §3.1.6, as the SDK's handler says). */
  async *resubscribe(params: Req<'resubscribe'>, context: ServerCallContext): AsyncGenerator<import('@a2a-js/sdk').StreamResponse, void, undefined> {
    const t = await this.task(this.taskId(params.id));
    const state: number = t.status?.state ?? 0;
    if (isTerminal(state)) throw new this.h.errors.UnsupportedOperationError(`task ${params.id} has ended (${stateName(state)}): SubscribeToTask follows a task that has not; read it with GetTask`);
    yield* this.updates(params.id, gone(context));
  }

  async getTask(params: Req<'getTask'>): Promise<A2aTask> {
    const t = await this.task(this.taskId(params.id));
    // historyLength: the most recent messages only (absent: all of them)
    const n = params.historyLength;
    if (typeof n === 'number' && Number.isInteger(n) && n >= 0) t.history = n === 0 ? [] : t.history.slice(-n);
    return t;
  }

  async cancelTask(params: Req<'cancelTask'>, context: ServerCallContext): Promise<A2aTask> {
    const t = await this.task(this.taskId(params.id));
    const state: number = t.status?.state ?? 0;
    if (isTerminal(state)) throw new this.h.errors.TaskNotCancelableError(`task ${params.id} has ended (${stateName(state)})`);
    await this.h.engine.cancel(params.id, 'cancelled by an A2A client (CancelTask)');
    let last = t;
    for await (const x of this.watch(params.id, gone(context), true)) last = x;
    // the run ended otherwise in the meantime (it completed before the cancel landed): not cancelled, as the SDK's handler says
    const end: number = last.status?.state ?? 0;
    if (isTerminal(end) && stateName(end) !== 'canceled') throw new this.h.errors.TaskNotCancelableError(`task ${params.id} ended (${stateName(end)}) before it could be cancelled`);
    return last;
  }

  listTasks(): Promise<never> {
    return Promise.reject(new this.h.errors.UnsupportedOperationError('ListTasks is not offered: list runs with GET /runs'));
  }
  createTaskPushNotificationConfig(): Promise<never> {
    return Promise.reject(new this.h.errors.PushNotificationNotSupportedError('push notifications are not offered: stream with SendStreamingMessage'));
  }
  getTaskPushNotificationConfig(): Promise<never> {
    return this.createTaskPushNotificationConfig();
  }
  listTaskPushNotificationConfigs(): Promise<never> {
    return this.createTaskPushNotificationConfig();
  }
  deleteTaskPushNotificationConfig(): Promise<never> {
    return this.createTaskPushNotificationConfig();
  }

  /** A task id a caller sent: an empty one is malformed (invalid params, as the SDK's handler says), not an unknown task. */
  private taskId(id: string): string {
    if (id.trim() === '') throw new this.h.errors.RequestMalformedError('the task id is required');
    return id;
  }

  /** A new message starts a run; one naming a task answers that run's open gate. The run's id. */
  private async accept(params: Req<'sendMessage'>, context: ServerCallContext): Promise<string> {
    const msg = params.message;
    if (!msg) throw new this.h.errors.RequestMalformedError('the request has no message');
    if (msg.messageId.trim() === '') throw new this.h.errors.RequestMalformedError('message.messageId is required');
    // a Message's content is its parts (A2A 1.0: at least one); the SDK reads a `parts` that is not an array as none
    if (msg.parts.length === 0) throw new this.h.errors.RequestMalformedError('message.parts is required: at least one part (the trigger as a data part, or an answer)');
    const principal = context.state.get(PRINCIPAL) as Principal | undefined;
    // who decides: the key's name; on a server without keys, the message's `as` metadata names the person (as `/approve`'s `as` does)
    const as: unknown = msg.metadata?.['as'];
    const by = !principal ? 'a2a' : principal.anonymous ? (typeof as === 'string' && as !== '' ? as : 'anonymous') : principal.name;
    if (msg.taskId !== '') {
      await this.answer(this.taskId(msg.taskId), msg.contextId, msg.parts, by);
      return msg.taskId;
    }
    const skill = skillOf(params.metadata) ?? skillOf(msg.metadata) ?? (this.h.workflows.size === 1 ? [...this.h.workflows.keys()][0] : undefined);
    if (skill === undefined) throw new this.h.errors.RequestMalformedError(`name the workflow to run as the message's \`skill\` metadata: this agent's skills are ${[...this.h.workflows.keys()].join(', ') || '(none: baton serve --workflows DIR registers them)'}`);
    const w = this.h.workflows.get(skill);
    if (!w) throw new this.h.errors.RequestMalformedError(`this agent has no skill \`${skill}\` (its skills: ${[...this.h.workflows.keys()].join(', ')})`);
    const compiled = await loadWorkflow(w.path);
    if (!compiled.ok) throw new this.h.errors.InvalidAgentResponseError(`the workflow \`${skill}\` is invalid on this server: ${compiled.diagnostics[0]?.message ?? 'unknown error'}`);
    const trigger = dataOf(msg.parts);
    try {
      return await this.h.engine.create(WorkflowSpec.fromResult(compiled), {
        ...(trigger !== undefined ? { trigger } : {}),
        bindings: { server: true, started_by: by, a2a: { context_id: msg.contextId } },
        path: w.path,
      });
    } catch (e) {
      if (e instanceof BatonError && e.code === 'usage') throw new this.h.errors.RequestMalformedError(`the trigger does not fit the workflow \`${skill}\`: ${e.message}`);
      throw e;
    }
  }

  /**
   * Answers the open gate of a run with a message's parts. As the SDK's handler checks a message on a
   * task: one that has ended takes none (UnsupportedOperationError), and a message of another context
   * is malformed.
   */
  private async answer(runId: string, contextId: string, parts: Parameters<typeof answerOf>[0], by: string): Promise<void> {
    const { record, result } = await this.inspect(runId);
    const over = record.status === 'completed' || record.status === 'failed' || record.status === 'cancelled';
    if (over) throw new this.h.errors.UnsupportedOperationError(`task ${runId} has ended (${record.status}): it takes no more messages`);
    const own = contextIdOf(record);
    if (contextId !== '' && contextId !== own) throw new this.h.errors.RequestMalformedError(`the message's contextId \`${contextId}\` is not task ${runId}'s (\`${own}\`)`);
    const gate = openGate(result.gates);
    if (!gate) throw new this.h.errors.UnsupportedOperationError(`task ${runId} is working and asks for nothing: a message on it answers an open gate only`);
    if (gate.approvers.length > 0 && !gate.approvers.includes(by)) throw new this.h.errors.RequestMalformedError(`${by} is not an approver of gate ${gate.id} (approvers: ${gate.approvers.join(', ')})`);
    const value = answerOf(parts);
    if (value === undefined) throw new this.h.errors.RequestMalformedError('the message holds no answer (a data part or a text part)');
    try {
      if (gate.kind === 'input') await this.h.engine.respond(runId, gate.id, value, by);
      else {
        const yes = value === true || (typeof value === 'string' && /^(approve|approved|yes)$/i.test(value.trim()));
        const no = value === false || (typeof value === 'string' && /^(deny|denied|no)$/i.test(value.trim()));
        if (!yes && !no) throw new this.h.errors.RequestMalformedError(`gate ${gate.id} is an approval: answer \`approve\` or \`deny\` (or true / false)`);
        if (yes) await this.h.engine.approve(runId, gate.id, by);
        else await this.h.engine.deny(runId, gate.id, by);
      }
    } catch (e) {
      if (e instanceof BatonError) throw new this.h.errors.RequestMalformedError(`gate ${gate.id}: ${e.message}`);
      throw e;
    }
  }

  private async inspect(runId: string): ReturnType<Engine['inspect']> {
    try {
      return await this.h.engine.inspect(runId);
    } catch (e) {
      if (e instanceof BatonError && e.code === 'unknown-run') throw new this.h.errors.TaskNotFoundError(`no task ${runId}`);
      throw e;
    }
  }

  /** The run as an A2A task. */
  async task(runId: string): Promise<A2aTask> {
    const { record, result } = await this.inspect(runId);
    const { TaskState, Role } = this.h.sdk;
    const ctxId = contextIdOf(record);
    const gate = openGate(result.gates);
    let state: number;
    let said = '';
    const artifacts: A2aTask['artifacts'] = [];
    switch (record.status) {
      case 'completed':
        state = TaskState.TASK_STATE_COMPLETED;
        artifacts.push({ artifactId: `${runId}.outputs`, name: 'outputs', description: 'the outputs of the workflow\'s last phases', parts: [dataPart(await this.outputs(record, result.phases))], metadata: undefined, extensions: [] });
        break;
      case 'failed':
        state = TaskState.TASK_STATE_FAILED;
        said = result.error ? `${result.error.code}: ${result.error.message}` : 'the run failed';
        break;
      case 'cancelled':
        state = TaskState.TASK_STATE_CANCELED;
        break;
      case 'running':
      case 'waiting':
        state = gate ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_WORKING;
        if (gate) said = gate.kind === 'input' ? (gate.question ?? 'an answer') : `approve or deny: ${gate.reason}`;
        break;
      default: {
        const never: never = record.status;
        return never;
      }
    }
    const statusMessage = said !== '' ? message(Role.ROLE_AGENT, [textPart(said), ...(gate ? [dataPart(gateView(gate))] : [])], { taskId: runId, contextId: ctxId }) : undefined;
    return {
      id: runId,
      contextId: ctxId,
      status: { state, message: statusMessage, timestamp: new Date(record.updatedAt).toISOString() },
      artifacts,
      history: this.history(record, result.gates, ctxId),
      metadata: { workflow: record.workflowName, run_id: runId, run_status: record.status, ...(gate ? { gate_id: gate.id } : {}) },
    };
  }

  /**
   * The task's messages, rebuilt from the run (every read gives the same, with the same ids): the
   * trigger the caller sent, then for each gate in the order opened, the question asked and the answer
   * or decision given (by an A2A follow-up, `baton respond`, the API: the run does not tell which).
   */
  private history(record: RunRecord, gates: readonly GateResult[], contextId: string): A2aMessage[] {
    const { Role } = this.h.sdk;
    const runId = record.runId;
    const ids = { taskId: runId, contextId };
    const said = (id: string, role: number, parts: ReturnType<typeof textPart>[]): A2aMessage => ({ ...message(role, parts, ids), messageId: `${runId}.${id}` });
    const out: A2aMessage[] = [said('trigger', Role.ROLE_USER, [dataPart(record.trigger)])];
    for (const g of [...gates].sort((a, b) => a.opened_at - b.opened_at)) {
      const asked = g.kind === 'input' ? (g.question ?? 'an answer') : `approve or deny: ${g.reason}`;
      out.push(said(`${g.id}.asked`, Role.ROLE_AGENT, [textPart(asked), dataPart(gateView(g))]));
      if (g.status === 'answered' && g.value !== undefined) out.push(said(`${g.id}.answer`, Role.ROLE_USER, [typeof g.value === 'string' ? textPart(g.value) : dataPart(g.value)]));
      else if (g.status === 'approved' || g.status === 'denied') out.push(said(`${g.id}.answer`, Role.ROLE_USER, [textPart(`${g.status === 'approved' ? 'approve' : 'deny'}${g.comment ? `: ${g.comment}` : ''}`)]));
    }
    return out;
  }

  /** The outputs of the phases nothing depends on: the one's object, or several keyed by phase. */
  private async outputs(record: Parameters<Engine['model']>[0], phases: Record<string, { output: JsonObject | null }>): Promise<JsonObject> {
    let sinks: string[];
    try {
      const model = await this.h.engine.model(record);
      const needed = new Set(model.phases.flatMap((p) => p.dependsOn));
      sinks = model.phases.map((p) => p.name).filter((n) => !needed.has(n));
    } catch {
      sinks = Object.keys(phases).filter((n) => !n.includes('['));
    }
    const present = sinks.filter((n) => phases[n]?.output);
    if (present.length === 1) return phases[present[0]!]!.output!;
    const out: JsonObject = {};
    for (const n of present) out[n] = phases[n]!.output!;
    return out;
  }

  /**
   * The task at each change of its run, until it ends or asks for input (`untilEnd`: until it ends).
   * Woken by the server's change hub (one wait on the store for every stream), never by polling.
   */
  private async *watch(runId: string, callerGone: AbortSignal | undefined, untilEnd = false): AsyncGenerator<A2aTask> {
    const stop = callerGone ? AbortSignal.any([this.h.closing, callerGone]) : this.h.closing;
    const unsubscribe = this.h.hub.subscribe();
    try {
      let last = '';
      for (;;) {
        const seen = this.h.hub.version(runId);
        const t = await this.task(runId);
        const key = JSON.stringify([t.status?.state, t.metadata?.['gate_id']]);
        if (key !== last) {
          last = key;
          yield t;
        }
        const state: number = t.status?.state ?? 0;
        if (isTerminal(state) || (!untilEnd && isInterrupted(state))) return;
        if (stop.aborted) return;
        await this.h.hub.next(runId, seen, WAIT_MS, stop);
      }
    } finally {
      unsubscribe();
    }
  }

  /** A stream: the task first, then a status update per change (and the outputs artifact before `completed`). */
  private async *updates(runId: string, callerGone: AbortSignal | undefined): AsyncGenerator<import('@a2a-js/sdk').StreamResponse, void, undefined> {
    let first = true;
    for await (const t of this.watch(runId, callerGone)) {
      if (first) {
        first = false;
        yield { payload: { $case: 'task', value: { ...t, artifacts: [] } } };
      }
      for (const a of t.artifacts) yield { payload: { $case: 'artifactUpdate', value: { taskId: t.id, contextId: t.contextId, artifact: a, append: false, lastChunk: true, metadata: undefined } } };
      yield { payload: { $case: 'statusUpdate', value: { taskId: t.id, contextId: t.contextId, status: t.status, metadata: t.metadata } } };
    }
  }
}

/** A task's contextId: the one its first message gave, else the run id (a context of its own). */
function contextIdOf(record: Pick<RunRecord, 'runId' | 'bindings'>): string {
  const bound = record.bindings['a2a'];
  return bound !== null && typeof bound === 'object' && !Array.isArray(bound) && typeof bound['context_id'] === 'string' && bound['context_id'] !== '' ? bound['context_id'] : record.runId;
}

function gone(context: ServerCallContext): AbortSignal | undefined {
  const s = context.state.get(GONE);
  return s instanceof AbortSignal ? s : undefined;
}

function skillOf(meta: Record<string, unknown> | undefined): string | undefined {
  const s = meta?.['skill'];
  return typeof s === 'string' && s !== '' ? s : undefined;
}

/** The open gate a caller may answer: the first opened, still pending. */
function openGate(gates: readonly GateResult[]): GateResult | undefined {
  return gates.filter((g) => g.status === 'open').sort((a, b) => a.opened_at - b.opened_at)[0];
}

function gateView(g: GateResult): JsonObject {
  const out: Record<string, Json> = { gate_id: g.id, kind: g.kind };
  if (g.phase !== undefined) out['phase'] = g.phase;
  if (g.question !== undefined) out['question'] = g.question;
  if (g.choices !== undefined) out['choices'] = g.choices;
  return out;
}
