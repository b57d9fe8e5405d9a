/**
 * Compiler and validator figures: a 10,000-phase fan compiled cold (the process's first compile) and warm,
 * validating generated workflows of 1,000 and 10,000 phases (the 10k/1k ratio should stay near 10: linear),
 * and output validations per second.
 * Targets on the 2-core reference machine: 10,000 phases in under 1 s; over 1,000,000 validations/s of a small record.
 */
import { parseWorkflow } from '../src/workflow/compile.js';
import { validateTaskOutputs } from '../src/workflow/runtime.js';
import { generateWorkflow } from './gen.js';

function time<T>(f: () => T, repeat = 3): { ms: number; value: T } {
  let best = Infinity;
  let value!: T;
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    value = f();
    best = Math.min(best, performance.now() - t0);
  }
  return { ms: best, value };
}

const rows: string[][] = [];
const results: Record<number, number> = {};

// a 10,000-phase fan (3 MB): what each `baton worker` compiles when it meets a run of a new workflow.
// First, so the first compile is this process's first (cold: js-yaml and the compiler not yet optimized)
{
  const n = 10_000;
  const text = generateWorkflow(n, 'fan');
  const cold = time(() => parseWorkflow(text), 1);
  if (!cold.value.ok) throw new Error(`generated fan is invalid: ${cold.value.diagnostics[0]?.message}`);
  const warm = time(() => parseWorkflow(text), 5);
  rows.push([`validate ${n.toLocaleString()}-phase fan, cold (first compile)`, `${cold.ms.toFixed(1)} ms`, `${((cold.ms * 1000) / n).toFixed(1)} µs/phase`, `${(text.length / 1e6).toFixed(2)} MB`]);
  rows.push([`validate ${n.toLocaleString()}-phase fan, warm (best of 5)`, `${warm.ms.toFixed(1)} ms`, `${((warm.ms * 1000) / n).toFixed(1)} µs/phase`, '']);
}
for (const n of [1_000, 10_000]) {
  const text = generateWorkflow(n, 'lattice');
  time(() => parseWorkflow(text), 1); // warm-up
  const { ms, value } = time(() => parseWorkflow(text));
  if (!value.ok) throw new Error(`generated workflow is invalid: ${value.diagnostics[0]?.message}`);
  results[n] = ms;
  rows.push([`validate ${n.toLocaleString()} phases`, `${ms.toFixed(1)} ms`, `${((ms * 1000) / n).toFixed(1)} µs/phase`, `${(text.length / 1e6).toFixed(2)} MB`]);
  if (n === 10_000) {
    // the same file with one unknown dependency: positions are built (a second js-yaml pass with a listener) only then
    const bad = text.replace('depends_on: [p9800, p9801]', 'depends_on: [p9800, p98001]');
    const one = time(() => parseWorkflow(bad));
    rows.push([`validate ${n.toLocaleString()} phases, one error`, `${one.ms.toFixed(1)} ms`, `${one.value.diagnostics.length} diagnostic(s), positioned`, '']);
  }
}
rows.push(['10k / 1k ratio', (results[10_000]! / results[1_000]!).toFixed(2), '(linear = 10)', '']);

// hostile input: a 5 MB single line (an unclosed flow sequence) is refused with js-yaml's positioned error
{
  const text = '[' + '1,'.repeat(2_500_000);
  const { ms, value } = time(() => parseWorkflow(text), 1);
  rows.push(['5 MB single-line file, refused', `${ms.toFixed(1)} ms`, `${value.diagnostics[0]?.code ?? 'accepted?'}`, '']);
}

// output validation
const spec = parseWorkflow(`openintent: "1.0"
info: {name: bench}
types:
  Finding: {source: string, content: string, confidence: number}
  Level: {enum: [low, medium, high]}
workflow:
  small:
    assign: a
    outputs: {source: string, content: string, confidence: number}
  record:
    assign: a
    outputs: {finding: Finding}
  nested:
    assign: a
    outputs:
      summary: string
      findings: Finding[]
      level: Level
`);
if (!spec.model) throw new Error('bench workflow invalid');
const small = spec.model.byName.get('small')!;
const nested = spec.model.byName.get('nested')!;
const record = spec.model.byName.get('record')!;
const finding = { source: 'rfc', content: 'wiring belongs to the executor', confidence: 0.9 };
const nestedOut = { summary: 'ok', findings: Array.from({ length: 5 }, () => ({ ...finding })), level: 'high' };
const findingType = record.outputs![0]!.type;

function rate(label: string, f: () => unknown, n: number): void {
  for (let i = 0; i < n / 10; i++) f();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) f();
  const ms = performance.now() - t0;
  rows.push([label, `${Math.round((n / ms) * 1000).toLocaleString()} /s`, `${((ms * 1e6) / n).toFixed(0)} ns each`, '']);
}
rate('check: small record (Finding)', () => findingType.check(finding), 2_000_000);
rate('validateTaskOutputs: 3 scalar outputs', () => validateTaskOutputs(small, finding, { taskId: 't' }), 1_000_000);
rate('validateTaskOutputs: nested (5 Findings + enum)', () => validateTaskOutputs(nested, nestedOut, { taskId: 't' }), 500_000);

const w = [0, 0, 0, 0];
for (const r of rows) r.forEach((c, i) => (w[i] = Math.max(w[i]!, c.length)));
for (const r of rows) console.log(r.map((c, i) => c.padEnd(w[i]!)).join('  '));
