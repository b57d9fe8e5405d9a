/**
 * What PostgreSQL spends on the rows a phase writes, measured alone (not part of `npm run bench`):
 * `npx tsx bench/probe-writes.ts [PHASES] [BATCH]`. One client on a fresh database commits PHASES
 * phases, BATCH to a transaction, each phase a claim and a completion as Baton's events are (two JSON
 * bodies) and its task row, written four ways side by side: the events as rows, the events as one
 * chunk row per commit, the task row by UPDATE, and by INSERT ... ON CONFLICT with input and output.
 * It prints wall and server CPU (/proc of the backend) per phase for each statement: the floor under
 * any storage format that keeps a durable event per transition (README: the 10,000-phase fan).
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { withDatabase } from './queue.js';

const N = Number(process.argv[2] ?? 10_000);
const B = Number(process.argv[3] ?? 32);
const R = 'run_probe';
const OUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };
const IN = { in0: [{ source: 's', content: 'c', confidence: 0.5 }], topic: 't' };

await withDatabase('probe_writes', async (url) => {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const pid = (await c.query<{ p: number }>('SELECT pg_backend_pid() AS p')).rows[0]!.p;
  const cpu = (): number => {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  };
  const totals = new Map<string, [number, number]>();
  const q = async (name: string, sql: string, params?: unknown[]): Promise<void> => {
    const t0 = performance.now();
    const c0 = cpu();
    await c.query(sql, params);
    const t = totals.get(name) ?? [0, 0];
    totals.set(name, [t[0] + performance.now() - t0, t[1] + cpu() - c0]);
  };
  await c.query(`CREATE TABLE tasks (run_id text NOT NULL, phase text NOT NULL, task_id text NOT NULL, status text NOT NULL, attempt integer NOT NULL, agent text NOT NULL,
      lease_owner text, lease_expires_at bigint, not_before bigint, input json, output json, failure json, updated_at bigint NOT NULL, PRIMARY KEY (run_id, phase));
    CREATE INDEX tasks_due ON tasks ((COALESCE(not_before, updated_at))) WHERE status = 'ready' AND (not_before IS NULL OR not_before < 9007199254740991);
    CREATE INDEX tasks_lease ON tasks (lease_expires_at) WHERE status = 'running';
    CREATE TABLE events (run_id text NOT NULL, seq integer NOT NULL, type text NOT NULL, at bigint NOT NULL, phase text, body json NOT NULL, PRIMARY KEY (run_id, seq));
    CREATE TABLE chunks (run_id text NOT NULL, seq integer NOT NULL, first integer NOT NULL, body text NOT NULL, PRIMARY KEY (run_id, seq));
    ALTER TABLE chunks ALTER COLUMN body SET STORAGE EXTERNAL`);
  const phases = Array.from({ length: N }, (_, i) => `p${i}`);
  await c.query(`INSERT INTO tasks SELECT $1, p, $1 || ':' || p, 'ready', 1, 'agent-1', NULL, NULL, NULL, NULL, NULL, NULL, 1 FROM unnest($2::text[]) p`, [R, phases]);
  await c.query('ANALYZE tasks');
  let seq = 0;
  const ev = (s: number, type: string, phase: string, extra: object): string => JSON.stringify({ type, phase, task_id: `${R}:${phase}`, ...extra, seq: s, at: Date.now() });
  for (let i = 0; i < N; i += B) {
    const ph = phases.slice(i, i + B);
    const bodies: string[] = [];
    const seqs: number[] = [];
    const types: string[] = [];
    const first = seq + 1;
    for (const p of ph) {
      bodies.push(ev(++seq, 'task.claimed', p, { attempt: 1, agent: 'agent-1', input: IN, worker: 'host:1:w', lease_expires_at: Date.now() + 30_000 }));
      seqs.push(seq);
      types.push('task.claimed');
    }
    for (const p of ph) {
      bodies.push(ev(++seq, 'task.completed', p, { attempt: 1, output: OUT, extra_keys: [], cost_usd: 0 }));
      seqs.push(seq);
      types.push('task.completed');
    }
    await q('BEGIN', 'BEGIN');
    await q('events as one chunk', 'INSERT INTO chunks VALUES ($1, $2, $3, $4)', [R, seq, first, `[${bodies.join(',')}]`]);
    await q('events as rows', `INSERT INTO events SELECT $1, e.* FROM ROWS FROM (unnest($2::int[]), unnest($3::text[]), unnest($4::bigint[]), unnest($5::text[]), json_array_elements($6::json)) e`, [
      R,
      seqs,
      types,
      seqs.map(() => Date.now()),
      [...ph, ...ph],
      `[${bodies.join(',')}]`,
    ]);
    await q('task row UPDATE', `UPDATE tasks t SET status = 'running', updated_at = 2 WHERE t.run_id = $1 AND t.phase = ANY($2::text[])`, [R, ph]);
    await q(
      'task row upsert (input, output)',
      `INSERT INTO tasks SELECT $1, t.p, $1 || ':' || t.p, 'completed', 1, 'agent-1', NULL, NULL, NULL, t.i, t.o, NULL, 3 FROM ROWS FROM (unnest($2::text[]), json_array_elements($3::json), json_array_elements($4::json)) t(p, i, o)
       ON CONFLICT (run_id, phase) DO UPDATE SET status = excluded.status, input = excluded.input, output = excluded.output, updated_at = excluded.updated_at`,
      [R, ph, JSON.stringify(ph.map(() => IN)), JSON.stringify(ph.map(() => OUT))],
    );
    await q('COMMIT', 'COMMIT');
  }
  await c.end();
  console.log(`${N} phases, ${B} to a transaction (server CPU in 10 ms ticks: read the totals, not single digits)`);
  for (const [name, [wall, cpuMs]] of totals) console.log(`${name.padEnd(32)} ${((wall * 1000) / N).toFixed(1).padStart(6)} µs wall/phase ${((cpuMs * 1000) / N).toFixed(1).padStart(6)} µs server CPU/phase`);
});
