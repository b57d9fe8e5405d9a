/**
 * The run routes: start (idempotent with a run id), list and read, cancel, rerun, and the gate
 * decisions. Each goes through the engine's own operations, as the CLI's commands do, so every rule
 * `baton run` enforces holds here over the same stores.
 */
import { resolve } from 'node:path';
import { newRunId, type Engine } from '../api/engine.js';
import { itemCounts, itemRows } from '../api/items.js';
import { fileRows } from '../api/artifacts.js';
import { WorkflowSpec } from '../api/spec.js';
import { jsonDiagnostics, validationReport } from '../api/validation.js';
import { MAX_TIMEOUT_MS } from '../core/clock.js';
import { BatonError } from '../core/errors.js';
import { Lru } from '../core/lru.js';
import type { Json, JsonObject } from '../core/json.js';
import type { RunEvent, RunStatus } from '../engine/events.js';
import type { RunRecord, RunStore } from '../engine/ports.js';
import { workflowRecord } from '../engine/start.js';
import { parseItemKey, type RunState } from '../engine/state.js';
import { loadWorkflow, parseWorkflow, type CompileResult } from '../workflow/compile.js';
import { HttpError, type Request } from './http.js';
import type { Principal } from './keys.js';
import { pageOf, decodeCursor, encodeCursor } from './pages.js';
import { hostReach } from './posted.js';
import { WorkflowFolder, type RegisteredWorkflow } from './workflows.js';

export interface RunRoutesOptions {
  engine: Engine;
  workflows: ReadonlyMap<string, RegisteredWorkflow>;
  /** Where posted workflows run (their x-command agents' working directory). */
  cwd: string;
}

const ENDED = new Set<RunStatus>(['completed', 'failed', 'cancelled']);

export function runSummary(r: RunRecord): JsonObject {
  return { run_id: r.runId, workflow: r.workflowName, workflow_hash: r.workflowHash, status: r.status, seq: r.seq, cost_usd: r.costUsd, created_at: r.createdAt, updated_at: r.updatedAt, ended_at: r.endedAt };
}

/** Posted texts up to this size are remembered with what they compiled to (services post the same workflow again and again). */
const REMEMBER_TEXT_CHARS = 256 * 1024;

export class RunRoutes {
  /**
   * Posted texts that reach nothing on the host, with their compilation: a pure function of the text
   * then (no file is read, nothing runs), so the same text is not parsed and checked again per run.
   * At most 32 texts of at most 256 KiB: a few megabytes at worst.
   */
  private readonly posted = new Lru<string, CompileResult>(32);

  constructor(private readonly o: RunRoutesOptions) {}

  private get store(): Engine['store'] {
    return this.o.engine.store;
  }

  /** A workflow by text or by registered name, compiled; `file` is the name its diagnostics carry. */
  /** `toRun`: the text is to run (POST /runs), not only to be validated: what it reaches only when it runs counts too. */
  private async compile(body: Record<string, Json>, principal: Principal, toRun: boolean): Promise<{ result: CompileResult; path: string; posted: boolean }> {
    if (typeof body['workflow_name'] === 'string') {
      const w = this.o.workflows.get(body['workflow_name']);
      if (!w) throw new HttpError(404, 'unknown-workflow', `no workflow \`${body['workflow_name']}\` is registered here${this.o.workflows.size > 0 ? ` (registered: ${[...this.o.workflows.keys()].slice(0, 20).join(', ')})` : ' (baton serve --workflows DIR registers them)'}`);
      const result = await loadWorkflow(w.path);
      return { result: { ...result, file: `${w.name}${w.path.endsWith('.yml') ? '.yml' : '.yaml'}` }, path: w.path, posted: false };
    }
    const file = typeof body['file'] === 'string' ? body['file'] : 'workflow.yaml';
    const text = body['workflow'] as string;
    const path = resolve(this.o.cwd, 'workflow.yaml');
    const known = this.posted.get(text);
    if (known) return { result: { ...known, file }, path, posted: true };
    // a posted text that would run commands or read or write files on this host: admins only (checked before anything is read)
    const reach = hostReach(text);
    const refused = toRun ? reach.all : reach.all.filter((l) => !reach.whenRun.includes(l));
    if (refused.length > 0 && !principal.roles.some((x) => x.kind === 'admin'))
      throw new HttpError(403, 'forbidden', `the posted workflow reaches the server's host: ${refused.join(', ')}; only an admin key may ${toRun ? 'run' : 'post'} such a workflow (or register it with baton serve --workflows DIR)`);
    const result = parseWorkflow(text, { file: path });
    // a text that reads files may compile differently tomorrow, and one remembered is not looked at again:
    // only one that reaches nothing is remembered
    if (reach.all.length === 0 && text.length <= REMEMBER_TEXT_CHARS) this.posted.set(text, result);
    return { result: { ...result, file }, path, posted: true };
  }

  async validate(r: Request): Promise<Response> {
    const { result } = await this.compile(r.body, r.principal, false);
    return r.c.json(validationReport([result], this.o.cwd));
  }

  workflowsList(r: Request): Response {
    // the folder as it is now: files added or removed since the last look
    if (this.o.workflows instanceof WorkflowFolder) this.o.workflows.refresh();
    return r.c.json({ workflows: [...this.o.workflows.values()].map((w) => ({ name: w.name })) });
  }

  async start(r: Request): Promise<Response> {
    const { body, principal } = r;
    // auto-approval decides every gate, named approvers or not: admins only
    if (body['auto_approve'] === true && !principal.roles.some((x) => x.kind === 'admin')) throw new HttpError(403, 'forbidden', 'auto_approve decides every gate of the run, whoever its approvers are: only an admin key may ask for it');
    const { result, path, posted } = await this.compile(body, principal, true);
    if (!result.ok) {
      // `{"workflow": "NAME"}` where NAME is registered: the caller meant workflow_name
      const named = typeof body['workflow'] === 'string' && this.o.workflows.has(body['workflow'].trim()) ? `; \`workflow\` is the workflow's text: to start the registered workflow \`${body['workflow'].trim()}\`, send {"workflow_name": "${body['workflow'].trim()}"}` : '';
      throw new HttpError(422, 'invalid-workflow', `${result.file}: the workflow is invalid; nothing was run${named}`, { diagnostics: jsonDiagnostics(result, this.o.cwd) as unknown as Json });
    }
    const model = result.model;
    // past what a deadline can hold (1e306 s is a number, its milliseconds are not): said as the field that was sent
    if (typeof body['timeout_s'] === 'number' && !(body['timeout_s'] * 1000 <= MAX_TIMEOUT_MS)) throw new HttpError(400, 'invalid-request', `timeout_s must be a positive number of seconds a deadline can hold (at most ${MAX_TIMEOUT_MS / 1000}), got ${body['timeout_s']}`);
    const runId = typeof body['run_id'] === 'string' ? body['run_id'] : undefined;
    const wanted = {
      hash: workflowRecord(model, path).hash,
      trigger: (body['trigger'] ?? null),
      initialState: (body['initial_state'] ?? null),
      autoApprove: body['auto_approve'] === true,
      timeoutMs: typeof body['timeout_s'] === 'number' ? body['timeout_s'] * 1000 : undefined,
    };
    const spec = WorkflowSpec.fromResult(result);
    // The id is chosen here when the body has none, so that a start the store did not answer can be
    // named in its 503: the creation may have landed with its answer lost, and a repeat under that id
    // says which (200 with the run, or 201). The creation gets one try (no ride-out of a store that is
    // away: the request is answered 503 now, as a read is) and is dropped while it is still queued if
    // the client goes away: a start answered 503, or abandoned, is never created later by this server.
    const id = runId ?? newRunId(this.o.engine.clock.now());
    const gone = r.c.req.raw.signal;
    const traceparent = r.c.req.header('traceparent');
    try {
      if (runId !== undefined) {
        const existing = await this.store.run(runId);
        if (existing) return this.same(r, existing, wanted);
      }
      await this.o.engine.create(spec, {
        runId: id,
        ...(body['trigger'] !== undefined ? { trigger: body['trigger'] } : {}),
        ...(body['initial_state'] !== undefined ? { initialState: body['initial_state'] as JsonObject } : {}),
        ...(wanted.timeoutMs !== undefined ? { timeoutMs: wanted.timeoutMs } : {}),
        autoApprove: wanted.autoApprove,
        bindings: { server: true, started_by: principal.name },
        path,
        ...(posted ? { cwd: this.o.cwd } : {}),
        // the caller's W3C trace context (its `traceparent` header): the run's trace continues it, as
        // `baton run` continues TRACEPARENT (a malformed one is ignored)
        ...(traceparent !== undefined ? { traceparent } : {}),
        storeRetryMs: 0,
        createSignal: gone,
      });
      const record = await this.store.run(id);
      return r.c.json(runSummary(record!), 201);
    } catch (e) {
      if (e instanceof BatonError && e.code === 'run-exists' && runId !== undefined) {
        // two starts with one id at once: the loser answers as a repeat
        const existing = await this.store.run(runId);
        if (existing) return this.same(r, existing, wanted);
      }
      if (e instanceof BatonError && e.code === 'usage') throw new HttpError(422, 'invalid-input', e.message);
      if (e instanceof BatonError && (e.code === 'store' || e.code === 'store-unreachable' || e.code === 'store-locked')) {
        throw new HttpError(503, e.code, `${e.message}; the run may or may not have been created: send the same start again with "run_id": "${id}" (a repeat of a run that was created answers 200 with it)`, { run_id: id });
      }
      if (gone.aborted) throw new HttpError(503, 'store-unreachable', 'the client went away before the run was sent to the store: nothing was created', { run_id: id });
      throw e;
    }
  }

  /** A start with a taken id: the same body is the same run (200), another is a conflict (409). */
  private same(r: Request, existing: RunRecord, wanted: { hash: string; trigger: Json; initialState: Json; autoApprove: boolean; timeoutMs: number | undefined }): Response {
    const diffs: string[] = [];
    if (existing.workflowHash !== wanted.hash) diffs.push('workflow');
    // none given and `{}` start the same run (run.started records `{}` for both)
    const plain = (v: Json | undefined): string => canonical(v === null || v === undefined ? {} : v);
    if (plain(existing.trigger) !== plain(wanted.trigger)) diffs.push('trigger');
    if (plain(existing.initialState) !== plain(wanted.initialState)) diffs.push('initial_state');
    if ((existing.options['auto_approve'] === true) !== wanted.autoApprove) diffs.push('auto_approve');
    if ((typeof existing.options['timeout_ms'] === 'number' ? existing.options['timeout_ms'] : undefined) !== wanted.timeoutMs) diffs.push('timeout_s');
    if (diffs.length > 0) throw new HttpError(409, 'run-exists', `run ${existing.runId} exists with another ${diffs.join(', ')}; a start with the same run_id must repeat the same body`, { run_id: existing.runId });
    return r.c.json(runSummary(existing), 200);
  }

  async list(r: Request): Promise<Response> {
    const q = r.query;
    const limit = typeof q['limit'] === 'number' ? q['limit'] : 100;
    const status = typeof q['status'] === 'string' ? (q['status'].split(',') as RunStatus[]) : undefined;
    const workflow = typeof q['workflow'] === 'string' ? q['workflow'] : undefined;
    // a cursor the store cannot take (created_at 1.5 or 1e20, a NUL in the id: PostgreSQL refuses them) is the caller's 400, not the store's 503
    const cursor = typeof q['cursor'] === 'string' ? decodeCursor(q['cursor'], (v): v is { c: number; r: string } => Number.isSafeInteger(v['c']) && typeof v['r'] === 'string' && !v['r'].includes('\u0000')) : undefined;
    // one read, from the cursor on, filtered by the store (it read from the newest run and filtered here,
    // four times deeper each time the page was not full: a deep page or a rare workflow read every run)
    const page = await this.store.runs({ ...(status ? { status } : {}), ...(workflow !== undefined ? { workflow } : {}), ...(cursor ? { before: { createdAt: cursor.c, runId: cursor.r } } : {}), limit: limit + 1 });
    const more = page.length > limit;
    const items = page.slice(0, limit);
    const last = items[items.length - 1];
    return r.c.json({ runs: items.map(runSummary), next_cursor: more && last ? encodeCursor({ c: last.createdAt, r: last.runId }) : null });
  }

  async get(r: Request): Promise<Response> {
    const { record, workflow, result, state } = await this.o.engine.inspect(r.params['id']!);
    const { events: _events, phases, ...rest } = result;
    // as `baton show --json`: a for_each phase's items are counted under `fan_out`, listed by /items
    const fanOut: Record<string, JsonObject> = {};
    for (const [name, p] of state.phases) if (p.fan) fanOut[name] = { ...itemCounts(state, name)!, list: `/runs/${record.runId}/phases/${name}/items` };
    return r.c.json({
      ...rest,
      phases: withoutItems(phases, state),
      ...(Object.keys(fanOut).length > 0 ? { fan_out: fanOut } : {}),
      run_id: record.runId,
      status: record.status,
      seq: record.seq,
      workflow_hash: record.workflowHash,
      workflow_path: workflow?.path ?? null,
      trigger: record.trigger,
      initial_state: record.initialState,
      bindings: record.bindings,
      created_at: record.createdAt,
      updated_at: record.updatedAt,
    } as unknown as JsonObject);
  }

  async phases(r: Request): Promise<Response> {
    const { result, state } = await this.o.engine.inspect(r.params['id']!);
    const wanted = typeof r.query['status'] === 'string' ? new Set(r.query['status'].split(',')) : undefined;
    const all = Object.entries(withoutItems(result.phases, state)).map(([name, p]) => ({ name, ...p }) as unknown as JsonObject);
    return r.c.json(pageOf('phases', all, r.query, (p) => !wanted || wanted.has(p['status'] as string)));
  }

  async items(r: Request): Promise<Response> {
    const { state } = await this.o.engine.inspect(r.params['id']!);
    const name = r.params['phase']!;
    const counts = itemCounts(state, name);
    if (!counts) {
      const fans = [...state.phases].filter(([, p]) => p.fan).map(([n]) => n);
      throw new HttpError(404, 'unknown-phase', `run ${r.params['id']!} has no for_each phase \`${name}\` that fanned out${fans.length > 0 ? ` (phases with items: ${fans.join(', ')})` : ''}`);
    }
    const limit = typeof r.query['limit'] === 'number' ? r.query['limit'] : 100;
    const from = typeof r.query['cursor'] === 'string' ? decodeCursor(r.query['cursor'], (v): v is { i: number } => Number.isInteger(v['i']) && (v['i'] as number) >= 0).i : 0;
    const items = itemRows(state, name, from, limit)!;
    return r.c.json({ phase: name, count: counts.items, counts: counts.counts, items: items as unknown as JsonObject[], next_cursor: from + limit < counts.items ? encodeCursor({ i: from + limit }) : null });
  }

  async phase(r: Request): Promise<Response> {
    const { result } = await this.o.engine.inspect(r.params['id']!);
    const name = r.params['phase']!;
    const p = Object.prototype.hasOwnProperty.call(result.phases, name) ? result.phases[name] : undefined;
    if (!p) throw unknownPhase(r.params['id']!, name, result.phases);
    return r.c.json({ name, ...p } as unknown as JsonObject);
  }

  async gates(r: Request): Promise<Response> {
    const { result } = await this.o.engine.inspect(r.params['id']!);
    const wanted = typeof r.query['status'] === 'string' ? new Set(r.query['status'].split(',')) : undefined;
    return r.c.json(pageOf('gates', result.gates as unknown as JsonObject[], r.query, (g) => !wanted || wanted.has(g['status'] as string)));
  }

  async events(r: Request): Promise<Response> {
    const id = r.params['id']!;
    const record = await this.store.run(id);
    if (!record) throw new BatonError('unknown-run', `no run ${id} in ${this.store.location}`);
    const limit = typeof r.query['limit'] === 'number' ? r.query['limit'] : 100;
    const cursor = typeof r.query['cursor'] === 'string' ? decodeCursor(r.query['cursor'], (v): v is { s: number } => Number.isSafeInteger(v['s']) && (v['s'] as number) >= 0) : undefined;
    const after = cursor?.s ?? (typeof r.query['after'] === 'number' ? r.query['after'] : 0);
    const types = typeof r.query['type'] === 'string' ? new Set(r.query['type'].split(',')) : undefined;
    const events = await eventsPage(this.store, id, after, limit + 1, types);
    const items = events.slice(0, limit);
    const last = items[items.length - 1];
    return r.c.json({ events: items as unknown as JsonObject[], next_cursor: events.length > limit && last ? encodeCursor({ s: last.seq }) : null });
  }

  async artifacts(r: Request): Promise<Response> {
    const { record, result } = await this.o.engine.inspect(r.params['id']!);
    const phase = typeof r.query['phase'] === 'string' ? r.query['phase'] : undefined;
    // a typo is a 404, as for /phases/{phase}, not an empty page
    if (phase !== undefined && !Object.prototype.hasOwnProperty.call(result.phases, phase)) throw unknownPhase(record.runId, phase, result.phases);
    // the rows of `baton show --artifacts --json`: AIP-16 files the engine staged and synced, and contract sideEffects files;
    // a fan-out phase's own with its items' (PHASE[INDEX])
    const rows = fileRows(record.runId, result.events) as unknown as JsonObject[];
    return r.c.json(pageOf('artifacts', rows, r.query, (f) => phase === undefined || f['phase'] === phase || parseItemKey(f['phase'] as string)?.parent === phase));
  }

  async cancel(r: Request): Promise<Response> {
    const id = r.params['id']!;
    const before = await this.store.run(id);
    if (!before) throw new BatonError('unknown-run', `no run ${id} in ${this.store.location}`);
    if (ENDED.has(before.status)) throw new HttpError(409, 'run-ended', `run ${id} already ${before.status}`, { run_id: id, status: before.status });
    const reason = typeof r.body['reason'] === 'string' ? r.body['reason'] : `cancelled by ${r.principal.name}`;
    await this.o.engine.cancel(id, reason);
    return r.c.json({ run_id: id, status: 'cancelled', reason });
  }

  async rerun(r: Request): Promise<Response> {
    const id = await this.o.engine.rerun(r.params['id']!, r.body['from'] as string, { ...(typeof r.body['run_id'] === 'string' ? { runId: r.body['run_id'] } : {}) });
    const record = await this.store.run(id);
    return r.c.json(runSummary(record!), 201);
  }

  /** approve, deny or respond: the key's name decides, and must be one of the gate's approvers when it names some. */
  async decide(r: Request, decision: 'approve' | 'deny' | 'respond'): Promise<Response> {
    const id = r.params['id']!;
    const gateId = r.params['gate']!;
    const by = actor(r.principal, r.body['as']);
    const { result } = await this.o.engine.inspect(id);
    const gate = result.gates.find((g) => g.id === gateId);
    if (!gate) throw new HttpError(404, 'unknown-gate', `run ${id} has no gate \`${gateId}\`${result.gates.length > 0 ? ` (gates: ${result.gates.map((g) => g.id).join(', ')})` : ''}`);
    if (gate.approvers.length > 0 && !gate.approvers.includes(by)) throw new HttpError(403, 'not-an-approver', `${by} is not an approver of gate \`${gateId}\` (approvers: ${gate.approvers.join(', ')})`);
    const comment = typeof r.body['comment'] === 'string' ? r.body['comment'] : undefined;
    if (decision === 'approve') await this.o.engine.approve(id, gateId, by, comment);
    else if (decision === 'deny') await this.o.engine.deny(id, gateId, by, comment);
    else await this.o.engine.respond(id, gateId, r.body['value'] as Json, by);
    const decided = decision === 'approve' ? 'approved' : decision === 'deny' ? 'denied' : 'answered';
    return r.c.json({ run_id: id, gate_id: gateId, decision: decided, by, ...(comment !== undefined ? { comment } : {}), ...(decision === 'respond' ? { value: r.body['value'] as Json } : {}) });
  }
}

/** Who decides: the key's name; `as` only on a server without keys (there it names the person). */
function actor(p: Principal, as: Json | undefined): string {
  if (p.anonymous) return typeof as === 'string' ? as : 'anonymous';
  if (typeof as === 'string' && as !== p.name) throw new HttpError(400, 'invalid-request', `\`as\`: on a server with keys the key's name decides (${p.name}); leave \`as\` out`);
  return p.name;
}

/** JSON with keys sorted: equal values give equal text. */
export function canonical(v: Json | undefined): string {
  return JSON.stringify(v ?? null, (_k, x: unknown) => (x !== null && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x));
}

/** The phases of a run result without the items of its for_each phases (`phase[index]`: listed by /items). */
function withoutItems<T>(phases: Record<string, T>, state: RunState): Record<string, T> {
  const out: Record<string, T> = {};
  for (const [name, p] of Object.entries(phases)) {
    const k = parseItemKey(name);
    if (k !== undefined && state.phases.get(k.parent)?.fan !== undefined) continue;
    out[name] = p;
  }
  return out;
}

/** Events read per store query while a filtered page gathers its matches. */
const EVENT_CHUNK = 1000;

/**
 * The first `want` events after `after` (of `types`, when given), read a chunk at a time: a page of a
 * long log reads what it shows, not the whole log after the cursor (a 20,000-item fan-out's 60,000
 * events were read, parsed and dropped for every page of 100, so paging through them was quadratic).
 */
async function eventsPage(store: RunStore, runId: string, after: number, want: number, types: ReadonlySet<string> | undefined): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  const chunk = types ? Math.max(want, EVENT_CHUNK) : want;
  let from = after;
  for (;;) {
    const batch = await store.events(runId, from, chunk);
    for (const e of batch) if (!types || types.has(e.type)) out.push(e);
    const last = batch[batch.length - 1];
    // fewer than asked: the log's end (a store that ignores the limit returns it all at once)
    if (!last || batch.length < chunk || out.length >= want) return out;
    from = last.seq;
  }
}

/** A 404 for a phase a run does not have: its phases by name, not a fan-out's items (20,000 of them made a 250 KB message). */
function unknownPhase(runId: string, name: string, phases: Readonly<Record<string, unknown>>): HttpError {
  const names = Object.keys(phases);
  const own = names.filter((n) => parseItemKey(n) === undefined);
  const items = names.length - own.length;
  return new HttpError(404, 'unknown-phase', `run ${runId} has no phase \`${name}\` (phases: ${own.join(', ')}${items > 0 ? `; and ${items} fan-out items, PHASE[INDEX], listed by /runs/{id}/phases/PHASE/items` : ''})`);
}
