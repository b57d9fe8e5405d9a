/**
 * The composition root of the engine: a store, agent bindings (functions, `x-command` subprocesses,
 * stubs, a recorded binding re-made on resume), a clock, and the worker loop. `createEngine` is what
 * the CLI, the tests and library users drive; `runWorkflow` (run.ts) is its one-call form.
 */
import { resolve as resolvePath, dirname } from 'node:path';
import { guardContracts } from '../agents/contract-guard.js';
import { contractOfHandler } from '../agents/define.js';
import { recordDeclaredFiles } from '../agents/provenance.js';
import type { AgentContract } from '../workflow/contract/model.js';
import type { LlmBindOptions } from '../agents/llm/bind.js';
import { llmAgentIds } from '../agents/llm/ids.js';
import { withReplyEnforcement } from '../agents/llm/text-reply.js';
import { subprocessAgent } from '../agents/subprocess.js';
import { stubAgent } from '../agents/stub.js';
import { MAX_TIMEOUT_MS, systemClock, type Clock } from '../core/clock.js';
import { asyncDispose } from '../core/dispose.js';
import { BatonError } from '../core/errors.js';
import { Lru } from '../core/lru.js';
import { closest } from '../core/suggest.js';
import type { Json, JsonObject } from '../core/json.js';
import type { AgentHandler, ClosableAgent } from '../engine/agent.js';
import type { CarriedFile, FactResult } from '../engine/decide.js';
import type { RunEvent } from '../engine/events.js';
import type { RunRecord, RunStore, TaskRow, WorkflowRecord } from '../engine/ports.js';
import { parseTraceparent, type RunInfo } from '../engine/telemetry.js';
import { toJson } from '../engine/attempt.js';
import { commandRun, decidedAs, startRun, workflowRecord } from '../engine/start.js';
import { CreateBatcher, retryingCreates, StoreWaits, type Creates, type CreateWait } from '../engine/create-batch.js';
import { attachGraph, replay, type RunState } from '../engine/state.js';
import { toResult, type RunResult } from '../engine/result.js';
import { planOf } from '../engine/plan.js';
import { withFiles, type FileStager } from '../engine/files.js';
import { localFileStager } from '../engine/files-local.js';
import { runFiles, type RunFiles } from '../engine/files-leftovers.js';
import { ownerIsDeadOnThisHost, Worker, type WorkerOptions, type WorkerTuning } from '../engine/worker.js';
import { DEFAULT_STORE_RETRY_MS } from '../engine/worker-base.js';
import { parseWorkflow } from '../workflow/compile.js';
import { SchemaCompiler } from '../workflow/json-schema.js';
import type { A2aDecl, WorkflowModel } from '../workflow/model.js';
import { ChangeHub } from './changes.js';
import { carryRerunFiles } from './rerun-files.js';
import { runHandle, RunWatch, type HeldRuns, type RunHandle } from './handle.js';
import { WorkflowSpec } from './spec.js';
import type { AgentsOption, AnyWorkflow, TriggerOf, WorkflowTypes } from './typed.js';

export type AgentBinding = AgentHandler | ClosableAgent;

/** Compiled workflows (and stored workflow records) an engine keeps, the most recently used. */
const MODELS_KEPT = 128;

/**
 * `W`: the workflow's types from `baton types` (default: untyped, checked when a run starts). The worker's
 * own tuning (clock, concurrency, leases, store retries, snapshots, telemetry) is WorkerTuning's.
 */
export interface EngineOptions<W extends WorkflowTypes = AnyWorkflow> extends WorkerTuning {
  store: RunStore;
  /** Handlers by agent id: functions `(ctx) => output`, or adapters with `handler` and `close()` (closed by the caller). */
  agents?: AgentsOption<W> | undefined;
  /** Bind every agent that has no handler (and no `x-command`) to a stub built from the output types. */
  stubAgents?: boolean | undefined;
  /**
   * Binds the agents of a stored run this engine did not start (resume, worker): e.g. the CLI loads
   * the agents module the run recorded. Merged over `agents`.
   */
  bindRun?: ((record: RunRecord, model: WorkflowModel) => Promise<Readonly<Record<string, AgentBinding>>>) | undefined;
  /** LLM agents: which agents run on a model beyond those with a blueprint, a replies file, keys, prices (docs/llm-agents.md). */
  llm?: LlmBindOptions | undefined;
  /**
   * Where AIP-16 file contracts (`inputsFiles` / `outputsFiles`) read and write (`--workspace`): over the
   * workspace a run recorded. Default: the run's `workspace`, else its `cwd`, else the workflow file's folder.
   */
  workspace?: string | undefined;
  /** Stages declared files for attempts (default: the local-disk stager over the workspace, roots in the OS temp folder). */
  fileStager?: ((workspace: string) => FileStager) | undefined;
}

export interface StartRunOptions<W extends WorkflowTypes = AnyWorkflow> {
  /** A chosen id; a second start with the same id is refused (BatonError `run-exists`). */
  runId?: string | undefined;
  /** The trigger payload (`$trigger.*`): JSON, checked against `x-trigger` when the workflow declares it. */
  trigger?: TriggerOf<W> | undefined;
  /** Run-level initial state: `$initial_state.*` keys a phase's own `initial_state` does not set. */
  initialState?: JsonObject | undefined;
  /** Run timeout in ms (overrides governance.timeout_hours). */
  timeoutMs?: number | undefined;
  /** Approve every gate as it opens, recorded as automatic. */
  autoApprove?: boolean | undefined;
  /** How the agents were bound (module path, commands, stubs), recorded so a resume binds them the same way. */
  bindings?: JsonObject | undefined;
  /** Absolute path of the workflow file (x-command agents run in its directory). */
  path?: string | undefined;
  /** Working directory of x-command agents and of files LLM agents read (default: the workflow file's directory). */
  cwd?: string | undefined;
  /** Where declared files (AIP-16) are staged from and synced to; recorded with the run (default: `cwd`, else the workflow file's directory). */
  workspace?: string | undefined;
  /** Cancels the run when it aborts (Ctrl-C). */
  signal?: AbortSignal | undefined;
  /** A W3C traceparent the run's trace continues (`baton run` reads `TRACEPARENT`): recorded with the run; a malformed one is ignored. */
  traceparent?: string | undefined;
  /**
   * How long the creation waits out a store that is away (ms; default the engine's `storeRetryMs`). 0:
   * one try, whose failure is the caller's at once (`baton serve` answers 503 rather than hold a request).
   */
  storeRetryMs?: number | undefined;
  /**
   * Abandons the creation while it has not been sent to the store (queued behind other creations, or
   * between two tries of a store that is away): it rejects with the signal's reason and nothing is
   * created. A creation already sent cannot be called back: its answer may be lost while it lands, so a
   * caller that must know starts with a `runId` of its own and asks again with it.
   */
  createSignal?: AbortSignal | undefined;
  /** `start()` only: store the run without driving it here (a `baton worker` elsewhere runs it). */
  detach?: boolean | undefined;
  /**
   * `run()`, and `start()`'s drive: keep the run's events in memory for `RunResult.events` (default true). With false the
   * result's `events` is empty (read them from `engine.store.events(runId)`, or watch `onEvent`): a run of
   * 100,000 fan-out items then holds no log of some 300,000 events in memory. `baton run` passes false
   * unless it prints or saves the whole result (`--json`, `--output`).
   */
  keepEvents?: boolean | undefined;
}

/** How `drive()` / `resume()` keep what they return. */
export interface DriveOptions {
  /** Keep the run's events for `RunResult.events` (default true); false: `events` is empty (see StartRunOptions.keepEvents). */
  keepEvents?: boolean | undefined;
}

export interface RunInspection {
  record: RunRecord;
  workflow: WorkflowRecord | undefined;
  state: RunState;
  result: RunResult;
  tasks: TaskRow[];
}

export class Engine<W extends WorkflowTypes = AnyWorkflow> {
  readonly store: RunStore;
  /** Runs started together are created in batches (one transaction for many). */
  private readonly creates: Creates;
  /** Creations and commands waiting out a store that is away (one trouble report for all). */
  private readonly waits: StoreWaits;
  readonly clock: Clock;
  private readonly opts: EngineOptions & { agents?: Readonly<Record<string, AgentBinding>> };
  /** Compiled workflows by hash: a long-lived server or worker meets ever new ones, so at most MODELS_KEPT. */
  private readonly models = new Lru<string, WorkflowModel>(MODELS_KEPT);
  /** Compilations in flight: runs of one workflow taken up at once share one (a 10,000-phase file takes ~0.3 s). */
  private readonly compiling = new Map<string, Promise<WorkflowModel>>();
  /** Stored workflows by hash: a hash names one text forever, so each is read once per engine. */
  private readonly workflows = new Lru<string, WorkflowRecord>(MODELS_KEPT);
  /** Workflow records being read, by hash: runs taken up together read their workflow once. */
  private readonly reading = new Map<string, Promise<WorkflowRecord | undefined>>();
  private readonly owned: { close(): Promise<void> }[] = [];
  /** LLM bindings of runs not yet ended here: each run's MCP servers stop with it (release), the rest at close(). */
  private readonly llmBound = new Set<{ close(): Promise<void> }>();
  private readonly compiler = new SchemaCompiler();
  private readonly subprocesses = new Map<string, AgentHandler>();
  private worker: Worker | undefined;
  /** Whether the process whose attempt asked a question is known to be gone (an answer then needs no grace for it). */
  private readonly ownerGone = (owner: string): boolean => owner !== this.worker?.id && (this.opts.isOwnerDead ?? ownerIsDeadOnThisHost)(owner);
  /** The handles' waits on the runs the worker holds (handle.ts). */
  private readonly moved = new RunWatch();
  /** What the run handles wait on for a run this engine holds. */
  readonly watch: HeldRuns = {
    holds: (runId) => this.worker?.holds(runId) === true,
    wait: (runId, maxMs, signal) => this.moved.wait(runId, maxMs, signal),
  };
  /**
   * @internal What the run handles wait on for a run this engine does not hold (driven by another engine
   * or process): one wait on the store for all of them, waking only the handles of the runs that changed
   * when the store can say which. Never closed: it stops listening when no handle waits.
   */
  readonly changes: ChangeHub;

  constructor(opts: EngineOptions<W>) {
    if (!opts.store) throw new BatonError('usage', 'an engine needs a store (the memory store is a store)');
    checkNumbers(opts);
    // the workflow's types are checked at compile time; at run time every handler is an AgentHandler
    this.opts = opts as EngineOptions as EngineOptions & { agents?: Readonly<Record<string, AgentBinding>> };
    this.store = opts.store;
    this.changes = new ChangeHub(opts.store);
    this.clock = opts.clock ?? systemClock;
    // a creation or a command rides out a store that is away for as long as the worker's commits do
    this.waits = new StoreWaits(this.clock, Math.max(0, opts.storeRetryMs ?? DEFAULT_STORE_RETRY_MS), opts.onStoreTrouble);
    this.creates = retryingCreates(new CreateBatcher(opts.store), opts.store, this.waits);
  }

  /** The worker loop of this engine (made on first use). */
  get work(): Worker {
    this.worker ??= new Worker(this.workerOptions());
    return this.worker;
  }

  private workerOptions(): WorkerOptions {
    const o = this.opts;
    return {
      store: this.store,
      bind: (record) => this.bind(record),
      clock: this.clock,
      ...(o.workerId !== undefined ? { workerId: o.workerId } : {}),
      ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}),
      ...(o.leaseMs !== undefined ? { leaseMs: o.leaseMs } : {}),
      ...(o.pollMs !== undefined ? { pollMs: o.pollMs } : {}),
      ...(o.faults !== undefined ? { faults: o.faults } : {}),
      ...(o.isOwnerDead !== undefined ? { isOwnerDead: o.isOwnerDead } : {}),
      ...(o.onEvent !== undefined ? { onEvent: o.onEvent } : {}),
      onAdvance: (runId) => this.moved.notify(runId),
      ...(o.telemetry !== undefined ? { telemetry: o.telemetry } : {}),
      ...(o.storeRetryMs !== undefined ? { storeRetryMs: o.storeRetryMs } : {}),
      ...(o.onStoreTrouble !== undefined ? { onStoreTrouble: o.onStoreTrouble } : {}),
      ...(o.abortGraceMs !== undefined ? { abortGraceMs: o.abortGraceMs } : {}),
      ...(o.snapshotEvery !== undefined ? { snapshotEvery: o.snapshotEvery } : {}),
    };
  }

  private storedWorkflow(hash: string): Promise<WorkflowRecord | undefined> {
    const have = this.workflows.get(hash);
    if (have) return Promise.resolve(have);
    let p = this.reading.get(hash);
    if (!p) {
      p = this.store
        .workflow(hash)
        .then((w) => {
          if (w) this.workflows.set(hash, w);
          return w;
        })
        .finally(() => this.reading.delete(hash));
      this.reading.set(hash, p);
    }
    return p;
  }

  /** The compiled workflow of a stored run (compiled once per engine, from the source the run kept). */
  async model(record: RunRecord): Promise<WorkflowModel> {
    const hash = record.workflowHash;
    const have = this.models.get(hash);
    if (have) return have;
    let p = this.compiling.get(hash);
    if (!p) {
      p = (async () => {
        const w = await this.storedWorkflow(hash);
        if (!w) throw new BatonError('store-corrupt', `run ${record.runId}: its workflow ${hash.slice(0, 12)} is missing from the store`);
        const r = parseWorkflow(w.source, { file: w.path });
        if (!r.ok || !r.model) throw new BatonError('invalid-workflow', `run ${record.runId}: its stored workflow no longer compiles (${r.diagnostics[0]?.message ?? 'unknown error'})`);
        this.models.set(hash, r.model);
        return r.model;
      })().finally(() => this.compiling.delete(hash));
      this.compiling.set(hash, p);
    }
    return p;
  }

  /**
   * Handlers for a run: given functions, the run's recorded binding, x-command subprocesses, LLM
   * agents (a blueprint, `--llm`, `--llm-agents`), stubs. Adapters that may answer with a raw model
   * reply (`{"result_text": ...}`) go through the same extraction and validation as LLM agents.
   */
  async bind(record: RunRecord): Promise<{ model: WorkflowModel; handlers: Record<string, AgentHandler>; contracts: Map<string, AgentContract>; release?: () => Promise<void> }> {
    const model = await this.model(record);
    const handlers: Record<string, AgentHandler> = {};
    const add = (bindings: Readonly<Record<string, AgentBinding>>): void => {
      for (const [id, b] of Object.entries(bindings)) handlers[id] = typeof b === 'function' ? b : withReplyEnforcement(b.handler, model, this.compiler);
    };
    add(this.opts.agents ?? {});
    if (this.opts.bindRun) add(await this.opts.bindRun(record, model));
    const cwd = runCwd(record, await this.storedWorkflow(record.workflowHash));
    for (const [id, decl] of Object.entries(model.agents ?? {})) {
      if (handlers[id] || !decl.command) continue;
      handlers[id] = withReplyEnforcement(this.subprocess(id, decl.command, decl.mode ?? 'once', cwd), model, this.compiler);
    }
    for (const [id, decl] of Object.entries(model.agents ?? {})) {
      if (handlers[id] || !decl.a2a) continue;
      handlers[id] = withReplyEnforcement(this.a2a(id, decl.a2a), model, this.compiler);
    }
    const llm = this.llmOptions(record);
    const ids = llmAgentIds(model, (id) => handlers[id] !== undefined, llm);
    const llmHandlers = new Set<AgentHandler>();
    let release: (() => Promise<void>) | undefined;
    if (ids.length > 0) {
      // the LLM layer (providers, prompts, MCP) is loaded by the first run that has an LLM agent
      const { bindLlmAgents } = await import('../agents/llm/bind.js');
      const bound = bindLlmAgents(model, ids, { cwd, clock: this.clock, ...llm });
      // the run's MCP servers stop when the run ends (a long-lived engine runs many), not when the engine closes
      this.llmBound.add(bound);
      release = () => {
        this.llmBound.delete(bound);
        return bound.close();
      };
      Object.assign(handlers, bound.handlers);
      for (const h of Object.values(bound.handlers)) llmHandlers.add(h);
    }
    // contracts `defineAgent` handlers carry steer the decisions as contract files do (partial, onTimeout, onAgentFailure)
    const contracts = new Map<string, AgentContract>();
    for (const [id, h] of Object.entries(handlers)) {
      const c = contractOfHandler(h);
      if (c && !model.agents?.[id]?.contract) contracts.set(id, c);
    }
    guardContracts(model, handlers, this.compiler, llmHandlers); // agent contracts at run time (agents/contract-guard.ts)
    // provenance of declared files for agents that record none (defineAgent handlers record their own)
    for (const [id, decl] of Object.entries(model.agents ?? {})) {
      const h = handlers[id];
      const c = decl.contract;
      if (!h || !c || contractOfHandler(h) || c.sideEffects.filesRead.length + c.sideEffects.filesWritten.length === 0) continue;
      handlers[id] = recordDeclaredFiles(id, h, c, cwd);
    }
    // a defineAgent records the AIP-16 files it stages and syncs itself; the files its `sideEffects` name are recorded here
    for (const [id, h] of Object.entries(handlers)) {
      const c = contractOfHandler(h);
      if (!c) continue;
      const own = (list: AgentContract['sideEffects']['filesRead']) => list.filter((f) => f.at.path[0] === 'sideEffects');
      const sideEffects = { ...c.sideEffects, filesRead: own(c.sideEffects.filesRead), filesWritten: own(c.sideEffects.filesWritten) };
      if (sideEffects.filesRead.length + sideEffects.filesWritten.length === 0) continue;
      const wrapped = recordDeclaredFiles(id, h, { ...c, sideEffects }, cwd);
      // still a defineAgent to the rest of the engine (its contract steers the decisions)
      handlers[id] = Object.assign(wrapped, { contract: c });
    }
    if (this.opts.stubAgents || record.bindings['stubs'] === true) {
      const stub = stubAgent(model);
      for (const [id] of unboundAgents(model, handlers)) handlers[id] = stub;
    }
    const files = this.withFileContracts(model, record, handlers, contracts, cwd);
    return { model, handlers, contracts, ...(files ? { files } : {}), ...(release ? { release } : {}) };
  }

  /**
   * AIP-16 files, outermost around every handler (so `_workflowFsRoot` is in the input before any
   * validation): staged into a fresh root per attempt, synced back, recorded (engine/files.ts).
   */
  private withFileContracts(model: WorkflowModel, record: RunRecord, handlers: Record<string, AgentHandler>, carried: ReadonlyMap<string, AgentContract>, cwd: string): RunFiles | undefined {
    const contracts = new Map(planOf(model).contracts);
    for (const [id, c] of carried) if (!contracts.has(id)) contracts.set(id, c);
    const declares = model.phases.some((p) => p.files) || Object.values(model.agents ?? {}).some((a) => a.files) || [...contracts.values()].some((c) => c.files);
    if (!declares) return undefined;
    const { stager, stagerFor } = this.stagers(record, cwd);
    for (const [id, h] of Object.entries(handlers)) {
      const wrapped = withFiles(h, { stager, stagerFor, model, contracts, now: () => this.clock.now() });
      // still a defineAgent to the rest of the engine (its contract steers the decisions)
      const c = (h as { contract?: unknown }).contract;
      handlers[id] = c !== undefined ? Object.assign(wrapped, { contract: c }) : wrapped;
    }
    // the roots of the run's attempts a process that died left behind: finished or removed (files-leftovers.ts)
    return runFiles({ stager, stagerFor, model, contracts });
  }

  /** The engine's LLM options, or those a run recorded (`--llm`, `--llm-agents`, `--replies`) when the engine has none. */
  private llmOptions(record: RunRecord): LlmBindOptions {
    if (this.opts.llm) return this.opts.llm;
    const r = record.bindings['llm'];
    if (r === null || typeof r !== 'object' || Array.isArray(r)) return {};
    const o: LlmBindOptions = {};
    if (Array.isArray(r['agents'])) o.agents = r['agents'].filter((x): x is string => typeof x === 'string');
    if (r['all_unbound'] === true) o.allUnbound = true;
    if (typeof r['replies'] === 'string') o.replies = r['replies'];
    return o;
  }

  /** One handler per agent and declaration (its agent card is fetched once, by the first attempt). */
  private a2a(id: string, decl: A2aDecl): AgentHandler {
    const key = JSON.stringify(['a2a', id, decl]);
    let h = this.subprocesses.get(key);
    if (!h) {
      // the A2A client is loaded by the first attempt of an `x-a2a` agent, not by every engine
      let made: Promise<AgentHandler> | undefined;
      h = async (ctx) => (await (made ??= import('../agents/a2a.js').then((m) => m.a2aAgent({ ...decl, agentId: id }))))(ctx);
      this.subprocesses.set(key, h);
    }
    return h;
  }

  private subprocess(id: string, command: string | string[], mode: 'once' | 'serve', cwd: string): AgentHandler {
    const key = JSON.stringify([id, command, mode, cwd]);
    let h = this.subprocesses.get(key);
    if (!h) {
      const a = subprocessAgent({ command, mode, agentId: id, cwd });
      this.owned.push(a);
      h = a.handler;
      this.subprocesses.set(key, h);
    }
    return h;
  }

  /**
   * Stores a run and drives it on this engine (unless `detach`); the handle gives its result, its
   * events, its status and cancel. Refuses (BatonError `unbound-agent`) when an agent has no handler.
   */
  async start(spec: WorkflowSpec | WorkflowModel, opts: StartRunOptions<W> = {}): Promise<RunHandle> {
    const { runId: id, created } = await this.createRun(spec, opts, !opts.detach);
    const run = this.handle(id, opts.signal, { keepEvents: opts.keepEvents ?? true });
    if (!opts.detach) {
      // taken up as created: nothing is read back before the worker's loop, whose every store call rides
      // out a store that is away (a read here would fail at the first blip after the creation)
      this.work.prime(id, created);
      void run.result();
    }
    return run;
  }

  /** A handle on a stored run: its `result()` drives the run here (a resume), its `events()` observe it wherever it runs. */
  handle(runId: string, signal?: AbortSignal, opts: DriveOptions = {}): RunHandle {
    return runHandle(this, runId, signal, opts);
  }

  /** Creates a run in the store (nothing runs yet) and returns its id; refuses it when an agent has no handler. */
  async create(spec: WorkflowSpec | WorkflowModel, given: StartRunOptions<W> = {}): Promise<string> {
    return (await this.createRun(spec, given)).runId;
  }

  /** `create`, with the run as stored (its record, state and log): a run driven here next is taken up from it. */
  /** `drives`: this engine drives the run from its creation (start without detach, run), and the run records so. */
  private async createRun(spec: WorkflowSpec | WorkflowModel, given: StartRunOptions<W> = {}, drives = false): Promise<{ runId: string; created: { record: RunRecord; state: RunState; events: RunEvent[] } }> {
    const model = modelOf(spec);
    const opts: StartRunOptions = { ...(given as StartRunOptions), ...jsonRunInputs(given as StartRunOptions) };
    checkTrigger(model, opts.trigger);
    // NaN would be stored as null and dropped (the run then had no deadline); 0 or less timed the run out at once
    if (opts.timeoutMs !== undefined && !(typeof opts.timeoutMs === 'number' && opts.timeoutMs > 0 && opts.timeoutMs <= MAX_TIMEOUT_MS)) {
      throw new BatonError('usage', `timeoutMs must be a positive number of milliseconds, at most ${MAX_TIMEOUT_MS}, got ${String(opts.timeoutMs)}`);
    }
    const runId = opts.runId ?? newRunId(this.clock.now());
    const wf = workflowRecord(model, opts.path);
    this.models.set(wf.hash, model);
    // the record this run stores: its binding (bind) needs no read of it back
    this.workflows.set(wf.hash, wf);
    const bindings = { ...(opts.bindings ?? {}), ...(this.opts.stubAgents ? { stubs: true } : {}) };
    // check bindings before anything is stored: unbound agents stop the run before it starts
    const runOptions = { ...(opts.cwd !== undefined ? { cwd: resolvePath(opts.cwd) } : {}), ...(opts.workspace !== undefined ? { workspace: resolvePath(opts.workspace) } : {}) };
    const probe: RunRecord = { runId, workflowHash: wf.hash, workflowName: model.info.name, status: 'running', trigger: null, initialState: null, bindings, options: runOptions, createdAt: 0, updatedAt: 0, endedAt: null, costUsd: 0, seq: 0, wakeAt: null };
    const handlers = await this.bindModel(model, probe);
    const unbound = unboundAgents(model, handlers);
    if (unbound.size > 0) {
      const list = [...unbound].map(([a, ps]) => `\`${a}\` (phase${ps.length === 1 ? '' : 's'} ${ps.join(', ')})`).join(', ');
      // an x-remote agent is bound only where remote agents can pull its tasks: a server
      const remote = [...unbound.keys()].filter((a) => model.agents?.[a]?.extensions['x-remote'] === true);
      const served = remote.length === 0 ? '' : `; ${remote.map((a) => `\`${a}\``).join(', ')} ${remote.length === 1 ? 'is' : 'are'} \`x-remote: true\`: remote agents pull such tasks from \`baton serve\`, or from a server whose engine and \`startServer\` share one \`RemoteAgents\` (docs/server.md#library)`;
      throw new BatonError('unbound-agent', `no handler is bound for agent${unbound.size === 1 ? '' : 's'} ${list}; bind them with --agents, declare \`x-command\`, or dry-run with --stub-agents${served}${misnamed(model, handlers, unbound)}`);
    }
    const stored: JsonObject = { ...(opts.timeoutMs !== undefined ? { timeout_ms: opts.timeoutMs } : {}), ...(opts.autoApprove ? { auto_approve: true } : {}), ...(parseTraceparent(opts.traceparent) ? { traceparent: opts.traceparent!.trim().toLowerCase() } : {}), ...runOptions };
    // the process that drives the run from its start (`baton run`, `engine.run`): while it lives, `baton show` says
    // it continues the run, even while no attempt of it runs (a gate open, a retry's delay); `create` drives nothing
    if (drives) stored['followed_by'] = this.work.id;
    const first = await startRun(
      this.createsFor(opts),
      model,
      {
        runId,
        ...(opts.trigger !== undefined ? { trigger: opts.trigger } : {}),
        ...(opts.initialState !== undefined ? { initialState: opts.initialState } : {}),
        ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
        ...(opts.autoApprove ? { autoApprove: true } : {}),
        bindings,
        options: stored,
        ...(opts.path !== undefined ? { path: opts.path } : {}),
      },
      await this.work.storeTime(),
    );
    this.work.checkFault('run.created');
    this.report(first.events, first.state, { runId, workflowName: model.info.name, options: stored });
    return { runId, created: first };
  }

  /** The creations of one start, waiting as it asks (`storeRetryMs`, `createSignal`). */
  private createsFor(opts: Pick<StartRunOptions, 'storeRetryMs' | 'createSignal'>): Pick<RunStore, 'createRun'> {
    const wait: CreateWait = { ...(opts.storeRetryMs !== undefined ? { retryMs: Math.max(0, opts.storeRetryMs) } : {}), ...(opts.createSignal !== undefined ? { signal: opts.createSignal } : {}) };
    return { createRun: (init) => this.creates.createRun(init, wait) };
  }

  /** Which agents would be bound for a run not yet stored (placeholders: only the ids matter). */
  private async bindModel(model: WorkflowModel, record: RunRecord): Promise<Record<string, AgentHandler>> {
    const handlers: Record<string, AgentHandler> = {};
    for (const [id, b] of Object.entries(this.opts.agents ?? {})) handlers[id] = typeof b === 'function' ? b : b.handler;
    if (this.opts.bindRun) for (const [id, b] of Object.entries(await this.opts.bindRun(record, model))) handlers[id] = typeof b === 'function' ? b : b.handler;
    for (const [id, decl] of Object.entries(model.agents ?? {})) if (!handlers[id] && (decl.command || decl.a2a)) handlers[id] = () => undefined;
    for (const id of llmAgentIds(model, (id) => handlers[id] !== undefined, this.llmOptions(record))) handlers[id] = () => undefined;
    if (this.opts.stubAgents) for (const [id] of unboundAgents(model, handlers)) handlers[id] = () => undefined;
    return handlers;
  }

  /** Starts a run and drives it to its end. Rejects only on faults, never on a failed run. */
  async run(spec: WorkflowSpec | WorkflowModel, opts: StartRunOptions<W> = {}): Promise<RunResult> {
    const { runId, created } = await this.createRun(spec, opts, true);
    // taken up as created, without reading back what was just written
    this.work.prime(runId, created);
    return this.drive(runId, opts.signal, { keepEvents: opts.keepEvents ?? true });
  }

  /**
   * `baton rerun RUN --from PHASE`: a new run of the stored workflow, with the same trigger, initial
   * state and bindings, that reuses the recorded output of every completed phase not downstream of
   * PHASE (its events name the run it came from) and runs PHASE and everything after it.
   */
  async rerun(runId: string, from: string, opts: Omit<StartRunOptions, 'trigger' | 'initialState' | 'path'> & { failedItems?: boolean } = {}): Promise<string> {
    // the reads ride out a store that is away, as every command's do (the creation below waits on its own)
    const { record, model, state, w, events } = await this.waits.run(async () => {
      const record = await this.store.run(runId);
      if (!record) throw new BatonError('unknown-run', `no run ${runId} in ${this.store.location}`);
      const model = await this.model(record);
      if (!model.byName.has(from)) throw new BatonError('usage', `workflow ${model.info.name} has no phase \`${from}\` (phases: ${model.phases.map((p) => p.name).join(', ')})`);
      const [events, w] = await Promise.all([this.store.events(runId), this.store.workflow(record.workflowHash)]);
      return { record, model, state: replay(runId, events), w, events };
    });
    const again = new Set<string>([from]);
    for (const name of model.order) if (model.byName.get(name)!.dependsOn.some((d) => again.has(d))) again.add(name);
    const outputs = new Map<string, { output: JsonObject; attempt: number }>();
    if (opts.failedItems && !model.byName.get(from)!.forEach) throw new BatonError('usage', `--failed-items: phase \`${from}\` has no for_each, so it has no items`);
    for (const [name, p] of state.phases) {
      if (p.status !== 'completed' || !p.output) continue;
      // items are reused only by `--failed-items`, and only those of PHASE (its upstream, reused whole, does not change)
      if (p.item) {
        if (opts.failedItems && p.item.parent === from) outputs.set(name, { output: p.output, attempt: p.attempts });
      } else if (!again.has(name)) outputs.set(name, { output: p.output, attempt: p.attempts });
    }
    const timeoutMs = typeof record.options['timeout_ms'] === 'number' ? record.options['timeout_ms'] : undefined;
    const newId = opts.runId ?? newRunId(this.clock.now());
    // a rerun is a new trace (its own run span), not a part of the first run's parent; whoever drives it is not the first run's driver
    const { traceparent: _tp, auto_approve: _aa, followed_by: _fb, ...kept } = record.options;
    // gates approve themselves as in the first run, unless the rerun says otherwise (`autoApprove: false`)
    const autoApprove = opts.autoApprove ?? record.options['auto_approve'] === true;
    const rerunOptions: JsonObject = { ...kept, ...(autoApprove ? { auto_approve: true } : {}), rerun_of: runId, from };
    // the files the reused phases synced, brought to this run's paths before it starts (a phase it runs reads them)
    const files = await this.rerunFiles(model, record, w, state, events, new Set(outputs.keys()), newId);
    const first = await startRun(
      this.createsFor(opts),
      model,
      {
        runId: newId,
        trigger: record.trigger,
        ...(record.initialState ? { initialState: record.initialState } : {}),
        ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : timeoutMs !== undefined ? { timeoutMs } : {}),
        ...(autoApprove ? { autoApprove: true } : {}),
        bindings: opts.bindings ?? record.bindings,
        options: rerunOptions,
        ...(w ? { path: w.path } : {}),
        rerunOf: { run_id: runId, from, outputs, ...(files.size > 0 ? { files } : {}) },
      },
      await this.work.storeTime(),
    );
    this.report(first.events, first.state, { runId: newId, workflowName: record.workflowName, options: rerunOptions });
    return newId;
  }

  /** The output files of a rerun's reused phases (rerun-files.ts), over the workspace its runs use. */
  private async rerunFiles(model: WorkflowModel, record: RunRecord, w: WorkflowRecord | undefined, state: RunState, events: readonly RunEvent[], reused: ReadonlySet<string>, newRunId: string): Promise<Map<string, CarriedFile[]>> {
    if (!events.some((e) => e.type === 'task.file' && e.direction === 'synced')) return new Map();
    const contracts = new Map(planOf(model).contracts);
    for (const [id, b] of Object.entries(this.opts.agents ?? {})) {
      const c = contractOfHandler(typeof b === 'function' ? b : b.handler);
      if (c && !contracts.has(id)) contracts.set(id, c);
    }
    const now = this.clock.now();
    return carryRerunFiles({ model, contracts, state, events, reused, newRunId, now, ...this.stagers(record, runCwd(record, w)) });
  }

  /** The file stager over the workspace a run's attempts use (the engine's, else the run's recorded one, else its cwd), and one for another workspace. */
  private stagers(record: RunRecord, cwd: string): { stager: FileStager; stagerFor: (workspace: string) => FileStager } {
    const recorded = typeof record.options['workspace'] === 'string' ? record.options['workspace'] : undefined;
    const stagerFor = (ws: string): FileStager => (this.opts.fileStager ? this.opts.fileStager(ws) : localFileStager({ workspace: ws }));
    return { stager: stagerFor(resolvePath(this.opts.workspace ?? recorded ?? cwd)), stagerFor };
  }

  /**
   * The events of a run's first commit (run.started, the root task.ready, a gate that opens at once)
   * go to `onEvent` as the worker's commits do: a run that waits from its start is not silent.
   */
  private report(events: readonly RunEvent[], state: RunState, run: RunInfo): void {
    const t = this.opts.telemetry;
    if (t) for (const e of events) t.event(e, state, run);
    const on = this.opts.onEvent;
    if (!on) return;
    for (const e of events) on(e, state);
  }

  /**
   * Continues a stored run (after a crash, or a wait) until it ends. `signal` cancels the run when it
   * aborts; the options may come in its place (`resume(id, {keepEvents: false})`).
   */
  async resume(runId: string, signal?: AbortSignal | DriveOptions, opts: DriveOptions = {}): Promise<RunResult> {
    const record = await this.waits.run(() => this.store.run(runId));
    if (!record) throw new BatonError('unknown-run', `no run ${runId} in ${this.store.location}`);
    return this.drive(runId, signal, opts);
  }

  /** Drives a stored run (started by `start` or `rerun`, or left by a crash) until it ends; the options may come in the signal's place. */
  drive(runId: string, signal?: AbortSignal | DriveOptions, opts: DriveOptions = {}): Promise<RunResult> {
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      opts = { ...signal, ...opts };
      signal = undefined;
    }
    const p = this.driveRun(runId, signal, opts.keepEvents ?? true);
    // close() ends the drive of an unfinished run with a rejection: a caller that awaits it after close() sees it, not an unhandled rejection
    p.catch(() => undefined);
    return p;
  }

  private async driveRun(runId: string, signal: AbortSignal | undefined, keepEvents: boolean): Promise<RunResult> {
    const done = this.work.drive(runId, keepEvents);
    if (signal) {
      const onAbort = (): void => void this.cancel(runId, reasonText(signal.reason)).catch(() => undefined);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
      try {
        return await done;
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    }
    return done;
  }

  /** Runs the ready tasks of every run in the store for the bound agents until `signal` aborts. */
  serve(signal: AbortSignal): Promise<void> {
    return this.work.serve(signal);
  }

  approve(runId: string, gateId: string, by: string, comment?: string): Promise<void> {
    return this.gate(runId, { kind: 'decide_gate', gateId, decision: 'approved', by, ...(comment !== undefined ? { comment } : {}) });
  }

  deny(runId: string, gateId: string, by: string, comment?: string): Promise<void> {
    return this.gate(runId, { kind: 'decide_gate', gateId, decision: 'denied', by, ...(comment !== undefined ? { comment } : {}) });
  }

  respond(runId: string, gateId: string, value: Json, by: string): Promise<void> {
    return this.gate(runId, { kind: 'respond', gateId, value, by, ownerGone: this.ownerGone });
  }

  async cancel(runId: string, reason = 'cancelled'): Promise<void> {
    await this.command(runId, { kind: 'cancel', reason });
  }

  /**
   * Records an outcome that came too late (a remote agent's completion under a token that ended) as
   * `task.stale_outcome`. Never applied: `by` is not a worker id, so it never holds the task's lease.
   */
  async recordStaleOutcome(runId: string, phase: string, attempt: number, by: string, completed: boolean): Promise<void> {
    // in its own transaction, as another process's command (a worker that holds the run sees the new seq and reloads)
    const record = await this.store.run(runId);
    if (!record) throw new BatonError('unknown-run', `no run ${runId} in ${this.store.location}`);
    const model = await this.model(record);
    const outcome = completed ? { ok: true as const, output: {}, costUsd: 0 } : { ok: false as const, failure: { code: 'StaleOutcome', message: 'a late outcome', retryable: false } };
    await commandRun(this.store, model, record, [{ kind: 'outcome', phase, attempt, worker: by, outcome }], this.clock);
  }

  private async gate(runId: string, fact: Parameters<Worker['submit']>[1]): Promise<void> {
    const r = await this.command(runId, fact);
    if (r.kind === 'gate' && !r.ok) throw new BatonError(r.code, r.message);
  }

  /**
   * A fact for a run: through this engine's worker when it drives the run (its commits wait out a store
   * that is away), else in its own transaction, which rides out such a store for `storeRetryMs`. A try
   * after one that failed may find its own decision landed (the answer was lost, not the commit): that
   * is this command's success, where another decider's is still refused.
   */
  private command(runId: string, fact: Parameters<Worker['submit']>[1]): Promise<FactResult> {
    if (this.worker?.holds(runId)) return this.worker.submit(runId, fact);
    return this.waits.run(async (again) => {
      const record = await this.store.run(runId);
      if (!record) throw new BatonError('unknown-run', `no run ${runId} in ${this.store.location}`);
      const model = await this.model(record);
      const { results, state } = await commandRun(this.store, model, record, [fact], this.clock);
      const r = results[0]!;
      return again && r.kind === 'gate' && !r.ok && decidedAs(state, fact) ? { kind: 'gate', ok: true } : r;
    });
  }

  /** A stored run: its row, workflow, state (a fold over its events), result and task rows. */
  async inspect(runId: string): Promise<RunInspection> {
    const record = await this.store.run(runId);
    if (!record) throw new BatonError('unknown-run', `no run ${runId} in ${this.store.location}`);
    const [workflow, events, tasks] = await Promise.all([this.store.workflow(record.workflowHash), this.store.events(runId), this.store.tasks(runId)]);
    const state = replay(runId, events);
    try {
      const model = await this.model(record);
      const plan = planOf(model);
      attachGraph(state, plan.dependsOn, plan.dependents, plan.assign);
    } catch {
      // inspection works without the compiled workflow
    }
    return { record, workflow, state, result: toResult(state, events), tasks };
  }

  /**
   * Stops the worker cleanly: claims nothing more, lets running attempts finish for up to `graceMs`,
   * hands the rest back to the store (their leases released, so another worker takes them at once),
   * then closes like `close()`.
   */
  async stop(graceMs = 10_000): Promise<void> {
    await this.worker?.stop(graceMs);
    await this.close();
  }

  /**
   * Stops the worker and closes the subprocess agents this engine started (not the store). Idempotent.
   * Attempts still running are aborted and handed back (`stop(0)`): their leases are released in the
   * store, so another worker takes them at once rather than after the lease.
   */
  close(): Promise<void> {
    this.closing ??= this.closeOnce();
    return this.closing;
  }

  private closing: Promise<void> | undefined;

  private async closeOnce(): Promise<void> {
    await this.worker?.stop(0);
    this.worker?.close();
    // a store call in flight finishes (or fails) before the caller may close the store under it
    await this.worker?.settled();
    await Promise.allSettled([...this.owned, ...this.llmBound].map((a) => a.close()));
    this.llmBound.clear();
    // the spans of what ended here are exported before the process may exit (an exporter's failure is not the engine's)
    await this.opts.telemetry?.flush().catch(() => undefined);
  }

  /** `await using engine = createEngine(...)`: close() at the end of the scope (the store stays open). */
  [asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * The trigger and initial state are recorded (run.started, the run row) and read by every phase:
 * they must be JSON a store keeps exactly. A Date, a function, NaN or a cycle from a library
 * caller is refused before anything is stored; undefined members are dropped as JSON drops them.
 */
function jsonRunInputs(opts: StartRunOptions): Pick<StartRunOptions, 'trigger' | 'initialState'> {
  const out: Pick<StartRunOptions, 'trigger' | 'initialState'> = {};
  if (opts.trigger !== undefined) {
    const r = toJson(opts.trigger);
    if (!r.ok) throw new BatonError('usage', `the trigger is not JSON: it ${r.message}`);
    out.trigger = r.value;
  }
  if (opts.initialState !== undefined) {
    const r = toJson(opts.initialState);
    if (!r.ok || r.value === null || typeof r.value !== 'object' || Array.isArray(r.value)) throw new BatonError('usage', `the initial state is not a JSON object${r.ok ? '' : `: it ${r.message}`}`);
    out.initialState = r.value;
  }
  return out;
}

/** A workflow that declares `x-trigger` refuses a trigger that does not fit it, before anything is stored. */
function checkTrigger(model: WorkflowModel, trigger: Json | undefined): void {
  if (!model.trigger) return;
  const issues = model.trigger.issues(trigger ?? null);
  if (issues.length === 0) return;
  if (trigger === undefined || trigger === null) throw new BatonError('usage', `no trigger was given, and \`x-trigger\` expects ${model.trigger.text}: pass one (\`--trigger JSON\` or \`--trigger @file.json\` on the command line)`);
  const shown = issues.slice(0, 3).map((i) => `${i.pointer === '' ? '$' : i.pointer}: ${i.message}`);
  throw new BatonError('usage', `the trigger does not fit \`x-trigger\` (${model.trigger.text}): ${shown.join('; ')}${issues.length > 3 ? ` (and ${issues.length - 3} more)` : ''}`);
}

/** An engine over a store; `createEngine<Workflow>(...)` (a `baton types` interface) checks agent ids, outputs and the trigger at compile time. */
/**
 * The workflow a run starts from, refused (usage) when it is not one: JavaScript callers get no compiler to
 * say so, and `engine.run(await loadWorkflow(f))` (the result, not its `.model`) failed with a TypeError.
 */
function modelOf(spec: unknown): WorkflowModel {
  if (spec instanceof WorkflowSpec) return spec.model;
  const isModel = (m: unknown): m is WorkflowModel => {
    const x = m as Partial<WorkflowModel> | null | undefined;
    return typeof x === 'object' && x !== null && typeof x.info === 'object' && x.info !== null && typeof x.info.name === 'string' && Array.isArray(x.phases);
  };
  if (isModel(spec)) return spec;
  const o = spec as { ok?: unknown; diagnostics?: unknown; model?: unknown } | null | undefined;
  if (typeof o === 'object' && o !== null && 'ok' in o && Array.isArray(o.diagnostics)) {
    throw new BatonError('usage', o.ok === true ? 'a run starts from a workflow model: pass `result.model` (loadWorkflow and parseWorkflow return a result)' : 'the workflow is invalid (its compile result has ok: false and diagnostics); nothing was run');
  }
  // a WorkflowSpec of another copy of the package (instanceof does not see it)
  if (typeof o === 'object' && o !== null && isModel(o.model)) return o.model;
  throw new BatonError('usage', `a run starts from a workflow model (loadWorkflow(file).model, parseWorkflow(text).model) or a WorkflowSpec, got ${o === null ? 'null' : typeof o === 'string' ? 'a string (a path or YAML text? compile it first)' : typeof o}`);
}

/**
 * The numeric options, refused when they are not numbers (usage). Out-of-range numbers are clamped where
 * they are used (concurrency 0 is 1), but NaN passed every clamp: `concurrency: NaN` (a `Number(process.env.X)`
 * of an unset variable) made an engine whose runs never started, and a NaN lease or poll broke the loop.
 */
function checkNumbers(opts: Pick<EngineOptions, 'concurrency' | 'leaseMs' | 'pollMs' | 'storeRetryMs' | 'abortGraceMs' | 'snapshotEvery'>): void {
  for (const key of ['concurrency', 'leaseMs', 'pollMs', 'storeRetryMs', 'abortGraceMs', 'snapshotEvery'] as const) {
    const v: unknown = opts[key];
    if (v !== undefined && (typeof v !== 'number' || Number.isNaN(v))) throw new BatonError('usage', `createEngine: ${key} must be a number, got ${typeof v === 'number' ? 'NaN' : JSON.stringify(v) ?? typeof v}`);
  }
}

export function createEngine<W extends WorkflowTypes = AnyWorkflow>(opts: EngineOptions<W>): Engine<W> {
  return new Engine<W>(opts);
}

/** Agent ids the workflow needs (assign and fallback_agent) that have no handler, with their phases. */
/** A handler bound under a name no phase uses, close to an unbound agent's: a typo in the agents module, said with the refusal. */
function misnamed(model: WorkflowModel, handlers: Readonly<Record<string, unknown>>, unbound: ReadonlyMap<string, string[]>): string {
  const used = new Set<string>();
  for (const p of model.phases) {
    used.add(p.assign);
    if (p.retry.fallbackAgent) used.add(p.retry.fallbackAgent);
  }
  const spare = Object.keys(handlers).filter((id) => !used.has(id) && model.agents?.[id] === undefined);
  const guesses: string[] = [];
  for (const agent of unbound.keys()) {
    const near = closest(agent, spare);
    if (near !== undefined) guesses.push(`\`${near}\` is bound but no phase assigns it: did you mean \`${agent}\`?`);
  }
  return guesses.length === 0 ? '' : `; ${guesses.join('; ')}`;
}

export function unboundAgents(model: WorkflowModel, agents: Readonly<Record<string, unknown>>): Map<string, string[]> {
  const missing = new Map<string, string[]>();
  const need = (agent: string, phase: string): void => {
    if (Object.prototype.hasOwnProperty.call(agents, agent) && typeof agents[agent] === 'function') return;
    const list = missing.get(agent) ?? [];
    if (!list.includes(phase)) list.push(phase);
    missing.set(agent, list);
  };
  for (const p of model.phases) {
    need(p.assign, p.name);
    if (p.retry.fallbackAgent) need(p.retry.fallbackAgent, p.name);
    const fb = model.agents?.[p.assign]?.contract?.errorHandling.onAgentFailure?.fallbackAgent;
    if (fb) need(fb, p.name);
  }
  return missing;
}

function reasonText(reason: unknown): string {
  if (reason instanceof Error) return reason.message || reason.name;
  if (typeof reason === 'string') return reason;
  return 'cancelled';
}

let counter = 0;
/** Sortable, unique in a process and very likely across processes: time, then randomness. */
export function newRunId(now: number): string {
  counter = (counter + 1) % 1296;
  const rand = Math.floor(Math.random() * 36 ** 6)
    .toString(36)
    .padStart(6, '0');
  return `run_${now.toString(36)}${counter.toString(36).padStart(2, '0')}${rand}`;
}

/** Where a run's agents run and its relative paths start: the run's recorded cwd, else its workflow file's folder, else this process's. */
function runCwd(record: RunRecord, w: WorkflowRecord | undefined): string {
  return typeof record.options['cwd'] === 'string' ? record.options['cwd'] : w ? dirname(resolvePath(w.path)) : process.cwd();
}
