/** Real workflow files written by others, and every example of the spec documents, must compile without errors. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { loadWorkflow } from '../src/workflow/compile.js';

const corpus = join(import.meta.dirname, '..', '..', 'shared', 'corpus', 'openintent-examples');
const specExamples = join(import.meta.dirname, 'fixtures', 'spec-examples');
const examples = join(import.meta.dirname, '..', 'examples');

function yamlFiles(dir: string): string[] {
  try {
    return readdirSync(dir).filter((f) => f.endsWith('.yaml')).map((f) => join(dir, f));
  } catch {
    return [];
  }
}

const files = [
  ...yamlFiles(corpus),
  ...yamlFiles(specExamples),
  ...readdirSync(examples).map((d) => join(examples, d, 'workflow.yaml')),
];

describe('accepted workflows', () => {
  test('the corpus is present', () => {
    expect(yamlFiles(corpus).length).toBeGreaterThanOrEqual(8);
  });
  for (const f of files) {
    test(f.split('/').slice(-2).join('/'), async () => {
      const r = await loadWorkflow(f);
      expect(r.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.code} ${d.message}`)).toEqual([]);
      expect(r.model).toBeDefined();
    });
  }
});
