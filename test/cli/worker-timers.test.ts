/**
 * `baton worker` fires the timers of runs it does not hold: a gate's expiry (`on_timeout: abort` and
 * `proceed`) on runs stored by `baton run --detach`. A serving worker parks a run that waits on a gate;
 * the run its timer brought back was parked again before the commit that fires it, so these runs waited
 * for ever. Real time (a gate of 1.8 s): the CLI has no clock to move.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { run } from '../../src/cli/main.js';
import { captureIo, type CapturedIo } from '../helpers/cli-io.js';
import { until } from '../helpers/spawn.js';

const capture = (cwd: string): CapturedIo => captureIo(cwd);

const gated = (name: string, onTimeout: string): string => `openintent: "1.0"
info: {name: ${name}}
workflow:
  prep: {assign: x, outputs: {n: integer}}
  ship:
    assign: x
    depends_on: [prep]
    inputs: {n: prep.n}
    x-require_approval: {approvers: [alice], timeout_hours: 0.0005, on_timeout: ${onTimeout}}
`;

async function statusOf(cwd: string, runId: string): Promise<string> {
  const io = capture(cwd);
  await run(['show', runId, '--store', 'runs.db', '--json'], io);
  return (JSON.parse(io.out()) as { status: string }).status;
}

it('baton worker fires the gate expiries of runs stored by run --detach (abort fails the run, proceed completes it)', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'baton-worker-timers-'));
  writeFileSync(join(cwd, 'abort.yaml'), gated('abort', 'abort'));
  writeFileSync(join(cwd, 'proceed.yaml'), gated('proceed', 'proceed'));
  writeFileSync(join(cwd, 'agents.mjs'), 'export default { x: () => ({ n: 1 }) };\n');
  const w = capture(cwd);
  const worker = run(['worker', '--agents', 'agents.mjs', '--store', 'runs.db'], w);
  try {
    await until(() => /serving/.test(w.err()));
    for (const name of ['abort', 'proceed']) {
      const io = capture(cwd);
      expect(await run(['run', `${name}.yaml`, '--agents', 'agents.mjs', '--store', 'runs.db', '--run-id', name, '--detach'], io)).toBe(0);
    }
    await until(async () => (await statusOf(cwd, 'abort')) === 'failed' && (await statusOf(cwd, 'proceed')) === 'completed', 20_000);
  } finally {
    w.interrupt('SIGINT');
    expect(await worker).toBe(0);
  }
}, 40_000);
