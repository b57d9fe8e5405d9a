/**
 * What the durable commands share: opening the store named by `--store` / `BATON_STORE`, binding
 * agents from flags and from what a run recorded, and turning faults into exit codes.
 */
import { userInfo } from 'node:os';
import { resolve } from 'node:path';
import { subprocessAgent } from '../agents/subprocess.js';
import type { StoreTrouble } from '../engine/worker.js';
import { createEngine, unboundAgents, type AgentBinding, type Engine, type EngineOptions } from '../api/engine.js';
import { openStore } from '../api/store.js';
import { offsetClock, systemClock, type Clock } from '../core/clock.js';
import { BatonError } from '../core/errors.js';
import { isPlainObject, type JsonObject } from '../core/json.js';
import type { RunRecord, RunStore } from '../engine/ports.js';
import { AgentsModuleError, loadAgentsModule } from './agents-module.js';
import type { WorkflowModel } from '../workflow/model.js';
import { unknownBinding } from './bindings.js';
import { safeText } from '../diagnostics/terminal.js';
import { printFailure } from './fail.js';
import type { CliIo } from './io.js';
import type { Telemetry } from '../engine/telemetry.js';
import { telemetryFromEnv } from '../telemetry/env.js';

export class UsageError extends Error {}

/** The options of the durable commands and of those that bind agents live in the command table. */
export { BINDING_OPTIONS, STORE_OPTIONS } from './spec.js';

/** `access: 'read'`: the command only reads the store (runs, show), which then needs no write access. */
export async function openCliStore(
  values: { store?: string | undefined; sync?: string | undefined; 'store-retry'?: string | undefined },
  io: CliIo,
  access: 'read' | 'write' = 'write',
  waitUnreachable: boolean | 'blip' = false,
  listen?: 'work' | 'commits',
): Promise<RunStore> {
  const sync = values.sync;
  if (sync !== undefined && sync !== 'full' && sync !== 'normal') throw new UsageError(`--sync expects full or normal, got \`${sync}\``);
  const retryMs = storeRetryMs(values, io);
  return openWhenReachable(() => openStore(values.store, { cwd: io.cwd, env: io.env, access, ...(sync ? { sync } : {}), ...(listen ? { listen } : {}) }), io, waitUnreachable, retryMs ?? DEFAULT_OPEN_WAIT_MS, retryMs);
}

/** How long a long-lived command waits for a store it cannot open or that is locked, unless told (--store-retry). */
const DEFAULT_OPEN_WAIT_MS = 300_000;

/**
 * `--store-retry SECONDS`, else `BATON_STORE_RETRY`: how long store failures are retried (the engine's
 * `storeRetryMs`, and the wait for a store as a command starts); undefined when neither is given (the
 * defaults: 5 minutes for a running worker, START_BLIP_MS for a start). 0 gives up at the first failure.
 */
export function storeRetryMs(values: { 'store-retry'?: string | undefined }, io: CliIo): number | undefined {
  const flag = values['store-retry'];
  const env = io.env['BATON_STORE_RETRY'];
  const raw = flag ?? (env === '' ? undefined : env);
  if (raw === undefined) return undefined;
  const seconds = /^\s*\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isFinite(seconds) || seconds > 7 * 24 * 3600) throw new UsageError(`${flag !== undefined ? '--store-retry' : 'BATON_STORE_RETRY'} expects a number of seconds (0 to 604800), got \`${raw}\``);
  return Math.round(seconds * 1000);
}

/** How long a command rides out a database it cannot reach as it starts (a restart, a cut): then exit 2. */
export const START_BLIP_MS = 30_000;
/**
 * The same for a connection refused: nothing listens there, which a restart gives for a moment and a
 * mistyped port for ever, so it is waited for only briefly.
 */
export const START_REFUSED_MS = 5_000;

/**
 * A store locked by another process when a command starts (SQLite's write lock held for longer
 * than its busy timeout) is waited for, retried with backoff for up to 5 minutes and said in one
 * line; so is an unreachable one for a long-lived worker (`true`: a database restart, a network cut),
 * as a running worker waits. A command that runs a run or decides (`'blip'`: run, resume, rerun;
 * approve, deny, respond, cancel) rides out a connection that fails as a restart or a cut would
 * (reset, timed out, the server starting or shutting down) for START_BLIP_MS, and one refused for
 * START_REFUSED_MS, saying so at once. A store
 * that waiting cannot cure (an unknown host, no such database, a refused password) is said at once
 * (exit 2), and so is any unreachable store to a command that only looks (runs, show...: a mistyped
 * address answers at once).
 */
export async function openWhenReachable(open: () => Promise<RunStore>, io: CliIo, waitUnreachable: boolean | 'blip', forMs = DEFAULT_OPEN_WAIT_MS, blipCapMs?: number): Promise<RunStore> {
  const start = performance.now();
  let said = false;
  let lastLocked = false;
  for (let n = 1; ; n++) {
    try {
      const store = await open();
      // as a cut mid-run is: one line when it starts, one when it ends. Not for a lock: the store opens
      // before a write can land, and a lock ends only at a write (the running worker says that)
      if (said && !lastLocked) io.stderr(`store available again after ${((performance.now() - start) / 1000).toFixed(1)} s\n`);
      return store;
    } catch (e) {
      const waited = performance.now() - start;
      const locked = e instanceof BatonError && e.code === 'store-locked';
      lastLocked = locked;
      const blip = e instanceof BatonError && e.code === 'store-unreachable' && waitUnreachable === 'blip' ? Math.min(blipMs(e), blipCapMs ?? Infinity) : 0;
      const unreachable = e instanceof BatonError && e.code === 'store-unreachable' && !incurable(e, waitUnreachable === true) && (waitUnreachable === true || waited < blip);
      if (!(locked || unreachable) || waited >= forMs) {
        // after the `retrying` line, the last failure says that this is the end of the wait (a worker's said only the cause, 5 minutes later)
        if (said && e instanceof BatonError && (locked || e.code === 'store-unreachable')) throw new BatonError(e.code, `gave up after ${Math.round(waited / 1000)} s of retrying: ${e.message}`, { cause: e });
        throw e;
      }
      if (!said) io.stderr(`store unavailable, retrying${blip > 0 && !locked ? ` for up to ${blip / 1000} s` : ''}: ${safeText((e as Error).message, 300)}\n`);
      said = true;
      await new Promise((r) => setTimeout(r, Math.min(5000, 100 * 2 ** Math.min(6, n - 1))));
    }
  }
}

/** Connection failures that a database restart or a network cut gives, which waiting may cure. */
const TRANSIENT = new Set(['ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN', '57P01', '57P02', '57P03']);

/**
 * Failures no wait cures, said at once even by a worker or a server (which wait out anything else for
 * minutes): a database that does not exist, a refused password or role, a host name that does not
 * resolve. A worker given a mistyped database used to wait 5 minutes behind one `retrying` line.
 */
const INCURABLE = new Set(['3D000', '28P01', '28000', 'ENOTFOUND']);

function causeCode(e: BatonError): string {
  const cause = e.cause as { code?: unknown } | undefined;
  return typeof cause?.code === 'string' ? cause.code : '';
}

/**
 * `longLived` (a worker, a server): a host name that does not resolve yet is waited for, as a refused
 * connection is: a database container started beside the worker gets its name in the network's DNS only
 * once it is up (compose, Kubernetes); to a command it is a mistyped address, said at once.
 */
function incurable(e: BatonError, longLived: boolean): boolean {
  const code = causeCode(e);
  return INCURABLE.has(code) && !(longLived && code === 'ENOTFOUND');
}

/** How long a start-up failure is worth waiting out: 0 for one that waiting cannot cure. */
function blipMs(e: BatonError): number {
  const cause = e.cause as { code?: unknown; message?: unknown } | undefined;
  const code = causeCode(e);
  if (code === 'ECONNREFUSED') return START_REFUSED_MS;
  if (TRANSIENT.has(code) || code.startsWith('08')) return START_BLIP_MS;
  return code === '' && /Connection terminated|connection timeout|timeout expired/i.test(typeof cause?.message === 'string' ? cause.message : e.message) ? START_BLIP_MS : 0;
}

export interface BindingFlags {
  agents?: string | undefined;
  'agent-command'?: string[] | undefined;
  'agent-serve'?: string[] | undefined;
  'stub-agents'?: boolean | undefined;
}

/** The agent bindings named by flags, and the record of them kept with a run. */
export async function bindFromFlags(flags: BindingFlags, io: CliIo, cwd: string, defaultModule?: string, model?: WorkflowModel): Promise<{ agents: Record<string, AgentBinding>; record: JsonObject }> {
  const agents: Record<string, AgentBinding> = {};
  const record: JsonObject = {};
  const modulePath = flags.agents ?? defaultModule;
  if (modulePath !== undefined) {
    const abs = resolve(io.cwd, modulePath);
    Object.assign(agents, await loadAgentsModule(abs, io.cwd));
    record['module'] = abs;
  }
  const commands: JsonObject[] = [];
  const bound = new Map<string, string>();
  for (const [flag, mode] of [['agent-command', 'once'], ['agent-serve', 'serve']] as const) {
    for (const spec of flags[flag] ?? []) {
      const eq = spec.indexOf('=');
      if (eq <= 0 || eq === spec.length - 1) throw new UsageError(`--${flag} expects AGENT=COMMAND, e.g. --${flag} 'researcher=python3 research.py', got \`${spec}\``);
      const id = spec.slice(0, eq);
      const command = spec.slice(eq + 1);
      const unknown = model ? unknownBinding(flag, id, model) : undefined;
      if (unknown) throw new UsageError(unknown);
      // a second binding of one agent would silently replace the first: say which two
      const before = bound.get(id);
      if (before !== undefined) throw new UsageError(`agent \`${id}\` is bound twice: ${before} and --${flag} ${spec}; keep one`);
      bound.set(id, `--${flag} ${spec}`);
      agents[id] = subprocessAgent({ command, mode, agentId: id, cwd });
      commands.push({ id, command, mode, cwd });
    }
  }
  if (commands.length > 0) record['commands'] = commands;
  if (flags['stub-agents']) record['stubs'] = true;
  return { agents, record };
}

/**
 * Re-makes the bindings a run recorded (its agents module, its subprocess commands). What cannot be
 * re-made is named; the caller adds what the flags bind on top.
 */
export async function bindFromRecord(record: RunRecord, io: CliIo): Promise<Record<string, AgentBinding>> {
  const out: Record<string, AgentBinding> = {};
  const b = record.bindings;
  if (typeof b['module'] === 'string') {
    try {
      Object.assign(out, await loadAgentsModule(b['module'], io.cwd));
    } catch (e) {
      throw new UsageError(`run ${record.runId} was started with --agents ${b['module']}, which cannot be loaded now (${(e as Error).message}); pass --agents MODULE`);
    }
  }
  if (Array.isArray(b['commands'])) {
    for (const c of b['commands']) {
      if (!isPlainObject(c) || typeof c['id'] !== 'string' || typeof c['command'] !== 'string') continue;
      out[c['id']] = subprocessAgent({ command: c['command'], mode: c['mode'] === 'serve' ? 'serve' : 'once', agentId: c['id'], ...(typeof c['cwd'] === 'string' ? { cwd: c['cwd'] } : {}) });
    }
  }
  return out;
}

/**
 * The clock of the commands that run work (run, resume, rerun, worker): the system clock, shifted by
 * `BATON_CLOCK_OFFSET_MS` when it is set. A testing aid only (docs/durability.md): the chaos test gives
 * one worker a clock seconds ahead of the others'. Read here and nowhere else.
 */
export function cliClock(io: CliIo): Clock {
  const raw = io.env['BATON_CLOCK_OFFSET_MS'];
  if (raw === undefined || raw === '') return systemClock;
  const offset = Number(raw);
  if (!Number.isSafeInteger(offset)) throw new UsageError(`BATON_CLOCK_OFFSET_MS expects an integer number of milliseconds, got \`${raw}\``);
  return offset === 0 ? systemClock : offsetClock(systemClock, offset);
}

/** One line when the store starts failing, one when it answers again (the worker retries meanwhile). */
export function storeTroubleLine(io: CliIo): (t: StoreTrouble) => void {
  return (t) => io.stderr(t.state === 'down' ? `store unavailable, retrying: ${safeText(t.message, 300)}\n` : `store available again after ${(t.downMs / 1000).toFixed(1)} s\n`);
}

/** An engine over `store` whose runs bind the given agents, then each run's recorded bindings under them. */
export function cliEngine(store: RunStore, io: CliIo, agents: Record<string, AgentBinding>, extra: Partial<EngineOptions> = {}): Engine {
  return createEngine({
    store,
    agents,
    clock: cliClock(io),
    bindRun: async (record) => {
      const recorded = await bindFromRecord(record, io);
      // flags win over the record
      return { ...recorded, ...agents };
    },
    onStoreTrouble: storeTroubleLine(io),
    ...extra,
  });
}

/**
 * Traces when the `OTEL_*` variables configure them (docs/telemetry.md), else undefined with nothing
 * of OpenTelemetry loaded. The engine flushes it when it closes. The `console` exporter prints on
 * stderr: stdout is the command's own (`--json` results, `worker --json` lines).
 */
export async function cliTelemetry(io: CliIo): Promise<{ telemetry?: Telemetry }> {
  const t = await telemetryFromEnv(io.env, async () => {
    const otel = await import('../telemetry/otel.js');
    return { otelTelemetryFromEnv: (env) => otel.otelTelemetryFromEnv(env, { consoleWrite: (text) => io.stderr(text) }) };
  });
  return t ? { telemetry: t } : {};
}

/** Names the agents of a stored run that nothing binds (the run cannot continue here). */
export async function missingAgents(engine: Engine, runId: string): Promise<string | undefined> {
  const record = await engine.store.run(runId);
  if (!record) return undefined;
  const { model, handlers } = await engine.bind(record);
  const unbound = unboundAgents(model, handlers);
  if (unbound.size === 0) return undefined;
  return `run ${runId} needs agent${unbound.size === 1 ? '' : 's'} ${[...unbound].map(([a, ps]) => `\`${a}\` (${ps.join(', ')})`).join(', ')}, which nothing binds here: pass --agents MODULE, --agent-command ID=CMD or --stub-agents`;
}

/** Who decides a gate: `--as`, else BATON_USER, else the login name (USER, LOGNAME, else the account of this process: `uid N` when it has no name). */
export function actor(as: string | undefined, io: CliIo): string {
  // an explicit but empty --as is a mistake, not a request to be recorded as the login user
  if (as !== undefined && as.trim() === '') throw new UsageError('--as needs a name (who decides), got an empty one');
  const named = as ?? io.env['BATON_USER'] ?? io.env['USER'] ?? io.env['LOGNAME'];
  if (named !== undefined && named.trim() !== '') return named;
  try {
    const u = userInfo();
    if (u.username) return u.username;
    return `uid ${u.uid}`;
  } catch {
    // no passwd entry for this uid (a container): still someone, by number
    return typeof process.getuid === 'function' ? `uid ${process.getuid()}` : 'an unnamed user';
  }
}

/** Faults a user can cause (unknown run, locked store, unreachable database, ...) → a message and exit 2. */
export function exitFor(e: unknown, cmd: string, io: CliIo, usage?: string): number {
  if (e instanceof UsageError || e instanceof AgentsModuleError) {
    printFailure(io, cmd, e instanceof UsageError ? 'usage' : 'agents-module', e.message);
    if (usage && e instanceof UsageError) io.stderr(usage);
    return 2;
  }
  if (e instanceof BatonError) {
    printFailure(io, cmd, e.code, e.message);
    return e.code === 'gate-refused' ? 1 : 2;
  }
  throw e;
}

/** The `--store` flag to repeat in printed commands (nothing for the default store). */
export function storeFlag(values: { store?: string | undefined }): string {
  return values.store !== undefined ? ` --store ${shellQuote(values.store)}` : '';
}

/** The `--as` a printed approve or deny of a gate with approvers needs: its one approver's name, or a placeholder for one of several. */
export function asFlag(approvers: readonly string[]): string {
  if (approvers.length === 0) return '';
  return ` --as ${approvers.length === 1 ? shellQuote(approvers[0]!) : 'NAME'}`;
}

export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:@%+=-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
