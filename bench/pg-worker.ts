/** A worker process for durable.bench.ts: serves a PostgreSQL schema with no-op agents until SIGTERM. */
import { createEngine } from '../src/api/engine.js';
import { openPostgresStore } from '../src/store/postgres.js';

const [url, schema] = process.argv.slice(2) as [string, string];
const OUT = { findings: [{ source: 's', content: 'c', confidence: 0.5 }], level: 'low' };
const agents: Record<string, () => unknown> = {};
for (let i = 0; i < 10; i++) agents[`agent-${i}`] = () => OUT;
const store = await openPostgresStore(url, { schema, poolSize: 4 });
const engine = createEngine({ store, agents, concurrency: 64 });
const ctl = new AbortController();
process.on('SIGTERM', () => ctl.abort());
await engine.serve(ctl.signal);
await engine.close();
await store.close();
