/**
 * `parseAgentReply(text, schema)`: from a model's raw reply to a value that fits the schema, or every
 * reason it does not. Candidates come from the whole reply, fenced blocks and JSON in prose; each is
 * parsed (repaired when broken) and validated; among those that fit, the last one wins. Never throws.
 */
import { jsonIssues } from '../../types/compiled.js';
import { jsonPath, pointerToPath, SchemaCompiler, valueAt, type SchemaError, type SchemaValidator } from '../../workflow/json-schema.js';
import { findCandidates, type CandidateKind } from './extract.js';
import { parseJsonLenient, type RepairKind } from './repair.js';

export type { SchemaError } from '../../workflow/json-schema.js';
export type { RepairKind } from './repair.js';

/** What to validate against: a JSON Schema object, a compiled validator, or a function returning errors. */
export type ReplySchema = Record<string, unknown> | SchemaValidator | ((value: unknown) => SchemaError[]);

export type ParsedReply =
  | { ok: true; value: unknown; repairs: RepairKind[]; source: CandidateKind }
  | {
      ok: false;
      errors: SchemaError[];
      /** The parsed value the errors are about, when some JSON was found. */
      value?: unknown;
      repairs: RepairKind[];
      /** True when no JSON value could be found or parsed at all. */
      noJson: boolean;
    };

const shared = new SchemaCompiler();

export function parseAgentReply(text: string, schema: ReplySchema, compiler: SchemaCompiler = shared): ParsedReply {
  try {
    return parse(text, toCheck(schema, compiler));
  } catch (e) {
    // a bug or a hostile schema: still an answer, never a throw
    return { ok: false, errors: [{ path: '$', message: `the reply could not be checked: ${(e as Error).message}` }], repairs: [], noJson: true };
  }
}

type Check = (value: unknown) => SchemaError[];

function toCheck(schema: ReplySchema, compiler: SchemaCompiler): Check {
  if (typeof schema === 'function') return schema;
  if (isValidator(schema)) return (v) => schema.validate(v);
  const c = compiler.compile(schema);
  if (!c.ok) {
    const problems = c.problems.map((p) => ({ path: '$', message: `the output schema is invalid: ${p.message}` }));
    return () => problems;
  }
  return (v) => c.validator.validate(v);
}

/**
 * A number literal past the double range (`1e400`) parses as Infinity, which JSON Schema's `number` and
 * `integer` accept and JSON cannot hold (it would be stored, and reach the next phase, as null).
 */
function nonFinite(value: unknown): SchemaError[] {
  return jsonIssues(value).map((i) => {
    const path = pointerToPath(i.pointer);
    const v = String(valueAt(value, path));
    return { path: jsonPath(path), message: `${v} is not a finite number (a literal past the double range, such as 1e400)`, expected: 'a finite number', received: v };
  });
}

function isValidator(s: ReplySchema): s is SchemaValidator {
  return typeof (s as Partial<SchemaValidator>).validate === 'function' && typeof (s as Partial<SchemaValidator>).check === 'function';
}

function parse(text: string, check: Check): ParsedReply {
  if (typeof text !== 'string') return { ok: false, errors: [{ path: '$', message: 'the reply is not text' }], repairs: [], noJson: true };
  const candidates = findCandidates(text);
  let winner: { value: unknown; repairs: RepairKind[]; source: CandidateKind } | undefined;
  let lastInvalid: { value: unknown; errors: SchemaError[]; repairs: RepairKind[] } | undefined;
  let lastParseError: string | undefined;
  for (const cand of candidates) {
    const parsed = parseJsonLenient(cand.text);
    if (!parsed.ok) {
      lastParseError = parsed.message;
      continue;
    }
    const inf = nonFinite(parsed.value);
    const errors = [...inf, ...check(parsed.value).filter((e) => !inf.some((i) => i.path === e.path))];
    if (errors.length === 0) winner = { value: parsed.value, repairs: parsed.repairs, source: cand.kind };
    else lastInvalid = { value: parsed.value, errors, repairs: parsed.repairs };
  }
  if (winner) return { ok: true, ...winner };
  if (lastInvalid) return { ok: false, errors: lastInvalid.errors, value: lastInvalid.value, repairs: lastInvalid.repairs, noJson: false };
  const message =
    candidates.length === 0
      ? 'no JSON value found in the reply'
      : `no JSON value could be read from the reply${lastParseError ? `: ${lastParseError}` : ''}`;
  return { ok: false, errors: [{ path: '$', message, expected: 'a JSON value', received: text.trim() === '' ? 'an empty reply' : 'text' }], repairs: [], noJson: true };
}
