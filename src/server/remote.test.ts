import { describe, expect, test } from 'vitest';
import { parseWorkflow } from '../workflow/compile.js';
import { RemoteAgents } from './remote.js';

const flow = (decl: string): string => `openintent: "1.0"
info: {name: t}
agents:
  r: ${decl}
workflow:
  a: {assign: r, outputs: {n: number}}
  b: {assign: q, depends_on: [a], outputs: {n: number}}
  c: {assign: z, depends_on: [a], outputs: {n: number}}
`;

describe('RemoteAgents', () => {
  test('serves the agents a workflow declares x-remote: true and those named with --remote that it uses', () => {
    const r = parseWorkflow(flow('{x-remote: true}'));
    expect(r.ok).toBe(true);
    expect(new RemoteAgents({ agents: ['q', 'unused'] }).remoteAgentsOf(r.model!).sort()).toEqual(['q', 'r']);
    expect(new RemoteAgents().remoteAgentsOf(parseWorkflow(flow('{x-remote: false}')).model!)).toEqual([]);
  });

  test('x-remote must be a boolean: a diagnostic at its path', () => {
    const r = parseWorkflow(flow('{x-remote: "yes"}'));
    expect(r.ok).toBe(false);
    expect(r.diagnostics.map((d) => [d.code, d.path])).toContainEqual(['wrong-type', ['agents', 'r', 'x-remote']]);
  });

  test('bindRun binds each remote agent to a handler; a claim with nothing queued and no wait is undefined', async () => {
    const hub = new RemoteAgents({ agents: ['q'] });
    const bound = await hub.bindRun({} as never, parseWorkflow(flow('{x-remote: true}')).model!);
    expect(Object.keys(bound).sort()).toEqual(['q', 'r']);
    expect(await hub.claim('q', () => true, 0)).toBeUndefined();
  });
});
