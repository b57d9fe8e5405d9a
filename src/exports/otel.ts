/// <reference types="node" preserve="true" />
/**
 * `@baton-run/baton/otel`: traces on OpenTelemetry (docs/telemetry.md). Needs the optional peers
 * `@opentelemetry/api`, `@opentelemetry/sdk-trace-base`, `@opentelemetry/resources` (and
 * `@opentelemetry/exporter-trace-otlp-proto` for OTLP), imported on first use: importing this subpath,
 * and type-checking a program that does, needs none of them. Pass the result as createEngine's `telemetry`.
 */

/** A telemetry with the span processors given (tests: an InMemorySpanExporter), or from the `OTEL_*` variables. */
export { createOtelTelemetry, otelTelemetryFromEnv, processorsFromEnv, captureContentOf, type OtelTelemetryOptions, type EnvTelemetryOptions } from '../telemetry/otel.js';
/** The SDK's objects the options take, typed by their shape (the SDK's own satisfy them). */
export type { OtelSpanProcessor, OtelSampler, OtelResource } from '../telemetry/otel.js';
/** Whether the environment configures traces, and the telemetry it configures (undefined, nothing loaded, when none). */
export { telemetryConfigured, telemetryFromEnv } from '../telemetry/env.js';
/** The port (engine/telemetry.ts) and the W3C traceparent helpers. */
export { parseTraceparent, formatTraceparent, type SpanContextIds, type Telemetry, type AttemptTrace, type SpanHandle, type SpanAttributes } from '../engine/telemetry.js';
