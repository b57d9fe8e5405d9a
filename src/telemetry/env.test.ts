import { describe, expect, test } from 'vitest';
import { telemetryConfigured, telemetryFromEnv, type OtelLoader } from './env.js';

describe('telemetry from the environment', () => {
  test('on only when an exporter or an OTLP endpoint is named; OTEL_SDK_DISABLED wins', () => {
    expect(telemetryConfigured({})).toBe(false);
    expect(telemetryConfigured({ OTEL_SERVICE_NAME: 'x', OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' })).toBe(false);
    expect(telemetryConfigured({ OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(telemetryConfigured({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBe(false);
    expect(telemetryConfigured({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
    expect(telemetryConfigured({ OTEL_TRACES_EXPORTER: 'none,otlp' })).toBe(true);
    expect(telemetryConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBe(true);
    expect(telemetryConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toBe(true);
    expect(telemetryConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'TRUE' })).toBe(false);
  });

  test('without OTEL configuration the OpenTelemetry module is never imported', async () => {
    let loads = 0;
    const load: OtelLoader = () => {
      loads++;
      return Promise.reject(new Error('must not load'));
    };
    expect(await telemetryFromEnv({}, load)).toBeUndefined();
    expect(await telemetryFromEnv({ OTEL_TRACES_EXPORTER: 'none' }, load)).toBeUndefined();
    expect(loads).toBe(0);
    // and with it, it is (the same loader, so the count above means something)
    await expect(telemetryFromEnv({ OTEL_TRACES_EXPORTER: 'console' }, load)).rejects.toThrow('must not load');
    expect(loads).toBe(1);
  });

  test('an unknown exporter or protocol is a usage error naming the variable', async () => {
    const failure = async (env: Record<string, string>): Promise<{ code?: unknown; message?: unknown }> => {
      try {
        await telemetryFromEnv(env);
      } catch (e) {
        return e as { code?: unknown; message?: unknown };
      }
      throw new Error('no failure');
    };
    const a = await failure({ OTEL_TRACES_EXPORTER: 'zipkin' });
    expect([a.code, String(a.message).includes('OTEL_TRACES_EXPORTER')]).toEqual(['usage', true]);
    const b = await failure({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect([b.code, String(b.message).includes('OTEL_EXPORTER_OTLP_PROTOCOL')]).toEqual(['usage', true]);
  });
});
