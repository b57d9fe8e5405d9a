/**
 * The durable CLI end to end, as users drive it: real processes on the default SQLite store, a
 * real `kill -9` in the middle of a run followed by `baton resume`, gates decided from a second
 * terminal while the first waits, and the run/show/cancel/rerun/worker commands.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { run } from '../../src/cli/main.js';
import { baton, batonRun, until } from '../helpers/spawn.js';

function dir(): string {
  return mkdtempSync(join(tmpdir(), 'baton-durable-'));
}

function capture(cwd: string, env: Record<string, string> = {}): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd, env: { USER: 'tester', ...env }, out: () => out, err: () => err };
}

const CHAIN = `openintent: "1.0"
info: {name: "Slow chain"}
workflow:
  a: {assign: slow, outputs: {n: integer}}
  b: {assign: slow, depends_on: [a], inputs: {n: a.n}, outputs: {n: integer}}
  c: {assign: slow, depends_on: [b], inputs: {n: b.n}, outputs: {n: integer}}
  d: {assign: slow, depends_on: [c], inputs: {n: c.n}, outputs: {n: integer}}
  e: {assign: slow, depends_on: [d], inputs: {n: d.n}, outputs: {n: integer}}
`;

const SLOW_AGENTS = `import { appendFileSync } from 'node:fs';
export default {
  slow: async (ctx) => {
    appendFileSync(new URL('./calls.log', import.meta.url), JSON.stringify({ phase: ctx.phase, attempt: ctx.attempt, key: ctx.idempotencyKey }) + '\\n');
    await new Promise((r) => setTimeout(r, Number(process.env.SLOW_MS ?? 250)));
    return { n: (ctx.input.n ?? 0) + 1, at: ctx.phase };
  },
};
`;

function calls(cwd: string): { phase: string; attempt: number; key: string }[] {
  const f = join(cwd, 'calls.log');
  return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { phase: string; attempt: number; key: string }) : [];
}

async function showJson(cwd: string, runId: string): Promise<{ status: string; phases: Record<string, { status: string; attempts: number; output: unknown }>; gates: { id: string; status: string }[] }> {
  const io = capture(cwd);
  expect(await run(['show', runId, '--json'], io)).toBe(0);
  return JSON.parse(io.out()) as never;
}

describe('crash safety: kill -9, then baton resume', () => {
  test('completed phases never run again and keep their outputs byte for byte; the attempt in flight runs again with the same idempotency key', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), CHAIN);
    writeFileSync(join(cwd, 'agents.mjs'), SLOW_AGENTS);
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'k9', '-q'], { cwd });
    await until(() => calls(cwd).length >= 3);
    child.kill('SIGKILL');
    const killed = await child.done;
    expect(killed.signal).toBe('SIGKILL');
    const before = await showJson(cwd, 'k9');
    expect(before.status).toBe('running');
    const completedBefore = Object.entries(before.phases).filter(([, p]) => p.status === 'completed');
    expect(completedBefore.length).toBeGreaterThanOrEqual(1);

    const resumed = await batonRun(['resume', 'k9', '-q'], { cwd });
    expect(resumed.stderr).not.toMatch(/at .*\.ts:\d+/); // no stack trace
    expect(resumed.code).toBe(0);
    const after = await showJson(cwd, 'k9');
    expect(after.status).toBe('completed');
    for (const [name, p] of completedBefore) expect(JSON.stringify(after.phases[name]!.output)).toBe(JSON.stringify(p.output));
    expect(Object.values(after.phases).map((p) => (p.output as { n: number }).n)).toEqual([1, 2, 3, 4, 5]);

    const log = calls(cwd);
    for (const [name] of completedBefore) expect(log.filter((c) => c.phase === name)).toHaveLength(1);
    // every phase ran; a phase that ran twice was in flight at the kill: a new attempt, the same key
    for (const name of ['a', 'b', 'c', 'd', 'e']) {
      const mine = log.filter((c) => c.phase === name);
      expect(mine.length).toBeGreaterThanOrEqual(1);
      expect(new Set(mine.map((c) => c.key))).toEqual(new Set([`k9:${name}`]));
      expect(mine.map((c) => c.attempt)).toEqual(mine.map((_, i) => i + 1));
    }
    expect(log.length).toBeLessThanOrEqual(6);
  }, 30_000);
});

describe('scratch roots after kill -9', () => {
  test('the killed attempts\u2019 roots are removed by the resume that takes them over; every file in the workspace is recorded', async () => {
    const cwd = dir();
    const tmp = join(cwd, 'tmp');
    mkdirSync(tmp);
    mkdirSync(join(cwd, 'ws', 'in'), { recursive: true });
    writeFileSync(join(cwd, 'ws', 'in', 'd.txt'), 'data');
    writeFileSync(
      join(cwd, 'workflow.yaml'),
      `openintent: "1.0"
info: {name: roots}
workflow:
  fan:
    assign: w
    for_each: $trigger.items
    max_parallel: 3
    inputs: {v: $item}
    inputsFiles: {d: {path: in/d.txt}}
    outputsFiles: {o: {path: "out/<runId>/<index>.txt"}}
    outputs: {v: integer}
`,
    );
    writeFileSync(
      join(cwd, 'agents.mjs'),
      `import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
export default {
  w: async (ctx) => {
    appendFileSync(new URL('./calls.log', import.meta.url), JSON.stringify({ phase: ctx.phase, attempt: ctx.attempt, key: ctx.idempotencyKey }) + '\\n');
    await new Promise((r) => setTimeout(r, Number(process.env.SLOW_MS ?? 250)));
    writeFileSync(ctx.input._workflowFsRoot + '/o', readFileSync(ctx.input._workflowFsRoot + '/d', 'utf8') + ' ' + ctx.input.v);
    return { v: ctx.input.v };
  },
};
`,
    );
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--workspace', 'ws', '--run-id', 'k9f', '--trigger', '{"items":[0,1,2,3,4]}', '-q'], { cwd, env: { TMPDIR: tmp, SLOW_MS: '60000' } });
    await until(() => calls(cwd).length >= 3);
    child.kill('SIGKILL');
    expect((await child.done).signal).toBe('SIGKILL');
    const left = readdirSync(tmp).filter((n) => n.startsWith('baton-files-'));
    expect(left).toHaveLength(3);
    // each names its run
    for (const n of left) expect(n.startsWith('baton-files-k9f_')).toBe(true);

    const resumed = await batonRun(['resume', 'k9f', '-q'], { cwd, env: { TMPDIR: tmp, SLOW_MS: '1' } });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(readdirSync(tmp).filter((n) => n.startsWith('baton-files-'))).toEqual([]);
    const io = capture(cwd);
    expect(await run(['show', 'k9f', '--artifacts', '--json'], io)).toBe(0);
    const synced = (JSON.parse(io.out()) as { direction: string; path: string }[]).filter((r) => r.direction === 'synced').map((r) => r.path).sort();
    expect(synced).toEqual([0, 1, 2, 3, 4].map((i) => `out/k9f/${i}.txt`));
    expect(readdirSync(join(cwd, 'ws', 'out', 'k9f')).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `${i}.txt`));
  }, 60_000);
});

const GATED = `openintent: "1.0"
info: {name: "Gated"}
workflow:
  draft: {assign: writer, outputs: {text: string}}
  publish:
    assign: writer
    depends_on: [draft]
    inputs: {text: draft.text}
    x-require_approval: {approvers: [alice]}
`;

describe('approval from a second terminal', () => {
  test('the waiting run prints the command, refuses a non-approver, and continues within a second of the approval', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), GATED);
    const first = baton(['run', 'workflow.yaml', '--stub-agents', '--run-id', 'g1'], { cwd });
    let stderr = '';
    first.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    // the printed command names the gate's one approver (without --as it would be refused)
    await until(() => /baton approve g1 approve-publish --as alice/.test(stderr));
    const shown0 = capture(cwd);
    expect(await run(['show', 'g1'], shown0)).toBe(0);
    expect(shown0.out()).toContain('baton approve g1 approve-publish --as alice (or baton deny g1 approve-publish --as alice)');
    const runs = capture(cwd);
    expect(await run(['runs', '--status', 'waiting', '--json'], runs)).toBe(0);
    expect((JSON.parse(runs.out()) as { run_id: string }[]).map((r) => r.run_id)).toEqual(['g1']);

    const bob = capture(cwd);
    expect(await run(['approve', 'g1', 'approve-publish', '--as', 'bob'], bob)).toBe(1);
    expect(bob.err()).toMatch(/not an approver/);
    expect((await showJson(cwd, 'g1')).gates).toMatchObject([{ id: 'approve-publish', status: 'open' }]);

    const t0 = Date.now();
    expect(await run(['approve', 'g1', 'approve-publish', '--as', 'alice', '--comment', 'ship it'], capture(cwd))).toBe(0);
    const done = await first.done;
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(done.code).toBe(0);
    const shown = await showJson(cwd, 'g1');
    expect(shown.status).toBe('completed');
    expect(shown.gates).toMatchObject([{ id: 'approve-publish', status: 'approved', decided_by: 'alice', comment: 'ship it' }]);
  }, 30_000);

  test('show says the foreground run that started it drives it while a gate is open, and no process once it was killed', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), GATED);
    const first = baton(['run', 'workflow.yaml', '--stub-agents', '--run-id', 'g3'], { cwd });
    let stderr = '';
    first.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await until(() => /baton approve g3 approve-publish/.test(stderr));
    // no attempt runs (no lease in the task rows), yet the run is not abandoned: `baton resume` is not what it needs
    const alive = capture(cwd);
    expect(await run(['show', 'g3'], alive)).toBe(0);
    expect(alive.out()).toContain(`the process that started it (${hostname()}:${first.pid}:`);
    expect(alive.out()).toContain('still drives it: it continues the run once the gate is decided');
    expect(alive.out()).not.toMatch(/no process is working on this run/);
    first.kill('SIGKILL');
    await first.done;
    const gone = capture(cwd);
    expect(await run(['show', 'g3'], gone)).toBe(0);
    expect(gone.out()).not.toContain('still drives it');
    expect(gone.out()).toContain('no process is working on this run: continue it with baton resume g3');
  }, 30_000);

  test('a denied phase gate fails the phase and the run', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), GATED);
    expect(await run(['run', 'workflow.yaml', '--stub-agents', '--run-id', 'g2', '--detach'], capture(cwd))).toBe(0);
    // nothing drives it yet: the gate opens when a process (resume, worker) reaches it
    const first = baton(['resume', 'g2', '-q'], { cwd });
    await until(async () => (await showJson(cwd, 'g2')).gates.length === 1);
    expect(await run(['deny', 'g2', 'approve-publish', '--as', 'alice'], capture(cwd))).toBe(0);
    const done = await first.done;
    expect(done.code).toBe(1);
    const shown = await showJson(cwd, 'g2');
    expect(shown.phases['publish']).toMatchObject({ status: 'failed', error: { code: 'ApprovalDenied' } });
  }, 30_000);
});

const ASKING = `openintent: "1.0"
info: {name: "Asking"}
workflow:
  ask: {assign: asker, outputs: {color: string}}
`;
const ASKING_AGENTS = `export default {
  asker: async (ctx) => ({ color: await ctx.requestInput({ question: 'Which colour?', choices: ['red', 'blue'] }) }),
};
`;

describe('input gates', () => {
  test('a wrong answer is refused and the gate stays open; a right one resumes the agent', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), ASKING);
    writeFileSync(join(cwd, 'agents.mjs'), ASKING_AGENTS);
    const first = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'in1'], { cwd });
    let stderr = '';
    first.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await until(() => /baton respond in1 input-ask-1/.test(stderr));
    const shown = await showJson(cwd, 'in1');
    expect(shown.status).toBe('waiting');
    expect(shown.phases['ask']!.status).toBe('suspended_awaiting_input');

    const wrong = capture(cwd);
    expect(await run(['respond', 'in1', 'input-ask-1', '--value', '"green"'], wrong)).toBe(1);
    expect(wrong.err()).toMatch(/not one of the choices/);
    expect(await run(['respond', 'in1', 'input-ask-1', '--value', 'not json'], capture(cwd))).toBe(2);
    expect(await run(['respond', 'in1', 'input-ask-1', '--value', '"blue"'], capture(cwd))).toBe(0);
    expect((await first.done).code).toBe(0);
    expect((await showJson(cwd, 'in1')).phases['ask']!.output).toEqual({ color: 'blue' });
  }, 30_000);

  test('show names the process that waits for the answer, and says it is gone once it was killed', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), ASKING);
    writeFileSync(join(cwd, 'agents.mjs'), ASKING_AGENTS);
    const first = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'in3'], { cwd });
    let stderr = '';
    first.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await until(() => /baton respond in3 input-ask-1/.test(stderr));
    const alive = capture(cwd);
    expect(await run(['show', 'in3'], alive)).toBe(0);
    // the foreground run holds the attempt: the answer reaches it there, no resume is needed
    expect(alive.out()).toContain(`ask: attempt 1 waits for its answer in ${hostname()}:${first.pid}:`);
    expect(alive.out()).not.toMatch(/no process is working on this run/);
    first.kill('SIGKILL');
    await first.done;
    const gone = capture(cwd);
    expect(await run(['show', 'in3'], gone)).toBe(0);
    expect(gone.out()).toMatch(new RegExp(`ask: attempt 1 asked in ${hostname()}:${first.pid}:\\S+, which is gone`));
    expect(gone.out()).toContain('no process is working on this run: continue it with baton resume in3');
    expect(await run(['respond', 'in3', 'input-ask-1', '--value', '"red"'], capture(cwd))).toBe(0);
    expect((await batonRun(['resume', 'in3', '-q'], { cwd })).code).toBe(0);
    expect((await showJson(cwd, 'in3')).phases['ask']!.output).toEqual({ color: 'red' });
  }, 30_000);
});

const ASKING_ITEMS = `openintent: "1.0"
info: {name: "Asking items"}
x-trigger: {colors: "string[]"}
workflow:
  ask: {assign: asker, for_each: $trigger.colors, inputs: {c: $item}, outputs: {color: string}}
`;

describe('input gates of fan-out items', () => {
  test('the printed commands name the item\u2019s gate quoted, so a shell that refuses unmatched globs runs them', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), ASKING_ITEMS);
    writeFileSync(join(cwd, 'agents.mjs'), ASKING_AGENTS);
    const first = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'in2', '--trigger', '{"colors": ["x"]}'], { cwd });
    let stderr = '';
    first.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await until(() => /baton respond in2 /.test(stderr));
    const printed = /^ {2}(baton respond in2 .*?--value) '<JSON>'/m.exec(stderr)?.[1];
    expect(printed).toBe("baton respond in2 'input-ask[0]-1' --value");
    const shown = capture(cwd);
    expect(await run(['show', 'in2'], shown)).toBe(0);
    expect(shown.out()).toContain("baton respond in2 'input-ask[0]-1' --value");
    // what a user pastes, with `baton` standing for the built CLI, in a shell where an unmatched glob is an error (zsh's default)
    const cli = join(import.meta.dirname, '..', '..', 'bin', 'baton.js');
    const pasted = spawnSync('bash', ['-O', 'failglob', '-c', `${printed!.replace(/^baton/, `${JSON.stringify(process.execPath)} ${JSON.stringify(cli)}`)} '"red"'`], { cwd, encoding: 'utf8' });
    expect(pasted.stderr).toBe('');
    expect(pasted.status).toBe(0);
    expect((await first.done).code).toBe(0);
    expect((await showJson(cwd, 'in2')).phases['ask']!.output).toEqual({ color: ['red'] });
  }, 30_000);
});

describe('the durable commands', () => {
  test('run --detach, runs, show, cancel; unknown runs and gates exit 2; a second start with the same id is refused', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), GATED);
    const start = capture(cwd);
    expect(await run(['run', 'workflow.yaml', '--stub-agents', '--run-id', 'd1', '--detach'], start)).toBe(0);
    expect(start.out().trim()).toBe('d1');
    expect(existsSync(join(cwd, '.baton', 'baton.db'))).toBe(true);
    const again = capture(cwd);
    expect(await run(['run', 'workflow.yaml', '--stub-agents', '--run-id', 'd1', '--detach'], again)).toBe(2);
    expect(again.err()).toMatch(/already exists/);

    const list = capture(cwd);
    expect(await run(['runs'], list)).toBe(0);
    expect(list.out()).toMatch(/d1\s+Gated\s+running/);
    expect(list.err()).toBe('');
    // a list cut by --limit says so on stderr (stdout stays the table, or the JSON)
    expect(await run(['run', 'workflow.yaml', '--stub-agents', '--run-id', 'd0', '--detach'], capture(cwd))).toBe(0);
    const cut = capture(cwd);
    expect(await run(['runs', '--limit', '1', '--json'], cut)).toBe(0);
    expect(JSON.parse(cut.out())).toHaveLength(1);
    expect(cut.err()).toMatch(/the newest 1 runs are listed, and there are more: --limit N/);
    const whole = capture(cwd);
    expect(await run(['runs', '--limit', '2'], whole)).toBe(0);
    expect(whole.err()).toBe('');
    const show = capture(cwd);
    expect(await run(['show', 'd1', '--events'], show)).toBe(0);
    expect(show.out()).toMatch(/run\.started/);

    for (const args of [['show', 'nope'], ['resume', 'nope'], ['approve', 'd1', 'no-gate'], ['cancel', 'nope']]) {
      const io = capture(cwd);
      expect(await run(args, io), args.join(' ')).toBe(2);
      expect(io.err()).not.toMatch(/\n\s+at /);
    }
    expect(await run(['cancel', 'd1', '--reason', 'budget review'], capture(cwd))).toBe(0);
    expect((await showJson(cwd, 'd1')).status).toBe('cancelled');
    // show says why (it was only in the events)
    const shown = capture(cwd);
    expect(await run(['show', 'd1'], shown)).toBe(0);
    expect(shown.out()).toMatch(/^ {2}cancelled: budget review$/m);
    expect(await run(['cancel', 'd1'], capture(cwd))).toBe(1);
  });

  test('a corrupt store file and an unreachable database exit 2 with a clear message', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'bad.db'), 'this is not a database, it is a text file that is long enough to have a header'.repeat(20));
    const io = capture(cwd);
    expect(await run(['runs', '--store', 'bad.db'], io)).toBe(2);
    expect(io.err()).toMatch(/bad\.db/);
    const pg = capture(cwd);
    expect(await run(['runs', '--store', 'postgres://postgres@127.0.0.1:1/nope'], pg)).toBe(2);
    expect(pg.err()).not.toMatch(/\n\s+at /);
  });

  test('run against a database that refuses: waits a few seconds, then says no run was created (exit 2)', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), CHAIN);
    writeFileSync(join(cwd, 'agents.mjs'), SLOW_AGENTS);
    const io = capture(cwd);
    const t0 = performance.now();
    expect(await run(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--store', 'postgres://postgres@127.0.0.1:1/nope', '-q'], io)).toBe(2);
    expect(performance.now() - t0).toBeLessThan(15_000);
    expect(io.err()).toMatch(/^store unavailable, retrying for up to 5 s: .*ECONNREFUSED/);
    expect(io.err()).toMatch(/ECONNREFUSED 127\.0\.0\.1:1; no run was created\n$/);
    expect(io.err()).not.toMatch(/\n\s+at /);
  }, 30_000);

  test('rerun --from reuses upstream outputs and runs the phase and its descendants again', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), CHAIN);
    writeFileSync(join(cwd, 'agents.mjs'), SLOW_AGENTS);
    expect(await run(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'r1', '-q'], capture(cwd, { SLOW_MS: '1' }))).toBe(0);
    const first = calls(cwd).length;
    expect(first).toBe(5);
    const io = capture(cwd);
    expect(await run(['rerun', 'r1', '--from', 'd', '--run-id', 'r2', '-q'], io)).toBe(0);
    expect(calls(cwd).slice(first).map((c) => c.phase)).toEqual(['d', 'e']);
    const shown = await showJson(cwd, 'r2');
    expect(shown.status).toBe('completed');
    expect(Object.values(shown.phases).map((p) => (p.output as { n: number }).n)).toEqual([1, 2, 3, 4, 5]);
  });

  test('rerun --detach of a phase behind a gate says the run waits in the store, not that this process waits, and how to continue it', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), GATED);
    expect(await run(['run', 'workflow.yaml', '--stub-agents', '--run-id', 'rg1', '--detach'], capture(cwd))).toBe(0);
    const first = baton(['resume', 'rg1', '-q'], { cwd });
    await until(async () => (await showJson(cwd, 'rg1')).gates.length === 1);
    expect(await run(['approve', 'rg1', 'approve-publish', '--as', 'alice'], capture(cwd))).toBe(0);
    expect((await first.done).code).toBe(0);
    const io = capture(cwd);
    expect(await run(['rerun', 'rg1', '--from', 'publish', '--run-id', 'rg2', '--detach'], io)).toBe(0);
    expect(io.out()).toBe('rg2\n');
    // the gate opens as the rerun is stored; the command exits at once, so nobody here waits for it
    expect(io.err()).toContain('baton approve rg2 approve-publish --as alice');
    expect(io.err()).toContain('the run waits in the store until it is decided');
    expect(io.err()).not.toMatch(/Ctrl-C|waiting; the run continues/);
    expect(io.err()).toContain('run rg2 stored in .baton/baton.db; continue it with: baton resume rg2');
    expect((await showJson(cwd, 'rg2')).gates).toMatchObject([{ id: 'approve-publish', status: 'open' }]);
  });

  test('rerun of a run started with --auto-approve approves as it did; --no-auto-approve makes it ask', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), GATED);
    expect(await run(['run', 'workflow.yaml', '--stub-agents', '--run-id', 'ra1', '--auto-approve', '-q'], capture(cwd))).toBe(0);
    expect((await showJson(cwd, 'ra1')).status).toBe('completed');
    expect(await run(['rerun', 'ra1', '--from', 'publish', '--stub-agents', '--run-id', 'ra2', '-q'], capture(cwd))).toBe(0);
    expect((await showJson(cwd, 'ra2')).status).toBe('completed');
    const io = capture(cwd);
    expect(await run(['rerun', 'ra1', '--from', 'publish', '--stub-agents', '--run-id', 'ra3', '--no-auto-approve', '--detach'], io)).toBe(0);
    expect(io.err()).toContain('baton approve ra3 approve-publish');
    expect((await showJson(cwd, 'ra3')).gates).toMatchObject([{ id: 'approve-publish', status: 'open' }]);
  });

  test('a detached run is finished by a worker process', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), CHAIN);
    writeFileSync(join(cwd, 'agents.mjs'), SLOW_AGENTS);
    expect(await run(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'w1', '--detach'], capture(cwd))).toBe(0);
    const worker = baton(['worker', '--agents', 'agents.mjs', '-q'], { cwd, env: { SLOW_MS: '1' } });
    try {
      await until(async () => (await showJson(cwd, 'w1')).status === 'completed', 20_000);
    } finally {
      worker.kill('SIGINT');
      await worker.done;
    }
    expect(calls(cwd).map((c) => c.phase)).toEqual(['a', 'b', 'c', 'd', 'e']);
  }, 30_000);
});

describe('the workflow-state export', () => {
  test('--state-out where no file can be made is a warning that says so, and the run completes', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), GATED);
    const io = capture(cwd);
    // /proc exists and takes no new file: the write fails with ENOENT though the directory is there
    expect(await run(['run', 'workflow.yaml', '--stub-agents', '--store', 'memory', '--state-out', '/proc/baton-state.json', '--auto-approve', '-q'], io)).toBe(0);
    expect(io.err()).toMatch(/cannot write --state-out \/proc\/baton-state\.json \(no file can be made there\)/);
    expect(io.err()).not.toMatch(/directory is gone/);
  });

  test('show --state and run --state-out give the run in the contract spec\'s workflow-state shape', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), GATED);
    const io = capture(cwd);
    expect(await run(['run', 'workflow.yaml', '--stub-agents', '--run-id', 'st1', '--state-out', 'state.json', '--auto-approve', '-q'], io)).toBe(0);
    const file = JSON.parse(readFileSync(join(cwd, 'state.json'), 'utf8')) as { workflowState: Record<string, unknown> };
    expect(file.workflowState).toMatchObject({ id: 'st1', name: 'Gated', status: 'completed', currentStep: null, nextSteps: [] });
    const steps = (file.workflowState['context'] as { completedSteps: { stepId: string; agentId: string; outputs: unknown }[] }).completedSteps;
    expect(steps.map((s) => s.stepId)).toEqual(['draft', 'publish']);
    expect(steps[0]).toMatchObject({ agentId: 'writer', outputs: { text: expect.any(String) as unknown } });

    // a run waiting at its gate: the next step and the inputs it will receive
    expect(await run(['run', 'workflow.yaml', '--stub-agents', '--run-id', 'st2', '--detach'], capture(cwd))).toBe(0);
    const waiting = baton(['resume', 'st2', '-q'], { cwd });
    await until(async () => (await showJson(cwd, 'st2')).gates.length === 1);
    const show = capture(cwd);
    expect(await run(['show', 'st2', '--state'], show)).toBe(0);
    const doc = JSON.parse(show.out()) as { workflowState: { status: string; currentStep: string | null; nextSteps: { stepId: string; inputs: Record<string, unknown> | null }[] } };
    expect(doc.workflowState.status).toBe('waiting');
    expect(doc.workflowState.currentStep).toBe('publish');
    expect(doc.workflowState.nextSteps).toEqual([expect.objectContaining({ stepId: 'publish', agentId: 'writer', inputs: { text: expect.any(String) as unknown } })]);
    await run(['cancel', 'st2'], capture(cwd));
    await waiting.done;
  }, 30_000);
});

describe('baton show --artifacts', () => {
  test('lists the files agents recorded (phase, attempt, access, path, sha256, size)', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), 'openintent: "1.0"\ninfo: {name: "Files"}\nworkflow:\n  w: {assign: writer}\n');
    writeFileSync(join(cwd, 'agents.mjs'), `export default { writer: (ctx) => { ctx.record('file_written', { path: 'out/a.md', sha256: 'ab'.repeat(32), size: 12 }); return {}; } };\n`);
    expect(await run(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'f1', '-q'], capture(cwd))).toBe(0);
    const io = capture(cwd);
    expect(await run(['show', 'f1', '--artifacts', '--json'], io)).toBe(0);
    expect(JSON.parse(io.out())).toEqual([{ run_id: 'f1', phase: 'w', attempt: 1, item: null, key: null, access: 'written', direction: 'declared', path: 'out/a.md', sha256: 'ab'.repeat(32), size: 12 }]);
    const text = capture(cwd);
    expect(await run(['show', 'f1', '--artifacts'], text)).toBe(0);
    expect(text.out()).toMatch(/w#1\s+written\s+declared\s+"out\/a\.md"/);
  });

  test('a fan-out item is named once: `f[1]#1`, not `f[1]#1[1]`', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), 'openintent: "1.0"\ninfo: {name: "Fan"}\nx-trigger: {items: "string[]"}\nworkflow:\n  f:\n    assign: w\n    for_each: $trigger.items\n    outputsFiles: {o: {path: "out/<index>.txt"}}\n    outputs: {n: integer}\n');
    writeFileSync(join(cwd, 'agents.mjs'), `import { writeFileSync } from 'node:fs';\nexport default { w: (ctx) => { writeFileSync(ctx.input._workflowFsRoot + '/o', String(ctx.item.index)); return { n: ctx.item.index }; } };\n`);
    expect(await run(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'f2', '--trigger', '{"items": ["a", "b"]}', '-q'], capture(cwd))).toBe(0);
    const text = capture(cwd);
    expect(await run(['show', 'f2', '--artifacts'], text)).toBe(0);
    const lines = text.out().trim().split('\n').sort();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^f\[0\]#1\s+written\s+synced\s+o\s+"out\/0\.txt"/);
    expect(lines[1]).toMatch(/^f\[1\]#1\s+written\s+synced\s+o\s+"out\/1\.txt"/);
  });
});

const ESCALATING = `openintent: "1.0"
info: {name: "Escalating"}
agents:
  drafter:
    x-contract:
      errorHandling: {onAgentFailure: {action: escalate_to_user}}
workflow:
  draft: {assign: drafter, outputs: {draft: string}}
`;

const ESCALATING_AGENTS = `export default {
  drafter: (ctx) => {
    if (ctx.attempt === 1) throw Object.assign(new Error('the model is down'), { code: 'ModelDown', retryable: false });
    return { draft: 'written on attempt ' + ctx.attempt };
  },
};
`;

describe('escalation to a human (onAgentFailure: escalate_to_user)', () => {
  test('the failed phase waits for retry, skip or fail, answered from a second terminal', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), ESCALATING);
    writeFileSync(join(cwd, 'agents.mjs'), ESCALATING_AGENTS);
    const first = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'esc1'], { cwd });
    let stderr = '';
    first.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await until(() => /baton respond esc1 escalate-draft-1 --value retry\|skip\|fail/.test(stderr));
    expect(stderr).toMatch(/decision needed: phase `draft` failed after 1 attempt \(ModelDown: the model is down\)/);
    const shown = await showJson(cwd, 'esc1');
    expect(shown.status).toBe('waiting');
    expect(shown.phases['draft']!.status).toBe('suspended_awaiting_input');
    const wrong = capture(cwd);
    expect(await run(['respond', 'esc1', 'escalate-draft-1', '--value', 'later'], wrong)).toBe(2);
    expect(await run(['respond', 'esc1', 'escalate-draft-1', '--value', 'retry'], capture(cwd))).toBe(0);
    expect((await first.done).code).toBe(0);
    const done = await showJson(cwd, 'esc1');
    expect(done.status).toBe('completed');
    expect(done.phases['draft']).toMatchObject({ status: 'completed', attempts: 2, output: { draft: 'written on attempt 2' } });
  }, 30_000);
});

const CHECKPOINTED = `openintent: "1.0"
info: {name: "Checkpointed"}
agents:
  counter:
    x-contract:
      errorHandling: {onTimeout: {action: checkpoint_and_retry, maxRetries: 2}}
workflow:
  count: {assign: counter, outputs: {total: integer}}
`;

const COUNTING_AGENTS = `import { appendFileSync } from 'node:fs';
export default {
  counter: async (ctx) => {
    const from = ctx.lastCheckpoint?.done ?? 0;
    appendFileSync(new URL('./calls.log', import.meta.url), JSON.stringify({ phase: ctx.phase, attempt: ctx.attempt, key: ctx.idempotencyKey, from }) + '\\n');
    for (let i = from + 1; i <= 6; i++) {
      await new Promise((r) => setTimeout(r, 60));
      await ctx.checkpoint({ done: i });
    }
    return { total: 6, resumed_from: from };
  },
};
`;

describe('checkpoints survive kill -9', () => {
  test('the attempt after the crash starts from the last checkpoint the killed one saved', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'workflow.yaml'), CHECKPOINTED);
    writeFileSync(join(cwd, 'agents.mjs'), COUNTING_AGENTS);
    const child = baton(['run', 'workflow.yaml', '--agents', 'agents.mjs', '--run-id', 'cp9', '-q'], { cwd });
    const saved = async (): Promise<number> => {
      const io = capture(cwd);
      if ((await run(['show', 'cp9', '--json', '--events'], io)) !== 0) return 0;
      const doc = JSON.parse(io.out()) as { events?: { type: string }[] };
      return (doc.events ?? []).filter((e) => e.type === 'task.checkpoint').length;
    };
    await until(async () => (await saved()) >= 2);
    child.kill('SIGKILL');
    await child.done;
    const resumed = await batonRun(['resume', 'cp9', '-q'], { cwd });
    expect(resumed.code).toBe(0);
    const after = await showJson(cwd, 'cp9');
    expect(after.phases['count']).toMatchObject({ status: 'completed', attempts: 2 });
    const out = after.phases['count']!.output as { resumed_from: number };
    const log = calls(cwd) as unknown as { attempt: number; from: number }[];
    expect(log.map((c) => c.attempt)).toEqual([1, 2]);
    expect(log[1]!.from).toBeGreaterThanOrEqual(2);
    expect(out.resumed_from).toBe(log[1]!.from);
  }, 30_000);
});

describe('a once-mode subprocess agent saves checkpoints on fd 3', () => {
  test('its attempt times out; the retry starts from what it saved', async () => {
    const cwd = dir();
    const agent = join(import.meta.dirname, '..', 'fixtures', 'agents', 'checkpoint.mjs');
    writeFileSync(
      join(cwd, 'workflow.yaml'),
      `openintent: "1.0"
info: {name: "Checkpointed subprocess"}
agents:
  counter:
    x-command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(agent)}]
    x-contract:
      errorHandling: {onTimeout: {action: checkpoint_and_retry, maxRetries: 1}}
workflow:
  count: {assign: counter, x-timeout_ms: 3000, initial_state: {upto: 3, hang: true}, inputs: {upto: $initial_state.upto, hang: $initial_state.hang}, outputs: {from: integer, attempt: integer}}
`,
    );
    const io = capture(cwd);
    expect(await run(['run', 'workflow.yaml', '--run-id', 'sub1', '-q'], io)).toBe(0);
    const after = await showJson(cwd, 'sub1');
    expect(after.phases['count']).toMatchObject({ status: 'completed', attempts: 2, output: { from: 3, attempt: 2 } });
  }, 30_000);
});
