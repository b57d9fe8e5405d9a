/**
 * The contract of the type language, used by the workflow compiler and the engine.
 * Implemented in src/types/ (registry.ts and friends).
 */
import type { Json } from '../core/json.js';
import type { Path } from '../core/path.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';

/** A resolved type: the AST of a type expression after names are bound. */
export type TypeNode =
  | { kind: 'primitive'; name: 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'any' | 'null' }
  | { kind: 'named'; name: string } // reference to an entry of the `types` block
  | { kind: 'array'; element: TypeNode } // array<T> and T[]
  | { kind: 'record'; fields: readonly RecordField[] } // a named record's body, or an inline record
  | { kind: 'enum'; values: readonly Json[] }
  | { kind: 'nullable'; inner: TypeNode };

export interface RecordField {
  name: string;
  type: TypeNode;
  required: boolean;
}

/** One problem found when validating a value: a JSON Pointer, the expected type and the actual JSON type name. */
export interface ValueIssue {
  /** JSON Pointer relative to the validated value, e.g. `/findings/0/confidence` ('' is the value itself). */
  pointer: string;
  /** 'type' (wrong JSON type), 'required' (missing record field), 'enum' (value not in the enum), 'not-json'. */
  kind: 'type' | 'required' | 'enum' | 'not-json';
  /** Human-readable expected type, e.g. `number`, `Finding`, `"low" | "high"`. */
  expected: string;
  /** `string`, `number`, `boolean`, `null`, `object`, `array`, or a non-JSON name (`undefined`, `non-finite number`, ...). */
  actual: string;
  message: string;
}

/** A compiled type: built once, validated many times. */
export interface CompiledType {
  readonly node: TypeNode;
  /** Display form, as the user would write it: `Finding[]`, `array<string>`, `RiskLevel`. */
  readonly text: string;
  /** Fast path: true when the value fits. No allocation on success. */
  check(value: unknown): boolean;
  /** Slow path: every problem, each with a JSON Pointer. Empty when the value fits. */
  issues(value: unknown): ValueIssue[];
  /** JSON Schema (2020-12) for this type, with named types in `$defs`. */
  jsonSchema(): Record<string, unknown>;
  /** A value built to fit the type (used by --stub-agents and property tests). */
  sample(): Json;
}

/** Result of following a path (`summary.title`) into a type. */
export type PathLookup = { ok: true; type: CompiledType } | { ok: false; message: string; hint?: string; at: number };

export interface TypeRegistry {
  /** Names declared in the `types` block, in declaration order. */
  readonly names: readonly string[];
  /** Compiles a type reference found at `path` (an output declaration value or a type string). */
  compile(expr: unknown, path: Path): { type: CompiledType | undefined; required: boolean; diagnostics: Diagnostic[] };
  /** Compiles a type from its node (for computed types such as a phase's input record). */
  fromNode(node: TypeNode): CompiledType;
  /** The record of these fields, as `fromNode` gives it, found by its text when it was compiled before (a phase's input and output records). */
  record(fields: readonly { name: string; type: CompiledType; required: boolean }[]): CompiledType;
  /** Follows a property path into a type; `any`/`object` allow any path, records check field names. */
  lookup(type: CompiledType, segments: readonly string[]): PathLookup;
  /** What iterating over a value of this type gives (`for_each`): its element type, `untyped` for a bare `array`, `any`, or `not-array`. */
  elementOf(type: CompiledType): ElementLookup;
}

export type ElementLookup = { kind: 'array'; element: CompiledType } | { kind: 'untyped' } | { kind: 'any' } | { kind: 'not-array' };

/**
 * Builds a registry from the raw `types` block (undefined when absent). `basePath` is where the block
 * sits in the document (`['types']`); diagnostics carry full paths so the workflow layer can position them.
 */
export type CompileTypes = (typesBlock: unknown, basePath: Path) => { registry: TypeRegistry; diagnostics: Diagnostic[] };
