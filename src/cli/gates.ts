/** `baton approve|deny RUN GATE`, `baton respond RUN GATE --value JSON`, `baton cancel RUN`: one transaction each. */
import { parseArgs } from 'node:util';
import { createEngine } from '../api/engine.js';
import type { Json } from '../core/json.js';
import type { RunStore } from '../engine/ports.js';
import { UsageError, actor, exitFor, openCliStore } from './durable.js';
import { printFailure } from './fail.js';
import { CANCEL_OPTIONS, DECIDE_OPTIONS, RESPOND_OPTIONS } from './spec.js';
import type { CliIo } from './io.js';

export function decideCommand(decision: 'approve' | 'deny'): (args: string[], io: CliIo) => Promise<number> {
  return async (args, io) => {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: DECIDE_OPTIONS });
    let store: RunStore | undefined;
    try {
      if (positionals.length !== 2) throw new UsageError(`${decision} takes a run id and a gate id (see \`baton show RUN\`)`);
      const [runId, gateId] = positionals as [string, string];
      store = await openCliStore(values, io);
      const engine = createEngine({ store });
      const by = actor(values.as, io);
      if (decision === 'approve') await engine.approve(runId, gateId, by, values.comment);
      else await engine.deny(runId, gateId, by, values.comment);
      const decided = decision === 'approve' ? 'approved' : 'denied';
      io.stdout(values.json ? JSON.stringify({ runId, gateId, decision: decided, by, ...(values.comment !== undefined ? { comment: values.comment } : {}) }, null, 2) + '\n' : `gate ${gateId} of run ${runId} ${decided} by ${by}\n`);
      return 0;
    } catch (e) {
      return exitFor(e, decision, io);
    } finally {
      await store?.close();
    }
  };
}

export async function respondCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: RESPOND_OPTIONS });
  let store: RunStore | undefined;
  try {
    if (positionals.length !== 2) throw new UsageError('respond takes a run id and a gate id (see `baton show RUN`)');
    if (values.value === undefined) throw new UsageError('respond needs --value JSON (a string answer is written \'"yes"\')');
    let value: Json | undefined;
    let notJson: string | undefined;
    try {
      value = JSON.parse(values.value) as Json;
    } catch (e) {
      notJson = (e as Error).message;
    }
    const [runId, gateId] = positionals as [string, string];
    store = await openCliStore(values, io);
    const engine = createEngine({ store });
    if (value === undefined) {
      // a bare word that is one of the gate's string choices (`--value retry`) means that string
      const choices = (await engine.inspect(runId)).result.gates.find((g) => g.id === gateId)?.choices;
      if (choices && choices.length > 0 && !choices.includes(values.value))
        throw new UsageError(`--value ${values.value}: gate ${gateId} takes one of ${choices.map((c) => (typeof c === 'string' && /^[\w-]+$/.test(c) ? c : JSON.stringify(c))).join(', ')}`);
      if (!choices?.includes(values.value)) throw new UsageError(`--value is not valid JSON (${notJson ?? 'unreadable'}); a string answer is written '"yes"'`);
      value = values.value;
    }
    const by = actor(values.as, io);
    await engine.respond(runId, gateId, value, by);
    io.stdout(values.json ? JSON.stringify({ runId, gateId, decision: 'answered', value, by }, null, 2) + '\n' : `gate ${gateId} of run ${runId} answered by ${by}\n`);
    return 0;
  } catch (e) {
    return exitFor(e, 'respond', io);
  } finally {
    await store?.close();
  }
}

export async function cancelCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: CANCEL_OPTIONS });
  let store: RunStore | undefined;
  try {
    if (positionals.length !== 1) throw new UsageError('cancel takes one run id');
    const runId = positionals[0]!;
    store = await openCliStore(values, io);
    const engine = createEngine({ store });
    const before = await store.run(runId);
    if (before && before.status !== 'running' && before.status !== 'waiting') {
      printFailure(io, 'cancel', 'run-ended', `run ${runId} already ${before.status}`, { runId, status: before.status });
      return 1;
    }
    const reason = values.reason ?? `cancelled by ${actor(undefined, io)}`;
    await engine.cancel(runId, reason);
    io.stdout(values.json ? JSON.stringify({ runId, status: 'cancelled', reason }, null, 2) + '\n' : `run ${runId} cancelled\n`);
    return 0;
  } catch (e) {
    return exitFor(e, 'cancel', io);
  } finally {
    await store?.close();
  }
}
