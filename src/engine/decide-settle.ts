/**
 * Starting a run and settling its phases: a phase whose dependencies all finished is skipped, failed,
 * held at its gate or made ready; a terminal event queues its dependents and may open the run gate;
 * the run ends when nothing is open, or is stopped.
 */
import { cloneJson, isPlainObject, ownGet, type Json, type JsonObject } from '../core/json.js';
import { resolveBinding, unresolvable } from '../workflow/runtime.js';
import { itemStorePath } from '../workflow/steps.js';
import { filesOfPhase, itemFileCollisions } from '../workflow/files.js';
import type { ForEachModel, PhaseModel, ToleratedFailures } from '../workflow/model.js';
import type { FailureRecord, NewEvent, RunEvent } from './events.js';
import { itemKey, isTerminal, parseItemKey, taskIdFor, type FanState, type RunState } from './state.js';
import type { CarriedFile, Fact } from './decide-types.js';
import { phaseModelOf } from './plan.js';
import { emit, initialStateOf, model, openGate, outputsView, taskId, type Ctx } from './decide-context.js';

// ---- start and settling ---------------------------------------------------------------------

export function start(ctx: Ctx, f: Extract<Fact, { kind: 'start' }>): void {
  const { plan, state } = ctx;
  emit(ctx, {
    type: 'run.started',
    run_id: state.runId,
    workflow: plan.model.info.name,
    ...(f.workflowHash !== undefined ? { workflow_hash: f.workflowHash } : {}),
    trigger: state.trigger,
    phases: plan.model.phases.map((p) => p.name),
    ...(f.deadlineAt !== undefined ? { deadline_at: f.deadlineAt } : {}),
    ...(f.autoApprove ? { auto_approve: true } : {}),
    ...(f.rerunOf ? { rerun_of: { run_id: f.rerunOf.run_id, from: f.rerunOf.from } } : {}),
  });
  if (f.rerunOf) {
    // outputs of phases not downstream of `from`, in topological order (their ancestors are reused too)
    for (const name of plan.model.order) {
      const r = f.rerunOf.outputs.get(name);
      if (!r) continue;
      const pm = model(ctx, name);
      const extra = pm.outputs ? Object.keys(r.output).filter((k) => !pm.outputs!.some((d) => d.key === k)) : [];
      carriedFiles(ctx, name, r.attempt, f.rerunOf.files?.get(name));
      emit(ctx, { type: 'task.completed', phase: name, task_id: taskId(ctx, name), attempt: r.attempt, output: cloneJson(r.output), extra_keys: extra, cost_usd: 0, reused_from: f.rerunOf.run_id });
      checkRunGate(ctx, name);
    }
    // `--failed-items`: the completed items of the fan-out phase run again, recorded before it fans out
    for (const [key, r] of f.rerunOf.outputs) {
      if (!parseItemKey(key)) continue;
      carriedFiles(ctx, key, r.attempt, f.rerunOf.files?.get(key));
      emit(ctx, { type: 'task.completed', phase: key, task_id: taskIdFor(state.runId, key), attempt: r.attempt, output: cloneJson(r.output), extra_keys: [], cost_usd: 0, reused_from: f.rerunOf.run_id });
    }
  }
  checkRunGate(ctx, undefined);
  for (const p of plan.model.phases) if (state.graph!.remaining.get(p.name) === 0 && state.phases.get(p.name)!.status === 'pending') ctx.unblocked.push(p.name);
}

/**
 * The output files a reused completion brings (engine.rerun copied them to this run's paths first): recorded
 * as synced before it, as an attempt's are; one that could not be brought over is a warning.
 */
function carriedFiles(ctx: Ctx, key: string, attempt: number, files: readonly CarriedFile[] | undefined): void {
  if (!files) return;
  const task = parseItemKey(key) ? taskIdFor(ctx.state.runId, key) : taskId(ctx, key);
  for (const c of files) {
    const item = c.item !== undefined ? { item: c.item } : {};
    if ('failed' in c) emit(ctx, { type: 'task.warning', phase: key, task_id: task, attempt, code: 'FileNotCarried', message: `output file \`${c.key}\` of the run this one reruns was not brought to ${c.path}: ${c.failed}`, details: { key: c.key, path: c.path, ...item } });
    else emit(ctx, { type: 'task.file', phase: key, task_id: task, attempt, direction: 'synced', key: c.key, path: c.path, sha256: c.sha256, size: c.size, ...item });
  }
}

export function drain(ctx: Ctx): void {
  for (let k = 0; k < ctx.unblocked.length; k++) {
    if (ctx.state.status !== 'running') break;
    settle(ctx, ctx.unblocked[k]!);
  }
  ctx.unblocked.length = 0;
}

/** All dependencies of a phase finished: skip it, fail it, hold it at its gate, or make it ready. */
function settle(ctx: Ctx, name: string): void {
  const { state } = ctx;
  const ps = state.phases.get(name)!;
  if (ps.status !== 'pending') return;
  const p = model(ctx, name);
  const task_id = ps.taskId;
  for (const d of p.dependsOn) {
    const s = state.phases.get(d)!.status;
    if (s === 'failed' || s === 'cancelled') {
      terminal(ctx, { type: 'task.failed', phase: name, task_id, attempts: 0, failure: { code: 'UpstreamFailed', message: `upstream phase '${d}' ${s}`, retryable: false, details: { upstream: d } } });
      return;
    }
  }
  if (p.inputs) {
    for (const b of p.inputs) {
      if (b.source.kind === 'phase' && state.phases.get(b.source.phase)!.status === 'skipped') {
        terminal(ctx, { type: 'task.skipped', phase: name, task_id, reason: 'upstream_skipped', detail: `input '${b.name}' (${b.ref}) comes from skipped phase '${b.source.phase}'` });
        return;
      }
    }
  }
  // the array a `for_each` runs over is an input too: from a skipped phase there is nothing to fan out
  const fe = p.forEach?.source;
  if (fe?.kind === 'phase' && state.phases.get(fe.phase)!.status === 'skipped') {
    terminal(ctx, { type: 'task.skipped', phase: name, task_id, reason: 'upstream_skipped', detail: `for_each (${p.forEach!.ref}) comes from skipped phase '${fe.phase}'` });
    return;
  }
  // a skip_when that reads `$item` / `$index` skips single items (fill), never the whole phase
  if (p.skipWhen && !p.forEach?.itemSkip) {
    const r = evaluate(ctx, p.skipWhen, p);
    if (!r.ok) {
      terminal(ctx, { type: 'task.failed', phase: name, task_id, attempts: 0, failure: { code: 'SkipConditionError', message: `skip_when \`${p.skipWhen.source}\` ${r.message}`, retryable: false } });
      return;
    }
    if (r.value === true) {
      terminal(ctx, { type: 'task.skipped', phase: name, task_id, reason: 'skip_when', detail: `skip_when \`${p.skipWhen.source}\` is true` });
      return;
    }
  }
  const gate = ctx.plan.phaseGates.get(name);
  if (gate) {
    let reason = `phase \`${name}\` requires approval before it starts`;
    let required = true;
    if (gate.when) {
      const r = evaluate(ctx, gate.when, p);
      if (!r.ok) reason = `approval required: the condition \`${gate.when.source}\` ${r.message}`;
      else if (r.value === true) reason = `approval required: \`${gate.when.source}\` is true`;
      else required = false;
    }
    if (required) {
      openGate(ctx, `approve-${name}`, 'phase', gate, reason, { phase: name, task_id });
      // an approved fan-out phase is ready: its first claim fans it out (decide-claims.ts)
      return;
    }
  }
  if (p.forEach) fanOut(ctx, name);
  else emit(ctx, { type: 'task.ready', phase: name, task_id, seq: 0, at: 0 });
}

export function evaluate(ctx: Ctx, expr: NonNullable<PhaseModel['skipWhen']>, p: PhaseModel | undefined, item?: { _item: Json; _index: number }): { ok: true; value: boolean } | { ok: false; message: string } {
  const scope: Record<string, unknown> = { trigger: ctx.state.trigger, initial_state: p ? initialStateOf(ctx, p) : (ctx.env.initialState ?? {}), ...item };
  // `phases.<name>.status`: how each finished phase ended (`completed`, `partial`, `skipped`, `failed`)
  if (expr.names.includes('phases')) scope['phases'] = phaseStatuses(ctx.state);
  for (const n of expr.names) {
    if (item && (n === '_item' || n === '_index')) continue;
    // `trigger` and `initial_state` are the payloads (`$trigger.x` reads as `trigger.x`), even beside a phase
    // of that name (read as `phases.trigger.output`), as the compiler checks them
    if (n === 'trigger' || n === 'initial_state') continue;
    const out = ctx.state.phases.get(n)?.output;
    if (out !== undefined) scope[n] = out;
  }
  let v: unknown;
  try {
    v = expr.evaluate(scope);
  } catch (e) {
    return { ok: false, message: `could not be evaluated: ${(e as Error).message}${missingKeyHint(ctx, expr.names, (e as Error).message)}${noOutputHint(ctx, expr.names, scope)}` };
  }
  if (typeof v !== 'boolean') return { ok: false, message: `gave ${JSON.stringify(v) ?? typeof v}, not a boolean` };
  return { ok: true, value: v };
}

/**
 * CEL's `No such key: k` names no phase: when `k` is an optional output that an upstream phase the
 * condition reads did not return, say so, and how CEL tests for it (`has(phase.k)`).
 */
function missingKeyHint(ctx: Ctx, names: readonly string[], message: string): string {
  const key = /^No such key: (\S+)/.exec(message)?.[1];
  if (key === undefined) return '';
  for (const n of names) {
    const decl = phaseModelOf(ctx.plan, n)?.outputs?.find((o) => o.key === key);
    const out = ctx.state.phases.get(n)?.output;
    if (decl && !decl.required && out !== undefined && !Object.hasOwn(out, key)) return ` (\`${n}.${key}\` is an optional output that \`${n}\` did not return: test it first, \`has(${n}.${key})\`)`;
  }
  return '';
}

/**
 * A condition that reads a phase with no outputs (skipped, or failed under `tolerated_failures`...) met an
 * unbound name: cel-js says `Unknown variable: a`, which reads as a typo. Say how the phase ended, and how
 * to test it (`phases.a.status`).
 */
function noOutputHint(ctx: Ctx, names: readonly string[], scope: Record<string, unknown>): string {
  for (const n of names) {
    if (Object.hasOwn(scope, n) || phaseModelOf(ctx.plan, n) === undefined) continue;
    const status = ctx.state.phases.get(n)?.status;
    if (status === undefined) continue;
    return ` (phase \`${n}\` is ${status} and has no outputs: test \`phases.${n}.status\` first)`;
  }
  return '';
}

/**
 * `phases.<name>`: how each finished phase ended, and its outputs when it has some (`output`): the one way
 * to read a phase whose name CEL cannot spell (`phases['draft-sections'].output.n`: `draft-sections.n`
 * reads as `draft - sections.n`).
 */
function phaseStatuses(state: RunState): JsonObject {
  const out: JsonObject = {};
  for (const [name, p] of state.phases) {
    if (p.status === 'completed' || p.status === 'failed' || p.status === 'skipped' || p.status === 'cancelled') {
      const entry: JsonObject = { status: p.status === 'completed' && p.partial ? 'partial' : p.status, attempts: p.attempts };
      if (p.output !== undefined) entry['output'] = p.output;
      out[name] = entry;
    }
  }
  return out;
}

/** Records a terminal event and queues dependents whose dependencies all finished (§3.4). */
export function terminal(ctx: Ctx, e: (NewEvent | RunEvent) & { type: 'task.completed' | 'task.failed' | 'task.skipped' | 'task.cancelled' }): void {
  emit(ctx, e);
  if (ctx.state.status !== 'running') return;
  if (ctx.state.phases.get(e.phase)?.item) {
    itemSettled(ctx, e.phase);
    return;
  }
  const g = ctx.state.graph!;
  for (const d of g.dependents.get(e.phase) ?? []) {
    if (g.remaining.get(d) !== 0) continue;
    // a list made with its first phase (a chain unblocks one a completion: an empty list's first push made room for 17)
    if (ctx.unblocked.length === 0) ctx.unblocked = [d];
    else ctx.unblocked.push(d);
  }
  checkRunGate(ctx, e.phase);
}

export function maybeEnd(ctx: Ctx): void {
  const { state } = ctx;
  if (state.status !== 'running' || state.open > 0) return;
  const f = state.firstFailure;
  if (f) emit(ctx, { type: 'run.failed', failure: { code: f.failure.code, message: `phase '${f.phase}' failed: ${f.failure.message}`, retryable: false, details: { phase: f.phase } } });
  else emit(ctx, { type: 'run.completed' });
}

/** Stops the run (budget, timeout, cancellation, a denied run gate): every open task is cancelled. */
export function stop(ctx: Ctx, how: { kind: 'failed'; failure: FailureRecord } | { kind: 'cancelled'; reason: string }): void {
  const { state } = ctx;
  if (state.status !== 'running') return;
  const reason = how.kind === 'failed' ? how.failure.code : how.reason;
  for (const [name, p] of state.phases) {
    if (p.status === 'completed' || p.status === 'failed' || p.status === 'skipped' || p.status === 'cancelled') continue;
    emit(ctx, { type: 'task.cancelled', phase: name, task_id: p.taskId, reason });
  }
  if (how.kind === 'failed') emit(ctx, { type: 'run.failed', failure: how.failure });
  else emit(ctx, { type: 'run.cancelled', reason: how.reason });
}

/** The run gate is evaluated once, when the last phase its condition reads settles (or at start). */
export function checkRunGate(ctx: Ctx, settled: string | undefined): void {
  const g = ctx.plan.runGate;
  if (!g || ctx.state.gates.has('approval')) return;
  if (settled === undefined ? g.phases.length > 0 : !g.phases.includes(settled)) return;
  let unavailable: string | undefined;
  for (const n of g.phases) {
    const s = ctx.state.phases.get(n)!.status;
    if (s === 'pending' || s === 'ready' || s === 'running' || s === 'awaiting_approval' || s === 'suspended_awaiting_input') return;
    if (s !== 'completed' && g.direct.includes(n)) unavailable ??= `phase \`${n}\` ${s}`;
  }
  let reason: string;
  if (!g.when) reason = 'governance.require_approval: the run requires approval';
  else if (unavailable) reason = `approval required (fail-closed): \`${g.when.source}\` cannot be evaluated because ${unavailable}`;
  else {
    const r = evaluate(ctx, g.when, undefined);
    if (!r.ok) reason = `approval required (fail-closed): \`${g.when.source}\` ${r.message}`;
    else if (r.value) reason = `approval required: \`${g.when.source}\` is true`;
    else return;
  }
  openGate(ctx, 'approval', 'run', g, reason, {});
}

// ---- fan-out (`for_each`) ---------------------------------------------------------------------

/*
 * Fan-out (`for_each`): a phase whose dependencies finished resolves its array and records how many
 * items it has (`task.fanned_out`); each item is then an ordinary task keyed `phase[index]`, claimed,
 * leased, retried and timed out like any other. Items are opened in index order while fewer than the
 * phase's window are unsettled (`max_parallel`, else FAN_WINDOW), so the ready set and each commit stay
 * small whatever the array's length. When every item has settled, the phase completes with the items'
 * outputs gathered in item order, one array per output key (a failed or skipped item's slot is null),
 * or fails when more items failed than `tolerated_failures` allows (the unsettled ones are cancelled).
 *
 * Item outputs live in their own events and task rows while the fan runs; only the completion of the
 * phase holds the gathered arrays.
 */

/** Items unsettled at once when a phase sets no `max_parallel`: workers' free slots bound what runs. */
export const FAN_WINDOW = 1024;

/**
 * The array a fan-out phase runs over, or why it cannot be had: a reference that does not resolve (a
 * trigger or upstream key that is absent) is `unresolved`, as it is for an input (UnresolvableInputError);
 * a value that is not an array is not.
 */
export function fanArray(ctx: Ctx, pm: PhaseModel, fe: ForEachModel): { ok: true; items: readonly Json[] } | { ok: false; message: string; unresolved?: string } {
  const run = ctx.env.initialState;
  const initial = run ? { ...run, ...pm.initialState } : pm.initialState;
  const src = fe.source;
  // the array itself: the `for_each` reference read as an input binding (`$item` sources cannot occur here)
  const r = resolveBinding({ name: 'for_each', ref: fe.ref, source: src } as Parameters<typeof resolveBinding>[0], outputsView(ctx.state), ctx.state.trigger, initial);
  if (!r.ok) return { ok: false, message: `for_each \`${fe.ref}\`: ${r.reason}`, unresolved: r.reason };
  if (!Array.isArray(r.value)) return { ok: false, message: `for_each \`${fe.ref}\` is ${r.value === null ? 'null' : typeof r.value}, not an array` };
  return { ok: true, items: r.value };
}

/** The phase's dependencies finished (and its gate, if any, let it go): record its items and open the first. */
export function fanOut(ctx: Ctx, name: string): void {
  const pm = model(ctx, name);
  const p = ctx.state.phases.get(name)!;
  const arr = fanArray(ctx, pm, pm.forEach!);
  if (!arr.ok) {
    if (arr.unresolved !== undefined) {
      // the same reference as an input would be rejected at its claim: the same error, the same events
      const err = unresolvable(pm, p.taskId, [{ ref: pm.forEach!.ref, reason: `for_each \`${pm.forEach!.ref}\`: ${arr.unresolved}` }]);
      const payload = err.toJSON();
      emit(ctx, { type: 'task.claim_rejected', phase: name, task_id: p.taskId, error: payload });
      terminal(ctx, { type: 'task.failed', phase: name, task_id: p.taskId, attempts: 0, failure: { code: err.error, error: err.error, message: err.message, retryable: false, details: payload } });
      return;
    }
    terminal(ctx, { type: 'task.failed', phase: name, task_id: p.taskId, attempts: 0, failure: { code: 'ForEachNotArray', message: arr.message, retryable: false, details: { for_each: pm.forEach!.ref } } });
    return;
  }
  emit(ctx, { type: 'task.fanned_out', phase: name, task_id: p.taskId, items: arr.items.length });
  storeCollisions(ctx, name, p.taskId, arr.items);
  fileCollisions(ctx, pm, p.taskId, arr.items);
  fill(ctx, name, arr.items);
}

/**
 * Step form: items whose `{$item...}` values name one place of the `artifacts` tree (two sections both
 * called `intro`) would each overwrite the other there. Known as the phase fans out, before any item
 * runs: a warning per place names the items; the tree keeps the last of them (by index) that
 * completes, and every item's output stays in the phase's gathered arrays.
 */
function storeCollisions(ctx: Ctx, name: string, taskId: string, items: readonly Json[]): void {
  for (const t of ctx.plan.model.artifacts) {
    if (t.phase !== name || t.path.every((s) => typeof s === 'string')) continue;
    const at = new Map<string, number[]>();
    items.forEach((el, i) => {
      const segs = itemStorePath(t, el);
      if (!segs) return;
      const k = JSON.stringify(segs);
      const list = at.get(k);
      if (list) list.push(i);
      else at.set(k, [i]);
    });
    for (const [k, indexes] of at) {
      if (indexes.length < 2) continue;
      const path = `artifacts.${(JSON.parse(k) as string[]).join('.')}`;
      const shown = indexes.length > 10 ? `${indexes.slice(0, 10).join(', ')} and ${indexes.length - 10} more` : indexes.join(', ');
      emit(ctx, {
        type: 'task.warning',
        phase: name,
        task_id: taskId,
        attempt: 0,
        code: 'StoreCollision',
        message: `items ${shown} ${indexes.length === 2 ? 'both' : 'all'} store \`${t.key}\` at ${path} (\`$store: ${t.text}\`): the artifacts tree keeps only the last of them that completes; every item's output stays in the phase's gathered \`${t.key}\``,
        details: { target: t.text, key: t.key, path, items: indexes.slice(0, 100) },
      });
    }
  }
}

/**
 * Output files that two items would write at one workspace path (`out/<item.name>.md` with two items
 * named `intro`): one would overwrite the other's (at once or one after the other). Known as the phase fans out, before any item runs: a
 * `task.warning FileCollision` per path names the items; the run goes on (the path keeps the last copy).
 */
function fileCollisions(ctx: Ctx, pm: PhaseModel, taskId: string, items: readonly Json[]): void {
  const files = filesOfPhase(ctx.plan.model, ctx.plan.contracts, pm.name, pm.assign);
  if (!files || files.outputs.length === 0) return;
  for (const c of itemFileCollisions(files.outputs, items)) {
    const shown = c.items.length > 10 ? `${c.items.slice(0, 10).join(', ')} and ${c.items.length - 10} more` : c.items.join(', ');
    emit(ctx, {
      type: 'task.warning',
      phase: pm.name,
      task_id: taskId,
      attempt: 0,
      code: 'FileCollision',
      message: `items ${shown} ${c.items.length === 2 ? 'both' : 'all'} write output file \`${c.key}\` to ${c.path} (\`${c.declared}\`): the path keeps only the last one written; add \`<index>\` to the path to keep them apart`,
      details: { key: c.key, path: c.path, declared: c.declared, items: c.items.slice(0, 100) },
    });
  }
}

/** Opens items while the window allows: a ready task each, or a skipped one when `skip_when` says so. */
function fill(ctx: Ctx, name: string, items?: readonly Json[]): void {
  const { state } = ctx;
  const p = state.phases.get(name)!;
  const fan = p.fan!;
  const pm = model(ctx, name);
  const fe = pm.forEach!;
  const window = fe.maxParallel ?? FAN_WINDOW;
  let arr = items;
  while (fan.next < fan.count && fan.active < window && state.status === 'running' && p.status === 'running') {
    const index = fan.next;
    const key = itemKey(name, index);
    const task_id = taskIdFor(state.runId, key);
    if (fe.itemSkip && pm.skipWhen) {
      if (arr === undefined) {
        const r = fanArray(ctx, pm, fe);
        // the upstream outputs were recorded once and never change: the array resolved at the fan-out still does
        arr = r.ok ? r.items : [];
      }
      const r = evaluate(ctx, pm.skipWhen, pm, { _item: arr[index] ?? null, _index: index });
      if (!r.ok) {
        // no recursion through itemSettled: a long run of such items is a loop here, not a deep stack
        emit(ctx, { type: 'task.failed', phase: key, task_id, attempts: 0, failure: { code: 'SkipConditionError', message: `skip_when \`${pm.skipWhen.source}\` ${r.message} for item ${index}`, retryable: false } });
        const allowed = toleratedOf(fe.toleratedFailures, fan.count);
        if (fan.failed > allowed) {
          failFan(ctx, name, fan, allowed);
          return;
        }
        continue;
      }
      if (r.value) {
        emit(ctx, { type: 'task.skipped', phase: key, task_id, reason: 'skip_when', detail: `skip_when \`${pm.skipWhen.source}\` is true for item ${index}` });
        continue;
      }
    }
    emit(ctx, { type: 'task.ready', phase: key, task_id });
  }
  if (p.status === 'running' && fan.completed + fan.failed + fan.skipped + fan.cancelled >= fan.count) finish(ctx, name);
}

/** How many failed items a fan of `count` tolerates. */
export function toleratedOf(t: ToleratedFailures, count: number): number {
  return 'count' in t ? t.count : Math.floor((t.percent * count) / 100 + 1e-9);
}

/**
 * An item settled (its terminal event was just emitted): fail the phase when too many failed, else
 * open the next items, or complete the phase when none is left.
 */
export function itemSettled(ctx: Ctx, key: string): void {
  const { state } = ctx;
  const item = parseItemKey(key);
  if (!item || state.status !== 'running') return;
  const name = item.parent;
  const p = state.phases.get(name)!;
  if (p.status !== 'running' || !p.fan) return;
  const fan = p.fan;
  const fe = model(ctx, name).forEach!;
  const allowed = toleratedOf(fe.toleratedFailures, fan.count);
  if (fan.failed > allowed) {
    failFan(ctx, name, fan, allowed);
    return;
  }
  fill(ctx, name);
}

function failFan(ctx: Ctx, name: string, fan: FanState, allowed: number): void {
  const { state } = ctx;
  const p = state.phases.get(name)!;
  let first: { index: number; code: string; message: string } | undefined;
  for (let i = 0; i < fan.next; i++) {
    const q = state.phases.get(itemKey(name, i));
    if (!q) continue;
    if (q.status === 'failed' && first === undefined && q.error) first = { index: i, code: q.error.code, message: q.error.message };
    if (!isTerminal(q.status)) emit(ctx, { type: 'task.cancelled', phase: itemKey(name, i), task_id: q.taskId, reason: 'FanOutFailed' });
  }
  const tol = model(ctx, name).forEach!.toleratedFailures;
  const limit = 'count' in tol ? `${tol.count}` : `${tol.percent}% of ${fan.count} = ${allowed}`;
  const message = `${fan.failed} of ${fan.count} items failed, more than tolerated_failures allows (${limit})${first ? `; item ${first.index}: ${first.code}: ${first.message.slice(0, 300)}` : ''}`;
  terminal(ctx, {
    type: 'task.failed',
    phase: name,
    task_id: p.taskId,
    attempts: 0,
    failure: { code: 'FanOutFailed', message, retryable: false, details: { items: fan.count, failed: fan.failed, tolerated: allowed, ...(first ? { first_failed_item: first.index, first_failure: first.code } : {}) } },
  });
}

/** Every item settled: the phase completes with each output key gathered into an array in item order. */
function finish(ctx: Ctx, name: string): void {
  const { state } = ctx;
  const p = state.phases.get(name)!;
  const fan = p.fan!;
  const pm = model(ctx, name);
  const keys: string[] = pm.outputs ? pm.outputs.map((d) => d.key) : [];
  const declared = pm.outputs !== undefined;
  const seen = new Set(keys);
  const outs: (JsonObject | undefined)[] = new Array<JsonObject | undefined>(fan.count);
  let cost = fan.doneCost;
  for (let i = 0; i < fan.count; i++) {
    // an item folded out of the state (compactItems) left its output, or null when it was skipped
    const d = fan.done?.[i];
    const q = d === undefined ? state.phases.get(itemKey(name, i)) : undefined;
    cost += q?.costUsd ?? 0;
    const o = d !== undefined ? (d ?? undefined) : q?.status === 'completed' ? q.output : undefined;
    outs[i] = o;
    // without declared outputs, every key any item returned is gathered (first seen, first)
    if (!declared && o) {
      for (const k of Object.keys(o)) {
        if (seen.has(k)) continue;
        seen.add(k);
        keys.push(k);
      }
    }
  }
  const output: JsonObject = {};
  for (const k of keys) {
    const col: Json[] = new Array<Json>(fan.count);
    for (let i = 0; i < fan.count; i++) {
      const o = outs[i];
      // own keys only: an item that did not return `__proto__` would give Object.prototype for it
      const v = o !== undefined && isPlainObject(o) ? (ownGet(o, k) as Json | undefined) : undefined;
      col[i] = v === undefined ? null : v;
    }
    // `output.__proto__ = col` would set the prototype (the phase's output would stop being a plain
    // object) and drop the key: JSON's "__proto__", which an agent without declared outputs may return, is a key
    if (k === '__proto__') Object.defineProperty(output, k, { value: col, enumerable: true, writable: true, configurable: true });
    else output[k] = col;
  }
  terminal(ctx, { type: 'task.completed', phase: name, task_id: p.taskId, attempt: 0, output, extra_keys: [], cost_usd: Math.round(cost * 1e9) / 1e9 });
}
