/**
 * A remote agent's spans join the run's trace: the claim carries the attempt span's traceparent, the
 * remote process's span is its child, and the completion sends that span back, linked from the attempt.
 * A real `baton serve` app on a loopback port; the remote side has its own telemetry and exporter, as
 * another process would.
 */
import { SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
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

const IN_PROCESS = MIXED.replace('assign: r,', 'assign: bad,').replace('r: {x-remote: true}', 'bad: {}');

const OPTIONAL = `openintent: "1.0"
info: {name: optional}
agents:
  r: {x-remote: true}
workflow:
  a: {assign: x, outputs: {n: number, maybe: {type: string, required: false}}}
  b: {assign: r, depends_on: [a], inputs: {m: a.maybe}, outputs: {m: string}}
`;

/** A span event's attributes with the run's own ids left out (two runs of one rejection differ only there). */
function sansRun(attrs: Record<string, unknown>, runId: string): Record<string, unknown> {
  return JSON.parse(JSON.stringify(attrs).replaceAll(runId, 'RUN')) as Record<string, unknown>;
}

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
    // `bad` is MIXED's remote phase done in process, returning nothing: its rejection is the one to match
    engine = createEngine({ store, agents: { x: () => ({ n: 4 }), bad: () => ({}) }, bindRun: remote.bindRun, onEvent: remote.onEvent, telemetry: serverSide.telemetry });
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

  test("POST /runs with a traceparent header: the run's trace continues the caller's, its span a child of the caller's", async () => {
    const callerTrace = '0af7651916cd43dd8448eb211c80319c';
    const callerSpan = 'b7ad6b7169203331';
    const noRemote = MIXED.replace('assign: r,', 'assign: x,').replace('outputs: {m: string}', 'outputs: {n: number}');
    const r = await api(server.url, 'POST', '/runs', { key: ADMIN, body: { workflow: noRemote, run_id: 'run-traced' }, headers: { traceparent: `00-${callerTrace}-${callerSpan}-01` } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    await engine.handle('run-traced').result();
    const run = byName(await serverSide.spans(), 'invoke_workflow mixed').find((s) => s.attributes['baton.run.id'] === 'run-traced')!;
    expect(run.spanContext().traceId).toBe(callerTrace);
    expect(parentOf(run)).toBe(callerSpan);
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

  test('a remote completion refused with 422 is a baton.contract.rejected event on the attempt span, with the attributes of an in-process rejection', async () => {
    const r = await api(server.url, 'POST', '/runs', { key: ADMIN, body: { workflow: MIXED, run_id: 'run-remote-422' } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const claim = await api(server.url, 'POST', '/agents/r/claim?wait=10', { key: RKEY });
    expect(claim.status).toBe(200);
    const token = claim.body['token'] as string;
    const refused = await api(server.url, 'POST', `/tasks/${token}/complete`, { key: RKEY, body: { output: {} } });
    expect(refused.status).toBe(422);
    expect((refused.body['error'] as { code: string }).code).toBe('MissingOutputError');
    // the agent cannot write that record itself (a made-up rejection would be a span event too)
    expect(await api(server.url, 'POST', `/tasks/${token}/event`, { key: RKEY, body: { kind: 'remote_output_rejected', data: { error: 'OutputTypeMismatchError' } } })).toMatchObject({ status: 400, body: { error: { code: 'invalid-request' } } });
    expect((await api(server.url, 'POST', `/tasks/${token}/complete`, { key: RKEY, body: { output: { m: 'fixed' } } })).status).toBe(200);
    expect((await engine.handle('run-remote-422').result()).status).toBe('completed');

    // the same rejection in process (it ends that attempt, so the run fails there)
    const local = await api(server.url, 'POST', '/runs', { key: ADMIN, body: { workflow: IN_PROCESS, run_id: 'run-local-422' } });
    expect(local.status).toBe(201);
    expect((await engine.handle('run-local-422').result()).status).toBe('failed');

    const spans = await serverSide.spans();
    const attempt = (runId: string): ReadableSpan => byName(spans, 'baton.attempt b').find((s) => s.attributes['baton.run.id'] === runId)!;
    const remote = attempt('run-remote-422');
    expect(remote.events.map((e) => e.name)).toEqual(['baton.contract.rejected']);
    // the attempt went on and completed: the rejection is an event on it, not its end
    expect(remote.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(remote.attributes['baton.outcome']).toBe('completed');
    const ev = remote.events[0]!;
    expect(ev.attributes).toMatchObject({ 'error.type': 'MissingOutputError', 'baton.error.error': 'MissingOutputError', 'baton.error.phase_name': 'b', 'baton.error.missing_keys': ['m'] });
    expect(ms(ev.time)).toBeGreaterThanOrEqual(ms(remote.startTime) - 1);
    expect(ms(ev.time)).toBeLessThanOrEqual(ms(remote.endTime) + 1);
    const inProcess = attempt('run-local-422').events;
    expect(inProcess.map((e) => e.name)).toEqual(['baton.contract.rejected']);
    expect(sansRun(ev.attributes!, 'run-remote-422')).toEqual(sansRun(inProcess[0]!.attributes!, 'run-local-422'));
  });

  test('a claim-time rejection of a remote phase is an event on the run span, as in process (the task is never handed to the agent: no attempt)', async () => {
    const r = await api(server.url, 'POST', '/runs', { key: ADMIN, body: { workflow: OPTIONAL, run_id: 'run-remote-claim' } });
    expect(r.status).toBe(201);
    expect((await engine.handle('run-remote-claim').result()).status).toBe('failed');
    const spans = (await serverSide.spans()).filter((s) => s.attributes['baton.run.id'] === 'run-remote-claim');
    expect(spans.map((s) => s.name).sort()).toEqual(['baton.attempt a', 'invoke_workflow optional']);
    const run = byName(spans, 'invoke_workflow optional')[0]!;
    expect(run.events.map((e) => e.name)).toEqual(['baton.contract.rejected']);
    expect(run.events[0]!.attributes).toMatchObject({ 'error.type': 'UnresolvableInputError', 'baton.phase': 'b', 'baton.error.unresolvable_refs': ['a.maybe'] });
  });
});
