/// <reference types="node" preserve="true" />
/**
 * `@baton-run/baton/postgres`: the PostgreSQL store. Needs the optional peer dependency `pg`
 * (`npm install pg`), loaded when the first store opens (a missing one is a `missing-package` error):
 * importing this subpath, and its declarations, need neither `pg` nor `@types/pg`.
 * `openStore('postgres://...')` from the core loads this on demand.
 */

/** Opens (creating or migrating its schema) a PostgreSQL store: per-run locks, leases, LISTEN/NOTIFY. */
export { openPostgresStore, PostgresStore, type PostgresStoreOptions } from '../store/postgres.js';
