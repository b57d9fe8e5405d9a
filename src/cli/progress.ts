/**
 * Live progress for `baton run`. On a TTY: a table of phases with state, attempts and elapsed time,
 * redrawn in place by log-update (throttled). On a pipe: one line per event.
 */
import type { createLogUpdate } from 'log-update';
import pc from 'picocolors';
import { safeText } from '../diagnostics/terminal.js';
import { cells, displayWidth } from '../diagnostics/width.js';
import { parseItemKey } from '../engine/state.js';

/** The part of an engine event the view reads. */
export interface ViewEvent {
  type: string;
  at: number;
  phase?: string | undefined;
  attempt?: number | undefined;
  data?: Record<string, unknown> | undefined;
}

interface Row {
  state: string;
  attempts: number;
  startedAt: number | undefined;
  endedAt: number | undefined;
  note: string;
}

const STATE_OF: Record<string, string> = {
  'task.ready': 'ready',
  'task.claimed': 'running',
  'task.started': 'running',
  'task.retrying': 'retrying',
  'task.completed': 'completed',
  'task.failed': 'failed',
  'task.skipped': 'skipped',
  'task.cancelled': 'cancelled',
  'task.resumed': 'running',
  'task.lease_expired': 'ready',
  // a phase or input gate names its phase: the row waits for a human
  'gate.opened': 'waiting',
};

export class ProgressView {
  private rows = new Map<string, Row>();
  private readonly c: ReturnType<typeof pc.createColors>;
  private readonly log: ReturnType<typeof createLogUpdate> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private dirty = false;
  private startedAt = Date.now();
  private title: string | undefined;
  /** Fan-out phases: each item's state and the counts by state, shown as the phase's note. */
  private fans = new Map<string, { items: number; states: Map<string, string>; counts: Map<string, number> }>();

  constructor(
    phases: readonly string[],
    private readonly out: { write: (s: string) => void; isTTY: boolean; color?: boolean; stream?: NodeJS.WriteStream; logUpdate?: typeof createLogUpdate },
    private readonly now: () => number = Date.now,
  ) {
    this.c = pc.createColors(out.color ?? out.isTTY);
    for (const p of phases) this.rows.set(p, { state: 'pending', attempts: 0, startedAt: undefined, endedAt: undefined, note: '' });
    // a terminal that reports no size (some emulated ttys) would get an empty redraw: use lines there
    if (out.isTTY && out.stream && (out.stream.rows ?? 0) > 0 && out.logUpdate) {
      this.log = out.logUpdate(out.stream, { showCursor: true });
      this.timer = setInterval(() => this.flush(), 100);
      this.timer.unref();
    }
  }

  onEvent(e: ViewEvent): void {
    if (e.type === 'run.started') {
      this.startedAt = e.at;
      // the run id, at once: what `baton resume`, `show` and `approve` need
      const title = e.data?.['reason'];
      if (typeof title === 'string') this.title = title;
    }
    const item = e.phase !== undefined && !this.rows.has(e.phase) ? parseItemKey(e.phase) : undefined;
    if (item) this.onItem(e, item.parent);
    const row = e.phase !== undefined ? this.rows.get(e.phase) : undefined;
    if (row && e.type === 'task.fanned_out') this.fans.set(e.phase!, { items: typeof e.data?.['items'] === 'number' ? e.data['items'] : 0, states: new Map(), counts: new Map() });
    if (row) {
      const override = e.data?.['state'];
      const state = typeof override === 'string' ? override : STATE_OF[e.type];
      if (state) row.state = state;
      if (e.type === 'task.claimed' || e.type === 'task.started') {
        row.attempts = Math.max(row.attempts, e.attempt ?? row.attempts + 1);
        row.startedAt ??= e.at;
      }
      if (state === 'completed' || state === 'partial' || state === 'failed' || state === 'skipped' || state === 'cancelled') row.endedAt = e.at;
      const reason = e.data?.['reason'] ?? e.data?.['error'] ?? e.data?.['code'];
      if (state === 'failed' || state === 'skipped' || state === 'retrying' || state === 'waiting' || e.type === 'task.rejected') row.note = typeof reason === 'string' ? reason : '';
    }
    if (this.log) this.dirty = true;
    else this.out.write(this.line(e) + '\n');
  }

  /** An item's event counts under its phase (`412/500 completed, 3 failed, 85 running`); an item has no row of its own. */
  private onItem(e: ViewEvent, parent: string): void {
    const fan = this.fans.get(parent);
    const row = this.rows.get(parent);
    const state = STATE_OF[e.type];
    if (!fan || !row || !state || state === 'waiting') return;
    const was = fan.states.get(e.phase!);
    if (was === state) return;
    if (was !== undefined) fan.counts.set(was, (fan.counts.get(was) ?? 1) - 1);
    fan.states.set(e.phase!, state);
    fan.counts.set(state, (fan.counts.get(state) ?? 0) + 1);
    const rest = ['failed', 'skipped', 'cancelled', 'running', 'retrying', 'ready'].filter((s) => (fan.counts.get(s) ?? 0) > 0).map((s) => `${fan.counts.get(s)} ${s}`);
    row.note = [`${fan.counts.get('completed') ?? 0}/${fan.items} completed`, ...rest].join(', ');
  }

  private line(e: ViewEvent): string {
    const t = `+${((e.at - this.startedAt) / 1000).toFixed(3)}s`;
    const parts = [this.c.dim(t.padStart(9)), e.type.padEnd(16)];
    // phase names come from the workflow file and details from agents: escaped, never sent raw to a terminal
    if (e.phase !== undefined) parts.push(this.c.bold(safeText(e.phase, 200)));
    if (e.attempt !== undefined) parts.push(this.c.dim(`attempt ${e.attempt}`));
    const d = e.data ?? {};
    const detail = d['error'] ?? d['reason'] ?? d['message'] ?? d['status'];
    if (typeof detail === 'string') parts.push(safeText(detail, 1000));
    return parts.join(' ');
  }

  render(): string {
    const c = this.c;
    const icon: Record<string, string> = {
      pending: c.dim('·'),
      ready: c.dim('○'),
      running: c.cyan('▶'),
      retrying: c.yellow('↻'),
      completed: c.green('✓'),
      partial: c.yellow('◐'),
      failed: c.red('✗'),
      skipped: c.dim('↷'),
      cancelled: c.dim('⊘'),
      waiting: c.yellow('⏸'),
    };
    // in terminal columns, not UTF-16 units: a CJK name or an emoji takes two, and one is never cut in half
    const width = Math.min(32, Math.max(...[...this.rows.keys()].map((k) => displayWidth(k.slice(0, NAME_UNITS))), 5));
    const now = this.now();
    const counts = new Map<string, number>();
    const lines: string[] = [];
    for (const [name, r] of this.rows) {
      counts.set(r.state, (counts.get(r.state) ?? 0) + 1);
      const elapsed = r.startedAt === undefined ? '' : `${(((r.endedAt ?? now) - r.startedAt) / 1000).toFixed(1)}s`;
      const attempts = r.attempts > 1 ? c.yellow(`×${r.attempts}`) : '';
      lines.push(`${icon[r.state] ?? ' '} ${fitColumns(name.slice(0, NAME_UNITS), width)} ${r.state.padEnd(10)} ${elapsed.padStart(7)} ${attempts} ${c.dim(safeText(r.note, 200))}`.trimEnd());
    }
    // a long workflow shows its active rows and a tally instead of thousands of lines
    const shown = lines.length > 40 ? lines.filter((_, i) => ['running', 'retrying', 'failed'].includes([...this.rows.values()][i]!.state)).slice(0, 30) : lines;
    const tally = [...counts].map(([s, n]) => `${n} ${s}`).join(', ');
    return [...(this.title !== undefined ? [c.bold(safeText(this.title, 300))] : []), ...shown, c.dim(`${this.rows.size} phases: ${tally}`)].join('\n');
  }

  flush(): void {
    if (this.log && this.dirty) {
      this.dirty = false;
      this.log(this.render());
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.log) {
      this.dirty = true;
      this.flush();
      this.log.done();
    }
  }
}

/** More UTF-16 units than the name column (32) can ever show: a longer name is measured and cut from these. */
const NAME_UNITS = 128;

/** `s` escaped, cut and padded to exactly `width` terminal columns, at a grapheme boundary. */
export function fitColumns(s: string, width: number): string {
  let out = '';
  let w = 0;
  for (const c of cells(s)) {
    if (w + c.width > width) break;
    out += c.text;
    w += c.width;
  }
  return out + ' '.repeat(width - w);
}
