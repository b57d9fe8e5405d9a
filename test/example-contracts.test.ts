/**
 * The contracts example end to end: it checks clean, its generated types are current and type-check
 * its agents module (which imports the package by name), and it runs with those agents.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import { runWorkflow } from '../src/api/run.js';
import { WorkflowSpec } from '../src/api/spec.js';
import type { CliIo } from '../src/cli/io.js';
import { run } from '../src/cli/main.js';
import type { AgentHandler } from '../src/engine/agent.js';
import { loadWorkflow } from '../src/workflow/compile.js';
import { generateTypes } from '../src/workflow/contract/typegen.js';

const dir = join(import.meta.dirname, '..', 'examples', 'paper-contracts');
const io = (): CliIo & { out: () => string } => {
  let out = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (out += s), isTTY: false, cwd: dir, env: {}, out: () => out };
};

describe('examples/paper-contracts', () => {
  test('baton check: no errors; with agents.ts (which run loads) one warning, the editor\'s `minLength` checked only at run time; the contract files check on their own', async () => {
    const a = io();
    expect(await run(['check', 'workflow.yaml', '--json'], a)).toBe(0);
    const doc = JSON.parse(a.out()) as { bindings: { phase: string; contract: string }[]; diagnostics: { code: string; line: number; column: number }[] };
    expect(doc.bindings.find((b) => b.phase === 'edit')?.contract).toBe('typescript');
    expect(doc.diagnostics.map((d) => `${d.code} ${d.line}:${d.column}`)).toEqual(['schema-not-comparable 65:14']);
    expect(await run(['check', '--contracts', 'contracts'], io())).toBe(0);
  });

  test('workflow.types.ts is what `baton types` generates today', async () => {
    const r = await loadWorkflow(join(dir, 'workflow.yaml'));
    expect(readFileSync(join(dir, 'workflow.types.ts'), 'utf8')).toBe(generateTypes(r.model!, { source: 'examples/paper-contracts/workflow.yaml' }));
  });

  test('agents.ts type-checks against the generated types', () => {
    const program = ts.createProgram([join(dir, 'agents.ts')], {
      strict: true,
      exactOptionalPropertyTypes: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      skipLibCheck: true,
      baseUrl: join(dir, '..', '..'),
      paths: { '@baton-run/baton': ['src/index.ts'] },
      types: ['node'],
      typeRoots: [join(dir, '..', '..', 'node_modules', '@types')],
    });
    const errors = ts.getPreEmitDiagnostics(program).map((d) => `${d.file?.fileName.split('/').pop() ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
    expect(errors).toEqual([]);
  }, 60_000);

  test('runs end to end with its agents', async () => {
    // a computed specifier: the project's tsc does not follow it (the example imports the package by name)
    const agents = ((await import(join(dir, 'agents.ts'))) as { default: Record<string, AgentHandler> }).default;
    const spec = WorkflowSpec.fromYaml(join(dir, 'workflow.yaml'));
    const r = await runWorkflow(spec, { agents, trigger: JSON.parse(readFileSync(join(dir, 'trigger.json'), 'utf8')) as Record<string, string> });
    expect(r.phases['edit']?.error).toBeUndefined();
    expect(r.status).toBe('completed');
    // the first attempt saved two paragraphs and timed out; the retry continued from its checkpoint
    const ws = r.phases['write-section']!;
    expect(ws).toMatchObject({ status: 'partial', attempts: 2, output: { completionStatus: 'partial', uncertainAreas: ['results: no data yet'] } });
    expect(r.events.filter((e) => e.type === 'task.attempt_failed' && e.phase === 'write-section').map((e) => (e.type === 'task.attempt_failed' ? e.failure.code : ''))).toEqual(['Timeout']);
    expect(r.events.filter((e) => e.type === 'task.checkpoint').map((e) => (e.type === 'task.checkpoint' ? e.attempt : 0))).toEqual([1, 1]);
    expect(r.phases['flag-gaps']?.output).toEqual({ todo: ['fill in results: no data yet'] });
    const draft = '\\section{introduction} On colour perception. introduction: smith2020, lee2021. method: smith2020, lee2021';
    expect(r.phases['edit']?.output).toEqual({ final: draft, words: 10 });
    // the declared section file was written and recorded as provenance
    expect(readFileSync(join(dir, 'output-drafts', 'sections', 'introduction.tex'), 'utf8')).toBe(draft + '\n');
    const files = r.events.flatMap((e) => (e.type === 'task.agent_event' && (e.kind === 'file_read' || e.kind === 'file_written') ? [`${e.phase} ${e.kind} ${String(e.data['path'])}`] : []));
    expect(files).toEqual(['write-section file_written output-drafts/sections/introduction.tex', 'edit file_read output-drafts/sections/introduction.tex']);
  });
});
