/**
 * AIP-16 staging and syncing: 1,000 files of 100 KB staged from a workspace into an attempt's scratch
 * root and synced back (each copy hashed with sha256 for provenance, each path checked against the
 * workspace), against a plain copy of the same files both ways (`fs.copyFile`, no hash, no checks).
 * Also the whole attempt path (`withFiles`: token expansion, provenance records, root removal).
 * Prints the ratio and the cost per file; never fails on a timing. Target: within 2x of the plain copy.
 */
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentContext } from '../src/engine/agent.js';
import { withFiles } from '../src/engine/files.js';
import { localFileStager } from '../src/engine/files-local.js';
import { parseWorkflow } from '../src/workflow/compile.js';

const FILES = Number(process.env['BATON_BENCH_FILES'] ?? 1000);
const SIZE = 100 * 1024;
const ROUNDS = 3;

const base = await mkdtemp(join(tmpdir(), 'baton-files-bench-'));
const ws = join(base, 'ws');
await mkdir(join(ws, 'in'), { recursive: true });
for (let i = 0; i < FILES; i++) await writeFile(join(ws, 'in', `f${i}.dat`), randomBytes(SIZE));
const keys = Array.from({ length: FILES }, (_, i) => i);

/** Best time of each variant over ROUNDS rounds, run in turns (so that none pays alone for the page cache the others filled). */
async function timeAll(variants: Record<string, () => Promise<void>>): Promise<Record<string, number>> {
  const best: Record<string, number> = {};
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, f] of Object.entries(variants)) {
      await rm(join(ws, 'out'), { recursive: true, force: true });
      const t0 = performance.now();
      await f();
      best[name] = Math.min(best[name] ?? Infinity, performance.now() - t0);
    }
  }
  return best;
}

// a plain copy of the same files, both ways, as a script would do it
const plainCopy = async (): Promise<void> => {
  const tmp = await mkdtemp(join(base, 'plain-'));
  for (const i of keys) await copyFile(join(ws, 'in', `f${i}.dat`), join(tmp, `k${i}`));
  await mkdir(join(ws, 'out'), { recursive: true });
  for (const i of keys) await copyFile(join(tmp, `k${i}`), join(ws, 'out', `f${i}.dat`));
  await rm(tmp, { recursive: true, force: true });
};

// the stager alone, as the engine drives it: checked paths, sha256 of every byte, each output checked
// (hashed) when the agent returns and copied once its completion is committed (its hash verified), atomic writes
const stager = localFileStager({ workspace: ws, tmpDir: base });
const stagerOnly = async (): Promise<void> => {
  const root = await stager.open({ runId: 'bench', workflowId: 'bench', phase: 'p', attempt: 1 });
  for (const i of keys) await root.stage(`k${i}`, `in/f${i}.dat`);
  const checked: Awaited<ReturnType<typeof root.check>>[] = [];
  for (const i of keys) checked.push(await root.check(`k${i}`, `out/f${i}.dat`));
  for (const i of keys) {
    const d = checked[i]!;
    await root.sync(`k${i}`, `out/f${i}.dat`, d === 'missing' ? undefined : d);
  }
  await root.remove();
};

// the whole attempt path: a phase declaring 1,000 inputs and 1,000 outputs (tokens, records, removal)
const entries = (path: (i: number) => string): string => keys.map((i) => `      k${i}: {path: "${path(i)}"}`).join('\n');
const r = parseWorkflow(`openintent: "1.0"\ninfo: {name: bench}\nworkflow:\n  p:\n    assign: a\n    inputsFiles:\n${entries((i) => `in/f${i}.dat`)}\n    outputsFiles:\n${entries((i) => `out/<phase>/f${i}.dat`)}\n`);
if (!r.ok) throw new Error(r.diagnostics.map((d) => d.message).join('; '));
let records = 0;
const ctx = {
  input: {},
  phase: 'p',
  taskId: 't',
  runId: 'bench',
  attempt: 1,
  idempotencyKey: 't',
  inputResponse: undefined,
  lastCheckpoint: undefined,
  agent: 'a',
  signal: new AbortController().signal,
  initialState: {},
  checkpoint: () => Promise.resolve(),
  reportCost: () => undefined,
  getSiblingOutput: () => undefined,
  log: () => undefined,
  record: () => void records++,
  remainingBudgetUsd: () => undefined,
  requestInput: () => Promise.resolve(null),
} satisfies AgentContext;
const attempt = withFiles(() => ({}), { stager, model: r.model, contracts: new Map(), now: () => Date.now() });
const best = await timeAll({
  plain: plainCopy,
  staged: stagerOnly,
  whole: async () => {
    await attempt(ctx);
  },
});
const plain = best['plain']!;
const staged = best['staged']!;
const whole = best['whole']!;

const mb = (FILES * SIZE * 2) / 1024 / 1024;
const row = (name: string, ms: number): string[] => [name, `${ms.toFixed(0)} ms`, `${((ms * 1000) / (FILES * 2)).toFixed(0)} µs`, `${(mb / (ms / 1000)).toFixed(0)} MB/s`, `${(ms / plain).toFixed(2)}x`];
const rows = [['', 'total (best of 3)', 'per file copy', 'throughput', 'vs plain copy'], row('plain copyFile, in and out', plain), row('stager: stage + check + sync, sha256', staged), row('withFiles: the attempt path', whole)];
const w = rows[0]!.map((_, c) => Math.max(...rows.map((x) => x[c]!.length)));
console.log(`${FILES} files of ${SIZE / 1024} KB staged into a root and synced back (${(mb / 2).toFixed(0)} MB each way), node ${process.versions.node}`);
for (const x of rows) console.log(x.map((c, i) => c.padEnd(w[i]!)).join('  '));
console.log(`target: within 2x of the plain copy: ${whole / plain <= 2 ? 'met' : 'not met'} (${(whole / plain).toFixed(2)}x); ${records / ROUNDS} provenance records per attempt`);
await rm(base, { recursive: true, force: true });
