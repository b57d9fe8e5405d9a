/**
 * AIP-16's `defineIO` (normative signature and behaviour) and `defineAgent` on top of it: a
 * TypeScript agent that carries its contract. `defineAgent(...)` returns a handler function (so an
 * `--agents` module's default export `{drafter: defineAgent(...)}` is still a handler map) with the
 * contract attached; the handler validates its input before the body runs (the body receives the
 * parsed value and never re-validates) and its output on the way out. AIP-16 files are staged and
 * synced, each recorded (`file_read` / `file_written`: path, sha256, size) as provenance.
 *
 * Schemas are JSON Schema (Draft 2020-12 unless `$schema` says otherwise) or zod schemas (converted
 * with zod's own `toJSONSchema`, validated with zod so transforms and refinements apply). Nothing is
 * compiled or read at module load: validators are built on first use.
 */
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { z } from 'zod';
import { isPlainObject, type Json, type JsonObject } from '../core/json.js';
import { AgentError, type AgentContext } from '../engine/agent.js';
import { SchemaCompiler, type SchemaValidator } from '../workflow/json-schema.js';
import { emptyContract, type AgentContract, type FileEffect } from '../workflow/contract/model.js';
import { errorHandling } from '../workflow/contract/parse.js';
import { parseDuration } from '../workflow/contract/shape.js';

export type JSONSchema = Record<string, unknown>;

export interface FileContractEntry {
  path: string;
  mode?: 'ro' | 'rw';
  contentType?: string;
}

export interface IODefinition {
  /** JSON Schema (Draft 2020-12) or a zod schema. */
  inputs?: unknown;
  outputs?: unknown;
  inputsFiles?: Record<string, FileContractEntry>;
  outputsFiles?: Record<string, FileContractEntry>;
}

export type ValidationResult<T> = { ok: true; value: T } | { ok: false; error: string };

export interface IOHandle<In = unknown, Out = unknown> {
  inputs: JSONSchema;
  outputs: JSONSchema;
  /** Never undefined; defaults to {}. */
  inputsFiles: Record<string, FileContractEntry>;
  outputsFiles: Record<string, FileContractEntry>;
  /** `inputs` plus the reserved `_workflowFsRoot` rules (a string, required when files are declared). */
  validateInput(value: unknown): ValidationResult<In>;
  /** Baton's addition: `outputs` on the way out. */
  validateOutput(value: unknown): ValidationResult<Out>;
}

/** The type a zod schema parses to, or `unknown` for a JSON Schema. */
type Infer<S> = S extends { _zod: { output: infer O } } ? O : unknown;

export const FS_ROOT = '_workflowFsRoot';
const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';

interface Zodish {
  safeParse(v: unknown): { success: true; data: unknown } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
}

function isZod(s: unknown): s is Zodish & z.ZodType {
  return typeof s === 'object' && s !== null && '_zod' in s && typeof (s as { safeParse?: unknown }).safeParse === 'function';
}

type Check = (v: unknown) => ValidationResult<unknown>;

function side(def: unknown, compiler: () => SchemaCompiler, what: 'inputs' | 'outputs'): { schema: JSONSchema; check: Check } {
  if (def === undefined || def === null) return { schema: {}, check: (v) => ({ ok: true, value: v }) };
  if (isZod(def)) {
    const zs: Zodish & z.ZodType = def;
    // the schema's own method: Baton never imports zod (the user's copy, whichever version, converts itself)
    if (typeof (zs as { toJSONSchema?: unknown }).toJSONSchema !== 'function') throw new TypeError(`defineIO: \`${what}\` is a zod schema without toJSONSchema(): use zod >= 4.2`);
    const schema = zs.toJSONSchema({ target: 'draft-2020-12', unrepresentable: 'any', io: what === 'inputs' ? 'input' : 'output' }) as JSONSchema;
    return {
      schema,
      check: (v) => {
        const r = zs.safeParse(v);
        return r.success ? { ok: true, value: r.data } : { ok: false, error: r.error.issues.map((i: { path: PropertyKey[]; message: string }) => `${['$', ...i.path.map(String)].join('.')}: ${i.message}`).join('; ') };
      },
    };
  }
  if (typeof def === 'boolean') def = def ? {} : { not: {} };
  if (!isPlainObject(def)) throw new TypeError(`defineIO: \`${what}\` must be a JSON Schema object or a zod schema`);
  const schema: JSONSchema = typeof def['$schema'] === 'string' ? def : { $schema: DRAFT_2020, ...def };
  let validator: SchemaValidator | undefined;
  return {
    schema,
    check: (v) => {
      if (!validator) {
        const c = compiler().compile(schema);
        if (!c.ok) return { ok: false, error: `\`${what}\` is not a valid JSON Schema: ${c.problems.map((p) => p.message).join('; ')}` };
        validator = c.validator;
      }
      const errors = validator.validate(v);
      return errors.length === 0 ? { ok: true, value: v } : { ok: false, error: errors.map((e) => `${e.path}: ${e.message}`).join('; ') };
    },
  };
}

/** AIP-16: the four IO blocks in canonical shape, and input validation for adapters. */
export function defineIO<D extends IODefinition>(definition: D): IOHandle<Infer<D['inputs']>, Infer<D['outputs']>> {
  let compiler: SchemaCompiler | undefined;
  const get = (): SchemaCompiler => (compiler ??= new SchemaCompiler());
  const inputs = side(definition.inputs, get, 'inputs');
  const outputs = side(definition.outputs, get, 'outputs');
  const inputsFiles = { ...(definition.inputsFiles ?? {}) };
  const outputsFiles = { ...(definition.outputsFiles ?? {}) };
  const files = Object.keys(inputsFiles).length + Object.keys(outputsFiles).length > 0;
  return {
    inputs: inputs.schema,
    outputs: outputs.schema,
    inputsFiles,
    outputsFiles,
    validateInput(value) {
      if (files) {
        if (!isPlainObject(value)) return { ok: false, error: `$: the input must be an object (it carries \`${FS_ROOT}\`)` };
        if (typeof value[FS_ROOT] !== 'string') return { ok: false, error: `$.${FS_ROOT}: the host must inject the scratch root as a string` };
      } else if (isPlainObject(value) && value[FS_ROOT] !== undefined && typeof value[FS_ROOT] !== 'string') {
        return { ok: false, error: `$.${FS_ROOT}: must be a string` };
      }
      return inputs.check(value) as ValidationResult<Infer<D['inputs']>>;
    },
    validateOutput(value) {
      return outputs.check(value) as ValidationResult<Infer<D['outputs']>>;
    },
  };
}

type FileDecl = string | { path: string; description?: string };

export interface SideEffectsDecl {
  filesWritten?: FileDecl[];
  filesRead?: FileDecl[];
  externalCalls?: string[];
}

/** The contract spec's `errorHandling`, as written in TypeScript (defaults as in a contract file). */
export interface ErrorHandlingDecl {
  onInputValidationFailure?: { action: 'reject'; message?: string };
  onPartialCompletion?: { action: 'return_partial' | 'fail'; requiresFlags?: string[] };
  onTimeout?: { action: 'checkpoint_and_retry' | 'retry' | 'fail'; maxRetries?: number };
  onAgentFailure?: { action: 'escalate_to_user' | 'fallback' | 'retry' | 'fail'; fallbackAgent?: string | null };
}

/** An AgentContext whose input is the parsed, typed value. */
export type TypedContext<In> = Omit<AgentContext, 'input'> & { readonly input: In };

export interface AgentDefinition<In, Out> {
  id: string;
  /** The agent's version, checked against a contract's `minAgentVersion`. */
  version: string;
  io?: IOHandle<In, Out>;
  handler: (ctx: TypedContext<In>) => Out | Promise<Out>;
  errorHandling?: ErrorHandlingDecl;
  sideEffects?: SideEffectsDecl;
  resources?: { estimatedTime?: string; tokenBudget?: number; memoryRequired?: string };
  compatibility?: { requiresContext?: string[]; providesContext?: string[] };
  /** Where AIP-16 file paths are relative to (default: the working directory when the attempt runs). */
  workspace?: string;
}

/** A handler function (the engine's AgentHandler) that carries its contract. */
export interface DefinedAgent<In = unknown, Out = unknown> {
  (ctx: AgentContext): Promise<Out>;
  readonly agentId: string;
  readonly version: string;
  readonly io: IOHandle<In, Out>;
  readonly contract: AgentContract;
}

/** The contract a `defineAgent` handler carries, if any (functions from other adapters carry none). */
export function contractOfHandler(h: unknown): AgentContract | undefined {
  if (typeof h !== 'function') return undefined;
  const c = (h as { contract?: unknown }).contract;
  return isPlainObject(c) && (c as { origin?: { kind?: unknown } }).origin?.kind === 'typescript' ? (c as unknown as AgentContract) : undefined;
}

export function defineAgent<In = unknown, Out = unknown>(def: AgentDefinition<In, Out>): DefinedAgent<In, Out> {
  const io = def.io ?? (defineIO({}) as IOHandle<In, Out>);
  const contract = contractFor(def, io);
  const template = def.errorHandling?.onInputValidationFailure?.message ?? `agent \`${def.id}\` rejected its input: {validationErrors}`;
  const hasFiles = Object.keys(io.inputsFiles).length + Object.keys(io.outputsFiles).length > 0;
  const run = async (ctx: AgentContext): Promise<Out> => {
    if (!hasFiles) return body(ctx, ctx.input);
    const workspace = def.workspace ?? process.cwd();
    const root = await mkdtemp(join(tmpdir(), `baton-${def.id.replace(/[^\w-]/g, '_')}-`));
    try {
      await stageIn(io.inputsFiles, workspace, root, ctx);
      // the host injects the scratch root, overwriting whatever the caller put there (AIP-16)
      const out = await body(ctx, { ...ctx.input, [FS_ROOT]: root });
      await syncOut(io.outputsFiles, workspace, root, { runId: ctx.runId, workflowId: def.id }, ctx);
      return out;
    } finally {
      await rm(root, { recursive: true, force: true }).catch(() => undefined);
    }
  };
  const body = async (ctx: AgentContext, raw: unknown): Promise<Out> => {
    const input = io.validateInput(raw);
    if (!input.ok) throw new AgentError('InputValidationError', template.replace('{validationErrors}', input.error), { validationErrors: input.error, agent: def.id }, false);
    // the body receives the parsed value (zod transforms applied) and never re-validates
    let value: unknown = input.value;
    // a schema that strips unknown keys (zod's default) would hide the scratch root from the body
    if (hasFiles && isPlainObject(value) && isPlainObject(raw) && value[FS_ROOT] === undefined) value = { ...value, [FS_ROOT]: raw[FS_ROOT] };
    const typed = Object.create(ctx, { input: { value, enumerable: true } }) as TypedContext<In>;
    const out = await def.handler(typed);
    const checked = io.validateOutput(out);
    if (!checked.ok) throw new AgentError('OutputValidationError', `agent \`${def.id}\` returned an output its contract rules out: ${checked.error}`, { validationErrors: checked.error, agent: def.id });
    return checked.value;
  };
  Object.defineProperties(run, {
    agentId: { value: def.id, enumerable: true },
    version: { value: def.version, enumerable: true },
    io: { value: io, enumerable: true },
    contract: { value: contract, enumerable: true },
  });
  return run as unknown as DefinedAgent<In, Out>;
}

/** AIP-16 steps 3: each declared input file, from the workspace to `<root>/<key>`; a missing one fails before the body runs. */
async function stageIn(files: Record<string, FileContractEntry>, workspace: string, root: string, ctx: AgentContext): Promise<void> {
  for (const [key, e] of Object.entries(files)) {
    const from = resolve(workspace, e.path);
    try {
      await copyFile(from, join(root, key));
      ctx.record('file_read', { key, path: e.path, ...(await digest(from)) });
    } catch (err) {
      throw new AgentError('MissingInputFile', `input file \`${key}\` (${e.path}) cannot be staged: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { key, path: e.path }, false);
    }
  }
}

/** AIP-16 step 6: each declared output file that exists, back to the workspace (tokens replaced once); missing ones are a warning. */
async function syncOut(files: Record<string, FileContractEntry>, workspace: string, root: string, ids: { runId: string; workflowId: string }, ctx: AgentContext): Promise<void> {
  const isoDate = new Date().toISOString().slice(0, 10);
  for (const [key, e] of Object.entries(files)) {
    const from = join(root, key);
    const exists = await stat(from).then(() => true, () => false);
    if (!exists) {
      ctx.log(`warning: declared output file \`${key}\` (${e.path}) was not produced`);
      continue;
    }
    const rel = e.path.replace(/<(runId|workflowId|toolId|isoDate)>/g, (_, t: string) => (t === 'runId' ? ids.runId : t === 'isoDate' ? isoDate : ids.workflowId));
    const to = resolve(workspace, rel);
    try {
      await mkdir(dirname(to), { recursive: true });
      await copyFile(from, to);
      ctx.record('file_written', { key, path: rel, ...(await digest(to)) });
    } catch (err) {
      ctx.log(`warning: output file \`${key}\` could not be synced to ${rel}: ${(err as Error).message}`);
    }
  }
}

/** Provenance of a staged or synced file (the event log keeps it with the run, phase and attempt). */
async function digest(path: string): Promise<{ sha256: string; size: number }> {
  const bytes = await readFile(path);
  return { sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length };
}

function contractFor<In, Out>(def: AgentDefinition<In, Out>, io: IOHandle<In, Out>): AgentContract {
  const c = emptyContract({ kind: 'typescript', at: { path: [] } });
  c.agentId = def.id;
  if (Object.keys(io.inputs).some((k) => k !== '$schema')) c.input = { schema: io.inputs as JsonObject, at: { path: ['io', 'inputs'] } };
  if (Object.keys(io.outputs).some((k) => k !== '$schema')) c.output = { schema: io.outputs as JsonObject, at: { path: ['io', 'outputs'] } };
  const effects = (list: FileDecl[] | undefined, key: string, files: Record<string, FileContractEntry>): FileEffect[] => [
    ...(list ?? []).map((f, i) => ({ ...(typeof f === 'string' ? { path: f } : f), at: { path: ['sideEffects', key, i] } })),
    // AIP-16's file contract: staged inputs are reads, synced outputs are writes
    ...Object.entries(files).map(([k, e]) => ({ path: e.path, at: { path: ['io', key === 'filesRead' ? 'inputsFiles' : 'outputsFiles', k] } })),
  ];
  c.sideEffects = {
    filesWritten: effects(def.sideEffects?.filesWritten, 'filesWritten', io.outputsFiles),
    filesRead: effects(def.sideEffects?.filesRead, 'filesRead', io.inputsFiles),
    externalCalls: (def.sideEffects?.externalCalls ?? []).map((name, i) => ({ name, at: { path: ['sideEffects', 'externalCalls', i] } })),
  };
  if (def.resources) {
    c.resources = { ...def.resources };
    // "5-15 minutes": the upper bound is the default attempt timeout, as for a contract file
    const ms = def.resources.estimatedTime !== undefined ? parseDuration(def.resources.estimatedTime) : undefined;
    if (ms) c.resources.estimatedMs = ms;
  }
  // normalised as a contract file's is (a JavaScript caller may leave out requiresFlags or maxRetries)
  if (isPlainObject(def.errorHandling)) c.errorHandling = errorHandling(def.errorHandling);
  c.compatibility = { requiresContext: def.compatibility?.requiresContext ?? [], providesContext: def.compatibility?.providesContext ?? [] };
  return c;
}

export type { Json };
