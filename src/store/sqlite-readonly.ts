/**
 * Opening a SQLite store to read it only (`baton runs`, `baton show`): no write access to the file or
 * its directory is needed.
 *
 * A WAL database is read through its `-shm` file, which SQLite must be able to create beside the
 * database unless it already exists: in a read-only directory, with no `-wal` left over (a clean
 * close removes both), even a read-only connection fails with SQLITE_READONLY_DIRECTORY. Then no
 * process is writing to the store (a writer would need that same file), so a copy of the database
 * file alone is the whole store: it is read from a private temporary copy.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as Driver from './sqlite-driver.js';
import { BatonError } from '../core/errors.js';
import { latestVersion, type Migration } from './migrations.js';

export function openReadonly(file: string, busyMs: number): Driver.Database {
  try {
    const db = Driver.open(file, { readonly: true, timeout: busyMs });
    db.exec('PRAGMA schema_version'); // the first read is where a missing -shm shows
    return db;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (!(err instanceof Driver.SqliteError) || !(code === 'SQLITE_READONLY_DIRECTORY' || code === 'SQLITE_READONLY' || code === 'SQLITE_CANTOPEN') || existsSync(`${file}-wal`)) throw err;
  }
  const dir = mkdtempSync(join(tmpdir(), 'baton-ro-'));
  const copy = join(dir, 'baton.db');
  copyFileSync(file, copy);
  const db = Driver.open(copy, { readonly: true, timeout: busyMs });
  db.exec('PRAGMA schema_version');
  // the copy goes when the store is closed (and with the process at the latest)
  const close = db.close.bind(db);
  const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
  process.once('exit', cleanup);
  (db as { close: () => void }).close = () => {
    const r = close();
    cleanup();
    process.off('exit', cleanup);
    return r;
  };
  return db;
}

/** A store of an older schema met read-only (`store-version`): one that may be written is migrated instead (api/store.ts). */
export class OlderStoreError extends BatonError {
  constructor(message: string) {
    super('store-version', message);
  }
}

/** A store opened read-only is read as it is: it must already have this Baton's schema (nothing is migrated). */
export function checkSchema(db: Driver.Database, location: string, migrations: readonly Migration[]): void {
  const known = latestVersion(migrations);
  const has = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'baton_schema'").pluck().get();
  if (!has) throw new BatonError('store-corrupt', `${location} is not a Baton store (no baton_schema table)`);
  const current = (db.prepare('SELECT max(version) FROM baton_schema').pluck().get() as number | null) ?? 0;
  if (current > known) throw new BatonError('store-version', `${location} has store schema version ${current}, written by a newer Baton; this Baton knows versions up to ${known}: upgrade Baton`);
  if (current < known) throw new OlderStoreError(`${location} has store schema version ${current}; this Baton reads version ${known}: open it once with write access (any command that runs) to migrate it`);
}
