/**
 * The span model of docs/telemetry.md on OpenTelemetry: committed events in, spans out. Loaded only
 * when telemetry is configured (env.ts imports otel.ts, which imports this).
 *
 * Runs and attempts are emitted when they end, with ids derived from the run (engine/telemetry.ts)
 * set through the provider's IdGenerator (PresetIds): `startSpan` is synchronous, so the ids set just
 * before it are the ones it takes. Model and tool calls are ordinary live spans, children of their
 * attempt's derived span context.
 *
 * What this process has not seen is not invented: an attempt's span starts at its claim as this
 * process saw it (else at its task's start), and the rejections buffered for a run span are those
 * committed here. Buffers are bounded: a run or attempt that never ends here is dropped, oldest first.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Attributes, type Link, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';
import type { IdGenerator } from '@opentelemetry/sdk-trace-base';
import { randomBytes } from 'node:crypto';
import { BoundedMap } from '../core/lru.js';
import { OUTPUT_REJECTED_KIND, type RunEvent } from '../engine/events.js';
import { parseItemKey, taskIdFor, type RunState } from '../engine/state.js';
import {
  attemptSpanIdOf,
  formatTraceparent,
  parseTraceparent,
  runParentOf,
  runSpanIdOf,
  traceIdOf,
  type AttemptRef,
  type AttemptTrace,
  type RunInfo,
  type SpanAttributes,
  type SpanContextIds,
  type SpanHandle,
} from '../engine/telemetry.js';

/** Attempts and runs whose end this process waits for, at most. */
const MAX_PENDING = 50_000;

/** An IdGenerator that hands out the ids set for the next span, else random ones. */
export class PresetIds implements IdGenerator {
  private traceId: string | undefined;
  private spanId: string | undefined;
  preset(traceId: string | undefined, spanId: string): void {
    this.traceId = traceId;
    this.spanId = spanId;
  }
  generateTraceId(): string {
    const t = this.traceId ?? randomBytes(16).toString('hex');
    this.traceId = undefined;
    return t;
  }
  generateSpanId(): string {
    const s = this.spanId ?? randomBytes(8).toString('hex');
    this.spanId = undefined;
    return s;
  }
}

interface PendingAttempt {
  start: number | undefined;
  name: string | undefined;
  attrs: SpanAttributes;
  events: PendingEvent[];
  links: string[];
}

interface PendingRun {
  events: PendingEvent[];
}

export interface SpanModelOptions {
  tracer: Tracer;
  ids: PresetIds;
  captureContent: boolean;
}

interface RunIds {
  parent: SpanContextIds | undefined;
  traceId: string;
  runSpanId: string;
  sampled: boolean;
}

export class SpanModel {
  private readonly attempts = new BoundedMap<string, PendingAttempt>(MAX_PENDING);
  private readonly runs = new BoundedMap<string, PendingRun>(MAX_PENDING);
  /** The derived ids of recent runs (hashing them again for every span costs more than the span). */
  private readonly ids = new BoundedMap<string, RunIds>(10_000);

  constructor(private readonly o: SpanModelOptions) {}

  event(e: RunEvent, state: RunState, run: RunInfo): void {
    const runId = run.runId;
    switch (e.type) {
      case 'task.claimed': {
        const p = this.pending(runId, e.phase, e.attempt);
        p.start = e.at;
        p.attrs['baton.agent'] = e.agent;
        return;
      }
      case 'task.completed':
        // a rerun's reused output ran nowhere now; a fan-out phase completes when its items have (their attempts are the spans)
        if (e.reused_from !== undefined || state.phases.get(e.phase)?.fan !== undefined) return;
        this.endAttempt(run, state, e.phase, e.attempt, e.at, undefined, { 'baton.outcome': e.partial ? 'partial' : 'completed', 'baton.cost_usd': e.cost_usd });
        return;
      case 'task.attempt_failed':
        this.endAttempt(run, state, e.phase, e.attempt, e.at, { type: e.failure.code, message: e.failure.message }, { 'baton.outcome': 'failed', 'baton.retryable': e.failure.retryable });
        return;
      case 'task.rejected': {
        const name = rejectionName(e.error);
        this.pending(runId, e.phase, e.attempt).events.push(rejectionEvent(e.error, e.at));
        this.endAttempt(run, state, e.phase, e.attempt, e.at, { type: name, message: typeof e.error['message'] === 'string' ? e.error['message'] : name }, { 'baton.outcome': 'rejected' });
        return;
      }
      case 'task.lease_expired':
        this.endAttempt(run, state, e.phase, e.attempt, e.at, { type: 'LeaseExpired', message: e.handed_back ? `${e.owner} handed the attempt back` : `the lease of ${e.owner} expired` }, { 'baton.outcome': 'lease_expired' });
        return;
      case 'task.cancelled': {
        const attempt = state.phases.get(e.phase)?.attempts ?? 0;
        if (this.attempts.has(keyOf(runId, e.phase, attempt))) this.endAttempt(run, state, e.phase, attempt, e.at, { type: 'Cancelled', message: e.reason }, { 'baton.outcome': 'cancelled' });
        return;
      }
      case 'task.agent_event':
        // a remote agent's completion refused with 422 (server/agents.ts): the same event as an in-process
        // rejection, but the attempt goes on (the task stays claimed), so it waits for the attempt's end
        if (e.kind === OUTPUT_REJECTED_KIND) this.pending(runId, e.phase, e.attempt).events.push(rejectionEvent(e.data, e.at));
        return;
      case 'task.claim_rejected': {
        const ev = rejectionEvent(e.error, e.at);
        this.runPending(runId).events.push({ ...ev, attrs: { ...ev.attrs, 'baton.phase': e.phase } });
        return;
      }
      case 'run.completed':
        this.endRun(run, state, e.at, undefined);
        return;
      case 'run.failed':
        this.endRun(run, state, e.at, { type: e.failure.code, message: e.failure.message });
        return;
      case 'run.cancelled':
        this.endRun(run, state, e.at, { type: 'Cancelled', message: e.reason });
        return;
      default:
        return;
    }
  }

  attempt(run: RunInfo, a: AttemptRef): AttemptTrace {
    const r = this.runIds(run);
    const ids: SpanContextIds = { traceId: r.traceId, spanId: attemptSpanIdOf(a.runId, a.key, a.attempt), sampled: r.sampled };
    const traceparent = formatTraceparent(ids);
    const p = this.pending(a.runId, a.key, a.attempt);
    return {
      traceparent,
      captureContent: this.o.captureContent,
      span: (name, attrs) => this.child(traceparent, name, attrs),
      describe: (name, attrs) => {
        if (name !== undefined) p.name = name;
        Object.assign(p.attrs, attrs);
      },
      link: (tp) => {
        if (parseTraceparent(tp) && p.links.length < 16) p.links.push(tp);
      },
    };
  }

  child(traceparent: string | undefined, name: string, attrs: SpanAttributes = {}): SpanHandle {
    const parent = parseTraceparent(traceparent);
    const ctx = parent ? trace.setSpanContext(ROOT_CONTEXT, spanContext(parent)) : ROOT_CONTEXT;
    const span = this.o.tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes: attrs as Attributes }, ctx);
    return handle(span);
  }

  private runIds(run: RunInfo): RunIds {
    const k = runIdsKey(run);
    let r = this.ids.get(k);
    if (!r) {
      const parent = runParentOf(run);
      r = { parent, traceId: traceIdOf(run.runId, parent), runSpanId: runSpanIdOf(run.runId), sampled: parent?.sampled ?? true };
      this.ids.set(k, r);
    }
    return r;
  }

  private pending(runId: string, key: string, attempt: number): PendingAttempt {
    const k = keyOf(runId, key, attempt);
    let p = this.attempts.get(k);
    if (!p) {
      this.attempts.set(k, (p = { start: undefined, name: undefined, attrs: {}, events: [], links: [] }));
    }
    return p;
  }

  private runPending(runId: string): PendingRun {
    let p = this.runs.get(runId);
    if (!p) {
      this.runs.set(runId, (p = { events: [] }));
    }
    return p;
  }

  private endAttempt(run: RunInfo, state: RunState, key: string, attempt: number, at: number, error: { type: string; message: string } | undefined, extra: SpanAttributes): void {
    const k = keyOf(run.runId, key, attempt);
    const p = this.attempts.get(k) ?? { start: undefined, name: undefined, attrs: {}, events: [], links: [] };
    this.attempts.delete(k);
    const ps = state.phases.get(key);
    // an item folded out of a worker's state (it settled) is still named by its key
    const item = ps?.item ?? parseItemKey(key);
    const phase = item?.parent ?? key;
    const { traceId, runSpanId, sampled } = this.runIds(run);
    const attrs: SpanAttributes = {
      'baton.run.id': run.runId,
      'baton.workflow': run.workflowName,
      'baton.phase': phase,
      'baton.task.id': ps?.taskId ?? taskIdFor(run.runId, key),
      'baton.attempt': attempt,
      ...(item ? { 'baton.item': item.index } : {}),
      ...(ps?.agent !== undefined ? { 'baton.agent': ps.agent } : {}),
      ...p.attrs,
      ...extra,
      ...(error ? { 'error.type': error.type } : {}),
    };
    const links: Link[] = p.links.map((tp) => ({ context: spanContext(parseTraceparent(tp)!) }));
    this.o.ids.preset(undefined, attemptSpanIdOf(run.runId, key, attempt));
    const span = this.o.tracer.startSpan(
      p.name ?? `baton.attempt ${phase}`,
      { kind: SpanKind.INTERNAL, startTime: Math.min(p.start ?? ps?.startedAt ?? at, at), attributes: attrs as Attributes, links },
      trace.setSpanContext(ROOT_CONTEXT, spanContext({ traceId, spanId: runSpanId, sampled })),
    );
    for (const ev of p.events) span.addEvent(ev.name, ev.attrs as Attributes, ev.at);
    if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    span.end(at);
  }

  private endRun(run: RunInfo, state: RunState, at: number, error: { type: string; message: string } | undefined): void {
    const pr = this.runs.get(run.runId);
    this.runs.delete(run.runId);
    // attempts of the run still waiting here never end (the run ended under them without an outcome)
    const prefix = `${run.runId}\u0000`;
    for (const k of [...this.attempts.keys()]) if (k.startsWith(prefix)) this.attempts.delete(k);
    const { parent, traceId, runSpanId } = this.runIds(run);
    this.ids.delete(runIdsKey(run));
    const attrs: SpanAttributes = {
      'gen_ai.operation.name': 'invoke_workflow',
      'baton.run.id': run.runId,
      'baton.workflow': run.workflowName,
      'baton.run.status': state.status,
      'baton.cost_usd': state.costUsd,
      ...(state.rerunOf ? { 'baton.rerun_of': state.rerunOf.run_id } : {}),
      ...(error ? { 'error.type': error.type } : {}),
    };
    this.o.ids.preset(parent ? undefined : traceId, runSpanId);
    const span = this.o.tracer.startSpan(
      `invoke_workflow ${run.workflowName}`,
      { kind: SpanKind.INTERNAL, startTime: Math.min(state.startedAt || at, at), attributes: attrs as Attributes },
      parent ? trace.setSpanContext(ROOT_CONTEXT, spanContext(parent, true)) : ROOT_CONTEXT,
    );
    for (const ev of pr?.events ?? []) span.addEvent(ev.name, ev.attrs as Attributes, ev.at);
    if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    span.end(at);
  }
}

function runIdsKey(run: RunInfo): string {
  const tp = run.options['traceparent'];
  return typeof tp === 'string' ? `${run.runId}\u0000${tp}` : run.runId;
}

function keyOf(runId: string, key: string, attempt: number): string {
  return `${runId}\u0000${key}\u0000${attempt}`;
}

function spanContext(ids: SpanContextIds, isRemote = false): SpanContext {
  return { traceId: ids.traceId, spanId: ids.spanId, traceFlags: ids.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE, isRemote };
}

interface PendingEvent {
  name: string;
  attrs: SpanAttributes;
  at: number;
}

/** The RFC-0024 error's name (MissingOutputError, ...). */
function rejectionName(payload: Record<string, unknown>): string {
  return typeof payload['error'] === 'string' ? payload['error'] : 'ContractRejection';
}

/** `baton.contract.rejected`: the payload's name as `error.type`, its scalar fields as `baton.error.*`. */
function rejectionEvent(payload: Record<string, unknown>, at: number): PendingEvent {
  return { name: 'baton.contract.rejected', attrs: rejectionAttrs(rejectionName(payload), payload), at };
}

/** The RFC-0024 payload's scalar fields as event attributes (`baton.error.*`), and its name. */
function rejectionAttrs(name: string, payload: Record<string, unknown>): SpanAttributes {
  const a: SpanAttributes = { 'error.type': name };
  for (const [k, v] of Object.entries(payload)) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') a[`baton.error.${k}`] = v;
    else if (Array.isArray(v) && v.every((x) => typeof x === 'string')) a[`baton.error.${k}`] = v;
    else if (v !== undefined && v !== null) a[`baton.error.${k}`] = JSON.stringify(v).slice(0, 4096);
  }
  return a;
}

function handle(span: Span): SpanHandle {
  const c = span.spanContext();
  let ended = false;
  return {
    traceparent: formatTraceparent({ traceId: c.traceId, spanId: c.spanId, sampled: (c.traceFlags & 1) === 1 }),
    setAttributes: (a) => span.setAttributes(a as Attributes),
    addEvent: (name, a) => span.addEvent(name, a as Attributes | undefined),
    fail: (type, message) => {
      span.setAttribute('error.type', type);
      span.setStatus({ code: SpanStatusCode.ERROR, message });
    },
    end: () => {
      if (ended) return;
      ended = true;
      span.end();
    },
  };
}
