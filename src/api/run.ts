/**
 * The composition root of a run: binds agents (functions, `x-command` subprocesses, stubs), picks
 * the store (in-memory unless given), and drives the executor.
 */
import type { Clock } from '../core/clock.js';
import type { Json, JsonObject } from '../core/json.js';
import { subprocessAgent } from '../agents/subprocess.js';
import { stubAgent } from '../agents/stub.js';
import type { AgentHandler, ClosableAgent } from '../engine/agent.js';
import type { RunEvent } from '../engine/events.js';
import { Executor } from '../engine/executor.js';
import type { RunStore } from '../engine/ports.js';
import type { RunResult, RunState } from '../engine/state.js';
import { MemoryStore } from '../store/memory.js';
import type { WorkflowModel } from '../workflow/model.js';
import { WorkflowSpec } from './spec.js';

export type AgentBinding = AgentHandler | ClosableAgent;

export interface RunOptions {
  /** Handlers by agent id: functions `(ctx) => output`, or adapters with `handler` and `close()`. */
  agents?: Readonly<Record<string, AgentBinding>>;
  /** Bind every agent that has no handler (and no `x-command`) to a stub built from the output types. */
  stubAgents?: boolean;
  trigger?: Json;
  /** Run-level initial state for `$initial_state.*` keys that a phase's own `initial_state` does not set. */
  initialState?: JsonObject;
  concurrency?: number;
  timeoutMs?: number;
  clock?: Clock;
  signal?: AbortSignal;
  onEvent?: (event: RunEvent, state: RunState) => void;
  store?: RunStore;
  runId?: string;
  /** Working directory of `x-command` agents (default: the workflow file's folder). */
  cwd?: string;
}

function isClosable(b: AgentBinding): b is ClosableAgent {
  return typeof b === 'object' && b !== null && typeof (b).handler === 'function';
}

/** Runs a workflow to its end and resolves to the run result (it rejects only on faults, never on a failed run). */
export async function runWorkflow(spec: WorkflowSpec | WorkflowModel, opts: RunOptions = {}): Promise<RunResult> {
  const model = spec instanceof WorkflowSpec ? spec.model : spec;
  const handlers: Record<string, AgentHandler> = {};
  const owned: ClosableAgent[] = [];
  for (const [id, b] of Object.entries(opts.agents ?? {})) handlers[id] = isClosable(b) ? b.handler : b;
  for (const [id, decl] of Object.entries(model.agents ?? {})) {
    if (handlers[id] || !decl.command) continue;
    const a = subprocessAgent({ command: decl.command, mode: decl.mode ?? 'once', agentId: id, ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}) });
    owned.push(a);
    handlers[id] = a.handler;
  }
  if (opts.stubAgents) {
    const stub = stubAgent(model);
    for (const [id] of Executor.unboundAgents(model, handlers)) handlers[id] = stub;
  }
  const executor = new Executor(model, {
    agents: handlers,
    store: opts.store ?? new MemoryStore(),
    ...(opts.trigger !== undefined ? { trigger: opts.trigger } : {}),
    ...(opts.initialState !== undefined ? { initialState: opts.initialState } : {}),
    ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
    ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
    ...(opts.runId !== undefined ? { runId: opts.runId } : {}),
  });
  try {
    return await executor.run();
  } finally {
    await Promise.allSettled(owned.map((a) => a.close()));
  }
}
