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
const typedModule = resolve(import.meta.dirname, '..', '..', 'api', 'typed.js');

function compileHandlers(handlers: string): string[] {
  return compile(`import { defineHandlers } from './workflow.types.js';\nexport default defineHandlers(${handlers});\n`);
}

/** Type-checks `agents.ts` (the program) beside the generated module of `workflow`; the diagnostics as `TSnnnn file`. */
function compile(program: string, workflow = WORKFLOW): string[] {
  const model = parseWorkflow(workflow).model!;
  const dir = mkdtempSync(join(tmpdir(), 'baton-types-'));
  writeFileSync(join(dir, 'workflow.types.ts'), generateTypes(model, { batonModule: agentModule }));
  writeFileSync(join(dir, 'agents.ts'), program);
  return check(join(dir, 'agents.ts'));
}

function check(file: string): string[] {
  const program = ts.createProgram([file], {
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

  test('a phase without required outputs may return nothing (RFC-0024 §9); one with them may not', () => {
    const wf = 'openintent: "1.0"\ninfo: {name: x}\nworkflow:\n  notify: {assign: n}\n  soft: {assign: s, outputs: {k: {type: string, required: false}}}\n  hard: {assign: h, outputs: {k: string}}\n';
    const program = (h: string): string => `import { defineHandlers } from './workflow.types.js';\nexport default defineHandlers({ n: () => {}, s: async () => undefined, h: ${h} });\n`;
    expect(compile(program("() => ({ k: 'x' })"), wf)).toEqual([]);
    expect(compile(program('() => {}'), wf)).toEqual(['TS2322 agents.ts']);
  }, 30_000);

  test('a handler for an agent the workflow does not have fails tsc', () => {
    // TS2322 names the id; its handler then has no context type (TS7006 under strict)
    expect(compileHandlers(GOOD.replace('researcher:', 'researchr:'))).toEqual(['TS2322 agents.ts', 'TS7006 agents.ts']);
  }, 30_000);
});

describe('baton types: AIP-16 files', () => {
  const FILES = `
openintent: "1.0"
info: {name: files}
x-trigger: {names: "string[]"}
agents:
  reader:
    inputsFiles: {notes: {path: notes.md}}
workflow:
  read:
    assign: reader
  draft:
    assign: writer
    depends_on: [read]
    for_each: $trigger.names
    inputs: {name: $item}
    outputsFiles: {text: {path: "out/<index>.md"}}
    outputs: {ok: boolean}
  plain:
    assign: other
    inputs: {name: $trigger.names}
`;
  test('a phase with files (its own or its agent\'s) has `_workflowFsRoot: string` in its input: a handler may read it', () => {
    const text = generateTypes(parseWorkflow(FILES).model!);
    expect(text).toContain('export type ReadInput = { _workflowFsRoot: string };');
    expect(text).toContain('export type DraftInput = { name: string; _workflowFsRoot: string };');
    expect(text).toContain('export type PlainInput = { name: string[] };');
    const handlers = `{
  reader: (ctx) => (void ctx.input._workflowFsRoot.length, {}),
  writer: (ctx) => ({ ok: ctx.input._workflowFsRoot.length > 0 && ctx.input.name !== '' }),
  other: (ctx) => ({ n: ctx.input.name.length }),
}`;
    expect(compile(`import { defineHandlers } from './workflow.types.js';\nexport default defineHandlers(${handlers});\n`, FILES)).toEqual([]);
  }, 30_000);
});

describe('baton types: a fan-out phase types ctx.item', () => {
  const FAN = `
openintent: "1.0"
info: {name: fan}
types:
  Section: {name: string, words: number}
x-trigger: {sections: "Section[]", tags: "string[]"}
workflow:
  write:
    assign: writer
    for_each: $trigger.sections
    outputs: {text: string}
  tag:
    assign: writer
    for_each: $trigger.tags
    outputs: {text: string}
  sum:
    assign: summer
    depends_on: [write]
    inputs: {texts: write.text}
    outputs: {n: number}
`;
  const program = (writer: string): string =>
    `import { defineHandlers } from './workflow.types.js';\nexport default defineHandlers({\n  writer: ${writer},\n  summer: (ctx) => ({ n: ctx.input.texts.length + (ctx.item === undefined ? 0 : 1) }),\n});\n`;

  test('ctx.item.value is the element type of the array the phase fans out over', () => {
    const text = generateTypes(parseWorkflow(FAN).model!);
    expect(text).toContain('export type WriteItem = Section;');
    expect(text).toContain('export type TagItem = string;');
    expect(text).toContain('write: { agent: "writer"; input: WriteInput; output: WriteOutput; item: { readonly index: number; readonly value: WriteItem } };');
    expect(text).toContain('sum: { agent: "summer"; input: SumInput; output: SumOutput; item: undefined };');
    const good = `(ctx) => ({ text: ctx.phase === 'write' ? ctx.item.value.name.toUpperCase() + ctx.item.value.words.toFixed(0) : ctx.item.value.toUpperCase() + ctx.item.index })`;
    expect(compile(program(good), FAN)).toEqual([]);
  }, 30_000);

  test('a key the element does not have fails tsc', () => {
    expect(compile(program(`(ctx) => ({ text: ctx.phase === 'write' ? ctx.item.value.title : '' })`), FAN)).toEqual(['TS2339 agents.ts']);
  }, 30_000);
});

describe('baton types: a workflow type named like a generated one', () => {
  // one workflow per name; its handler returns the workflow's type, and the file's API (Workflow,
  // Handlers, Trigger, ...) is the generated one whatever the workflow names its types
  const collides = (name: string): string => `
openintent: "1.0"
info: {name: collide}
types:
  ${name}: {title: string}
workflow:
  research:
    assign: researcher
    inputs: {topic: $trigger.topic}
    outputs: {findings: ${name}}
`;
  const program = `import type { AgentsOption, WorkflowTypes } from ${JSON.stringify(typedModule)};
import { defineHandlers, type Handler, type Handlers, type Phases, type PhaseContext, type AgentPhases, type Trigger, type Workflow } from './workflow.types.js';
const handlers = defineHandlers({ researcher: (ctx) => ({ findings: { title: String(ctx.input.topic) } }) });
const typed: Handlers = handlers;
const one: Handler<'researcher'> = handlers.researcher;
const trigger: Trigger = { topic: 1 };
const phase: keyof Phases = 'research';
const agent: keyof AgentPhases = 'researcher';
type Ctx = PhaseContext<'research'>['input']['topic'];
const workflow: Workflow['trigger'] = trigger;
export const agents: AgentsOption<Workflow> = handlers;
export type Ok = Workflow extends WorkflowTypes ? Ctx : never;
export const all = [typed, one, phase, agent, workflow];
`;
  const names = ['Trigger', 'Workflow', 'Phases', 'Handlers', 'Handler', 'AgentPhases', 'PhaseContext', 'AgentContext'];

  test.each(names)('%s: the file compiles, the generated names keep their meaning, the workflow type is renamed (or the import is)', (name) => {
    const text = generateTypes(parseWorkflow(collides(name)).model!, { batonModule: agentModule });
    const renamed = name === 'AgentContext' ? name : `${name}Type`;
    expect(text).toContain(`export type ${renamed} = { title: string };`);
    expect(text).toContain(`export type ResearchOutput = { findings: ${renamed} };`);
    if (name === 'AgentContext') expect(text).toContain('import type { AgentContext as BatonAgentContext } from');
    const dir = mkdtempSync(join(tmpdir(), 'baton-types-'));
    writeFileSync(join(dir, 'workflow.types.ts'), text);
    writeFileSync(join(dir, 'agents.ts'), program);
    expect(checkProgram([join(dir, 'workflow.types.ts'), join(dir, 'agents.ts')]).map((d) => `TS${d.code} ${d.file?.fileName.split('/').pop() ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`)).toEqual([]);
  }, 60_000);

  test('a workflow type named like the renamed one is numbered; no two declarations share a name', () => {
    const text = generateTypes(parseWorkflow(collides('Workflow').replace('types:', 'types:\n  WorkflowType: {n: number}').replace('outputs: {findings: Workflow}', 'outputs: {findings: Workflow, n: WorkflowType}')).model!);
    expect(text).toContain('export type WorkflowType = { n: number };');
    expect(text).toContain('export type WorkflowType2 = { title: string };');
    const declared = [...text.matchAll(/^export (?:type|interface|function) (\w+)/gm)].map((m) => m[1]);
    expect(new Set(declared).size).toBe(declared.length);
  });
});

describe('createEngine<Workflow>: the agents option and the trigger checked at compile time', () => {
  // createEngine's and start()'s signatures over api/typed.ts (the engine's sources take half a minute to check;
  // the packed package is checked whole by test/consumer.test.ts)
  const program = (agents: string, trigger: string): string => `import type { AgentsOption, AnyWorkflow, TriggerOf, WorkflowTypes } from ${JSON.stringify(typedModule)};
import { defineHandlers, type Workflow } from './workflow.types.js';
declare function createEngine<W extends WorkflowTypes = AnyWorkflow>(opts: { agents?: AgentsOption<W> }): { start(spec: object, opts?: { trigger?: TriggerOf<W> }): void };
const engine = createEngine<Workflow>({ agents: ${agents} });
export const run = (m: object) => engine.start(m, { trigger: ${trigger} });
export const untyped = createEngine({ agents: defineHandlers(${GOOD}) });
`;

  test('ids, outputs and the trigger: right ones compile, wrong ones fail tsc; an untyped engine takes typed handlers', () => {
    const declared = WORKFLOW.replace('types:', 'x-trigger: {topic: string, depth: {type: integer, required: false}}\ntypes:');
    // one program (the engine's sources are checked once), a file per case; the generated module of `declared` types `topic` as a string
    const dir = mkdtempSync(join(tmpdir(), 'baton-types-'));
    writeFileSync(join(dir, 'workflow.types.ts'), generateTypes(parseWorkflow(declared).model!, { batonModule: agentModule }));
    const cases: Record<string, string> = {
      good: program(GOOD, "{ topic: 'tides' }"),
      goodDefined: program(`defineHandlers(${GOOD})`, "{ topic: 'tides', depth: 2 }"),
      misspelled: program(GOOD.replace('drafter:', 'drafterr:'), "{ topic: 'x' }"),
      wrongOutput: program(GOOD.replace('({ draft:', '({ drafts:'), "{ topic: 'x' }"),
      wrongTriggerKey: program(GOOD, "{ topc: 'x' }"),
      wrongTriggerType: program(GOOD, '{ topic: 3 }'),
    };
    for (const [name, text] of Object.entries(cases)) writeFileSync(join(dir, `${name}.ts`), text);
    const byFile = new Map<string, string[]>(Object.keys(cases).map((n) => [`${n}.ts`, []]));
    for (const d of checkProgram(Object.keys(cases).map((n) => join(dir, `${n}.ts`)))) {
      const f = d.file?.fileName.split('/').pop() ?? '';
      byFile.get(f)?.push(`TS${d.code}`);
    }
    expect(Object.fromEntries(byFile)).toEqual({
      'good.ts': [],
      'goodDefined.ts': [],
      // TS2561 "did you mean 'drafter'"; the misspelled handler's parameters are then untyped (TS7006)
      'misspelled.ts': ['TS2561', 'TS7006', 'TS7006'],
      'wrongOutput.ts': ['TS2322'],
      'wrongTriggerKey.ts': ['TS2561'],
      'wrongTriggerType.ts': ['TS2322'],
    });
  }, 60_000);

  test('Trigger: x-trigger when declared, else the keys $trigger.* inputs read', () => {
    const declared = WORKFLOW.replace('types:', 'x-trigger: {topic: string, depth: {type: integer, required: false}}\ntypes:');
    expect(generateTypes(parseWorkflow(declared).model!)).toContain('export type Trigger = { topic: string; depth?: number };');
    expect(generateTypes(parseWorkflow(WORKFLOW).model!)).toContain('export type Trigger = { topic: unknown };');
    const nested = 'openintent: "1.0"\ninfo: {name: x}\nworkflow:\n  a: {assign: a, inputs: {q: $trigger.req.q, id: $trigger.req.id, toString: $trigger.toString}}\n';
    expect(generateTypes(parseWorkflow(nested).model!)).toContain('export type Trigger = { req: { q: unknown; id: unknown }; toString: unknown };');
    expect(generateTypes(parseWorkflow('openintent: "1.0"\ninfo: {name: x}\nworkflow:\n  a: {assign: a}\n').model!)).toContain('export type Trigger = unknown;');
  });
});

function checkProgram(files: string[]): readonly ts.Diagnostic[] {
  const program = ts.createProgram(files, {
    strict: true,
    exactOptionalPropertyTypes: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2023.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    skipLibCheck: true,
    types: ['node'],
    typeRoots: [resolve(import.meta.dirname, '..', '..', '..', 'node_modules', '@types')],
  });
  return ts.getPreEmitDiagnostics(program);
}
