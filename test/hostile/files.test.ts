/**
 * Hostile workflow files: each class ends in positioned diagnostics (code and line:col asserted),
 * quickly, with bounded output, and never a thrown error.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { WorkflowSpec } from '../../src/api/spec.js';
import { SourceFile } from '../../src/diagnostics/source.js';
import { renderDiagnostic } from '../../src/diagnostics/render.js';
import { parseWorkflow, parseWorkflowBytes, type CompileResult } from '../../src/workflow/compile.js';
import { MAX_NESTING } from '../../src/workflow/yaml-guard.js';

const HEAD = 'openintent: "1.0"\ninfo: {name: "H"}\nworkflow:\n';

function at(r: CompileResult): string[] {
  const src = new SourceFile(r.file, r.text);
  return r.diagnostics.map((d) => {
    const p = d.range ? src.position(d.range[0]) : { line: 0, column: 0 };
    return `${d.code} ${p.line}:${p.column}`;
  });
}

function printed(r: CompileResult): string {
  const src = new SourceFile(r.file, r.text);
  return r.diagnostics.map((d) => renderDiagnostic(d, src, { color: false })).join('\n');
}

function timed<T>(f: () => T): { value: T; ms: number } {
  const t0 = performance.now();
  const value = f();
  return { value, ms: performance.now() - t0 };
}

describe('alias bombs', () => {
  const laughs = (levels: number): string => {
    const lines = [`${HEAD}  a:`, '    assign: x', '    initial_state:', '      l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (let i = 1; i <= levels; i++) lines.push(`      l${i}: &l${i} [${Array.from({ length: 10 }, () => `*l${i - 1}`).join(', ')}]`);
    return lines.join('\n') + '\n';
  };

  test('the fast path stops at the alias that passes the limit', () => {
    const { value: r, ms } = timed(() => parseWorkflow(laughs(12)));
    expect(at(r)).toEqual(['alias-limit 12:51']);
    expect(ms).toBeLessThan(3000);
  });

  test('a few aliases are fine', () => {
    expect(parseWorkflow(laughs(2)).ok).toBe(true);
  });

  test('with a duplicate key or a syntax error too, nothing is expanded', () => {
    const dup = laughs(12).replace('    assign: x\n', '    assign: x\n    assign: y\n');
    expect(at(parseWorkflow(dup))).toEqual(['duplicate-key 6:5', 'alias-limit 13:51']);
    const broken = laughs(12).replace('    assign: x\n', '    assign: [x\n');
    const r = timed(() => parseWorkflow(broken));
    expect(r.value.diagnostics.map((d) => d.code)).toContain('yaml-syntax');
    expect(r.ms).toBeLessThan(3000);
  });

  test('an alias inside its own anchor (a cycle) is refused', () => {
    expect(at(parseWorkflow(`${HEAD}  a:\n    assign: x\n    initial_state: {v: &a [1, *a]}\n`))).toEqual(['alias-limit 6:31']);
  });
});

describe('nesting', () => {
  test.each([
    ['flow sequences', (n: number) => `${HEAD}  a: {assign: x, initial_state: {v: ${'['.repeat(n)}${']'.repeat(n)}}}\n`],
    ['flow mappings', (n: number) => `${HEAD}  a: {assign: x, initial_state: {v: ${'{a: '.repeat(n)}1${'}'.repeat(n)}}}\n`],
    ['compact block sequences', (n: number) => `${HEAD}  a:\n    assign: x\n    initial_state:\n      v:\n        ${'- '.repeat(n)}1\n`],
  ])('10,000 levels of %s: too-deep at the level that passed the limit', (_, make) => {
    const { value: r, ms } = timed(() => parseWorkflow(make(10_000)));
    expect(r.diagnostics.map((d) => d.code)).toEqual(['too-deep']);
    expect(r.diagnostics[0]!.message).toContain(`limit ${MAX_NESTING}`);
    expect(new SourceFile('f', r.text).position(r.diagnostics[0]!.range![0]).line).toBeGreaterThanOrEqual(4);
    expect(ms).toBeLessThan(3000);
    expect(printed(r).length).toBeLessThan(2000);
  });

  test('deep nesting behind a syntax error never reaches the stack', () => {
    const r = parseWorkflow(`${HEAD}  a: {assign: x, y: ]\n  b: ${'['.repeat(20_000)}\n`);
    expect(r.diagnostics.length).toBeGreaterThan(0);
    expect(r.diagnostics.every((d) => d.range !== undefined)).toBe(true);
  });

  test('nesting under the limit is fine', () => {
    expect(parseWorkflow(`${HEAD}  a: {assign: x, initial_state: {v: ${'['.repeat(150)}${']'.repeat(150)}}}\n`).ok).toBe(true);
  });
});

describe('characters and encodings', () => {
  test('a control byte is an invalid character at its position', () => {
    const r = parseWorkflowBytes(Buffer.from(`${HEAD}  a: {assign: "x\x07y"}\n`));
    expect(at(r)).toEqual(['invalid-character 4:17']);
  });

  test('binary is not UTF-8 or holds an invalid character, never "valid"', () => {
    expect(at(parseWorkflowBytes(Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0xff, 0xfe])))).toEqual(['not-utf8 1:9']);
    expect(at(parseWorkflowBytes(Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00])))).toEqual(['invalid-character 1:1']);
    expect(at(parseWorkflowBytes(Buffer.from('a: b\n\0\n')))).toEqual(['invalid-character 2:1']);
  });

  test('Latin-1 is reported at the first byte that is not UTF-8, not replaced by U+FFFD', () => {
    const r = parseWorkflowBytes(Buffer.concat([Buffer.from(`${HEAD}  caf`), Buffer.from([0xe9]), Buffer.from(': {assign: x}\n')]));
    expect(at(r)).toEqual(['not-utf8 4:6']);
  });

  test('UTF-8 text, a BOM and U+FFFD written on purpose are fine', () => {
    expect(parseWorkflowBytes(Buffer.from(`\uFEFF${HEAD}  café: {assign: "x \uFFFD 🚀"}\n`)).ok).toBe(true);
  });

  test('diagnostics print control characters escaped: names, frames, hints', () => {
    const r = parseWorkflow(`${HEAD}  a: {assign: x, depends_on: ["\x1b]0;pwned\x07\x1b[2J"]}\n`);
    expect(at(r)).toEqual(['invalid-character 4:32']);
    const esc = parseWorkflow(`${HEAD}  a: {assign: x, depends_on: ["\\e]0;pwned\\a\\e[2J"]}\n`);
    expect(esc.diagnostics.map((d) => d.code)).toEqual(['unknown-dependency']);
    const out = printed(esc);
    expect(out).toContain('\\x1B]0;pwned\\x07');
    expect(out).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
  });
});

describe('size', () => {
  test('a 5 MB single-line file is rejected fast, with a frame cut around the column', () => {
    for (const text of ['[' + '1,'.repeat(2_500_000), 'x: "' + 'a'.repeat(5_000_000), 'a'.repeat(5_000_000)]) {
      const { value: r, ms } = timed(() => parseWorkflow(text));
      expect(r.ok).toBe(false);
      expect(ms).toBeLessThan(3000); // ~0.35 s on the 2-core reference machine; loose for a loaded CI
      const out = printed(r);
      expect(out.length).toBeLessThan(3000);
    }
  });

  test('a long single-line workflow with one typo: positioned, the frame is a window', () => {
    const phases = Array.from({ length: 3000 }, (_, i) => `p${i}: {assign: a, depends_on: [${i === 0 ? '' : `p${i - 1}`}]}`);
    phases[2500] = 'p2500: {assign: a, depends_on: [p24999]}';
    const text = `{openintent: "1.0", info: {name: "L"}, workflow: {${phases.join(', ')}}}`;
    const r = parseWorkflow(text);
    expect(r.diagnostics.map((d) => d.code)).toContain('unknown-dependency');
    const out = printed(r);
    expect(out).toContain('p24999');
    expect(out.length).toBeLessThan(3000);
  });
});

describe('small things', () => {
  test.each([[''], ['# only a comment\n'], ['\n\n   \n']])('an empty file %j gets its diagnostic at 1:1', (text) => {
    expect(at(parseWorkflow(text))).toEqual(['wrong-type 1:1']);
  });

  test.each([
    ['[]', ['invalid-value 5:16']],
    ['[""]', ['invalid-value 5:17']],
    ['["", x]', ['invalid-value 5:17']],
    ['""', ['invalid-value 5:16']],
    ['[python3, 7]', ['wrong-type 5:26']],
    ['{a: 1}', ['wrong-type 5:16']],
  ])('x-command: %s is refused with a position', (cmd, expected) => {
    const r = parseWorkflow(`openintent: "1.0"\ninfo: {name: "C"}\nagents:\n  x:\n    x-command: ${cmd}\nworkflow:\n  a: {assign: x}\n`);
    expect(at(r)).toEqual(expected);
  });

  test('x-command with empty later arguments is fine', () => {
    expect(parseWorkflow(`openintent: "1.0"\ninfo: {name: "C"}\nagents:\n  x:\n    x-command: [node, run.mjs, ""]\nworkflow:\n  a: {assign: x}\n`).ok).toBe(true);
  });

  test('timeouts and delays of 2^31 ms and more are accepted', () => {
    const r = parseWorkflow(
      `openintent: "1.0"\ninfo: {name: "T"}\ngovernance: {timeout_hours: 720, require_approval: {timeout_hours: 1000}}\nworkflow:\n  a: {assign: x, timeout_ms: 3000000000, retry: {max_attempts: 2, initial_delay_ms: 3000000000, max_delay_ms: 9000000000000}}\n`,
    );
    expect(r.diagnostics).toEqual([]);
    expect(r.ok).toBe(true);
  });
});

describe('nesting inside strings', () => {
  test.each([
    ['array<...> 10,000 deep', `outputs: {x: "${'array<'.repeat(10_000)}string${'>'.repeat(10_000)}"}`, 'invalid-type'],
    ['T[] 10,000 deep', `outputs: {x: "string${'[]'.repeat(10_000)}"}`, 'invalid-type'],
    ['(...) 10,000 deep in skip_when', `skip_when: "${'('.repeat(10_000)}true${')'.repeat(10_000)}"`, 'expression-syntax'],
    ['!!!... 10,000 long in skip_when', `skip_when: "${'!'.repeat(10_000)}true"`, 'expression-syntax'],
  ])('%s: a positioned diagnostic, never a stack overflow', (_, field, code) => {
    const r = parseWorkflow(`${HEAD}  a: {assign: x, ${field}}\n`);
    expect(r.diagnostics.map((d) => d.code)).toEqual([code]);
    expect(new SourceFile('f', r.text).position(r.diagnostics[0]!.range![0]).line).toBe(4);
    expect(printed(r).length).toBeLessThan(3000);
  });

  test('64 levels of arrays are fine', () => {
    expect(parseWorkflow(`${HEAD}  a: {assign: x, outputs: {x: "${'array<'.repeat(32)}string${'>'.repeat(32)}${'[]'.repeat(32)}"}}\n`).ok).toBe(true);
  });
});

describe('types naming types', () => {
  const chain = (n: number, decl: (i: number, last: boolean) => string): string =>
    `openintent: "1.0"\ninfo: {name: "T"}\ntypes:\n${Array.from({ length: n }, (_, i) => `  T${i}: ${decl(i, i === n - 1)}`).join('\n')}\nworkflow:\n  a: {assign: x, outputs: {x: T0}}\n`;

  test.each([
    ['aliases', (i: number, last: boolean) => `"${last ? 'string' : `T${i + 1}`}"`],
    ['arrays', (i: number, last: boolean) => `"${last ? 'string' : `T${i + 1}[]`}"`],
    ['records', (i: number, last: boolean) => `{v: ${last ? 'string' : `T${i + 1}`}}`],
    ['a cycle of records', (i: number, last: boolean) => `{v: {type: ${last ? 'T0' : `T${i + 1}`}, required: false}}`],
  ])('10,000 %s in a chain: invalid-type at the top, fast (the first check used to overflow the stack)', (_, decl) => {
    const { value: r, ms } = timed(() => parseWorkflow(chain(10_000, decl)));
    expect(at(r)).toEqual(['invalid-type 4:3']);
    expect(ms).toBeLessThan(3000);
  });

  test('10,000 aliases in a cycle: linear, and each message shortens the cycle', () => {
    const { value: r, ms } = timed(() => parseWorkflow(chain(10_000, (i, last) => `"${last ? 'T0' : `T${i + 1}`}"`)));
    expect(r.diagnostics.every((d) => d.code === 'recursive-type')).toBe(true);
    expect(r.diagnostics[0]!.message.length).toBeLessThan(300);
    expect(ms).toBeLessThan(3000);
  });

  test('a recursive type and a chain of 60 records are fine, and check values', () => {
    const tree = parseWorkflow(`openintent: "1.0"\ninfo: {name: "T"}\ntypes:\n  Tree: {name: string, children: {type: "Tree[]", required: false}}\nworkflow:\n  a: {assign: x, outputs: {t: Tree}}\n`);
    expect(tree.ok).toBe(true);
    const r = parseWorkflow(chain(60, (i, last) => `{v: ${last ? 'string' : `T${i + 1}`}}`));
    expect(r.ok).toBe(true);
    const t = r.model!.byName.get('a')!.outputs![0]!.type;
    let v: unknown = 's';
    for (let i = 0; i < 60; i++) v = { v };
    expect(t.check(v)).toBe(true);
    expect(t.check({ v: 1 })).toBe(false);
  });
});

describe('the library reads bytes too', () => {
  test('WorkflowSpec.fromYaml refuses a Latin-1 file with not-utf8', () => {
    const f = join(mkdtempSync(join(tmpdir(), 'baton-spec-')), 'wf.yaml');
    writeFileSync(f, Buffer.concat([Buffer.from('openintent: "1.0"\ninfo: {name: "Caf'), Buffer.from([0xe9]), Buffer.from('"}\nworkflow:\n  a: {assign: x}\n')]));
    let codes: string[] = [];
    try {
      WorkflowSpec.fromYaml(f);
    } catch (e) {
      codes = (e as { diagnostics?: { code: string }[] }).diagnostics?.map((d) => d.code) ?? [String(e)];
    }
    expect(codes).toEqual(['not-utf8']);
  });
});
