import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { loadWorkflow, parseWorkflow } from '../compile.js';
import { SchemaCompiler } from '../json-schema.js';
import { patternsOverlap } from './patterns.js';
import { loadContractFile } from './load.js';
import { parseDuration } from './shape.js';
import { compareVersions } from './version.js';

const fixtures = join(import.meta.dirname, '..', '..', '..', 'test', 'fixtures', 'contracts');
const codes = (text: string): string[] => parseWorkflow(text).diagnostics.map((d) => `${d.severity} ${d.code} ${d.path.join('.')}`);

describe('agent contracts: the model', () => {
  test("the spec's contract file reads into the model", () => {
    const r = loadContractFile(join(fixtures, 'contracts', 'section-drafter.yaml'), new SchemaCompiler());
    expect(r.diagnostics).toEqual([]);
    if (!r.ok) throw new Error('expected a contract');
    const c = r.contract; // narrowed on ok
    expect(c.agentId).toBe('section-drafter');
    expect(c.workflowStep).toBe('write-section');
    expect(c.input?.schema['required']).toEqual(['sectionName', 'outline', 'research']);
    expect(c.output?.at).toEqual({ file: r.file, path: ['output', 'schema'] });
    // the spec writes `required` beside `schema`: it is the schema's `required`
    expect(c.output?.schema['required']).toEqual(['draftContent', 'completionStatus']);
    expect(c.sideEffects.filesWritten.map((f) => f.path)).toEqual(['output-drafts/sections/{sectionName}.tex', 'memory/section-status.yaml']);
    expect(c.sideEffects.filesRead).toHaveLength(2);
    expect(c.resources).toEqual({ estimatedTime: '5-15 minutes', estimatedMs: { min: 300_000, max: 900_000 }, tokenBudget: 8000, memoryRequired: 'standard' });
    expect(c.errorHandling).toEqual({
      onInputValidationFailure: { action: 'reject', message: 'Invalid input: {validationErrors}' },
      onPartialCompletion: { action: 'return_partial', requiresFlags: ['uncertainAreas'] },
      onTimeout: { action: 'checkpoint_and_retry', maxRetries: 2 },
      onAgentFailure: { action: 'escalate_to_user' },
    });
    expect(c.compatibility).toMatchObject({ minAgentVersion: '1.0.0', requiresContext: ['outline', 'research'], providesContext: ['draftContent', 'citations'] });
  });

  test('a workflow binds it: the agent carries the contract, the report has a verdict per binding and edge', async () => {
    const r = await loadWorkflow(join(fixtures, 'workflow.yaml'));
    const b = r.contracts!.bindings.find((x) => x.phase === 'write-section')!;
    expect(b).toMatchObject({ agent: 'section-drafter', contract: 'file', output: 'compatible' });
    expect(b.input).toBe('may-fail'); // sectionName comes from the (untyped) trigger
    expect(r.contracts!.edges).toEqual([{ from: 'outline', to: 'write-section', keys: ['outline', 'research'], verdict: 'compatible' }]);
  });

  test('an empty contract file is reported at 1:1', () => {
    const r = loadContractFile(join(fixtures, 'contracts', 'empty.yaml'), new SchemaCompiler());
    expect(r.diagnostics.map((d) => [d.code, d.range])).toEqual([['wrong-type', [0, 0]]]);
    expect(loadContractFile(join(fixtures, 'nope.yaml'), new SchemaCompiler())).toMatchObject({ ok: false, contract: undefined });
    expect(loadContractFile(join(fixtures, 'nope.yaml'), new SchemaCompiler()).diagnostics.map((d) => d.code)).toEqual(['file-unreadable']);
  });

  test('durations, versions', () => {
    expect(parseDuration('30s')).toEqual({ min: 30_000, max: 30_000 });
    expect(parseDuration('2 hours')).toEqual({ min: 7_200_000, max: 7_200_000 });
    expect(parseDuration('15-5 minutes')).toBeUndefined();
    expect(compareVersions('1.10.0', '1.9.9')).toBe(1);
    expect(compareVersions('1.0.0-rc.1', '1.0.0')).toBe(-1);
    expect(compareVersions('1.0', '1.0.0')).toBeUndefined();
  });

  test('versions follow SemVer 2.0.0 precedence (semver), not string order', () => {
    expect(compareVersions('1.0.0-beta.11', '1.0.0-beta.2')).toBe(1);
    expect(compareVersions('1.0.0-beta.2', '1.0.0-beta.11')).toBe(-1);
    expect(compareVersions('1.0.0-alpha', '1.0.0-alpha.1')).toBe(-1);
    expect(compareVersions('1.0.0-alpha.beta', '1.0.0-beta')).toBe(-1);
    expect(compareVersions('1.0.0-rc.1', '1.0.0-beta.11')).toBe(1);
    expect(compareVersions('1.0.0+build.2', '1.0.0+build.1')).toBe(0);
    expect(compareVersions('2.0.0', '10.0.0')).toBe(-1);
    expect(compareVersions('v1.0.0', '1.0.0')).toBeUndefined();
  });
});

describe('agent contracts: static checks', () => {
  test("an LLM blueprint's parameters_schema is the contract's input schema (one model)", () => {
    expect(
      codes(`
openintent: "1.0"
info: {name: x}
agents:
  w: {parameters_schema: {type: object, required: [code], properties: {code: {type: string}}}}
workflow:
  p: {assign: w}
`),
    ).toEqual(['error input-schema-missing workflow.p.assign']);
  });

  test('`input.required` / `output.required` beside `schema` are checked as the schema\'s own `required`', () => {
    const wf = (input: string, output: string): string => `
openintent: "1.0"
info: {name: x}
agents:
  w:
    x-contract:
      input: {schema: {type: object, properties: {code: {type: string}}}${input}}
      output: {schema: {type: object, properties: {draft: {type: string}}}${output}}
workflow:
  p: {assign: w, outputs: {draft: string}}
`;
    expect(codes(wf(', required: [code]', ''))).toEqual(['error input-schema-missing workflow.p.assign']);
    expect(codes(wf(', required: [code, kode]', ''))).toEqual(['warning unknown-key agents.w.x-contract.input.required.1', 'error input-schema-missing workflow.p.assign', 'error input-schema-missing workflow.p.assign']);
    // merged with the schema's own: both are required
    expect(parseWorkflow(wf('', ', required: [draft]')).contracts!.bindings[0]!.output).toBe('compatible');
    expect(parseWorkflow(wf('', '')).contracts!.bindings[0]!.output).toBe('may-fail');
    expect(codes(wf('', ', required: draft'))).toEqual(['error wrong-type agents.w.x-contract.output.required']);
  });

  test('a contract and a blueprint schema on one agent: the contract wins, with a warning', () => {
    expect(
      codes(`
openintent: "1.0"
info: {name: x}
agents:
  w:
    output_schema: {type: object}
    x-contract: {output: {schema: {type: object}}}
workflow:
  p: {assign: w}
`),
    ).toEqual(['warning contract-mismatch agents.w.output_schema']);
  });

  test('phases ordered by an edge never conflict, whatever they write', () => {
    expect(
      codes(`
openintent: "1.0"
info: {name: x}
agents:
  w: {x-contract: {sideEffects: {filesWritten: [out/report.md, "drafts/{section}.tex"]}}}
workflow:
  a: {assign: w}
  b: {assign: w, depends_on: [a]}
  c: {assign: w, depends_on: [b]}
`),
    ).toEqual([]);
  });

  test('path patterns: placeholders and globs are wildcards; two patterns overlap when some path matches both', () => {
    expect(patternsOverlap('drafts/{s}.tex', 'drafts/{s}.tex')).toBe(true); // two phases' values may be equal
    expect(patternsOverlap('drafts/{s}.tex', 'drafts/*.tex')).toBe(true);
    expect(patternsOverlap('out/{index}.txt', 'out/0.txt')).toBe(true);
    expect(patternsOverlap('out/{index}.txt', 'out/{index}.md')).toBe(false);
    expect(patternsOverlap('out/{index}.txt', 'out/toc.txt')).toBe(false); // an index is digits
    expect(patternsOverlap('out/{index}.txt', 'out/12.txt')).toBe(true);
    expect(patternsOverlap('out/{index}.txt', 'out/{x}.txt')).toBe(true);
    expect(patternsOverlap('a/{x}.md', 'b/{x}.md')).toBe(false);
    expect(patternsOverlap('out/{x}.md', 'out/.md')).toBe(false); // a value is never empty
    expect(patternsOverlap('out/{x}.md', 'out/a/b.md')).toBe(false); // nor spans folders
    expect(patternsOverlap('a/*.md', '*/b.md')).toBe(true); // a/b.md: no sample of either side shows it
    expect(patternsOverlap('out/**', 'out/a/b.md')).toBe(true);
    expect(patternsOverlap('out/**/x.md', 'out/x.md')).toBe(true);
    expect(patternsOverlap('out/*.md', 'out/a/b.md')).toBe(false);
    expect(patternsOverlap('out/<runId>/a.md', 'out/*/a.md')).toBe(true);
    expect(patternsOverlap('out/<runId>/a.md', 'out/x/a.md')).toBe(false);
    expect(patternsOverlap('a.md', 'b.md')).toBe(false);
    expect(patternsOverlap('out/f.md', 'out/g.md')).toBe(false); // `<phase>`, expanded
    expect(patternsOverlap('x?z', 'x/z')).toBe(false);
  });

  test('two phases that may run at once and write one `<index>` path conflict; paths templated by each phase\'s own values (`{section}`, `<item>`) are one file per value; `<phase>`, or paths that cannot meet, keep them apart', () => {
    const fanOut = (files: string): string => `
openintent: "1.0"
info: {name: x}
workflow:
  outline: {assign: a, outputs: {sections: "string[]"}}
  f: {assign: w, depends_on: [outline], for_each: outline.sections, ${files.replace(/@/g, 'f')}}
  g: {assign: w, depends_on: [outline], for_each: outline.sections, ${files.replace(/@/g, 'g')}}
`;
    expect(codes(fanOut('outputsFiles: {o: {path: "out/<index>.txt"}}'))).toEqual(['error side-effect-conflict workflow.g.assign']);
    expect(codes(fanOut('outputsFiles: {o: {path: "out/<phase>/<index>.txt"}}'))).toEqual([]);
    expect(codes(fanOut('outputsFiles: {o: {path: "@/<index>.txt"}}'))).toEqual([]);
    expect(codes(fanOut('outputsFiles: {o: {path: "out/<index>.@"}}'))).toEqual([]);
    // one reads what the other writes
    expect(codes(fanOut('inputsFiles: {i: {path: "@/<index>.txt"}}, outputsFiles: {o: {path: "@/<index>.txt"}}'))).toEqual([]);
    expect(codes(`
openintent: "1.0"
info: {name: x}
agents:
  w: {x-contract: {sideEffects: {filesWritten: ["drafts/{section}.tex"]}}}
  r: {x-contract: {sideEffects: {filesRead: ["drafts/intro.tex"]}}}
workflow:
  a: {assign: w, inputs: {section: $trigger.a}}
  b: {assign: w, inputs: {section: $trigger.b}}
  c: {assign: r}
  d: {assign: r, depends_on: [a, b]}
`)).toEqual(['error side-effect-conflict workflow.c.assign', 'error side-effect-conflict workflow.c.assign']);
    // two fan-outs over one array write the same file per item; over different arrays, a file per item's own value
    expect(codes(fanOut('outputsFiles: {o: {path: "out/<item>.txt"}}'))).toEqual(['error side-effect-conflict workflow.g.assign']);
    expect(
      codes(`
openintent: "1.0"
info: {name: x}
workflow:
  outline: {assign: a, outputs: {sections: "string[]", notes: "string[]"}}
  f: {assign: w, depends_on: [outline], for_each: outline.sections, outputsFiles: {o: {path: "out/<item>.txt"}}}
  g: {assign: w, depends_on: [outline], for_each: outline.notes, outputsFiles: {o: {path: "out/<item>.txt"}}}
`),
    ).toEqual([]);
  });

  test("a fan-out's read of a file its own items write: an error for an AIP-16 output, a warning for the agent's own file; each item's own template is no conflict", () => {
    const wf = (phase: string, agent = ''): string => `
openintent: "1.0"
info: {name: x}
agents:
  a: {}
  w: {${agent}}
workflow:
  outline: {assign: a, outputs: {sections: "string[]"}}
  f: {assign: w, depends_on: [outline], for_each: outline.sections, ${phase}}
`;
    expect(codes(wf('inputsFiles: {first: {path: "out/0.txt"}}, outputsFiles: {o: {path: "out/<index>.txt"}}'))).toEqual(['error side-effect-conflict workflow.f.inputsFiles.first']);
    expect(codes(wf('inputsFiles: {all: {path: "out/*.txt"}}, outputsFiles: {o: {path: "out/<item>.txt"}}'))).toEqual(['error side-effect-conflict workflow.f.inputsFiles.all']);
    expect(codes(wf('max_parallel: 1, inputsFiles: {first: {path: "out/0.txt"}}, outputsFiles: {o: {path: "out/<index>.txt"}}'))).toEqual([]);
    expect(codes(wf('inputsFiles: {mine: {path: "out/<index>.txt"}}, outputsFiles: {o: {path: "out/<index>.txt"}}'))).toEqual([]);
    expect(codes(wf('inputs: {s: $item}', 'x-contract: {sideEffects: {filesRead: ["drafts/*.tex"], filesWritten: ["drafts/{s}.tex"]}}'))).toEqual(['warning fan-out-shared-write workflow.f.for_each']);
    expect(codes(wf('inputs: {s: $item}', 'x-contract: {sideEffects: {filesRead: ["drafts/{s}.tex"], filesWritten: ["drafts/{s}.tex"]}}'))).toEqual([]);
  });

  test('context is provided by an upstream contract, an upstream output, or an input of that name', () => {
    expect(
      codes(`
openintent: "1.0"
info: {name: x}
agents:
  up: {x-contract: {compatibility: {providesContext: [a]}}}
  down: {x-contract: {compatibility: {requiresContext: [a, b, c]}}}
workflow:
  one: {assign: up, outputs: {b: string}}
  two: {assign: up, outputs: {x: string}}
  three: {assign: down, depends_on: [one, two], inputs: {c: two.x}}
`),
    ).toEqual([]);
  });

  test('no contract, no contract diagnostics; a matching version passes', () => {
    expect(
      codes(`
openintent: "1.0"
info: {name: x}
agents:
  w: {version: "2.1.0", x-contract: {compatibility: {minAgentVersion: "2.0.0"}}}
  v: {}
workflow:
  p: {assign: w}
  q: {assign: v, depends_on: [p], inputs: {x: p.y}}
`),
    ).toEqual([]);
  });
  test('minAgentVersion compares pre-releases by SemVer precedence', () => {
    const wf = (version: string, min: string): string => `
openintent: "1.0"
info: {name: x}
agents:
  w: {version: "${version}", x-contract: {compatibility: {minAgentVersion: "${min}"}}}
workflow:
  p: {assign: w}
`;
    expect(codes(wf('1.0.0-beta.11', '1.0.0-beta.2'))).toEqual([]);
    expect(codes(wf('1.0.0-beta.2', '1.0.0-beta.11'))).toEqual(['error agent-version-mismatch agents.w.version']);
    expect(codes(wf('1.0.0', '1.0.0-rc.3'))).toEqual([]);
  });
});
