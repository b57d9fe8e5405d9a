/** Provenance of the files an inline `x-contract` declares, recorded for an in-process agent through a whole run. */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { runWorkflow } from '../src/api/run.js';
import { WorkflowSpec } from '../src/api/spec.js';

const spec = WorkflowSpec.fromString(`
openintent: "1.0"
info: {name: provenance}
agents:
  writer:
    x-contract:
      sideEffects:
        filesWritten: [{path: "out/{name}.txt"}]
        filesRead: [{path: "in/*.md"}]
workflow:
  write:
    assign: writer
    inputs: {name: $trigger.name}
`);

let ws: string;
beforeEach(() => {
  ws = mkdtempSync(join(tmpdir(), 'baton-prov-e2e-'));
  mkdirSync(join(ws, 'in'));
  writeFileSync(join(ws, 'in', 'a.md'), 'alpha');
  writeFileSync(join(ws, 'in', 'b.md'), 'beta');
});
afterEach(() => rmSync(ws, { recursive: true, force: true }));

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

describe('provenance of declared files', () => {
  test('reads and writes are recorded as task.agent_event after the attempt', async () => {
    const r = await runWorkflow(spec, {
      cwd: ws,
      trigger: { name: 'report' },
      agents: {
        writer: (ctx) => {
          mkdirSync(join(ws, 'out'), { recursive: true });
          writeFileSync(join(ws, 'out', `${ctx.input['name'] as string}.txt`), 'done');
          return { ok: true };
        },
      },
    });
    expect(r.phases['write']?.status).toBe('completed');
    const files = r.events.flatMap((e) => (e.type === 'task.agent_event' && (e.kind === 'file_read' || e.kind === 'file_written') ? [{ phase: e.phase, kind: e.kind, data: e.data }] : []));
    expect(files).toEqual([
      { phase: 'write', kind: 'file_read', data: { path: 'in/a.md', sha256: sha('alpha'), size: 5, declared: 'in/*.md' } },
      { phase: 'write', kind: 'file_read', data: { path: 'in/b.md', sha256: sha('beta'), size: 4, declared: 'in/*.md' } },
      { phase: 'write', kind: 'file_written', data: { path: 'out/report.txt', sha256: sha('done'), size: 4, declared: 'out/{name}.txt' } },
    ]);
  });

  test('an output the agent did not write: a DeclaredFileMissing warning, and the phase still completes', async () => {
    const r = await runWorkflow(spec, { cwd: ws, trigger: { name: 'report' }, agents: { writer: () => ({ ok: true }) } });
    expect(r.phases['write']?.status).toBe('completed');
    const warnings = r.events.flatMap((e) => (e.type === 'task.warning' ? [{ code: e.code, details: e.details }] : []));
    expect(warnings).toEqual([{ code: 'DeclaredFileMissing', details: { path: 'out/{name}.txt' } }]);
    const written = r.events.filter((e) => e.type === 'task.agent_event' && e.kind === 'file_written');
    expect(written).toEqual([]);
  });
});
