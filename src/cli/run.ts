/**
 * `baton run FILE`: compile, bind agents, run with live progress, report. Exit 0 when the run
 * completed, 1 when it failed or was cancelled, 2 on usage errors or an invalid workflow.
 */
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { isPlainObject, jsonSyntaxError, type Json, type JsonObject } from '../core/json.js';
import { jsonDepthExceeded, MAX_JSON_DEPTH } from '../core/json-depth.js';
import { safeText } from '../diagnostics/terminal.js';
import { decodeUtf8 } from '../diagnostics/text.js';
import { newRunId, type Engine } from '../api/engine.js';
import { MAX_TIMEOUT_MS } from '../core/clock.js';
import { BatonError } from '../core/errors.js';
import { describeAgentEvent } from '../agents/llm/describe.js';
import { WorkflowSpec } from '../api/spec.js';
import type { RunEvent } from '../engine/events.js';
import type { RunStore } from '../engine/ports.js';
import type { RunState } from '../engine/state.js';
import { ownerIsDeadOnThisHost } from '../engine/worker-support.js';
import { loadWorkflow, MAX_WORKFLOW_BYTES, readBounded } from '../workflow/compile.js';
import { UsageError, asFlag, bindFromFlags, cliEngine, cliTelemetry, exitFor, openCliStore, shellQuote, storeFlag, storeRetryMs } from './durable.js';
import { useColor } from './color.js';
import { printFailure } from './fail.js';
import { usageLine } from './help.js';
import { RUN_OPTIONS, commandSpec } from './spec.js';
import { copyExample, declaresFiles, examplesInstalled, noWorkflowAt, resolveTarget } from './examples.js';
import { StateOut } from './state-out.js';
import { endAfterSignal, Foreground } from './foreground.js';
import type { CliIo } from './io.js';
import { fsReason, inputProblem, outputProblem, workspaceRefusal } from './output.js';
import { ProgressView, type ViewEvent } from './progress.js';
import { boundFromHandlers } from './agents-module.js';
import { jsonDiagnostics } from '../api/validation.js';
import { printDiagnostics, renderOptionsFor } from './validate.js';

const RUN_USAGE = usageLine(commandSpec('run')!);

export async function runCommand(args: string[], io: CliIo): Promise<number> {
  const held: { fg?: Foreground } = {};
  const code = await runHere(args, io, held);
  return endAfterSignal(held.fg, io, code);
}

async function runHere(args: string[], io: CliIo, held: { fg?: Foreground }): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: RUN_OPTIONS });
  let store: RunStore | undefined;
  let engine: Engine | undefined;
  try {
    if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'name a workflow file, a directory holding workflow.yaml, or a bundled example (`baton list`)' : 'run takes one workflow');
    if (values.server !== undefined) return await (await import('./remote.js')).remoteRun(values, positionals[0]!, io);
    if (values['api-key'] !== undefined) throw new UsageError('--api-key goes with --server URL (a run on a Baton server)');
    const arg = positionals[0]!;
    let target = resolveTarget(arg, io.cwd);
    if (!target) throw new UsageError(noWorkflowAt(arg, io.cwd));
    const shown = relative(io.cwd, target.workflow) || target.workflow;
    // every path the run will write is checked before anything runs
    for (const [flag, given, example] of [['--output', values.output, 'result.json'], ['--state-out', values['state-out'], 'state.json']] as const) {
      if (given === undefined) continue;
      const why = await outputProblem(resolve(io.cwd, given), join(given, example));
      if (why) throw new UsageError(`${flag} ${given}: ${why}; nothing was run`);
    }
    const workspaceWhy = await workspaceRefusal(values.workspace, io.cwd);
    if (workspaceWhy) throw new UsageError(`${workspaceWhy}; nothing was run`);
    const repliesWhy = values.replies === undefined ? undefined : await inputProblem(resolve(io.cwd, values.replies));
    if (repliesWhy) throw new UsageError(`--replies ${values.replies}: ${repliesWhy}; nothing was run`);

    const compiled = await loadWorkflow(target.workflow);
    const r = { ...compiled, file: shown.startsWith('..') ? target.workflow : shown };
    if (r.diagnostics.length > 0) io.stderr(printDiagnostics(r, renderOptionsFor(io, 'stderr')));
    if (!r.ok) {
      // as validate says it: a workflow that cannot be read (a file, or a directory without read access) is not an invalid one
      const unreadable = r.diagnostics.some((d) => d.code === 'file-unreadable' && d.file === undefined);
      const message = `${shown}: ${unreadable ? 'the workflow cannot be read' : 'the workflow is invalid'}; nothing was run`;
      if (io.json) printFailure(io, 'run', unreadable ? 'file-unreadable' : 'invalid-workflow', message, { diagnostics: jsonDiagnostics(r, io.cwd) });
      else io.stderr(`${safeText(message)}\n`);
      return 2;
    }
    const spec = WorkflowSpec.fromResult(compiled);
    // a bundled example that writes files, run from an installed package: run from a copy in the working
    // directory, where its files are then written and can be found (not inside node_modules)
    if (target.example !== undefined && values.workspace === undefined && examplesInstalled() && compiled.model !== undefined && declaresFiles(compiled.model)) {
      let copy: typeof target;
      try {
        copy = copyExample(target, io.cwd);
      } catch (e) {
        throw new UsageError(`the bundled example ${target.example} reads and writes files, and cannot be copied to ./${target.example} (${(e as Error).message}); give --workspace DIR for its files; nothing was run`);
      }
      io.stderr(`the bundled example ${target.example} reads and writes files: copied it to ./${target.example}, where its files are; next time run that copy (baton run ./${target.example})\n`);
      target = copy;
    }

    const concurrency = values.concurrency === undefined ? undefined : positiveInt(values.concurrency, '--concurrency');
    const timeoutS = values.timeout === undefined ? undefined : positiveNumber(values.timeout, '--timeout');
    const trigger = await readJsonObject(values.trigger, target.trigger, io.cwd, 'trigger');
    const initialState = await readJsonObject(values['initial-state'], undefined, io.cwd, 'initial state');
    const runId = values['run-id'];
    if (runId !== undefined && !/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/.test(runId)) throw new UsageError(`--run-id expects letters, digits and _ . : - (at most 128), got \`${runId}\``);
    const bound = await bindFromFlags(values, io, io.cwd, target.agents, compiled.model);
    // contracts that `defineAgent` handlers carry are checked against the workflow as contract files are
    const fromCode = typeof bound.record['module'] === 'string' ? boundFromHandlers(bound.record['module'], bound.agents) : undefined;
    if (fromCode) {
      const again = await loadWorkflow(target.workflow, { bound: fromCode });
      const seen = new Set(compiled.diagnostics.map((d) => `${d.code} ${d.file ?? ''} ${d.path.join('.')}`));
      const fresh = again.diagnostics.filter((d) => !seen.has(`${d.code} ${d.file ?? ''} ${d.path.join('.')}`));
      if (fresh.length > 0) io.stderr(printDiagnostics({ ...again, diagnostics: fresh, file: r.file }, renderOptionsFor(io, 'stderr')));
      if (!again.ok) {
        const message = `${shown}: the agents module's contracts (defineAgent) do not fit the workflow; nothing was run`;
        if (io.json) printFailure(io, 'run', 'invalid-workflow', message, { diagnostics: jsonDiagnostics({ ...again, diagnostics: fresh, file: r.file }, io.cwd) });
        else io.stderr(`${safeText(message)}\n`);
        return 2;
      }
    }

    try {
      store = await openCliStore(values, io, 'write', 'blip');
    } catch (e) {
      throw e instanceof BatonError && (e.code === 'store-unreachable' || e.code === 'store-locked') ? new BatonError(e.code, `${e.message}; no run was created`, { cause: e }) : e;
    }
    if (values.detach && store.kind === 'memory') throw new UsageError('--detach stores the run for a worker or `baton resume`, but --store memory keeps nothing after this process: use a durable store (the default .baton/baton.db, a file, or postgres://...)');
    const view = values.quiet || values.detach ? undefined : await progressView(spec.phases.map((p) => p.name), io, values.json === true);
    // LLM agents (docs/llm-agents.md); recorded with the run so a resume binds them the same way
    const replies = values.replies !== undefined ? resolve(io.cwd, values.replies) : undefined;
    const llm = { ...(values.llm ? { agents: values.llm } : {}), allUnbound: values['llm-agents'] === true, env: io.env, ...(replies !== undefined ? { replies } : {}), onNote: (m: string) => io.stderr(`note: ${m}\n`) };
    if (values.llm || values['llm-agents'] || replies !== undefined) bound.record['llm'] = { ...(values.llm ? { agents: values.llm } : {}), ...(values['llm-agents'] ? { all_unbound: true } : {}), ...(replies !== undefined ? { replies } : {}) };
    const fg = (held.fg = new Foreground(io, values, store.kind === 'memory'));
    const stateOut = values['state-out'] !== undefined ? new StateOut(resolve(io.cwd, values['state-out']), spec.model, initialState as JsonObject | undefined, (m) => io.stderr(`${m}\n`), values['state-out']) : undefined;
    const retryMs = storeRetryMs(values, io);
    engine = cliEngine(store, io, bound.agents, {
      ...(await cliTelemetry(io)),
      ...(retryMs !== undefined ? { storeRetryMs: retryMs } : {}),
      stubAgents: values['stub-agents'] === true,
      llm,
      ...(concurrency !== undefined ? { concurrency } : {}),
      onEvent: (e, state) => {
        stateOut?.update(e, state);
        view?.onEvent(toViewEvent(e));
        if (!fg.inMemory) gateNotice(e, state, io, values, values.detach === true);
        fg.onEvent(e, state);
      },
    });
    // chosen here, so that a creation the store never answered can be named (it may have landed)
    const id = runId ?? newRunId(engine.clock.now());
    const keepEvents = values.json === true || values.output !== undefined;
    try {
      await engine.start(spec, {
        runId: id,
        ...(trigger !== undefined ? { trigger } : {}),
        ...(initialState !== undefined ? { initialState: initialState as JsonObject } : {}),
        ...(timeoutS !== undefined ? { timeoutMs: timeoutS * 1000 } : {}),
        autoApprove: values['auto-approve'] === true,
        bindings: bound.record,
        path: target.workflow,
        // a caller's trace (W3C TRACEPARENT, as CI systems and other tracers pass it): the run joins it
        ...(io.env['TRACEPARENT'] !== undefined ? { traceparent: io.env['TRACEPARENT'] } : {}),
        ...(values.workspace !== undefined ? { workspace: resolve(io.cwd, values.workspace) } : {}),
        // driven here from the state it was created with (no read back: every store call from now on rides
        // out a store that is away, as a worker's do), followed by finish() below with Ctrl-C handling; or,
        // with --detach, by a worker
        keepEvents,
        ...(values.detach ? { detach: true } : {}),
      });
    } catch (e) {
      // the store went away for longer than the creation waits for it (storeRetryMs): whether the last try landed is not known
      if (e instanceof BatonError && (e.code === 'store-unreachable' || e.code === 'store-locked'))
        throw new BatonError(e.code, `${e.message}; run ${id} was perhaps created (a try may have landed without its answer): see baton show ${id}${storeFlag(values)}, and if it is there continue it with baton resume ${id}${storeFlag(values)}`, { cause: e });
      throw e;
    }
    if (values.detach) {
      view?.close();
      if (values.json) io.stdout(JSON.stringify({ runId: id, status: 'running', store: store.location }) + '\n');
      else io.stdout(`${id}\n`);
      const module = typeof bound.record['module'] === 'string' ? ` --agents ${shellQuote(relative(io.cwd, bound.record['module']) || bound.record['module'])}` : '';
      io.stderr(`run ${id} stored in ${store.location}; continue it with: baton resume ${id}${storeFlag(values)} (or a worker that binds its agents: baton worker${module}${values['stub-agents'] ? ' --stub-agents' : ''}${storeFlag(values)})\n`);
      return 0;
    }
    try {
      return await fg.finish(engine, id, view);
    } finally {
      stateOut?.flush();
    }
  } catch (e) {
    return exitFor(e, 'run', io, RUN_USAGE);
  } finally {
    await engine?.close();
    await store?.close();
  }
}

export async function progressView(phases: string[], io: CliIo, toStderr: boolean): Promise<ProgressView> {
  const stream = toStderr ? io.stderrStream : io.stdoutStream;
  // live and coloured by the TTY-ness of the stream it writes to
  const tty = toStderr ? io.stderrIsTTY === true : io.isTTY;
  // the live table's redraws (log-update and what it loads) only on a terminal: a pipe or CI gets lines, and starts sooner
  const logUpdate = tty && stream ? (await import('log-update')).createLogUpdate : undefined;
  return new ProgressView(phases, { write: toStderr ? io.stderr : io.stdout, isTTY: tty, color: useColor(io, toStderr ? 'stderr' : 'stdout'), ...(stream ? { stream } : {}), ...(logUpdate ? { logUpdate } : {}) });
}

/** When a gate opens and stays open, say how to decide it (the run keeps waiting meanwhile). */
export function gateNotice(e: RunEvent, state: RunState, io: CliIo, values: { store?: string | undefined }, detached = false): void {
  if (e.type !== 'gate.opened') return;
  const g = state.gates.get(e.gate_id);
  if (!g || g.status !== 'open') return;
  const who = g.approvers.length > 0 ? ` (approvers: ${g.approvers.join(', ')})` : '';
  // a fan-out item's gate is `input-draft[3]-1`: quoted, or zsh refuses the pasted command (no match for the glob)
  const on = `${shellQuote(state.runId)} ${shellQuote(g.id)}`;
  const cmd =
    g.kind === 'input' && g.escalation
      ? `baton respond ${on} --value retry|skip|fail${storeFlag(values)}`
      : g.kind === 'input'
      ? `baton respond ${on} --value '<JSON>'${storeFlag(values)}${g.choices ? `   (choices: ${g.choices.map((c) => JSON.stringify(c)).join(', ')})` : ''}`
      : `baton approve ${on}${asFlag(g.approvers)}${storeFlag(values)}   (or: baton deny ${on}${asFlag(g.approvers)}${storeFlag(values)})`;
  // a detached run is not followed here: it waits in the store, and a worker (or baton resume) continues it once decided
  const waiting = detached ? 'the run waits in the store until it is decided' : `waiting; the run continues when it is decided (Ctrl-C leaves it waiting in the store: baton resume ${state.runId}${storeFlag(values)})`;
  io.stderr(`\n⏸ ${g.escalation ? 'decision' : g.kind === 'input' ? 'input' : 'approval'} needed: ${safeText(g.reason)}${who}\n  ${cmd}\n  ${waiting}\n`);
}

function positiveInt(s: string, flag: string): number {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} expects a positive integer, got \`${s}\``);
  return n;
}

function positiveNumber(s: string, flag: string): number {
  const n = Number(s);
  // seconds whose milliseconds a deadline can hold (1e306 is a number, its milliseconds are not)
  if (!(n * 1000 <= MAX_TIMEOUT_MS) || n <= 0) throw new UsageError(`${flag} expects a positive number of seconds, got \`${s}\``);
  return n;
}

export async function readJsonObject(flag: string | undefined, besideWorkflow: string | undefined, cwd: string, what: string): Promise<Json | undefined> {
  let text: string | undefined;
  let from: string;
  if (flag !== undefined) {
    if (flag.startsWith('@')) {
      from = flag.slice(1);
      const flagName = what === 'trigger' ? '--trigger' : '--initial-state';
      if (from === '') throw new UsageError(`${flagName} @ needs a file name after the @ (${flagName} @trigger.json), or JSON text (${flagName} '{"topic": "x"}')`);
      try {
        text = await readUtf8(resolve(cwd, from));
      } catch (e) {
        throw new UsageError(`cannot read ${what} file ${from}: ${fsReason(e)}`);
      }
    } else {
      text = flag;
      from = what === 'trigger' ? '--trigger' : '--initial-state';
    }
  } else if (besideWorkflow) {
    from = relative(cwd, besideWorkflow) || besideWorkflow;
    try {
      text = await readUtf8(besideWorkflow);
    } catch (e) {
      throw new UsageError(`cannot read ${from}: ${fsReason(e)}`);
    }
  } else return undefined;
  if (text === undefined) throw new UsageError(`${from}: the ${what} file is not UTF-8 text (or is larger than 64 MB)`);
  // a byte order mark (Windows editors write one) is not part of the JSON (RFC 8259 lets a reader ignore it)
  if (text.charCodeAt(0) === 0xfeff && flag?.startsWith('@') !== false) text = text.slice(1);
  if (jsonDepthExceeded(text) >= 0) throw new UsageError(`${from}: the ${what} is nested deeper than ${MAX_JSON_DEPTH} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const at = jsonSyntaxError(e, text);
    throw new UsageError(`${from}${at.line !== undefined ? `:${at.line}:${at.column}` : ''}: the ${what} is not valid JSON: ${at.reason}`);
  }
  if (!isPlainObject(value)) throw new UsageError(`${from}: the ${what} must be a JSON object, e.g. '{"topic": "solar"}'`);
  return value as Json;
}

/** A file's text, or undefined when its bytes are not UTF-8 (never read with U+FFFD in their place) or past 64 MB. */
async function readUtf8(path: string): Promise<string | undefined> {
  const bytes = await readBounded(path, MAX_WORKFLOW_BYTES);
  const d = bytes ? decodeUtf8(bytes) : undefined;
  return !d || d.invalid ? undefined : d.text;
}

/** What the progress view shows of an event. */
export function describeEvent(e: RunEvent): string {
  switch (e.type) {
    case 'task.claimed':
      return `agent ${e.agent}`;
    case 'task.claim_rejected':
    case 'task.rejected':
      return `${String(e.error['error'])}: ${String(e.error['message'])}`;
    case 'task.attempt_failed':
    case 'task.failed':
      return `${e.failure.code}: ${e.failure.message}`;
    case 'task.retrying':
      return `${e.reason}; attempt ${e.next_attempt}${e.agent ? ` (${e.agent})` : ''} in ${e.delay_ms} ms${e.held_by !== undefined ? ` (kept for ${e.held_by} while attempt ${e.attempt}'s code still runs)` : ''}`;
    case 'task.skipped':
      return `${e.reason}: ${e.detail}`;
    case 'task.completed':
      // attempt 0: a for_each phase, its items' outputs gathered (no attempt of its own)
      return e.partial ? 'partial result (accepted by its contract)' : e.attempt === 0 ? 'items gathered' : '';
    case 'task.checkpoint':
      return 'checkpoint saved';
    case 'task.fanned_out':
      return `${e.items} item${e.items === 1 ? '' : 's'}`;
    case 'task.warning':
      return `warning ${e.code}: ${e.message}`;
    case 'task.cancelled':
      return e.reason;
    case 'task.cost':
      return `$${e.usd} (phase $${round(e.phase_total_usd)}, run $${round(e.run_total_usd)})`;
    case 'task.log':
      return e.message;
    case 'task.agent_event':
      return describeAgentEvent(e.kind, e.data);
    case 'task.file':
      return `${e.direction} ${e.key} ${e.direction === 'staged' ? '<-' : '->'} ${e.path} (${e.size} bytes, sha256 ${e.sha256.slice(0, 12)})`;
    case 'task.sibling_output':
      return `read output of ${e.sibling}`;
    case 'budget.alert':
      return `${e.scope} budget ${e.percent}% used ($${round(e.spent_usd)} of $${e.budget_usd})`;
    case 'run.failed':
      return `${e.failure.code}: ${e.failure.message}`;
    case 'run.cancelled':
      return e.reason;
    case 'run.started':
      return `run ${e.run_id}: ${e.workflow}`;
    case 'gate.opened':
      return `${e.kind} gate ${e.gate_id}: ${e.reason}`;
    case 'gate.decided':
      return `${e.gate_id} ${e.decision} by ${e.by}${e.auto ? ' (automatic)' : ''}${e.comment ? `: ${e.comment}` : ''}`;
    case 'gate.answered':
      return `${e.gate_id} answered by ${e.by}`;
    case 'gate.refused':
      return `${e.gate_id}: ${e.reason}`;
    case 'gate.expired':
      return `${e.gate_id} expired (${e.action})`;
    case 'gate.withdrawn':
      return `${e.gate_id} withdrawn: ${e.reason}`;
    case 'gate.escalated':
      return `${e.gate_id} escalated${e.contact ? ` to ${e.contact}` : ''}`;
    case 'task.lease_expired':
      // a worker of this host that died (kill -9, a crash) is taken over at once, not after its lease: say so
      if (e.handed_back) return `${e.owner} handed attempt ${e.attempt} back; it runs again`;
      return ownerIsDeadOnThisHost(e.owner) ? `${e.owner} lost attempt ${e.attempt} (its process is gone); it runs again` : `${e.owner} lost attempt ${e.attempt} (its lease ran out: the worker stopped or stalled); it runs again`;
    case 'task.stale_outcome':
      return `late ${e.outcome} of attempt ${e.attempt} ignored: ${e.reason}`;
    default:
      return '';
  }
}

function round(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

export function toViewEvent(e: RunEvent): ViewEvent {
  const note = describeEvent(e);
  return {
    type: e.type,
    at: e.at,
    ...('phase' in e && e.phase !== undefined ? { phase: e.phase } : {}),
    // attempt 0: the for_each phase itself (its items gathered, a warning about its items), no attempt of its own
    ...('attempt' in e && e.attempt !== 0 ? { attempt: e.attempt } : {}),
    data: { reason: note, ...(e.type === 'task.completed' && e.partial ? { state: 'partial' } : {}), ...(e.type === 'task.fanned_out' ? { items: e.items, state: 'running' } : {}) },
  };
}
