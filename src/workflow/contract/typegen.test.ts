/**
 * `baton types` output is checked by the real TypeScript compiler: a correct handler compiles; a
 * handler that reads a key the workflow does not wire, returns the wrong shape, or names an agent
 * the workflow does not have, fails `tsc` with the expected error.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import { parseWorkflow } from '../compile.js';
import { generateTypes } from './typegen.js';

const WORKFLOW = `
openintent: "1.0"
info: {name: typed}
types:
  Finding: {source: string, confidence: number}
agents:
  drafter:
    x-contract:
      output: {schema: {type: object, required: [draft], properties: {draft: {type: string}, notes: {type: array, items: {type: string}}}}}
workflow:
  research:
    assign: researcher
    inputs: {topic: $trigger.topic}
    outputs: {findings: "Finding[]", level: {enum: [low, high]}, note: {type: string, required: false}}
  draft:
    assign: drafter
    depends_on: [research]
    inputs: {findings: research.findings, level: research.level}
`;

const agentModule = resolve(import.meta.dirname, '..', '..', 'engine', 'agent.js');

function compileHandlers(handlers: string): string[] {
  const model = parseWorkflow(WORKFLOW).model!;
  const dir = mkdtempSync(join(tmpdir(), 'baton-types-'));
  writeFileSync(join(dir, 'workflow.types.ts'), generateTypes(model, { batonModule: agentModule }));
  writeFileSync(join(dir, 'agents.ts'), `import { defineHandlers } from './workflow.types.js';\nexport default defineHandlers(${handlers});\n`);
  const program = ts.createProgram([join(dir, 'agents.ts')], {
    strict: true,
    exactOptionalPropertyTypes: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    skipLibCheck: true,
    types: [],
  });
  return ts.getPreEmitDiagnostics(program).map((d) => `TS${d.code} ${d.file ? d.file.fileName.split('/').pop() : ''}`);
}

const GOOD = `{
  researcher: (ctx) => ({ findings: [{ source: String(ctx.input.topic), confidence: 0.9 }], level: 'low' }),
  drafter: async (ctx) => ({ draft: ctx.input.findings.map((f) => f.source).join(', ') + ctx.input.level }),
}`;

describe('baton types', () => {
  test('the generated module names every phase, and a correct handler compiles', () => {
    const text = generateTypes(parseWorkflow(WORKFLOW).model!);
    expect(text).toContain('export type Finding = { source: string; confidence: number };');
    expect(text).toContain('export type ResearchOutput = { findings: Finding[]; level: "low" | "high"; note?: string };');
    expect(text).toContain('export type DraftInput = { findings: Finding[]; level: "low" | "high" };');
    expect(text).toContain('export type DraftOutput = { draft: string; notes?: string[] };');
    expect(compileHandlers(GOOD)).toEqual([]);
  }, 30_000);

  test('phase names that differ only in punctuation get distinct type names', () => {
    const text = generateTypes(parseWorkflow('openintent: "1.0"\ninfo: {name: x}\nworkflow:\n  write-section: {assign: a}\n  write--section: {assign: a}\n').model!);
    expect(text).toContain('export type WriteSectionInput');
    expect(text).toContain('export type WriteSection2Input');
  });

  test('reading a key the workflow does not wire fails tsc', () => {
    expect(compileHandlers(GOOD.replace('ctx.input.level }', 'ctx.input.outline }'))).toEqual(['TS2339 agents.ts']);
  }, 30_000);

  test('returning the wrong shape fails tsc', () => {
    expect(compileHandlers(GOOD.replace("level: 'low'", "level: 'medium'"))).toEqual(['TS2322 agents.ts']);
    expect(compileHandlers(GOOD.replace('({ draft:', '({ drafts:'))).not.toEqual([]);
  }, 30_000);

  test('a handler for an agent the workflow does not have fails tsc', () => {
    expect(compileHandlers(GOOD.replace('researcher:', 'researchr:'))).not.toEqual([]);
  }, 30_000);
});
