/**
 * A serve-mode agent (`--agent-serve`) of a `baton run` killed with SIGKILL: its process finishes the
 * request it holds (the documented readline loop does: end of input ends the loop, not the work in
 * flight), so `baton resume` must end it before attempt 2 starts, as it ends a once-mode agent's group.
 * It was not recorded with the attempt, and attempt 1 ran on beside attempt 2. A retry under a live
 * Baton keeps its serve process (it answers that Baton's other requests).
 */
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { baton, batonRun, until } from '../helpers/spawn.js';

interface Mark {
  phase: string;
  attempt: number;
  pid: number;
  k: 'start' | 'end';
  t: number;
}

const WORKFLOW = `openintent: "1.0"\ninfo: {name: serve-orphan}\nworkflow:\n  a: {assign: s, outputs: {n: number}, retry: {max_attempts: 3, backoff: constant, initial_delay_ms: 1}}\n  b: {assign: s, depends_on: [a], outputs: {n: number}}\n`;

// each request is logged as it starts and ends; phase a fails its attempt 1 with an error answer when FAIL_ONCE is set
const AGENT = `import { createInterface } from 'node:readline';
import { appendFileSync } from 'node:fs';
const log = (r, k) => appendFileSync(new URL('./marks', import.meta.url), JSON.stringify({ phase: r.phase, attempt: r.attempt, pid: process.pid, k, t: Date.now() }) + '\\n');
createInterface({ input: process.stdin }).on('line', async (line) => {
  const r = JSON.parse(line);
  log(r, 'start');
  await new Promise((res) => setTimeout(res, r.phase === 'a' && r.attempt === 1 ? Number(process.env.FIRST_MS) : 10));
  log(r, 'end');
  if (process.env.FAIL_ONCE && r.phase === 'a' && r.attempt === 1) return process.stdout.write(JSON.stringify({ id: r.id, error: { code: 'Once', message: 'once' } }) + '\\n');
  process.stdout.write(JSON.stringify({ id: r.id, output: { n: r.attempt } }) + '\\n');
});
`;

function project(): string {
  const cwd = mkdtempSync(join(tmpdir(), 'baton-serve-orphan-'));
  writeFileSync(join(cwd, 'workflow.yaml'), WORKFLOW);
  writeFileSync(join(cwd, 'serve.mjs'), AGENT);
  return cwd;
}

const marks = (cwd: string): Mark[] =>
  existsSync(join(cwd, 'marks'))
    ? readFileSync(join(cwd, 'marks'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Mark)
    : [];

const SERVE = ['--agent-serve', `s=${process.execPath} serve.mjs`];

describe('a serve-mode agent of a killed baton run', () => {
  test('baton resume ends it before attempt 2: attempt 1 never finishes beside it', async () => {
    const cwd = project();
    const child = baton(['run', 'workflow.yaml', ...SERVE, '--run-id', 'so', '-q'], { cwd, env: { FIRST_MS: '4000' } });
    await until(() => marks(cwd).some((m) => m.phase === 'a' && m.k === 'start'));
    child.kill('SIGKILL');
    expect((await child.done).signal).toBe('SIGKILL');
    const resumed = await batonRun(['resume', 'so', ...SERVE, '-q'], { cwd, env: { FIRST_MS: '4000' } });
    expect(resumed.code, resumed.stderr).toBe(0);
    const first = marks(cwd).find((m) => m.phase === 'a' && m.attempt === 1 && m.k === 'start')!;
    // attempt 1 would end 4 s after it started: wait past that, then look
    await new Promise((r) => setTimeout(r, Math.max(0, first.t + 4500 - Date.now())));
    const all = marks(cwd);
    expect(all.filter((m) => m.phase === 'a' && m.attempt === 2 && m.k === 'end')).toHaveLength(1);
    expect(all.filter((m) => m.phase === 'a' && m.attempt === 1 && m.k === 'end')).toEqual([]);
  }, 60_000);

  test('a retry under the live baton run keeps its serve process', async () => {
    const cwd = project();
    const r = await batonRun(['run', 'workflow.yaml', ...SERVE, '-q'], { cwd, env: { FIRST_MS: '10', FAIL_ONCE: '1' } });
    expect(r.code, r.stderr).toBe(0);
    const pids = new Set(marks(cwd).map((m) => m.pid));
    expect(marks(cwd).filter((m) => m.k === 'end')).toHaveLength(3);
    expect(pids.size).toBe(1);
  }, 60_000);
});
