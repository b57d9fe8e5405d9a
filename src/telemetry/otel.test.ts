import { AlwaysOnSampler, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { describe, expect, test } from 'vitest';
import { createOtelTelemetry, processorsFromEnv, type OtelTelemetryOptions } from './otel.js';

describe('createOtelTelemetry (the /otel entry)', () => {
  test("loads the SDK on its first call and takes the SDK's own processor, sampler and resource (typed by their shape)", async () => {
    const exporter = new InMemorySpanExporter();
    // the SDK's objects satisfy the options' shapes: this compiles without casts
    const opts: OtelTelemetryOptions = { spanProcessors: [new SimpleSpanProcessor(exporter)], sampler: new AlwaysOnSampler(), resource: resourceFromAttributes({ 'service.name': 'shapes' }), env: {} };
    const telemetry = await createOtelTelemetry(opts);
    telemetry.child(undefined, 'probe').end();
    await telemetry.flush();
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(['probe']);
    expect(spans[0]!.resource.attributes['service.name']).toBe('shapes');
    await telemetry.shutdown();
  });

  test('a wrong OTEL_TRACES_EXPORTER or protocol is a usage error before any package is loaded', async () => {
    await expect(processorsFromEnv({ OTEL_TRACES_EXPORTER: 'zipkin' })).rejects.toMatchObject({ code: 'usage' });
    await expect(processorsFromEnv({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).rejects.toMatchObject({ code: 'usage' });
    expect(await processorsFromEnv({ OTEL_TRACES_EXPORTER: 'none' })).toEqual([]);
  });
});
