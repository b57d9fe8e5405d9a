/** Telemetry to an in-memory exporter, and reading its spans back as plain records. */
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Telemetry } from '../../src/engine/telemetry.js';
import { captureContentOf } from '../../src/telemetry/otel.js';
// the SDK's side directly (createOtelTelemetry is this after loading it): `traced()` stays synchronous
import { sdkTelemetry } from '../../src/telemetry/otel-sdk.js';

export interface Traced {
  telemetry: Telemetry;
  exporter: InMemorySpanExporter;
  spans(): Promise<ReadableSpan[]>;
}

export function traced(opts: { captureContent?: boolean; env?: Record<string, string | undefined> } = {}): Traced {
  const exporter = new InMemorySpanExporter();
  const env = opts.env ?? {};
  const telemetry = sdkTelemetry({ spanProcessors: [new SimpleSpanProcessor(exporter)], env }, env, opts.captureContent ?? captureContentOf(env));
  return {
    telemetry,
    exporter,
    async spans() {
      await telemetry.flush();
      return exporter.getFinishedSpans();
    },
  };
}

export function ms(t: [number, number]): number {
  return t[0] * 1000 + t[1] / 1e6;
}

export function parentOf(s: ReadableSpan): string | undefined {
  return s.parentSpanContext?.spanId;
}

export function byName(spans: readonly ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((s) => s.name === name);
}
