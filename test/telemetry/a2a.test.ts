/** An x-a2a agent's attempt in traces: a GenAI agent invocation, against an @a2a-js/sdk server on a loopback port. */
import { afterEach, describe, expect, test } from 'vitest';
import { createEngine, openStore, WorkflowSpec } from '@baton-run/baton';
import { startA2aPeer, type A2aPeer } from '../helpers/a2a-peer.js';
import { a2aFlow } from '../helpers/a2a-rig.js';
import { byName, parentOf, traced } from './helpers.js';

const flow = (url: string): string => a2aFlow(url, { skill: 'answer' });

const open: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of open.splice(0).reverse()) await f();
});

/** A traced engine over a memory store, closed after the test. */
async function tracedEngine(): Promise<{ t: ReturnType<typeof traced>; store: Awaited<ReturnType<typeof openStore>>; engine: ReturnType<typeof createEngine> }> {
  const t = traced();
  const store = await openStore('memory');
  const engine = createEngine({ store, telemetry: t.telemetry });
  open.push(async () => {
    await engine.close();
    await store.close();
  });
  return { t, store, engine };
}

describe('A2A agents in traces', () => {
  test('an x-a2a attempt is invoke_agent {agent}, with the peer as server.address/port and its task and context', async () => {
    const traceparents: (string | undefined)[] = [];
    const peer: A2aPeer = await startA2aPeer({ traceparents });
    open.push(() => peer.close());
    const { t, store, engine } = await tracedEngine();
    const result = await engine.run(WorkflowSpec.fromString(flow(peer.url)), { trigger: { question: 'why', mode: 'plain' } });
    expect(result.status).toBe('completed');
    const spans = await t.spans();
    const [a] = byName(spans, 'invoke_agent peer');
    expect(a).toBeDefined();
    const { port } = new URL(peer.url);
    expect(a!.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'peer', 'server.address': '127.0.0.1', 'server.port': Number(port), 'baton.phase': 'ask', 'baton.attempt': 1, 'baton.outcome': 'completed' });
    // the A2A task the peer made, as the run's log names it
    const logged = (await store.events(result.runId)).find((e) => e.type === 'task.agent_event' && e.kind === 'a2a.task');
    expect(a!.attributes['baton.a2a.task_id']).toBe((logged as { data: { task_id: string } } | undefined)?.data.task_id);
    expect(typeof a!.attributes['gen_ai.conversation.id']).toBe('string');
    expect(parentOf(a!)).toBe(byName(spans, 'invoke_workflow via-a2a')[0]!.spanContext().spanId);
    expect(byName(spans, 'baton.attempt ask')).toEqual([]);
    // the request to the peer carried the attempt's trace context: the peer's spans join the run's trace
    expect(traceparents.length).toBeGreaterThan(0);
    for (const tp of traceparents) expect(tp).toBe(`00-${a!.spanContext().traceId}-${a!.spanContext().spanId}-01`);
  });

  test('an x-a2a attempt whose card cannot be read is still invoke_agent {agent} (failed)', async () => {
    const { t, engine } = await tracedEngine();
    const result = await engine.run(WorkflowSpec.fromString(flow('http://127.0.0.1:9')), { trigger: { question: 'q', mode: 'plain' } });
    expect(result.status).toBe('failed');
    const spans = await t.spans();
    const attempts = byName(spans, 'invoke_agent peer');
    expect(attempts.length).toBeGreaterThan(0);
    expect(attempts[0]!.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'error.type': 'A2AUnavailable' });
  });
});
