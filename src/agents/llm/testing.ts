/** Test helpers for LLM agents: a recording AgentContext (no engine needed). Not exported from the package. */
import type { JsonObject } from '../../core/json.js';
import { AgentError, type AgentContext } from '../../engine/agent.js';
import { fakeContext } from '../../engine/testing.js';

export interface RecordingContext extends AgentContext {
  readonly events: { kind: string; data: JsonObject }[];
  readonly logs: string[];
  costUsd: number;
}

export function recordingContext(over: { phase: string; agent: string; input?: JsonObject; budgetUsd?: number; signal?: AbortSignal }): RecordingContext {
  const events: { kind: string; data: JsonObject }[] = [];
  const logs: string[] = [];
  const ctx: RecordingContext = {
    ...fakeContext({ input: over.input ?? {}, phase: over.phase, agent: over.agent, taskId: 't1', runId: 'r1', idempotencyKey: 'r1:t1', ...(over.signal ? { signal: over.signal } : {}) }),
    requestInput: () => Promise.reject(new Error('no human here')),
    events,
    logs,
    costUsd: 0,
    reportCost(usd) {
      ctx.costUsd += usd;
    },
    log: (m) => void logs.push(m),
    record: (kind, data) => void events.push({ kind, data: JSON.parse(JSON.stringify(data)) as JsonObject }),
    remainingBudgetUsd: () => (over.budgetUsd === undefined ? undefined : over.budgetUsd - ctx.costUsd),
  };
  return ctx;
}

/** What a promise rejects with, which must be an AgentError (an LLM agent's or an MCP host's failure). */
export async function agentFailure(p: Promise<unknown>): Promise<AgentError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  if (!(e instanceof AgentError)) throw new Error(`expected an AgentError, got ${e === undefined ? 'a fulfilment' : e instanceof Error ? e.message : typeof e}`);
  return e;
}
