/**
 * Standard Schema V1 (standardschema.dev), vendored as its authors intend: the interface zod 3.24+
 * and 4, valibot 1, arktype 2 and others implement under `~standard`. Flattened here (the spec
 * writes it with a namespace, which this codebase avoids); structurally the same. With it, the
 * optional Standard JSON Schema extension (`~standard.jsonSchema`), which zod 4.2+ and arktype 2.1+
 * implement.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': StandardSchemaProps<Input, Output>;
}

export interface StandardSchemaProps<Input = unknown, Output = Input> {
  /** The version number of the standard (1). */
  readonly version: 1;
  /** The vendor name of the schema library (`zod`, `valibot`, `arktype`). */
  readonly vendor: string;
  /** Validates an unknown input value. */
  readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
  /** Inferred types associated with the schema (type-level only). */
  readonly types?: { readonly input: Input; readonly output: Output } | undefined;
}

export type StandardResult<Output> = { readonly value: Output; readonly issues?: undefined } | { readonly issues: readonly StandardIssue[] };

export interface StandardIssue {
  readonly message: string;
  readonly path?: readonly (PropertyKey | { readonly key: PropertyKey })[] | undefined;
}

/** The type a Standard Schema produces (after transforms). */
export type StandardOutput<S extends StandardSchemaV1> = NonNullable<S['~standard']['types']>['output'];

/** Standard JSON Schema: `~standard.jsonSchema.input/output({ target })`; each may throw when a type has no JSON Schema. */
export interface StandardJsonSchemaConverter {
  readonly input: (options: { readonly target: string; readonly libraryOptions?: Record<string, unknown> }) => Record<string, unknown>;
  readonly output: (options: { readonly target: string; readonly libraryOptions?: Record<string, unknown> }) => Record<string, unknown>;
}

export function isStandardSchema(v: unknown): v is StandardSchemaV1 {
  if ((typeof v !== 'object' && typeof v !== 'function') || v === null) return false;
  const s = (v as { '~standard'?: unknown })['~standard'];
  return typeof s === 'object' && s !== null && typeof (s as { validate?: unknown }).validate === 'function';
}
