import type { DiagnosticCode } from '../core/codes.js';
import type { Path } from '../core/path.js';

export type Severity = 'error' | 'warning';

/** A byte-offset range [start, end) in a source text. Line and column are computed only when rendering. */
export type Range = readonly [start: number, end: number];

/**
 * A problem with a user's file or input: plain data, collected, never thrown while compiling.
 * `path` locates the offending node in the document; `range` is filled in from it by the workflow layer.
 */
export interface Diagnostic {
  severity: Severity;
  code: DiagnosticCode;
  message: string;
  hint?: string;
  path: Path;
  range?: Range;
  /** The file `path` and `range` refer to when it is not the workflow itself (a contract file); already positioned. */
  file?: string;
  /** Where the path should point: at the node's key (e.g. an unknown key) or its value (the default). */
  target?: 'key' | 'value';
  /** The RFC error class this diagnostic stands for, e.g. `InputWiringError`. */
  error?: string;
  /** RFC fields carried by the diagnostic (`phase_name`, `invalid_refs`, `suggestion`, ...). */
  data?: Record<string, unknown>;
  /** Other places that matter (the first occurrence of a duplicate key). */
  related?: { message: string; path: Path; range?: Range; target?: 'key' | 'value' }[];
}

export function error(code: DiagnosticCode, path: Path, message: string, extra: Partial<Diagnostic> = {}): Diagnostic {
  return { severity: 'error', code, message, path, ...extra };
}

export function warning(code: DiagnosticCode, path: Path, message: string, extra: Partial<Diagnostic> = {}): Diagnostic {
  return { severity: 'warning', code, message, path, ...extra };
}

export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === 'error');
}
