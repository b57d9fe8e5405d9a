/**
 * The part of `@baton-run/baton/otel` that uses the OpenTelemetry SDK: it imports the optional peers
 * `@opentelemetry/api` (through spans.ts), `@opentelemetry/sdk-trace-base` and `@opentelemetry/resources`,
 * so it is reached only through otel.ts's dynamic import, which names a missing one.
 */
import { detectResources, envDetector, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor, type Sampler, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
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

/** `console`: each span printed as it ends. */
export function consoleProcessor(): SpanProcessor {
  return new SimpleSpanProcessor(new ConsoleSpanExporter());
}

/** An exporter behind a batch processor (OTLP). */
export function batchProcessor(exporter: SpanExporter): SpanProcessor {
  return new BatchSpanProcessor(exporter);
}
