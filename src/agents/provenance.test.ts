import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import type { JsonObject } from '../core/json.js';
import type { AgentHandler } from '../engine/agent.js';
import { emptyContract, type AgentContract } from '../workflow/contract/model.js';
import { recordingContext, type RecordingContext } from './llm/testing.js';
import { expand, fillPlaceholders, recordDeclaredFiles, safeSegments } from './provenance.js';

let ws: string;
let outside: string;
beforeEach(() => {
  ws = mkdtempSync(join(tmpdir(), 'baton-prov-'));
  outside = mkdtempSync(join(tmpdir(), 'baton-prov-out-'));
});
afterEach(() => {
  rmSync(ws, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

function put(rel: string, text: string, root = ws): void {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), text);
}

function contract(read: string[], written: string[]): AgentContract {
  const c = emptyContract({ kind: 'inline', at: { path: [] } });
  c.sideEffects.filesRead = read.map((path, i) => ({ path, at: { path: ['sideEffects', 'filesRead', i] } }));
  c.sideEffects.filesWritten = written.map((path, i) => ({ path, at: { path: ['sideEffects', 'filesWritten', i] } }));
  return c;
}

async function run(read: string[], written: string[], handler: AgentHandler = () => ({ ok: true }), input: JsonObject = {}): Promise<{ ctx: RecordingContext; out: unknown }> {
  const ctx = recordingContext({ phase: 'p', agent: 'a', input });
  const out = await recordDeclaredFiles('a', handler, contract(read, written), ws)(ctx);
  return { ctx, out };
}

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const paths = (ctx: RecordingContext, kind: string): unknown[] => ctx.events.filter((e) => e.kind === kind).map((e) => e.data['path']);

describe('recordDeclaredFiles', () => {
  test('records a declared read and write with sha256, size and the declared pattern; the output is unchanged', async () => {
    put('in/notes.md', 'hello');
    put('out/report.txt', 'héllo wörld');
    const { ctx, out } = await run(['in/notes.md'], ['out/report.txt'], () => ({ answer: 42 }));
    expect(out).toEqual({ answer: 42 });
    expect(ctx.events).toEqual([
      { kind: 'file_read', data: { path: 'in/notes.md', sha256: sha('hello'), size: 5, declared: 'in/notes.md' } },
      { kind: 'file_written', data: { path: 'out/report.txt', sha256: sha('héllo wörld'), size: Buffer.byteLength('héllo wörld'), declared: 'out/report.txt' } },
    ]);
  });

  test('hashes a file larger than one stream chunk', async () => {
    const big = 'x'.repeat(1024 * 1024 + 17);
    put('out/big.bin', big);
    const { ctx } = await run([], ['out/big.bin']);
    expect(ctx.events[0]?.data).toMatchObject({ sha256: sha(big), size: big.length });
  });

  test('placeholders are filled from the input (strings and numbers)', async () => {
    put('drafts/intro-2.tex', 'x');
    const { ctx } = await run([], ['drafts/{section}-{n}.tex'], undefined, { section: 'intro', n: 2 });
    expect(ctx.events).toEqual([{ kind: 'file_written', data: expect.objectContaining({ path: 'drafts/intro-2.tex', declared: 'drafts/{section}-{n}.tex' }) as unknown }]);
  });

  test('a placeholder without a usable input value skips the entry with one log line', async () => {
    put('drafts/x.tex', 'x');
    const { ctx } = await run([], ['drafts/{section}/{section}.tex', 'drafts/{obj}.tex'], undefined, { obj: { a: 1 } });
    expect(ctx.events).toEqual([]);
    expect(ctx.logs).toHaveLength(2);
    expect(ctx.logs[0]).toContain('`section`');
    expect(ctx.logs[1]).toContain('`obj`');
  });

  test('glob characters in an input value are taken literally', async () => {
    put('d/a.txt', 'a');
    put('d/b.txt', 'b');
    const { ctx } = await run(['d/{name}.txt'], [], undefined, { name: '*' });
    expect(ctx.events).toEqual([]);
  });

  test('`*.md` matches within one directory, not dotfiles or other extensions', async () => {
    put('research/a.md', 'a');
    put('research/b.md', 'b');
    put('research/.hidden.md', 'h');
    put('research/c.txt', 'c');
    put('research/sub/d.md', 'd');
    const { ctx } = await run(['research/*.md'], []);
    expect(paths(ctx, 'file_read')).toEqual(['research/a.md', 'research/b.md']);
  });

  test('`a/**/b.txt` matches at any depth, including none', async () => {
    put('a/b.txt', '0');
    put('a/x/b.txt', '1');
    put('a/x/y/b.txt', '2');
    put('a/x/y/c.txt', 'no');
    put('z/b.txt', 'no');
    const { ctx } = await run([], ['a/**/b.txt']);
    expect(paths(ctx, 'file_written')).toEqual(['a/b.txt', 'a/x/b.txt', 'a/x/y/b.txt']);
  });

  test('`?` matches one character; a file matched by two entries is recorded once', async () => {
    put('log/1.txt', '1');
    put('log/12.txt', '12');
    const { ctx } = await run(['log/?.txt', 'log/*.txt'], []);
    expect(paths(ctx, 'file_read')).toEqual(['log/1.txt', 'log/12.txt']);
  });

  test('a declared output that matched nothing: a warning line and a declared_file_missing record', async () => {
    const { ctx } = await run(['in/missing.md'], ['out/{name}.txt', 'out/*.csv'], undefined, { name: 'r' });
    expect(ctx.events).toEqual([
      { kind: 'declared_file_missing', data: { path: 'out/{name}.txt' } },
      { kind: 'declared_file_missing', data: { path: 'out/*.csv' } },
    ]);
    expect(ctx.logs).toEqual(['warning: declared output file `out/{name}.txt` was not produced', 'warning: declared output file `out/*.csv` was not produced']);
  });

  test('a directory is not a file', async () => {
    mkdirSync(join(ws, 'out', 'dir'), { recursive: true });
    const { ctx } = await run([], ['out/dir']);
    expect(ctx.events.map((e) => e.kind)).toEqual(['declared_file_missing']);
  });

  test('paths escaping the workspace are skipped with a log line', async () => {
    put('secret.txt', 's', outside);
    const rel = `../${outside.split(/[\\/]/).pop()!}/secret.txt`;
    const { ctx } = await run([rel, join(outside, 'secret.txt'), 'in/../../x.txt'], [], undefined, { up: '..' });
    expect(ctx.events).toEqual([]);
    expect(ctx.logs).toHaveLength(3);
    for (const l of ctx.logs) expect(l).toMatch(/outside the workspace/);
  });

  test('a placeholder value with `..` cannot lead out of the workspace', async () => {
    put('secret.txt', 's', outside);
    const { ctx } = await run([`{up}/${outside.split(/[\\/]/).pop()!}/secret.txt`], [], undefined, { up: '..' });
    expect(ctx.events).toEqual([]);
    expect(ctx.logs[0]).toMatch(/outside the workspace/);
  });

  test('a symbolic link leading out of the workspace is not followed', async () => {
    put('secret.txt', 's', outside);
    mkdirSync(join(ws, 'in'));
    symlinkSync(join(outside, 'secret.txt'), join(ws, 'in', 'link.txt'));
    symlinkSync(outside, join(ws, 'in', 'dir'));
    const { ctx } = await run(['in/link.txt', 'in/**/secret.txt', 'in/*/secret.txt'], []);
    expect(ctx.events).toEqual([]);
    expect(ctx.logs).toEqual([expect.stringMatching(/^warning: `in\/link\.txt` .*outside the workspace/)]);
  });

  test('a failing attempt records nothing and the error passes through', async () => {
    put('in/a.md', 'a');
    const ctx = recordingContext({ phase: 'p', agent: 'a' });
    const h = recordDeclaredFiles('a', () => Promise.reject(new Error('boom')), contract(['in/a.md'], ['out/none.txt']), ws);
    await expect(Promise.resolve(h(ctx))).rejects.toThrow('boom');
    expect(ctx.events).toEqual([]);
    expect(ctx.logs).toEqual([]);
  });

  test('an entry matching more than the cap is capped with a log line', async () => {
    for (let i = 0; i < 1005; i++) writeFileSync(join(ws, `f${String(i).padStart(4, '0')}.txt`), String(i));
    const { ctx } = await run(['*.txt'], []);
    expect(ctx.events).toHaveLength(1000);
    expect(ctx.logs).toEqual([expect.stringMatching(/more than 1000 files/)]);
  });
});

describe('helpers', () => {
  test('fillPlaceholders', () => {
    expect(fillPlaceholders('a/{x}.md', { x: 'b' })).toEqual({ ok: true, pattern: 'a/b.md' });
    expect(fillPlaceholders('a/{x}.md', { x: 'b*' })).toEqual({ ok: true, pattern: 'a/b\\*.md' });
    expect(fillPlaceholders('a/{x}/{y}.md', { x: true })).toEqual({ ok: false, missing: ['x', 'y'] });
  });

  test('safeSegments', () => {
    expect(safeSegments('./a//b/./c.md')).toEqual(['a', 'b', 'c.md']);
    expect(safeSegments('a/../b.md')).toEqual(['b.md']);
    expect(safeSegments('a/../../b.md')).toBeUndefined();
    expect(safeSegments('/etc/passwd')).toBeUndefined();
    expect(safeSegments('C:/x')).toBeUndefined();
    expect(safeSegments('.')).toBeUndefined();
  });

  test('expand with a limit', async () => {
    put('a/1.txt', '');
    put('a/2.txt', '');
    put('a/3.txt', '');
    expect(await expand(ws, ['a', '*.txt'], 2)).toEqual({ files: ['a/1.txt', 'a/2.txt'], capped: true });
    expect(await expand(ws, ['a', '*.txt'], 3)).toEqual({ files: ['a/1.txt', 'a/2.txt', 'a/3.txt'], capped: false });
    expect(await expand(ws, ['**', '*.txt'], 10)).toEqual({ files: ['a/1.txt', 'a/2.txt', 'a/3.txt'], capped: false });
  });
});
