/**
 * A PostgreSQL database of a test file's own on the real server (127.0.0.1:5432 unless BATON_TEST_PG
 * says otherwise; `.ci/run` starts it). When the server cannot be reached the tests fail, never skip.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_SERVER = process.env['BATON_TEST_PG'] ?? 'postgres://postgres@127.0.0.1:5432';

export async function pgAdmin(sql: string): Promise<void> {
  // Under a loaded machine (a whole suite's PostgreSQL files at once, a DROP ... WITH (FORCE) waiting for
  // a checkpoint) a connection can take more than a few seconds, and CREATE DATABASE can find template1
  // busy (55006): both are tried again for half a minute. A failed beforeAll is not retried by vitest's
  // retry, so one slow connect failed every test of a file.
  const end = Date.now() + 30_000;
  for (let attempt = 1; ; attempt++) {
    const c = new pg.Client({ connectionString: `${PG_SERVER}/postgres`, connectionTimeoutMillis: 10_000 });
    try {
      await c.connect();
    } catch (e) {
      if (Date.now() < end) {
        await new Promise((r) => setTimeout(r, 250 * attempt));
        continue;
      }
      throw new Error(`PostgreSQL at ${PG_SERVER} cannot be reached (${(e as Error).message}); start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start. These tests never skip`);
    }
    try {
      await c.query(sql);
      return;
    } catch (e) {
      if ((e as { code?: string }).code !== '55006' || Date.now() >= end) throw e;
    } finally {
      await c.end().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 250 * attempt));
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
