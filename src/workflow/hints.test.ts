/** Hints of yaml-syntax, wrong-type and invalid-value diagnostics where one fix is likely (asserted by the fix they name, not their prose). */
import { describe, expect, test } from 'vitest';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { parseWorkflow } from './compile.js';
import { parseYamlSource } from './source.js';

const HEAD = 'openintent: "1.0"\ninfo: {name: x}\n';

function hints(text: string): Record<string, string | undefined> {
  const r = parseWorkflow(text);
  return Object.fromEntries(r.diagnostics.map((d: Diagnostic) => [`${d.code} ${d.path.join('.')}`, d.hint]));
}

describe('wrong-type and invalid-value hints', () => {
  test('a number or a boolean in quotes, a fraction for an integer, one name for a list, a version read as a number', () => {
    const h = hints(
      `${HEAD}agents:\n  a: {version: 1.0}\nworkflow:\n  first:\n    assign: a\n    retry: {max_attempts: "3", initial_delay_ms: 2.5}\n  second:\n    assign: a\n    depends_on: first\n    outputs: {n: {type: number, required: "false"}}\n`,
    );
    expect(h['wrong-type workflow.first.retry.max_attempts']).toContain('`3`');
    expect(h['wrong-type workflow.first.retry.initial_delay_ms']).toContain('`3`');
    expect(h['wrong-type workflow.second.depends_on']).toContain('`[first]`');
    expect(h['wrong-type workflow.second.outputs.n.required']).toContain('`false`');
    expect(h['wrong-type agents.a.version']).toMatch(/quote/);
  });

  test('a phase whose only line is `assign:researcher` (no space after the colon, a string to YAML): the hint gives the fix', () => {
    const h = hints(`${HEAD}workflow:\n  a:\n    assign:researcher\n  b: 3\n`);
    expect(h['wrong-type workflow.a']).toContain('`assign: researcher`');
    expect(h['wrong-type workflow.b']).toContain('`assign: agent-id`');
  });

  test('one name for a list that is the phase itself: the hint does not offer `[a]`, which would be a cycle', () => {
    const h = hints(`${HEAD}workflow:\n  a:\n    assign: x\n    depends_on: a\n  b:\n    assign: x\n    depends_on: a\n`);
    expect(h['wrong-type workflow.a.depends_on']).not.toContain('`[a]`');
    expect(h['wrong-type workflow.a.depends_on']).toContain('`depends_on`');
    expect(h['wrong-type workflow.b.depends_on']).toContain('`[a]`');
  });

  test('a fan-out reference in brackets, a file entry written as its path', () => {
    const h = hints(`${HEAD}workflow:\n  a:\n    assign: x\n    outputs: {xs: "string[]"}\n  b:\n    assign: x\n    depends_on: [a]\n    for_each: [a.xs]\n    outputsFiles:\n      o: out/b.md\n`);
    expect(h['wrong-type workflow.b.for_each']).toContain('`a.xs`');
    expect(h['wrong-type workflow.b.outputsFiles.o']).toContain('`{path: out/b.md}`');
  });

  test('an enum given a number names the values; an empty string says what to do', () => {
    const h = hints(`${HEAD}workflow:\n  a:\n    assign: x\n    retry: {backoff: 3}\n  b:\n    assign: ""\n`);
    expect(h['wrong-type workflow.a.retry.backoff']).toContain('`exponential`');
    expect(h['invalid-value workflow.b.assign']).toBeDefined();
    // a required field cannot be removed: the hint does not offer to
    expect(h['invalid-value workflow.b.assign']).not.toMatch(/remove/);
  });

  test('a missing or empty required field: the hint names the field to add (`name`, `assign`, an allow entry\'s `level`)', () => {
    const h = hints(`openintent: "1.0"\ninfo: {version: "1"}\nworkflow:\n  a: {title: A}\n  b:\n    assign: x\n    permissions: {allow: [{agent: y, level: }]}\n`);
    expect(h['missing-field info']).toContain('`name:`');
    expect(h['missing-field workflow.a']).toContain('`assign:`');
    expect(h['missing-field workflow.b.permissions.allow.0.level']).toContain('`read`');
  });
});

describe('unknown-key hints', () => {
  test('a key that starts like a known one is pointed to it (`retries` -> `retry`, `timeout` -> `timeout_ms`)', () => {
    const h = hints(`${HEAD}workflow:\n  a: {assign: x, retries: 3, timeout: 5}\n`);
    expect(h['unknown-key workflow.a.retries']).toContain('`retry`');
    expect(h['unknown-key workflow.a.timeout']).toContain('`timeout_ms`');
  });
});

describe('invalid-type hints', () => {
  test('a misspelt wrapper key (`requird: false`) is named', () => {
    const h = hints(`${HEAD}workflow:\n  a:\n    assign: x\n    outputs:\n      w: {type: array, requird: false}\n      n: {type: string, nulable: true}\n`);
    expect(h['invalid-type workflow.a.outputs.w.requird']).toContain('`required`');
    expect(h['invalid-type workflow.a.outputs.n.nulable']).toContain('`nullable`');
  });
});

describe('input-bad-syntax hints', () => {
  test('spaces around a good reference, a dot too many, a part that is not a name', () => {
    const h = hints(`${HEAD}workflow:\n  r: {assign: a, outputs: {x: string}}\n  b:\n    assign: a\n    depends_on: [r]\n    inputs: {a: " r.x ", c: "r..x", d: "r.x y"}\n`);
    expect(h['input-bad-syntax workflow.b.inputs.a']).toContain('`r.x`');
    expect(h['input-bad-syntax workflow.b.inputs.c']).toContain('`.`');
    expect(h['input-bad-syntax workflow.b.inputs.d']).toContain('`x y`');
  });
});

describe('input-unknown-phase hints', () => {
  test('they name the phases of depends_on, or say a phase named with a dot cannot be referenced', () => {
    const h = hints(`${HEAD}workflow:\n  research: {assign: a}\n  "v1.2": {assign: a}\n  b:\n    assign: a\n    depends_on: [research, "v1.2"]\n    inputs: {x: zzzzzz.k, y: v1.2.k}\n`);
    expect(h['input-unknown-phase workflow.b.inputs.x']).toContain('`research`');
    expect(h['input-unknown-phase workflow.b.inputs.y']).toContain('`v1.2`');
  });
});

describe('yaml-syntax hints', () => {
  test.each([
    ['a tab as indentation', `${HEAD}workflow:\n\ta: {assign: x}\n`, /spaces/],
    ['an unclosed [', 'openintent: "1.0"\ninfo: {name: [draft\nworkflow:\n  a: {assign: x}\n', /`\]`/],
    ['a value holding `: `', 'openintent: "1.0"\ninfo:\n  name: x\n  description: step 1: draft\n', /quoted/],
    ['misaligned keys', `${HEAD}workflow:\n  a:\n    assign: x\n   bad: indent\n`, /indent/],
    ['an unclosed quote', 'openintent: "1.0"\ninfo:\n  name: "draft\nworkflow:\n  a: {assign: x}\n', /quote/],
    ['text after a quoted value', `${HEAD}workflow:\n  a: {assign: x, skip_when: "a" == "b"}\n`, /quote the whole value/],
    ['a value starting with @', `${HEAD}workflow:\n  a: {assign: @team}\n`, /`"@team"`/],
  ])('%s', (_, text, hint) => {
    const r = parseYamlSource(text);
    expect(r.diagnostics.map((d) => d.code)).toContain('yaml-syntax');
    expect(r.diagnostics.find((d) => d.code === 'yaml-syntax')?.hint).toMatch(hint);
  });
});
