/**
 * The named errors of RFC-0024 §4 (and RFC-0026's UpstreamIntentSuspendedError) as classes for the
 * library API. `toJSON()` is exactly the event payload of RFC-0024 §4: `error`, the RFC fields,
 * `message`. In the event log and the store they live as those plain payloads (never rely on class
 * identity after a round trip); `fromPayload` rebuilds a class instance from one.
 */
import type { ValueIssue } from '../types/api.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';

export interface OutputIssue {
  /** The output key the problem belongs to. */
  key: string;
  /** JSON Pointer from the output object: `/findings/0/confidence`. */
  pointer: string;
  kind: ValueIssue['kind'] | 'missing';
  expected: string;
  actual: string;
  message: string;
}

export abstract class WorkflowError extends Error {
  abstract readonly error: string;
  abstract toJSON(): Record<string, unknown>;
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
  toJSON(): Record<string, unknown> {
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
  toJSON(): Record<string, unknown> {
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
  toJSON(): Record<string, unknown> {
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
  toJSON(): Record<string, unknown> {
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
  toJSON(): Record<string, unknown> {
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
  toJSON(): Record<string, unknown> {
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
