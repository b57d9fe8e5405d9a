/**
 * The agent port: what the engine hands an agent and what it expects back. Adapters (in-process
 * functions, subprocesses, HTTP, LLMs) live in src/agents/ and all produce an AgentHandler.
 */
import type { Json, JsonObject } from '../core/json.js';

/** What `ctx.requestInput` asks a human (answered with `baton respond RUN GATE --value JSON`). */
export interface InputRequest {
  question: string;
  /** The answer must equal one of these. */
  choices?: Json[] | undefined;
  /** The answer must validate against this JSON Schema (2020-12). */
  schema?: JsonObject | undefined;
  /** Fail the attempt with `InputTimeout` when no answer comes within this time. */
  timeoutMs?: number | undefined;
}

export interface AgentContext {
  /** Exactly the phase's declared inputs, resolved by the executor (RFC-0024 §3.2). `{}` without `inputs`. */
  readonly input: JsonObject;
  /** The phase name (a fan-out item's too: its task is `taskId`, its element `item`). */
  readonly phase: string;
  /** In a fan-out phase (`for_each`): the item this task runs on, its element and 0-based index. */
  readonly item?: { readonly index: number; readonly value: Json } | undefined;
  readonly taskId: string;
  readonly runId: string;
  /** 1-based attempt number (retries count up). */
  readonly attempt: number;
  /**
   * The same for every attempt of this task (run and phase): a key for making the agent's side
   * effects idempotent, since an attempt in flight when a worker dies is run again (at least once).
   */
  readonly idempotencyKey: string;
  /**
   * Set when this attempt replaces one that asked for input and got its answer (the process that
   * asked is gone): the answer of the phase's last input gate. See also `requestInput`.
   */
  readonly inputResponse: Json | undefined;
  /**
   * The task's last checkpoint (`checkpoint(value)` of an earlier attempt): set when this attempt
   * follows one that saved progress (a timeout under `onTimeout: checkpoint_and_retry`, a retry, a
   * restart after a crash). Undefined on a first attempt.
   */
  readonly lastCheckpoint: Json | undefined;
  /**
   * Saves progress durably (a `task.checkpoint` event, committed before the promise resolves): a
   * later attempt of this task receives it as `lastCheckpoint`. JSON only; the last one wins.
   */
  checkpoint(value: Json): Promise<void>;
  /** The agent id this attempt runs as (the fallback agent after retries run out). */
  readonly agent: string;
  /** Aborted when the attempt times out, the run is cancelled or the run's budget is exhausted. */
  readonly signal: AbortSignal;
  /** The phase's `initial_state` (read-only). */
  readonly initialState: JsonObject;
  /** Reports spend in USD for this attempt; adds up. Checked against phase and run budgets. */
  reportCost(usd: number): void;
  /** RFC-0024 §5.2 escape hatch: a completed phase's recorded output. Recorded as an event when used. */
  getSiblingOutput(phase: string): JsonObject | undefined;
  /** Records a log line as an event (`task.log`). */
  log(message: string): void;
  /**
   * Records a structured adapter event (`task.agent_event` with `kind` and `data`): an LLM call's
   * token usage, a JSON repair, a tool call, a fallback from native structured output.
   */
  record(kind: string, data: JsonObject): void;
  /** USD this attempt may still spend before a phase or run budget is exceeded (undefined: no budget). */
  remainingBudgetUsd(): number | undefined;
  /**
   * Suspends the attempt until a human answers (the task is `suspended_awaiting_input`; the run
   * costs nothing meanwhile) and resolves to the answer, validated against `choices` / `schema`.
   * The k-th request of a phase is the k-th gate: an attempt that replaces one that asked (after a
   * restart) gets the recorded answer back at once, so an agent may simply ask again.
   */
  requestInput(request: InputRequest): Promise<Json>;
  /**
   * Tracing (docs/telemetry.md): the attempt's span, for the agent's own spans (model calls, tool
   * calls) and its `traceparent`. Undefined when no telemetry is configured.
   */
  readonly trace?: AttemptTrace | undefined;
}

/** An agent: returns the output object (a `_cost` number field is taken as spend, not recorded). */
export type AgentHandler = (ctx: AgentContext) => unknown;

/** An agent adapter that holds resources (a long-lived process, a connection). */
export interface ClosableAgent {
  readonly handler: AgentHandler;
  close(): Promise<void>;
}

/**
 * A run failure raised by an agent: a stable `code` (matched by `retry.retryable_errors`), a
 * `retryable` flag (false stops retries at once) and details kept in the event log.
 */
export class AgentError extends Error {
  override readonly name = 'AgentError';
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly retryable = true,
  ) {
    super(message);
  }
}

// ---- tracing (the telemetry port, engine/telemetry.ts): what an agent sees, as `ctx.trace` ----------

export type SpanAttributes = Record<string, string | number | boolean | readonly string[]>;

/** A span of this process, started now. */
export interface SpanHandle {
  /** W3C traceparent of this span (its children in other processes take it). */
  readonly traceparent: string;
  setAttributes(attrs: SpanAttributes): void;
  addEvent(name: string, attrs?: SpanAttributes): void;
  /** Ends it with status error; `type` is `error.type` (a stable code). */
  fail(type: string, message: string): void;
  end(): void;
}

/** What an attempt's agent gets (`ctx.trace`): its attempt's span context, for children. */
export interface AttemptTrace {
  /** W3C traceparent of the attempt's span. */
  readonly traceparent: string;
  /** Whether prompts and replies may be recorded (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`). */
  readonly captureContent: boolean;
  /** Starts a child span of the attempt's span, now. */
  span(name: string, attrs?: SpanAttributes): SpanHandle;
  /**
   * Names the attempt's span and adds attributes to it (emitted when the outcome is committed): an
   * LLM agent makes it `invoke_agent {agent}` with the GenAI attributes.
   */
  describe(name: string | undefined, attrs: SpanAttributes): void;
  /** Links the attempt's span to a span elsewhere (a remote agent's, by its traceparent). */
  link(traceparent: string): void;
}
