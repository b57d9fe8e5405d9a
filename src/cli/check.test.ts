import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { CliIo } from './io.js';
import { run } from './main.js';

function capture(cwd = process.cwd()): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd, env: {}, out: () => out, err: () => err };
}

const fixtures = join(import.meta.dirname, '..', '..', 'test', 'fixtures');

describe('baton check', () => {
  test('prints a verdict per binding and edge, and the diagnostics positioned in their own file', async () => {
    const io = capture(fixtures);
    expect(await run(['check', 'contracts/workflow.yaml'], io)).toBe(2); // it names a contract file that does not exist
    expect(io.out()).toMatch(/! write-section <- section-drafter \(contract: file\): input may-fail, output compatible/);
    expect(io.out()).toMatch(/✓ outline -> write-section \[outline, research\]: compatible/);
    expect(io.out()).toMatch(/contracts\/contracts\/broken\.yaml:1:18: error\[unsupported-version\]/);
  });

  test('--json: bindings, edges, diagnostics with their file', async () => {
    const io = capture(fixtures);
    expect(await run(['check', '--json', 'diagnostics/input-schema-mismatch.yaml'], io)).toBe(1);
    const doc = JSON.parse(io.out()) as { bindings: { phase: string; input: string }[]; edges: { verdict: string }[]; diagnostics: { code: string; line: number; column: number }[] };
    expect(doc.bindings.find((b) => b.phase === 'sum')?.input).toBe('incompatible');
    expect(doc.edges.map((e) => e.verdict)).toEqual(['incompatible']);
    expect(doc.diagnostics.map((d) => `${d.code} ${d.line}:${d.column}`)).toEqual(['input-schema-mismatch 23:14', 'input-schema-mismatch 24:14']);

    const io2 = capture(fixtures);
    expect(await run(['check', '--json', 'contracts/workflow.yaml'], io2)).toBe(2);
    const d2 = JSON.parse(io2.out()) as { diagnostics: { code: string; file?: string; line: number }[] };
    expect(d2.diagnostics.find((d) => d.code === 'unsupported-version')).toMatchObject({ file: 'contracts/contracts/broken.yaml', line: 1 });
  });

  test('--contracts DIR checks contract files on their own', async () => {
    const io = capture(fixtures);
    expect(await run(['check', '--contracts', 'contracts/contracts'], io)).toBe(1);
    expect(io.out()).toMatch(/✓ contracts\/contracts\/section-drafter\.yaml: valid contract for `section-drafter`/);
    const json = capture(fixtures);
    await run(['check', '--contracts', 'contracts/contracts', '--json'], json);
    const doc = JSON.parse(json.out()) as { contracts: { file: string; valid: boolean; diagnostics: { code: string; line: number; column: number }[] }[] };
    expect(doc.contracts.map((c) => [c.file, c.valid])).toEqual([
      ['contracts/contracts/broken.yaml', false],
      ['contracts/contracts/empty.yaml', false],
      ['contracts/contracts/required.yaml', false],
      ['contracts/contracts/section-drafter.yaml', true],
    ]);
    expect(doc.contracts[1]!.diagnostics.map((d) => `${d.code} ${d.line}:${d.column}`)).toEqual(['wrong-type 1:1']);
  });

  test('usage errors exit 2', async () => {
    expect(await run(['check'], capture())).toBe(2);
    expect(await run(['check', '--contracts', 'no/such/dir'], capture())).toBe(2);
    expect(await run(['check', 'nope.yaml'], capture())).toBe(2);
  });

  test('a valid workflow with contracts exits 0', async () => {
    const io = capture(fixtures);
    expect(await run(['check', 'diagnostics/schema-not-comparable.yaml'], io)).toBe(0);
    expect(io.out()).toMatch(/! use <- picky \(contract: inline\): input unknown/);
  });
});

describe('baton check --agents', () => {
  test("a defineAgent module's contracts are checked against the workflow", async () => {
    const io = capture(join(fixtures, 'define'));
    expect(await run(['check', 'workflow.yaml', '--agents', 'agents.ts', '--json'], io)).toBe(1);
    const doc = JSON.parse(io.out()) as { bindings: { contract: string }[]; diagnostics: { code: string; line: number; column: number }[] };
    expect(doc.bindings[0]?.contract).toBe('typescript');
    expect(doc.diagnostics.map((d) => `${d.code} ${d.line}:${d.column}`)).toEqual(['input-schema-missing 7:13', 'output-schema-mismatch 8:15']);
    expect(await run(['check', 'workflow.yaml', '--agents', 'nope.ts'], capture(join(fixtures, 'define')))).toBe(2);
  });
  test('baton run checks them too: a module whose contracts do not fit the workflow runs nothing', async () => {
    const io = capture(join(fixtures, 'define'));
    expect(await run(['run', 'workflow.yaml', '--agents', 'agents.ts', '--store', 'memory', '--quiet'], io)).toBe(2);
    expect(io.err()).toMatch(/error\[output-schema-mismatch\]/);
    expect(io.err()).toMatch(/workflow\.yaml:8:15/);
    expect(io.err()).toMatch(/agents module's contracts \(defineAgent\) do not fit the workflow; nothing was run/);
  });
});

describe('baton validate with contract files', () => {
  test('a problem inside a contract file is shown at its place in that file (text and --json)', async () => {
    const io = capture(fixtures);
    expect(await run(['validate', 'contracts/workflow.yaml'], io)).toBe(2); // as for any file it cannot read
    expect(io.out()).toMatch(/^contracts\/contracts\/broken\.yaml:1:18: error\[unsupported-version\]/m);
    expect(io.out()).toMatch(/^1 \| contractVersion: "2\.0\.0"$/m);
    const json = capture(fixtures);
    await run(['validate', '--json', 'contracts/workflow.yaml'], json);
    const doc = JSON.parse(json.out()) as { files: { diagnostics: { code: string; file?: string; line: number; column: number }[] }[] };
    expect(doc.files[0]!.diagnostics.find((d) => d.code === 'unsupported-version')).toMatchObject({ file: 'contracts/contracts/broken.yaml', line: 1, column: 18 });
  });
});

describe('baton types', () => {
  test('prints or writes the module; an invalid workflow exits 1 with its diagnostics', async () => {
    const io = capture(fixtures);
    expect(await run(['types', 'contracts/workflow.yaml'], io)).toBe(2);
    const ok = capture(join(fixtures, '..', '..', 'examples', 'paper-contracts'));
    expect(await run(['types', 'workflow.yaml', '--baton-module', '../../src/index.js'], ok)).toBe(0);
    expect(ok.out()).toMatch(/^export type WriteSectionInput = \{ sectionName: unknown; outline: Outline; research: Source\[\] \};$/m);
    expect(ok.out()).toMatch(/^import type \{ AgentContext \} from "\.\.\/\.\.\/src\/index\.js";$/m);
    const bad = capture(fixtures);
    expect(await run(['types', 'diagnostics/input-schema-mismatch.yaml'], bad)).toBe(1);
    expect(bad.err()).toMatch(/input-schema-mismatch\.yaml:23:14: error\[input-schema-mismatch\]/);
    const dir = mkdtempSync(join(tmpdir(), 'baton-types-cli-'));
    const w = capture(dir);
    expect(await run(['types', join(fixtures, 'diagnostics', 'schema-not-comparable.yaml'), '-o', 'wf.types.ts'], w)).toBe(0);
    expect(readFileSync(join(dir, 'wf.types.ts'), 'utf8')).toMatch(/^export type UseInput = \{ email: string; score: number \};$/m);
    expect(await run(['types'], capture())).toBe(2);
  });
});
