/**
 * Numbers a caller got wrong in createEngine and start: refused at once (usage) where they used to make an
 * engine whose runs never started (concurrency NaN: `Number(process.env.X)` of an unset variable) or a run
 * that timed out before it began (timeoutMs 0) or had no deadline at all (timeoutMs NaN, dropped).
 */
import { describe, expect, test } from 'vitest';
import { createEngine } from '../../src/api/engine.js';
import { WorkflowSpec } from '../../src/api/spec.js';
import { MAX_TIMEOUT_MS } from '../../src/core/clock.js';
import { MemoryStore } from '../../src/store/memory.js';
import { parseWorkflow } from '../../src/workflow/compile.js';
import type { WorkflowModel } from '../../src/workflow/model.js';
import { header, wf } from './helpers.js';

const model = wf(`${header()}workflow:\n  a: {assign: x}`);
const usage = expect.objectContaining({ code: 'usage' }) as Error;

describe('engine options', () => {
  test.each(['concurrency', 'leaseMs', 'pollMs', 'storeRetryMs', 'abortGraceMs', 'snapshotEvery'] as const)('%s: NaN or a string is refused by createEngine', (key) => {
    for (const bad of [Number.NaN, '4']) {
      expect(() => createEngine({ store: new MemoryStore(), agents: { x: () => ({}) }, [key]: bad })).toThrow(usage);
    }
  });

  test('a run records the process that drives it (followed_by) only when this engine drives it: start and run, not create or a detached start', async () => {
    const store = new MemoryStore();
    const e = createEngine({ store, agents: { x: () => ({}) } });
    const driven = await e.start(model, { runId: 'driven' });
    await driven.result();
    await e.run(model, { runId: 'ran' });
    await e.create(model, { runId: 'created' });
    await e.start(model, { runId: 'detached', detach: true });
    const by = async (id: string): Promise<unknown> => (await store.run(id))!.options['followed_by'];
    expect(await by('driven')).toBe(e.work.id);
    expect(await by('ran')).toBe(e.work.id);
    expect(await by('created')).toBeUndefined();
    expect(await by('detached')).toBeUndefined();
    await e.close();
  });

  test('numbers out of range are still clamped where they are used: concurrency 0 runs one attempt at a time', async () => {
    const e = createEngine({ store: new MemoryStore(), agents: { x: () => ({}) }, concurrency: 0 });
    expect((await e.run(model, {})).status).toBe('completed');
    await e.close();
  });

  // 1e19: a deadline no store holds (PostgreSQL's bigint refused it as a store failure, 22003)
  test.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1e19, MAX_TIMEOUT_MS + 1])('start timeoutMs %s is refused before anything is stored', async (timeoutMs) => {
    const store = new MemoryStore();
    const e = createEngine({ store, agents: { x: () => ({}) } });
    await expect(e.run(model, { timeoutMs })).rejects.toThrow(usage);
    await expect(e.start(model, { timeoutMs })).rejects.toThrow(usage);
    expect(await store.runs()).toEqual([]);
    expect((await e.run(model, { timeoutMs: 60_000 })).status).toBe('completed');
    expect((await e.run(model, { timeoutMs: MAX_TIMEOUT_MS })).status).toBe('completed');
    await e.close();
  });
});

describe('deadlines a store holds', () => {
  test('timeout_hours past MAX_TIMEOUT_MS is an invalid-value diagnostic, at its node', () => {
    const far = MAX_TIMEOUT_MS / 3_600_000 + 1;
    const r = parseWorkflow(`${header()}governance: {timeout_hours: ${far}, access_review: {timeout_hours: 1e300}, escalation: {after_hours: 1e300}}\nworkflow:\n  a: {assign: x, x-require_approval: {approvers: [a], timeout_hours: ${far}}}`);
    expect(r.ok).toBe(false);
    expect(r.diagnostics.filter((d) => d.code === 'invalid-value').map((d) => d.path.join('.')).sort()).toEqual(['governance.access_review.timeout_hours', 'governance.escalation.after_hours', 'governance.timeout_hours', 'workflow.a.x-require_approval.timeout_hours']);
    expect(parseWorkflow(`${header()}governance: {timeout_hours: ${MAX_TIMEOUT_MS / 3_600_000}}\nworkflow:\n  a: {assign: x}`).ok).toBe(true);
  });
});

describe('what a run starts from', () => {
  test('a compile result, a file name or nothing is refused (usage), not a TypeError; a spec works', async () => {
    const store = new MemoryStore();
    const e = createEngine({ store, agents: { x: () => ({}) } });
    const compiled = parseWorkflow(`${header()}workflow:\n  a: {assign: x}`);
    const invalid = parseWorkflow(`${header()}workflow:\n  a: {assign: x, depends_on: [zz]}`);
    const said: [unknown, RegExp][] = [
      [compiled, /pass `result\.model`/],
      [invalid, /the workflow is invalid/],
      ['workflow.yaml', /workflow model.*got a string \(a path or YAML text\? compile it first\)/],
      [undefined, /got undefined/],
      [null, /got null/],
      [{}, /got object/],
    ];
    for (const [bad, message] of said) {
      await expect(e.run(bad as WorkflowModel, {}), String(bad)).rejects.toMatchObject({ code: 'usage', message: expect.stringMatching(message) as unknown });
      await expect(e.start(bad as WorkflowModel, {})).rejects.toThrow(usage);
    }
    expect(await store.runs()).toEqual([]);
    expect((await e.run(WorkflowSpec.fromString(`${header()}workflow:\n  a: {assign: x}`), {})).status).toBe('completed');
    await e.close();
  });
});
