import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore, parseStoreSpec } from './store.js';

const cwd = mkdtempSync(join(tmpdir(), 'baton-open-'));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return (err as { code?: string }).code ?? 'no code';
  }
  return 'resolved';
}

describe('openStore', () => {
  it('opens .baton/baton.db under cwd by default, creating .baton/', async () => {
    const s = await openStore(undefined, { cwd });
    expect(s.kind).toBe('sqlite');
    expect(s.location).toBe(join('.baton', 'baton.db'));
    expect(existsSync(join(cwd, '.baton', 'baton.db'))).toBe(true);
    await s.close();
  });

  it('refuses a sync mode it does not know (it ran on FULL without a word)', async () => {
    await expect(openStore('bogus-sync.db', { cwd, sync: 'fast' as 'full' })).rejects.toMatchObject({ code: 'usage', message: `sync expects 'full' or 'normal', got "fast"` });
    expect(existsSync(join(cwd, 'bogus-sync.db'))).toBe(false);
  });

  it('reads BATON_STORE when no spec is given, and prefers the spec', async () => {
    const env = { BATON_STORE: 'memory' };
    expect((await openStore(undefined, { cwd, env })).kind).toBe('memory');
    const s = await openStore('other.db', { cwd, env });
    expect([s.kind, s.location]).toEqual(['sqlite', 'other.db']);
    await s.close();
    expect(parseStoreSpec(undefined, { cwd, env: { BATON_STORE: 'postgresql://u:p@db.example/baton' } })).toEqual({ kind: 'postgres', url: 'postgresql://u:p@db.example/baton' });
  });

  it('accepts memory, file paths (relative or absolute, sqlite: prefix) and postgres URLs', () => {
    expect(parseStoreSpec('memory', { cwd })).toEqual({ kind: 'memory' });
    expect(parseStoreSpec('sqlite:runs/a.db', { cwd })).toEqual({ kind: 'sqlite', file: join(cwd, 'runs/a.db'), location: join('runs', 'a.db') });
    expect(parseStoreSpec('/var/tmp/x.db', { cwd })).toMatchObject({ kind: 'sqlite', file: '/var/tmp/x.db', location: '/var/tmp/x.db' });
    expect(parseStoreSpec('postgres://localhost/b', { cwd })).toEqual({ kind: 'postgres', url: 'postgres://localhost/b' });
    expect(parseStoreSpec('sqlite://runs/a.db', { cwd })).toEqual({ kind: 'sqlite', file: join(cwd, 'runs/a.db'), location: join('runs', 'a.db') });
    expect(parseStoreSpec('sqlite:///var/tmp/x.db', { cwd })).toMatchObject({ kind: 'sqlite', file: '/var/tmp/x.db' });
  });

  it('takes the bare word sqlite as the default file, and refuses a bare postgres (it made SQLite files named so)', async () => {
    for (const w of ['sqlite', 'SQLite', 'sqlite3']) expect(parseStoreSpec(w, { cwd })).toEqual({ kind: 'sqlite', file: join(cwd, '.baton', 'baton.db'), location: join('.baton', 'baton.db') });
    for (const w of ['postgres', 'postgresql', 'pg']) {
      expect(() => parseStoreSpec(w, { cwd })).toThrow(expect.objectContaining({ code: 'usage', message: expect.stringContaining('postgres://') as string }) as Error);
      expect(await codeOf(openStore(w, { cwd }))).toBe('usage');
    }
    expect(existsSync(join(cwd, 'postgres'))).toBe(false);
  });

  it('takes no options: relative paths from the working directory, memory and postgres URLs as given', async () => {
    expect(parseStoreSpec('runs/a.db')).toEqual({ kind: 'sqlite', file: join(process.cwd(), 'runs/a.db'), location: join('runs', 'a.db') });
    expect(parseStoreSpec('postgres://localhost/b')).toEqual({ kind: 'postgres', url: 'postgres://localhost/b' });
    const s = await openStore('memory');
    expect(s.kind).toBe('memory');
    await s.close();
    expect(await codeOf(openStore('postgres://nobody:secret@127.0.0.1:1/none'))).toBe('store-unreachable');
  });

  it('refuses an empty spec (usage), never the default or BATON_STORE in its place; an empty BATON_STORE is unset', async () => {
    for (const spec of ['', '  ']) {
      expect(() => parseStoreSpec(spec, { cwd, env: { BATON_STORE: 'memory' } })).toThrow(expect.objectContaining({ code: 'usage' }) as Error);
      expect(await codeOf(openStore(spec, { cwd }))).toBe('usage');
    }
    expect(parseStoreSpec(undefined, { cwd, env: { BATON_STORE: '' } })).toMatchObject({ kind: 'sqlite', file: join(cwd, '.baton', 'baton.db') });
  });

  it('refuses an unknown scheme (usage), a corrupt file (store-corrupt) and an unreachable database (store-unreachable)', async () => {
    expect(await codeOf(openStore('mysql://localhost/x', { cwd }))).toBe('usage');
    writeFileSync(join(cwd, 'junk.db'), 'not a database at all, not even close '.repeat(30));
    expect(await codeOf(openStore('junk.db', { cwd }))).toBe('store-corrupt');
    expect(await codeOf(openStore('postgres://nobody:secret@127.0.0.1:1/none', { cwd }))).toBe('store-unreachable');
  });

  it('passes the sync mode to SQLite', async () => {
    const s = await openStore('normal.db', { cwd, sync: 'normal' });
    const db = (s as unknown as { db: { pragma(q: string, o: { simple: true }): unknown } }).db;
    expect(db.pragma('synchronous', { simple: true })).toBe(1);
    await s.close();
  });
});
