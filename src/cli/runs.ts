/** `baton runs` and `baton show RUN`: what a store holds, without running anything. */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import pc from 'picocolors';
import { safeText } from '../diagnostics/terminal.js';
import { createEngine } from '../api/engine.js';
import { workflowState } from '../api/workflow-state.js';
import { fileRows } from '../api/artifacts.js';
import type { RunStatus } from '../engine/events.js';
import type { RunRecord, RunStore, TaskRow } from '../engine/ports.js';
import { ownerIsDeadOnThisHost } from '../engine/worker.js';
import type { GateResult } from '../engine/result.js';
import { colorsFor, useColor } from './color.js';
import { UsageError, asFlag, exitFor, openCliStore, shellQuote, storeFlag } from './durable.js';
import { RUNS_OPTIONS, SHOW_OPTIONS } from './spec.js';
import type { CliIo } from './io.js';
import { describeEvent } from './run.js';
import { warningLines } from './foreground.js';
import { itemCounts, itemRows, itemSummary } from '../api/items.js';
import { parseItemKey, type RunState } from '../engine/state.js';

const RUN_STATES: readonly RunStatus[] = ['running', 'waiting', 'completed', 'failed', 'cancelled'];

export async function runsCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({ args, options: RUNS_OPTIONS });
  let store: RunStore | undefined;
  try {
    const status = (values.status ?? []).flatMap((s) => s.split(','));
    for (const s of status) if (!RUN_STATES.includes(s as RunStatus)) throw new UsageError(`--status expects one of ${RUN_STATES.join(', ')}, got \`${s}\``);
    // an empty name matches no run (GET /runs refuses it too): a usage error, not "no runs of  in ..."
    if (values.workflow !== undefined && values.workflow.trim() === '') throw new UsageError('--workflow expects a workflow name (its info.name), got an empty one');
    const limit = values.limit === undefined ? 100 : Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit expects a positive integer, got \`${values.limit}\``);
    store = await openCliStore(values, io, 'read');
    // one more than shown: whether the list was cut (said on stderr, so stdout stays the table or the JSON)
    const found = await store.runs({ ...(status.length > 0 ? { status: status as RunStatus[] } : {}), ...(values.workflow !== undefined ? { workflow: values.workflow } : {}), limit: limit + 1 });
    const runs = found.slice(0, limit);
    const more = (): void => {
      if (found.length > limit) io.stderr(`the newest ${limit} runs${status.length > 0 ? ` (${status.join(', ')})` : ''} are listed, and there are more: --limit N lists more, --status and --workflow narrow the list\n`);
    };
    if (values.json) {
      io.stdout(JSON.stringify(runs.map((r) => ({ run_id: r.runId, workflow: r.workflowName, status: r.status, created_at: new Date(r.createdAt).toISOString(), updated_at: new Date(r.updatedAt).toISOString(), ended_at: r.endedAt === null ? null : new Date(r.endedAt).toISOString(), cost_usd: r.costUsd })), null, 2) + '\n');
      more();
      return 0;
    }
    if (runs.length === 0) {
      io.stdout(`no runs${values.workflow !== undefined ? ` of ${safeText(values.workflow, 200)}` : ''} in ${store.location}\n`);
      return 0;
    }
    const c = colorsFor(io, 'stdout');
    // names come from workflow files: escaped, never sent raw to a terminal
    const rows = runs.map((r) => [safeText(r.runId, 200), safeText(r.workflowName, 200), r.status, new Date(r.createdAt).toISOString().replace('T', ' ').slice(0, 19), r.costUsd > 0 ? `$${r.costUsd}` : '']);
    const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((row) => row[i]!.length), ['RUN', 'WORKFLOW', 'STATUS', 'CREATED'][i]!.length));
    const line = (cells: string[]): string => cells.map((x, i) => (i < 4 ? x.padEnd(widths[i]!) : x)).join('  ').trimEnd();
    io.stdout(c.bold(line(['RUN', 'WORKFLOW', 'STATUS', 'CREATED', 'COST'])) + '\n');
    for (const row of rows) io.stdout(line(row.map((x, i) => (i === 2 ? colorStatus(x, c) + ' '.repeat(Math.max(0, widths[2]! - x.length)) : x)).map((x, i) => (i === 2 ? x : x))) + '\n');
    more();
    return 0;
  } catch (e) {
    return exitFor(e, 'runs', io);
  } finally {
    await store?.close();
  }
}

function colorStatus(s: string, c: ReturnType<typeof pc.createColors>): string {
  if (s === 'completed') return c.green(s);
  if (s === 'failed' || s === 'cancelled') return c.red(s);
  if (s === 'waiting') return c.yellow(s);
  return s;
}

export async function showCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: SHOW_OPTIONS });
  let store: RunStore | undefined;
  try {
    if (positionals.length !== 1) throw new UsageError('show takes one run id (see `baton runs`)');
    store = await openCliStore(values, io, 'read');
    const engine = createEngine({ store });
    const { record, workflow, result, state, tasks } = await engine.inspect(positionals[0]!);
    if (values.state) {
      const model = await engine.model(record);
      io.stdout(JSON.stringify(workflowState(state, model, result.events, record.initialState ?? undefined), null, 2) + '\n');
      return 0;
    }
    if (values.artifacts) {
      const rows = fileRows(record.runId, result.events);
      if (values.json) io.stdout(JSON.stringify(rows, null, 2) + '\n');
      else if (rows.length === 0) io.stdout(`run ${record.runId} recorded no files (declare them: inputsFiles / outputsFiles, or sideEffects.filesRead / filesWritten)\n`);
      else for (const r of rows) io.stdout(`${safeText(r.phase, 200)}#${r.attempt}${r.item !== null && !r.phase.endsWith(`[${r.item}]`) ? `[${r.item}]` : ''}  ${r.access.padEnd(7)}  ${r.direction.padEnd(8)}  ${r.key !== null ? `${safeText(r.key, 200)}  ` : ''}${safeText(JSON.stringify(r.path))}  ${JSON.stringify(r.sha256)}  ${JSON.stringify(r.size)}\n`);
      return 0;
    }
    if ((values.offset !== undefined || values.limit !== undefined) && values.items === undefined) throw new UsageError('--offset and --limit page the items of --items PHASE');
    if (values.items !== undefined) {
      const offset = values.offset === undefined ? 0 : count(values.offset, '--offset');
      const limit = values.limit === undefined ? Infinity : count(values.limit, '--limit');
      const rows = itemRows(state, values.items, offset, limit);
      if (!rows) {
        const fans = [...state.phases].filter(([, p]) => p.fan).map(([n]) => n);
        throw new UsageError(`--items: phase \`${values.items}\` of run ${record.runId} has no items (${fans.length > 0 ? `phases with items: ${fans.join(', ')}` : 'no phase of this run has fanned out'})`);
      }
      if (values.json) io.stdout(JSON.stringify(rows, null, 2) + '\n');
      else {
        const lines = rows.map((r) => `  [${r.index}] ${r.status.padEnd(10)} attempts ${r.attempts}${r.reused_from ? `  (reused from ${safeText(r.reused_from, 200)})` : ''}${r.output ? `  ${clip(JSON.stringify(r.output))}` : ''}${r.error ? `  ${safeText(r.error.code, 200)}: ${safeText(clip(r.error.message))}` : ''}${r.skipped_detail ? `  skipped: ${safeText(r.skipped_detail)}` : ''}`);
        io.stdout(`${safeText(values.items, 200)}: ${itemSummary(itemCounts(state, values.items)!)}\n${lines.join('\n')}\n`);
      }
      return 0;
    }
    if (values.json) {
      const { events, ...rest } = result;
      const doc = {
        ...rest,
        status: record.status,
        workflow_hash: record.workflowHash,
        workflow_path: workflow?.path ?? null,
        trigger: record.trigger,
        initial_state: record.initialState,
        bindings: record.bindings,
        created_at: record.createdAt,
        updated_at: record.updatedAt,
        ...(values.events ? { events } : {}),
      };
      // a fan-out phase's items are not listed in `phases` (100,000 of them would be a 20 MB document): their
      // counts by status are under `fan_out`, and `--items PHASE [--offset N --limit N]` lists them
      const fan: Record<string, { items: number; counts: Record<string, number>; list: string }> = {};
      for (const [name, p] of state.phases) if (p.fan) fan[name] = { ...itemCounts(state, name)!, list: `baton show ${record.runId} --items ${name}` };
      if (Object.keys(fan).length > 0) {
        doc.phases = Object.fromEntries(Object.entries(doc.phases).filter(([name]) => !isItemOf(name, fan)));
        (doc as Record<string, unknown>)['fan_out'] = fan;
      }
      io.stdout(JSON.stringify(doc, null, 2) + '\n');
      return 0;
    }
    const color = useColor(io, 'stdout');
    const c = pc.createColors(color);
    const out: string[] = [];
    // names, messages and reasons come from workflow files and agents: escaped, never sent raw to a terminal
    out.push(`${c.bold(`run ${safeText(record.runId, 200)}`)}  ${colorStatus(record.status, c)}  ${safeText(record.workflowName, 200)}${workflow ? ` (${safeText(workflow.path, 500)})` : ''}`);
    out.push(`  started ${new Date(record.createdAt).toISOString()}${record.endedAt !== null ? `, ended ${new Date(record.endedAt).toISOString()}` : ''}${record.costUsd > 0 ? `, cost $${record.costUsd}` : ''}`);
    if (result.error) out.push(`  ${c.red(safeText(result.error.code, 200))}: ${safeText(result.error.message)}`);
    else if (record.status === 'cancelled') {
      // why, as `baton cancel --reason` (or the engine) gave it
      const cancelled = result.events.findLast((e) => e.type === 'run.cancelled');
      if (cancelled) out.push(`  ${c.red('cancelled')}: ${safeText(cancelled.reason)}`);
    }
    out.push('', c.bold('phases'));
    for (const [name, p] of Object.entries(result.phases)) {
      // items are counted under their phase (`--items PHASE` lists them)
      if (state.phases.get(name)?.item) continue;
      const counts = itemCounts(state, name);
      out.push(`  ${safeText(name, 200).padEnd(24)} ${colorStatus(p.status, c).padEnd(color ? 34 : 24)} attempts ${p.attempts}${p.agent ? `  agent ${safeText(p.agent, 200)}` : ''}${p.reused_from ? `  (reused from ${safeText(p.reused_from, 200)})` : ''}`);
      if (counts) out.push(`      items  ${itemSummary(counts)}  (baton show ${safeText(record.runId, 200)} --items ${safeText(name, 200)})`);
      if (p.input && Object.keys(p.input).length > 0) out.push(`      input  ${clip(JSON.stringify(p.input))}`);
      if (p.output) out.push(`      output ${clip(JSON.stringify(p.output))}`);
      if (p.error) out.push(`      ${c.red(safeText(p.error.code, 200))}: ${safeText(p.error.message)}`);
      if (p.skipped_reason) out.push(`      skipped: ${safeText(p.skipped_detail ?? p.skipped_reason)}`);
    }
    // what went wrong without failing anything (a declared file not produced, not synced, not carried): said
    // here as the run's own summary said it, not only in the events
    const warned = warningLines(result.events, record.runId, color);
    if (warned.length > 0) out.push('', c.bold('warnings'), ...warned);
    if (result.gates.length > 0) {
      out.push('', c.bold('gates'));
      for (const g of result.gates) out.push(gateLine(g, record.runId));
    }
    const next = nextSteps(record, tasks, result.gates, values.store, Date.now(), askers(state));
    if (next.length > 0) out.push('', c.bold('next'), ...next.map((l) => `  ${l}`));
    if (values.events) {
      out.push('', c.bold('events'));
      for (const e of result.events) out.push(`  ${String(e.seq).padStart(5)} ${new Date(e.at).toISOString()} ${e.type}${'phase' in e && e.phase ? ` ${safeText(e.phase, 200)}` : ''}${'gate_id' in e ? ` ${safeText(e.gate_id, 200)}` : ''} ${safeText(describeEvent(e))}`.trimEnd());
    }
    io.stdout(out.join('\n') + '\n');
    return 0;
  } catch (e) {
    return exitFor(e, 'show', io);
  } finally {
    await store?.close();
  }
}

/**
 * What a run that has not ended waits for, and what continues it: an attempt left by a process that
 * is gone (Ctrl-C, a signal, a crash), a gate to decide, or no process at all.
 */
export function nextSteps(record: RunRecord, tasks: readonly TaskRow[], gates: readonly GateResult[], store: string | undefined, now = Date.now(), asking: readonly Asker[] = []): string[] {
  if (record.status !== 'running' && record.status !== 'waiting') return [];
  const run = shellQuote(safeText(record.runId, 200));
  const flag = storeFlag({ store });
  const lines: string[] = [];
  let live = false;
  for (const t of tasks) {
    if (t.status !== 'running' || !t.leaseOwner) continue;
    const gone = ownerIsDeadOnThisHost(t.leaseOwner) || (t.leaseExpiresAt !== null && t.leaseExpiresAt < now);
    if (gone) lines.push(`${safeText(t.phase, 200)}: attempt ${t.attempt} was left by ${safeText(t.leaseOwner, 200)}, which is gone; it runs again when the run is continued`);
    else {
      live = true;
      lines.push(`${safeText(t.phase, 200)}: attempt ${t.attempt} is running in ${safeText(t.leaseOwner, 200)}${t.leaseExpiresAt !== null ? ` (lease until ${new Date(t.leaseExpiresAt).toISOString()})` : ''}`);
    }
  }
  // an attempt waiting for its answer has no lease in the task rows, but the process that asked holds it in memory:
  // while that process lives, the answer reaches it there, and another `baton resume` is not what continues it
  for (const a of asking) {
    if (ownerIsDeadOnThisHost(a.owner)) {
      lines.push(`${safeText(a.phase, 200)}: attempt ${a.attempt} asked in ${safeText(a.owner, 200)}, which is gone; once answered, it runs again as a new attempt when the run is continued`);
      continue;
    }
    live = true;
    lines.push(`${safeText(a.phase, 200)}: attempt ${a.attempt} ${a.answered ? 'was answered; it continues' : 'waits for its answer'} in ${safeText(a.owner, 200)}`);
  }
  for (const g of gates) {
    if (g.status !== 'open') continue;
    const id = safeText(g.id, 200);
    // quoted for the command: a fan-out item's gate (`input-draft[3]-1`) is a glob to a shell
    const arg = shellQuote(id);
    if (g.kind === 'input') lines.push(`gate ${id} waits for ${g.escalation ? 'a decision' : 'an answer'}: baton respond ${run} ${arg} --value ${g.escalation ? 'retry|skip|fail' : "'<JSON>'"}${flag}`);
    else lines.push(`gate ${id} waits for a decision: baton approve ${run} ${arg}${asFlag(g.approvers)}${flag} (or baton deny ${run} ${arg}${asFlag(g.approvers)}${flag})`);
  }
  // the process that started the run and drives it (`baton run` in a terminal, a server) holds no lease while
  // nothing of the run is running (a gate open, a retry's delay): it continues the run as long as it lives
  const follower = typeof record.options['followed_by'] === 'string' ? record.options['followed_by'] : undefined;
  if (!live && follower !== undefined && followerAlive(follower)) {
    live = true;
    lines.push(`the process that started it (${safeText(follower, 200)}) still drives it: it continues the run once ${gates.some((g) => g.status === 'open') ? 'the gate is decided' : 'it is due'}`);
  }
  if (!live) lines.push(`no process is working on this run: continue it with baton resume ${run}${flag} (or a baton worker that binds its agents)`);
  return lines;
}

/** Whether a process id of this host (`host:pid:...`) names a process that runs; false for another host's (it cannot be asked). */
function followerAlive(owner: string): boolean {
  const [host, pid] = owner.split(':');
  return host === hostname() && Number(pid) > 0 && !ownerIsDeadOnThisHost(owner);
}

/** An attempt held in memory by the process that asked its question: waiting for the answer, or answered and about to continue there. */
export interface Asker {
  phase: string;
  attempt: number;
  owner: string;
  answered: boolean;
}

/** The attempts of a run that wait for an answer in the process that asked (or continue there once answered, within its grace). */
function askers(state: RunState, now = Date.now()): Asker[] {
  const out: Asker[] = [];
  for (const [phase, p] of state.phases) {
    if (p.status === 'suspended_awaiting_input' && p.leaseOwner !== undefined) out.push({ phase, attempt: p.attempts, owner: p.leaseOwner, answered: false });
    else if (p.status === 'ready' && p.resumable?.owner !== undefined && p.resumable.until > now) out.push({ phase, attempt: p.resumable.attempt, owner: p.resumable.owner, answered: true });
  }
  return out;
}

function gateLine(g: GateResult, runId: string): string {
  const parts = [`  ${safeText(g.id, 200).padEnd(24)} ${g.kind.padEnd(6)} ${g.status.padEnd(9)}`];
  if (g.phase) parts.push(`phase ${safeText(g.phase, 200)}`);
  if (g.agent && g.kind === 'access') parts.push(`agent ${safeText(g.agent, 200)}`);
  parts.push(`since ${new Date(g.opened_at).toISOString()}`);
  if (g.expires_at !== undefined) parts.push(`expires ${new Date(g.expires_at).toISOString()}`);
  if (g.approvers.length > 0) parts.push(`approvers ${safeText(g.approvers.join(','), 500)}`);
  if (g.decided_by) parts.push(`by ${safeText(g.decided_by, 200)}${g.auto ? ' (automatic)' : ''}`);
  if (g.escalated) parts.push('escalated');
  let s = parts.join('  ') + `\n      ${safeText(g.reason)}`;
  if (g.status === 'open' && g.escalation) s += `\n      answer with: baton respond ${shellQuote(safeText(runId, 200))} ${shellQuote(safeText(g.id, 200))} --value retry|skip|fail`;
  else if (g.status === 'open' && g.choices) s += `\n      choices ${clip(JSON.stringify(g.choices))}`;
  if (g.value !== undefined) s += `\n      answer ${clip(JSON.stringify(g.value))}`;
  if (g.comment) s += `\n      comment ${safeText(g.comment)}`;
  return s;
}

export function clip(s: string): string {
  return s.length > 200 ? `${s.slice(0, 197)}...` : s;
}

/** Whether a phase key is an item (`phase[index]`) of one of these fan-out phases. */
function isItemOf(name: string, fans: Record<string, unknown>): boolean {
  const k = parseItemKey(name);
  return k !== undefined && Object.prototype.hasOwnProperty.call(fans, k.parent);
}

/** A non-negative whole number given to a flag. */
function count(v: string, flag: string): number {
  if (!/^\d{1,9}$/.test(v)) throw new UsageError(`${flag} takes a whole number (got ${JSON.stringify(v)})`);
  return Number(v);
}
