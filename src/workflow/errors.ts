/**
 * The named errors of RFC-0024 §4 (and RFC-0026's UpstreamIntentSuspendedError) as classes for the
 * library API. `toJSON()` is exactly the event payload of RFC-0024 §4: `error`, the RFC fields,
 * `message`. In the event log and the store they live as those plain payloads (never rely on class
 * identity after a round trip); `fromPayload` rebuilds a class instance from one.
 */
import type { ValueIssue } from '../types/api.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';

/** A type alias (not an interface), so that the payloads holding it are JSON (`JsonObject`) to TypeScript. */
export type OutputIssue = {
  /** The output key the problem belongs to. */
  key: string;
  /** JSON Pointer from the output object: `/findings/0/confidence`. */
  pointer: string;
  kind: ValueIssue['kind'] | 'missing';
  expected: string;
  actual: string;
  message: string;
};

/** `MissingOutputError.toJSON()`: the RFC-0024 §4 payload (and of `task.attempt_failed`'s `failure.details`). */
export type MissingOutputPayload = { error: 'MissingOutputError'; task_id: string; phase_name: string; missing_keys: string[]; issues: OutputIssue[]; message: string };
/** `OutputTypeMismatchError.toJSON()`. */
export type OutputTypeMismatchPayload = {
  error: 'OutputTypeMismatchError';
  task_id: string;
  phase_name: string;
  key: string;
  expected_type: string;
  actual_type: string;
  issues: OutputIssue[];
  message: string;
};
/** `UnresolvableInputError.toJSON()`. */
export type UnresolvableInputPayload = { error: 'UnresolvableInputError'; task_id: string; phase_name: string; unresolvable_refs: string[]; message: string };
/** `UpstreamIntentSuspendedError.toJSON()`. */
export type UpstreamIntentSuspendedPayload = {
  error: 'UpstreamIntentSuspendedError';
  task_id: string;
  phase_name: string;
  suspended_intent_id: string;
  expected_resume_at: string | null;
  message: string;
};
/** `InputWiringError.toJSON()`. */
export type InputWiringPayload = { error: 'InputWiringError'; phase_name: string; invalid_refs: string[]; suggestion: string; message: string };
/** `WorkflowValidationError.toJSON()`. */
export type WorkflowValidationPayload = { error: 'WorkflowValidationError'; file: string; diagnostics: Diagnostic[]; message: string };
/** What `toJSON()` of a WorkflowError gives: one of the payloads above, narrowed on `error`. */
export type WorkflowErrorPayload = MissingOutputPayload | OutputTypeMismatchPayload | UnresolvableInputPayload | UpstreamIntentSuspendedPayload | InputWiringPayload | WorkflowValidationPayload;

export abstract class WorkflowError extends Error {
  abstract readonly error: WorkflowErrorPayload['error'];
  abstract toJSON(): WorkflowErrorPayload;
}

export class MissingOutputError extends WorkflowError {
  readonly error = 'MissingOutputError';
  override readonly name = 'MissingOutputError';
  constructor(
    readonly task_id: string,
    readonly phase_name: string,
    readonly missing_keys: string[],
    readonly issues: OutputIssue[] = [],
    message?: string,
  ) {
    super(
      message ??
        (missing_keys.length === 1
          ? `Task completion rejected: declared output key '${missing_keys[0]}' was not present in agent return value`
          : `Task completion rejected: declared output keys ${missing_keys.map((k) => `'${k}'`).join(', ')} were not present in agent return value`),
    );
  }
  toJSON(): MissingOutputPayload {
    return { error: this.error, task_id: this.task_id, phase_name: this.phase_name, missing_keys: this.missing_keys, issues: this.issues, message: this.message };
  }
}

export class OutputTypeMismatchError extends WorkflowError {
  readonly error = 'OutputTypeMismatchError';
  override readonly name = 'OutputTypeMismatchError';
  constructor(
    readonly task_id: string,
    readonly phase_name: string,
    readonly key: string,
    readonly expected_type: string,
    readonly actual_type: string,
    readonly issues: OutputIssue[] = [],
    message?: string,
  ) {
    super(message ?? `Task completion rejected: output key '${key}' expected ${expected_type}, got ${actual_type}`);
  }
  toJSON(): OutputTypeMismatchPayload {
    return {
      error: this.error,
      task_id: this.task_id,
      phase_name: this.phase_name,
      key: this.key,
      expected_type: this.expected_type,
      actual_type: this.actual_type,
      issues: this.issues,
      message: this.message,
    };
  }
}

export class UnresolvableInputError extends WorkflowError {
  readonly error = 'UnresolvableInputError';
  override readonly name = 'UnresolvableInputError';
  constructor(
    readonly task_id: string,
    readonly phase_name: string,
    readonly unresolvable_refs: string[],
    message?: string,
  ) {
    super(message ?? `Task claim rejected: input${unresolvable_refs.length === 1 ? '' : 's'} ${unresolvable_refs.map((r) => `'${r}'`).join(', ')} could not be resolved`);
  }
  toJSON(): UnresolvableInputPayload {
    return { error: this.error, task_id: this.task_id, phase_name: this.phase_name, unresolvable_refs: this.unresolvable_refs, message: this.message };
  }
}

export class UpstreamIntentSuspendedError extends WorkflowError {
  readonly error = 'UpstreamIntentSuspendedError';
  override readonly name = 'UpstreamIntentSuspendedError';
  constructor(
    readonly task_id: string,
    readonly phase_name: string,
    readonly suspended_intent_id: string,
    readonly expected_resume_at: string | null,
    message?: string,
  ) {
    super(message ?? `Task claim rejected: upstream intent '${suspended_intent_id}' is suspended awaiting input`);
  }
  toJSON(): UpstreamIntentSuspendedPayload {
    return {
      error: this.error,
      task_id: this.task_id,
      phase_name: this.phase_name,
      suspended_intent_id: this.suspended_intent_id,
      expected_resume_at: this.expected_resume_at,
      message: this.message,
    };
  }
}

export class InputWiringError extends WorkflowError {
  readonly error = 'InputWiringError';
  override readonly name = 'InputWiringError';
  constructor(
    readonly phase_name: string,
    readonly invalid_refs: string[],
    readonly suggestion: string,
    message?: string,
  ) {
    super(message ?? `Phase '${phase_name}' has invalid input mapping${invalid_refs.length === 1 ? '' : 's'}: ${invalid_refs.join(', ')}`);
  }
  toJSON(): InputWiringPayload {
    return { error: this.error, phase_name: this.phase_name, invalid_refs: this.invalid_refs, suggestion: this.suggestion, message: this.message };
  }
}

/** Thrown by the throwing edge (`WorkflowSpec.fromYaml`): carries every diagnostic, errors and warnings. */
export class WorkflowValidationError extends WorkflowError {
  readonly error = 'WorkflowValidationError';
  override readonly name = 'WorkflowValidationError';
  constructor(
    readonly file: string,
    readonly diagnostics: Diagnostic[],
    message?: string,
  ) {
    const errors = diagnostics.filter((d) => d.severity === 'error');
    const first = errors[0];
    super(message ?? `${file}: ${errors.length} error${errors.length === 1 ? '' : 's'}${first ? ` (first: ${first.code}: ${first.message})` : ''}`);
  }
  /** The InputWiringError diagnostics, as error instances. */
  get inputWiringErrors(): InputWiringError[] {
    return this.diagnostics
      .filter((d) => d.error === 'InputWiringError')
      .map((d) => {
        const data = d.data ?? {};
        return new InputWiringError(str(data['phase_name']), (data['invalid_refs'] as string[] | undefined) ?? [], str(data['suggestion']), d.message);
      });
  }
  toJSON(): WorkflowValidationPayload {
    return { error: this.error, file: this.file, diagnostics: this.diagnostics, message: this.message };
  }
}

/** Rebuilds a class instance from an event payload (after a store round trip). */
export function fromPayload(p: Record<string, unknown>): WorkflowError | undefined {
  const s = (k: string): string => str(p[k]);
  const msg = typeof p['message'] === 'string' ? p['message'] : undefined;
  switch (p['error']) {
    case 'MissingOutputError':
      return new MissingOutputError(s('task_id'), s('phase_name'), (p['missing_keys'] as string[]) ?? [], (p['issues'] as OutputIssue[]) ?? [], msg);
    case 'OutputTypeMismatchError':
      return new OutputTypeMismatchError(s('task_id'), s('phase_name'), s('key'), s('expected_type'), s('actual_type'), (p['issues'] as OutputIssue[]) ?? [], msg);
    case 'UnresolvableInputError':
      return new UnresolvableInputError(s('task_id'), s('phase_name'), (p['unresolvable_refs'] as string[]) ?? [], msg);
    case 'UpstreamIntentSuspendedError':
      return new UpstreamIntentSuspendedError(s('task_id'), s('phase_name'), s('suspended_intent_id'), (p['expected_resume_at'] as string | null) ?? null, msg);
    case 'InputWiringError':
      return new InputWiringError(s('phase_name'), (p['invalid_refs'] as string[]) ?? [], s('suggestion'), msg);
    default:
      return undefined;
  }
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v);
}
