/**
 * Fuzzing the YAML front end with byte-level mutations of a valid workflow: control bytes, invalid
 * UTF-8, deep nesting, alias bombs, random bytes and cuts. Whatever comes in, the compiler returns
 * (never throws), every diagnostic is positioned inside the text, the printed form holds no raw
 * control character and stays small, and each case takes bounded time and memory.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { renderDiagnostic } from '../../src/diagnostics/render.js';
import { SourceFile } from '../../src/diagnostics/source.js';
import { parseWorkflowBytes } from '../../src/workflow/compile.js';

const BASE = Buffer.from(`openintent: "1.0"
info:
  name: "Fuzz"
  description: "café 🚀"
agents:
  w: {x-command: [node, w.mjs]}
defaults: &retry {max_attempts: 2, backoff: exponential}
workflow:
  research:
    assign: w
    inputs: {topic: $trigger.topic}
    outputs: {findings: "string[]", n: integer}
    retry: *retry
    initial_state: {seed: [1, 2, {deep: [3]}]}
  summarize:
    assign: w
    depends_on: [research]
    inputs: {f: research.findings}
    skip_when: "research.n == 0"
`);

const bomb = (levels: number): string => {
  const lines = ['\nb0: &b0 [x, x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i <= levels; i++) lines.push(`b${i}: &b${i} [${Array.from({ length: 10 }, () => `*b${i - 1}`).join(', ')}]`);
  return lines.join('\n') + '\n';
};

type Mutation = { at: number; bytes: Uint8Array } | { at: number; cut: number };

const insertion = fc.oneof(
  fc.constantFrom(0x00, 0x07, 0x08, 0x0b, 0x0c, 0x1b, 0x7f, 0x85, 0x9b).map((b) => Uint8Array.of(b)), // control bytes (0x85/0x9b are bare continuation bytes)
  fc.constantFrom([0xc0, 0xaf], [0xe9], [0xff, 0xfe], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80], [0xed, 0xa0, 0x80]).map((b) => Uint8Array.from(b)), // invalid UTF-8
  fc.record({ n: fc.integer({ min: 1, max: 30_000 }), open: fc.constantFrom('[', '{a: ', '- ', '[{x: ') }).map(({ n, open }) => Buffer.from(open.repeat(n))), // deep nesting
  fc.integer({ min: 3, max: 12 }).map((levels) => Buffer.from(bomb(levels))), // aliases
  fc.constantFrom('&a [*a]', '*nope', '<<: *retry', '\t', '"', "'", '{', ']', ':', '? ', '---\n', '%YAML 1.1\n', '!!binary x', '\uFEFF').map((s) => Buffer.from(s)),
  fc.uint8Array({ minLength: 1, maxLength: 16 }), // anything
);

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ at: fc.nat(), bytes: insertion }) },
  { weight: 1, arbitrary: fc.record({ at: fc.nat(), cut: fc.integer({ min: 1, max: 40 }) }) },
);

function apply(base: Uint8Array, ms: Mutation[]): Buffer {
  let b = Buffer.from(base);
  for (const m of ms) {
    const at = m.at % (b.length + 1);
    b = 'cut' in m ? Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + m.cut))]) : Buffer.concat([b.subarray(0, at), m.bytes, b.subarray(at)]);
  }
  return b;
}

describe('YAML front end under byte-level mutation', () => {
  test('always returns positioned diagnostics, in bounded time and memory, printed safely', () => {
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 4 }), (ms) => {
        const bytes = apply(BASE, ms);
        const heap0 = process.memoryUsage().heapUsed;
        const t0 = performance.now();
        const r = parseWorkflowBytes(bytes, { file: 'fuzz.yaml' });
        const src = new SourceFile('fuzz.yaml', r.text);
        const printed = r.diagnostics.map((d) => renderDiagnostic(d, src, { color: false }));
        const ms_ = performance.now() - t0;
        expect(ms_).toBeLessThan(3000); // typically under 50 ms; loose for a loaded machine
        expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(256 * 1024 * 1024);
        if (!r.ok) expect(r.diagnostics.some((d) => d.severity === 'error')).toBe(true);
        for (const d of r.diagnostics) {
          expect(d.range, `${d.code}: ${d.message}`).toBeDefined();
          expect(d.range![0]).toBeGreaterThanOrEqual(0);
          expect(d.range![0]).toBeLessThanOrEqual(r.text.length);
        }
        for (const p of printed) {
          expect(p).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
          expect(p.length).toBeLessThan(8000);
        }
      }),
      { numRuns: 300 },
    );
  });
});
