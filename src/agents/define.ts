/**
 * AIP-16's `defineIO` (normative signature and behaviour) and `defineAgent` on top of it: a
 * TypeScript agent that carries its contract. `defineAgent(...)` returns a handler function (so an
 * `--agents` module's default export `{drafter: defineAgent(...)}` is still a handler map) with the
 * contract attached; the handler validates its input before the body runs (the body receives the
 * parsed value and never re-validates) and its output on the way out. AIP-16 files are staged and
 * synced, each recorded (`file_read` / `file_written`: path, sha256, size) as provenance.
 *
 * Schemas are JSON Schema (Draft 2020-12 unless `$schema` says otherwise) or any Standard Schema
 * (zod 3 and 4, valibot, arktype: `~standard`), validated by the library itself so transforms and
 * refinements apply. For the static contract checks a Standard Schema is converted to JSON Schema by
 * the library's own converter: Standard JSON Schema (`~standard.jsonSchema`: zod 4.2+, arktype),
 * `@valibot/to-json-schema` when installed, zod's `toJSONSchema` for an older zod 4. Without one the
 * schema is checked at run time only, and `warnings` says the static checks are skipped. Nothing is
 * compiled or read at module load: validators are built on first use.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { isStandardSchema, type StandardJsonSchemaConverter, type StandardOutput, type StandardResult, type StandardSchemaV1 } from '../core/standard-schema.js';
import { isPlainObject, type Json, type JsonObject } from '../core/json.js';
import { AgentError, type AgentContext } from '../engine/agent.js';
import { expandPath, FileRefused, scratchRootOf, tokenValues, type ScratchRoot, type StageScope } from '../engine/files.js';
import { localFileStager } from '../engine/files-local.js';
import { SchemaCompiler, type SchemaValidator } from '../workflow/json-schema.js';
import { emptyContract, type AgentContract, type FileEffect } from '../workflow/contract/model.js';
import type { FileEntry } from '../workflow/model.js';
import { errorHandling } from '../workflow/contract/parse.js';
import { parseDuration } from '../workflow/contract/shape.js';

export type JSONSchema = Record<string, unknown>;

export interface FileContractEntry {
  path: string;
  mode?: 'ro' | 'rw' | undefined;
  contentType?: string | undefined;
}

/** A schema `defineIO` accepts: a JSON Schema object (or boolean), or a Standard Schema (zod 3/4, valibot, arktype, ...). */
export type SchemaLike = StandardSchemaV1 | JSONSchema | boolean;

export interface IODefinition {
  /** JSON Schema (Draft 2020-12) or a Standard Schema (zod 3 and 4, valibot, arktype, ...). */
  inputs?: SchemaLike | undefined;
  outputs?: SchemaLike | undefined;
  inputsFiles?: Record<string, FileContractEntry> | undefined;
  outputsFiles?: Record<string, FileContractEntry> | undefined;
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
  /** Why a side has no static contract check (a Standard Schema without a JSON Schema converter): checked at run time only. */
  readonly unchecked: { readonly inputs?: string; readonly outputs?: string };
  /** The same, as one-line warnings to show. */
  readonly warnings: readonly string[];
}

/** The type a Standard Schema parses to, or `unknown` for a JSON Schema. */
type Infer<S> = S extends StandardSchemaV1 ? StandardOutput<S> : unknown;

export const FS_ROOT = '_workflowFsRoot';
const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';

type Check = (v: unknown) => ValidationResult<unknown>;

interface Side {
  schema: JSONSchema;
  check: Check;
  /** Standard Schemas whose `validate` may be asynchronous (defineAgent awaits it). */
  checkAsync: (v: unknown) => Promise<ValidationResult<unknown>>;
  /** Set when there is no JSON Schema for the static checks. */
  unchecked?: string;
}

function side(def: unknown, compiler: () => SchemaCompiler, what: 'inputs' | 'outputs'): Side {
  if (def === undefined || def === null) {
    const ok: Check = (v) => ({ ok: true, value: v });
    return { schema: {}, check: ok, checkAsync: (v) => Promise.resolve(ok(v)) };
  }
  if (isStandardSchema(def)) return standardSide(def, what);
  if (typeof def === 'boolean') def = def ? {} : { not: {} };
  if (!isPlainObject(def)) throw new TypeError(`defineIO: \`${what}\` must be a JSON Schema object or a Standard Schema (zod, valibot, arktype, ...)`);
  const schema: JSONSchema = typeof def['$schema'] === 'string' ? def : { $schema: DRAFT_2020, ...def };
  let validator: SchemaValidator | undefined;
  const check: Check = (v) => {
    if (!validator) {
      const c = compiler().compile(schema);
      if (!c.ok) return { ok: false, error: `\`${what}\` is not a valid JSON Schema: ${c.problems.map((p) => p.message).join('; ')}` };
      validator = c.validator;
    }
    const errors = validator.validate(v);
    return errors.length === 0 ? { ok: true, value: v } : { ok: false, error: errors.map((e) => `${e.path}: ${e.message}`).join('; ') };
  };
  return { schema, check, checkAsync: (v) => Promise.resolve(check(v)) };
}

function standardSide(s: StandardSchemaV1, what: 'inputs' | 'outputs'): Side {
  const std = s['~standard'];
  const converted = toJsonSchema(s, what === 'inputs' ? 'input' : 'output');
  const result = (r: StandardResult<unknown>): ValidationResult<unknown> => (r.issues ? { ok: false, error: r.issues.map(issueText).join('; ') } : { ok: true, value: r.value });
  return {
    schema: 'schema' in converted ? converted.schema : {},
    ...('why' in converted ? { unchecked: converted.why } : {}),
    check: (v) => {
      const r = std.validate(v);
      if (r instanceof Promise) return { ok: false, error: `\`${what}\` (${std.vendor}) validates asynchronously: only defineAgent handlers can await it` };
      return result(r);
    },
    checkAsync: async (v) => result(await std.validate(v)),
  };
}

function issueText(i: { message: string; path?: readonly (PropertyKey | { readonly key: PropertyKey })[] | undefined }): string {
  const path = (i.path ?? []).map((p) => String(typeof p === 'object' ? p.key : p));
  return `${['$', ...path].join('.')}: ${i.message}`;
}

const requireHere = createRequire(import.meta.url);

/** A module of the user's, if installed (synchronous: defineIO is). */
function optional(name: string): Record<string, unknown> | undefined {
  try {
    return requireHere(name) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * A Standard Schema as JSON Schema, by the library's own converter. Types JSON Schema cannot say
 * (a transform's output, a function) become `{}` (anything) rather than failing the whole schema.
 */
function toJsonSchema(s: StandardSchemaV1, io: 'input' | 'output'): { schema: JSONSchema } | { why: string } {
  const std = s['~standard'];
  const vendor = std.vendor;
  const fail = (e: unknown): { why: string } => ({ why: `${vendor} could not convert the schema to JSON Schema (${e instanceof Error ? e.message : String(e)})` });
  const conv = (std as { jsonSchema?: Partial<StandardJsonSchemaConverter> }).jsonSchema;
  if (conv && typeof conv[io] === 'function') {
    try {
      return { schema: conv[io]({ target: 'draft-2020-12', libraryOptions: { unrepresentable: 'any' } }) };
    } catch (e) {
      return fail(e);
    }
  }
  if (vendor === 'valibot') {
    const m = optional('@valibot/to-json-schema');
    if (typeof m?.['toJsonSchema'] !== 'function') return { why: 'valibot schemas need @valibot/to-json-schema for static checks (npm install @valibot/to-json-schema)' };
    try {
      const f = m['toJsonSchema'] as (s: unknown, o: Record<string, unknown>) => JSONSchema;
      return { schema: f(s, { target: 'draft-2020-12', typeMode: io, errorMode: 'ignore' }) };
    } catch (e) {
      return fail(e);
    }
  }
  if (vendor === 'zod' && '_zod' in s) {
    // zod 4 before Standard JSON Schema (4.0, 4.1): its own toJSONSchema
    const z = optional('zod/v4/core');
    if (typeof z?.['toJSONSchema'] === 'function') {
      try {
        const f = z['toJSONSchema'] as (s: unknown, o: Record<string, unknown>) => JSONSchema;
        return { schema: f(s, { target: 'draft-2020-12', unrepresentable: 'any', io }) };
      } catch (e) {
        return fail(e);
      }
    }
  }
  return { why: `${vendor} schemas have no JSON Schema converter Baton knows (${vendor === 'zod' ? 'zod 3: upgrade to zod 4, or write JSON Schema' : 'no `~standard.jsonSchema`'})` };
}

/**
 * A file block in canonical shape: `{<key>: {path, mode?, contentType?}}`. A malformed one (JavaScript, or
 * JSON read at run time) is refused here, as a malformed schema is: it would fail inside staging with an
 * error about `undefined`. What a path names (`..`, an absolute path, a token) is checked when it is used.
 */
function fileBlock(raw: unknown, what: 'inputsFiles' | 'outputsFiles'): Record<string, FileContractEntry> {
  if (raw === undefined || raw === null) return {};
  if (!isPlainObject(raw)) throw new TypeError(`defineIO: \`${what}\` must be an object of file entries \`{<key>: {path, mode?, contentType?}}\``);
  const out: [string, FileContractEntry][] = [];
  for (const [key, e] of Object.entries(raw)) {
    const at = `defineIO: \`${what}.${key}\``;
    if (!isPlainObject(e)) throw new TypeError(`${at} must be a file entry \`{path, mode?, contentType?}\``);
    if (typeof e['path'] !== 'string' || e['path'] === '') throw new TypeError(`${at}.path must be a non-empty string (a workspace-relative path)`);
    if (e['mode'] !== undefined && e['mode'] !== 'ro' && e['mode'] !== 'rw') throw new TypeError(`${at}.mode must be \`ro\` or \`rw\``);
    if (e['contentType'] !== undefined && typeof e['contentType'] !== 'string') throw new TypeError(`${at}.contentType must be a string`);
    out.push([key, e as unknown as FileContractEntry]);
  }
  return Object.fromEntries(out);
}

/** AIP-16: the four IO blocks in canonical shape, and input validation for adapters. */
export function defineIO<D extends IODefinition>(definition: D): IOHandle<Infer<D['inputs']>, Infer<D['outputs']>> {
  let compiler: SchemaCompiler | undefined;
  const get = (): SchemaCompiler => (compiler ??= new SchemaCompiler());
  const inputs = side(definition.inputs, get, 'inputs');
  const outputs = side(definition.outputs, get, 'outputs');
  const inputsFiles = fileBlock(definition.inputsFiles, 'inputsFiles');
  const outputsFiles = fileBlock(definition.outputsFiles, 'outputsFiles');
  const files = Object.keys(inputsFiles).length + Object.keys(outputsFiles).length > 0;
  const unchecked = { ...(inputs.unchecked !== undefined ? { inputs: inputs.unchecked } : {}), ...(outputs.unchecked !== undefined ? { outputs: outputs.unchecked } : {}) };
  const rootProblem = (value: unknown): string | undefined => {
    if (files) {
      if (!isPlainObject(value)) return `$: the input must be an object (it carries \`${FS_ROOT}\`)`;
      if (typeof value[FS_ROOT] !== 'string') return `$.${FS_ROOT}: the host must inject the scratch root as a string`;
    } else if (isPlainObject(value) && value[FS_ROOT] !== undefined && typeof value[FS_ROOT] !== 'string') {
      return `$.${FS_ROOT}: must be a string`;
    }
    return undefined;
  };
  // AIP-16 leaves it to the body's schema to allow the root; one that refuses it (a closed object) fails every
  // attempt, so say that rather than "additional properties": the input without it is fine
  const rootRefused = (value: unknown, without: ValidationResult<unknown>): ValidationResult<unknown> | undefined =>
    files && without.ok && isPlainObject(value) && value[FS_ROOT] !== undefined
      ? { ok: false, error: `$.${FS_ROOT}: the \`inputs\` schema refuses the scratch root the host injects; an agent with inputsFiles or outputsFiles must allow it (AIP-16): add \`${FS_ROOT}: {type: 'string'}\` to its properties (zod: \`${FS_ROOT}: z.string()\`)` }
      : undefined;
  const handle: IOHandle<Infer<D['inputs']>, Infer<D['outputs']>> = {
    inputs: inputs.schema,
    outputs: outputs.schema,
    inputsFiles,
    outputsFiles,
    validateInput(value) {
      const problem = rootProblem(value);
      if (problem !== undefined) return { ok: false, error: problem };
      const r = inputs.check(value);
      return (r.ok ? r : (rootRefused(value, inputs.check(withoutRoot(value))) ?? r)) as ValidationResult<Infer<D['inputs']>>;
    },
    validateOutput(value) {
      return outputs.check(value) as ValidationResult<Infer<D['outputs']>>;
    },
    unchecked,
    warnings: Object.entries(unchecked).map(([k, why]) => `\`${k}\`: ${why}; static contract checks are skipped (validated at run time)`),
  };
  // defineAgent awaits Standard Schemas that validate asynchronously
  Object.defineProperty(handle, ASYNC, {
    value: {
      input: async (value: unknown) => {
        const problem = rootProblem(value);
        if (problem !== undefined) return { ok: false, error: problem };
        const r = await inputs.checkAsync(value);
        return r.ok ? r : (rootRefused(value, await inputs.checkAsync(withoutRoot(value))) ?? r);
      },
      output: (value: unknown) => outputs.checkAsync(value),
    } satisfies AsyncChecks,
  });
  return handle;
}

function withoutRoot(value: unknown): unknown {
  if (!isPlainObject(value)) return value;
  const { [FS_ROOT]: _root, ...rest } = value;
  return rest;
}

const ASYNC = Symbol('baton.io.async');
interface AsyncChecks {
  input(v: unknown): Promise<ValidationResult<unknown>>;
  output(v: unknown): Promise<ValidationResult<unknown>>;
}

/** The asynchronous checks of a defineIO handle; a hand-made IOHandle gets its sync ones. */
function asyncChecks(io: IOHandle<unknown, unknown>): AsyncChecks {
  const a = (io as unknown as Record<symbol, AsyncChecks | undefined>)[ASYNC];
  return a ?? { input: (v) => Promise.resolve(io.validateInput(v)), output: (v) => Promise.resolve(io.validateOutput(v)) };
}

type FileDecl = string | { path: string; description?: string };

export interface SideEffectsDecl {
  filesWritten?: FileDecl[] | undefined;
  filesRead?: FileDecl[] | undefined;
  externalCalls?: string[] | undefined;
}

/** The contract spec's `errorHandling`, as written in TypeScript (defaults as in a contract file). */
export interface ErrorHandlingDecl {
  onInputValidationFailure?: { action: 'reject'; message?: string | undefined } | undefined;
  onPartialCompletion?: { action: 'return_partial' | 'fail'; requiresFlags?: string[] | undefined } | undefined;
  onTimeout?: { action: 'checkpoint_and_retry' | 'retry' | 'fail'; maxRetries?: number | undefined } | undefined;
  onAgentFailure?: { action: 'escalate_to_user' | 'fallback' | 'retry' | 'fail'; fallbackAgent?: string | null | undefined } | undefined;
}

/** An AgentContext whose input is the parsed, typed value. */
export type TypedContext<In> = Omit<AgentContext, 'input'> & { readonly input: In };

/** What a handler returns: the output schema's type when it has one, else what the handler itself returns (`R`). */
export type AgentOutput<Out, R> = unknown extends Out ? R : Out;

export interface AgentDefinition<In, Out, R = Out> {
  id: string;
  /** The agent's version, checked against a contract's `minAgentVersion`. */
  version: string;
  io?: IOHandle<In, Out> | undefined;
  handler: (ctx: TypedContext<In>) => AgentOutput<Out, R> | Promise<AgentOutput<Out, R>>;
  errorHandling?: ErrorHandlingDecl | undefined;
  sideEffects?: SideEffectsDecl | undefined;
  resources?: { estimatedTime?: string | undefined; tokenBudget?: number | undefined; memoryRequired?: string | undefined } | undefined;
  compatibility?: { requiresContext?: string[] | undefined; providesContext?: string[] | undefined } | undefined;
  /** Where AIP-16 file paths are relative to (default: the run's workspace; called outside an engine, the working directory). */
  workspace?: string | undefined;
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

export function defineAgent<In = unknown, Out = unknown, R = Out>(def: AgentDefinition<In, Out, R>): DefinedAgent<In, AgentOutput<Out, R>> {
  const io = def.io ?? (defineIO({}) as IOHandle<In, Out>);
  const checks = asyncChecks(io);
  const contract = contractFor(def, io);
  const template = def.errorHandling?.onInputValidationFailure?.message ?? `agent \`${def.id}\` rejected its input: {validationErrors}`;
  const hasFiles = Object.keys(io.inputsFiles).length + Object.keys(io.outputsFiles).length > 0;
  const run = async (ctx: AgentContext): Promise<Out> => {
    // run by the engine, the files were staged by the host already (engine/files.ts): `_workflowFsRoot` is in the input
    if (!hasFiles || scratchRootOf(ctx) !== undefined) return body(ctx, ctx.input);
    const workspace = def.workspace ?? process.cwd();
    // the local stager's roots and checks (keys, `..`, absolute paths, symbolic links out of the workspace),
    // under a private folder of this call: no engine's leftover sweep can take it for one of a run's roots
    const dir = await mkdtemp(join(tmpdir(), `baton-${def.id.replace(/[^\w-]/g, '_')}-`));
    try {
      // a caller's own context (JavaScript) may leave out the run's fields: the root's name and the tokens then use these
      const loose = ctx as Partial<Pick<AgentContext, 'runId' | 'phase' | 'attempt'>>;
      const scope: StageScope = { runId: String(loose.runId ?? 'run'), workflowId: def.id, phase: String(loose.phase ?? def.id), attempt: Number(loose.attempt ?? 1), ...(ctx.item ? { item: ctx.item } : {}) };
      const values = tokenValues(scope, Date.now());
      const root = await localFileStager({ workspace, tmpDir: dir }).open(scope);
      await stageIn(io.inputsFiles, root, values, scope, ctx);
      // the host injects the scratch root, overwriting whatever the caller put there (AIP-16)
      const out = await body(ctx, { ...ctx.input, [FS_ROOT]: root.path });
      await syncOut(io.outputsFiles, root, values, scope, ctx);
      return out;
    } finally {
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    }
  };
  const body = async (ctx: AgentContext, raw: unknown): Promise<Out> => {
    const input = await checks.input(raw);
    if (!input.ok) throw new AgentError('InputValidationError', template.replace('{validationErrors}', input.error), { validationErrors: input.error, agent: def.id }, false);
    // the body receives the parsed value (zod transforms applied) and never re-validates
    let value: unknown = input.value;
    // a schema that strips unknown keys (zod's default) would hide the scratch root from the body
    if (hasFiles && isPlainObject(value) && isPlainObject(raw) && value[FS_ROOT] === undefined) value = { ...value, [FS_ROOT]: raw[FS_ROOT] };
    const typed = Object.create(ctx, { input: { value, enumerable: true } }) as TypedContext<In>;
    const out = await def.handler(typed);
    // `_cost` is spend, not an output: checked without it (a closed schema need not list it, a stripping one
    // would lose it) and handed back beside the parsed value for the engine to count
    const cost = isPlainObject(out) && Object.prototype.hasOwnProperty.call(out, '_cost') ? { _cost: out['_cost'] } : undefined;
    const checked = (await checks.output(withoutCost(out))) as ValidationResult<Out>;
    if (!checked.ok) throw new AgentError('OutputValidationError', `agent \`${def.id}\` returned an output its contract rules out: ${checked.error}`, { validationErrors: checked.error, agent: def.id });
    return cost && isPlainObject(checked.value) ? { ...checked.value, ...cost } : checked.value;
  };
  Object.defineProperties(run, {
    agentId: { value: def.id, enumerable: true },
    version: { value: def.version, enumerable: true },
    io: { value: io, enumerable: true },
    contract: { value: contract, enumerable: true },
  });
  return run as unknown as DefinedAgent<In, AgentOutput<Out, R>>;
}

/** AIP-16 steps 3: each declared input file, from the workspace to `<root>/<key>`; a missing one fails before the body runs. */
async function stageIn(files: Record<string, FileContractEntry>, root: ScratchRoot, values: Readonly<Record<string, string>>, scope: StageScope, ctx: AgentContext): Promise<void> {
  for (const [key, e] of Object.entries(files)) {
    let path = e.path;
    try {
      path = expandPath(e.path, values, scope.item);
      ctx.record('file_read', { key, path, ...(await root.stage(key, path)) });
    } catch (err) {
      // a path that leaves the workspace (`..`, absolute, a symbolic link out) is refused, as the engine refuses it
      if (err instanceof FileRefused) throw new AgentError('PathEscape', `input file \`${key}\` (${e.path}) is refused: ${err.message}`, { key, path }, false);
      throw new AgentError('MissingInputFile', `input file \`${key}\` (${path}) cannot be staged: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { key, path }, false);
    }
  }
}

/** AIP-16 step 6: each declared output file that exists, back to the workspace (tokens replaced once); missing ones are a warning. */
async function syncOut(files: Record<string, FileContractEntry>, root: ScratchRoot, values: Readonly<Record<string, string>>, scope: StageScope, ctx: AgentContext): Promise<void> {
  for (const [key, e] of Object.entries(files)) {
    let path = e.path;
    try {
      path = expandPath(e.path, values, scope.item);
      const d = await root.sync(key, path);
      if (d === 'missing') {
        ctx.log(`warning: declared output file \`${key}\` (${path}) was not produced`);
        continue;
      }
      ctx.record('file_written', { key, path, ...d });
    } catch (err) {
      // refused (out of the workspace) or not written: logged, never the end of the call (AIP-16)
      ctx.log(`warning: output file \`${key}\` could not be synced to ${path}: ${(err as Error).message}`);
    }
  }
}

function contractFor<In, Out, R>(def: AgentDefinition<In, Out, R>, io: IOHandle<In, Out>): AgentContract {
  const c = emptyContract({ kind: 'typescript', at: { path: [] } });
  c.agentId = def.id;
  if (Object.keys(io.inputs).some((k) => k !== '$schema')) c.input = { schema: io.inputs as JsonObject, at: { path: ['io', 'inputs'] } };
  if (Object.keys(io.outputs).some((k) => k !== '$schema')) c.output = { schema: io.outputs as JsonObject, at: { path: ['io', 'outputs'] } };
  const unchecked = { ...(io.unchecked.inputs !== undefined ? { input: io.unchecked.inputs } : {}), ...(io.unchecked.outputs !== undefined ? { output: io.unchecked.outputs } : {}) };
  if (unchecked.input !== undefined || unchecked.output !== undefined) c.unchecked = unchecked;
  const effects = (list: FileDecl[] | undefined, key: string, files: Record<string, FileContractEntry>): FileEffect[] => [
    ...(list ?? []).map((f, i) => ({ ...(typeof f === 'string' ? { path: f } : f), at: { path: ['sideEffects', key, i] } })),
    // AIP-16's file contract: staged inputs are reads, synced outputs are writes
    ...Object.entries(files).map(([k, e]) => ({ path: e.path, at: { path: ['io', key === 'filesRead' ? 'inputsFiles' : 'outputsFiles', k] }, synced: true as const })),
  ];
  // AIP-16 files: the engine stages and syncs them as it does a phase's (engine/files.ts)
  const list = (files: Record<string, FileContractEntry>): FileEntry[] => Object.entries(files).map(([key, e]) => ({ key, path: e.path, ...(e.mode !== undefined ? { mode: e.mode } : {}), ...(e.contentType !== undefined ? { contentType: e.contentType } : {}) }));
  if (Object.keys(io.inputsFiles).length + Object.keys(io.outputsFiles).length > 0) c.files = { inputs: list(io.inputsFiles), outputs: list(io.outputsFiles), ...(def.workspace !== undefined ? { workspace: def.workspace } : {}) };
  c.sideEffects = {
    filesWritten: effects(def.sideEffects?.filesWritten, 'filesWritten', io.outputsFiles),
    filesRead: effects(def.sideEffects?.filesRead, 'filesRead', io.inputsFiles),
    externalCalls: (def.sideEffects?.externalCalls ?? []).map((name, i) => ({ name, at: { path: ['sideEffects', 'externalCalls', i] } })),
  };
  if (def.resources) {
    // a field given as undefined is left out, as if not given (exactOptionalPropertyTypes callers pass `x ?? undefined`)
    c.resources = Object.fromEntries(Object.entries(def.resources).filter(([, v]) => v !== undefined));
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

/** `_cost` is spend, not an output (engine/attempt.ts removes it before recording): a schema checks the rest. */
export function withoutCost(out: unknown): unknown {
  if (!isPlainObject(out) || !Object.prototype.hasOwnProperty.call(out, '_cost')) return out;
  const { _cost: _spend, ...rest } = out;
  return rest;
}
