/**
 * `runWorkflow`: the one-call form of the engine. Binds agents, picks the store (a new in-memory
 * store unless given), starts the run and drives it to its end through the same worker loop as
 * every other store.
 */
import type { RunStore } from '../engine/ports.js';
import type { RunResult } from '../engine/result.js';
import { MemoryStore } from '../store/memory.js';
import type { WorkflowModel } from '../workflow/model.js';
import { createEngine, type EngineOptions, type StartRunOptions } from './engine.js';
import type { WorkflowSpec } from './spec.js';
import type { AnyWorkflow, WorkflowTypes } from './typed.js';

export type { AgentBinding } from './engine.js';

/** Engine options (agents, stubAgents, clock, concurrency, onEvent, faults, ...) and the run's (trigger, initialState, timeoutMs, runId, signal, ...). */
export interface RunOptions<W extends WorkflowTypes = AnyWorkflow> extends Omit<EngineOptions<W>, 'store'>, StartRunOptions<W> {
  /** Where the run is kept (default: a new in-memory store). */
  store?: RunStore | undefined;
}

/** Runs a workflow to its end and resolves to the run result (it rejects only on faults, never on a failed run). */
export async function runWorkflow<W extends WorkflowTypes = AnyWorkflow>(spec: WorkflowSpec | WorkflowModel, opts: RunOptions<W> = {}): Promise<RunResult> {
  const { runId, trigger, initialState, timeoutMs, autoApprove, bindings, path, cwd, workspace, signal, store, traceparent, keepEvents, detach: _detach, ...engineOptions } = opts;
  const engine = createEngine<W>({ ...engineOptions, store: store ?? new MemoryStore() });
  try {
    return await engine.run(spec, {
      ...(runId !== undefined ? { runId } : {}),
      ...(trigger !== undefined ? { trigger } : {}),
      ...(initialState !== undefined ? { initialState } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(autoApprove !== undefined ? { autoApprove } : {}),
      ...(bindings !== undefined ? { bindings } : {}),
      ...(path !== undefined ? { path } : {}),
      ...(cwd !== undefined ? { cwd } : {}),
      ...(workspace !== undefined ? { workspace } : {}),
      ...(signal !== undefined ? { signal } : {}),
      ...(keepEvents !== undefined ? { keepEvents } : {}),
      ...(traceparent !== undefined ? { traceparent } : {}),
    });
  } finally {
    await engine.close();
  }
}
