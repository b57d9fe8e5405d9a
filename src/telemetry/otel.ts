/**
 * Telemetry on OpenTelemetry (`@baton-run/baton/otel`): a tracer provider of its own, with the ids the
 * span model derives from runs (spans.ts), exporting where the standard `OTEL_*` variables say.
 * Needs the optional peers `@opentelemetry/api`, `@opentelemetry/sdk-trace-base` and
 * `@opentelemetry/resources` (and `@opentelemetry/exporter-trace-otlp-proto` for OTLP). Loaded only
 * when telemetry is configured (env.ts).
 */
import { detectResources, envDetector, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor, type Sampler, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { BatonError } from '../core/errors.js';
import { loadOptional } from '../core/optional.js';
import type { Telemetry } from '../engine/telemetry.js';
import { PresetIds, SpanModel } from './spans.js';

type Env = Readonly<Record<string, string | undefined>>;

export interface OtelTelemetryOptions {
  /** Where spans go (tests: `new SimpleSpanProcessor(new InMemorySpanExporter())`). Default: from the environment. */
  spanProcessors?: SpanProcessor[] | undefined;
  /** Record prompts and replies on model-call spans. Default: `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`. */
  captureContent?: boolean | undefined;
  /** `service.name`; default `OTEL_SERVICE_NAME`, else `baton`. `OTEL_RESOURCE_ATTRIBUTES` is read too. */
  serviceName?: string | undefined;
  resource?: Resource | undefined;
  sampler?: Sampler | undefined;
  /** Default: process.env. */
  env?: Env | undefined;
}

/** An OpenTelemetry telemetry with the span processors given (nothing read from the environment but the content opt-in). */
export function createOtelTelemetry(opts: OtelTelemetryOptions = {}): Telemetry {
  const env = opts.env ?? process.env;
  const ids = new PresetIds();
  const serviceName = opts.serviceName ?? env['OTEL_SERVICE_NAME'] ?? 'baton';
  const resource = opts.resource ?? detectResources({ detectors: [envDetector] }).merge(resourceFromAttributes({ 'service.name': serviceName }));
  const provider = new BasicTracerProvider({ idGenerator: ids, resource, spanProcessors: opts.spanProcessors ?? [], ...(opts.sampler ? { sampler: opts.sampler } : {}) });
  const tracer = provider.getTracer('@baton-run/baton');
  const model = new SpanModel({ tracer, ids, captureContent: opts.captureContent ?? captureContentOf(env) });
  return {
    event: (e, state, run) => model.event(e, state, run),
    attempt: (run, a) => model.attempt(run, a),
    child: (tp, name, attrs) => model.child(tp, name, attrs),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

/** `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (case-insensitive): the only opt-in to content. */
export function captureContentOf(env: Env): boolean {
  return (env['OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT'] ?? '').trim().toLowerCase() === 'true';
}

/**
 * The exporters `OTEL_TRACES_EXPORTER` names (comma-separated: `otlp`, the default, over
 * http/protobuf to `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `console`;
 * `none`), each behind a batch processor (`console`: a simple one).
 */
export async function processorsFromEnv(env: Env): Promise<SpanProcessor[]> {
  const names = (env['OTEL_TRACES_EXPORTER'] ?? 'otlp').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
  const out: SpanProcessor[] = [];
  for (const name of new Set(names)) {
    if (name === 'none') continue;
    if (name === 'console') {
      out.push(new SimpleSpanProcessor(new ConsoleSpanExporter()));
      continue;
    }
    if (name !== 'otlp') throw new BatonError('usage', `OTEL_TRACES_EXPORTER: unknown exporter \`${name}\` (Baton knows otlp, console and none)`);
    const protocol = (env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] ?? env['OTEL_EXPORTER_OTLP_PROTOCOL'] ?? 'http/protobuf').trim().toLowerCase();
    if (protocol !== 'http/protobuf') throw new BatonError('usage', `OTEL_EXPORTER_OTLP_PROTOCOL: \`${protocol}\` is not supported (Baton exports OTLP over http/protobuf)`);
    const { OTLPTraceExporter } = await loadOptional('@opentelemetry/exporter-trace-otlp-proto', 'exporting traces over OTLP', () => import('@opentelemetry/exporter-trace-otlp-proto'));
    out.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  }
  return out;
}

/** The telemetry the environment configures (env.ts decides whether it does). */
export async function otelTelemetryFromEnv(env: Env = process.env): Promise<Telemetry> {
  return createOtelTelemetry({ env, spanProcessors: await processorsFromEnv(env) });
}
