/**
 * The CLI and the OTEL_* variables, in real processes: `baton run` exports its spans over OTLP
 * (http/protobuf) to a loopback server playing the collector, under the caller's TRACEPARENT; and
 * without OTEL configuration no OpenTelemetry module is even resolved.
 */
import { mkdtempSync, readFileSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { batonRun } from '../helpers/spawn.js';

const FLOW = `openintent: "1.0"
info: {name: traced chain}
workflow:
  a: {assign: x, outputs: {n: number}}
  b: {assign: y, depends_on: [a], outputs: {m: string}}
`;
const SPY = pathToFileURL(join(import.meta.dirname, '..', 'fixtures', 'telemetry', 'import-spy.mjs')).href;

interface Received {
  path: string;
  type: string | undefined;
  body: Buffer;
}

describe('baton run with OTEL_* variables', () => {
  let dir: string;
  const received: Received[] = [];
  let collector: ReturnType<typeof createServer>;
  let endpoint: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-otel-cli-'));
    writeFileSync(join(dir, 'flow.yaml'), FLOW);
    collector = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ path: req.url ?? '', type: req.headers['content-type'], body: Buffer.concat(chunks) });
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        res.end();
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => collector.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  test('the spans reach an OTLP endpoint, in the trace of TRACEPARENT', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const r = await batonRun(['run', 'flow.yaml', '--stub-agents', '--store', 'memory', '--quiet'], {
      cwd: dir,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: 'baton-test', TRACEPARENT: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(r.code, r.stderr).toBe(0);
    const traces = received.filter((x) => x.path === '/v1/traces');
    expect(traces.length).toBeGreaterThan(0);
    expect(traces[0]!.type).toBe('application/x-protobuf');
    const all = Buffer.concat(traces.map((x) => x.body));
    // protobuf: ids as raw bytes, names and attribute values as UTF-8
    expect(all.includes(Buffer.from(traceId, 'hex'))).toBe(true);
    expect(all.includes(Buffer.from('00f067aa0ba902b7', 'hex'))).toBe(true);
    for (const s of ['invoke_workflow traced chain', 'baton.attempt a', 'baton.attempt b', 'baton-test']) expect(all.includes(Buffer.from(s)), s).toBe(true);
  }, 60_000);

  test('without OTEL configuration no OpenTelemetry module is resolved; with it, they are', async () => {
    const off = join(dir, 'spy-off.txt');
    const r = await batonRun(['run', 'flow.yaml', '--stub-agents', '--store', 'memory', '--quiet'], { cwd: dir, env: { NODE_OPTIONS: `--import=${SPY}`, IMPORT_SPY_FILE: off, OTEL_SERVICE_NAME: 'set but not a configuration' } });
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(off) ? readFileSync(off, 'utf8') : '').toBe('');
    const on = join(dir, 'spy-on.txt');
    const r2 = await batonRun(['run', 'flow.yaml', '--stub-agents', '--store', 'memory', '--quiet'], { cwd: dir, env: { NODE_OPTIONS: `--import=${SPY}`, IMPORT_SPY_FILE: on, OTEL_TRACES_EXPORTER: 'console' } });
    expect(r2.code, r2.stderr).toBe(0);
    expect(readFileSync(on, 'utf8')).toContain('@opentelemetry/sdk-trace-base');
  }, 60_000);

  test('the console exporter prints spans on stderr: `--json` keeps stdout the run result alone', async () => {
    const r = await batonRun(['run', 'flow.yaml', '--stub-agents', '--store', 'memory', '--json'], { cwd: dir, env: { OTEL_TRACES_EXPORTER: 'console' } });
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout) as { status: string };
    expect(result.status).toBe('completed');
    for (const s of ["name: 'invoke_workflow traced chain'", "name: 'baton.attempt a'", "name: 'baton.attempt b'"]) expect(r.stderr).toContain(s);
  }, 60_000);
});
