/**
 * What Baton says to a model: the output section of the system prompt (built from the schema: its
 * required fields, enums and an example), the user message (a blueprint template or the phase's
 * title, description, constraints and input), and the re-prompts after an invalid or cut reply.
 */
import type { Json, JsonObject } from '../../core/json.js';
import { isPlainObject } from '../../core/json.js';
import type { SchemaError } from '../../workflow/json-schema.js';
import type { PhaseModel } from '../../workflow/model.js';

type Schema = Record<string, unknown>;

/** The last section of the system prompt when a schema applies: the spec's heading and words (agent output schema §3.1), then help. */
export function outputSection(schema: Schema): string {
  const lines = [
    '## Required Output Format',
    '',
    'You MUST provide structured output as JSON conforming to this schema:',
    '',
    '```json',
    JSON.stringify(schema, null, 2),
    '```',
    '',
    'Your response MUST be valid JSON that matches this schema exactly. Output ONLY the JSON, no additional text.',
  ];
  const fields = describeFields(schema);
  if (fields.required.length > 0) lines.push('', 'Required fields:', ...fields.required.map((f) => `- ${f}`));
  if (fields.enums.length > 0) lines.push('', 'Allowed values (use exactly these strings):', ...fields.enums.map((f) => `- ${f}`));
  lines.push('', 'An example of the shape (placeholder values; write your own):', '', '```json', JSON.stringify(exampleOf(schema), null, 2), '```');
  lines.push('', 'Use JSON types exactly: numbers unquoted, booleans as true/false, no comments, no trailing commas.');
  return lines.join('\n');
}

/** The output section when the answer is free text (no schema applies). */
export function textSection(): string {
  return '## Output\n\nReply with the answer as plain text.';
}

/**
 * Errors a re-prompt lists: a reply with thousands of wrong items (5,000 bad items gave 10,000 errors)
 * would otherwise fill the model's context with them; past this many, one line counts the rest.
 */
export const REPROMPT_MAX_ERRORS = 50;

/** The re-prompt after an invalid reply, in the spec's sections (§3.3): each error with its path, what was expected and what came. */
export function repromptText(errors: readonly SchemaError[], schema: Schema): string {
  const lines = ['<output-validation-error>', 'Your output did not match the required schema.', '', '## Validation Errors'];
  for (const e of errors.slice(0, REPROMPT_MAX_ERRORS)) {
    const detail = e.expected !== undefined || e.received !== undefined ? ` (expected ${e.expected ?? '?'}, received ${e.received ?? '?'})` : '';
    lines.push(`- ${e.path}: ${e.message}${detail}`);
  }
  if (errors.length > REPROMPT_MAX_ERRORS) lines.push(`- ... and ${errors.length - REPROMPT_MAX_ERRORS} more errors (${errors.length} in all): check every value against the schema`);
  lines.push('', '## Required Schema', '```json', JSON.stringify(schema, null, 2), '```', '', 'Please provide output matching the schema exactly: the complete corrected JSON value only.', '</output-validation-error>');
  return lines.join('\n');
}

/** After a reply cut at max_tokens: not the same re-prompt (the content was not wrong, it was long). */
export function truncationText(maxTokens: number): string {
  return `<output-truncated>\nYour reply was cut off at the ${maxTokens}-token limit before the JSON value was complete. Reply again with the complete JSON value only, shorter: keep every required field, shorten free-text values, no prose.\n</output-truncated>`;
}

/** The user message built from the phase when the blueprint has no `prompt`. */
export function phaseMessage(phase: PhaseModel | undefined, input: JsonObject): string {
  const parts: string[] = [];
  if (phase) {
    parts.push(`# ${phase.title}`);
    if (phase.description) parts.push(phase.description);
    if (phase.constraints.length > 0) parts.push(['Constraints:', ...phase.constraints.map((c) => `- ${typeof c === 'string' ? c : JSON.stringify(c)}`)].join('\n'));
  }
  parts.push(Object.keys(input).length > 0 ? `Input:\n\n\`\`\`json\n${JSON.stringify(input, null, 2)}\n\`\`\`` : 'There is no input.');
  return parts.join('\n\n');
}

const TEMPLATE = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** The names a template uses: `{{input.code}}` -> ['input', 'code']. */
export function templateNames(template: string): { ref: string; path: string[]; offset: number }[] {
  const out: { ref: string; path: string[]; offset: number }[] = [];
  TEMPLATE.lastIndex = 0;
  for (let m = TEMPLATE.exec(template); m !== null; m = TEMPLATE.exec(template)) out.push({ ref: m[1]!, path: m[1]!.split('.'), offset: m.index });
  return out;
}

export type RenderResult = { ok: true; text: string } | { ok: false; unknown: string[] };

/** Fills `{{input.x.y}}`: strings as they are, other values as JSON. Unknown names are an error. */
export function renderTemplate(template: string, input: JsonObject): RenderResult {
  const unknown: string[] = [];
  const text = template.replace(TEMPLATE, (_all, ref: string) => {
    const path = ref.split('.');
    if (path[0] !== 'input') {
      unknown.push(ref);
      return '';
    }
    let v: Json | undefined = input;
    for (const seg of path.slice(1)) v = isPlainObject(v) ? v[seg] : Array.isArray(v) && /^\d+$/.test(seg) ? v[Number(seg)] : undefined;
    if (v === undefined) {
      unknown.push(ref);
      return '';
    }
    return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  });
  return unknown.length > 0 ? { ok: false, unknown } : { ok: true, text };
}

// --- schema walking ------------------------------------------------------------------------

interface FieldNotes {
  required: string[];
  enums: string[];
}

function describeFields(schema: Schema): FieldNotes {
  const notes: FieldNotes = { required: [], enums: [] };
  walk(schema, schema, '', notes, 0, new Set());
  return { required: notes.required.slice(0, 40), enums: notes.enums.slice(0, 40) };
}

function walk(node: unknown, root: Schema, at: string, notes: FieldNotes, depth: number, refs: Set<string>): void {
  if (!isPlainObject(node) || depth > 8) return;
  const n = deref(node, root, refs);
  if (!n) return;
  if (Array.isArray(n['enum'])) notes.enums.push(`${at || '(the value)'}: ${n['enum'].map((v) => JSON.stringify(v)).join(' | ')}`);
  const props = isPlainObject(n['properties']) ? n['properties'] : {};
  const req = Array.isArray(n['required']) ? n['required'].filter((r): r is string => typeof r === 'string') : [];
  for (const r of req) notes.required.push(`${at ? `${at}.` : ''}${r} (${typeName(props[r], root)})`);
  for (const [k, v] of Object.entries(props)) walk(v, root, at ? `${at}.${k}` : k, notes, depth + 1, new Set(refs));
  if (n['items'] !== undefined) walk(n['items'], root, `${at}[]`, notes, depth + 1, new Set(refs));
}

function typeName(node: unknown, root: Schema): string {
  if (!isPlainObject(node)) return 'any';
  const n = deref(node, root, new Set()) ?? node;
  if (Array.isArray(n['enum'])) return 'one of the allowed values';
  if (typeof n['type'] === 'string') return n['type'] === 'array' && isPlainObject(n['items']) ? `array of ${typeName(n['items'], root)}` : n['type'];
  if (Array.isArray(n['type'])) return n['type'].join(' or ');
  return 'any';
}

function deref(node: Record<string, unknown>, root: Schema, refs: Set<string>): Record<string, unknown> | undefined {
  let n = node;
  for (let i = 0; i < 16 && typeof n['$ref'] === 'string'; i++) {
    const ref = n['$ref'];
    if (refs.has(ref)) return undefined; // recursive: stop
    refs.add(ref);
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
    const target = m ? (root[m[1]!] as Record<string, unknown> | undefined)?.[decodeURIComponent(m[2]!)] : undefined;
    if (!isPlainObject(target)) return undefined;
    n = target;
  }
  return n;
}

/** A value built to fit the schema's shape (placeholders; never shown as real data). */
export function exampleOf(schema: Schema): Json {
  return example(schema, schema, 0, new Set());
}

function example(node: unknown, root: Schema, depth: number, refs: Set<string>): Json {
  if (!isPlainObject(node) || depth > 6) return null;
  const n = deref(node, root, refs);
  if (!n) return null;
  if ('const' in n) return n['const'] as Json;
  if (Array.isArray(n['enum']) && n['enum'].length > 0) return n['enum'][0] as Json;
  if (Array.isArray(n['examples']) && n['examples'].length > 0) return n['examples'][0] as Json;
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) {
    const alts = n[k];
    if (Array.isArray(alts) && alts.length > 0) {
      const pick: unknown = (alts as unknown[]).find((a) => !(isPlainObject(a) && a['type'] === 'null')) ?? alts[0];
      return example(pick, root, depth + 1, new Set(refs));
    }
  }
  const t = Array.isArray(n['type']) ? (n['type'].find((x) => x !== 'null') as string | undefined) : (n['type'] as string | undefined);
  const type = t ?? (isPlainObject(n['properties']) ? 'object' : n['items'] !== undefined ? 'array' : undefined);
  switch (type) {
    case 'object': {
      const out: JsonObject = {};
      const props = isPlainObject(n['properties']) ? n['properties'] : {};
      const req = new Set(Array.isArray(n['required']) ? (n['required'] as unknown[]) : []);
      const keys = Object.keys(props);
      for (const k of keys) if (req.has(k) || keys.length <= 8) out[k] = example(props[k], root, depth + 1, new Set(refs));
      return out;
    }
    case 'array': {
      const min = typeof n['minItems'] === 'number' ? Math.min(n['minItems'], 3) : 1;
      const item: unknown = Array.isArray(n['prefixItems']) ? (n['prefixItems'] as unknown[])[0] : n['items'];
      return Array.from({ length: Math.max(1, min) }, () => example(item, root, depth + 1, new Set(refs)));
    }
    case 'string':
      return typeof n['minLength'] === 'number' && n['minLength'] > 3 ? 'x'.repeat(n['minLength']) : '...';
    case 'integer':
      return typeof n['minimum'] === 'number' ? Math.ceil(n['minimum']) : 0;
    case 'number':
      return typeof n['minimum'] === 'number' ? n['minimum'] : 0;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return null;
  }
}
