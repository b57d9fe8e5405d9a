/**
 * `@baton-run/baton/postgres`: the PostgreSQL store. Needs the optional peer dependency `pg`
 * (`npm install pg`; `@types/pg` for its types). `openStore('postgres://...')` from the core loads
 * this on demand, and says which package is missing if it is.
 */

/** Opens (creating or migrating its schema) a PostgreSQL store: per-run locks, leases, LISTEN/NOTIFY. */
export { openPostgresStore, PostgresStore, type PostgresStoreOptions } from '../store/postgres.js';
