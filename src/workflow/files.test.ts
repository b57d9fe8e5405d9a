/** The static side of AIP-16 files: keys, paths, tokens, merging, and the host's `_workflowFsRoot` in contract checks. */
import { describe, expect, test } from 'vitest';
import { parseWorkflow } from './compile.js';
import { escapeProblem, itemFileCollisions, keyProblem, mergeFiles, tokenKind, tokensOf } from './files.js';

describe('file contract rules', () => {
  test.each(['draft.md', 'a b', '.hidden', 'x..y'])('a key %j is a file name', (k) => expect(keyProblem(k)).toBeUndefined());
  test.each(['', '.', '..', 'a/b', 'a\\b', 'a\0b'])('a key %j is not', (k) => expect(keyProblem(k)).toBeDefined());
  test.each(['out/a.md', 'a..b/c', './x', 'x/./y', '<runId>/x'])('%j stays in the workspace', (p) => expect(escapeProblem(p)).toBeUndefined());
  test.each(['/etc/passwd', '\\x', 'C:\\x', 'c:x', '..', '../x', 'a/../../x', 'a\\..\\x'])('%j escapes', (p) => expect(escapeProblem(p)).toBeDefined());

  test('tokens', () => {
    expect(tokensOf('a/<runId>/<item.name>-<x>.md')).toEqual([
      { name: 'runId', offset: 2 },
      { name: 'item.name', offset: 10 },
      { name: 'x', offset: 22 },
    ]);
    expect(['runId', 'workflowId', 'toolId', 'isoDate', 'phase', 'attempt', 'index', 'item', 'item.a.b', 'runid', 'item.', ''].map(tokenKind)).toEqual(['run', 'run', 'run', 'run', 'run', 'run', 'item', 'item', 'item', 'unknown', 'unknown', 'unknown']);
  });

  test('an unknown token\u2019s hint names the near token once', () => {
    const r = parseWorkflow(`openintent: "1.0"
info: {name: tok}
workflow:
  a:
    assign: w
    outputsFiles:
      o: {path: "out/<runid>.txt"}
      p: {path: "out/<zzzzzz>.txt"}
`);
    const hints = r.diagnostics.filter((d) => d.code === 'unknown-token').map((d) => d.hint);
    expect(hints[0]).toBe('did you mean `<runId>`?');
    expect(hints[1]).toMatch(/^tokens: <runId>, /);
  });

  test('an item token in an agent\u2019s or its contract\u2019s file fits only a fan-out phase, unless the phase declares that key itself', () => {
    const wf = (phase: string): string => `openintent: "1.0"
info: {name: it}
agents:
  w:
    outputsFiles:
      d: {path: "out/<index>.md"}
  c:
    x-contract:
      inputsFiles:
        t: {path: "in/<item>.md"}
workflow:
  src:
    assign: x
    outputs: {xs: "string[]"}
  fan:
    assign: w
    depends_on: [src]
    for_each: src.xs
  fan2:
    assign: c
    depends_on: [src]
    for_each: src.xs
${phase}`;
    const found = (phase: string): string[] => parseWorkflow(wf(phase)).diagnostics.filter((d) => d.code === 'item-outside-for-each').map((d) => d.path.join('.'));
    expect(found('  one:\n    assign: w\n')).toEqual(['agents.w.outputsFiles.d.path']);
    expect(found('  one:\n    assign: c\n')).toEqual(['workflow.one.assign']);
    expect(found('  one:\n    assign: x\n    retry: {fallback_agent: c}\n')).toEqual(['workflow.one.retry.fallback_agent']);
    // the phase's entry of the same key (and side) wins: the agent's path is not used there
    expect(found('  one:\n    assign: w\n    outputsFiles: {d: {path: out/one.md}}\n')).toEqual([]);
    expect(found('  one:\n    assign: c\n    inputsFiles: {t: {path: in/one.md}}\n')).toEqual([]);
    // another key, or the other side, does not
    expect(found('  one:\n    assign: w\n    inputsFiles: {d: {path: out/one.md}}\n')).toEqual(['agents.w.outputsFiles.d.path']);
  });

  test('a contract\u2019s `<item.x>` is checked against the item type of each fan-out phase its agent runs, on the binding', () => {
    const wf = (phase: string): string => `openintent: "1.0"
info: {name: it}
types:
  Sec: {name: string, n: integer}
agents:
  v:
    x-contract:
      outputsFiles:
        o: {path: "out/<item.nmae>.md"}
workflow:
  src:
    assign: x
    outputs: {xs: "Sec[]"}
  fan:
    assign: v
    depends_on: [src]
    for_each: src.xs
${phase}`;
    const found = (phase: string): string[] => parseWorkflow(wf(phase)).diagnostics.filter((d) => d.code === 'input-path-invalid').map((d) => `${d.path.join('.')} ${d.hint ?? ''}`);
    expect(found('')).toEqual(['workflow.fan.assign did you mean `name`?']);
    // the phase's own entry of the key wins: the contract's path is not used
    expect(found('    outputsFiles: {o: {path: "out/<index>.md"}}\n')).toEqual([]);
  });

  test('a phase entry wins over its agent\u2019s of the same key', () => {
    const m = mergeFiles({ inputs: [{ key: 'a', path: 'agent.md' }, { key: 'b', path: 'b.md' }], outputs: [] }, { inputs: [{ key: 'a', path: 'phase.md' }], outputs: [{ key: 'o', path: 'o.md' }] });
    expect(m).toEqual({ inputs: [{ key: 'b', path: 'b.md' }, { key: 'a', path: 'phase.md' }], outputs: [{ key: 'o', path: 'o.md' }] });
  });

  test('a contract that requires `_workflowFsRoot` fits a phase with files, and only such a phase', () => {
    const r = parseWorkflow(`openintent: "1.0"
info: {name: fr}
agents:
  w:
    x-contract:
      input:
        schema: {type: object, required: [topic, _workflowFsRoot], additionalProperties: false, properties: {topic: {type: string}, _workflowFsRoot: {type: string}}}
workflow:
  a:
    assign: w
    inputs: {topic: $trigger.topic}
    outputsFiles: {n: {path: out.md}}
  b:
    assign: w
    inputs: {topic: $trigger.topic}
`);
    expect(r.diagnostics.map((d) => `${d.code} ${d.path.join('.')}`)).toEqual(['input-schema-missing workflow.b.inputs']);
  });

  test('a closed contract input schema without `_workflowFsRoot` is refused for a phase with files (the host injects it)', () => {
    const r = parseWorkflow(`openintent: "1.0"
info: {name: fr}
agents:
  w:
    x-contract:
      input:
        schema: {type: object, additionalProperties: false, properties: {topic: {type: string}}}
workflow:
  a:
    assign: w
    inputs: {topic: $trigger.topic}
    outputsFiles: {n: {path: out.md}}
`);
    expect(r.diagnostics.map((d) => d.code)).toEqual(['input-schema-unknown-key']);
    expect(r.diagnostics[0]!.hint).toMatch(/_workflowFsRoot/);
  });
});

describe('itemFileCollisions', () => {
  const out = (path: string) => [{ key: 'k', path }];
  test('two items naming one file, however the path is spelled', () => {
    expect(itemFileCollisions(out('out/<item.name>.md'), [{ name: 'a' }, { name: './a' }, { name: 'b' }])).toEqual([{ key: 'k', path: 'out/a.md', declared: 'out/<item.name>.md', items: [0, 1] }]);
    expect(itemFileCollisions(out('out/<item>/x'), ['a', 'a/', 'a//.', 'c'])).toEqual([{ key: 'k', path: 'out/a/x', declared: 'out/<item>/x', items: [0, 1, 2] }]);
  });
  test('distinct files, <index> paths and values that cannot name a file are no collision', () => {
    expect(itemFileCollisions(out('out/<item.name>.md'), [{ name: 'a' }, { name: 'b' }, { name: {} }, {}])).toEqual([]);
    expect(itemFileCollisions(out('out/<index>-<item>.md'), ['a', 'a'])).toEqual([]);
  });
  test('a value whose path is refused (`..`) writes no file: it collides with none', () => {
    // `out/sub/../a.md` and `out/x/../..` are refused when the items run: neither writes `out/a.md` or `.`
    expect(itemFileCollisions(out('out/<item>'), ['a.md', 'sub/../a.md', '..', 'x/../..'])).toEqual([]);
    // nor does one that leaves the path empty (`<item>` over `` or `.`) or puts a NUL in it
    expect(itemFileCollisions(out('<item>'), ['', '.', './', 'a\0', 'a\0'])).toEqual([]);
    // a trailing slash names the same file, as the engine records it
    expect(itemFileCollisions(out('out/<item>'), ['a', 'a/', './a'])).toEqual([{ key: 'k', path: 'out/a', declared: 'out/<item>', items: [0, 1, 2] }]);
  });
});
