/**
 * The part of `@baton-run/baton/otel` that uses the OpenTelemetry SDK: it imports the optional peers
 * `@opentelemetry/api` (through spans.ts), `@opentelemetry/sdk-trace-base` and `@opentelemetry/resources`,
 * so it is reached only through otel.ts's dynamic import, which names a missing one.
 */
import { detectResources, envDetector, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor, type ReadableSpan, type Sampler, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { inspect } from 'node:util';
import type { Telemetry } from '../engine/telemetry.js';
import type { OtelTelemetryOptions } from './otel.js';
import { PresetIds, SpanModel } from './spans.js';

/** createOtelTelemetry's work, once the SDK is loaded (`captureContent` resolved by the caller). */
export function sdkTelemetry(opts: OtelTelemetryOptions, env: Readonly<Record<string, string | undefined>>, captureContent: boolean): Telemetry {
  const ids = new PresetIds();
  const serviceName = opts.serviceName ?? env['OTEL_SERVICE_NAME'] ?? 'baton';
  // the options' SDK objects are typed by their shape (otel.ts): these are the SDK's own
  const resource = (opts.resource as Resource | undefined) ?? detectResources({ detectors: [envDetector] }).merge(resourceFromAttributes({ 'service.name': serviceName }));
  const sampler = opts.sampler as Sampler | undefined;
  const provider = new BasicTracerProvider({ idGenerator: ids, resource, spanProcessors: opts.spanProcessors ?? [], ...(sampler ? { sampler } : {}) });
  const tracer = provider.getTracer('@baton-run/baton');
  const model = new SpanModel({ tracer, ids, captureContent });
  return {
    event: (e, state, run) => model.event(e, state, run),
    attempt: (run, a) => model.attempt(run, a),
    child: (tp, name, attrs) => model.child(tp, name, attrs),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

/**
 * `console`: each span printed as it ends, by the SDK's ConsoleSpanExporter (on stdout), or through
 * `write` in the same shape. The CLI passes its stderr: its stdout carries the `--json` result and
 * `worker --json` lines, which spans printed among them would corrupt.
 */
export function consoleProcessor(write?: (text: string) => void): SpanProcessor {
  return new SimpleSpanProcessor(write ? new WriteSpanExporter(write) : new ConsoleSpanExporter());
}

const micros = (t: readonly [number, number]): number => Math.round(t[0] * 1e6 + t[1] / 1e3);

/** ConsoleSpanExporter's output (`console.dir(info, {depth: 3})`), written where the caller says. */
class WriteSpanExporter implements SpanExporter {
  constructor(private readonly write: (text: string) => void) {}
  export(spans: ReadableSpan[], done: Parameters<SpanExporter['export']>[1]): void {
    for (const span of spans) {
      const ctx = span.spanContext();
      const info = {
        resource: { attributes: span.resource.attributes },
        instrumentationScope: span.instrumentationScope,
        traceId: ctx.traceId,
        parentSpanContext: span.parentSpanContext,
        traceState: ctx.traceState?.serialize(),
        name: span.name,
        id: ctx.spanId,
        kind: span.kind,
        timestamp: micros(span.startTime),
        duration: micros(span.duration),
        attributes: span.attributes,
        status: span.status,
        events: span.events,
        links: span.links,
      };
      this.write(inspect(info, { depth: 3 }) + '\n');
    }
    done({ code: 0 });
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

/** An exporter behind a batch processor (OTLP). */
export function batchProcessor(exporter: SpanExporter): SpanProcessor {
  return new BatchSpanProcessor(exporter);
}
