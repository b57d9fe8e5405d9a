/**
 * Whether the environment asks for telemetry, and loading it only then: without `OTEL_*` settings
 * nothing of OpenTelemetry is imported (the `otel.js` module, and with it every `@opentelemetry/*`
 * package, is a dynamic import behind `telemetryConfigured`). With them, each `@opentelemetry/*`
 * package they need that is not installed is named in one `missing-package` error (otel.ts).
 */
import type { Telemetry } from '../engine/telemetry.js';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Traces are on when `OTEL_TRACES_EXPORTER` names an exporter other than `none`, or an OTLP endpoint
 * is set (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); `OTEL_SDK_DISABLED=true`
 * turns them off whatever else is set.
 */
export function telemetryConfigured(env: Env): boolean {
  if ((env['OTEL_SDK_DISABLED'] ?? '').trim().toLowerCase() === 'true') return false;
  const exporter = (env['OTEL_TRACES_EXPORTER'] ?? '').trim().toLowerCase();
  if (exporter !== '') return exporter.split(',').some((s) => s.trim() !== '' && s.trim() !== 'none');
  return (env['OTEL_EXPORTER_OTLP_ENDPOINT'] ?? '').trim() !== '' || (env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] ?? '').trim() !== '';
}

/** The OpenTelemetry module, imported on demand (tests pass their own to see whether it is called). */
export type OtelLoader = () => Promise<{ otelTelemetryFromEnv(env: Env): Promise<Telemetry> }>;

const loadOtel: OtelLoader = () => import('./otel.js');

/** The telemetry the environment configures, or undefined (and nothing loaded) when it configures none. */
export async function telemetryFromEnv(env: Env = process.env, load: OtelLoader = loadOtel): Promise<Telemetry | undefined> {
  if (!telemetryConfigured(env)) return undefined;
  const m = await load();
  return m.otelTelemetryFromEnv(env);
}
