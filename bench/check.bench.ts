/**
 * `baton check` of a generated 10,000-phase workflow whose 10 agents each have a contract file
 * (input and output schemas, side effects, context): the whole command (compile, contract checks,
 * the report) against plain `validate` of the same file. Target: under 1 s. Never fails on timing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CliIo } from '../src/cli/io.js';
import { run } from '../src/cli/main.js';
import { generateWorkflow } from './gen.js';

const FINDING = { type: 'object', required: ['source', 'content', 'confidence'], properties: { source: { type: 'string' }, content: { type: 'string' }, confidence: { type: 'number' } } };

function contract(k: number): string {
  return JSON.stringify({
    contractVersion: '1.0.0',
    agentId: `agent-${k}`,
    input: { schema: { type: 'object', required: ['topic'], properties: { topic: {}, in0: { type: 'array', items: FINDING }, in1: { type: 'array', items: FINDING } } } },
    output: { schema: { type: 'object', required: ['findings', 'level'], properties: { findings: { type: 'array', items: FINDING }, level: { enum: ['low', 'medium', 'high'] }, note: { type: 'string' } } } },
    // reads only: an agent serves ~10 phases of each layer, which run at once, so any file it wrote would be
    // written by all of them (`out/{topic}.md` with every phase's `topic` from `$trigger.topic`: one file)
    sideEffects: { filesRead: [{ path: `in/agent-${k}/*.md` }, { path: `out/agent-${(k + 1) % 10}/*.md` }] },
    resources: { estimatedTime: '1-2 minutes', tokenBudget: 4000 },
    compatibility: { minAgentVersion: '1.0.0', requiresContext: ['topic'], providesContext: ['findings'] },
  }, null, 2);
}

function workspace(n: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-check-bench-'));
  let agents = 'agents:\n';
  for (let k = 0; k < 10; k++) {
    writeFileSync(join(dir, `agent-${k}.contract.json`), contract(k));
    agents += `  agent-${k}:\n    version: "1.1.0"\n    x-contract: agent-${k}.contract.json\n`;
  }
  writeFileSync(join(dir, 'workflow.yaml'), generateWorkflow(n, 'lattice').replace(/^workflow:\n/m, `${agents}workflow:\n`));
  return dir;
}

const sink = (cwd: string): CliIo & { bytes: () => number } => {
  let bytes = 0;
  return { stdout: (s) => void (bytes += s.length), stderr: (s) => void (bytes += s.length), isTTY: false, cwd, env: {}, bytes: () => bytes };
};

async function time(argv: string[], cwd: string, repeat = 3): Promise<{ ms: number; code: number; bytes: number }> {
  let best = Infinity;
  let code = -1;
  let bytes = 0;
  for (let i = 0; i < repeat; i++) {
    const io = sink(cwd);
    const t0 = performance.now();
    code = await run(argv, io);
    best = Math.min(best, performance.now() - t0);
    bytes = io.bytes();
  }
  return { ms: best, code, bytes };
}

const rows: string[][] = [];
for (const n of [1_000, 10_000]) {
  const dir = workspace(n);
  await time(['check', 'workflow.yaml'], dir, 1); // warm-up
  const v = await time(['validate', 'workflow.yaml'], dir);
  const c = await time(['check', 'workflow.yaml'], dir);
  const j = await time(['check', '--json', 'workflow.yaml'], dir);
  if (c.code !== 0) throw new Error(`generated workflow does not check clean (exit ${c.code})`);
  rmSync(dir, { recursive: true, force: true });
  rows.push([`validate ${n.toLocaleString()} phases + contracts`, `${v.ms.toFixed(1)} ms`, '']);
  rows.push([`check ${n.toLocaleString()} phases (text report)`, `${c.ms.toFixed(1)} ms`, `${(c.bytes / 1e6).toFixed(2)} MB out`]);
  rows.push([`check ${n.toLocaleString()} phases (--json)`, `${j.ms.toFixed(1)} ms`, `${(j.bytes / 1e6).toFixed(2)} MB out`]);
}
const w = [Math.max(...rows.map((r) => r[0]!.length)), Math.max(...rows.map((r) => r[1]!.length))];
for (const r of rows) console.log(`${r[0]!.padEnd(w[0]!)}  ${r[1]!.padStart(w[1]!)}  ${r[2]}`);
console.log('target: check of 10,000 phases with contracts under 1 s');
