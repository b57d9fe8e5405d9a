/**
 * Subprocess agents: an agent is any program that reads a JSON request and prints a JSON output.
 * `once` spawns a process per attempt; `serve` keeps one process per agent that answers requests
 * over JSON lines, so attempts do not pay process start-up (40-90 ms for Node). The protocol is
 * documented in docs/agents.md.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { processStartTime } from '../core/process.js';
import { stderrGist } from '../core/stderr-gist.js';
import { isPlainObject, type Json } from '../core/json.js';
import { jsonDepthExceeded, MAX_JSON_DEPTH } from '../core/json-depth.js';
import { AgentError, type AgentContext, type ClosableAgent } from '../engine/agent.js';
import { scratchRootOf } from '../engine/files.js';

export interface SubprocessOptions {
  /** A string runs through the shell (`sh -c`); an array is argv (no shell). */
  command: string | string[];
  /** `once` (default): a process per attempt. `serve`: one long-lived process answering JSON lines. */
  mode?: 'once' | 'serve' | undefined;
  cwd?: string | undefined;
  /** Merged over `process.env`. */
  env?: Record<string, string> | undefined;
  /** Names the agent in messages (default: the attempt's agent id). */
  agentId?: string | undefined;
  /** How long a process gets to exit (after stdin closes or SIGTERM) before the next step: SIGTERM, then SIGKILL. Default 2000. */
  killGraceMs?: number | undefined;
}

/** stderr kept in failure details: the tail, where the error usually is. */
const STDERR_TAIL_BYTES = 64 * 1024;
/** A once-mode process printing more than this is stopped (a runaway, not an output). */
const MAX_STDOUT_BYTES = 32 * 1024 * 1024;
/** How much of a bad stdout is kept in failure details. */
const STDOUT_EXCERPT_CHARS = 4096;
/** Non-protocol lines of a serve process kept for messages. */
const NOISE_LINES = 20;
const NOISE_LINE_CHARS = 1000;
const DEFAULT_GRACE_MS = 2000;
/** After a serve process exits, how long its stdout may still deliver answers before pending requests fail. */
const EXIT_DRAIN_MS = 200;

interface Launch {
  readonly file: string;
  readonly args: readonly string[];
  readonly shell: boolean;
  readonly cwd: string | undefined;
  readonly env: NodeJS.ProcessEnv;
  readonly agentId: string | undefined;
  readonly graceMs: number;
  /** Once mode in an attempt's scratch root (AIP-16 files): the directory it would have run in otherwise. */
  readonly movedFrom?: string | undefined;
}

/** Builds a subprocess agent. Nothing is spawned until the first attempt. */
export function subprocessAgent(opts: SubprocessOptions): ClosableAgent {
  const { command } = opts;
  if (typeof command === 'string' ? command.trim() === '' : command.length === 0 || !command[0]) {
    throw new TypeError('subprocessAgent: command must be a non-empty string or argv list');
  }
  const launch: Launch = {
    file: typeof command === 'string' ? command : command[0]!,
    args: typeof command === 'string' ? [] : command.slice(1),
    shell: typeof command === 'string',
    cwd: opts.cwd,
    env: opts.env ? { ...process.env, ...opts.env } : process.env,
    agentId: opts.agentId,
    graceMs: opts.killGraceMs ?? DEFAULT_GRACE_MS,
  };
  return opts.mode === 'serve' ? serveAgent(launch) : onceAgent(launch);
}

/** POSIX: each agent process leads its own process group, so Baton can end everything it started. */
const GROUPS = process.platform !== 'win32';

/** The once-mode checkpoint channel: a pipe on this fd, one JSON value per line (docs/agents.md). */
export const CHECKPOINT_FD = 3;
/** A checkpoint line longer than this is dropped (and said so in a log line). */
const MAX_CHECKPOINT_LINE = 4 * 1024 * 1024;

/**
 * Once mode: a pipe on this fd that Baton never writes to and keeps open while it runs: a read
 * reaches end-of-file when Baton is gone (killed, crashed), so the agent can stop instead of running
 * beside its successor (docs/agents.md).
 */
export const ALIVE_FD = 4;

/**
 * Agent processes whose group may still be alive. Each leads its own group (GROUPS), so neither a
 * terminal's Ctrl-C or hang-up nor Baton's own end reaches it: when this process exits before an
 * agent was ended (a second Ctrl-C, the bound on a stop, `process.exit` in a host program), every
 * group still here gets SIGKILL, synchronously in the 'exit' event, so none outlives Baton. Process-wide
 * because process exit is: an entry leaves once its group got SIGKILL or was found gone.
 */
const live = new Set<ChildProcess>();
let exitHook = false;

function killLiveGroups(): void {
  for (const child of live) killGroup(child, 'SIGKILL');
}

function start(l: Launch, checkpoints = false): ChildProcess {
  if (!exitHook) {
    exitHook = true;
    process.on('exit', killLiveGroups);
  }
  const child = spawn(l.file, l.args, {
    stdio: checkpoints ? ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
    shell: l.shell,
    env: l.env,
    windowsHide: true,
    detached: GROUPS,
    ...(l.cwd !== undefined ? { cwd: l.cwd } : {}),
  });
  if (child.pid !== undefined) live.add(child);
  return child;
}

/**
 * Signals the agent's whole process group: a string command runs as `sh -c CMD`, and killing only
 * the shell would leave CMD (and anything it started) running. Safe after the leader exited: the
 * group lives on while any member does. False when nothing was left to signal.
 */
function killGroup(child: ChildProcess, sig: NodeJS.Signals): boolean {
  const pid = child.pid;
  if (pid === undefined) return false;
  if (GROUPS) {
    try {
      process.kill(-pid, sig);
      if (sig === 'SIGKILL') live.delete(child);
      return true;
    } catch {
      // ESRCH: the group is gone
      live.delete(child);
    }
  }
  const sent = child.exitCode === null && child.signalCode === null ? child.kill(sig) : false;
  if (!sent || sig === 'SIGKILL') live.delete(child);
  return sent;
}

/**
 * The attempt's process group, recorded with the attempt (`task.agent_event` kind `process`): a
 * worker that takes the task over on this host ends that group before it starts the next attempt,
 * so no orphan runs beside its successor. The process's start time guards against a reused pid.
 */
/** This process's start time, read once (a serve agent records it with every attempt). */
let selfStart: { at: string | undefined } | undefined;

function recordProcess(child: ChildProcess, ctx: AgentContext, shared = false): void {
  const pid = child.pid;
  if (pid === undefined || !GROUPS) return;
  const started = processStartTime(pid);
  // a serve process answers every attempt of its Baton: ended by a takeover only once that Baton is gone
  const owner = shared ? (selfStart ??= { at: processStartTime(process.pid) }).at : undefined;
  const ownedBy = shared ? { owner_pid: process.pid, ...(owner !== undefined ? { owner_start: owner } : {}) } : {};
  ctx.record('process', { pid, pgid: pid, host: hostname(), ...(started !== undefined ? { start_time: started } : {}), ...ownedBy });
}

/** After an attempt settled: whatever the agent left behind in its group gets SIGTERM, then SIGKILL. */
function reapGroup(child: ChildProcess, graceMs: number): void {
  if (!killGroup(child, 'SIGTERM')) return;
  const t = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs);
  t.unref();
}

/** Parses an agent's JSON output text, refusing nesting deeper than MAX_JSON_DEPTH before it is built. */
function parseOutput(text: string): { ok: true; value: unknown } | { ok: false; tooDeep: boolean } {
  if (jsonDepthExceeded(text) >= 0) return { ok: false, tooDeep: true };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, tooDeep: false };
  }
}

function tooDeepError(name: string, text: string, stderr?: string): AgentError {
  return new AgentError('SubprocessOutputTooDeep', `${name} printed JSON nested deeper than ${MAX_JSON_DEPTH} levels (the limit)`, {
    limit: MAX_JSON_DEPTH,
    stdout: text.slice(0, STDOUT_EXCERPT_CHARS),
    ...(stderr !== undefined ? { stderr } : {}),
  });
}

function requestOf(ctx: AgentContext, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...extra,
    input: ctx.input,
    phase: ctx.phase,
    task_id: ctx.taskId,
    run_id: ctx.runId,
    attempt: ctx.attempt,
    agent: ctx.agent,
    initial_state: ctx.initialState,
    // a retry after a checkpointed attempt (an in-process or defineAgent wrapper saved it)
    ...(ctx.lastCheckpoint !== undefined ? { last_checkpoint: ctx.lastCheckpoint } : {}),
  };
}

function nameOf(l: Launch, ctx: AgentContext): string {
  return `agent '${l.agentId ?? ctx.agent}'`;
}

function commandText(l: Launch): string {
  return [l.file, ...l.args].join(' ');
}

function spawnError(name: string, l: Launch, err: unknown): AgentError {
  const e = err as NodeJS.ErrnoException;
  const why =
    e.code === 'ENOENT'
      ? l.cwd !== undefined && !existsSync(l.cwd)
        ? `the working directory ${l.cwd} does not exist`
        : `command not found (or the interpreter its #! line names)${!l.shell && l.file.includes('/') && !l.file.startsWith('/') ? movedWords(l, 127, '') : ''}`
      : e.code === 'EACCES'
        ? 'permission denied (is the file executable? chmod +x it, or run it through its interpreter)'
        : e.message;
  return new AgentError('SubprocessSpawn', `${name}: cannot start '${commandText(l)}': ${why}`, { command: commandText(l), ...(e.code ? { errno: e.code } : {}) }, false);
}

function reasonOf(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  return r instanceof Error ? r.message : String(r);
}

function abortedError(name: string, signal: AbortSignal, details: Record<string, unknown> = {}): AgentError {
  const why = reasonOf(signal);
  return new AgentError('Aborted', `${name}: the attempt was aborted (${why})`, { ...details, reason: why });
}

/** `: what stderr says`, or nothing: the line naming the error (`Error: Cannot find module ...`), not Node's closing `Node.js v20`. */
function stderrWords(text: string): string {
  const gist = stderrGist(text);
  return gist ? `: ${gist}` : '';
}

/**
 * A once-mode process of a phase with files runs in the attempt's scratch root, where a relative path in
 * its command (`python3 agent.py`) is not: when its failure says so (its stderr names a path in the root,
 * or the shell found no such command, 126 / 127), the message says where it ran and where it did not.
 */
function movedWords(l: Launch, code: number | null, stderr: string): string {
  if (l.movedFrom === undefined || l.cwd === undefined || l.movedFrom === l.cwd) return '';
  if (!stderr.includes(l.cwd) && code !== 126 && code !== 127) return '';
  return ` (a phase with files runs it in the attempt's scratch root, not in ${l.movedFrom}: name the program by an absolute path)`;
}

function exitText(code: number | null, signal: NodeJS.Signals | null): string {
  return code !== null ? `exited with code ${code}` : `was killed by ${signal ?? 'a signal'}`;
}

/** Keeps the last `limit` bytes written to it. */
class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.chunks.length > 1 && this.size - this.chunks[0]!.length >= this.limit) {
      this.size -= this.chunks.shift()!.length;
    }
  }

  toString(): string {
    const all = Buffer.concat(this.chunks);
    return (all.length > this.limit ? all.subarray(all.length - this.limit) : all).toString('utf8');
  }
}

// ---------------------------------------------------------------------------------------------
// once: a process per attempt

function onceAgent(l: Launch): ClosableAgent {
  let closed = false;
  /** The attempts in flight, so close() can end their processes. */
  const running = new Set<Running>();
  return {
    handler: (ctx) => {
      if (closed) return Promise.reject(closedError(nameOf(l, ctx)));
      // declared files (AIP-16): the process works in the attempt's scratch root, where they were staged
      const root = scratchRootOf(ctx);
      return runOnce(root !== undefined ? { ...l, cwd: root, movedFrom: l.cwd ?? process.cwd() } : l, ctx, running);
    },
    async close() {
      closed = true;
      const all = [...running];
      for (const r of all) r.stop();
      await Promise.all(all.map((r) => r.settled));
    },
  };
}

interface Running {
  stop(): void;
  readonly settled: Promise<void>;
}

function closedError(name: string, details: Record<string, unknown> = {}): AgentError {
  return new AgentError('SubprocessClosed', `${name}: the subprocess agent is closed`, details, false);
}

function runOnce(l: Launch, ctx: AgentContext, running: Set<Running>): Promise<unknown> {
  const name = nameOf(l, ctx);
  const { signal } = ctx;
  if (signal.aborted) return Promise.reject(abortedError(name, signal));
  return new Promise<unknown>((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = start(l, true);
    } catch (e) {
      reject(spawnError(name, l, e));
      return;
    }
    readCheckpoints(child, ctx, name);
    // the end of Baton's side of the alive pipe is never written; its errors (the agent closed it) do not matter
    child.stdio[ALIVE_FD]?.on('error', () => undefined);
    recordProcess(child, ctx);
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    const stderr = new TailBuffer(STDERR_TAIL_BYTES);
    // Set when Baton ends the process itself; the attempt then fails for that reason once it exits.
    let stopping: ((sig: NodeJS.Signals | null) => AgentError) | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let exited = false;
    let settled = false;
    let markSettled!: () => void;
    const entry: Running = {
      stop: () => terminate((sig) => closedError(name, { signal: sig, stderr: stderr.toString() })),
      settled: new Promise<void>((r) => (markSettled = r)),
    };

    const finish = (settle: () => void): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      running.delete(entry);
      clearTimeout(killTimer);
      clearTimeout(drainTimer);
      // Stopped by Baton, or drained after exit: a grandchild may still hold the pipes; drop them so they cannot hold the event loop.
      if (stopping || exited) for (const s of [child.stdin, child.stdout, child.stderr, child.stdio[CHECKPOINT_FD], child.stdio[ALIVE_FD]]) s?.destroy();
      reapGroup(child, l.graceMs); // nothing the attempt started outlives it
      settle();
      markSettled();
    };
    const terminate = (why: (sig: NodeJS.Signals | null) => AgentError): void => {
      if (stopping || settled) return;
      stopping = why;
      // Already exited, only stdio still open (a grandchild holds it): fail now, there is nothing to wait for.
      if (child.exitCode !== null || child.signalCode !== null) {
        finish(() => reject(why(child.signalCode)));
        return;
      }
      killGroup(child, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(child, 'SIGKILL'), l.graceMs);
      killTimer.unref();
    };
    const onAbort = (): void => {
      // the engine settles an aborted attempt at once with its own reason (`Timeout`, a cancellation), not with
      // the Aborted error below: what the process said on stderr (why it hangs) is recorded here, or it is lost
      const said = stderr.toString();
      if (said !== '') ctx.record('stderr', { stderr: said, reason: reasonOf(signal) });
      terminate((sig) => abortedError(name, signal, { signal: sig, stderr: stderr.toString() }));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    running.add(entry);

    child.stdin!.on('error', () => undefined); // EPIPE when the process exits without reading: its exit status tells what happened
    child.stdout!.on('data', (chunk: Buffer) => {
      if (stopping) return;
      stdoutBytes += chunk.length;
      if (stdoutBytes > MAX_STDOUT_BYTES) {
        terminate((sig) => new AgentError('SubprocessBadOutput', `${name} printed more than ${MAX_STDOUT_BYTES} bytes on stdout`, { signal: sig, stdout: Buffer.concat(stdout).toString('utf8').slice(0, STDOUT_EXCERPT_CHARS), stderr: stderr.toString() }));
        return;
      }
      stdout.push(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', (err) => {
      if (child.pid === undefined) finish(() => reject(spawnError(name, l, err)));
    });
    const settleExited = (code: number | null, sig: NodeJS.Signals | null): void => {
      finish(() => {
        const err = stderr.toString();
        if (code !== 0) {
          reject(new AgentError('SubprocessExit', `${name} ${exitText(code, sig)}${movedWords(l, code, err)}${stderrWords(err)}`, { exit_code: code, signal: sig, stderr: err, ...(l.movedFrom !== undefined ? { cwd: l.cwd } : {}) }));
          return;
        }
        const text = Buffer.concat(stdout).toString('utf8').trim();
        // a process that prints nothing returned nothing (RFC-0024 §9: "any dict (or nothing)"): the
        // completion check accepts it when the phase declares no required output, else MissingOutputError
        if (text === '') {
          resolve(undefined);
          return;
        }
        const parsed = parseOutput(text);
        if (parsed.ok) resolve(parsed.value);
        else if (parsed.tooDeep) reject(tooDeepError(name, text, err));
        else {
          reject(new AgentError('SubprocessBadOutput', `${name} printed something other than one JSON value on stdout`, { stdout: text.slice(0, STDOUT_EXCERPT_CHARS), stderr: err }));
        }
      });
    };
    child.on('exit', (code, sig) => {
      const why = stopping;
      if (why) {
        finish(() => reject(why(sig)));
        return;
      }
      // stdout normally closes with the process. A grandchild still holding it must not hold the attempt:
      // it is killed, which closes the pipe, so 'close' still comes after the last byte was read (settling
      // here at once could cut an output the event loop had not read yet). A holder outside the group
      // (a daemon that left it) is given up on after the grace period.
      drainTimer = setTimeout(() => {
        killGroup(child, 'SIGKILL');
        drainTimer = setTimeout(() => {
          exited = true;
          settleExited(code, sig);
        }, l.graceMs);
        drainTimer.unref();
      }, EXIT_DRAIN_MS);
      drainTimer.unref();
    });
    child.on('close', (code: number | null, sig: NodeJS.Signals | null) => settleExited(code, sig));
    child.stdin!.end(`${JSON.stringify(requestOf(ctx, { checkpoint_fd: CHECKPOINT_FD }))}\n`);
  });
}

/**
 * Lines the process writes to fd 3 are checkpoints (`ctx.checkpoint`), saved in order while it runs:
 * a later attempt of the task gets the last one as `last_checkpoint`, even when this process is killed
 * by a timeout. A line that is not JSON (or too long or too deep) is dropped with a log line.
 */
function readCheckpoints(child: ChildProcess, ctx: AgentContext, name: string): void {
  const pipe = child.stdio[CHECKPOINT_FD];
  if (!pipe || !('on' in pipe)) return;
  let buf = '';
  let dropping = false;
  const line = (text: string): void => {
    const t = text.trim();
    if (t === '') return;
    const parsed = parseOutput(t);
    if (!parsed.ok) {
      ctx.log(`${name}: a checkpoint line on fd ${CHECKPOINT_FD} is not ${parsed.tooDeep ? `JSON within ${MAX_JSON_DEPTH} levels` : 'JSON'}; dropped`);
      return;
    }
    void ctx.checkpoint(parsed.value as Json).catch(() => undefined);
  };
  (pipe as NodeJS.ReadableStream).setEncoding('utf8');
  pipe.on('error', () => undefined);
  pipe.on('data', (chunk: string) => {
    let from = 0;
    for (let nl = chunk.indexOf('\n'); nl >= 0; nl = chunk.indexOf('\n', from)) {
      if (!dropping) line(buf + chunk.slice(from, nl));
      buf = '';
      dropping = false;
      from = nl + 1;
    }
    if (dropping) return;
    buf += chunk.slice(from);
    if (buf.length > MAX_CHECKPOINT_LINE) {
      ctx.log(`${name}: a checkpoint line on fd ${CHECKPOINT_FD} is longer than ${MAX_CHECKPOINT_LINE} characters; dropped`);
      buf = '';
      dropping = true;
    }
  });
  pipe.on('end', () => {
    if (!dropping && buf !== '') line(buf);
    buf = '';
  });
}

// ---------------------------------------------------------------------------------------------
// serve: one long-lived process per agent, JSON lines, many requests in flight

interface Pending {
  resolve(value: unknown): void;
  reject(err: AgentError): void;
  /** A `{"id", "checkpoint"}` line before the answer: progress to save (ctx.checkpoint). */
  checkpoint?(value: unknown): void;
}

interface Refable {
  ref?(): void;
  unref?(): void;
}

/**
 * One serve process. Requests are matched to answers by id, so any number may be in flight and
 * answers may come in any order. The process keeps the event loop alive only while requests are
 * pending (or it is closing): an idle agent nobody closed does not hold Node open.
 */
class ServeProcess {
  readonly child: ChildProcess;
  /** False from exit on: new requests go to a fresh process. */
  alive = true;
  /** Resolves once the process has ended and every pending request has been settled. */
  readonly done: Promise<void>;
  private readonly pending = new Map<string, Pending>();
  private readonly stderr = new TailBuffer(STDERR_TAIL_BYTES);
  private readonly noise: string[] = [];
  private partial = '';
  private closing = false;
  private finished = false;
  private overflow = false;
  private markDone!: () => void;
  private timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly l: Launch,
    private readonly name: string,
  ) {
    this.done = new Promise<void>((r) => (this.markDone = r));
    this.child = start(l); // may throw: the caller maps it
    const child = this.child;
    child.stdin!.on('error', () => undefined); // EPIPE after the process died: its exit rejects what is pending
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => this.onStdout(chunk));
    // A process that closes its stdout and lives on can never answer: what is in flight would wait for
    // good. Its exit normally follows the end of its stdout at once (then the exit says why); one that
    // has not exited within EXIT_DRAIN_MS is ended, and what it held fails as if it had exited.
    child.stdout!.once('end', () => {
      // a last answer without its newline still counts
      const last = this.partial;
      this.partial = '';
      if (last.trim() !== '' && !this.finished) this.onLine(last);
      if (!this.alive || this.finished) return;
      const t = setTimeout(() => {
        if (!this.alive || this.finished) return;
        this.alive = false;
        const err = this.stderr.toString();
        this.finish(
          new AgentError('SubprocessExit', `${name} (serve process ${child.pid ?? '?'}) closed its stdout and kept running: no answer could come, so it was stopped${stderrWords(err)}`, {
            exit_code: null,
            signal: null,
            stdout_closed: true,
            stderr: err,
            ...(this.noise.length > 0 ? { stdout_noise: this.noise.join('\n') } : {}),
          }),
        );
      }, EXIT_DRAIN_MS);
      t.unref();
      this.timers.push(t);
    });
    child.stderr!.on('data', (chunk: Buffer) => this.stderr.push(chunk));
    child.on('error', (err) => {
      if (child.pid === undefined) {
        this.alive = false;
        this.finish(spawnError(name, l, err));
      }
    });
    child.on('exit', (code, sig) => {
      this.alive = false;
      // stdout may still hold answers; 'close' comes once it is drained, unless a grandchild keeps it open.
      const t = setTimeout(() => this.finish(this.exitError(code, sig)), EXIT_DRAIN_MS);
      t.unref();
      this.timers.push(t);
      child.once('close', () => this.finish(this.exitError(code, sig)));
    });
    this.updateRef();
  }

  send(id: string, request: Record<string, unknown>, p: Pending): void {
    this.pending.set(id, p);
    this.updateRef();
    this.child.stdin!.write(`${JSON.stringify({ id, ...request })}\n`);
  }

  /** Forgets a request (its late answer is ignored). False when it was already settled. */
  cancel(id: string): boolean {
    const had = this.pending.delete(id);
    this.updateRef();
    return had;
  }

  /** Closes stdin so the process can finish what is in flight and exit; then SIGTERM, then SIGKILL. */
  async shutdown(): Promise<void> {
    this.closing = true;
    this.updateRef();
    if (!this.finished) {
      this.child.stdin!.end();
      const term = setTimeout(() => {
        killGroup(this.child, 'SIGTERM');
        const kill = setTimeout(() => killGroup(this.child, 'SIGKILL'), this.l.graceMs);
        kill.unref();
        this.timers.push(kill);
      }, this.l.graceMs);
      term.unref(); // the child itself is ref'd while closing, which keeps the loop alive until it exits
      this.timers.push(term);
    }
    await this.done;
  }

  private onStdout(chunk: string): void {
    if (this.overflow) return; // the process is being killed: what it still prints is dropped
    // only the new chunk is searched for a newline: a long line arriving in many chunks stays linear
    // (searching the whole pending line again on every chunk made a 30 MB answer take seconds)
    let start = 0;
    let nl: number;
    while ((nl = chunk.indexOf('\n', start)) >= 0) {
      const line = this.partial + chunk.slice(start, nl);
      this.partial = '';
      start = nl + 1;
      this.onLine(line);
    }
    this.partial += chunk.slice(start);
    if (this.partial.length > MAX_STDOUT_BYTES) {
      this.overflow = true;
      this.partial = '';
      killGroup(this.child, 'SIGKILL');
    }
  }

  private onLine(raw: string): void {
    const line = raw.trim();
    if (line === '') return;
    const parsed = parseOutput(line);
    if (!parsed.ok && parsed.tooDeep) {
      // the request it answers cannot be known without building it: the id is read from the line's start
      const id = /^\{\s*"id"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+))/.exec(line);
      const key = id ? (id[1] ?? id[2]) : undefined;
      const p = key !== undefined ? this.pending.get(key) : undefined;
      if (p && key !== undefined) {
        this.pending.delete(key);
        this.updateRef();
        p.reject(tooDeepError(this.name, line));
      } else this.keepNoise(line);
      return;
    }
    const msg: unknown = parsed.ok ? parsed.value : undefined;
    const id = isPlainObject(msg) && (typeof msg['id'] === 'string' || typeof msg['id'] === 'number') ? String(msg['id']) : undefined;
    if (id === undefined || !isPlainObject(msg)) {
      this.keepNoise(line);
      return;
    }
    const p = this.pending.get(id);
    if (!p) return; // the late answer of an aborted request
    // `"error": null` says there is none (JSON-RPC 1.0 answers carry it on success; so does a Python dict with `error: None`)
    const hasError = Object.prototype.hasOwnProperty.call(msg, 'error') && msg['error'] !== null;
    if (Object.prototype.hasOwnProperty.call(msg, 'checkpoint') && !Object.prototype.hasOwnProperty.call(msg, 'output') && !hasError) {
      p.checkpoint?.(msg['checkpoint']);
      return;
    }
    this.pending.delete(id);
    this.updateRef();
    if (hasError) p.reject(this.errorOf(msg['error']));
    else if (Object.prototype.hasOwnProperty.call(msg, 'output')) p.resolve(msg['output']);
    else p.reject(new AgentError('SubprocessBadOutput', `${this.name} answered request ${id} with neither "output" nor "error"`, { stdout: line.slice(0, STDOUT_EXCERPT_CHARS) }));
  }

  /** Not a protocol line (a stray print): kept for messages, otherwise ignored. */
  private keepNoise(line: string): void {
    this.noise.push(line.length > NOISE_LINE_CHARS ? `${line.slice(0, NOISE_LINE_CHARS)}...` : line);
    if (this.noise.length > NOISE_LINES) this.noise.shift();
  }

  private errorOf(e: unknown): AgentError {
    if (!isPlainObject(e)) return new AgentError('AgentError', typeof e === 'string' && e ? e : `${this.name} reported an error`);
    const code = typeof e['code'] === 'string' && e['code'] ? e['code'] : 'AgentError';
    const message = typeof e['message'] === 'string' ? e['message'] : `${this.name} reported ${code}`;
    const details = isPlainObject(e['details']) ? e['details'] : {};
    return new AgentError(code, message, details, typeof e['retryable'] === 'boolean' ? e['retryable'] : true);
  }

  private exitError(code: number | null, sig: NodeJS.Signals | null): AgentError {
    const err = this.stderr.toString();
    const why = this.overflow ? ` (stopped: a stdout line longer than ${MAX_STDOUT_BYTES} bytes)` : '';
    return new AgentError(
      'SubprocessExit',
      `${this.name} (serve process ${this.child.pid ?? '?'}) ${exitText(code, sig)}${why}${stderrWords(err)}`,
      { exit_code: code, signal: sig, stderr: err, ...(this.noise.length > 0 ? { stdout_noise: this.noise.join('\n') } : {}) },
    );
  }

  /** Settles every pending request with `err` and lets go of the process. Runs once. */
  private finish(err: AgentError): void {
    if (this.finished) return;
    this.finished = true;
    this.alive = false;
    for (const t of this.timers) clearTimeout(t);
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(err);
    // A grandchild may still hold the pipes: drop them so they cannot hold the event loop, and end it.
    this.child.stdin?.destroy();
    this.child.stdout?.destroy();
    this.child.stderr?.destroy();
    reapGroup(this.child, this.l.graceMs);
    this.markDone();
  }

  private updateRef(): void {
    const on = this.closing || this.pending.size > 0;
    const c = this.child;
    for (const h of [c, c.stdin, c.stdout, c.stderr] as unknown as (Refable | null)[]) {
      if (on) h?.ref?.();
      else h?.unref?.();
    }
  }
}

function serveAgent(l: Launch): ClosableAgent {
  let proc: ServeProcess | undefined;
  let closed = false;
  let seq = 0;
  return {
    handler: (ctx) => {
      const name = nameOf(l, ctx);
      if (closed) return Promise.reject(closedError(name));
      if (ctx.signal.aborted) return Promise.reject(abortedError(name, ctx.signal));
      if (!proc?.alive) {
        try {
          proc = new ServeProcess(l, name); // lazily, and again after the last one exited
        } catch (e) {
          return Promise.reject(spawnError(name, l, e));
        }
      }
      const p = proc;
      const id = String(++seq);
      // kill -9 of Baton leaves the process finishing what it holds (the documented readline loop does):
      // a takeover on this host ends it before the next attempt, as it ends a once-mode group
      recordProcess(p.child, ctx, true);
      return new Promise<unknown>((resolve, reject) => {
        const onAbort = (): void => {
          if (p.cancel(id)) reject(abortedError(name, ctx.signal));
        };
        ctx.signal.addEventListener('abort', onAbort, { once: true });
        const done = (): void => ctx.signal.removeEventListener('abort', onAbort);
        p.send(id, requestOf(ctx), {
          // saved in order; a checkpoint the store refuses (the attempt moved on) is dropped
          checkpoint: (v) => void ctx.checkpoint(v as Json).catch(() => undefined),
          resolve: (v) => {
            done();
            resolve(v);
          },
          reject: (e) => {
            done();
            reject(e);
          },
        });
      });
    },
    async close() {
      closed = true;
      const p = proc;
      proc = undefined;
      if (p) await p.shutdown();
    },
  };
}
