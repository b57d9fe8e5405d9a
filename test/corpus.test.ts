/**
 * Real workflow files written by others (a copy of ../shared/corpus, see fixtures/corpus/SOURCE.md),
 * every example of the spec documents, and the bundled examples must compile without errors; every
 * corpus workflow must run to completion with stub agents.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runWorkflow } from '../src/api/run.js';
import { loadWorkflow } from '../src/workflow/compile.js';

const corpus = join(import.meta.dirname, 'fixtures', 'corpus');
const specExamples = join(import.meta.dirname, 'fixtures', 'spec-examples');
const examples = join(import.meta.dirname, '..', 'examples');

function yamlFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => join(dir, f));
}

const corpusFiles = yamlFiles(corpus);
const files = [...corpusFiles, ...yamlFiles(specExamples), ...readdirSync(examples).filter((d) => !d.endsWith('.yaml')).map((d) => join(examples, d, 'workflow.yaml'))] // examples/broken.yaml is wrong on purpose;

describe('accepted workflows', () => {
  test('the corpus is present', () => {
    expect(corpusFiles.length).toBeGreaterThanOrEqual(8);
  });
  for (const f of files) {
    test(`compiles: ${f.split('/').slice(-2).join('/')}`, async () => {
      const r = await loadWorkflow(f);
      expect(r.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.code} ${d.message}`)).toEqual([]);
      expect(r.model).toBeDefined();
    });
  }
  for (const f of [...corpusFiles, ...yamlFiles(specExamples)]) {
    test(`runs with stub agents: ${f.split('/').slice(-2).join('/')}`, async () => {
      const r = await loadWorkflow(f);
      // a dry run still needs the run's inputs: give every `$trigger.*` / `$initial_state.*` key a value
      const trigger: Record<string, string> = {};
      const initialState: Record<string, string> = {};
      for (const p of r.model!.phases)
        for (const b of p.inputs ?? []) {
          if (b.source.kind === 'trigger') trigger[b.source.key] = 'sample';
          if (b.source.kind === 'initial_state') initialState[b.source.key] = 'sample';
        }
      const result = await runWorkflow(r.model!, { stubAgents: true, autoApprove: true, trigger, initialState });
      const notCompleted = Object.entries(result.phases).filter(([, p]) => p.status !== 'completed' && p.status !== 'skipped');
      expect(notCompleted.map(([n, p]) => `${n}: ${p.status} ${p.error?.code ?? ''} ${p.error?.message ?? ''}`)).toEqual([]);
      expect(result.status).toBe('completed');
    });
  }
});
