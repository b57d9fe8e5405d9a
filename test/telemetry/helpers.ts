/** Telemetry to an in-memory exporter, and reading its spans back as plain records. */
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Telemetry } from '../../src/engine/telemetry.js';
import { createOtelTelemetry } from '../../src/telemetry/otel.js';

export interface Traced {
  telemetry: Telemetry;
  exporter: InMemorySpanExporter;
  spans(): Promise<ReadableSpan[]>;
}

export function traced(opts: { captureContent?: boolean; env?: Record<string, string | undefined> } = {}): Traced {
  const exporter = new InMemorySpanExporter();
  const telemetry = createOtelTelemetry({ spanProcessors: [new SimpleSpanProcessor(exporter)], env: opts.env ?? {}, ...(opts.captureContent !== undefined ? { captureContent: opts.captureContent } : {}) });
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
