/**
 * A graphile-worker process for the side-by-side benchmarks (plain JavaScript, as a user runs it):
 * `node graphile-proc.mjs URL CONCURRENCY plain|tuned`
 * runs the no-op task `noop` until SIGTERM or SIGKILL, and prints `ready` once it is polling. `tuned` is
 * graphile-worker's own advice for throughput (its perf test): a local queue of claimed jobs and
 * completions batched with no delay.
 */
import { Logger, run } from 'graphile-worker';

const [url, concurrency, mode] = process.argv.slice(2);
const n = Number(concurrency);
const runner = await run({
  connectionString: url,
  concurrency: n,
  // graphile-worker's default pool: the server (max_connections 100) is shared by 4 processes and other tests
  maxPoolSize: 10,
  noHandleSignals: true,
  pollInterval: 2_000,
  logger: new Logger(() => () => undefined),
  taskList: { noop: async () => undefined },
  ...(mode === 'tuned' ? { preset: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } } } : {}),
});
process.stdout.write('ready\n');
process.on('SIGTERM', () => void runner.stop());
await runner.promise;
