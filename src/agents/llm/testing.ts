/** Test helpers for LLM agents: a recording AgentContext (no engine needed). Not exported from the package. */
import type { JsonObject } from '../../core/json.js';
import type { AgentContext } from '../../engine/agent.js';

export interface RecordingContext extends AgentContext {
  readonly events: { kind: string; data: JsonObject }[];
  readonly logs: string[];
  costUsd: number;
}

export function recordingContext(over: { phase: string; agent: string; input?: JsonObject; budgetUsd?: number; signal?: AbortSignal }): RecordingContext {
  const events: { kind: string; data: JsonObject }[] = [];
  const logs: string[] = [];
  const ctx: RecordingContext = {
    input: over.input ?? {},
    phase: over.phase,
    taskId: 't1',
    runId: 'r1',
    attempt: 1,
    idempotencyKey: 'r1:t1',
    inputResponse: undefined,
    lastCheckpoint: undefined,
    checkpoint: () => Promise.resolve(),
    agent: over.agent,
    signal: over.signal ?? new AbortController().signal,
    initialState: {},
    events,
    logs,
    costUsd: 0,
    reportCost(usd) {
      ctx.costUsd += usd;
    },
    getSiblingOutput: () => undefined,
    log: (m) => logs.push(m),
    record: (kind, data) => events.push({ kind, data: JSON.parse(JSON.stringify(data)) as JsonObject }),
    remainingBudgetUsd: () => (over.budgetUsd === undefined ? undefined : over.budgetUsd - ctx.costUsd),
    requestInput: () => Promise.reject(new Error('no human here')),
  };
  return ctx;
}
