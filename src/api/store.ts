/**
 * Which store a command uses: `--store SPEC`, else `BATON_STORE`, else the embedded default
 * `.baton/baton.db` under the working directory.
 *   memory                      the in-memory store (lost when the process ends)
 *   postgres://... postgresql:// a PostgreSQL database (schema `baton`)
 *   sqlite                      the embedded default, `.baton/baton.db` (as a bare word, like `memory`)
 *   anything else               a SQLite file path, relative to cwd (`sqlite:PATH`, `sqlite://PATH` also accepted)
 */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { BatonError } from '../core/errors.js';
import type { RunStore } from '../engine/ports.js';
import { MemoryStore } from '../store/memory.js';
import { openSqliteStore } from '../store/sqlite.js';
import { OlderStoreError } from '../store/sqlite-readonly.js';

export const DEFAULT_STORE = '.baton/baton.db';

export interface OpenStoreOptions {
  /** What a relative SQLite path is relative to (default: `process.cwd()`). */
  cwd?: string | undefined;
  /** SQLite: `full` (default, survives power loss) or `normal` (survives process crashes only). */
  sync?: 'full' | 'normal' | undefined;
  /** Where `BATON_STORE` is read from (default: none, so tests stay hermetic). */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /** `read`: the caller only reads (`baton runs`, `show`): an existing SQLite file is opened read-only, so no write access is needed. */
  access?: 'read' | 'write' | undefined;
  /** PostgreSQL: what waitForChange hears of, `work` (default: what workers need) or every commit (`commits`: live streams). */
  listen?: 'work' | 'commits' | undefined;
  /**
   * SQLite and PostgreSQL: decide in the store's clock (default true: the database's, or the clock of
   * the machine that holds the SQLite file), so every process compares due times, leases and
   * deadlines in one clock whatever its engine's clock says. Tests that drive time by hand turn it off.
   */
  databaseClock?: boolean | undefined;
}

export type StoreSpec = { kind: 'memory' } | { kind: 'postgres'; url: string } | { kind: 'sqlite'; file: string; location: string };

/** Parses a store spec without opening anything. */
export function parseStoreSpec(spec: string | undefined, opts: OpenStoreOptions = {}): StoreSpec {
  const cwd = opts.cwd ?? process.cwd();
  // an empty BATON_STORE is unset; an empty spec given (`--store "$UNSET"`) is a mistake, not the default
  // (it used to run on .baton/baton.db, past a BATON_STORE that named another store)
  if (spec !== undefined && spec.trim() === '') throw new BatonError('usage', 'the store is empty: give a SQLite file, postgres://... or memory');
  const s = (spec ?? opts.env?.BATON_STORE ?? '').trim() || DEFAULT_STORE;
  if (s === 'memory') return { kind: 'memory' };
  if (/^postgres(ql)?:\/\//i.test(s)) return { kind: 'postgres', url: s };
  // the bare words a user types beside `memory`: `sqlite` is the default file (it made a file named
  // `sqlite`), and `postgres` without a URL is a mistake (it made a SQLite file named `postgres`)
  if (/^(postgres(ql)?|pg)$/i.test(s)) throw new BatonError('usage', `the store ${JSON.stringify(s)} needs a URL: postgres://user@host:5432/database`);
  if (/^sqlite3?$/i.test(s)) return parseStoreSpec(DEFAULT_STORE, opts);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s) && !/^sqlite:\/\//i.test(s)) throw new BatonError('usage', `unknown store ${JSON.stringify(s)}: use memory, sqlite, a file path, or postgres://...`);
  // sqlite://rel.db and sqlite:///abs.db (the URL form other tools write) as well as sqlite:PATH
  const path = /^sqlite:\/\//i.test(s) ? s.slice('sqlite://'.length) : s.startsWith('sqlite:') ? s.slice('sqlite:'.length) : s;
  if (path === '') throw new BatonError('usage', 'the store path is empty');
  const file = resolve(cwd, path);
  const rel = relative(cwd, file);
  return { kind: 'sqlite', file, location: rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file };
}

/**
 * Opens the store a spec names. Faults (BatonError): usage, store-corrupt, store-locked,
 * store-version, store-unreachable, each with a message fit to print as is.
 */
export async function openStore(spec: string | undefined, opts: OpenStoreOptions = {}): Promise<RunStore> {
  // from plain JavaScript or a config file: a misspelt mode would have run on FULL without a word
  if (opts.sync !== undefined && opts.sync !== 'full' && opts.sync !== 'normal') throw new BatonError('usage', `sync expects 'full' or 'normal', got ${JSON.stringify(opts.sync)}`);
  const p = parseStoreSpec(spec, opts);
  switch (p.kind) {
    case 'memory':
      return new MemoryStore();
    case 'postgres': {
      // loaded only when asked for: a SQLite user never pays for the store's code at startup; it loads pg
      // (an optional peer dependency) itself, and names it when it is missing
      const { openPostgresStore } = await import('../store/postgres.js');
      return openPostgresStore(p.url, { ...(opts.listen ? { listen: opts.listen } : {}), ...(opts.databaseClock !== undefined ? { databaseClock: opts.databaseClock } : {}) });
    }
    case 'sqlite': {
      const why = sqlitePathProblem(p.file);
      if (why) throw new BatonError('usage', `cannot use the store ${p.location}: ${why}`);
      // reading needs no store: a missing file is an empty one (nothing is created)
      if (opts.access === 'read' && !existsSync(p.file)) return emptyStore(p.location);
      const readonly = opts.access === 'read';
      const open = (ro: boolean): RunStore => openSqliteStore(p.file, { location: p.location, ...(opts.sync ? { sync: opts.sync } : {}), ...(ro ? { readonly: true } : {}), ...(opts.databaseClock !== undefined ? { databaseClock: opts.databaseClock } : {}) });
      try {
        return open(readonly);
      } catch (e) {
        // a reader meets a store of an older schema (Baton was upgraded): where it may write the file, it
        // migrates it as any writing command would, rather than telling the user to run one first
        if (readonly && e instanceof OlderStoreError && writable(p.file) && writable(dirname(p.file))) {
          try {
            await open(false).close();
            return open(true);
          } catch (again) {
            throw storeFault(again, p.file, p.location);
          }
        }
        throw storeFault(e, p.file, p.location);
      }
    }
    default: {
      const never: never = p;
      throw new BatonError('internal', `unhandled store ${JSON.stringify(never)}`);
    }
  }
}

/**
 * Why a SQLite store cannot be at `file`, checked before anything is created: the path names a
 * directory, or a part of it is a regular file. (A directory nobody may write in is found when
 * SQLite opens the file, and reported by storeFault.)
 */
function sqlitePathProblem(file: string): string | undefined {
  const st = statOf(file);
  if (st?.isDirectory()) return 'it is a directory; name a file, e.g. .baton/baton.db';
  if (st) return undefined;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const d = statOf(dir);
    if (d && !d.isDirectory()) return `${dir} is a file, not a directory`;
    if (d || dirname(dir) === dir) return undefined;
  }
}

function statOf(path: string): ReturnType<typeof statSync> | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** A file-system failure while creating or opening the store, as a message (never a stack trace). */
function storeFault(e: unknown, file: string, location: string): unknown {
  const code = (e as NodeJS.ErrnoException).code;
  if (e instanceof BatonError) {
    // SQLite says "unable to open database file": say which directory cannot be written
    if (e.code === 'store' && !existsSync(file) && !writable(nearestDir(file))) return new BatonError('store', `cannot create the store ${location}: no permission to write in ${nearestDir(file)}`, { cause: e });
    return e;
  }
  if (code === 'EACCES' || code === 'EPERM') return new BatonError('store', `cannot create the store ${location}: permission denied (${(e as NodeJS.ErrnoException).path ?? dirname(file)})`, { cause: e });
  if (code === 'EROFS') return new BatonError('store', `cannot create the store ${location}: the file system is read-only`, { cause: e });
  if (code === 'ENOTDIR' || code === 'EEXIST') return new BatonError('usage', `cannot use the store ${location}: a part of its path is a file, not a directory`, { cause: e });
  if (typeof code === 'string') return new BatonError('store', `cannot open the store ${location}: ${(e as Error).message}`, { cause: e });
  return e;
}

function nearestDir(file: string): string {
  let dir = dirname(file);
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** What a read-only command sees where no store file exists yet: no runs (named as the file is). */
function emptyStore(location: string): RunStore {
  const store = new MemoryStore();
  Object.defineProperty(store, 'location', { value: location });
  return store;
}
