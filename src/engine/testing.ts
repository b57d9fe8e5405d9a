/** A bare AgentContext for adapter tests: every field set, every method a no-op; tests override what they use. */
import type { AgentContext } from './agent.js';

export function fakeContext(over: Partial<AgentContext> = {}): AgentContext {
  return {
    input: {},
    phase: 'p',
    taskId: 't',
    runId: 'r',
    attempt: 1,
    idempotencyKey: 'r:p',
    inputResponse: undefined,
    lastCheckpoint: undefined,
    checkpoint: () => Promise.resolve(),
    agent: 'a',
    signal: new AbortController().signal,
    initialState: {},
    reportCost: () => undefined,
    getSiblingOutput: () => undefined,
    log: () => undefined,
    record: () => undefined,
    remainingBudgetUsd: () => undefined,
    requestInput: () => Promise.reject(new Error('no input here')),
    ...over,
  };
}
