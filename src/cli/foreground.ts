/**
 * A run driven in the foreground (`baton run`, `resume`, `rerun`): progress, gates, signals and a
 * reader that goes away.
 *
 * What the run *is* belongs to the store, not to this process. So nothing that happens to the process
 * changes it:
 * - SIGINT or SIGTERM (Ctrl-C, `kill PID`, a supervisor, `timeout`): this process stops working on the
 *   run and leaves it in the store as it is (running or waiting); `baton resume RUN` or any worker
 *   continues it. Running attempts may finish for a few seconds (their outputs are kept); the rest are
 *   handed back (engine.stop) and run again there. The process ends within GRACE_S seconds, at once
 *   when the stop is done (endAfterSignal); a second signal ends it at once.
 * - A reader that went away (`| head`): output is dropped; the run goes on to its end, unless it has
 *   to wait for a human, in which case it is left waiting in the store.
 * - With `--store memory` nothing outside this process can reach the run: a gate nobody here can
 *   decide ends it at once (cancelled, with the reason), and a signal cancels it (it would be lost).
 *   A gate that decides itself at its timeout (`on_timeout: proceed` or `abort`) is waited for.
 */
import { resolve } from 'node:path';
import pc from 'picocolors';
import type { Engine } from '../api/engine.js';
import { BatonError } from '../core/errors.js';
import { safeText } from '../diagnostics/terminal.js';
import type { RunEvent } from '../engine/events.js';
import { parseItemKey, runStatusOf, type RunState } from '../engine/state.js';
import type { RunResult } from '../engine/result.js';
import { useColor } from './color.js';
import { storeFlag } from './durable.js';
import { SIGNAL_EXIT, type CliIo, type Interruption } from './io.js';
import { printJson, saveResult } from './output.js';
import type { ProgressView } from './progress.js';
import { startWatchdog } from './watchdog.js';

/**
 * Seconds within which Baton has exited after Ctrl-C or SIGTERM, whatever its agents do (docs/durability.md).
 * Of these, running attempts may finish for STOP_GRACE_MS; the rest is for handing back the others,
 * closing the store and exiting. Past EXIT_AT_MS the process exits from JavaScript; the watchdog kills
 * it at KILL_AT_MS (an event loop that never turns: an agent in a synchronous loop).
 */
export const GRACE_S = 5;
export const STOP_GRACE_MS = 3_500;
export const EXIT_AT_MS = 4_500;
const KILL_AT_MS = 4_700;

export interface ForegroundValues {
  json?: boolean | undefined;
  output?: string | undefined;
  store?: string | undefined;
}

type Stop = { kind: 'signal'; signal: keyof typeof SIGNAL_EXIT } | { kind: 'reader' } | { kind: 'unanswerable'; gate: string; gateKind: string };


export class Foreground {
  private state: RunState | undefined;
  private stop: Stop | undefined;
  private onStop: (() => void) | undefined;
  private readerGone = false;
  /** The stop was a signal: the process ends as soon as the command has closed its store (endAfterSignal). */
  signalled = false;
  /** The run's warnings, for the summary: the drive keeps no event log unless the whole result is printed or saved. */
  private readonly warnings: Extract<RunEvent, { type: 'task.warning' }>[] = [];

  constructor(
    private readonly io: CliIo,
    private readonly values: ForegroundValues,
    /** The store keeps runs in this process only (`--store memory`). */
    readonly inMemory: boolean,
  ) {}

  /** Every event of the run (the engine's onEvent), after the progress view and the gate notice. */
  onEvent(e: RunEvent, state: RunState): void {
    this.state = state;
    if (e.type === 'task.warning') this.warnings.push(e);
    if (this.stop) return;
    if (e.type === 'gate.opened' && this.inMemory) {
      const g = state.gates.get(e.gate_id);
      if (!g || g.status !== 'open') return;
      // a gate that decides itself at its timeout (on_timeout: proceed or abort) needs nobody: the run waits for it here
      if (g.expiresAt !== undefined && (g.onTimeout === 'proceed' || g.onTimeout === 'abort')) {
        const s = Math.max(0, (g.expiresAt - e.at) / 1000);
        this.io.stderr(`gate ${safeText(g.id, 200)}: nothing outside this process can decide it (--store memory); it ${g.onTimeout === 'proceed' ? 'proceeds' : 'aborts the run'} at its timeout, in ${s < 10 ? s.toFixed(1) : Math.round(s)} s\n`);
        return;
      }
      this.request({ kind: 'unanswerable', gate: g.id, gateKind: g.kind });
      return;
    }
    if (e.type === 'gate.expired' && e.action === 'escalate' && this.inMemory) {
      // on_timeout: escalate leaves the gate open for a human, whom --store memory cannot reach
      const g = state.gates.get(e.gate_id);
      if (g && g.status === 'open') this.request({ kind: 'unanswerable', gate: g.id, gateKind: g.kind });
      return;
    }
    if (this.readerGone && runStatusOf(state) === 'waiting') this.request({ kind: 'reader' });
  }

  private request(s: Stop): void {
    if (this.stop) return;
    this.stop = s;
    this.onStop?.();
  }

  /** Drives the run with signal handling, then prints or writes the result. Returns the exit status. */
  async finish(engine: Engine, runId: string, view: ProgressView | undefined): Promise<number> {
    const { io, values } = this;
    const flag = storeFlag(values);
    const hint = this.inMemory ? 'The run was in memory (--store memory) and is lost.' : `The run stays in the store: baton resume ${runId}${flag}`;
    // only in a real process (tests inject io without exit)
    const watchdog = io.onInterrupt && io.exit ? startWatchdog(KILL_AT_MS, hint) : undefined;
    const ctl = new AbortController();
    let signals = 0;
    this.onStop = () => {
      const s = this.stop!;
      if (this.inMemory) {
        // nothing can continue the run elsewhere: end it, saying why
        ctl.abort(new Error(s.kind === 'unanswerable' ? `gate ${s.gate} needs a decision that nothing outside this process can give (--store memory)` : s.kind === 'signal' ? `interrupted (${s.signal})` : 'the reader went away'));
      } else {
        // running attempts may finish (their outputs are kept) until shortly before the process must end; the rest are handed back
        void engine.stop(STOP_GRACE_MS).catch(() => engine.close());
      }
    };
    const off = io.onInterrupt?.((why: Interruption) => {
      if (why === 'reader-gone') {
        this.readerGone = true;
        if (this.state && runStatusOf(this.state) === 'waiting') this.request({ kind: 'reader' });
        return;
      }
      signals++;
      if (signals > 1) {
        io.exit?.(SIGNAL_EXIT[why]);
        return;
      }
      io.stderr(
        this.inMemory
          ? `\n${why}: cancelling run ${runId} (--store memory keeps it in this process only; agents get ${GRACE_S} s to stop; a second ${why === 'SIGINT' ? 'Ctrl-C' : 'signal'} exits at once)\n`
          : `\n${why}: stopping; run ${runId} stays in ${safeText(engine.store.location, 500)} as it is (running attempts may finish for ${STOP_GRACE_MS / 1000} s, the rest are handed back; a second ${why === 'SIGINT' ? 'Ctrl-C' : 'signal'} exits at once). Continue it with: baton resume ${runId}${flag}\n`,
      );
      this.signalled = true;
      this.request({ kind: 'signal', signal: why });
      // nothing holds the process past the bound: not an agent that ignores its signal, nor a store that does not answer
      setTimeout(() => {
        io.stderr(`baton: stopped ${EXIT_AT_MS / 1000} s after the signal with the stop unfinished. ${hint}\n`);
        io.exit?.(SIGNAL_EXIT[why]);
      }, EXIT_AT_MS).unref();
    });
    if (this.stop) this.onStop(); // a gate opened as the run started
    let result: RunResult | undefined;
    try {
      // the whole log stays in the store, not in memory, unless the whole result is printed or saved
      result = await engine.drive(runId, ctl.signal, { keepEvents: values.json === true || values.output !== undefined });
    } catch (e) {
      // the store stayed away past the engine's storeRetryMs: the run stays there as last committed, to be continued
      if (!this.stop && !this.inMemory && e instanceof BatonError && (e.code === 'store-unreachable' || e.code === 'store-locked'))
        throw new BatonError(e.code, `${e.message}; run ${runId} stays in ${safeText(engine.store.location, 500)} as last committed: continue it with baton resume ${runId}${flag} once the store answers`, { cause: e });
      // a stop closes the engine under the drive: what the run is now is read back from the store
      if (!this.stop || this.inMemory) throw e;
    } finally {
      view?.close();
      off?.();
      watchdog?.stop();
    }
    const stop = this.stop;
    if (stop?.kind === 'unanswerable') {
      io.stderr(`baton run: ${stop.gateKind === 'input' ? 'input' : 'a decision'} is needed at gate \`${safeText(stop.gate, 200)}\`, but with --store memory the run lives in this process only and nothing else can answer it; the run was cancelled. Use a durable store (the default .baton/baton.db, or --store FILE)${stop.gateKind === 'input' ? '' : ', or --auto-approve'}\n`);
    }
    if (result === undefined) {
      // left in the store, resumable: say so, and give --json readers the run as it stands
      let now: RunResult | undefined;
      let unread = '';
      try {
        now = (await engine.inspect(runId)).result;
      } catch (e) {
        // a store away as the process stops: the run is still there, only its state cannot be shown now
        if (!(e instanceof BatonError && (e.code === 'store-unreachable' || e.code === 'store-locked'))) throw e;
        unread = safeText(e.message, 300);
      }
      if (stop?.kind !== 'reader') {
        if (now && values.json) await printJson(now, io);
        io.stderr(`run ${runId} left ${now ? `${now.status} in ${safeText(engine.store.location, 500)}: ${describeCounts(now)}` : `in ${safeText(engine.store.location, 500)} (its state cannot be read now: ${unread})`}; continue it with: baton resume ${runId}${flag}\n`);
      }
      return stop?.kind === 'signal' ? SIGNAL_EXIT[stop.signal] : 1;
    }
    if (stop?.kind === 'signal' && this.inMemory) io.stderr(`run ${runId} cancelled by ${stop.signal}\n`);
    // streamed: a result of hundreds of megabytes is never one string; an unwritable file never loses it
    const saved = values.output ? await saveResult(result, resolve(io.cwd, values.output), values.output, io) : true;
    if (values.json) await printJson(result, io);
    else io.stdout(summary(result, useColor(io, 'stdout'), this.warnings));
    if (!saved) return 2;
    if (stop?.kind === 'unanswerable') return 2;
    if (stop?.kind === 'signal') return SIGNAL_EXIT[stop.signal];
    return result.status === 'completed' ? 0 : 1;
  }
}

/**
 * A command stopped by a signal ends as soon as it has closed its store, with its status: what an agent
 * that ignored its abort left behind (a timer, a socket) must not hold the process up to the bound.
 */
export function endAfterSignal(fg: Foreground | undefined, io: CliIo, code: number): number {
  if (fg?.signalled) io.exit?.(code);
  return code;
}

function describeCounts(r: RunResult): string {
  const counts = new Map<string, number>();
  for (const [name, p] of Object.entries(r.phases)) if (!parseItemKey(name)) counts.set(p.status, (counts.get(p.status) ?? 0) + 1);
  return [...counts].map(([s, n]) => `${n} ${s}`).join(', ');
}

/** Failed items of one fan-out phase (and its items' warnings of one code) named in the summary; the rest are counted. */
const FAILED_ITEMS_LISTED = 5;

/**
 * The run's task.warning events (a declared file not produced, one not synced or not carried, ...), one
 * line each. As failed items: a few warnings of one code per fan-out phase (2,000 items whose files a rerun
 * could not carry would print 2,000 lines), the rest counted. Used by the summary of a run and `baton show`.
 */
export function warningLines(events: readonly RunEvent[], runId: string, color: boolean): string[] {
  const c = pc.createColors(color);
  const lines: string[] = [];
  const warned = new Map<string, { phase: string; code: string; n: number }>();
  for (const e of events) {
    if (e.type !== 'task.warning') continue;
    const parent = parseItemKey(e.phase)?.parent;
    if (parent !== undefined) {
      const k = `${parent}\u0000${e.code}`;
      const w = warned.get(k) ?? { phase: parent, code: e.code, n: 0 };
      warned.set(k, w);
      if (++w.n > FAILED_ITEMS_LISTED) continue;
    }
    lines.push(`  ${c.yellow('!')} ${safeText(e.phase, 200)}${e.attempt > 0 ? ` (attempt ${e.attempt})` : ''}: ${safeText(e.code, 200)}: ${safeText(e.message)}`);
  }
  for (const w of warned.values()) if (w.n > FAILED_ITEMS_LISTED) lines.push(`  … ${(w.n - FAILED_ITEMS_LISTED).toLocaleString('en-US')} more ${safeText(w.code, 200)} warnings of items of ${safeText(w.phase, 200)}: baton show ${safeText(runId, 200)} --events`);
  return lines;
}

/** The run's last words; `warnings`: its task.warning events when `r.events` was not kept. */
export function summary(r: RunResult, color: boolean, warnings: readonly RunEvent[] = r.events): string {
  const c = pc.createColors(color);
  // phases are counted as phases: a fan-out's items (`phase[index]`) are counted under their phase
  const counts = new Map<string, number>();
  const items = new Map<string, Map<string, number>>();
  // a fan-out phase's settled items may be counted only (a result without its event log): its counts
  // are the truth, the items listed one by one add the statuses counts do not tell (partial, unsettled)
  const whole = new Map<string, Map<string, number>>();
  for (const [name, p] of Object.entries(r.phases)) {
    const item = parseItemKey(name);
    if (!item) {
      counts.set(p.status, (counts.get(p.status) ?? 0) + 1);
      continue;
    }
    let m = whole.get(item.parent);
    if (!m) whole.set(item.parent, (m = new Map<string, number>()));
    m.set(p.status, (m.get(p.status) ?? 0) + 1);
  }
  for (const [name, p] of Object.entries(r.phases)) {
    if (parseItemKey(name)) continue;
    const listed = whole.get(name);
    if (!p.items) {
      if (listed) items.set(name, listed);
      continue;
    }
    const partial = listed?.get('partial') ?? 0;
    const m = new Map<string, number>();
    const put = (s: string, n: number): void => {
      if (n > 0) m.set(s, n);
    };
    put('completed', p.items.completed - partial);
    put('partial', partial);
    put('failed', p.items.failed);
    put('skipped', p.items.skipped);
    put('cancelled', p.items.cancelled);
    for (const [s, n] of listed ?? []) if (!m.has(s) && !['completed', 'partial', 'failed', 'skipped', 'cancelled'].includes(s)) m.set(s, n);
    // items never opened (a fan-out failed past tolerated_failures, or cancelled, before they ran) are in
    // no count: said as `baton show` says them, so the numbers add up to the items there are
    const unopened = p.items.count - [...m.values()].reduce((a, b) => a + b, 0);
    if (unopened > 0) m.set('pending', (m.get('pending') ?? 0) + unopened);
    if (m.size > 0) items.set(name, m);
  }
  const status = r.status === 'completed' ? c.green(c.bold('completed')) : c.red(c.bold(r.status));
  const lines = [`\nrun ${r.runId} ${status}${r.duration_ms !== null ? ` in ${(r.duration_ms / 1000).toFixed(2)} s` : ''}: ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ')}${r.cost_usd > 0 ? `; cost $${r.cost_usd}` : ''}`];
  for (const [phase, m] of items) lines.push(`  ${safeText(phase, 200)}: ${[...m].map(([st, n]) => `${n.toLocaleString('en-US')} ${st}`).join(', ')} item${[...m.values()].reduce((a, b) => a + b, 0) === 1 ? '' : 's'}`);
  // names from the file and messages from agents are escaped: a terminal must not interpret them
  const listed = new Map<string, number>();
  for (const [name, p] of Object.entries(r.phases)) {
    // at most a few failed items per fan-out phase: `baton show RUN --items PHASE` lists them all
    const item = parseItemKey(name);
    if (item && p.status === 'failed') {
      const k = (listed.get(item.parent) ?? 0) + 1;
      listed.set(item.parent, k);
      if (k > FAILED_ITEMS_LISTED) continue;
    }
    if (p.status === 'failed' && p.error) lines.push(`  ${c.red('✗')} ${safeText(name, 200)}: ${safeText(p.error.code, 200)}: ${safeText(p.error.message)}`);
    else if (p.status === 'partial') lines.push(`  ${c.yellow('◐')} ${safeText(name, 200)}: partial result, accepted by its agent's contract`);
  }
  for (const [phase, k] of listed) if (k > FAILED_ITEMS_LISTED) lines.push(`  … ${(k - FAILED_ITEMS_LISTED).toLocaleString('en-US')} more failed items of ${safeText(phase, 200)}: baton show ${r.runId} --items ${safeText(phase, 200)}`);
  lines.push(...warningLines(r.events.length > 0 ? r.events : warnings, r.runId, color));
  if (r.error && r.status !== 'completed') lines.push(`  ${safeText(r.error.code, 200)}: ${safeText(r.error.message)}`);
  return lines.join('\n') + '\n';
}
