/** The local-disk stager and the token rules: byte-exact copies, digests, every way out of the workspace refused. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { expandPath, FileRefused, NotAFile, tokenValues, withFiles } from './files.js';
import { localFileStager } from './files-local.js';
import { parseWorkflow } from '../workflow/compile.js';
import { AgentError, type AgentContext } from './agent.js';

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

// each test's folders, roots included (every stager here makes them there), removed at the end
const bases: string[] = [];
afterAll(() => {
  for (const b of bases.splice(0)) rmSync(b, { recursive: true, force: true });
});

function workspace(): { ws: string; outside: string; base: string } {
  const base = mkdtempSync(join(tmpdir(), 'baton-files-test-'));
  bases.push(base);
  const ws = join(base, 'ws');
  const outside = join(base, 'outside');
  mkdirSync(ws);
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'do not read');
  return { ws, outside, base };
}

const scope = { runId: 'run-1', workflowId: 'wf', phase: 'draft', attempt: 1 };

describe('localFileStager', () => {
  test('stages byte-exact (binary, empty, large), syncs back, and removes the root', async () => {
    const { ws } = workspace();
    const binary = Buffer.from([0, 255, 10, 13, 0xc3, 0x28, 1, 2, 3]);
    const large = Buffer.alloc(17 * 1024 * 1024, 7); // streamed, not read whole
    mkdirSync(join(ws, 'in'));
    writeFileSync(join(ws, 'in', 'bin.dat'), binary);
    writeFileSync(join(ws, 'empty.txt'), '');
    writeFileSync(join(ws, 'large.dat'), large);
    const root = await localFileStager({ workspace: ws, tmpDir: dirname(ws) }).open(scope);
    expect(await root.stage('bin', 'in/bin.dat')).toEqual({ sha256: sha(binary), size: binary.length });
    expect(await root.stage('empty', 'empty.txt')).toEqual({ sha256: sha(''), size: 0 });
    expect(await root.stage('large', 'large.dat')).toEqual({ sha256: sha(large), size: large.length });
    expect(readFileSync(join(root.path, 'bin')).equals(binary)).toBe(true);
    writeFileSync(join(root.path, 'out'), binary);
    expect(await root.sync('out', 'deep/er/out.dat')).toEqual({ sha256: sha(binary), size: binary.length });
    expect(readFileSync(join(ws, 'deep', 'er', 'out.dat')).equals(binary)).toBe(true);
    expect(await root.sync('never', 'x.txt')).toBe('missing');
    await root.remove();
    expect(existsSync(root.path)).toBe(false);
  });

  test('two attempts never share a root', async () => {
    const { ws } = workspace();
    const stager = localFileStager({ workspace: ws, tmpDir: dirname(ws) });
    const [a, b] = await Promise.all([stager.open(scope), stager.open(scope)]);
    expect(a.path).not.toBe(b.path);
  });

  test('a missing input is the I/O error (ENOENT), not a refusal', async () => {
    const { ws } = workspace();
    const root = await localFileStager({ workspace: ws, tmpDir: dirname(ws) }).open(scope);
    await expect(root.stage('x', 'nope.md')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  test.each([
    ['a `..` segment', '../outside/secret.txt'],
    ['a `..` in the middle', 'in/../../outside/secret.txt'],
    ['an absolute path', '/etc/passwd'],
    ['a Windows drive', 'C:\\Windows\\win.ini'],
    ['a backslash root', '\\\\server\\share'],
  ])('refuses to stage %s', async (_, path) => {
    const { ws } = workspace();
    const root = await localFileStager({ workspace: ws, tmpDir: dirname(ws) }).open(scope);
    await expect(root.stage('x', path)).rejects.toBeInstanceOf(FileRefused);
    await expect(root.sync('x', path)).rejects.toBeInstanceOf(FileRefused);
  });

  test('an input that is not a regular file (a folder, a FIFO) is refused at once, never read or waited on', async () => {
    const { ws } = workspace();
    mkdirSync(join(ws, 'dir'));
    execFileSync('mkfifo', [join(ws, 'fifo')]);
    const root = await localFileStager({ workspace: ws, tmpDir: dirname(ws) }).open(scope);
    for (const path of ['dir', 'fifo']) {
      // a FIFO with no writer blocked open(2) for ever, and the attempt with it
      const err = await Promise.race([root.stage('x', path).then(() => 'staged', (e: unknown) => e), new Promise((r) => setTimeout(() => r('hung'), 3000))]);
      expect(err).toBeInstanceOf(NotAFile);
      expect(err).not.toBeInstanceOf(FileRefused);
    }
    // the same for a sync's target read back (a leftover root's roll-forward)
    writeFileSync(join(root.path, 'o'), 'x');
    const rolled = await Promise.race([root.sync('gone', 'fifo', { sha256: sha('x'), size: 1 }), new Promise((r) => setTimeout(() => r('hung'), 3000))]);
    expect(rolled).toBe('missing');
  });

  test('refuses symbolic links that lead out of the workspace: a file, a folder on the way, a sync target', async () => {
    const { ws, outside } = workspace();
    symlinkSync(join(outside, 'secret.txt'), join(ws, 'link.txt'));
    symlinkSync(outside, join(ws, 'out-dir'));
    writeFileSync(join(ws, 'real.txt'), 'mine');
    symlinkSync(join(ws, 'real.txt'), join(ws, 'inner-link.txt'));
    const root = await localFileStager({ workspace: ws, tmpDir: dirname(ws) }).open(scope);
    await expect(root.stage('a', 'link.txt')).rejects.toBeInstanceOf(FileRefused);
    await expect(root.stage('b', 'out-dir/secret.txt')).rejects.toBeInstanceOf(FileRefused);
    // a link that stays inside is followed
    expect((await root.stage('c', 'inner-link.txt')).size).toBe(4);
    writeFileSync(join(root.path, 'o'), 'agent output');
    await expect(root.sync('o', 'out-dir/planted.txt')).rejects.toBeInstanceOf(FileRefused);
    await expect(root.sync('o', 'out-dir/new/deeper.txt')).rejects.toBeInstanceOf(FileRefused);
    await expect(root.sync('o', 'link.txt')).rejects.toBeInstanceOf(FileRefused);
    expect(existsSync(join(outside, 'planted.txt'))).toBe(false);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('do not read');
  });

  test('an agent\u2019s symbolic link under the root is never synced (it would copy what it points at)', async () => {
    const { ws, outside } = workspace();
    const root = await localFileStager({ workspace: ws, tmpDir: dirname(ws) }).open(scope);
    symlinkSync(join(outside, 'secret.txt'), join(root.path, 'draft'));
    await expect(root.sync('draft', 'draft.md')).rejects.toBeInstanceOf(FileRefused);
    expect(existsSync(join(ws, 'draft.md'))).toBe(false);
  });

  test('a workspace that does not exist yet is made by the first sync; one reached through a link is resolved', async () => {
    const { base, outside } = workspace();
    const ws = join(base, 'later', 'ws');
    const stager = localFileStager({ workspace: ws, tmpDir: base });
    const root = await stager.open(scope);
    writeFileSync(join(root.path, 'o'), 'first');
    expect(await root.check('o', 'out/a.md')).toEqual({ sha256: sha('first'), size: 5 });
    expect(await root.sync('o', 'out/a.md')).toEqual({ sha256: sha('first'), size: 5 });
    expect(readFileSync(join(ws, 'out', 'a.md'), 'utf8')).toBe('first');
    // the same stager once the workspace exists, and still no way out
    expect((await root.stage('back', 'out/a.md')).size).toBe(5);
    await expect(root.sync('o', '../escape.md')).rejects.toBeInstanceOf(FileRefused);
    // a workspace to be made under a folder that is a link: the link is where it is made
    symlinkSync(outside, join(base, 'via'));
    const linked = await localFileStager({ workspace: join(base, 'via', 'new-ws'), tmpDir: base }).open(scope);
    writeFileSync(join(linked.path, 'o'), 'second');
    expect(await linked.sync('o', 'x.md')).toEqual({ sha256: sha('second'), size: 6 });
    expect(readFileSync(join(outside, 'new-ws', 'x.md'), 'utf8')).toBe('second');
  });

  test.each(['a/b', '..', '.', '', 'a\\b'])('refuses the key %j', async (key) => {
    const { ws } = workspace();
    writeFileSync(join(ws, 'f.txt'), 'x');
    const root = await localFileStager({ workspace: ws, tmpDir: dirname(ws) }).open(scope);
    await expect(root.stage(key, 'f.txt')).rejects.toBeInstanceOf(FileRefused);
  });
});

describe('localFileStager: checking before a sync, and roots left behind', () => {
  test('check hashes what sync would copy and writes nothing; sync with what check said refuses other bytes', async () => {
    const { ws, base } = workspace();
    const stager = localFileStager({ workspace: ws, tmpDir: base });
    const root = await stager.open(scope);
    writeFileSync(join(root.path, 'o'), 'first');
    const d = await root.check('o', 'out/o.txt');
    expect(d).toEqual({ sha256: sha('first'), size: 5 });
    expect(existsSync(join(ws, 'out'))).toBe(false);
    expect(await root.check('none', 'out/none.txt')).toBe('missing');
    // the agent's file changed after it was checked: not synced, the target untouched
    writeFileSync(join(root.path, 'o'), 'second');
    await expect(root.sync('o', 'out/o.txt', d as { sha256: string; size: number })).rejects.toBeInstanceOf(FileRefused);
    expect(existsSync(join(ws, 'out', 'o.txt'))).toBe(false);
    expect(readdirSync(join(ws, 'out'))).toEqual([]);
    writeFileSync(join(root.path, 'o'), 'first');
    expect(await root.sync('o', 'out/o.txt', d as { sha256: string; size: number })).toEqual(d);
    expect(readFileSync(join(ws, 'out', 'o.txt'), 'utf8')).toBe('first');
    await root.remove();
  });

  test('check refuses a target that is a folder, or under a file, before anything is recorded', async () => {
    const { ws, base } = workspace();
    writeFileSync(join(ws, 'blocker'), 'a file where a folder should be');
    mkdirSync(join(ws, 'dir'));
    const root = await localFileStager({ workspace: ws, tmpDir: base }).open(scope);
    writeFileSync(join(root.path, 'o'), 'x');
    await expect(root.check('o', 'blocker/deeper/o.md')).rejects.toBeInstanceOf(FileRefused);
    await expect(root.check('o', 'dir')).rejects.toBeInstanceOf(FileRefused);
    await root.remove();
  });

  test('a root is named after its run, task and attempt; leftovers lists the run\u2019s own, exactly', async () => {
    const { ws, base } = workspace();
    const stager = localFileStager({ workspace: ws, tmpDir: base });
    const item = { ...scope, runId: 'r.1', phase: 'draft-sections', attempt: 2, item: { index: 7, value: 'x' } };
    const mine = await stager.open(item);
    const plain = await stager.open({ ...scope, runId: 'r.1', attempt: 1 });
    // the same name cut to [A-Za-z0-9_] (`r_1`), another run: never listed with r.1's
    const twin = await stager.open({ ...scope, runId: 'r_1' });
    expect(mine.path).toMatch(/\/baton-files-r_1_[0-9a-f]{8}-draft_sections\.7\.2_[0-9a-f]{8}-[A-Za-z0-9]{6}$/);
    const left = await stager.leftovers!('r.1');
    expect(left.map((r) => r.path).sort()).toEqual([mine.path, plain.path].sort());
    const m = left.find((r) => r.path === mine.path)!;
    expect([m.attempt, m.item]).toEqual([2, 7]);
    expect(m.isOf('draft-sections[7]', 2)).toBe(true);
    expect(m.isOf('draft-sections[7]', 1)).toBe(false);
    expect(m.isOf('draft_sections[7]', 2)).toBe(false);
    expect(left.find((r) => r.path === plain.path)!.isOf('draft', 1)).toBe(true);
    expect((await stager.leftovers!('r_1')).map((r) => r.path)).toEqual([twin.path]);
    // long ids stay within a file name's length
    const long = await stager.open({ ...scope, runId: 'r'.repeat(300), phase: 'p'.repeat(300) });
    expect(basename(long.path).length).toBeLessThan(160);
    expect((await stager.leftovers!('r'.repeat(300)))[0]!.isOf('p'.repeat(300), 1)).toBe(true);
    expect(await stager.leftovers!('r'.repeat(299))).toEqual([]);
  });

  test('leftovers never lists a symbolic link, a file, or a name it did not make', async () => {
    const { ws, base, outside } = workspace();
    const stager = localFileStager({ workspace: ws, tmpDir: base });
    const real = await stager.open(scope);
    const name = basename(real.path);
    const prefix = name.slice(0, -6);
    // a link named like a root of the run, to a folder that must survive
    symlinkSync(outside, join(base, `${prefix}Linked`));
    writeFileSync(join(base, `${prefix}AFile1`), 'a file');
    mkdirSync(join(base, `${prefix}toolongX`));
    const left = await stager.leftovers!(scope.runId);
    expect(left.map((r) => basename(r.path))).toEqual([name]);
    for (const r of left) await r.remove();
    expect(existsSync(join(outside, 'secret.txt'))).toBe(true);
    expect(existsSync(join(base, `${prefix}Linked`))).toBe(true);
  });
});

describe('expandPath', () => {
  const values = tokenValues({ ...scope, runId: 'run-7', attempt: 2 }, Date.UTC(2026, 0, 31, 23, 59));

  test('replaces every token once, and never expands a value again', () => {
    expect(expandPath('out/<runId>/<workflowId>-<toolId>-<isoDate>-<phase>-<attempt>.md', values)).toBe('out/run-7/wf-wf-2026-01-31-draft-2.md');
    expect(expandPath('out/<runId>.md', { ...values, runId: '<phase>' })).toBe('out/<phase>.md');
  });

  test('item tokens need an item, and read it', () => {
    expect(() => expandPath('d/<index>.md', values)).toThrow(FileRefused);
    expect(expandPath('d/<index>-<item.name>.md', values, { index: 3, value: { name: 'intro' } })).toBe('d/3-intro.md');
    expect(expandPath('d/<item>.md', values, { index: 0, value: 'pr-12' })).toBe('d/pr-12.md');
  });

  test('gives the path of the file it names: no empty or `.` segment', () => {
    const at = (value: string): string => expandPath('d/<item>/x.md', values, { index: 0, value });
    expect(at('/abs')).toBe('d/abs/x.md');
    expect(at('')).toBe('d/x.md');
    expect(at('.')).toBe('d/x.md');
    expect(at('a//b/./c/')).toBe('d/a/b/c/x.md');
    expect(() => expandPath('<item>/<item>', values, { index: 0, value: '.' })).toThrow(FileRefused);
  });

  test.each([
    ['a run id of `..`', 'out/<runId>/x.md', { runId: '..' }],
    ['a run id that climbs', 'out/<runId>.md', { runId: '../../etc/cron.d/x' }],
    ['a run id that is absolute', '<runId>', { runId: '/etc/passwd' }],
    ['an empty expansion', '<runId>', { runId: '' }],
  ])('refuses %s', (_, path, over) => {
    expect(() => expandPath(path, { ...values, ...over })).toThrow(FileRefused);
  });

  test('refuses an item value that climbs out', () => {
    expect(() => expandPath('d/<item.name>.md', values, { index: 0, value: { name: '../../x' } })).toThrow(FileRefused);
    expect(() => expandPath('d/<item.name>.md', values, { index: 0, value: { name: { deep: 1 } } })).toThrow(FileRefused);
  });
});

describe('withFiles', () => {
  const model = (files: string): ReturnType<typeof parseWorkflow> =>
    parseWorkflow(`openintent: "1.0"\ninfo: {name: wf}\nworkflow:\n  draft:\n    assign: a\n${files}`);

  function context(over: Partial<AgentContext> = {}): AgentContext & { logs: string[]; records: [string, unknown][] } {
    const logs: string[] = [];
    const records: [string, unknown][] = [];
    return {
      input: {},
      phase: 'draft',
      taskId: 't',
      runId: 'run-1',
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
      log: (m: string) => void logs.push(m),
      record: (k: string, d: unknown) => void records.push([k, d]),
      remainingBudgetUsd: () => undefined,
      requestInput: () => Promise.resolve(null),
      logs,
      records,
      ...over,
    };
  }

  test('injects the root over a caller-supplied `_workflowFsRoot`, stages, syncs, warns on a missing output, removes the root', async () => {
    const { ws } = workspace();
    writeFileSync(join(ws, 'notes.md'), 'notes');
    const r = model('    inputsFiles: {notes: {path: notes.md}}\n    outputsFiles: {draft: {path: "out/<runId>.md"}, extra: {path: extra.md}}\n');
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    let seen: string | undefined;
    const h = withFiles(
      (ctx) => {
        seen = (ctx.input['_workflowFsRoot'] as string);
        writeFileSync(join(seen, 'draft'), readFileSync(join(seen, 'notes'), 'utf8').toUpperCase());
        return { ok: true };
      },
      { stager: localFileStager({ workspace: ws, tmpDir: dirname(ws) }), model: r.model, contracts: new Map(), now: () => 0 },
    );
    const ctx = context({ input: { _workflowFsRoot: '/evil' } });
    expect(await h(ctx)).toEqual({ ok: true });
    expect(seen).not.toBe('/evil');
    expect(existsSync(seen!)).toBe(false);
    expect(readFileSync(join(ws, 'out', 'run-1.md'), 'utf8')).toBe('NOTES');
    expect(ctx.records.map(([k, d]) => `${k} ${(d as { path: string }).path}`)).toEqual(['file_staged notes.md', 'file_synced out/run-1.md', 'declared_file_missing extra.md']);
  });

  test('a missing input fails before the agent runs, naming its path; a failed sync is logged and the output stands', async () => {
    const { ws } = workspace();
    const r = model('    inputsFiles: {notes: {path: missing/notes.md}}\n');
    if (!r.ok) throw new Error('compile');
    let ran = false;
    const h = withFiles(() => ((ran = true), {}), { stager: localFileStager({ workspace: ws, tmpDir: dirname(ws) }), model: r.model, contracts: new Map(), now: () => 0 });
    const err = await Promise.resolve(h(context())).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentError);
    expect(err).toMatchObject({ code: 'MissingInputFile', retryable: false, details: { key: 'notes', path: 'missing/notes.md', workspace: resolve(ws) } });
    // the message names the workspace it looked in (a --workspace that lacks the file is the usual cause)
    expect((err as Error).message).toContain(`no such file in the workspace (${resolve(ws)})`);
    expect(ran).toBe(false);

    writeFileSync(join(ws, 'blocker'), 'a file where a folder should be');
    const r2 = model('    outputsFiles: {draft: {path: blocker/draft.md}}\n');
    if (!r2.ok) throw new Error('compile');
    const h2 = withFiles((ctx) => (writeFileSync(join((ctx.input['_workflowFsRoot'] as string), 'draft'), 'x'), { done: 1 }), { stager: localFileStager({ workspace: ws, tmpDir: dirname(ws) }), model: r2.model, contracts: new Map(), now: () => 0 });
    const ctx = context();
    expect(await h2(ctx)).toEqual({ done: 1 });
    expect(ctx.logs.join('\n')).toMatch(/could not be synced to blocker\/draft\.md/);
  });

  test('a run id expanding to `..` in an input path fails the attempt as PathEscape; in an output path it is logged', async () => {
    const { ws } = workspace();
    const r = model('    inputsFiles: {i: {path: "in/<runId>/x.md"}}\n');
    if (!r.ok) throw new Error('compile');
    const h = withFiles(() => ({}), { stager: localFileStager({ workspace: ws, tmpDir: dirname(ws) }), model: r.model, contracts: new Map(), now: () => 0 });
    await expect(Promise.resolve(h(context({ runId: '..' })))).rejects.toMatchObject({ code: 'PathEscape' });
    const r2 = model('    outputsFiles: {o: {path: "<runId>/x.md"}}\n');
    if (!r2.ok) throw new Error('compile');
    const h2 = withFiles((ctx) => (writeFileSync(join((ctx.input['_workflowFsRoot'] as string), 'o'), 'x'), {}), { stager: localFileStager({ workspace: ws, tmpDir: dirname(ws) }), model: r2.model, contracts: new Map(), now: () => 0 });
    const ctx = context({ runId: '..' });
    await h2(ctx);
    expect(ctx.logs.join('\n')).toMatch(/could not be synced/);
    expect(existsSync(join(ws, '..', 'x.md'))).toBe(false);
  });

  test('an attempt aborted before staging ends stages nothing more and never runs its agent', async () => {
    const { ws } = workspace();
    writeFileSync(join(ws, 'notes.md'), 'notes');
    const r = model('    inputsFiles: {notes: {path: notes.md}}\n');
    if (!r.ok) throw new Error('compile');
    const ctl = new AbortController();
    ctl.abort(new Error('timed out'));
    let ran = false;
    const h = withFiles(() => ((ran = true), {}), { stager: localFileStager({ workspace: ws, tmpDir: dirname(ws) }), model: r.model, contracts: new Map(), now: () => 0 });
    const ctx = context({ signal: ctl.signal });
    await expect(Promise.resolve(h(ctx))).rejects.toThrow('timed out');
    expect(ran).toBe(false);
    expect(ctx.records).toEqual([]);
  });

  test('a phase without files runs its handler untouched', async () => {
    const r = model('');
    if (!r.ok) throw new Error('compile');
    const ctx = context({ input: { a: 1 } });
    const h = withFiles((c) => c.input, { stager: localFileStager({ workspace: tmpdir(), tmpDir: workspace().base }), model: r.model, contracts: new Map(), now: () => 0 });
    expect(await h(ctx)).toEqual({ a: 1 });
  });
});
