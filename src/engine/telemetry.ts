/**
 * The telemetry port: traces of runs and attempts, with no dependency. The engine and the agents
 * speak only to these interfaces; an adapter (src/telemetry/otel.ts, OpenTelemetry) implements them,
 * and without one nothing is traced and nothing is loaded.
 *
 * Span model (docs/telemetry.md). A run may last days and move between processes, so no span stays
 * open for a run: every id is derived from the run's id, and spans are emitted when what they
 * describe has ended, from the committed events and their times:
 * - the trace id is the incoming W3C `traceparent`'s (recorded with the run when it started), else
 *   derived from the run id; any process computes the same one;
 * - the run span (`invoke_workflow {name}`) has an id derived from the run id, and is emitted when
 *   the run ends, with the run's start and end times;
 * - an attempt span has an id derived from (run, task, attempt number), so the agent's own spans
 *   (model calls, tool calls, a remote agent's) can be its children while it runs; it is emitted
 *   when the attempt's outcome is committed, from its claim to that commit.
 */
import { createHash } from 'node:crypto';
import type { RunEvent } from './events.js';
import type { RunRecord } from './ports.js';
import type { RunState } from './state.js';
import type { AttemptTrace, SpanAttributes, SpanHandle } from './agent.js';

export type { AttemptTrace, SpanAttributes, SpanHandle } from './agent.js';

/** What the spans need of a run's record: its id, its workflow's name, the traceparent it recorded. */
export type RunInfo = Pick<RunRecord, 'runId' | 'workflowName' | 'options'>;

/** The attempt an AttemptTrace is for. */
export interface AttemptRef {
  runId: string;
  /** The task's key: the phase, or `phase[index]` for a fan-out item. */
  key: string;
  phase: string;
  taskId: string;
  attempt: number;
  agent: string;
  item?: { index: number } | undefined;
}

export interface Telemetry {
  /** Every committed event of the runs this process works on, with the run's state after it and its record. */
  event(e: RunEvent, state: RunState, run: RunInfo): void;
  /** The trace of an attempt about to run here. */
  attempt(run: RunInfo, a: AttemptRef): AttemptTrace;
  /** A span in this process under a span elsewhere (a remote agent's handler under its attempt). */
  child(traceparent: string | undefined, name: string, attrs?: SpanAttributes): SpanHandle;
  /** Exports what is buffered. */
  flush(): Promise<void>;
  /** Flushes and stops the exporters. */
  shutdown(): Promise<void>;
}

export interface SpanContextIds {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** A W3C traceparent's ids, or undefined when it is malformed (all-zero ids, version ff). */
export function parseTraceparent(s: unknown): SpanContextIds | undefined {
  if (typeof s !== 'string' || s.length > 512) return undefined;
  const m = TRACEPARENT.exec(s.trim().toLowerCase());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

export function formatTraceparent(ids: SpanContextIds): string {
  return `00-${ids.traceId}-${ids.spanId}-${ids.sampled ? '01' : '00'}`;
}

function hex(text: string, chars: number): string {
  const h = createHash('sha256').update(text).digest('hex').slice(0, chars);
  // an all-zero id is invalid in W3C trace context (never seen in practice, but cheap to exclude)
  return /^0+$/.test(h) ? '1'.padStart(chars, '0') : h;
}

/** The incoming traceparent a run recorded when it started (`baton run` under `TRACEPARENT`), if valid. */
export function runParentOf(record: Pick<RunRecord, 'options'>): SpanContextIds | undefined {
  return parseTraceparent(record.options['traceparent']);
}

/** The run's trace id: its parent's, else derived from the run id. */
export function traceIdOf(runId: string, parent: SpanContextIds | undefined): string {
  return parent?.traceId ?? hex(`baton-trace\u0000${runId}`, 32);
}

export function runSpanIdOf(runId: string): string {
  return hex(`baton-run\u0000${runId}`, 16);
}

export function attemptSpanIdOf(runId: string, key: string, attempt: number): string {
  return hex(`baton-attempt\u0000${runId}\u0000${key}\u0000${attempt}`, 16);
}
