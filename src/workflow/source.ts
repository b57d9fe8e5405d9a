/**
 * YAML source -> plain value, with positions on demand.
 *
 * Values come from js-yaml (with a schema matching YAML 1.2 core), the fast path. Positions are
 * built only when a diagnostic needs one, from a second js-yaml pass with a node listener
 * (yaml-index.ts). Hostile input is bounded on the way in: characters YAML does not allow are
 * refused at their offset, nesting is limited (MAX_NESTING) and alias expansion is counted
 * (MAX_ALIAS_NODES), so no later walk over the value can overflow the stack or exhaust memory.
 *
 * When js-yaml rejects the text, a small file (SYNTAX_DETAIL_MAX_CHARS) is re-read by the `yaml`
 * library, which reports every syntax error with its position; a large one gets js-yaml's single
 * positioned error (the `yaml` library needs seconds and gigabytes for a few hostile megabytes).
 * So the `yaml` library is loaded only on that error path (docs/package.md has the figures).
 */
import { createRequire } from 'node:module';
import jsyaml from 'js-yaml';
import type { Path } from '../core/path.js';
import { error, type Diagnostic, type Range } from '../diagnostics/diagnostic.js';
import { codePointName, findInvalidCharacter } from '../diagnostics/text.js';
import { aliasGuard, findCycle, MAX_NESTING, YamlLimitError } from './yaml-guard.js';
import { bomShift, contentStart, PositionIndex } from './yaml-index.js';

// js-yaml asks each implicit type about every plain scalar (keys too): the patterns are built once, and a
// scalar whose first character cannot start a number (most of them: names, keys) is answered without one
const INT = /^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$/;
const FLOAT = /^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;
/** Whether `data` starts as a number can: a digit, a sign or a dot. */
function numberLike(data: string): boolean {
  const c = data.charCodeAt(0);
  return (c >= 48 && c <= 57) || c === 43 /* + */ || c === 45 /* - */ || c === 46 /* . */;
}
// YAML 1.2 core schema integers: decimal, 0o octal, 0x hex. (js-yaml's own int type also takes
// 0b binary and `_` separators, which YAML 1.2 reads as strings; this keeps the two parsers in step.)
const coreInt = new jsyaml.Type('tag:yaml.org,2002:int', {
  kind: 'scalar',
  resolve: (data: string | null) => data !== null && numberLike(data) && INT.test(data),
  construct: (data: string) =>
    data.startsWith('0o') ? parseInt(data.slice(2), 8) : data.startsWith('0x') ? parseInt(data.slice(2), 16) : parseInt(data, 10),
  predicate: (v: unknown) => typeof v === 'number' && Number.isInteger(v),
  represent: (v: unknown) => String(v),
});
const coreFloat = new jsyaml.Type('tag:yaml.org,2002:float', {
  kind: 'scalar',
  resolve: (data: string | null) => data !== null && numberLike(data) && FLOAT.test(data),
  construct: (data: string) => {
    const lower = data.toLowerCase();
    if (lower.endsWith('.inf')) return data.startsWith('-') ? -Infinity : Infinity;
    if (lower === '.nan') return NaN;
    return parseFloat(data);
  },
  predicate: (v: unknown) => typeof v === 'number',
  represent: (v: unknown) => String(v),
});
// plus merge keys (`<<: *defaults`): not YAML 1.2 core, but read by YAML 1.1 loaders, the reference SDK's among
// them, so workflow files written for it use them
const mergeKey = new jsyaml.Type('tag:yaml.org,2002:merge', { kind: 'scalar', resolve: (data: string | null) => data === '<<' });
const CORE12 = jsyaml.CORE_SCHEMA.extend({ implicit: [coreInt, coreFloat, mergeKey] });

/**
 * A plain YAML or JSON file's value (a blueprint, a replies file) with the same YAML 1.2 core schema
 * and nesting bound as a workflow; throws js-yaml's error (message `reason (line:col)`) when invalid.
 */
export function parseYamlValue(text: string): unknown {
  return jsyaml.load(text, { schema: CORE12, maxDepth: MAX_NESTING } as jsyaml.LoadOptions);
}

// the `yaml` library, loaded synchronously on the syntax-error path only (it costs ~50 ms to import)
let yamlLib: typeof import('yaml') | undefined;
const yaml = (): typeof import('yaml') => (yamlLib ??= createRequire(import.meta.url)('yaml') as typeof import('yaml'));

/** Up to this size a file with a syntax error is re-read by the `yaml` library for every error. */
export const SYNTAX_DETAIL_MAX_CHARS = 64 * 1024;

export interface ParsedSource {
  value: unknown;
  diagnostics: Diagnostic[];
  /** The source range of the node at `path` (or of the nearest existing ancestor; [0, 0] in an empty file). */
  locate(path: Path, target?: 'key' | 'value'): Range;
  /** The diagnostics are duplicate keys only, and `value` holds the document read with the last of each: check it too. */
  recovered?: true;
}

export function parseYamlSource(text: string): ParsedSource {
  let index: PositionIndex | undefined;
  const positions = (): PositionIndex => (index ??= PositionIndex.build(text, CORE12, MAX_NESTING));
  const locate = (path: Path, target: 'key' | 'value' = 'value'): Range => positions().locate(path, target);
  const fail = (diagnostics: Diagnostic[]): ParsedSource => ({ value: undefined, diagnostics, locate });

  const bad = findInvalidCharacter(text);
  if (bad) {
    const what = bad.code === 0 ? 'a NUL byte' : bad.code < 0x20 || (bad.code >= 0x7f && bad.code <= 0x9f) ? 'a control character' : bad.code >= 0xd800 && bad.code <= 0xdfff ? 'a lone surrogate' : 'a non-character';
    return fail([
      error('invalid-character', [], `invalid character ${codePointName(bad.code)} (${what}): YAML files hold text`, {
        range: [bad.offset, bad.offset + 1],
        hint: 'is this a binary file? remove the character, or write it as an escape (`"\\u0007"`) inside a double-quoted string',
      }),
    ]);
  }

  // Aliases are counted only when the text could hold one: the listener costs nothing otherwise.
  const load = (recovered: Diagnostic[]): ParsedSource => {
    const guard = text.includes('*') ? aliasGuard(text) : undefined;
    // `json: true` after a duplicate key: the last occurrence wins (as `locate` assumes), so every other check still runs
    const value: unknown = jsyaml.load(text, { schema: CORE12, maxDepth: MAX_NESTING, ...(recovered.length > 0 ? { json: true } : {}), ...(guard ? { listener: guard.listener } : {}) } as jsyaml.LoadOptions);
    if (guard && guard.aliases.length > 0) {
      const cyclic = findCycle(value);
      if (cyclic) {
        const a = guard.aliases.find((x) => x.referent === cyclic) ?? guard.aliases[0]!;
        return fail([error('alias-limit', [], `alias \`*${a.name}\` refers to a node that contains it (a cycle)`, { range: [a.offset, a.offset + 1 + a.name.length], hint: 'an alias may only repeat a node defined before and outside it' })]);
      }
    }
    // a key that is a list or a mapping: only where the text could hold one (an explicit `? ` key, or `]:` / `}:`)
    if (/\?[ \t\r\n]|[\]}][ \t\r\n]*:/.test(text)) {
      const keys = positions().collectionKeys();
      if (keys.length > 0) {
        return fail(keys.map((range) => error('wrong-type', [], 'a key must be a name (a string), not a list or a mapping', { range, hint: 'YAML would turn this key into text such as `a,b`; write the name itself: `name: ...`' })));
      }
    }
    return recovered.length > 0 ? { value, diagnostics: recovered, locate, recovered: true } : { value, diagnostics: [], locate };
  };
  try {
    return load([]);
  } catch (e) {
    const diagnostics = explain(e, text, positions);
    // duplicate keys alone: reported, and the document is still checked whole (every problem in one pass)
    if (diagnostics.length > 0 && diagnostics.every((d) => d.code === 'duplicate-key')) {
      try {
        const again = load(diagnostics);
        return again.recovered ? again : fail([...diagnostics, ...again.diagnostics]);
      } catch (again) {
        // the rest of the text may fail in its own way (an alias past the limit): said beside the duplicates
        return fail([...diagnostics, ...explain(again, text, positions).filter((d) => d.code !== 'duplicate-key')]);
      }
    }
    return fail(diagnostics);
  }
}

interface JsYamlError {
  name: 'YAMLException';
  reason: string;
  mark?: { position: number };
}

function isJsYamlError(e: unknown): e is JsYamlError {
  return typeof e === 'object' && e !== null && (e as { name?: unknown }).name === 'YAMLException' && typeof (e as { reason?: unknown }).reason === 'string';
}

function explain(e: unknown, text: string, positions: () => PositionIndex): Diagnostic[] {
  if (e instanceof YamlLimitError) {
    return [error('alias-limit', [], e.message, { range: [e.offset, e.offset + 1], hint: 'aliases that repeat aliases grow exponentially; write the values out, or anchor a smaller node' })];
  }
  if (e instanceof RangeError) {
    // cannot happen with MAX_NESTING in place; a bounded, positioned report all the same
    return [error('too-deep', [], `nested too deeply (limit ${MAX_NESTING})`, { range: [0, Math.min(1, text.length)] })];
  }
  if (!isJsYamlError(e)) throw e;
  const at = Math.min(text.length, (e.mark?.position ?? 0) + bomShift(text));
  if (e.reason.startsWith('nesting exceeded maxDepth')) {
    const start = Math.min(text.length, contentStart(text, at));
    return [error('too-deep', [], `nested too deeply (limit ${MAX_NESTING} levels)`, { range: [start, Math.min(text.length, start + 1)], hint: 'a workflow never needs this depth; is the file generated?' })];
  }
  if (e.reason.startsWith('duplicated mapping key')) {
    const dups = positions().duplicates();
    if (dups.length > 0) {
      return dups.map((d) =>
        error('duplicate-key', d.path, `duplicate key \`${d.key}\``, {
          range: d.at,
          hint: 'each key may appear once in a mapping; remove or rename one of them',
          related: [{ message: `\`${d.key}\` first defined here`, path: d.path, target: 'key', range: d.first }],
        }),
      );
    }
  }
  const detailed = text.length <= SYNTAX_DETAIL_MAX_CHARS ? syntaxErrors(text) : [];
  if (detailed.length > 0) return detailed;
  if (e.reason === 'expected a single document in the stream, but found more') {
    // js-yaml marks the start of the file: point at the `---` that starts the second document
    const first = contentStart(text, 0);
    const marker = [...text.matchAll(/^(?:---|\.\.\.)(?=[ \t]|\r?$)/gm)].find((m) => m.index > first);
    if (marker?.[0] === '...') {
      // `...` ends the document: the text after it is a second one, with no `---` to point at
      const after = contentStart(text, marker.index + 3);
      const second = after < text.length ? after : marker.index;
      return [error('yaml-syntax', [], SECOND_AFTER_END, { range: [second, Math.min(text.length, second + 1)], hint: 'remove the `...` line (or what follows it), or put each workflow in its own file' })];
    }
    const second = marker?.index ?? at;
    return [error('yaml-syntax', [], 'the file must hold a single YAML document: this `---` starts a second one', { range: [second, Math.min(text.length, second + 3)], hint: 'remove the `---` line and what follows it, or put each workflow in its own file' })];
  }
  const hint = syntaxHint(e.reason);
  return [error('yaml-syntax', [], e.reason, { range: [at, Math.min(text.length, at + 1)], ...(hint ? { hint } : {}) })];
}

/** Every syntax error the `yaml` library finds, one per place. Empty when it finds none (or gives up). */
function syntaxErrors(text: string): Diagnostic[] {
  let errors: { pos: [number, number]; message: string }[];
  try {
    errors = yaml().parseDocument(text, { uniqueKeys: false, prettyErrors: false }).errors;
  } catch {
    return []; // a stack overflow on deep input: js-yaml's error stands
  }
  // the `yaml` library reports its own stack overflow as an error: js-yaml's positioned error is better
  if (errors.some((e) => /call stack/i.test(e.message))) return [];
  const out: Diagnostic[] = [];
  const seen = new Set<number>();
  let followOn = 0;
  let lostAfter = 0;
  for (const e of errors) {
    if (seen.has(e.pos[0])) continue; // one report per place: the parser often explains one slip twice
    seen.add(e.pos[0]);
    // once the parser has lost its place (an unclosed `{` or `[`, a broken indent), every token after is
    // "Unexpected ... token in YAML stream": one slip gave 30 errors down to the end of the file. Those
    // after the first error follow from it and are counted, not listed; other kinds are still reported
    if (out.length > 0 && FOLLOW_ON.test(e.message)) {
      if (followOn++ === 0) lostAfter = out.length - 1;
      continue;
    }
    const [message, extra] = syntaxMessage(firstLine(e.message), text, e.pos[0]);
    // the parser reports an unclosed quote where the text ends: point at the quote that opens it
    const open = /^Missing closing ["']?quote/.test(e.message) ? unclosedQuote(text, e.pos[0]) : undefined;
    out.push(error('yaml-syntax', [], open === undefined ? message : `this ${text[open] === "'" ? 'single' : 'double'} quote is never closed`, { ...extra, range: open === undefined ? [e.pos[0], Math.max(e.pos[1], e.pos[0] + 1)] : [open, open + 1] }));
  }
  if (followOn > 0) {
    const last = out[lostAfter]!;
    const more = `the parser lost its place after this: the ${followOn} unexpected token${followOn === 1 ? '' : 's'} it reported further on ${followOn === 1 ? 'is' : 'are'} not shown; fix this and validate again`;
    last.hint = last.hint ? `${last.hint}. Then: ${more}` : more;
  }
  return out;
}

const FOLLOW_ON = /^Unexpected [\w-]+ token in YAML stream/;

/** The offset of the quote that opens the quoted scalar running on to `end` (an unclosed one), if any. */
function unclosedQuote(text: string, end: number): number | undefined {
  let best: number | undefined;
  const walk = (x: unknown): void => {
    if (typeof x !== 'object' || x === null) return;
    if (Array.isArray(x)) {
      for (const y of x) walk(y);
      return;
    }
    const t = x as { type?: unknown; offset?: unknown; source?: unknown };
    if ((t.type === 'double-quoted-scalar' || t.type === 'single-quoted-scalar') && typeof t.offset === 'number' && typeof t.source === 'string') {
      if (t.offset < end && t.offset + t.source.length >= end && (best === undefined || t.offset > best)) best = t.offset;
      return;
    }
    for (const [k, v] of Object.entries(x)) if (k !== 'source') walk(v);
  };
  try {
    for (const token of new (yaml().Parser)().parse(text)) walk(token);
  } catch {
    return undefined;
  }
  return best;
}

/** The `yaml` library's messages in a user's words where they address a programmer ("please use YAML.parseAllDocuments()"). */
const SECOND_AFTER_END = 'the file must hold a single YAML document: `...` ends the first, and this text after it starts a second one';

function syntaxMessage(message: string, text?: string, at?: number): [string, { hint?: string }] {
  if (/multiple documents/i.test(message)) {
    // after a `...` end marker a second document needs no `---`: say what is there
    if (text !== undefined && at !== undefined && !text.startsWith('---', at)) return [SECOND_AFTER_END, { hint: 'remove the `...` line (or what follows it), or put each workflow in its own file' }];
    return ['the file must hold a single YAML document: this `---` starts a second one', { hint: 'remove the `---` line and what follows it, or put each workflow in its own file' }];
  }
  const hint = syntaxHint(message);
  return [message, hint ? { hint } : {}];
}

/**
 * What usually causes a syntax error, by the message of either parser (the `yaml` library's, js-yaml's for
 * files past 64 KB): the slips people make in workflow files. Undefined where no one cause is likely.
 */
const SYNTAX_HINTS: readonly [RegExp, string][] = [
  [/Tabs are not allowed|tab characters? must not be used/i, 'indent with spaces: YAML does not allow tabs'],
  [/Flow (sequence|map) in block collection must be sufficiently indented and end with|unexpected end of the stream within a flow collection/i, 'close the `[` with `]` (or the `{` with `}`); a value that starts with `[` or `{` as text must be quoted: `"[draft] notes"`'],
  [/missed comma between flow collection entries/i, 'separate the entries of a `[...]` or `{...}` with commas'],
  [/All mapping items must start at the same column|bad indentation of a mapping entry|end of the stream or a document separator is expected/i, 'indent each key of a mapping by as many spaces as the keys beside it'],
  [/Nested mappings are not allowed in compact mappings|Block collections are not allowed within flow collections|a multiline key may not be an implicit key/i, 'a value holding `: ` must be quoted: `description: "step 1: draft"`'],
  [/Missing closing ["']?quote|within a (double|single) quoted scalar/i, 'close the quote that opens this value'],
  [/Unexpected flow-(seq|map)-start at node end/i, 'a value with `[` or `{` after other text must be quoted: `items: "It[]"`'],
  [/Unexpected scalar at node end/i, 'a quoted value ends at its closing quote: to keep quotes inside, quote the whole value with the other kind, e.g. `skip_when: \'x == "y"\'`'],
  [/Plain value cannot start with reserved character|cannot start any token/i, 'a value that starts with `@` or a backtick must be quoted: `"@team"`'],
  [/A block sequence may not be used as an implicit map key/i, 'a list (`- item` lines) goes under a key of its own: the key, then the items indented below it'],
  [/Implicit map keys need to be followed by map values|can not read an implicit mapping pair|incomplete explicit mapping pair/i, 'each line of a mapping is `key: value` (a space after the colon)'],
  [/Unresolved alias|unidentified alias/i, 'an alias `*name` needs an anchor `&name` earlier in the file'],
];

export function syntaxHint(message: string): string | undefined {
  return SYNTAX_HINTS.find(([re]) => re.test(message))?.[1];
}

function firstLine(s: string): string {
  return (s.split('\n')[0] ?? s).trim();
}
