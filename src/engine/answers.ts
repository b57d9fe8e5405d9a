/** Checks an answer to an input gate against its choices or its JSON Schema (2020-12). */
import type { Ajv2020, ValidateFunction } from 'ajv/dist/2020.js';
import { ajv2020 } from '../core/ajv.js';
import type { Json, JsonObject } from '../core/json.js';

let ajv: Ajv2020 | undefined;
const compiled = new Map<string, ValidateFunction | string>();

/** undefined when the answer is acceptable, else why not. */
export function checkAnswer(value: Json, choices: Json[] | undefined, schema: JsonObject | undefined): string | undefined {
  if (choices !== undefined && choices.length > 0) {
    const text = canonical(value);
    if (!choices.some((c) => canonical(c) === text)) return `${JSON.stringify(value)} is not one of the choices: ${choices.map((c) => JSON.stringify(c)).join(', ')}`;
  }
  if (schema !== undefined) {
    const key = JSON.stringify(schema);
    let v = compiled.get(key);
    if (v === undefined) {
      try {
        ajv ??= new (ajv2020())({ allErrors: true, strict: false });
        v = ajv.compile(schema);
      } catch (e) {
        v = `the gate's schema does not compile: ${(e as Error).message}`;
      }
      compiled.set(key, v);
    }
    if (typeof v === 'string') return v;
    if (!v(value)) return (v.errors ?? []).map((e) => `${e.instancePath === '' ? 'the value' : `\`${e.instancePath}\``} ${e.message ?? 'is invalid'}`).join('; ');
  }
  return undefined;
}

/** JSON text with object keys sorted, so {a,b} equals {b,a}. */
function canonical(v: Json): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k]!)}`).join(',')}}`;
}
