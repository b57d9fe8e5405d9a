// A serve-mode agent: one JSON request per line on stdin, one JSON answer per line on stdout,
// matched by `id`. The process lives as long as the run.
import { createInterface } from 'node:readline';

createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, input, initial_state } = JSON.parse(line);
  const band = initial_state?.band ?? 'short';
  const scores = input.counts.map((c) => (band === 'short' ? Math.max(0, 10 - c.words) : c.words) / 10);
  process.stdout.write(JSON.stringify({ id, output: { scores, pid: process.pid } }) + '\n');
});
