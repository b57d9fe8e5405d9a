/**
 * AIP-16 file contracts through the whole engine: phase- and agent-level files staged per attempt,
 * `_workflowFsRoot` injected, outputs synced with tokens, provenance recorded as `task.file` and
 * traced from the attempt that wrote a file to the one that read it, the errors of the AIP, a
 * subprocess working in its root, the workspace from `--workspace`, and `baton show --artifacts`.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createEngine } from '../src/api/engine.js';
import type { FileStager } from '../src/engine/files.js';
import { localFileStager } from '../src/engine/files-local.js';
import type { AgentContext } from '../src/engine/agent.js';
import type { RunEvent } from '../src/engine/events.js';
import type { RunStore } from '../src/engine/ports.js';
import { replay } from '../src/engine/state.js';
import { MemoryStore } from '../src/store/memory.js';
import { SqliteStore } from '../src/store/sqlite.js';
import type { CliIo } from '../src/cli/io.js';
import { run } from '../src/cli/main.js';
import { loadWorkflow } from '../src/workflow/compile.js';

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

const WORKFLOW = `openintent: "1.0"
info: {name: paper}
agents:
  editor:
    inputsFiles:
      style: {path: style/guide.md, mode: ro, contentType: text/markdown}
workflow:
  draft:
    assign: writer
    inputs: {topic: $trigger.topic}
    inputsFiles:
      notes: {path: notes/<phase>.md}
    outputsFiles:
      draft: {path: "drafts/<runId>/<phase>-<attempt>.md", contentType: text/markdown}
      log: {path: "logs/<runId>.txt"}
    outputs: {words: integer}
  edit:
    assign: editor
    depends_on: [draft]
    inputs: {words: draft.words}
    inputsFiles:
      draft: {path: "drafts/<runId>/draft-1.md"}
    outputsFiles:
      final: {path: "final/<workflowId>-<isoDate>.md"}
    outputs: {ok: boolean}
`;

let ws: string;
beforeEach(() => {
  ws = mkdtempSync(join(tmpdir(), 'baton-files-e2e-'));
  mkdirSync(join(ws, 'notes'));
  mkdirSync(join(ws, 'style'));
  writeFileSync(join(ws, 'notes', 'draft.md'), 'tides');
  writeFileSync(join(ws, 'style', 'guide.md'), 'be brief');
  writeFileSync(join(ws, 'workflow.yaml'), WORKFLOW);
});
afterEach(() => rmSync(ws, { recursive: true, force: true }));

const roots: string[] = [];
const agents = {
  writer: (ctx: AgentContext) => {
    const root = (ctx.input['_workflowFsRoot'] as string);
    roots.push(root);
    const notes = readFileSync(join(root, 'notes'), 'utf8');
    writeFileSync(join(root, 'draft'), `# ${(ctx.input['topic'] as string)}\n${notes}\n`);
    writeFileSync(join(root, 'scratch.tmp'), 'discarded'); // undeclared: never synced
    return { words: 2 }; // `log` is declared and not produced: a warning
  },
  editor: (ctx: AgentContext) => {
    const root = (ctx.input['_workflowFsRoot'] as string);
    roots.push(root);
    const text = readFileSync(join(root, 'draft'), 'utf8') + readFileSync(join(root, 'style'), 'utf8');
    writeFileSync(join(root, 'final'), text.toUpperCase());
    return { ok: true };
  },
};

async function runIt(store: RunStore = new MemoryStore(), extra: { workspace?: string } = {}): Promise<{ events: RunEvent[]; status: string; phases: Record<string, { status: string; error?: { code: string } | undefined }> }> {
  const r = await loadWorkflow(join(ws, 'workflow.yaml'));
  if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
  const engine = createEngine({ store, agents });
  try {
    const res = await engine.run(r.model, { runId: 'r1', trigger: { topic: 'Moons' }, path: join(ws, 'workflow.yaml'), ...extra });
    return res;
  } finally {
    await engine.close();
  }
}

describe('file contracts through the engine', () => {
  test('stages, injects, syncs with tokens, records provenance, removes every root', async () => {
    roots.length = 0;
    const r = await runIt();
    expect(r.status).toBe('completed');
    expect(readFileSync(join(ws, 'drafts', 'r1', 'draft-1.md'), 'utf8')).toBe('# Moons\ntides\n');
    const today = new Date().toISOString().slice(0, 10);
    expect(readFileSync(join(ws, 'final', `paper-${today}.md`), 'utf8')).toBe('# MOONS\nTIDES\nBE BRIEF');
    expect(existsSync(join(ws, 'scratch.tmp'))).toBe(false);
    // one fresh root per attempt, gone afterwards
    expect(new Set(roots).size).toBe(2);
    for (const root of roots) expect(existsSync(root)).toBe(false);

    const files = r.events.flatMap((e) => (e.type === 'task.file' ? [`${e.phase}#${e.attempt} ${e.direction} ${e.key} ${e.path} ${e.size}`] : []));
    expect(files).toEqual([
      'draft#1 staged notes notes/draft.md 5',
      'draft#1 synced draft drafts/r1/draft-1.md 14',
      'edit#1 staged style style/guide.md 8',
      'edit#1 staged draft drafts/r1/draft-1.md 14',
      `edit#1 synced final final/paper-${today}.md 22`,
    ]);
    // a file staged into a later phase traces back to the attempt that wrote it: the same bytes
    const fileEvents = r.events.filter((e): e is Extract<RunEvent, { type: 'task.file' }> => e.type === 'task.file');
    const written = fileEvents.find((e) => e.direction === 'synced' && e.key === 'draft')!;
    const read = fileEvents.find((e) => e.phase === 'edit' && e.key === 'draft')!;
    expect(read.sha256).toBe(written.sha256);
    expect(written.sha256).toBe(sha('# Moons\ntides\n'));
    const warnings = r.events.flatMap((e) => (e.type === 'task.warning' ? [`${e.phase} ${e.code} ${e.details?.['path'] as string}`] : []));
    expect(warnings).toEqual(['draft DeclaredFileMissing logs/r1.txt']);
    // the input the agent saw carried the root; the recorded input did not (it is the executor's)
    const claimed = r.events.find((e) => e.type === 'task.claimed' && e.phase === 'draft');
    expect(claimed && 'input' in claimed ? claimed.input : undefined).toEqual({ topic: 'Moons' });
    // replay accepts task.file: the state is the same with or without them
    const without = replay('r1', r.events.filter((e) => e.type !== 'task.file'));
    expect([...replay('r1', r.events).phases.values()].map((p) => p.status)).toEqual([...without.phases.values()].map((p) => p.status));
  });

  test('a missing input file fails the phase before its agent runs, naming the path, without retries', async () => {
    rmSync(join(ws, 'notes', 'draft.md'));
    writeFileSync(join(ws, 'workflow.yaml'), WORKFLOW.replace('    assign: writer\n', '    assign: writer\n    retry: {max_attempts: 3, initial_delay_ms: 1}\n'));
    roots.length = 0;
    const r = await runIt();
    expect(r.status).toBe('failed');
    expect(r.phases['draft']).toMatchObject({ status: 'failed', error: { code: 'MissingInputFile' } });
    expect(JSON.stringify(r.phases['draft']?.error)).toContain('notes/draft.md');
    expect(roots).toEqual([]);
    expect(r.events.filter((e) => e.type === 'task.claimed')).toHaveLength(1);
  });

  test.each([
    ['a folder', (p: string) => mkdirSync(p)],
    ['a FIFO with no writer (opening it to read waited for ever, and the process could not exit)', (p: string) => execFileSync('mkfifo', [p])],
  ])('an input that is %s fails the phase as MissingInputFile, at once', async (_, make) => {
    rmSync(join(ws, 'notes', 'draft.md'));
    make(join(ws, 'notes', 'draft.md'));
    writeFileSync(join(ws, 'workflow.yaml'), WORKFLOW);
    const r = await runIt();
    expect(r.phases['draft']).toMatchObject({ status: 'failed', error: { code: 'MissingInputFile', details: { key: 'notes', path: 'notes/draft.md' } } });
  }, 10_000);

  test('--workspace moves where files are read and written; the run records it', async () => {
    const other = mkdtempSync(join(tmpdir(), 'baton-files-ws-'));
    mkdirSync(join(other, 'notes'));
    mkdirSync(join(other, 'style'));
    writeFileSync(join(other, 'notes', 'draft.md'), 'elsewhere');
    writeFileSync(join(other, 'style', 'guide.md'), '!');
    const store = new MemoryStore();
    const r = await runIt(store, { workspace: other });
    expect(r.status).toBe('completed');
    expect(readFileSync(join(other, 'drafts', 'r1', 'draft-1.md'), 'utf8')).toBe('# Moons\nelsewhere\n');
    expect(existsSync(join(ws, 'drafts'))).toBe(false);
    expect((await store.run('r1'))?.options['workspace']).toBe(other);
    rmSync(other, { recursive: true, force: true });
  });

  test('--workspace that does not exist yet: the first synced output makes it (every output was refused as a link out)', async () => {
    const later = join(ws, 'not', 'yet');
    writeFileSync(join(ws, 'out-only.yaml'), `openintent: "1.0"
info: {name: later}
workflow:
  one:
    assign: writer
    outputsFiles: {o: {path: "out/<runId>.txt"}}
`);
    const r = await loadWorkflow(join(ws, 'out-only.yaml'));
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    const engine = createEngine({ store: new MemoryStore(), agents: { writer: (ctx: AgentContext) => (writeFileSync(join(ctx.input['_workflowFsRoot'] as string, 'o'), 'made'), {}) } });
    try {
      const res = await engine.run(r.model, { runId: 'w1', workspace: later });
      expect(res.events.filter((e) => e.type === 'task.log').map((e) => ('message' in e ? e.message : ''))).toEqual([]);
      expect(res.events.filter((e) => e.type === 'task.file').map((e) => (e.type === 'task.file' ? e.path : ''))).toEqual(['out/w1.txt']);
      expect(readFileSync(join(later, 'out', 'w1.txt'), 'utf8')).toBe('made');
    } finally {
      await engine.close();
    }
  });

  test('a subprocess agent works in its scratch root', async () => {
    writeFileSync(
      join(ws, 'workflow.yaml'),
      `openintent: "1.0"
info: {name: sub}
agents:
  shell:
    x-command: [node, -e, "const fs=require('fs');fs.writeFileSync('out', fs.readFileSync('in','utf8')+'!');process.stdout.write(JSON.stringify({cwd: process.cwd()}))"]
workflow:
  one:
    assign: shell
    inputsFiles: {in: {path: notes/draft.md}}
    outputsFiles: {out: {path: out/one.txt}}
    outputs: {cwd: string}
`,
    );
    const r = await loadWorkflow(join(ws, 'workflow.yaml'));
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    const engine = createEngine({ store: new MemoryStore() });
    try {
      const res = await engine.run(r.model, { path: join(ws, 'workflow.yaml') });
      expect(res.status).toBe('completed');
      const cwd = res.phases['one']?.output?.['cwd'] as string;
      expect(cwd).not.toBe(ws);
      // named after its run, phase and attempt: baton-files-<run>_<h>-one.1_<h>-XXXXXX
      expect(cwd).toMatch(new RegExp(`baton-files-${res.runId}_[0-9a-f]{8}-one\\.1_[0-9a-f]{8}-[A-Za-z0-9]{6}$`));
      expect(existsSync(cwd)).toBe(false);
      expect(readFileSync(join(ws, 'out', 'one.txt'), 'utf8')).toBe('tides!');
    } finally {
      await engine.close();
    }
  });

  test('a subprocess agent named by a relative path fails in its scratch root, and its failure says where it ran', async () => {
    writeFileSync(join(ws, 'rel-agent.js'), "process.stdout.write('{}')");
    writeFileSync(
      join(ws, 'workflow.yaml'),
      `openintent: "1.0"
info: {name: sub}
agents:
  shell:
    x-command: [node, rel-agent.js]
workflow:
  one:
    assign: shell
    inputsFiles: {in: {path: notes/draft.md}}
`,
    );
    const r = await loadWorkflow(join(ws, 'workflow.yaml'));
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    const engine = createEngine({ store: new MemoryStore() });
    try {
      const res = await engine.run(r.model, { path: join(ws, 'workflow.yaml'), cwd: ws });
      expect(res.status).toBe('failed');
      const error = res.phases['one']?.error;
      expect(error?.code).toBe('SubprocessExit');
      expect(error?.message).toContain(`(a phase with files runs it in the attempt's scratch root, not in ${ws}: name the program by an absolute path)`);
      expect(error?.message).toContain('Cannot find module');
    } finally {
      await engine.close();
    }
    // the program itself by a relative path: not found there either, and said why
    writeFileSync(join(ws, 'workflow.yaml'), `openintent: "1.0"\ninfo: {name: sub}\nagents:\n  shell:\n    x-command: [./rel-agent.sh]\nworkflow:\n  one:\n    assign: shell\n    inputsFiles: {in: {path: notes/draft.md}}\n`);
    writeFileSync(join(ws, 'rel-agent.sh'), '#!/bin/sh\necho "{}"\n', { mode: 0o755 });
    const r2 = await loadWorkflow(join(ws, 'workflow.yaml'));
    if (!r2.ok) throw new Error(JSON.stringify(r2.diagnostics));
    const engine2 = createEngine({ store: new MemoryStore() });
    try {
      const res = await engine2.run(r2.model, { path: join(ws, 'workflow.yaml'), cwd: ws });
      expect(res.phases['one']?.error?.code).toBe('SubprocessSpawn');
      expect(res.phases['one']?.error?.message).toContain(`scratch root, not in ${ws}`);
    } finally {
      await engine2.close();
    }
  });

  test('concurrent attempts of parallel phases never share a root', async () => {
    writeFileSync(
      join(ws, 'workflow.yaml'),
      `openintent: "1.0"
info: {name: par}
workflow:
${['a', 'b', 'c', 'd'].map((p) => `  ${p}:\n    assign: w\n    inputsFiles: {n: {path: notes/draft.md}}\n    outputsFiles: {o: {path: par/<phase>.txt}}\n`).join('')}`,
    );
    const seen = new Set<string>();
    const r = await loadWorkflow(join(ws, 'workflow.yaml'));
    if (!r.ok) throw new Error('compile');
    let active = 0;
    let peak = 0;
    const engine = createEngine({
      store: new MemoryStore(),
      agents: {
        w: async (ctx: AgentContext) => {
          const root = (ctx.input['_workflowFsRoot'] as string);
          seen.add(root);
          active++;
          peak = Math.max(peak, active);
          writeFileSync(join(root, 'o'), ctx.phase);
          await new Promise((res) => setTimeout(res, 50));
          active--;
          return {};
        },
      },
    });
    try {
      const res = await engine.run(r.model, { path: join(ws, 'workflow.yaml') });
      expect(res.status).toBe('completed');
    } finally {
      await engine.close();
    }
    expect(peak).toBeGreaterThan(1);
    expect(seen.size).toBe(4);
    for (const p of ['a', 'b', 'c', 'd']) expect(readFileSync(join(ws, 'par', `${p}.txt`), 'utf8')).toBe(p);
  });

  test('on SQLite, `baton show RUN --artifacts` lists every staged and synced file, and --state the same', async () => {
    const file = join(ws, 'runs.db');
    const store = new SqliteStore(file);
    const r = await runIt(store);
    await store.close();
    expect(r.status).toBe('completed');
    let out = '';
    const io: CliIo = { stdout: (s) => void (out += s), stderr: () => undefined, isTTY: false, cwd: ws, env: { USER: 't' } };
    expect(await run(['show', 'r1', '--artifacts', '--json', '--store', file], io)).toBe(0);
    const rows = JSON.parse(out) as { phase: string; attempt: number; item: number | null; key: string; direction: string; access: string; path: string; sha256: string; size: number }[];
    expect(rows.map((x) => `${x.phase} ${x.direction} ${x.access} ${x.key} ${x.path}`)).toEqual([
      'draft staged read notes notes/draft.md',
      'draft synced written draft drafts/r1/draft-1.md',
      'edit staged read style style/guide.md',
      'edit staged read draft drafts/r1/draft-1.md',
      expect.stringMatching(/^edit synced written final final\/paper-\d{4}-\d\d-\d\d\.md$/) as unknown as string,
    ]);
    expect(rows.every((x) => x.item === null && /^[0-9a-f]{64}$/.test(x.sha256) && x.attempt === 1)).toBe(true);
    out = '';
    expect(await run(['show', 'r1', '--artifacts', '--store', file], io)).toBe(0);
    expect(out).toMatch(/draft#1\s+read\s+staged\s+notes\s+"notes\/draft\.md"/);
    // the run's warnings (a declared output not produced) are in `baton show`, not only in its events
    out = '';
    expect(await run(['show', 'r1', '--store', file], io)).toBe(0);
    expect(out).toMatch(/\nwarnings\n {2}! draft \(attempt 1\): DeclaredFileMissing: declared output file `logs\/r1\.txt` was not produced\n/);
    out = '';
    expect(await run(['show', 'r1', '--state', '--store', file], io)).toBe(0);
    const state = JSON.parse(out) as { workflowState: { context: { artifacts: Record<string, { phase: string; access: string; key?: string }> } } };
    expect(state.workflowState.context.artifacts['drafts/r1/draft-1.md']).toMatchObject({ phase: 'edit', access: 'read', key: 'draft' });
  });
});

describe('output files and the outcome they belong to', () => {
  const wfOf = (outputs: string): string => `openintent: "1.0"\ninfo: {name: out}\nworkflow:\n  p:\n    assign: w\n    retry: {max_attempts: 2, initial_delay_ms: 1}\n    outputsFiles: {o: {path: "out/<attempt>.txt"}}\n    outputs: ${outputs}\n`;

  test('an attempt whose output is rejected syncs nothing; the one accepted syncs its file, with its event', async () => {
    writeFileSync(join(ws, 'workflow.yaml'), wfOf('{n: integer}'));
    const r = await loadWorkflow(join(ws, 'workflow.yaml'));
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    const engine = createEngine({
      store: new MemoryStore(),
      agents: {
        w: (ctx: AgentContext) => {
          writeFileSync(join(ctx.input['_workflowFsRoot'] as string, 'o'), `attempt ${ctx.attempt}`);
          return { n: ctx.attempt === 1 ? 'not a number' : 2 };
        },
      },
    });
    const res = await engine.run(r.model, { path: join(ws, 'workflow.yaml') });
    await engine.close();
    expect(res.status).toBe('completed');
    expect(res.events.some((e) => e.type === 'task.rejected' && e.attempt === 1)).toBe(true);
    expect(existsSync(join(ws, 'out', '1.txt'))).toBe(false);
    expect(readFileSync(join(ws, 'out', '2.txt'), 'utf8')).toBe('attempt 2');
    expect(res.events.flatMap((e) => (e.type === 'task.file' ? [`${e.attempt} ${e.direction} ${e.path}`] : []))).toEqual(['2 synced out/2.txt']);
  });

  test('fan-out items whose `<item.x>` values repeat would write one file: a task.warning FileCollision names them before any item runs', async () => {
    writeFileSync(
      join(ws, 'workflow.yaml'),
      `openintent: "1.0"
info: {name: collide}
types: {S: {name: string}}
x-trigger: {sections: "S[]"}
workflow:
  draft:
    assign: w
    for_each: $trigger.sections
    max_parallel: 1
    inputs: {name: $item.name}
    outputsFiles:
      text: {path: "out/<item.name>.md"}
      own: {path: "out/<index>-<item.name>.md"}
`,
    );
    const r = await loadWorkflow(join(ws, 'workflow.yaml'));
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    const engine = createEngine({
      store: new MemoryStore(),
      agents: {
        w: (ctx: AgentContext) => {
          const root = ctx.input['_workflowFsRoot'] as string;
          writeFileSync(join(root, 'text'), `item ${ctx.item!.index}`);
          writeFileSync(join(root, 'own'), `item ${ctx.item!.index}`);
          return {};
        },
      },
    });
    const res = await engine.run(r.model, { path: join(ws, 'workflow.yaml'), trigger: { sections: [{ name: 'intro' }, { name: 'body' }, { name: 'intro' }, { name: 'intro' }] } });
    await engine.close();
    expect(res.status).toBe('completed');
    const warnings = res.events.filter((e) => e.type === 'task.warning' && e.code === 'FileCollision');
    expect(warnings.map((e) => (e.type === 'task.warning' ? e.details : undefined))).toEqual([{ key: 'text', path: 'out/intro.md', declared: 'out/<item.name>.md', items: [0, 2, 3] }]);
    // before any item ran
    expect(res.events.indexOf(warnings[0]!)).toBeLessThan(res.events.findIndex((e) => e.type === 'task.claimed'));
    expect(readFileSync(join(ws, 'out', 'intro.md'), 'utf8')).toBe('item 3');
    expect(readFileSync(join(ws, 'out', '0-intro.md'), 'utf8')).toBe('item 0');
  });

  test('a file its completion recorded that cannot then be written is a task.warning FileNotSynced; the run goes on', async () => {
    writeFileSync(join(ws, 'workflow.yaml'), wfOf('{n: integer}'));
    const r = await loadWorkflow(join(ws, 'workflow.yaml'));
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    // the disk fills between the completion and the copy
    const full = (w: string): FileStager => {
      const st = localFileStager({ workspace: w });
      return { ...st, open: async (scope) => ({ ...(await st.open(scope)), sync: () => Promise.reject(new Error('ENOSPC: no space left on device')) }) };
    };
    const engine = createEngine({ store: new MemoryStore(), fileStager: full, agents: { w: (ctx: AgentContext) => (writeFileSync(join(ctx.input['_workflowFsRoot'] as string, 'o'), 'x'), { n: 1 }) } });
    const res = await engine.run(r.model, { path: join(ws, 'workflow.yaml') });
    await engine.close();
    expect(res.status).toBe('completed');
    const warning = res.events.find((e) => e.type === 'task.warning' && e.code === 'FileNotSynced');
    expect(warning).toMatchObject({ phase: 'p', attempt: 1, details: { key: 'o', path: 'out/1.txt' } });
    expect(warning && 'message' in warning ? warning.message : '').toContain('ENOSPC');
    // recorded with the completion (before the copy was tried), and said not to be there
    expect(res.events.filter((e) => e.type === 'task.file').map((e) => e.seq)[0]).toBeLessThan(res.events.find((e) => e.type === 'task.completed')!.seq);
    expect(existsSync(join(ws, 'out', '1.txt'))).toBe(false);
  });
});

describe('baton run --workspace', () => {
  test('the CLI flag sets the workspace of the run', async () => {
    const other = mkdtempSync(join(tmpdir(), 'baton-files-cli-'));
    mkdirSync(join(other, 'notes'));
    writeFileSync(join(other, 'notes', 'n.md'), 'from the flag');
    writeFileSync(join(ws, 'wf.yaml'), 'openintent: "1.0"\ninfo: {name: cli}\nworkflow:\n  p:\n    assign: w\n    inputsFiles: {n: {path: notes/n.md}}\n    outputsFiles: {o: {path: out/<runId>.md}}\n');
    writeFileSync(join(ws, 'agents.mjs'), `import { readFileSync, writeFileSync } from 'node:fs';\nexport default { w: (ctx) => { const r = ctx.input._workflowFsRoot; writeFileSync(r + '/o', readFileSync(r + '/n', 'utf8')); return {}; } };\n`);
    let err = '';
    const io: CliIo = { stdout: () => undefined, stderr: (s) => void (err += s), isTTY: false, cwd: ws, env: { USER: 't' } };
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--workspace', other, '--store', 'memory', '--run-id', 'cli1', '-q'], io), err).toBe(0);
    expect(readFileSync(join(other, 'out', 'cli1.md'), 'utf8')).toBe('from the flag');
    rmSync(other, { recursive: true, force: true });
    // a file named as the workspace is a usage error before anything runs (every file would be refused)
    writeFileSync(join(ws, 'afile'), 'x');
    err = '';
    expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--workspace', 'afile', '--store', 'memory', '-q'], io)).toBe(2);
    expect(err).toMatch(/--workspace afile: is a file, not a directory; nothing was run/);
    err = '';
    expect(await run(['worker', '--workspace', 'afile', '--store', 'memory'], io)).toBe(2);
    expect(err).toMatch(/--workspace afile: is a file, not a directory/);
  });
});

describe('file contracts in an agent contract', () => {
  test('an inline x-contract declares files the engine stages and syncs; a contract file\u2019s bad path is positioned in that file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-files-contract-'));
    mkdirSync(join(dir, 'contracts'));
    writeFileSync(join(dir, 'in.txt'), 'abc');
    writeFileSync(
      join(dir, 'workflow.yaml'),
      'openintent: "1.0"\ninfo: {name: c}\nagents:\n  copier:\n    x-contract:\n      inputsFiles: {src: {path: in.txt}}\n      outputsFiles: {dst: {path: "copies/<phase>.txt"}}\nworkflow:\n  copy: {assign: copier}\n',
    );
    const r = await loadWorkflow(join(dir, 'workflow.yaml'));
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    const engine = createEngine({
      store: new MemoryStore(),
      agents: { copier: (ctx: AgentContext) => (writeFileSync(join(ctx.input['_workflowFsRoot'] as string, 'dst'), readFileSync(join(ctx.input['_workflowFsRoot'] as string, 'src'))), {}) },
    });
    const res = await engine.run(r.model, { path: join(dir, 'workflow.yaml') });
    await engine.close();
    expect(res.status).toBe('completed');
    expect(readFileSync(join(dir, 'copies', 'copy.txt'), 'utf8')).toBe('abc');

    writeFileSync(join(dir, 'contracts', 'bad.yaml'), 'contractVersion: "1.0.0"\noutputsFiles:\n  out: {path: ../../escape.txt}\n');
    writeFileSync(join(dir, 'bad.yaml'), 'openintent: "1.0"\ninfo: {name: c}\nagents:\n  copier: {x-contract: contracts/bad.yaml}\nworkflow:\n  copy: {assign: copier}\n');
    const bad = await loadWorkflow(join(dir, 'bad.yaml'));
    expect(bad.diagnostics.map((d) => `${d.code} ${d.file?.endsWith('contracts/bad.yaml') ? 'contracts/bad.yaml' : '?'} ${d.path.join('.')}`)).toEqual(['path-escape contracts/bad.yaml outputsFiles.out.path']);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('examples/release-notes', () => {
  test('runs with --workspace: files staged from and synced to the workspace, listed by show --artifacts', async () => {
    const example = join(import.meta.dirname, '..', 'examples', 'release-notes');
    const work = mkdtempSync(join(tmpdir(), 'baton-release-notes-'));
    mkdirSync(join(work, 'notes'));
    for (const f of ['changes.md', 'style.md']) writeFileSync(join(work, 'notes', f), readFileSync(join(example, 'notes', f)));
    const db = join(work, 'runs.db');
    let out = '';
    let err = '';
    const io: CliIo = { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd: work, env: { USER: 't' } };
    expect(await run(['run', example, '--workspace', work, '--store', db, '--run-id', 'rn1', '-q'], io), err).toBe(0);
    const today = new Date().toISOString().slice(0, 10);
    const notes = readFileSync(join(work, 'release-notes', `${today}-rn1.md`), 'utf8');
    expect(notes).toBe('# Release 2.4.0: 3 changes\n\n_Short lines, present tense, one change per line._\n\n- feat: fan-out phases type-check their items\n- fix: a resumed run keeps its workspace\n- perf: staging copies each file once\n');
    expect(existsSync(join(example, 'work'))).toBe(false);
    out = '';
    expect(await run(['show', 'rn1', '--artifacts', '--json', '--store', db], io)).toBe(0);
    const rows = JSON.parse(out) as { phase: string; direction: string; key: string; path: string; sha256: string }[];
    expect(rows.map((r) => `${r.phase} ${r.direction} ${r.key} ${r.path}`)).toEqual([
      'collect staged changes notes/changes.md',
      'collect synced items work/rn1/items.txt',
      'write staged style notes/style.md',
      'write staged items work/rn1/items.txt',
      `write synced notes release-notes/${today}-rn1.md`,
    ]);
    expect(rows[1]!.sha256).toBe(rows[3]!.sha256);
    expect(rows[4]!.sha256).toBe(sha(notes));
    rmSync(work, { recursive: true, force: true });
  });
});

describe('baton resume --workspace', () => {
  test('a detached run records its workspace; resume uses it, or the one its own flag names', async () => {
    writeFileSync(join(ws, 'wf.yaml'), 'openintent: "1.0"\ninfo: {name: cli}\nworkflow:\n  p:\n    assign: w\n    inputsFiles: {n: {path: notes/draft.md}}\n    outputsFiles: {o: {path: out/<runId>.md}}\n');
    writeFileSync(join(ws, 'agents.mjs'), `import { readFileSync, writeFileSync } from 'node:fs';\nexport default { w: (ctx) => { const r = ctx.input._workflowFsRoot; writeFileSync(r + '/o', readFileSync(r + '/n', 'utf8')); return {}; } };\n`);
    const other = mkdtempSync(join(tmpdir(), 'baton-files-resume-'));
    mkdirSync(join(other, 'notes'));
    writeFileSync(join(other, 'notes', 'draft.md'), 'from the resume flag');
    const db = join(ws, 'runs.db');
    let err = '';
    const io: CliIo = { stdout: () => undefined, stderr: (s) => void (err += s), isTTY: false, cwd: ws, env: { USER: 't' } };
    for (const id of ['d1', 'd2']) expect(await run(['run', 'wf.yaml', '--agents', 'agents.mjs', '--detach', '--store', db, '--run-id', id, '-q'], io), err).toBe(0);
    expect(await run(['resume', 'd1', '--store', db, '-q'], io), err).toBe(0);
    expect(readFileSync(join(ws, 'out', 'd1.md'), 'utf8')).toBe('tides');
    expect(await run(['resume', 'd2', '--store', db, '--workspace', other, '-q'], io), err).toBe(0);
    expect(readFileSync(join(other, 'out', 'd2.md'), 'utf8')).toBe('from the resume flag');
    expect(existsSync(join(ws, 'out', 'd2.md'))).toBe(false);
    rmSync(other, { recursive: true, force: true });
  });
});

describe('examples/draft-sections', () => {
  test('outlines, drafts each section as its own item writing a file, assembles the paper; show lists the items and files', async () => {
    const example = join(import.meta.dirname, '..', 'examples', 'draft-sections');
    const work = mkdtempSync(join(tmpdir(), 'baton-draft-sections-'));
    mkdirSync(join(work, 'brief'));
    writeFileSync(join(work, 'brief', 'brief.md'), readFileSync(join(example, 'brief', 'brief.md')));
    const db = join(work, 'runs.db');
    let out = '';
    let err = '';
    const io: CliIo = { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd: work, env: { USER: 't' } };
    expect(await run(['run', example, '--workspace', work, '--store', db, '--run-id', 'ds1', '-q'], io), err).toBe(0);
    const sections = ['0-why-the-executor-not-the-agent-should-ow', '1-what-goes-wrong-when-agents-read-each-ot', '2-how-typed-outputs-and-claim-time-checks', '3-what-durability-costs-and-what-it-buys'];
    const drafts = sections.map((s) => readFileSync(join(work, 'out', 'ds1', 'sections', `${s}.md`), 'utf8'));
    expect(drafts.map((d) => d.split('\n')[0])).toEqual([
      '## 1. Why the executor, not the agent, should own the wiring between phases',
      "## 2. What goes wrong when agents read each other's raw state",
      '## 3. How typed outputs and claim-time checks catch mistakes before anything runs',
      '## 4. What durability costs, and what it buys',
    ]);
    // the paper is the drafts in section order, as their files hold them
    const paper = readFileSync(join(work, 'out', 'ds1', 'paper.md'), 'utf8');
    expect(paper.startsWith('# Executors that own the contract\n\n' + drafts.join('\n'))).toBe(true);
    expect(paper).toMatch(/_4 sections, \d+ words\._\n$/);
    expect(existsSync(join(example, 'out'))).toBe(false);
    out = '';
    expect(await run(['show', 'ds1', '--items', 'draft', '--json', '--store', db], io)).toBe(0);
    expect((JSON.parse(out) as { index: number; status: string }[]).map((i) => `${i.index} ${i.status}`)).toEqual(['0 completed', '1 completed', '2 completed', '3 completed']);
    out = '';
    expect(await run(['show', 'ds1', '--artifacts', '--json', '--store', db], io)).toBe(0);
    const rows = JSON.parse(out) as { phase: string; direction: string; key: string; path: string; sha256: string }[];
    expect(rows.filter((r) => r.direction === 'synced' && r.key === 'draft').map((r) => r.path).sort()).toEqual(sections.map((s) => `out/ds1/sections/${s}.md`));
    expect(rows.find((r) => r.key === 'paper')!.sha256).toBe(sha(paper));
    rmSync(work, { recursive: true, force: true });
  });
});
