import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { storeConformance } from './conformance.js';
import { chooseBinding, loadBetterSqlite3, nativeLoadFault, nodeSqliteAvailable, open, SqliteError, type Binding } from './sqlite-driver.js';
import { SqliteStore } from './sqlite.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-sqlite-driver-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (): string => join(dir, `d${n++}.db`);

function betterLoads(): boolean {
  try {
    open(':memory:', { binding: 'better-sqlite3' }).close();
    return true;
  } catch {
    return false;
  }
}

/** Every binding this Node can load: node:sqlite on 22.13+, better-sqlite3 where it is built. */
const bindings: Binding[] = [...(nodeSqliteAvailable() ? (['node'] as const) : []), ...(betterLoads() ? (['better-sqlite3'] as const) : [])];

it('at least one SQLite binding loads on this Node', () => {
  expect(bindings.length).toBeGreaterThan(0);
  // node:sqlite is there on every Node >= 22.13 without a flag
  const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
  expect(nodeSqliteAvailable()).toBe(major > 22 || (major === 22 && minor >= 13));
});

describe.each(bindings)('the %s binding', (binding) => {
  it('prepares, binds positional and named parameters (extra keys ignored, undefined as NULL), plucks', () => {
    const db = open(':memory:', { binding });
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER, w TEXT)');
    const ins = db.prepare('INSERT INTO t (k, v, w) VALUES (?, ?, ?)');
    expect(Number(ins.run('a', 1, 'x').changes)).toBe(1);
    ins.run('b', 2, undefined);
    expect(db.prepare('SELECT v FROM t WHERE k = :k').get({ k: 'b', unused: 1 })).toEqual({ v: 2 });
    expect(db.prepare('SELECT w FROM t WHERE k = ?').pluck().get('b')).toBeNull();
    expect(db.prepare('SELECT k FROM t ORDER BY k').pluck().all()).toEqual(['a', 'b']);
    expect([...db.prepare('SELECT v FROM t ORDER BY k').pluck().iterate()]).toEqual([1, 2]);
    expect(db.prepare('SELECT v FROM t WHERE k = ?').pluck().get('none')).toBeUndefined();
    expect(db.pragma('user_version', { simple: true })).toBe(0);
    db.close();
    expect(db.open).toBe(false);
  });

  it('runs transactions: commit, rollback on a throw, nested savepoints, BEGIN IMMEDIATE', () => {
    const db = open(':memory:', { binding });
    db.exec('CREATE TABLE t (v INTEGER)');
    const ins = db.prepare('INSERT INTO t (v) VALUES (?)');
    const count = db.prepare('SELECT count(*) FROM t').pluck();
    const add = db.transaction((v: number) => {
      ins.run(v);
      if (v < 0) throw new Error('negative');
      return v * 2;
    });
    expect(add.immediate(1)).toBe(2);
    expect(() => add(-1)).toThrow('negative');
    expect(count.get()).toBe(1);
    const outer = db.transaction(() => {
      ins.run(10);
      expect(db.inTransaction).toBe(true);
      expect(() => add(-2)).toThrow('negative'); // the inner part rolls back alone
      add(3);
    });
    outer.immediate();
    expect(db.inTransaction).toBe(false);
    expect(db.prepare('SELECT v FROM t ORDER BY v').pluck().all()).toEqual([1, 3, 10]);
    db.close();
  });

  it("reports SQLite's errors with better-sqlite3's codes (busy, not a database)", () => {
    const f = file();
    const a = open(f, { binding, timeout: 0 });
    const b = open(f, { binding, timeout: 0 });
    a.exec('CREATE TABLE t (v INTEGER)');
    a.exec('BEGIN IMMEDIATE');
    let err: unknown;
    try {
      b.exec('BEGIN IMMEDIATE');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SqliteError);
    expect((err as SqliteError).code).toMatch(/^SQLITE_BUSY/);
    a.exec('COMMIT');
    a.close();
    b.close();
    const junk = file();
    writeFileSync(junk, 'not a database, not at all '.repeat(100));
    let bad: unknown;
    try {
      open(junk, { binding }).exec('PRAGMA schema_version');
    } catch (e) {
      bad = e;
    }
    expect((bad as SqliteError).code).toBe('SQLITE_NOTADB');
  });
});

describe.each(bindings)('the store on the %s binding', (binding) => {
  // the store picks its binding from BATON_SQLITE when it opens (a synchronous constructor)
  const withBinding = (f: string): SqliteStore => {
    const before = process.env['BATON_SQLITE'];
    process.env['BATON_SQLITE'] = binding;
    try {
      return new SqliteStore(f, { pollMs: 20 });
    } finally {
      if (before === undefined) delete process.env['BATON_SQLITE'];
      else process.env['BATON_SQLITE'] = before;
    }
  };
  const files = new WeakMap<SqliteStore, string>();
  storeConformance(`sqlite (${binding})`, {
    create: () => {
      const f = file();
      const s = withBinding(f);
      files.set(s, f);
      return Promise.resolve(s);
    },
    peer: (store) => Promise.resolve(withBinding(files.get(store as SqliteStore)!)),
  });
});

describe('choosing and loading a binding', () => {
  it('BATON_SQLITE picks one; anything else is a usage fault', () => {
    expect(chooseBinding({ BATON_SQLITE: 'node' })).toBe('node');
    expect(chooseBinding({ BATON_SQLITE: 'better-sqlite3' })).toBe('better-sqlite3');
    expect(chooseBinding({})).toBe(nodeSqliteAvailable() ? 'node' : 'better-sqlite3');
    let err: unknown;
    try {
      chooseBinding({ BATON_SQLITE: 'sqlite3' });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'usage' });
  });

  it('better-sqlite3 not installed: one line naming the install command', () => {
    const empty = mkdtempSync(join(dir, 'empty-'));
    let err: unknown;
    try {
      loadBetterSqlite3(pathToFileURL(join(empty, 'x.js')).href);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'missing-package' });
    expect((err as Error).message).toContain('npm install better-sqlite3');
    expect((err as Error).message).not.toContain('\n');
  });

  it('better-sqlite3 not installed on a Node that has node:sqlite (BATON_SQLITE=better-sqlite3): the hint is the built-in one, not a newer Node', () => {
    const empty = mkdtempSync(join(dir, 'empty-'));
    const message = (builtIn: boolean): string => {
      try {
        loadBetterSqlite3(pathToFileURL(join(empty, 'x.js')).href, builtIn);
      } catch (e) {
        return (e as Error).message;
      }
      throw new Error('loaded');
    };
    expect(message(true)).toMatch(/npm install better-sqlite3 \(or leave BATON_SQLITE unset: this Node has node:sqlite built in; or --store memory\)$/);
    expect(message(true)).not.toContain('22.13');
    expect(message(false)).toContain('or use Node >= 22.13');
  });

  it('better-sqlite3 installed without its native build (--ignore-scripts): one line with `npm rebuild`', () => {
    // the real package without its build/ folder, as `npm install --ignore-scripts` leaves it
    const root = mkdtempSync(join(dir, 'unbuilt-'));
    const nm = join(root, 'node_modules');
    mkdirSync(join(nm, 'better-sqlite3'), { recursive: true });
    for (const part of ['package.json', 'lib']) cpSync(join('node_modules/better-sqlite3', part), join(nm, 'better-sqlite3', part), { recursive: true });
    for (const dep of ['bindings', 'file-uri-to-path']) cpSync(join('node_modules', dep), join(nm, dep), { recursive: true });
    const Better = loadBetterSqlite3(pathToFileURL(join(root, 'x.js')).href);
    let err: unknown;
    try {
      new Better(':memory:', { timeout: 0 });
    } catch (e) {
      err = e;
    }
    const fault = nativeLoadFault(err);
    expect(fault).toMatchObject({ code: 'store' });
    expect(fault!.message).toContain('npm rebuild better-sqlite3');
    // npm 12 skips unapproved install scripts: the approval comes first
    expect(fault!.message).toContain('npm approve-scripts better-sqlite3');
    expect(fault!.message).toContain('--store memory');
    expect(fault!.message).not.toContain('\n');
    expect(nativeLoadFault(new Error('something else'))).toBeUndefined();
  });
});
