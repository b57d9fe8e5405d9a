import { describe, expect, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { rerunFromPhase, rerunRefusals } from './scenarios.js';

const memory = () => new MemoryStore();

describe('rerun (memory store)', () => {
  test('reuses upstream outputs and reruns only the phase and its descendants; keeps trigger and initial state', () => rerunFromPhase(memory));
  test('an unknown phase or run is refused', () => rerunRefusals(memory));
});

describe('rerun and auto-approve (memory store)', () => {
  const GATED = `openintent: "1.0"
info: {name: gated}
workflow:
  a: {assign: w, outputs: {n: number}}
  b: {assign: w, depends_on: [a], x-require_approval: {}, outputs: {n: number}}
`;

  test('a rerun approves its gates as the first run did; `autoApprove: false` makes it ask', async () => {
    const { createEngine, WorkflowSpec } = await import('../../src/index.js');
    const store = new MemoryStore();
    const engine = createEngine({ store, agents: { w: () => ({ n: 1 }) } });
    try {
      const first = await engine.run(WorkflowSpec.fromString(GATED), { autoApprove: true });
      expect(first.status).toBe('completed');
      // inherited: approved again at once
      const again = await engine.drive(await engine.rerun(first.runId, 'b'), undefined);
      expect(again.status).toBe('completed');
      expect(again.events.filter((e) => e.type === 'gate.decided').map((e) => (e as { by: string }).by)).toEqual(['auto-approve']);
      // turned off: the gate waits for a decision (the old code approved it regardless)
      const asking = await engine.rerun(first.runId, 'b', { autoApprove: false });
      const driven = engine.drive(asking, undefined);
      for (let i = 0; i < 200 && (await store.run(asking))?.status !== 'waiting'; i++) await new Promise((r) => setTimeout(r, 10));
      expect((await store.run(asking))?.status).toBe('waiting');
      await engine.approve(asking, 'approve-b', 'alice');
      const done = await driven;
      expect(done.status).toBe('completed');
      expect(done.events.filter((e) => e.type === 'gate.decided').map((e) => (e as { by: string }).by)).toEqual(['alice']);
    } finally {
      await engine.close();
    }
  });
});
