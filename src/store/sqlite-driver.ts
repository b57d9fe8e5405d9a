/**
 * The SQLite binding behind the embedded store: Node's built-in `node:sqlite` (DatabaseSync) where it
 * loads without a flag (Node >= 22.13), else better-sqlite3 (an optional peer dependency: Node 20).
 * `BATON_SQLITE=node|better-sqlite3` picks one (docs/stores.md has the figures behind the default).
 *
 * The store sees exactly the subset of better-sqlite3's API it uses, so `import * as Database from
 * './sqlite-driver.js'` reads as better-sqlite3 did: `Database.open(file, { timeout })`, `prepare(sql)`
 * -> `{ run, get, all, iterate, pluck }`, `exec`, `pragma`, `transaction(fn)` (with `.immediate`),
 * `open`, `close`, and `SqliteError` with better-sqlite3's `code` strings (`SQLITE_BUSY`, ...).
 *
 * Both load synchronously (the store opens in a constructor): `process.getBuiltinModule` for the
 * built-in, `createRequire` for the CommonJS package. A binding that cannot load is a BatonError with
 * one line naming the fix, never the loader's stack.
 */
import { createRequire } from 'node:module';
import { BatonError } from '../core/errors.js';
import { isMissingPackage, missingPackage } from '../core/optional.js';

export type Binding = 'node' | 'better-sqlite3';

export interface RunResult {
  changes: number | bigint;
  lastInsertRowid: number | bigint;
}

/** A prepared statement (the type parameters mirror better-sqlite3's and are not checked). */
export interface Statement<_P = unknown[], _R = unknown> {
  /** The SQL text. */
  readonly source: string;
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
  /** Rows as their first column's value (better-sqlite3's `pluck()`). */
  pluck(toggle?: boolean): this;
}

/** `tx(...args)` runs `fn` in a deferred transaction, `tx.immediate(...args)` after `BEGIN IMMEDIATE`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- better-sqlite3's own constraint, so its Database fits this interface
type AnyFunction = (...args: any[]) => unknown;
type Args<F extends AnyFunction> = F extends (...args: infer A) => unknown ? A : never;
export interface Transaction<F extends AnyFunction> {
  (...args: Args<F>): ReturnType<F>;
  deferred(...args: Args<F>): ReturnType<F>;
  immediate(...args: Args<F>): ReturnType<F>;
}

export interface Database {
  prepare(sql: string): Statement;
  exec(sql: string): this;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  transaction<F extends AnyFunction>(fn: F): Transaction<F>;
  readonly open: boolean;
  readonly inTransaction: boolean;
  close(): void;
}

export interface OpenOptions {
  /** Busy timeout in ms: how long a write waits for another connection's lock. */
  timeout?: number;
  /** Which binding (default: `BATON_SQLITE`, else node:sqlite when available, else better-sqlite3). */
  binding?: Binding;
  /** Open for reading only; the file must exist. */
  readonly?: boolean;
}

/**
 * An error from SQLite, with better-sqlite3's `code` (`SQLITE_BUSY`, `SQLITE_CORRUPT_VTAB`, ...).
 * `instanceof` also holds for better-sqlite3's own SqliteError, which the store sees unwrapped.
 */
export class SqliteError extends Error {
  readonly code: string;
  constructor(message: string, code: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'SqliteError';
  }
  static override [Symbol.hasInstance](x: unknown): boolean {
    const code = x instanceof Error ? (x as { code?: unknown }).code : undefined;
    return typeof code === 'string' && code.startsWith('SQLITE_');
  }
}

/** Opens a database file (or `:memory:`) through the chosen binding. */
export function open(file: string, opts: OpenOptions = {}): Database {
  const binding = opts.binding ?? chooseBinding();
  if (binding === 'node') return openNode(file, opts.timeout ?? 5_000, opts.readonly === true);
  const Better = loadBetterSqlite3();
  try {
    return pinned(new Better(file, { timeout: opts.timeout ?? 5_000, ...(opts.readonly ? { readonly: true, fileMustExist: true } : {}) }));
  } catch (err) {
    throw nativeLoadFault(err) ?? err;
  }
}

/**
 * better-sqlite3 12 built against Node 24.19+ headers aborts the process (`Assertion failed: (env) !=
 * nullptr`) when V8 collects one of its Database or Statement objects outside a JavaScript context (see
 * `pinned` in sqlite.ts). So none is ever left for the GC: every database and statement this driver hands
 * out (and every iterator) stays reachable for the process's life. node:sqlite has no such problem.
 */
const PINNED = new Set<object>();
function pinned(db: Database): Database {
  PINNED.add(db);
  const prepare = db.prepare.bind(db);
  db.prepare = (sql: string): Statement => {
    const st = prepare(sql);
    PINNED.add(st);
    // an iterator is such an object too (the store never iterates: this is for other users of the driver)
    const iterate = st.iterate.bind(st);
    st.iterate = (...params: unknown[]): IterableIterator<unknown> => {
      const it = iterate(...params);
      PINNED.add(it);
      return it;
    };
    return st;
  };
  // better-sqlite3's pragma() prepares a statement of its own that nothing pins: go through prepare()
  db.pragma = (source: string, options: { simple?: boolean } = {}): unknown => {
    const st = db.prepare(`PRAGMA ${source}`);
    return options.simple ? st.pluck().get() : st.all();
  };
  return db;
}

/** The binding `open()` uses when none is given. */
export function chooseBinding(env: Readonly<Record<string, string | undefined>> = process.env): Binding {
  const asked = env['BATON_SQLITE']?.trim();
  if (asked === 'node' || asked === 'better-sqlite3') return asked;
  if (asked) throw new BatonError('usage', `BATON_SQLITE=${asked}: use node (the built-in node:sqlite) or better-sqlite3`);
  return nodeSqlite() ? 'node' : 'better-sqlite3';
}

/** Whether `node:sqlite` loads on this Node without a flag. */
export function nodeSqliteAvailable(): boolean {
  return nodeSqlite() !== undefined;
}

// ---- node:sqlite --------------------------------------------------------------------------------

/** The part of `node:sqlite` used here (@types/node 20 does not declare the module). */
interface NodeStmt {
  readonly sourceSQL: string;
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
  setAllowUnknownNamedParameters?(enabled: boolean): void;
}
interface NodeDb {
  prepare(sql: string): NodeStmt;
  exec(sql: string): void;
  close(): void;
}
interface NodeSqlite {
  DatabaseSync: new (path: string, opts?: { readOnly?: boolean }) => NodeDb;
}
let nodeModule: NodeSqlite | null | undefined;

function nodeSqlite(): NodeSqlite | undefined {
  if (nodeModule === undefined) {
    // Node 22 prints "ExperimentalWarning: SQLite is an experimental feature" on first load; a CLI
    // user can do nothing about it, so that one warning is not passed on.
    const emit = process.emitWarning.bind(process) as (...a: unknown[]) => void;
    const original = Object.getOwnPropertyDescriptor(process, 'emitWarning');
    process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
      const text = typeof warning === 'string' ? warning : warning.message;
      if (/SQLite is an experimental feature/.test(text)) return;
      emit(warning, ...rest);
    });
    try {
      nodeModule = (process.getBuiltinModule?.('node:sqlite') as NodeSqlite | undefined) ?? null;
    } catch {
      nodeModule = null; // 22.5-22.12: behind --experimental-sqlite
    } finally {
      if (original) Object.defineProperty(process, 'emitWarning', original);
      else delete (process as { emitWarning?: unknown }).emitWarning;
    }
  }
  return nodeModule ?? undefined;
}

function openNode(file: string, timeout: number, readOnly = false): Database {
  const m = nodeSqlite();
  if (!m) throw new BatonError('missing-package', `BATON_SQLITE=node: node:sqlite is not available on Node ${process.versions.node} (it needs Node >= 22.13); use better-sqlite3`);
  let db: NodeDb;
  try {
    db = readOnly ? new m.DatabaseSync(file, { readOnly: true }) : new m.DatabaseSync(file);
  } catch (err) {
    throw fromNode(err);
  }
  const wrapped = new NodeDatabase(db);
  wrapped.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(timeout))}`);
  return wrapped;
}

type SqlValue = null | number | bigint | string | NodeJS.ArrayBufferView;

class NodeDatabase implements Database {
  private depth = 0;
  private closed = false;
  constructor(private readonly db: NodeDb) {}

  get open(): boolean {
    return !this.closed;
  }

  get inTransaction(): boolean {
    return this.depth > 0;
  }

  prepare(sql: string): Statement {
    return new NodeStatement(call(() => this.db.prepare(sql)));
  }

  exec(sql: string): this {
    call(() => this.db.exec(sql));
    return this;
  }

  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    const st = this.prepare(`PRAGMA ${source}`);
    return options.simple ? st.pluck().get() : st.all();
  }

  /** better-sqlite3's semantics: BEGIN/COMMIT, ROLLBACK when `fn` throws, savepoints when nested. */
  transaction<F extends AnyFunction>(fn: F): Transaction<F> {
    const make =
      (begin: string) =>
        (...args: Args<F>): ReturnType<F> => {
          const nested = this.depth > 0;
          const name = `baton_sp${this.depth}`;
          const rollback = (): void => {
            try {
              this.exec(nested ? `ROLLBACK TO ${name}; RELEASE ${name}` : 'ROLLBACK');
            } catch {
              // SQLite already rolled back (e.g. SQLITE_FULL); the first error is the one to report
            }
          };
          this.exec(nested ? `SAVEPOINT ${name}` : begin);
          this.depth++;
          let r: unknown;
          try {
            r = fn(...args);
          } catch (err) {
            this.depth--;
            rollback();
            throw err;
          }
          this.depth--;
          try {
            this.exec(nested ? `RELEASE ${name}` : 'COMMIT');
          } catch (err) {
            rollback();
            throw err;
          }
          return r as ReturnType<F>;
        };
    const tx = make('BEGIN') as Transaction<F>;
    tx.deferred = make('BEGIN DEFERRED');
    tx.immediate = make('BEGIN IMMEDIATE');
    return tx;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}

class NodeStatement implements Statement {
  private plucked = false;
  constructor(private readonly st: NodeStmt) {
    // better-sqlite3 ignores named parameters a statement does not use
    st.setAllowUnknownNamedParameters?.(true);
  }

  get source(): string {
    return this.st.sourceSQL;
  }

  pluck(toggle = true): this {
    this.plucked = toggle;
    return this;
  }

  run(...params: unknown[]): RunResult {
    return call(() => this.st.run(...bindable(params)));
  }

  get(...params: unknown[]): unknown {
    const row = call(() => this.st.get(...bindable(params)));
    return this.plucked && row !== undefined ? firstColumn(row) : row;
  }

  all(...params: unknown[]): unknown[] {
    const rows = call(() => this.st.all(...bindable(params)));
    return this.plucked ? rows.map(firstColumn) : rows;
  }

  *iterate(...params: unknown[]): IterableIterator<unknown> {
    const it = call(() => this.st.iterate(...bindable(params)));
    for (;;) {
      const n = call(() => it.next());
      if (n.done) return;
      yield this.plucked ? firstColumn(n.value) : n.value;
    }
  }
}

function firstColumn(row: unknown): unknown {
  for (const k in row as object) return (row as Record<string, unknown>)[k];
  return undefined;
}

/** better-sqlite3 binds `undefined` as NULL; node:sqlite refuses it. */
function bindable(params: unknown[]): [Record<string, SqlValue>, ...SqlValue[]] | SqlValue[] {
  return params.map((p) => {
    if (p === undefined) return null;
    if (p !== null && typeof p === 'object' && !ArrayBuffer.isView(p)) {
      const o: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(p)) o[k] = v === undefined ? null : v;
      return o;
    }
    return p;
  }) as SqlValue[];
}

function call<R>(f: () => R): R {
  try {
    return f();
  } catch (err) {
    throw fromNode(err);
  }
}

/** SQLite's primary result codes, by number, as better-sqlite3 names them. */
const CODES: Record<number, string> = {
  1: 'SQLITE_ERROR',
  2: 'SQLITE_INTERNAL',
  3: 'SQLITE_PERM',
  4: 'SQLITE_ABORT',
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  7: 'SQLITE_NOMEM',
  8: 'SQLITE_READONLY',
  9: 'SQLITE_INTERRUPT',
  10: 'SQLITE_IOERR',
  11: 'SQLITE_CORRUPT',
  12: 'SQLITE_NOTFOUND',
  13: 'SQLITE_FULL',
  14: 'SQLITE_CANTOPEN',
  15: 'SQLITE_PROTOCOL',
  16: 'SQLITE_EMPTY',
  17: 'SQLITE_SCHEMA',
  18: 'SQLITE_TOOBIG',
  19: 'SQLITE_CONSTRAINT',
  20: 'SQLITE_MISMATCH',
  21: 'SQLITE_MISUSE',
  22: 'SQLITE_NOLFS',
  23: 'SQLITE_AUTH',
  24: 'SQLITE_FORMAT',
  25: 'SQLITE_RANGE',
  26: 'SQLITE_NOTADB',
};

/** node:sqlite's `ERR_SQLITE_ERROR` (with a numeric `errcode`) as a SqliteError; anything else as is. */
function fromNode(err: unknown): unknown {
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown };
  if (typeof err !== 'object' || err === null || e.code !== 'ERR_SQLITE_ERROR') {
    if (err instanceof Error && /database is not open/i.test(err.message)) return new TypeError('The database connection is not open', { cause: err });
    return err;
  }
  const n = typeof e.errcode === 'number' ? e.errcode : 1;
  const code = CODES[n & 0xff] ?? 'SQLITE_ERROR';
  return new SqliteError(typeof e.message === 'string' ? e.message : code, code, { cause: err });
}

// ---- better-sqlite3 -----------------------------------------------------------------------------

type BetterCtor = new (file: string, opts: { timeout: number }) => Database;

/**
 * Loads better-sqlite3 (`from`: where to resolve it, and `builtIn`: whether this Node has node:sqlite, for
 * tests). On a Node with node:sqlite it is loaded only when BATON_SQLITE asks for it: the hint says so.
 */
export function loadBetterSqlite3(from: string = import.meta.url, builtIn: boolean = nodeSqliteAvailable()): BetterCtor {
  try {
    return createRequire(from)('better-sqlite3') as BetterCtor;
  } catch (err) {
    if (isMissingPackage(err, 'better-sqlite3')) {
      const m = missingPackage('better-sqlite3', `The SQLite store on Node ${process.versions.node}`, err);
      m.message = builtIn
        ? `${m.message} (or leave BATON_SQLITE unset: this Node has node:sqlite built in; or --store memory)`
        : `${m.message} (or use Node >= 22.13, which has node:sqlite built in, or --store memory)`;
      throw m;
    }
    throw nativeLoadFault(err) ?? err;
  }
}

/**
 * better-sqlite3 loads its native addon when the first database opens. Installed without its build
 * (`--ignore-scripts`, pnpm's default) or built for another Node ABI, that fails with the loader's
 * message; the user needs the fix, not the stack.
 */
export function nativeLoadFault(err: unknown): BatonError | undefined {
  if (!(err instanceof Error)) return undefined;
  const code = (err as { code?: unknown }).code;
  const abi = /NODE_MODULE_VERSION|compiled against a different Node\.js version/.test(err.message);
  const unbuilt = /Could not locate the bindings file|better_sqlite3\.node/.test(err.message);
  if (!abi && !unbuilt && code !== 'ERR_DLOPEN_FAILED') return undefined;
  // npm 12 skips the install scripts of dependencies not approved in the project's `allowScripts`
  const why = abi ? `was built for another Node version than this one (${process.versions.node})` : 'has no native build (its install script was skipped: --ignore-scripts, pnpm, or npm without `allowScripts` approval)';
  const fix = abi ? '`npm rebuild better-sqlite3`' : '`npm approve-scripts better-sqlite3` (npm 11.16+), then `npm rebuild better-sqlite3`';
  return new BatonError('store', `better-sqlite3 ${why}: run ${fix}, or use --store memory${nodeSqliteAvailable() ? '' : ', or Node >= 22.13 (node:sqlite)'}`, { cause: err });
}
