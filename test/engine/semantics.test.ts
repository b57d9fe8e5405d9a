/** Run-time semantics read from the specs (RFC-0024 §3, issue 3's skip rules), as a user's acceptance tests would. */
import { describe, expect, test } from 'vitest';
import { runWorkflow } from '../../src/api/run.js';
import type { AgentHandler } from '../../src/engine/agent.js';
import { MemoryStore } from '../../src/store/memory.js';
import { eventsOf, header, wf } from './helpers.js';

async function run(yaml: string, agents: Record<string, AgentHandler>) {
  return runWorkflow(wf(`${header()}${yaml}`), { agents, store: new MemoryStore() });
}

describe('skipped upstream phases', () => {
  test('a for_each over a skipped phase is skipped (upstream_skipped), not failed as unresolvable, and its dependents follow', async () => {
    const r = await run(
      `
workflow:
  outline:
    assign: x
    skip_when: "true"
    outputs: {items: "string[]"}
  draft:
    assign: x
    depends_on: [outline]
    for_each: outline.items
    inputs: {it: $item}
    outputs: {text: string}
  assemble:
    assign: x
    depends_on: [draft]
    inputs: {texts: draft.text}
  after:
    assign: x
    depends_on: [draft]
`,
      { x: () => ({ items: ['a'], text: 't' }) },
    );
    expect(r.status).toBe('completed');
    expect(eventsOf(r.events, 'task.claim_rejected')).toEqual([]);
    expect(r.phases['draft']).toMatchObject({ status: 'skipped', skipped_reason: 'upstream_skipped' });
    expect(r.phases['assemble']).toMatchObject({ status: 'skipped', skipped_reason: 'upstream_skipped' });
    // reads nothing from the skipped fan-out: runs
    expect(r.phases['after']).toMatchObject({ status: 'completed' });
  });
});
