/**
 * An A2A agent as a phase: a workflow whose agent is declared `x-a2a: {url, skill}` runs against an
 * agent built from `@a2a-js/sdk`'s own server (test/helpers/a2a-peer.ts) on a loopback port, over a
 * real SQLite store (and one run on PostgreSQL).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { systemClock, WorkflowSpec, type Clock, type RunEvent } from '@baton-run/baton';
import { startA2aPeer, type A2aPeer } from '../helpers/a2a-peer.js';
import { a2aFlow, engineRig, type EngineRig } from '../helpers/a2a-rig.js';
import { testDatabase } from '../helpers/pg.js';

const flow = a2aFlow;
const rig = (store?: string, clock?: Clock): Promise<EngineRig> => engineRig({ dir, cleanup: open, ...(store !== undefined ? { store } : {}), ...(clock ? { clock } : {}) });

let dir: string;
const open: (() => Promise<void>)[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'baton-a2a-agent-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  for (const f of open.splice(0).reverse()) await f();
});

async function peer(opts: Parameters<typeof startA2aPeer>[0] = {}): Promise<A2aPeer> {
  const p = await startA2aPeer(opts);
  open.push(() => p.close());
  return p;
}

describe('an A2A agent as a phase', () => {
  for (const streaming of [true, false]) {
    test(`completes: the input goes as a data part, the reply's data part is the output (${streaming ? 'streaming' : 'blocking'} send)`, async () => {
      const p = await peer({ streaming });
      const r = await rig();
      const result = await r.engine.run(WorkflowSpec.fromString(flow(p.url, { skill: 'answer' })), { trigger: { question: 'why', mode: 'plain' } });
      expect(result.status).toBe('completed');
      expect(result.phases['ask']!.output).toEqual({ answer: 'why!' });
      expect(p.received).toHaveLength(1);
      const part = p.received[0]!.parts[0]!;
      expect(part.mediaType).toBe('application/json');
      expect(part.content).toEqual({ $case: 'data', value: { question: 'why', mode: 'plain' } });
      // the skill is named in the message's metadata (where an executor reads it) and the request's
      expect(p.received[0]!.metadata).toEqual({ skill: 'answer' });
    });
  }

  test('a wrong output is rejected by the phase output validation (MissingOutputError), never completed', async () => {
    const p = await peer();
    const r = await rig();
    const result = await r.engine.run(WorkflowSpec.fromString(flow(p.url)), { trigger: { question: 'q', mode: 'wrong' } });
    expect(result.status).toBe('failed');
    const rejected = r.events.filter((e) => e.type === 'task.rejected');
    expect(rejected.length).toBeGreaterThan(0);
    expect(result.phases['ask']!.status).toBe('failed');
    expect(result.phases['ask']!.error).toMatchObject({ code: 'MissingOutputError', details: { missing_keys: ['answer'] } });
  });

  test('a text-only reply goes through the reply extraction LLM replies get', async () => {
    const p = await peer();
    const r = await rig();
    const result = await r.engine.run(WorkflowSpec.fromString(flow(p.url)), { trigger: { question: 'q', mode: 'text' } });
    expect(result.status).toBe('completed');
    expect(result.phases['ask']!.output).toEqual({ answer: 'from text' });
  });

  for (const [mode, streaming] of [['ask', true], ['auth', true], ['ask', false]] as const) {
    test(`${mode === 'ask' ? 'input-required' : 'auth-required'} becomes an input gate; the answer continues the same A2A task (${streaming ? 'streaming' : 'non-streaming'})`, async () => {
      const p = await peer({ streaming });
      const r = await rig();
      const run = await r.engine.start(WorkflowSpec.fromString(flow(p.url, { streaming })), { trigger: { question: 'q', mode } });
      const opened = (await r.waitFor('gate.opened')) as Extract<RunEvent, { type: 'gate.opened' }>;
      expect(opened).toMatchObject({ kind: 'input', question: 'which colour?' });
      await r.engine.respond(run.id, opened.gate_id, 'blue', 'tester');
      const result = await run.result();
      expect(result.status).toBe('completed');
      expect(result.phases['ask']!.output).toEqual({ answer: 'told "blue"' });
      expect(p.received).toHaveLength(2);
      const [first, second] = p.received;
      // the follow-up names the task and context the first message opened
      expect(second!.taskId).not.toBe('');
      expect(second!.taskId).toBe(first!.taskId);
      expect(second!.contextId).toBe(first!.contextId);
      expect(second!.parts[0]!.content).toEqual({ $case: 'text', value: 'blue' });
      // one question: the answer's reply was not taken for the task still asking (its first event is the stored task)
      expect(r.events.filter((e) => e.type === 'gate.opened')).toHaveLength(1);
    });
  }

  test('after a restart, the answer continues the A2A task the first process opened (its ids were checkpointed)', async () => {
    const p = await peer();
    const file = join(dir, 'restart.db');
    const first = await rig(file);
    const run = await first.engine.start(WorkflowSpec.fromString(flow(p.url)), { trigger: { question: 'q', mode: 'ask' }, detach: true });
    void first.engine.drive(run.id).catch(() => undefined);
    const opened = (await first.waitFor('gate.opened')) as Extract<RunEvent, { type: 'gate.opened' }>;
    // the first process goes away while the A2A task waits for input; the answer comes from another terminal
    await first.engine.stop(0);
    const other = await rig(file);
    await other.engine.respond(run.id, opened.gate_id, 'green', 'tester');
    // a worker that comes after the answering process's grace (30 s: the clock is set ahead, nothing sleeps)
    const second = await rig(file, { now: () => Date.now() + 31_000, sleep: (ms, signal) => systemClock.sleep(ms, signal) });
    const result = await second.engine.resume(run.id);
    expect(result.status).toBe('completed');
    expect(result.phases['ask']!.output).toEqual({ answer: 'told "green"' });
    // one A2A task: the follow-up named the task the first process opened, no second task was started
    expect(p.received).toHaveLength(2);
    expect(new Set(p.received.map((m) => m.taskId)).size).toBe(1);
    expect(p.cancelled).toEqual([]);
    expect(second.events.some((e) => e.type === 'task.log' && /continuing A2A task/.test(e.message))).toBe(true);
  });

  test('a retry after a rejected output starts a new A2A task (the completed one is never continued)', async () => {
    const p = await peer();
    const r = await rig();
    const text = flow(p.url).replace('outputs: {answer: string}', 'outputs: {answer: string}\n    retry: {max_attempts: 2, initial_delay_ms: 0}');
    const run = await r.engine.start(WorkflowSpec.fromString(text), { trigger: { question: 'q', mode: 'ask-wrong' } });
    const opened = (await r.waitFor('gate.opened')) as Extract<RunEvent, { type: 'gate.opened' }>;
    await r.engine.respond(run.id, opened.gate_id, 'blue', 'tester');
    const result = await run.result();
    expect(result.status).toBe('failed');
    expect(result.phases['ask']).toMatchObject({ attempts: 2, error: { code: 'MissingOutputError' } });
    // attempt 2 opened its own task and got the recorded answer at once: two tasks, two messages each
    expect(p.received).toHaveLength(4);
    const tasks = p.received.map((m) => m.taskId);
    expect(new Set(tasks).size).toBe(2);
    expect(tasks[0]).toBe(tasks[1]);
    expect(tasks[2]).toBe(tasks[3]);
    expect(r.events.some((e) => e.type === 'task.log' && /is completed; starting another/.test(e.message))).toBe(true);
  });

  for (const streaming of [true, false]) {
  test(`cancelling the run cancels the A2A task (CancelTask; ${streaming ? 'streaming' : 'non-streaming: the send returns the task at once'})`, async () => {
    const p = await peer({ streaming });
    const r = await rig();
    const run = await r.engine.start(WorkflowSpec.fromString(flow(p.url, { streaming })), { trigger: { question: 'q', mode: 'hang' } });
    const taskId = await p.hanging;
    // the agent has seen the A2A task (its id is in the run's log) before the run is cancelled
    await r.waitFor('task.agent_event');
    expect(r.events.find((e) => e.type === 'task.agent_event')).toMatchObject({ kind: 'a2a.task', data: { task_id: taskId } });
    await run.cancel('enough');
    const result = await run.result();
    expect(result.status).toBe('cancelled');
    // the agent sends CancelTask when its attempt is aborted and does not wait for it (its own limit is 5 s):
    // the run ends first, and the peer hears of it when it does; poll's default 1 s is less than that limit
    await expect.poll(() => p.cancelled, { timeout: 10_000 }).toContain(taskId);
  });
  }

  test('an unreachable agent fails the attempt with A2AUnavailable (retryable), not a crash', async () => {
    const p = await peer();
    const url = p.url;
    await p.close();
    const r = await rig();
    const text = flow(url).replace('outputs: {answer: string}', 'outputs: {answer: string}\n    retry: {max_attempts: 1}');
    const result = await r.engine.run(WorkflowSpec.fromString(text), { trigger: { question: 'q', mode: 'plain' } });
    expect(result.status).toBe('failed');
    expect(result.phases['ask']!.error?.code).toBe('A2AUnavailable');
    // why, not only `fetch failed`: the connection was refused
    expect(result.phases['ask']!.error?.message).toMatch(/fetch failed: connect ECONNREFUSED/);
  });

  for (const sent of ['a wrong token', 'no token']) {
    test(`a peer that answers 401 to ${sent} fails the attempt for good (A2AAuthFailed, not retried)`, async () => {
      const p = await peer({ token: 'right' });
      const r = await rig();
      let text = flow(p.url).replace('outputs: {answer: string}', 'outputs: {answer: string}\n    retry: {max_attempts: 3, backoff: constant, initial_delay_ms: 1}');
      if (sent === 'a wrong token') text = text.replace(`url: "${p.url}"`, `url: "${p.url}", token_env: BATON_TEST_A2A_TOKEN`);
      process.env['BATON_TEST_A2A_TOKEN'] = 'wrong';
      try {
        const result = await r.engine.run(WorkflowSpec.fromString(text), { trigger: { question: 'q', mode: 'plain' } });
        expect(result.status).toBe('failed');
        expect(result.phases['ask']!.attempts).toBe(1);
        expect(result.phases['ask']!.error).toMatchObject({ code: 'A2AAuthFailed', retryable: false });
        expect(result.phases['ask']!.error?.message).toMatch(sent === 'a wrong token' ? /HTTP 401: the token in BATON_TEST_A2A_TOKEN was refused/ : /HTTP 401: no token was sent/);
        expect(p.refused).toBe(1);
      } finally {
        delete process.env['BATON_TEST_A2A_TOKEN'];
      }
    });
  }

  test('on PostgreSQL too', async () => {
    const db = testDatabase('baton_a2a');
    await db.create();
    open.push(() => db.drop());
    const p = await peer();
    const r = await rig(db.url);
    const result = await r.engine.run(WorkflowSpec.fromString(flow(p.url)), { trigger: { question: 'pg', mode: 'plain' } });
    expect(result.status).toBe('completed');
    expect(result.phases['ask']!.output).toEqual({ answer: 'pg!' });
  });
});
