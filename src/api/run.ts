/**
 * The composition root of a run: binds agents (functions, `x-command` subprocesses, stubs), picks
 * the store (in-memory unless given), and drives the executor.
 */
import { subprocessAgent } from '../agents/subprocess.js';
import { stubAgent } from '../agents/stub.js';
import type { AgentHandler, ClosableAgent } from '../engine/agent.js';
import { Executor, type ExecutorOptions } from '../engine/executor.js';
import type { RunStore } from '../engine/ports.js';
import type { RunResult } from '../engine/state.js';
import { MemoryStore } from '../store/memory.js';
import type { WorkflowModel } from '../workflow/model.js';
import { WorkflowSpec } from './spec.js';

export type AgentBinding = AgentHandler | ClosableAgent;

/** The executor's options (trigger, initialState, concurrency, timeoutMs, clock, signal, onEvent, runId), plus bindings. */
export interface RunOptions extends Omit<ExecutorOptions, 'agents' | 'store'> {
  /** Handlers by agent id: functions `(ctx) => output`, or adapters with `handler` and `close()` (closed by the caller). */
  agents?: Readonly<Record<string, AgentBinding>>;
  /** Bind every agent that has no handler (and no `x-command`) to a stub built from the output types. */
  stubAgents?: boolean;
  /** Where the run is kept (default: a new in-memory store). */
  store?: RunStore;
  /** Working directory of `x-command` agents (default: the process's). */
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
  const { agents: _a, stubAgents: _s, store, cwd: _c, ...executorOptions } = opts;
  const executor = new Executor(model, { ...executorOptions, agents: handlers, store: store ?? new MemoryStore() });
  try {
    return await executor.run();
  } finally {
    await Promise.allSettled(owned.map((a) => a.close()));
  }
}
