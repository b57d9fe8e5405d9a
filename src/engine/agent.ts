/**
 * The agent port: what the engine hands an agent and what it expects back. Adapters (in-process
 * functions, subprocesses, HTTP, LLMs) live in src/agents/ and all produce an AgentHandler.
 */
import type { JsonObject } from '../core/json.js';

export interface AgentContext {
  /** Exactly the phase's declared inputs, resolved by the executor (RFC-0024 §3.2). `{}` without `inputs`. */
  readonly input: JsonObject;
  /** The phase name. */
  readonly phase: string;
  readonly taskId: string;
  readonly runId: string;
  /** 1-based attempt number (retries count up). */
  readonly attempt: number;
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
