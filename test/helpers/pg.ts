/**
 * A PostgreSQL database of a test file's own on the real server (127.0.0.1:5432 unless BATON_TEST_PG
 * says otherwise; `.ci/run` starts it). When the server cannot be reached the tests fail, never skip.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_SERVER = process.env['BATON_TEST_PG'] ?? 'postgres://postgres@127.0.0.1:5432';

export async function pgAdmin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: `${PG_SERVER}/postgres`, connectionTimeoutMillis: 3_000 });
  try {
    await c.connect();
  } catch (e) {
    throw new Error(`PostgreSQL at ${PG_SERVER} cannot be reached (${(e as Error).message}); start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start. These tests never skip`);
  }
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A fresh database name and URL; `create()` in beforeAll, `drop()` in afterAll. */
export function testDatabase(prefix: string): { url: string; create: () => Promise<void>; drop: () => Promise<void> } {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  return {
    url: `${PG_SERVER}/${name}`,
    create: () => pgAdmin(`CREATE DATABASE ${name}`),
    drop: () => pgAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}
