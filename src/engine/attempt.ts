/**
 * One attempt of one task in this process: the AgentContext an agent sees, its abort signal, and
 * the conversion of whatever the agent returned into a plain JSON outcome. Hostile values (cycles,
 * deep nesting, throwing getters, Proxies, invalid costs) become named failures here, never crashes.
 */
import { MAX_TIMEOUT_MS } from '../core/clock.js';
import { isPlainObject, type Json, type JsonObject } from '../core/json.js';
import { parseItemKey } from './state.js';
import { AgentError, type AgentContext, type AgentHandler, type InputRequest } from './agent.js';
import type { Outcome } from './decide.js';
import type { FailureRecord } from './events.js';
import type { FileProvenance, HeldFiles } from './files.js';
import type { AttemptTrace } from './telemetry.js';

/** Deepest nesting accepted in an agent's output (objects and arrays), documented in docs/executor.md. */
export const MAX_OUTPUT_DEPTH = 512;
/** Largest cost one report (`reportCost`, `_cost`) may carry. */
export const MAX_COST_USD = 1e9;
/** Longest array accepted in an agent's output (a sparse `length = 1e9` must not hang the worker). */
export const MAX_OUTPUT_ARRAY = 10_000_000;

/** What an attempt needs from the worker that runs it. */
export interface AttemptHost {
  cost(att: Attempt, usd: number): void;
  log(att: Attempt, message: string): void;
  record(att: Attempt, kind: string, data: JsonObject): void;
  sibling(att: Attempt, phase: string): JsonObject | undefined;
  remainingBudget(att: Attempt): number | undefined;
  requestInput(att: Attempt, req: InputRequest): Promise<Json>;
  checkpoint(att: Attempt, value: Json): Promise<void>;
  /** A file the engine staged or synced for the attempt (files.ts): recorded as `task.file`. */
  file(att: Attempt, p: FileProvenance): void;
  /** The attempt's trace, when telemetry is configured (engine/telemetry.ts). */
  trace?(att: Attempt): AttemptTrace | undefined;
}

/** Why an attempt was stopped from outside; such an attempt reports no outcome (its task moved on). */
export class StopSignal extends Error {
  override readonly name = 'StopSignal';
  /**
   * @param handOver true when the task is not over, only this process's attempt of it (the worker
   * stops or crashed, the lease was lost, another attempt took over): an agent with remote state (an
   * A2A task) keeps it for the next attempt instead of cancelling it.
   */
  constructor(
    message: string,
    readonly handOver = false,
  ) {
    super(message);
  }
}

export class TimeoutError extends AgentError {
  constructor(ms: number) {
    super('Timeout', `the attempt timed out after ${ms} ms`, { timeout_ms: ms });
  }
}

export class Attempt implements AgentContext {
  settled = false;
  /** Next `requestInput` index of this attempt. */
  inputIndex = 0;
  /** A `requestInput` of this attempt is not settled yet: a second one is refused (one question at a time). */
  asking = false;
  /** Set while the attempt waits for an answer (it then holds no slot and no lease). */
  suspendedOn: string | undefined;
  abortReason: unknown;
  /** Resolves a suspended `requestInput` with the answer. */
  answer: ((v: Json) => void) | undefined;
  /** A resume of this suspended attempt is being committed. */
  resuming = false;
  /** The phase timeout (x-timeout_ms), what is left of it, its running timer and when that was armed (worker.ts). */
  timeoutMs: number | undefined;
  timeoutLeft: number | undefined;
  timeoutCtl: AbortController | undefined;
  timeoutArmedAt: number | undefined;
  private ctl: AbortController | undefined;
  private rejectFn: ((e: unknown) => void) | undefined;
  /** Whether the agent's own code has settled (an aborted attempt settles early; the code may run on). */
  handlerDone = false;
  private doneFn: (() => void) | undefined;
  private finishedP: Promise<void> | undefined;

  /** Resolves when the agent's own code settles, whatever `invoke` answered first (made when asked for: most attempts never are). */
  get finished(): Promise<void> {
    this.finishedP ??= this.handlerDone ? Promise.resolve() : new Promise<void>((r) => (this.doneFn = r));
    return this.finishedP;
  }

  constructor(
    private readonly host: AttemptHost,
    readonly runId: string,
    /** The task's key in the run state: the phase, or `phase[index]` for a fan-out item. */
    readonly key: string,
    readonly taskId: string,
    readonly attempt: number,
    readonly agent: string,
    readonly input: JsonObject,
    readonly initialState: JsonObject,
    readonly inputResponse: Json | undefined,
    readonly lastCheckpoint: Json | undefined = undefined,
    readonly item: { index: number; value: Json } | undefined = undefined,
  ) {
    this.phase = parseItemKey(key)?.parent ?? key;
  }

  /** The phase name the agent sees (an item's phase, not its task key). */
  readonly phase: string;

  private traced: { t: AttemptTrace | undefined } | undefined;

  get trace(): AttemptTrace | undefined {
    this.traced ??= { t: this.host.trace?.(this) };
    return this.traced.t;
  }

  get idempotencyKey(): string {
    return this.taskId;
  }

  get signal(): AbortSignal {
    this.ctl ??= new AbortController();
    if (this.abortReason !== undefined && !this.ctl.signal.aborted) this.ctl.abort(this.abortReason);
    return this.ctl.signal;
  }

  /** Runs the handler; settles early when the attempt is aborted (timeout, stop), even if the agent never returns. */
  invoke(handler: AgentHandler): Promise<unknown> {
    const started = performance.now();
    // An abort while the handler runs (an invalid reportCost) settles the attempt with its reason, as it
    // would have rejected a promise made before the call; one from before the call does not.
    const abortedBefore = this.abortReason !== undefined;
    let r: unknown;
    try {
      r = handler(this);
    } catch (e) {
      return this.settleNow(false, e, started, handler, abortedBefore);
    }
    // the returned value is untrusted: reading its `then` may throw (a getter, a Proxy, a revoked Proxy)
    let then: unknown;
    try {
      then = r !== null && (typeof r === 'object' || typeof r === 'function') ? (r as { then?: unknown }).then : undefined;
    } catch (e) {
      return this.settleNow(false, new AgentError('InvalidOutput', `the agent's output could not be read (${describe(e)})`, {}, true), started, handler, abortedBefore);
    }
    if (typeof then === 'function') return this.awaitHandler(r, then as Thenable, started, handler, abortedBefore);
    return this.settleNow(true, r, started, handler, abortedBefore);
  }

  /**
   * The handler returned or threw at once (the common case, and every benchmark): settled without a
   * promise executor and its closures, unless it held the thread. An agent that held the thread (a
   * synchronous loop, a long parse) kept this process from reading a signal or a timer that came
   * meanwhile: its outcome waits until the event loop has polled once more, so a Ctrl-C or a timeout
   * that came first also lands first (the abort settles the promise before the outcome does). Two turns
   * of setImmediate hold a poll phase between them.
   */
  private settleNow(ok: boolean, v: unknown, started: number, handler: AgentHandler, abortedBefore: boolean): Promise<unknown> {
    this.handlerDone = true;
    this.doneFn?.();
    if (!abortedBefore && this.abortReason !== undefined) return Promise.reject(this.abortReason);
    if (performance.now() - started < HELD_THREAD_MS || NEVER_HOLDS.has(handler)) return ok ? Promise.resolve(v) : Promise.reject(v);
    return new Promise<unknown>((resolve, reject) => {
      this.rejectFn = reject;
      setImmediate(() => setImmediate(() => (ok ? resolve(v) : reject(v))));
    });
  }

  /** The handler returned a promise (or another thenable): the attempt settles when it does, or when it is aborted. */
  private awaitHandler(r: unknown, then: Thenable, started: number, handler: AgentHandler, abortedBefore: boolean): Promise<unknown> {
    return new Promise<unknown>((outerResolve, outerReject) => {
      this.rejectFn = outerReject;
      if (!abortedBefore && this.abortReason !== undefined) outerReject(this.abortReason);
      // the same rule as settleNow's (one closure for both ways: this runs per attempt)
      const settle = (ok: boolean, v: unknown): void => {
        this.handlerDone = true;
        this.doneFn?.();
        if (performance.now() - started < HELD_THREAD_MS || NEVER_HOLDS.has(handler)) {
          if (ok) outerResolve(v);
          else outerReject(v);
        } else setImmediate(() => setImmediate(() => (ok ? outerResolve(v) : outerReject(v))));
      };
      try {
        then.call(
          r,
          (v: unknown) => settle(true, v),
          (e: unknown) => settle(false, e),
        );
      } catch (e) {
        settle(false, e);
      }
    });
  }

  abort(reason: unknown): void {
    if (this.settled || this.abortReason !== undefined) return;
    this.abortReason = reason;
    this.ctl?.abort(reason);
    for (const f of this.abortListeners?.splice(0) ?? []) f(reason);
    this.rejectFn?.(reason);
  }

  private abortListeners: ((reason: unknown) => void)[] | undefined;

  /**
   * Calls `f` once when the attempt is aborted, or false when it already was (then `f` is not called):
   * an agent of the engine's own (the server's remote parking) learns of an abort without making the
   * attempt an AbortController, which most attempts never need.
   */
  onAbort(f: (reason: unknown) => void): boolean {
    if (this.abortReason !== undefined) return false;
    (this.abortListeners ??= []).push(f);
    return true;
  }

  reportCost(usd: number): void {
    if (this.settled) return;
    const bad = invalidCost(usd);
    if (bad !== undefined) {
      // the attempt fails, as an invalid `_cost` does: spend that cannot be counted must not pass silently
      this.abort(new AgentError('InvalidCost', `ctx.reportCost: ${bad}`, {}, false));
      throw new TypeError(`reportCost expects a finite, non-negative number of USD: ${bad}`);
    }
    if (usd > 0) this.host.cost(this, usd);
  }

  getSiblingOutput(phase: string): JsonObject | undefined {
    return this.host.sibling(this, String(phase));
  }

  log(message: string): void {
    if (!this.settled) this.host.log(this, String(message));
  }

  record(kind: string, data: JsonObject): void {
    if (this.settled) return;
    const r = toJson(data);
    this.host.record(this, String(kind), r.ok && isPlainObject(r.value) ? (r.value) : { unserialisable: true });
  }

  /** The host's own input fields (AIP-16's `_workflowFsRoot`): the input is this attempt's copy, never the recorded one. */
  setInputField(key: string, value: Json): void {
    (this.input as Record<string, Json>)[key] = value;
  }

  /** Provenance of a file the engine staged or synced for this attempt (not an agent's own record). */
  recordFile(p: FileProvenance): void {
    if (!this.settled) this.host.file(this, p);
  }

  /** Output files checked after the agent returned, synced only if its outcome is accepted (files.ts, worker-commits.ts). */
  heldFiles: HeldFiles | undefined;

  /** Holds them for the outcome; false when the attempt has ended or was aborted (then nothing is to be synced). */
  holdFiles(h: HeldFiles): boolean {
    if (this.settled || this.abortReason !== undefined) return false;
    this.heldFiles = h;
    return true;
  }

  remainingBudgetUsd(): number | undefined {
    return this.host.remainingBudget(this);
  }

  checkpoint(value: Json): Promise<void> {
    if (this.settled) return Promise.reject(new StopSignal('the attempt has ended'));
    const r = toJson(value);
    if (!r.ok) return Promise.reject(new AgentError('InvalidCheckpoint', `ctx.checkpoint needs a JSON value: it ${r.message}`, {}, false));
    return this.host.checkpoint(this, r.value);
  }

  requestInput(request: InputRequest): Promise<Json> {
    if (this.settled) return Promise.reject(new StopSignal('the attempt has ended'));
    const checked = checkInputRequest(request);
    if (typeof checked === 'string') return Promise.reject(new AgentError('InvalidInputRequest', `ctx.requestInput needs {question: string, choices?: JSON[], schema?: object, timeoutMs?: ms >= 0}: ${checked}`, {}, false));
    return this.host.requestInput(this, checked);
  }
}

/**
 * The request as plain JSON, or what is wrong with it: it is recorded in the log (gate.opened), so
 * it must survive a JSON store exactly (no functions, cycles, NaN or Infinity), and reading it must
 * not throw into the engine.
 */
function checkInputRequest(request: unknown): InputRequest | string {
  try {
    if (!isPlainObject(request)) return 'not an object';
    const { question, choices, schema, timeoutMs } = request;
    if (typeof question !== 'string' || question === '') return 'question must be a non-empty string';
    const out: InputRequest = { question };
    if (choices !== undefined) {
      const c = toJson(choices);
      if (!c.ok || !Array.isArray(c.value)) return `choices must be an array of JSON values${c.ok ? '' : ` (it ${c.message})`}`;
      out.choices = c.value;
    }
    if (schema !== undefined) {
      const c = toJson(schema);
      if (!c.ok || !isPlainObject(c.value)) return `schema must be a JSON Schema object${c.ok ? '' : ` (it ${c.message})`}`;
      out.schema = c.value;
    }
    if (timeoutMs !== undefined) {
      if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0 && timeoutMs <= MAX_TIMEOUT_MS)) return `timeoutMs must be a number of milliseconds >= 0 and at most ${MAX_TIMEOUT_MS}`;
      out.timeoutMs = timeoutMs;
    }
    return out;
  } catch (e) {
    return `it could not be read (${describe(e)})`;
  }
}

/** undefined when `usd` is a valid cost, else what is wrong with it. */
export function invalidCost(usd: unknown): string | undefined {
  if (typeof usd !== 'number') return `got ${typeof usd} ${safeText(usd)}, not a number`;
  if (!Number.isFinite(usd)) return `got ${String(usd)}, not a finite number`;
  if (usd < 0) return `got ${usd}, a negative cost`;
  // sums and rounding of absurd amounts overflow to Infinity, which JSON (and so every store) cannot keep
  if (usd > MAX_COST_USD) return `got ${usd}, more than the largest cost accepted (${MAX_COST_USD} USD)`;
  return undefined;
}

function safeText(v: unknown): string {
  try {
    return JSON.stringify(v)?.slice(0, 40) ?? String(v);
  } catch {
    return '';
  }
}

/** The outcome of an attempt from what its handler returned (or threw). */
export function toOutcome(ok: boolean, value: unknown): Outcome {
  if (!ok) return { ok: false, failure: toFailure(value) };
  // returning nothing is allowed (RFC-0024 §9: "the agent may return any dict (or nothing)"): it goes to
  // completion-time validation as no output, accepted when no required output is declared, else MissingOutputError
  if (value === undefined) return { ok: true, output: null, costUsd: 0 };
  const unreadable = (e: unknown): Outcome => ({ ok: false, failure: { code: 'InvalidOutput', message: `the agent's output could not be read (${describe(e)})`, retryable: true } });
  try {
    // an array goes on to completion-time validation: OutputTypeMismatchError, as for a subprocess (RFC-0024 §3.3)
    // `_cost` is checked before the JSON copy: a non-finite cost (1e400) is an invalid cost, not an invalid output
    if (isPlainObject(value) && Object.prototype.hasOwnProperty.call(value, '_cost')) {
      const bad = invalidCost(value['_cost']);
      if (bad !== undefined) return { ok: false, failure: { code: 'InvalidCost', message: `the output's _cost is invalid: ${bad}`, retryable: false } };
    }
  } catch (e) {
    return unreadable(e);
  }
  const r = toJson(value);
  if (!r.ok) return { ok: false, failure: { code: 'InvalidOutput', message: `the agent's output ${r.message}`, retryable: true, ...(r.pointer !== undefined ? { details: { pointer: r.pointer } } : {}) } };
  let output: Json = r.value;
  let costUsd = 0;
  if (isPlainObject(output) && Object.prototype.hasOwnProperty.call(output, '_cost')) {
    const { _cost, ...rest } = output;
    // read once more from the copy: a getter may answer differently the second time
    const bad = invalidCost(_cost);
    if (bad !== undefined) return { ok: false, failure: { code: 'InvalidCost', message: `the output's _cost is invalid: ${bad}`, retryable: false } };
    costUsd = _cost as number;
    output = rest;
  }
  return { ok: true, output, costUsd };
}

function describe(e: unknown): string {
  try {
    return e instanceof Error ? String(e.message) : 'a getter or proxy threw';
  } catch {
    return 'a getter or proxy threw';
  }
}

export function toFailure(e: unknown): FailureRecord {
  try {
    if (e instanceof AgentError) return { code: e.code, message: e.message, retryable: e.retryable, ...(Object.keys(e.details).length > 0 ? detailsOf(e.details) : {}) };
    if (e instanceof Error) {
      const code = (e as { code?: unknown }).code;
      const retryable = (e as { retryable?: unknown }).retryable;
      return { code: typeof code === 'string' && code !== '' ? code : e.name || 'Error', message: String(e.message), retryable: retryable !== false };
    }
    if (isPlainObject(e) && typeof e['code'] === 'string') return { code: e['code'], message: typeof e['message'] === 'string' ? e['message'] : String(e['code']), retryable: e['retryable'] !== false };
    return { code: 'Error', message: typeof e === 'string' ? e : `the agent threw ${safeText(e) || typeof e}`, retryable: true };
  } catch {
    return { code: 'Error', message: 'the agent threw a value that cannot be read', retryable: true };
  }
}

function detailsOf(d: Record<string, unknown>): { details: Record<string, unknown> } | Record<string, never> {
  const r = toJson(d);
  return r.ok && isPlainObject(r.value) ? { details: r.value } : {};
}

export type JsonConversion = { ok: true; value: Json } | { ok: false; message: string; pointer?: string };

/**
 * Copies a value into plain JSON, iteratively (no recursion: depth cannot overflow the stack),
 * refusing cycles, nesting beyond MAX_OUTPUT_DEPTH, non-JSON values (undefined members of objects
 * are dropped, as JSON.stringify does) and values whose reading throws (getters, Proxies).
 */
export function toJson(value: unknown): JsonConversion {
  try {
    // most outputs are small plain JSON: a recursive copy, bounded in depth, without the bookkeeping;
    // anything else (deep, circular, not JSON) goes to the iterative conversion that says what is wrong
    const fast = copyPlain(value, 0);
    if (fast !== NOT_PLAIN) return { ok: true, value: fast };
    return convert(value);
  } catch (e) {
    return { ok: false, message: `could not be read (${e instanceof Error ? e.message : 'a getter or proxy threw'})` };
  }
}

/** An attempt that settles this long (ms) after it was invoked may have held the thread: its outcome waits one poll. */
const HELD_THREAD_MS = 2;
const NEVER_HOLDS = new WeakSet<AgentHandler>();

/**
 * Marks a handler of the engine's own that never runs an agent's code on this thread (the server's
 * parking of remote attempts): its outcomes settle at once, whatever time the attempt took.
 */
export function neverHoldsThread<H extends AgentHandler>(handler: H): H {
  NEVER_HOLDS.add(handler);
  return handler;
}

type Thenable = (ok: (v: unknown) => void, no: (e: unknown) => void) => void;

const NOT_PLAIN: unique symbol = Symbol('not plain JSON');
/** How deep the fast copy goes before it hands over (a cycle always reaches it). */
const FAST_DEPTH = 32;

/** A JSON copy with the conversion's rules (undefined members dropped, holes null, -0 as 0), or NOT_PLAIN. */
function copyPlain(v: unknown, depth: number): Json | typeof NOT_PLAIN {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? (v === 0 ? 0 : v) : NOT_PLAIN;
  if (typeof v !== 'object' || depth >= FAST_DEPTH) return NOT_PLAIN;
  if (Array.isArray(v)) {
    const n = v.length;
    if (n > MAX_OUTPUT_ARRAY) return NOT_PLAIN;
    const out: Json[] = new Array<Json>(n);
    for (let i = 0; i < n; i++) {
      const x: unknown = v[i];
      const c = x === undefined ? null : copyPlain(x, depth + 1);
      if (c === NOT_PLAIN) return NOT_PLAIN;
      out[i] = c;
    }
    return out;
  }
  if (!isPlainObject(v)) return NOT_PLAIN;
  const out: JsonObject = {};
  // for-in over own keys, in Object.keys' order: no array of keys per object of every output
  for (const k in v) {
    if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
    const x = v[k];
    if (x === undefined) continue;
    const c = copyPlain(x, depth + 1);
    if (c === NOT_PLAIN) return NOT_PLAIN;
    if (k === '__proto__') Object.defineProperty(out, k, { value: c, enumerable: true, writable: true, configurable: true });
    else out[k] = c;
  }
  return out;
}

function convert(root: unknown): JsonConversion {
  const leaf = (v: unknown, pointer: string): { ok: true; value: Json; container: boolean } | { ok: false; message: string; pointer: string } => {
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return { ok: true, value: v, container: false };
    // -0 is recorded as 0, as JSON text (and so every durable store) keeps it
    if (typeof v === 'number') return Number.isFinite(v) ? { ok: true, value: v === 0 ? 0 : v, container: false } : { ok: false, message: `holds ${String(v)} at ${pointer || '/'} (not JSON)`, pointer };
    if (typeof v === 'object') {
      if (Array.isArray(v) || isPlainObject(v)) return { ok: true, value: null, container: true };
      return { ok: false, message: `holds a ${(v).constructor?.name ?? 'non-plain'} object at ${pointer || '/'} (not JSON)`, pointer };
    }
    return { ok: false, message: `holds ${typeof v} at ${pointer || '/'} (not JSON)`, pointer };
  };
  const first = leaf(root, '');
  if (!first.ok) return first;
  if (!first.container) return { ok: true, value: first.value };
  const make = (src: object): Json => (Array.isArray(src) ? [] : {});
  const out = make(root as object);
  const onPath = new Set<object>([root as object]);
  interface Frame {
    src: object;
    dst: Json;
    keys: string[];
    i: number;
    pointer: string;
  }
  const keysOf = (src: object): string[] => {
    if (!Array.isArray(src)) return Object.keys(src);
    // by index, not Object.keys: a hole is null (as JSON.stringify writes it), never a shift of the later items
    if (src.length > MAX_OUTPUT_ARRAY) throw new RangeError(`an array of ${src.length} items is longer than ${MAX_OUTPUT_ARRAY}`);
    return Array.from({ length: src.length }, (_, i) => String(i));
  };
  const stack: Frame[] = [{ src: root as object, dst: out, keys: keysOf(root as object), i: 0, pointer: '' }];
  while (stack.length > 0) {
    const f = stack[stack.length - 1]!;
    if (f.i >= f.keys.length) {
      onPath.delete(f.src);
      stack.pop();
      continue;
    }
    const k = f.keys[f.i++]!;
    const v: unknown = (f.src as Record<string, unknown>)[k];
    const pointer = `${f.pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (v === undefined && !Array.isArray(f.src)) continue;
    const l = leaf(v === undefined ? null : v, pointer);
    if (!l.ok) return l;
    let value = l.value;
    if (l.container) {
      if (onPath.has(v as object)) return { ok: false, message: `is circular at ${pointer}`, pointer };
      if (stack.length >= MAX_OUTPUT_DEPTH) return { ok: false, message: `is nested deeper than ${MAX_OUTPUT_DEPTH} levels at ${pointer.slice(0, 200)}`, pointer: pointer.slice(0, 200) };
      value = make(v as object);
      onPath.add(v as object);
      stack.push({ src: v as object, dst: value, keys: keysOf(v as object), i: 0, pointer });
    }
    if (Array.isArray(f.dst)) f.dst.push(value);
    else if (k === '__proto__') Object.defineProperty(f.dst, k, { value, enumerable: true, writable: true, configurable: true });
    else (f.dst as JsonObject)[k] = value;
  }
  return { ok: true, value: out };
}
