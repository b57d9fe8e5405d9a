/**
 * A remote agent's spans join the run's trace: the claim carries the attempt span's traceparent, the
 * remote process's span is its child, and the completion sends that span back, linked from the attempt.
 * A real `baton serve` app on a loopback port; the remote side has its own telemetry and exporter, as
 * another process would.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createEngine, createRemoteAgent, openStore, type Engine, type RunStore } from '@baton-run/baton';
import { parseKeysEnv, RemoteAgents, startServer, type BatonServer } from '@baton-run/baton/server';
import { attemptSpanIdOf, traceIdOf } from '../../src/engine/telemetry.js';
import { api } from '../server/harness.js';
import { byName, ms, parentOf, traced, type Traced } from './helpers.js';

const ADMIN = 'admin-key-0123456789abcdef';
const RKEY = 'remote-r-key-0123456789abcdef';

const MIXED = `openintent: "1.0"
info: {name: mixed}
agents:
  r: {x-remote: true}
workflow:
  a: {assign: x, outputs: {n: number}}
  b: {assign: r, depends_on: [a], inputs: {n: a.n}, outputs: {m: string}}
`;

describe('remote agents in traces', () => {
  let dir: string;
  let store: RunStore;
  let engine: Engine;
  let server: BatonServer;
  let serverSide: Traced;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-otel-remote-'));
    store = await openStore('memory', { cwd: dir });
    serverSide = traced();
    const remote = new RemoteAgents({ leaseMs: 5000 });
    engine = createEngine({ store, agents: { x: () => ({ n: 4 }) }, bindRun: remote.bindRun, onEvent: remote.onEvent, telemetry: serverSide.telemetry });
    server = await startServer({ engine, port: 0, keys: parseKeysEnv(`root:admin:${ADMIN},rk:agent:r:${RKEY}`), remote, cwd: dir, log: () => undefined, graceMs: 100 });
  }, 30_000);
  afterAll(async () => {
    await server?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("the remote handler's span is a child of the attempt span, in the run's trace; the attempt span links back to it", async () => {
    const remoteSide = traced();
    const seen: { traceparent: string | undefined }[] = [];
    const agent = createRemoteAgent({
      url: server.url,
      key: RKEY,
      agent: 'r',
      waitS: 1,
      telemetry: remoteSide.telemetry,
      handler: (ctx) => {
        seen.push({ traceparent: ctx.traceparent });
        const s = ctx.trace!.span('lookup', { 'test.n': Number(ctx.input['n']) });
        s.end();
        return { m: `n=${String(ctx.input['n'])}` };
      },
    });
    try {
      const r = await api(server.url, 'POST', '/runs', { key: ADMIN, body: { workflow: MIXED, run_id: 'run-remote' } });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      await engine.handle('run-remote').result();
    } finally {
      await agent.stop(1000);
    }
    const traceId = traceIdOf('run-remote', undefined);
    const attemptId = attemptSpanIdOf('run-remote', 'b', 1);
    const remote = await remoteSide.spans();
    const own = byName(remote, 'baton.remote r');
    expect(own).toHaveLength(1);
    const rs = own[0]!;
    expect(rs.spanContext().traceId).toBe(traceId);
    expect(parentOf(rs)).toBe(attemptId);
    expect(rs.attributes).toMatchObject({ 'baton.run.id': 'run-remote', 'baton.phase': 'b', 'baton.attempt': 1, 'baton.agent': 'r' });
    expect(rs.status.code).not.toBe(SpanStatusCode.ERROR);
    // the handler's own span, under the remote span
    const lookup = byName(remote, 'lookup')[0]!;
    expect(parentOf(lookup)).toBe(rs.spanContext().spanId);
    expect(lookup.spanContext().traceId).toBe(traceId);
    expect(seen).toEqual([{ traceparent: `00-${traceId}-${rs.spanContext().spanId}-01` }]);

    const local = await serverSide.spans();
    const att = byName(local, 'baton.attempt b').find((s) => s.attributes['baton.run.id'] === 'run-remote')!;
    expect(att.spanContext().spanId).toBe(attemptId);
    expect(att.links.map((l) => l.context.spanId)).toEqual([rs.spanContext().spanId]);
    expect(att.links[0]!.context.traceId).toBe(traceId);
    // the remote work happened within the attempt
    expect(ms(rs.startTime)).toBeGreaterThanOrEqual(ms(att.startTime) - 1);
    const run = byName(local, 'invoke_workflow mixed').find((s) => s.attributes['baton.run.id'] === 'run-remote')!;
    expect(parentOf(att)).toBe(run.spanContext().spanId);
  });

  test('without telemetry in the remote process, ctx.traceparent is the attempt span (for spans of its own tracer)', async () => {
    const seen: (string | undefined)[] = [];
    const agent = createRemoteAgent({ url: server.url, key: RKEY, agent: 'r', waitS: 1, handler: (ctx) => (seen.push(ctx.traceparent), { m: 'ok' }) });
    try {
      const r = await api(server.url, 'POST', '/runs', { key: ADMIN, body: { workflow: MIXED, run_id: 'run-remote-2' } });
      expect(r.status).toBe(201);
      await engine.handle('run-remote-2').result();
    } finally {
      await agent.stop(1000);
    }
    expect(seen).toEqual([`00-${traceIdOf('run-remote-2', undefined)}-${attemptSpanIdOf('run-remote-2', 'b', 1)}-01`]);
    const att = byName(await serverSide.spans(), 'baton.attempt b').find((s) => s.attributes['baton.run.id'] === 'run-remote-2')!;
    expect(att.links).toEqual([]);
  });
});
