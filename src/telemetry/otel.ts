/**
 * Telemetry on OpenTelemetry (`@baton-run/baton/otel`): a tracer provider of its own, with the ids the
 * span model derives from runs (spans.ts), exporting where the standard `OTEL_*` variables say.
 * Needs the optional peers `@opentelemetry/api`, `@opentelemetry/sdk-trace-base` and
 * `@opentelemetry/resources` (and `@opentelemetry/exporter-trace-otlp-proto` for OTLP), imported on
 * first use (otel-sdk.ts): this module, and its declarations, need none of them. A missing one is a
 * `missing-package` error naming the install command.
 */
import { BatonError } from '../core/errors.js';
import { loadOptional } from '../core/optional.js';
import type { Telemetry } from '../engine/telemetry.js';

type Env = Readonly<Record<string, string | undefined>>;

/** What tracing needs installed (the OTLP exporter only when `OTEL_TRACES_EXPORTER` asks for otlp). */
export const OTEL_PACKAGES = ['@opentelemetry/api', '@opentelemetry/sdk-trace-base', '@opentelemetry/resources'] as const;
export const OTLP_EXPORTER_PACKAGE = '@opentelemetry/exporter-trace-otlp-proto';

/**
 * A span processor of `@opentelemetry/sdk-trace-base` (`SimpleSpanProcessor`, `BatchSpanProcessor`, one
 * of your own). Typed by its shape, as are the sampler and the resource below, so that Baton's declarations
 * never name the SDK's types (an optional peer: a program that does not trace type-checks without it).
 */
export interface OtelSpanProcessor {
  onStart(span: never, parentContext: never): void;
  onEnd(span: never): void;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/** A `Sampler` of `@opentelemetry/sdk-trace-base` (`AlwaysOnSampler`, `TraceIdRatioBasedSampler`, ...). */
export interface OtelSampler {
  shouldSample(...args: never[]): unknown;
  toString(): string;
}

/** A `Resource` of `@opentelemetry/resources` (`resourceFromAttributes({...})`). */
export interface OtelResource {
  readonly attributes: object;
  merge(other: never): unknown;
}

export interface OtelTelemetryOptions {
  /** Where spans go (tests: `new SimpleSpanProcessor(new InMemorySpanExporter())`). Default: none. */
  spanProcessors?: OtelSpanProcessor[] | undefined;
  /** Record prompts and replies on model-call spans. Default: `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`. */
  captureContent?: boolean | undefined;
  /** `service.name`; default `OTEL_SERVICE_NAME`, else `baton`. `OTEL_RESOURCE_ATTRIBUTES` is read too. */
  serviceName?: string | undefined;
  resource?: OtelResource | undefined;
  sampler?: OtelSampler | undefined;
  /** Default: process.env. */
  env?: Env | undefined;
}

type Sdk = typeof import('./otel-sdk.js');

function loadSdk(what: string, also: readonly string[] = []): Promise<Sdk> {
  return loadOptional([...OTEL_PACKAGES, ...also], what, () => import('./otel-sdk.js'));
}

/**
 * An OpenTelemetry telemetry with the span processors given (nothing read from the environment but the
 * resource's and the content opt-in). Loads the SDK on its first call.
 */
export async function createOtelTelemetry(opts: OtelTelemetryOptions = {}): Promise<Telemetry> {
  const sdk = await loadSdk('OpenTelemetry tracing (createOtelTelemetry)');
  const env = opts.env ?? process.env;
  return sdk.sdkTelemetry(opts, env, opts.captureContent ?? captureContentOf(env));
}

/** `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` (case-insensitive): the only opt-in to content. */
export function captureContentOf(env: Env): boolean {
  return (env['OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT'] ?? '').trim().toLowerCase() === 'true';
}

/** The exporters `OTEL_TRACES_EXPORTER` names, checked (a usage error names the variable), before anything is loaded. */
function exportersOf(env: Env): Set<'otlp' | 'console'> {
  const names = (env['OTEL_TRACES_EXPORTER'] ?? 'otlp').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
  const out = new Set<'otlp' | 'console'>();
  for (const name of names) {
    if (name === 'none') continue;
    if (name !== 'otlp' && name !== 'console') throw new BatonError('usage', `OTEL_TRACES_EXPORTER: unknown exporter \`${name}\` (Baton knows otlp, console and none)`);
    out.add(name);
  }
  if (out.has('otlp')) {
    const protocol = (env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] ?? env['OTEL_EXPORTER_OTLP_PROTOCOL'] ?? 'http/protobuf').trim().toLowerCase();
    if (protocol !== 'http/protobuf') throw new BatonError('usage', `OTEL_EXPORTER_OTLP_PROTOCOL: \`${protocol}\` is not supported (Baton exports OTLP over http/protobuf)`);
  }
  return out;
}

const FROM_ENV = 'tracing (OTEL_* variables)';

/**
 * The exporters `OTEL_TRACES_EXPORTER` names (comma-separated: `otlp`, the default, over
 * http/protobuf to `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; `console`;
 * `none`), each behind a batch processor (`console`: a simple one). Every package they need that is
 * missing is named in one error.
 */
export async function processorsFromEnv(env: Env, opts: EnvTelemetryOptions = {}): Promise<OtelSpanProcessor[]> {
  const exporters = exportersOf(env);
  if (exporters.size === 0) return [];
  const otlp = exporters.has('otlp');
  const sdk = await loadSdk(FROM_ENV, otlp ? [OTLP_EXPORTER_PACKAGE] : []);
  const out: OtelSpanProcessor[] = [];
  for (const name of exporters) {
    if (name === 'console') out.push(sdk.consoleProcessor(opts.consoleWrite));
    else {
      const { OTLPTraceExporter } = await loadOptional([OTLP_EXPORTER_PACKAGE, ...OTEL_PACKAGES], FROM_ENV, () => import('@opentelemetry/exporter-trace-otlp-proto'));
      out.push(sdk.batchProcessor(new OTLPTraceExporter()));
    }
  }
  return out;
}

/** Options of the telemetry the `OTEL_*` variables configure. */
export interface EnvTelemetryOptions {
  /** Where the `console` exporter prints each span. Default: stdout (the SDK's ConsoleSpanExporter). */
  consoleWrite?: ((text: string) => void) | undefined;
}

/** The telemetry the environment configures (env.ts decides whether it does). */
export async function otelTelemetryFromEnv(env: Env = process.env, opts: EnvTelemetryOptions = {}): Promise<Telemetry> {
  const spanProcessors = await processorsFromEnv(env, opts);
  const sdk = await loadSdk(FROM_ENV);
  return sdk.sdkTelemetry({ env, spanProcessors }, env, captureContentOf(env));
}
