/**
 * `baton approve|deny RUN GATE`, `baton respond RUN GATE --value JSON`, `baton cancel RUN`: one
 * transaction each, on a store here, or with `--server URL` through a Baton server's API (the decision is
 * the key's name's there, as the server's approver rules say).
 */
import { parseArgs } from 'node:util';
import { createEngine } from '../api/engine.js';
import type { Json, JsonObject } from '../core/json.js';
import type { RunStore } from '../engine/ports.js';
import { ServerAnswerError, ServerClient } from '../server/client.js';
import { START_BLIP_MS, UsageError, actor, exitFor, openCliStore, storeTroubleLine } from './durable.js';
import { riding } from './riding.js';
import { printFailure } from './fail.js';
import { CANCEL_OPTIONS, DECIDE_OPTIONS, RESPOND_OPTIONS } from './spec.js';
import type { CliIo } from './io.js';

/** The server's client for `--server`, refusing the flags that name a store or a decider here. */
function serverClient(values: { server?: string | undefined; 'api-key'?: string | undefined; store?: string | undefined; sync?: string | undefined; as?: string | undefined }, io: CliIo): ServerClient | undefined {
  if (values.server === undefined) return undefined;
  for (const f of ['store', 'sync', 'as'] as const) {
    if (values[f] !== undefined) throw new UsageError(`--${f} does not go with --server: the server keeps the runs${f === 'as' ? ', and decides as the API key’s name' : ''}`);
  }
  const key = values['api-key'] ?? io.env['BATON_API_KEY'];
  return new ServerClient({ url: values.server, ...(key !== undefined && key !== '' ? { key } : {}) });
}

/** A refusal by the server: its code and message, with the HTTP status; 1 for a gate that refused the decision, else 2. */
function serverFailure(e: unknown, cmd: string, server: string, io: CliIo): number {
  if (!(e instanceof ServerAnswerError)) return exitFor(e, cmd, io);
  const extra = (e.body['error'] ?? {}) as JsonObject;
  const { code: _code, message: _message, ...rest } = extra;
  printFailure(io, cmd, e.code, `${server}: ${e.message} (HTTP ${e.status})`, rest);
  return e.code === 'gate-refused' || e.code === 'not-an-approver' || e.code === 'run-ended' ? 1 : 2;
}

const seg = encodeURIComponent;

/** The gate as the server lists it, when it is decided as `want` says (after a try whose answer was lost). */
async function gateDecided(client: ServerClient, runId: string, gateId: string, want: (g: JsonObject) => boolean): Promise<JsonObject | undefined> {
  const gates = (await client.request('GET', `/runs/${seg(runId)}/gates`)).body['gates'];
  const gate = Array.isArray(gates) ? (gates as JsonObject[]).find((g) => g['id'] === gateId) : undefined;
  return gate && want(gate) ? gate : undefined;
}

/**
 * The store and an engine for a command that decides (approve, deny, respond, cancel). Like run and
 * resume, it rides out a database restart or a network cut for START_BLIP_MS, as it opens and as it
 * commits, saying so on stderr: a decision made during a blip waits for it rather than being lost to
 * an error. A decision whose answer the cut lost is recognised as made when the command tries again.
 */
async function decidingEngine(values: { store?: string | undefined; sync?: string | undefined }, io: CliIo): Promise<{ store: RunStore; engine: ReturnType<typeof createEngine> }> {
  const store = await openCliStore(values, io, 'write', 'blip');
  return { store, engine: createEngine({ store, storeRetryMs: START_BLIP_MS, onStoreTrouble: storeTroubleLine(io) }) };
}

/** A `--value` that is not JSON: a bare word that is one of the gate's string choices (`--value retry`) means that string. */
function bareWordAnswer(word: string, notJson: string | undefined, gateId: string, choices: readonly Json[] | undefined): Json {
  if (choices && choices.length > 0 && !choices.includes(word))
    throw new UsageError(`--value ${word}: gate ${gateId} takes one of ${choices.map((c) => (typeof c === 'string' && /^[\w-]+$/.test(c) ? c : JSON.stringify(c))).join(', ')}`);
  if (!choices?.includes(word)) throw new UsageError(`--value is not valid JSON (${notJson ?? 'unreadable'}); a string answer is written '"yes"'`);
  return word;
}

export function decideCommand(decision: 'approve' | 'deny'): (args: string[], io: CliIo) => Promise<number> {
  return async (args, io) => {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: DECIDE_OPTIONS });
    let store: RunStore | undefined;
    try {
      if (positionals.length !== 2) throw new UsageError(`${decision} takes a run id and a gate id (see \`baton show RUN\`)`);
      const [runId, gateId] = positionals as [string, string];
      const client = serverClient(values, io);
      if (client) {
        const decided = decision === 'approve' ? 'approved' : 'denied';
        const r = await riding(
          io,
          () => client.request('POST', `/runs/${seg(runId)}/gates/${seg(gateId)}/${decision}`, values.comment !== undefined ? { comment: values.comment } : {}),
          async () => {
            const g = await gateDecided(client, runId, gateId, (x) => x['status'] === decided && (x['comment'] ?? undefined) === values.comment && x['auto'] !== true);
            return g ? { status: 200, body: { by: g['decided_by'] ?? 'the API key' } } : undefined;
          },
        );
        const by = typeof r.body['by'] === 'string' ? r.body['by'] : 'the API key';
        io.stdout(values.json ? JSON.stringify({ runId, gateId, decision: decided, by, ...(values.comment !== undefined ? { comment: values.comment } : {}), server: values.server }, null, 2) + '\n' : `gate ${gateId} of run ${runId} ${decided} by ${by} on ${values.server}\n`);
        return 0;
      }
      const opened = await decidingEngine(values, io);
      store = opened.store;
      const engine = opened.engine;
      const by = actor(values.as, io);
      if (decision === 'approve') await engine.approve(runId, gateId, by, values.comment);
      else await engine.deny(runId, gateId, by, values.comment);
      const decided = decision === 'approve' ? 'approved' : 'denied';
      io.stdout(values.json ? JSON.stringify({ runId, gateId, decision: decided, by, ...(values.comment !== undefined ? { comment: values.comment } : {}) }, null, 2) + '\n' : `gate ${gateId} of run ${runId} ${decided} by ${by}\n`);
      return 0;
    } catch (e) {
      return values.server !== undefined ? serverFailure(e, decision, values.server, io) : exitFor(e, decision, io);
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
    const client = serverClient(values, io);
    if (client) {
      if (value === undefined) {
        // the gate as the server lists it
        const gates = (await riding(io, () => client.request('GET', `/runs/${seg(runId)}/gates`))).body['gates'];
        const gate = Array.isArray(gates) ? (gates as JsonObject[]).find((g) => g['id'] === gateId) : undefined;
        value = gate?.['kind'] === 'input' ? bareWordAnswer(values.value, notJson, gateId, Array.isArray(gate['choices']) ? gate['choices'] : undefined) : values.value;
      }
      const answer = value;
      const r = await riding(
        io,
        () => client.request('POST', `/runs/${seg(runId)}/gates/${seg(gateId)}/respond`, { value: answer }),
        async () => {
          const g = await gateDecided(client, runId, gateId, (x) => x['status'] === 'answered' && JSON.stringify(x['value'] ?? null) === JSON.stringify(answer));
          return g ? { status: 200, body: { by: g['decided_by'] ?? 'the API key' } } : undefined;
        },
      );
      const by = typeof r.body['by'] === 'string' ? r.body['by'] : 'the API key';
      io.stdout(values.json ? JSON.stringify({ runId, gateId, decision: 'answered', value, by, server: values.server }, null, 2) + '\n' : `gate ${gateId} of run ${runId} answered by ${by} on ${values.server}\n`);
      return 0;
    }
    const opened = await decidingEngine(values, io);
    store = opened.store;
    const engine = opened.engine;
    if (value === undefined) {
      const gate = (await engine.inspect(runId)).result.gates.find((g) => g.id === gateId);
      // a gate that takes no answer (an approval) or none at all: the engine's refusal says what to do, not a JSON error
      value = gate?.kind === 'input' ? bareWordAnswer(values.value, notJson, gateId, gate.choices) : values.value;
    }
    const by = actor(values.as, io);
    await engine.respond(runId, gateId, value, by);
    io.stdout(values.json ? JSON.stringify({ runId, gateId, decision: 'answered', value, by }, null, 2) + '\n' : `gate ${gateId} of run ${runId} answered by ${by}\n`);
    return 0;
  } catch (e) {
    return values.server !== undefined ? serverFailure(e, 'respond', values.server, io) : exitFor(e, 'respond', io);
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
    const client = serverClient(values, io);
    if (client) {
      // a repeat of a cancel whose answer was lost is refused (the run has ended): a run now cancelled is its success
      const r = await riding<{ status: number; body: JsonObject }>(
        io,
        () => client.request('POST', `/runs/${seg(runId)}/cancel`, values.reason !== undefined ? { reason: values.reason } : {}),
        async () => ((await client.request('GET', `/runs/${seg(runId)}`)).body['status'] === 'cancelled' ? { status: 200, body: {} } : undefined),
      );
      const reason = typeof r.body['reason'] === 'string' ? r.body['reason'] : values.reason;
      io.stdout(values.json ? JSON.stringify({ runId, status: 'cancelled', ...(reason !== undefined ? { reason } : {}), server: values.server }, null, 2) + '\n' : `run ${runId} cancelled on ${values.server}\n`);
      return 0;
    }
    const opened = await decidingEngine(values, io);
    store = opened.store;
    const engine = opened.engine;
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
    return values.server !== undefined ? serverFailure(e, 'cancel', values.server, io) : exitFor(e, 'cancel', io);
  } finally {
    await store?.close();
  }
}
