/**
 * Real workflow files written by others (a copy of ../shared/corpus, see fixtures/corpus/SOURCE.md),
 * every example of the spec documents, and the bundled examples must compile without errors; every
 * corpus workflow must run to completion with stub agents.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runWorkflow } from '../src/api/run.js';
import { loadWorkflow, parseWorkflow } from '../src/workflow/compile.js';
import { SourceFile } from '../src/diagnostics/source.js';

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

/** Each diagnostic of `text` as `CODE LINE:COL`. */
function reported(text: string): string[] {
  const src = new SourceFile('w.yaml', text);
  return parseWorkflow(text).diagnostics.map((d) => {
    const p = d.range ? src.position(d.range[0]) : { line: 0, column: 0 };
    return `${d.severity} ${d.code} ${p.line}:${p.column}`;
  });
}

describe('the mistakes users make in corpus files', () => {
  for (const f of corpusFiles) {
    const name = f.split('/').at(-1)!;
    const text = readFileSync(f, 'utf8');
    const lines = text.split('\n');
    // the `assign:` lines (never a phase's first key in the corpus)
    const assigns = lines.flatMap((l, i) => (/^ {4}assign: /.test(l) ? [i] : []));
    test(`a tab in an indentation is one error, at the tab: ${name}`, () => {
      const at = assigns.at(-1)!;
      const mutated = lines.map((l, i) => (i === at ? `\t${l.trimStart()}` : l)).join('\n');
      expect(reported(mutated).filter((d) => d.startsWith('error'))).toEqual([`error yaml-syntax ${at + 1}:1`]);
    });
    test(`a phase pasted under the name of the phase it depends on: the duplicate, and a cycle that says why: ${name}`, () => {
      const r0 = parseWorkflow(text);
      const last = r0.model!.phases.at(-1)!;
      const dep = last.dependsOn[0]!;
      const at = lines.indexOf(`  ${last.name}:`);
      const mutated = lines.map((l, i) => (i === at ? `  ${dep}:` : l)).join('\n');
      const errors = parseWorkflow(mutated).diagnostics.filter((d) => d.severity === 'error');
      expect(errors.map((d) => d.code)).toEqual(['duplicate-key', 'dependency-cycle']);
      expect(errors[1]!.hint).toBe(`phase \`${dep}\` is defined twice, and the last definition, the one read, depends on \`${dep}\`: rename one of them`);
    });
    test(`a phase name without its colon, and a key without the space after it: one error each, with the fix: ${name}`, () => {
      const phases = parseWorkflow(text).model!.phases;
      const at = lines.indexOf(`  ${phases.at(-1)!.name}:`);
      const glued = assigns[0]!;
      const mutated = lines.map((l, i) => (i === at ? l.replace(/:$/, '') : i === glued ? l.replace(': ', ':') : l)).join('\n');
      const errors = parseWorkflow(mutated).diagnostics.filter((d) => d.severity === 'error');
      expect(reported(mutated).filter((d) => d.startsWith('error'))).toEqual([`error yaml-syntax ${glued + 1}:5`, `error yaml-syntax ${at + 1}:3`]);
      expect(errors.map((d) => d.hint)).toEqual([`write \`${lines[glued]!.trim()}\``, `the fields below it belong to a key: write \`${phases.at(-1)!.name}:\``]);
    });
    test(`a tab, and a key indented one space too far: two errors, each at its place: ${name}`, () => {
      const [first, last] = [assigns[0]!, assigns.at(-1)!];
      const mutated = lines.map((l, i) => (i === first ? ` ${l}` : i === last ? `  \t  ${l.trimStart()}` : l)).join('\n');
      expect(reported(mutated).filter((d) => d.startsWith('error'))).toEqual([`error yaml-syntax ${first + 1}:6`, `error yaml-syntax ${last + 1}:3`]);
    });
  }
});
