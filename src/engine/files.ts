/**
 * AIP-16 file contracts at run time: Baton as a conforming host. Before an attempt's agent runs,
 * each declared input file is staged byte-exact from the workspace into a fresh scratch root (one
 * per attempt, never shared, named after its run, task and attempt), the root is injected as
 * `_workflowFsRoot` into `ctx.input` (over any value already there), and after the agent returns each
 * declared output present under the root is hashed; the engine syncs them back to their workspace
 * paths (tokens replaced in one pass) only once the attempt's completion is committed with their
 * `task.file` events (worker-commits.ts). The root is removed afterwards; roots a dead process left
 * are found by their run's name and finished or removed (files-leftovers.ts).
 *
 * Staging goes through a port (`FileStager`): the local-disk one is here; a remote agent's host can
 * hand files over an API instead. Every staged read and synced write is recorded as provenance
 * (`task.file`: key, workspace path, sha256, size, direction), through the attempt's host.
 *
 * Paths never leave the workspace: keys are single file names, a path with `..` or an absolute one
 * is refused (statically by the compiler, again here after the tokens are replaced), and a symbolic
 * link that points out of the workspace is refused at the time of the copy.
 */
import type { JsonObject } from '../core/json.js';
import { escapeProblem, filesOfPhase, itemTokenValue, tokenKind } from '../workflow/files.js';
import { FS_ROOT_KEY } from '../workflow/wiring.js';
import type { FileEntry, WorkflowModel } from '../workflow/model.js';
import type { AgentContract } from '../workflow/contract/model.js';
import { AgentError, type AgentContext, type AgentHandler } from './agent.js';
import { Attempt } from './attempt.js';
import { itemKey } from './state.js';

/** sha256 (hex) and size in bytes of a file's content. */
export interface FileDigest {
  sha256: string;
  size: number;
}

/** What one attempt's files are staged for (a fan-out item adds its element and index). */
export interface StageScope {
  runId: string;
  workflowId: string;
  phase: string;
  attempt: number;
  item?: { index: number; value: unknown };
}

/** A scratch root of one attempt. */
export interface ScratchRoot {
  /** What the agent receives as `_workflowFsRoot` (for the local stager, an absolute directory). */
  readonly path: string;
  /** Copies the workspace file at `workspacePath` to `<root>/<key>`, byte-exact. Rejects with a FileRefused or the I/O error. */
  stage(key: string, workspacePath: string): Promise<FileDigest>;
  /**
   * What `sync` would copy, without writing anything: the digest of `<root>/<key>`, `missing` when the
   * agent did not produce it. Rejects with a FileRefused when the target leaves the workspace or the
   * file is not a regular one.
   */
  check(key: string, workspacePath: string): Promise<FileDigest | 'missing'>;
  /**
   * Copies `<root>/<key>` to the workspace at `workspacePath`; `missing` when the agent did not produce
   * it. With `expected` (what `check` said), bytes that differ are refused (FileRefused) and nothing is
   * written; a file gone from the root whose target already holds those bytes (another process of
   * this host finished the sync) is that digest.
   */
  sync(key: string, workspacePath: string, expected?: FileDigest): Promise<FileDigest | 'missing'>;
  /** Removes the root and what is in it (best effort: never rejects). */
  remove(): Promise<void>;
}

/** A scratch root still there from an attempt whose process did not remove it (it died, or its outcome waits). */
export interface LeftoverRoot extends Omit<ScratchRoot, 'stage' | 'check'> {
  /** The attempt number, and the fan-out item's index, the root was made for (as its name says). */
  readonly attempt: number;
  readonly item?: number;
  /** Whether the root is that of attempt `attempt` of task `key` (`phase`, or `phase[index]`). */
  isOf(key: string, attempt: number): boolean;
}

/** The staging port: a fresh root per attempt, never shared between attempts. */
export interface FileStager {
  open(scope: StageScope): Promise<ScratchRoot>;
  /** Where the workspace is (an absolute path, a URL), for messages: a missing input file names it. */
  readonly workspace?: string;
  /**
   * The roots of `runId`'s attempts still there: directories this stager made, found by the run's
   * name. Without it, roots that a process which died left behind are not looked for.
   */
  leftovers?(runId: string): Promise<LeftoverRoot[]>;
}

/** A path refused because it would leave the workspace (or is not a file Baton may copy). */
export class FileRefused extends Error {
  override readonly name = 'FileRefused';
}

/** A workspace path that is there but is no file to copy (a folder, a FIFO, a device): never opened for reading, which could block. */
export class NotAFile extends Error {
  override readonly name = 'NotAFile';
}

// ---- tokens ---------------------------------------------------------------------------------------

/** The values of the run tokens for one attempt. */
export function tokenValues(scope: StageScope, now: number): Record<string, string> {
  return {
    runId: scope.runId,
    workflowId: scope.workflowId,
    toolId: scope.workflowId,
    isoDate: new Date(now).toISOString().slice(0, 10),
    phase: scope.phase,
    attempt: String(scope.attempt),
  };
}

/**
 * Replaces every `<token>` of `path` once (a value holding `<x>` is not expanded again), then checks
 * the result stays in the workspace: a run id or an item value of `..` is refused here.
 */
export function expandPath(path: string, values: Readonly<Record<string, string>>, item?: StageScope['item']): string {
  const out = path.replace(/<([^<>]*)>/g, (_, name: string) => {
    if (Object.prototype.hasOwnProperty.call(values, name)) return values[name]!;
    if (tokenKind(name) === 'item') {
      if (!item) throw new FileRefused(`\`<${name}>\` names a fan-out item, and this attempt runs none`);
      if (name === 'index') return String(item.index);
      const v = itemTokenValue(name, item.value);
      if (v === undefined) throw new FileRefused(`\`<${name}>\` is not a string or a number in item ${item.index}`);
      return v;
    }
    throw new FileRefused(`unknown token \`<${name}>\``);
  });
  const escape = escapeProblem(out);
  if (escape !== undefined) throw new FileRefused(`\`${path}\` expands to a path that is refused: ${escape}`);
  // recorded as the file it names: `out//x.md` and `out/./x.md` (an empty or `.` value) are `out/x.md`
  const norm = out.split('/').filter((s) => s !== '' && s !== '.').join('/');
  if (out.includes('\0') || norm === '') throw new FileRefused(`\`${path}\` expands to an empty path or one with a NUL character`);
  return norm;
}

// ---- the attempt side ------------------------------------------------------------------------------

/** One staged or synced file, as recorded (`task.file`). */
export interface FileProvenance extends FileDigest {
  direction: 'staged' | 'synced';
  key: string;
  /** Workspace-relative, tokens replaced. */
  path: string;
  /** The fan-out item's index, when the attempt runs one. */
  item?: number;
}

/**
 * An attempt's files as the engine staged them: its scratch root, each input staged there (with its
 * digest) and each output key it may write. What a host that hands the root to an agent elsewhere
 * (a remote agent, server/remote-files.ts) needs to say what there is to fetch and what to send back.
 */
export interface StagedFiles {
  /** The root's path (`_workflowFsRoot`): for the local stager, an absolute directory. */
  readonly root: string;
  readonly inputs: readonly ({ key: string; contentType?: string } & FileDigest)[];
  readonly outputs: readonly { key: string; contentType?: string }[];
}

/** Contexts whose files the engine staged, and what it staged: an adapter that stages files itself (defineAgent) does not again. */
const staged = new WeakMap<object, StagedFiles>();

/** The files the engine staged for this attempt, if any. */
export function stagedFilesOf(ctx: AgentContext): StagedFiles | undefined {
  // adapters may hand on a view of the context (Object.create): its prototype chain leads to the attempt
  for (let o: object | null = ctx; o !== null; o = Object.getPrototypeOf(o) as object | null) {
    const r = staged.get(o);
    if (r !== undefined) return r;
  }
  return undefined;
}

/** The scratch root the engine staged this attempt's files into, if any (a subprocess agent runs there). */
export function scratchRootOf(ctx: AgentContext): string | undefined {
  return stagedFilesOf(ctx)?.root;
}

export interface FileHostOptions {
  /** The stager over the run's workspace. */
  stager: FileStager;
  /** A stager over another workspace (an agent that names its own: `defineAgent({workspace})`). */
  stagerFor?: (workspace: string) => FileStager;
  model: WorkflowModel;
  contracts: ReadonlyMap<string, AgentContract>;
  now: () => number;
}

/**
 * An attempt's output files, checked and hashed after its agent returned, held until the engine knows
 * whether its outcome is accepted: they go to the workspace only then (`publish`, after the completion
 * that records them is committed), else nowhere (`discard`). Either removes the root.
 */
export interface HeldFiles {
  /** What will be synced, as recorded (`task.file`, `direction: synced`) with the completion. */
  readonly files: readonly FileProvenance[];
  /** Copies them to the workspace; resolves to those that could not be (written nowhere, or not whole). */
  publish(): Promise<{ key: string; path: string; message: string }[]>;
  discard(): Promise<void>;
}

/**
 * Wraps an agent's handler with the file contract of the phase it runs: stage, inject, run, check
 * the outputs and hand them to the engine (an engine attempt), or sync them at once (any other
 * context), remove. A phase without files runs the handler as it is.
 */
export function withFiles(handler: AgentHandler, opts: FileHostOptions): AgentHandler {
  return async (ctx: AgentContext) => {
    const files = filesOfPhase(opts.model, opts.contracts, ctx.phase, ctx.agent);
    if (!files || files.inputs.length + files.outputs.length === 0) return handler(ctx);
    const scope: StageScope = { runId: ctx.runId, workflowId: opts.model.info.name, phase: ctx.phase, attempt: ctx.attempt, ...(ctx.item ? { item: ctx.item } : {}) };
    const values = tokenValues(scope, opts.now());
    // every input path is expanded before anything is created: a refused one fails the attempt at once
    const inputs = files.inputs.map((e) => ({ e, path: expandOrFail(e, values, scope.item) }));
    const stager = files.workspace !== undefined && opts.stagerFor ? opts.stagerFor(files.workspace) : opts.stager;
    // the roots of this task's earlier attempts, left by a process that died or lost the task (its
    // process group was ended before this attempt started), go before this attempt's is made
    if (scope.attempt > 1) await removeEarlier(stager, scope);
    const root = await stager.open(scope);
    let held = false;
    const stagedInputs: StagedFiles['inputs'][number][] = [];
    try {
      for (const { e, path } of inputs) {
        // a timeout or a cancel during staging stops it: the attempt has ended (the root is removed below)
        if (ctx.signal.aborted) throw ctx.signal.reason;
        let d: FileDigest;
        try {
          d = await root.stage(e.key, path);
        } catch (err) {
          if (err instanceof FileRefused) throw new AgentError('PathEscape', `input file \`${e.key}\` (${path}) is refused: ${err.message}`, { key: e.key, path }, false);
          const code = (err as NodeJS.ErrnoException).code;
          throw new AgentError('MissingInputFile', `input file \`${e.key}\` cannot be staged from ${path}: ${code === 'ENOENT' ? `no such file in the workspace${stager.workspace !== undefined ? ` (${stager.workspace})` : ''}` : err instanceof NotAFile ? err.message : (code ?? (err as Error).message)}`, { key: e.key, path, ...(stager.workspace !== undefined ? { workspace: stager.workspace } : {}) }, false);
        }
        recordFile(ctx, { direction: 'staged', key: e.key, path, ...d, ...(scope.item ? { item: scope.item.index } : {}) });
        stagedInputs.push({ key: e.key, ...(e.contentType !== undefined ? { contentType: e.contentType } : {}), sha256: d.sha256, size: d.size });
      }
      // the host's scratch root, over whatever the caller put there (AIP-16)
      const inner = inject(ctx, root.path);
      staged.set(inner, { root: root.path, inputs: stagedInputs, outputs: files.outputs.map((e) => ({ key: e.key, ...(e.contentType !== undefined ? { contentType: e.contentType } : {}) })) });
      const out = await handler(inner);
      // an aborted attempt (timed out, cancelled, its task or run moved on) has no outcome: nothing is synced
      if (ctx.signal.aborted) return out;
      if (ctx instanceof Attempt) {
        // the engine syncs them once the completion that records them is committed, or not at all
        const h = await checkAll(ctx, root, files.outputs, values, scope);
        held = h !== undefined && ctx.holdFiles(h);
        return out;
      }
      await syncAll(ctx, root, files.outputs, values, scope);
      return out;
    } finally {
      if (!held) await root.remove();
    }
  };
}

/** Removes the roots that attempts before `scope.attempt` of the same task left (best effort). */
async function removeEarlier(stager: FileStager, scope: StageScope): Promise<void> {
  const key = scope.item ? itemKey(scope.phase, scope.item.index) : scope.phase;
  const left = await stager.leftovers?.(scope.runId).catch(() => []);
  for (const r of left ?? []) if (r.attempt < scope.attempt && r.isOf(key, r.attempt)) await r.remove();
}

/**
 * After the agent returned: each declared output is expanded, its target checked and its bytes hashed
 * (nothing is written); one not produced is a warning, one refused a log line, as a failed sync is.
 * Undefined when nothing is to be synced (the root can go at once).
 */
async function checkAll(ctx: Attempt, root: ScratchRoot, outputs: FileEntry[], values: Readonly<Record<string, string>>, scope: StageScope): Promise<HeldFiles | undefined> {
  const planned: FileProvenance[] = [];
  for (const e of outputs) {
    let path = e.path;
    try {
      path = expandPath(e.path, values, scope.item);
      const d = await root.check(e.key, path);
      if (d === 'missing') {
        ctx.record('declared_file_missing', { key: e.key, path, declared: e.path });
        continue;
      }
      planned.push({ direction: 'synced', key: e.key, path, ...d, ...(scope.item ? { item: scope.item.index } : {}) });
    } catch (err) {
      ctx.log(`warning: output file \`${e.key}\` could not be synced to ${path}: ${(err as Error).message}`);
    }
  }
  if (planned.length === 0) return undefined;
  return {
    files: planned,
    async publish() {
      const failed: { key: string; path: string; message: string }[] = [];
      try {
        for (const f of planned) {
          try {
            const d = await root.sync(f.key, f.path, f);
            if (d === 'missing') failed.push({ key: f.key, path: f.path, message: 'it is gone from the scratch root' });
          } catch (err) {
            failed.push({ key: f.key, path: f.path, message: (err as Error).message });
          }
        }
      } finally {
        await root.remove();
      }
      return failed;
    },
    discard: () => root.remove(),
  };
}

function expandOrFail(e: FileEntry, values: Readonly<Record<string, string>>, item: StageScope['item']): string {
  try {
    return expandPath(e.path, values, item);
  } catch (err) {
    throw new AgentError('PathEscape', `input file \`${e.key}\` (${e.path}) is refused: ${(err as Error).message}`, { key: e.key, path: e.path }, false);
  }
}

/** AIP-16 step 6: each declared output that exists goes back; one not produced is a warning; a failed copy is logged. */
async function syncAll(ctx: AgentContext, root: ScratchRoot, outputs: FileEntry[], values: Readonly<Record<string, string>>, scope: StageScope): Promise<void> {
  for (const e of outputs) {
    let path = e.path;
    try {
      path = expandPath(e.path, values, scope.item);
      const d = await root.sync(e.key, path);
      if (d === 'missing') {
        ctx.record('declared_file_missing', { key: e.key, path, declared: e.path });
        continue;
      }
      recordFile(ctx, { direction: 'synced', key: e.key, path, ...d, ...(scope.item ? { item: scope.item.index } : {}) });
    } catch (err) {
      // by now the agent has returned: a failed write is logged and never fails the attempt (AIP-16)
      ctx.log(`warning: output file \`${e.key}\` could not be synced to ${path}: ${(err as Error).message}`);
    }
  }
}

function recordFile(ctx: AgentContext, p: FileProvenance): void {
  if (ctx instanceof Attempt) ctx.recordFile(p);
  else ctx.record(p.direction === 'staged' ? 'file_staged' : 'file_synced', p as unknown as JsonObject);
}

/** The attempt's input with `_workflowFsRoot` set: on the attempt itself (its input is its own copy), or a view of another context. */
function inject(ctx: AgentContext, root: string): AgentContext {
  if (ctx instanceof Attempt) {
    ctx.setInputField(FS_ROOT_KEY, root);
    return ctx;
  }
  return Object.create(ctx, { input: { value: { ...ctx.input, [FS_ROOT_KEY]: root }, enumerable: true } }) as AgentContext;
}
