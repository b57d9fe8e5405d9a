/**
 * Which store a command uses: `--store SPEC`, else `BATON_STORE`, else the embedded default
 * `.baton/baton.db` under the working directory.
 *   memory                      the in-memory store (lost when the process ends)
 *   postgres://... postgresql:// a PostgreSQL database (schema `baton`)
 *   anything else               a SQLite file path, relative to cwd (`sqlite:PATH` also accepted)
 */
import { isAbsolute, relative, resolve } from 'node:path';
import { BatonError } from '../core/errors.js';
import { loadOptional } from '../core/optional.js';
import type { RunStore } from '../engine/ports.js';
import { MemoryStore } from '../store/memory.js';
import { openSqliteStore } from '../store/sqlite.js';

export const DEFAULT_STORE = '.baton/baton.db';

export interface OpenStoreOptions {
  cwd: string;
  /** SQLite: `full` (default, survives power loss) or `normal` (survives process crashes only). */
  sync?: 'full' | 'normal';
  /** Where `BATON_STORE` is read from (default: none, so tests stay hermetic). */
  env?: Readonly<Record<string, string | undefined>>;
}

export type StoreSpec = { kind: 'memory' } | { kind: 'postgres'; url: string } | { kind: 'sqlite'; file: string; location: string };

/** Parses a store spec without opening anything. */
export function parseStoreSpec(spec: string | undefined, opts: OpenStoreOptions): StoreSpec {
  const s = (spec ?? opts.env?.BATON_STORE ?? '').trim() || DEFAULT_STORE;
  if (s === 'memory') return { kind: 'memory' };
  if (/^postgres(ql)?:\/\//i.test(s)) return { kind: 'postgres', url: s };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) throw new BatonError('usage', `unknown store ${JSON.stringify(s)}: use memory, a file path, or postgres://...`);
  const path = s.startsWith('sqlite:') ? s.slice('sqlite:'.length) : s;
  if (path === '') throw new BatonError('usage', 'the store path is empty');
  const file = resolve(opts.cwd, path);
  const rel = relative(opts.cwd, file);
  return { kind: 'sqlite', file, location: rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file };
}

/**
 * Opens the store a spec names. Faults (BatonError): usage, store-corrupt, store-locked,
 * store-version, store-unreachable, each with a message fit to print as is.
 */
export async function openStore(spec: string | undefined, opts: OpenStoreOptions): Promise<RunStore> {
  const p = parseStoreSpec(spec, opts);
  switch (p.kind) {
    case 'memory':
      return new MemoryStore();
    case 'postgres': {
      // loaded only when asked for: a SQLite user never pays for pg (an optional peer dependency) at startup
      const { openPostgresStore } = await loadOptional('pg', 'PostgreSQL support', () => import('../store/postgres.js'));
      return openPostgresStore(p.url);
    }
    case 'sqlite':
      return openSqliteStore(p.file, { location: p.location, ...(opts.sync ? { sync: opts.sync } : {}) });
    default: {
      const never: never = p;
      throw new BatonError('internal', `unhandled store ${JSON.stringify(never)}`);
    }
  }
}
