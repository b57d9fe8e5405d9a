/** `baton resume RUN`, `baton rerun RUN --from PHASE` and `baton worker`: continue stored runs. */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { outputProblem, workspaceRefusal } from './output.js';
import { safeText } from '../diagnostics/terminal.js';
import { createEngine, unboundAgents, type Engine } from '../api/engine.js';
import { BatonError } from '../core/errors.js';
import type { RunStore } from '../engine/ports.js';
import { START_BLIP_MS, UsageError, bindFromFlags, cliClock, cliEngine, cliTelemetry, exitFor, missingAgents, openCliStore, shellQuote, storeFlag, storeRetryMs, storeTroubleLine } from './durable.js';
import { StoreWaits } from '../engine/create-batch.js';
import { printFailure } from './fail.js';
import { usageLine } from './help.js';
import { RERUN_OPTIONS, RESUME_OPTIONS, WORKER_OPTIONS, commandSpec } from './spec.js';
import { SIGNAL_EXIT, type CliIo } from './io.js';
import { endAfterSignal, Foreground } from './foreground.js';
import { describeEvent, gateNotice, progressView } from './run.js';
import type { ProgressView } from './progress.js';

const RESUME_USAGE = usageLine(commandSpec('resume')!);
const RERUN_USAGE = usageLine(commandSpec('rerun')!);

export async function resumeCommand(args: string[], io: CliIo): Promise<number> {
  const held: { fg?: Foreground } = {};
  const code = await resumeHere(args, io, held);
  return endAfterSignal(held.fg, io, code);
}

async function resumeHere(args: string[], io: CliIo, held: { fg?: Foreground }): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: RESUME_OPTIONS });
  let store: RunStore | undefined;
  let engine: Engine | undefined;
  try {
    if (positionals.length !== 1) throw new UsageError('resume takes one run id (see `baton runs`)');
    await checkOutput(values.output, io);
    const runId = positionals[0]!;
    store = await openCliStore(values, io, 'write', 'blip');
    const opened = store;
    // a cut right after the store opened is ridden out as the run's own commits will be
    const waits = new StoreWaits(cliClock(io), Math.min(START_BLIP_MS, storeRetryMs(values, io) ?? Infinity), storeTroubleLine(io));
    const record = await waits.run(() => opened.run(runId));
    if (!record) throw new UsageError(`no run ${runId} in ${store.location} (see \`baton runs\`)`);
    if (record.status !== 'running' && record.status !== 'waiting') {
      const message = `run ${runId} already ${record.status}; nothing to resume (baton rerun ${runId} --from PHASE runs part of it again)`;
      if (record.status === 'completed' && io.json) io.stdout(JSON.stringify({ runId, status: record.status, resumed: false }, null, 2) + '\n');
      if (record.status !== 'completed' && io.json) printFailure(io, 'resume', 'run-ended', message, { runId, status: record.status });
      else io.stderr(`${safeText(message)}\n`);
      return record.status === 'completed' ? 0 : 1;
    }
    const holder: ViewHolder = { fg: (held.fg = new Foreground(io, values, store.kind === 'memory')) };
    engine = await makeEngine(store, io, values, holder);
    const bound = engine;
    const missing = await waits.run(() => missingAgents(bound, runId));
    if (missing) throw new UsageError(missing);
    const { model } = await waits.run(() => bound.bind(record));
    const view = values.quiet ? undefined : await progressView(model.phases.map((p) => p.name), io, values.json === true);
    holder.view = view;
    if (!values.quiet) io.stderr(`resuming run ${safeText(runId, 200)} (${safeText(record.workflowName, 200)}) from ${safeText(store.location, 500)}\n`);
    return await holder.fg.finish(engine, runId, view);
  } catch (e) {
    return exitFor(e, 'resume', io, RESUME_USAGE);
  } finally {
    await engine?.close();
    await store?.close();
  }
}

export async function rerunCommand(args: string[], io: CliIo): Promise<number> {
  const held: { fg?: Foreground } = {};
  const code = await rerunHere(args, io, held);
  return endAfterSignal(held.fg, io, code);
}

async function rerunHere(args: string[], io: CliIo, held: { fg?: Foreground }): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: RERUN_OPTIONS });
  let store: RunStore | undefined;
  let engine: Engine | undefined;
  try {
    if (positionals.length !== 1) throw new UsageError('rerun takes one run id (see `baton runs`)');
    if (values.from === undefined) throw new UsageError('rerun needs --from PHASE: that phase and everything after it run again');
    await checkOutput(values.output, io);
    store = await openCliStore(values, io, 'write', 'blip');
    // a detached rerun is not followed here: a gate it opens at once waits in the store, not on this process
    const holder: ViewHolder = { fg: (held.fg = new Foreground(io, values, store.kind === 'memory')), detached: values.detach === true };
    engine = await makeEngine(store, io, values, holder);
    const id = await engine.rerun(positionals[0]!, values.from, { ...(values['run-id'] !== undefined ? { runId: values['run-id'] } : {}), ...(values['failed-items'] ? { failedItems: true } : {}), ...(values['no-auto-approve'] ? { autoApprove: false } : {}) });
    const record = (await store.run(id))!;
    if (values.detach) {
      io.stdout(values.json ? JSON.stringify({ runId: id, status: 'running', store: store.location }) + '\n' : `${id}\n`);
      // as `baton run --detach` says it: nothing runs it until a resume or a worker takes it up
      io.stderr(`run ${safeText(id, 200)} stored in ${safeText(store.location, 500)}; continue it with: baton resume ${shellQuote(safeText(id, 200))}${storeFlag(values)} (or a worker that binds its agents)\n`);
      return 0;
    }
    const missing = await missingAgents(engine, id);
    if (missing) {
      printFailure(io, 'rerun', 'unbound-agent', `run ${id} is stored; ${missing}; then: baton resume ${id}${storeFlag(values)}`, { runId: id });
      return 2;
    }
    const { model } = await engine.bind(record);
    const view = values.quiet ? undefined : await progressView(model.phases.map((p) => p.name), io, values.json === true);
    holder.view = view;
    if (!values.quiet) io.stderr(`run ${id}: rerun of ${positionals[0]!} from phase ${values.from}${values['failed-items'] ? ' (its failed and skipped items)' : ''}\n`);
    return await holder.fg.finish(engine, id, view);
  } catch (e) {
    return exitFor(e, 'rerun', io, RERUN_USAGE);
  } finally {
    await engine?.close();
    await store?.close();
  }
}

/** `--output` is checked before anything runs, as `baton run` does. */
async function checkOutput(output: string | undefined, io: CliIo): Promise<void> {
  if (output === undefined) return;
  const why = await outputProblem(resolve(io.cwd, output), join(output, 'result.json'));
  if (why) throw new UsageError(`--output ${output}: ${why}; nothing was run`);
}

interface ViewHolder {
  view?: ProgressView | undefined;
  fg: Foreground;
  /** `rerun --detach`: the run is only stored, so a gate's notice must not say that this process waits */
  detached?: boolean;
}

async function makeEngine(store: RunStore, io: CliIo, values: { concurrency?: string | undefined; json?: boolean | undefined; store?: string | undefined; workspace?: string | undefined; 'store-retry'?: string | undefined } & Parameters<typeof bindFromFlags>[0], holder: ViewHolder): Promise<Engine> {
  const workspaceWhy = await workspaceRefusal(values.workspace, io.cwd);
  if (workspaceWhy) throw new UsageError(`${workspaceWhy}; nothing was run`);
  const bound = await bindFromFlags(values, io, io.cwd);
  const concurrency = values.concurrency === undefined ? undefined : Number(values.concurrency);
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) throw new UsageError(`--concurrency expects a positive integer, got \`${values.concurrency}\``);
  const retryMs = storeRetryMs(values, io);
  const engine = cliEngine(store, io, bound.agents, {
    ...(await cliTelemetry(io)),
    ...(retryMs !== undefined ? { storeRetryMs: retryMs } : {}),
    stubAgents: values['stub-agents'] === true,
    ...(concurrency !== undefined ? { concurrency } : {}),
    ...(values.workspace !== undefined ? { workspace: resolve(io.cwd, values.workspace) } : {}),
    onEvent: (e, state) => {
      holder.view?.onEvent({ type: e.type, at: e.at, ...('phase' in e && e.phase !== undefined ? { phase: e.phase } : {}), ...('attempt' in e && e.attempt !== 0 ? { attempt: e.attempt } : {}), data: { reason: describeEvent(e) } });
      if (!holder.fg.inMemory) gateNotice(e, state, io, values, holder.detached === true);
      holder.fg.onEvent(e, state);
    },
  });
  return engine;
}

/** How long a stopping worker's running attempts may finish; the rest are handed back. */
const WORKER_GRACE_MS = 10_000;
/** A stopping worker has exited within this, whatever it waits for (the hand-backs' commits, the store's close). */
export const WORKER_STOP_BOUND_MS = 15_000;

export async function workerCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({ args, options: WORKER_OPTIONS });
  let store: RunStore | undefined;
  let engine: Engine | undefined;
  try {
    const concurrency = values.concurrency === undefined ? undefined : Number(values.concurrency);
    if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) throw new UsageError(`--concurrency expects a positive integer, got \`${values.concurrency}\``);
    const lease = values.lease === undefined ? undefined : Number(values.lease);
    if (lease !== undefined && !(Number.isFinite(lease) && lease >= 0.5)) throw new UsageError(`--lease expects a number of seconds (at least 0.5), got \`${values.lease}\``);
    const retryMs = storeRetryMs(values, io);
    const workspaceWhy = await workspaceRefusal(values.workspace, io.cwd);
    if (workspaceWhy) throw new UsageError(workspaceWhy);
    const bound = await bindFromFlags(values, io, io.cwd);
    store = await openCliStore(values, io, 'write', true);
    const ctl = new AbortController();
    // a worker runs what its own flags bind (and x-command agents): not modules recorded by whoever started a run
    engine = createEngine({
      store,
      agents: bound.agents,
      clock: cliClock(io),
      ...(await cliTelemetry(io)),
      stubAgents: values['stub-agents'] === true,
      ...(concurrency !== undefined ? { concurrency } : {}),
      ...(lease !== undefined ? { leaseMs: lease * 1000 } : {}),
      ...(retryMs !== undefined ? { storeRetryMs: retryMs } : {}),
      ...(values.workspace !== undefined ? { workspace: resolve(io.cwd, values.workspace) } : {}),
      onStoreTrouble: storeTroubleLine(io),
      // names and messages come from files and agents: escaped, never sent raw to a terminal
      // --json: every event as a JSON line on stdout (the stored event, as `baton show --events --json` has it)
      // each line names its run (a worker serves many at once), as `baton serve --json` does
      ...(values.quiet ? {} : values.json ? { onEvent: (e, state) => io.stdout(JSON.stringify({ run_id: state.runId, ...e }) + '\n') } : { onEvent: (e, state) => io.stderr(`${new Date(e.at).toISOString()} ${safeText(state.runId, 200)} ${'phase' in e && e.phase ? `${safeText(e.phase, 200)} ` : ''}${e.type} ${safeText(describeEvent(e))}`.trimEnd() + '\n') }),
    });
    let stopping = false;
    const off = io.onInterrupt?.((why) => {
      if (why === 'reader-gone') return; // a log reader that went away does not stop the work
      const left = 'attempts not handed back are left to other workers (their leases expire)';
      if (stopping) {
        // whatever the stop waits for (a store that does not answer, an agent): nothing is lost, the store has it all
        io.stderr(`worker stopping now; ${left}\n`);
        if (io.exit) io.exit(SIGNAL_EXIT[why]);
        else ctl.abort();
        return;
      }
      stopping = true;
      io.stderr(`worker stopping: running attempts may finish for ${WORKER_GRACE_MS / 1000} s, the rest are handed back to other workers (again to stop now)\n`);
      void engine!.stop(WORKER_GRACE_MS).finally(() => ctl.abort());
      // a store that does not answer the hand-backs (a partition) does not hold the worker past the bound
      setTimeout(() => {
        io.stderr(`worker stopped ${WORKER_STOP_BOUND_MS / 1000} s after the signal with the stop unfinished; ${left}\n`);
        io.exit?.(SIGNAL_EXIT[why]);
      }, WORKER_STOP_BOUND_MS).unref();
    });
    const agents = Object.keys(bound.agents);
    if (values.json) io.stdout(JSON.stringify({ type: 'worker.started', worker: engine.work.id, store: store.location, agents, stub_agents: values['stub-agents'] === true }) + '\n');
    io.stderr(`worker ${engine.work.id} serving ${store.location}: ${agents.length > 0 ? `agents ${agents.map((a) => safeText(a, 200)).join(', ')}` : 'no agents of its own'}${values['stub-agents'] ? ', stubs for the rest' : ''}, and the x-command and LLM agents the stored workflows declare\n`);
    if (agents.length === 0 && !values['stub-agents']) io.stderr('warning: this worker binds no agents: it runs only agents a workflow declares with x-command (or LLM agents); bind the others with --agents MODULE, --agent-command ID=CMD or --stub-agents\n');
    for (const line of await startupWarnings(engine, store)) io.stderr(`warning: ${line}\n`);
    try {
      await engine.serve(ctl.signal);
    } finally {
      off?.();
    }
    return 0;
  } catch (e) {
    return exitFor(e, 'worker', io);
  } finally {
    await engine?.close();
    await store?.close();
  }
}

/**
 * The waiting runs of the store whose ready work needs agents this worker cannot run: said once when
 * the worker starts, so a worker that will never claim anything does not wait in silence.
 */
/**
 * The runs a starting worker cannot serve, as warnings; none when the store is unavailable right then (a
 * database restart, a network cut): the warnings are advice, and the worker waits out the store's trouble
 * in its loop, where it says so, rather than exit before it has served anything.
 */
export async function startupWarnings(engine: Engine, store: RunStore): Promise<string[]> {
  try {
    return await unservedRuns(engine, store);
  } catch (e) {
    if (e instanceof BatonError && (e.code === 'store-unreachable' || e.code === 'store-locked')) return [];
    throw e;
  }
}

export async function unservedRuns(engine: Engine, store: RunStore, limit = 50): Promise<string[]> {
  const out: string[] = [];
  const runs = await store.runs({ status: ['running', 'waiting'], limit });
  for (const record of runs) {
    let need: Map<string, string[]>;
    try {
      const { model, handlers } = await engine.bind(record);
      need = unboundAgents(model, handlers);
    } catch {
      continue; // a run whose workflow cannot be bound here is reported when a worker takes it up
    }
    if (need.size === 0) continue;
    const ready = (await store.tasks(record.runId)).filter((t) => t.status === 'ready' || t.status === 'running');
    const blocked = [...need].filter(([, phases]) => ready.some((t) => phases.includes(t.phase)));
    if (blocked.length === 0) continue;
    out.push(`run ${safeText(record.runId, 200)} (${safeText(record.workflowName, 200)}) needs agent${blocked.length === 1 ? '' : 's'} ${blocked.map(([a]) => `\`${safeText(a, 200)}\``).join(', ')}, which this worker does not bind${typeof record.bindings['module'] === 'string' ? ` (the run was started with --agents ${safeText(record.bindings['module'], 500)})` : ''}`);
  }
  return out;
}
