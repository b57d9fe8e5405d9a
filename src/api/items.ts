/** `baton show RUN`: per-status item counts of fan-out phases, and `--items PHASE`, the items of one. */
import type { FailureRecord, TaskStatus } from '../engine/events.js';
import type { RunState } from '../engine/state.js';
import type { JsonObject } from '../core/json.js';

export interface ItemRow {
  index: number;
  /** `pending`: not opened yet (the phase opens items as slots free). */
  status: TaskStatus | 'partial';
  attempts: number;
  output: JsonObject | null;
  error: FailureRecord | null;
  skipped_detail?: string;
  reused_from?: string;
}

/** Items by status (statuses with none left out), for a phase that has fanned out; undefined otherwise. */
export function itemCounts(state: RunState, phase: string): { items: number; counts: Record<string, number> } | undefined {
  const fan = state.phases.get(phase)?.fan;
  if (!fan) return undefined;
  const counts: Record<string, number> = {};
  let seen = 0;
  for (const p of state.phases.values()) {
    if (p.item?.parent !== phase || p.item.index >= fan.count) continue;
    seen++;
    const s = p.status === 'completed' && p.partial ? 'partial' : p.status;
    counts[s] = (counts[s] ?? 0) + 1;
  }
  if (fan.count > seen) counts['pending'] = fan.count - seen;
  return { items: fan.count, counts };
}

const ORDER = ['completed', 'partial', 'failed', 'skipped', 'cancelled', 'running', 'suspended_awaiting_input', 'ready', 'pending'];

/** `412/500 completed, 3 failed, 85 running`. */
export function itemSummary(c: { items: number; counts: Record<string, number> }): string {
  const done = c.counts['completed'] ?? 0;
  const rest = ORDER.filter((s) => s !== 'completed' && (c.counts[s] ?? 0) > 0).map((s) => `${c.counts[s]} ${s}`);
  return [`${done}/${c.items} completed`, ...rest].join(', ');
}

/** The items of a fan-out phase in index order, from `offset`, at most `limit` (those not opened yet as `pending`). */
export function itemRows(state: RunState, phase: string, offset = 0, limit = Infinity): ItemRow[] | undefined {
  const fan = state.phases.get(phase)?.fan;
  if (!fan) return undefined;
  const rows: ItemRow[] = [];
  const end = Math.min(fan.count, offset + limit);
  for (let i = offset; i < end; i++) {
    const p = state.phases.get(`${phase}[${i}]`);
    if (!p) {
      rows.push({ index: i, status: 'pending', attempts: 0, output: null, error: null });
      continue;
    }
    rows.push({
      index: i,
      status: p.status === 'completed' && p.partial ? 'partial' : p.status,
      attempts: p.attempts,
      output: p.output ?? null,
      error: p.error ?? null,
      ...(p.skippedDetail !== undefined ? { skipped_detail: p.skippedDetail } : {}),
      ...(p.reusedFrom !== undefined ? { reused_from: p.reusedFrom } : {}),
    });
  }
  return rows;
}
