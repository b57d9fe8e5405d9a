/**
 * W3C trace context across the remote-agent protocol (docs/telemetry.md): the claim answers the
 * attempt span's `traceparent`; the remote agent's own span is a child of it, and the completion
 * (or failure) sends that span's traceparent back, which the attempt's span links to.
 */
import type { AgentContext } from '../engine/agent.js';
import { parseTraceparent, type SpanHandle, type Telemetry, type AttemptTrace } from '../engine/telemetry.js';

/** The server side: a completion's traceparent becomes a link of the attempt's span (a malformed one is ignored). */
export function linkRemoteSpan(ctx: AgentContext, traceparent: unknown): void {
  if (typeof traceparent === 'string' && parseTraceparent(traceparent)) ctx.trace?.link(traceparent);
}

/** The client side: the remote handler's span, a child of the attempt's span, and the ctx.trace it gets. */
export function remoteSpan(telemetry: Telemetry | undefined, traceparent: string | undefined, t: { agent: string; phase: string; run_id: string; task_id: string; attempt: number }): { span: SpanHandle; trace: AttemptTrace } | undefined {
  if (!telemetry) return undefined;
  const span = telemetry.child(traceparent, `baton.remote ${t.agent}`, { 'baton.run.id': t.run_id, 'baton.phase': t.phase, 'baton.task.id': t.task_id, 'baton.attempt': t.attempt, 'baton.agent': t.agent });
  const trace: AttemptTrace = {
    traceparent: span.traceparent,
    captureContent: false,
    span: (name, attrs) => telemetry.child(span.traceparent, name, attrs),
    describe: (_name, attrs) => span.setAttributes(attrs),
    link: () => undefined,
  };
  return { span, trace };
}
