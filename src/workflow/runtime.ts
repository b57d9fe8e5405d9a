/**
 * The runtime checks of RFC-0024 as pure functions on a compiled phase, usable by any executor:
 * claim-time resolution (§3.1, with the RFC-0026 suspension patch), pre-handoff population (§3.2)
 * and completion-time validation (§3.3). Nothing here does I/O or keeps state.
 */
import { isPlainObject, jsonTypeOf, ownGet, type Json, type JsonObject } from '../core/json.js';
import { isJsonValue, jsonIssues } from '../types/compiled.js';
import { MissingOutputError, OutputTypeMismatchError, UnresolvableInputError, UpstreamIntentSuspendedError, type OutputIssue } from './errors.js';
import type { InputBinding, PhaseModel } from './model.js';

/** Recorded outputs of completed upstream phases, by phase name. */
export type UpstreamOutputs = Readonly<Record<string, unknown>> | ReadonlyMap<string, unknown>;

export interface ResolveOptions {
  /** The run's trigger payload (`$trigger.*`). */
  trigger?: unknown;
  /** The phase's initial state (`$initial_state.*`); defaults to the phase's declared `initial_state`. */
  initialState?: unknown;
  taskId?: string | undefined;
  /** A fan-out item (`$item`, `$index`): its element and 0-based position. */
  item?: FanOutItem | undefined;
}

/** The element of a `for_each` array one item task runs on. */
export interface FanOutItem {
  value: unknown;
  index: number;
}

export interface ClaimOptions extends ResolveOptions {
  /** Upstream phases currently suspended awaiting input (RFC-0026): name -> intent id and resume estimate. */
  suspended?: Readonly<Record<string, { intentId?: string | undefined; expectedResumeAt?: string | null | undefined }>> | undefined;
}

function upstreamOf(outputs: UpstreamOutputs, phase: string): unknown {
  if (outputs instanceof Map) return outputs.get(phase);
  return ownGet(outputs, phase);
}

/** What follow() finds where the path leads nowhere. */
const NOT_FOUND: unique symbol = Symbol('not found');

/** The value at `key` and then `path` under `value` (no key: `path` alone), or NOT_FOUND. Every input of every claim goes through here: no arrays, no result objects. */
function follow(value: unknown, key: string | undefined, path: readonly string[]): unknown {
  let v = key === undefined ? value : step(value, key);
  for (let i = 0; i < path.length && v !== NOT_FOUND; i++) v = step(v, path[i]!);
  return v;
}

function step(v: unknown, seg: string): unknown {
  if (Array.isArray(v)) {
    if (!/^\d+$/.test(seg)) return NOT_FOUND;
    const i = Number(seg);
    if (i >= v.length) return NOT_FOUND;
    v = v[i];
  } else if (isPlainObject(v)) {
    if (!Object.prototype.hasOwnProperty.call(v, seg)) return NOT_FOUND;
    v = v[seg];
  } else return NOT_FOUND;
  return v === undefined ? NOT_FOUND : v;
}

export type BindingResolution = { ok: true; value: Json } | { ok: false; reason: string };

/** Resolves one input binding. Static inputs must be non-null (§3.1.3); upstream keys must exist (§3.1.2). */
export function resolveBinding(b: InputBinding, upstream: UpstreamOutputs, trigger: unknown, initialState: unknown, item?: FanOutItem): BindingResolution {
  const src = b.source;
  if (src.kind === 'item' || src.kind === 'index') {
    // the compiler allows these only in a `for_each` phase, whose items carry their element
    if (!item) return { ok: false, reason: `'${b.ref}' is read outside a fan-out item` };
    if (src.kind === 'index') return { ok: true, value: item.index };
    const r = follow(item.value, undefined, src.path);
    if (r === NOT_FOUND) return { ok: false, reason: `item ${item.index} has no value for '${b.ref}'` };
    return { ok: true, value: r as Json };
  }
  if (src.kind === 'phase') {
    const out = upstreamOf(upstream, src.phase);
    if (out === undefined) return { ok: false, reason: `upstream phase '${src.phase}' has not completed` };
    const r = follow(out, src.key, src.path);
    if (r === NOT_FOUND) {
      if (src.path.length === 0 || follow(out, src.key, []) === NOT_FOUND) return { ok: false, reason: `upstream phase '${src.phase}' did not record output key '${src.key}'` };
      return { ok: false, reason: `'${b.ref}' does not exist in the output of upstream phase '${src.phase}'` };
    }
    return { ok: true, value: r as Json };
  }
  const root = src.kind === 'trigger' ? trigger : initialState;
  const label = src.kind === 'trigger' ? 'the trigger payload' : 'the initial state';
  const r = follow(root, src.key, src.path);
  if (r === NOT_FOUND) return { ok: false, reason: `${label} has no value for '${[src.key, ...src.path].join('.')}'` };
  if (r === null) return { ok: false, reason: `${label} has null for '${[src.key, ...src.path].join('.')}'; static inputs must be non-null` };
  return { ok: true, value: r as Json };
}

/** RFC-0024 §3.1 for references that cannot be resolved (an input's, a `for_each`'s): one error naming each. */
export function unresolvable(phase: PhaseModel, taskId: string, failures: { ref: string; reason: string }[]): UnresolvableInputError {
  const refs = failures.map((f) => f.ref);
  const message = failures.length === 1 ? `Task claim rejected: ${failures[0]!.reason}` : `Task claim rejected: ${failures.length} inputs could not be resolved: ${failures.map((f) => f.reason).join('; ')}`;
  return new UnresolvableInputError(taskId, phase.name, refs, message);
}

/**
 * §3.2: builds ctx.input, holding exactly the declared keys. Throws UnresolvableInputError naming every
 * reference that does not resolve. A phase without `inputs` gets `{}`.
 */
export function resolveTaskInputs(phase: PhaseModel, upstreamOutputs: UpstreamOutputs, opts: ResolveOptions = {}): JsonObject {
  const r = tryResolveTaskInputs(phase, upstreamOutputs, opts);
  if (!r.ok) throw r.error;
  return r.input;
}

/** The non-throwing form of resolveTaskInputs, for executors' hot paths. */
export function tryResolveTaskInputs(phase: PhaseModel, upstreamOutputs: UpstreamOutputs, opts: ResolveOptions = {}): { ok: true; input: JsonObject } | { ok: false; error: UnresolvableInputError } {
  const input: JsonObject = {};
  if (!phase.inputs) return { ok: true, input };
  const initialState = opts.initialState ?? phase.initialState;
  let failures: { ref: string; reason: string }[] | undefined;
  for (const b of phase.inputs) {
    const r = resolveBinding(b, upstreamOutputs, opts.trigger, initialState, opts.item);
    if (r.ok) input[b.name] = r.value;
    else if (!failures?.some((f) => f.ref === b.ref)) (failures ??= []).push({ ref: b.ref, reason: r.reason }); // two inputs, one ref: listed once
  }
  if (failures) return { ok: false, error: unresolvable(phase, opts.taskId ?? `task_${phase.name}`, failures) };
  return { ok: true, input };
}

/**
 * §3.1 claim-time validation: UpstreamIntentSuspendedError when an input reads a suspended upstream
 * phase (checked first), then UnresolvableInputError for every unresolvable reference. Returns the
 * resolved input on success.
 */
export function validateClaimInputs(phase: PhaseModel, upstreamOutputs: UpstreamOutputs, opts: ClaimOptions = {}): JsonObject {
  const taskId = opts.taskId ?? `task_${phase.name}`;
  if (opts.suspended && phase.inputs) {
    for (const b of phase.inputs) {
      if (b.source.kind !== 'phase') continue;
      const s = ownGet(opts.suspended, b.source.phase) as { intentId?: string; expectedResumeAt?: string | null } | undefined;
      if (s) throw new UpstreamIntentSuspendedError(taskId, phase.name, s.intentId ?? b.source.phase, s.expectedResumeAt ?? null);
    }
  }
  return resolveTaskInputs(phase, upstreamOutputs, { ...opts, taskId });
}

export type OutputCheck = { ok: true; output: JsonObject } | { ok: false; error: MissingOutputError | OutputTypeMismatchError };

/**
 * §3.3 completion-time validation, all outputs at once: MissingOutputError when any required key is
 * missing, otherwise OutputTypeMismatchError for the first mismatched key in declaration order. Both
 * carry every problem in `issues`, each with a JSON Pointer into the output. Extra keys are accepted
 * (they must still be JSON). A phase without `outputs` accepts any object, or nothing.
 */
export function checkTaskOutputs(phase: PhaseModel, output: unknown, opts: { taskId?: string } = {}): OutputCheck {
  const taskId = opts.taskId ?? `task_${phase.name}`;
  const decls = phase.outputs;
  if (output === undefined || output === null) {
    if (!decls || decls.every((d) => !d.required)) return { ok: true, output: {} };
  } else if (phase.outputType ? phase.outputType.check(output) : isPlainObject(output) && isJsonValue(output)) {
    return { ok: true, output: output as JsonObject };
  }

  const obj = isPlainObject(output) ? output : undefined;
  // Something that is not an object (an array, a string) is a mismatch at the top, whatever is declared:
  // "key 'n' missing" would hide what the agent did. Nothing at all with required keys is MissingOutputError.
  if (!obj && ((output !== undefined && output !== null) || !decls || decls.every((d) => !d.required))) {
    const actual = jsonTypeOf(output);
    return { ok: false, error: new OutputTypeMismatchError(taskId, phase.name, '', 'object', actual, [{ key: '', pointer: '', kind: 'type', expected: 'object', actual, message: `the agent returned ${actual}, expected an object of outputs` }], `Task completion rejected: the agent returned ${actual}, not an object of outputs`) };
  }

  const issues: OutputIssue[] = [];
  const missing: string[] = [];
  let firstMismatch: { key: string; keyPointer: string; expected: string; actual: string; issue: OutputIssue } | undefined;
  for (const d of decls ?? []) {
    const v = obj ? ownGet(obj, d.key) : undefined;
    const pointer = `/${d.key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (v === undefined) {
      if (d.required) {
        missing.push(d.key);
        issues.push({ key: d.key, pointer, kind: 'missing', expected: d.type.text, actual: 'undefined', message: `required output \`${d.key}\` (${d.type.text}) is missing` });
      }
      continue;
    }
    for (const i of d.type.issues(v)) {
      const issue: OutputIssue = { key: d.key, pointer: pointer + i.pointer, kind: i.kind, expected: i.expected, actual: i.actual, message: i.message.replace(i.pointer === '' ? 'the value' : `\`${i.pointer}\``, () => `\`${pointer + i.pointer}\``) }; // a function: `$&` in a key is not a pattern
      issues.push(issue);
      firstMismatch ??= { key: d.key, keyPointer: pointer, expected: d.type.text, actual: i.pointer === '' ? i.actual : jsonTypeOf(v), issue };
    }
  }
  if (obj) {
    const declared = new Set((decls ?? []).map((d) => d.key));
    for (const [k, v] of Object.entries(obj)) {
      if (declared.has(k) || v === undefined || isJsonValue(v)) continue;
      const pointer = `/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      // deep: `/extra/0/at` names the Date inside the extra key, not just the key
      for (const i of jsonIssues(v, 'JSON')) {
        const p = pointer + i.pointer;
        const where = i.pointer === '' ? '' : ` at \`${p}\``;
        const issue: OutputIssue = { key: k, pointer: p, kind: 'not-json', expected: 'JSON', actual: i.actual, message: `extra output \`${k}\` is not JSON${where} (${i.actual}) and cannot be recorded` };
        issues.push(issue);
        firstMismatch ??= { key: k, keyPointer: pointer, expected: 'JSON', actual: jsonTypeOf(v), issue };
      }
    }
  }
  if (missing.length > 0) return { ok: false, error: new MissingOutputError(taskId, phase.name, missing, issues) };
  if (firstMismatch) {
    const f = firstMismatch;
    // an enum value out of its list says which value and which list (`got string` alone hides both)
    const deep = f.issue.pointer !== f.keyPointer || f.issue.kind === 'enum' ? `: ${f.issue.message}` : '';
    const message = `Task completion rejected: output key '${f.key}' expected ${f.expected}, got ${f.actual}${deep}`;
    return { ok: false, error: new OutputTypeMismatchError(taskId, phase.name, f.key, f.expected, f.actual, issues, message) };
  }
  // the fast check failed but no issue was found: cannot happen for well-formed types; be safe
  return obj ? { ok: true, output: obj as JsonObject } : { ok: true, output: {} };
}

/** Throwing form of checkTaskOutputs: returns the output to record. */
export function validateTaskOutputs(phase: PhaseModel, output: unknown, opts: { taskId?: string } = {}): JsonObject {
  const r = checkTaskOutputs(phase, output, opts);
  if (!r.ok) throw r.error;
  return r.output;
}
