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
  let errors: YamlError[];
  try {
    errors = yamlErrors(text);
    // a tab in an indentation, a key without its colon: one slip, one error (withSlipsRepaired)
    errors = withSlipsRepaired(text, errors);
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
    const [message, extra] = e.hint !== undefined ? [e.message, { hint: e.hint }] : syntaxMessage(firstLine(e.message), text, e.pos[0]);
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

interface YamlError {
  pos: [number, number];
  message: string;
  code: string;
  /** Where the message is Baton's own (a slip it recognised), its hint. */
  hint?: string;
}

function yamlErrors(text: string): YamlError[] {
  const errors: YamlError[] = yaml()
    .parseDocument(text, { uniqueKeys: false, prettyErrors: false })
    .errors.map((e) => ({ pos: [e.pos[0], e.pos[1]], message: e.message, code: e.code }));
  for (const e of errors) {
    // "All mapping items must start at the same column" is reported at the start of the line: point at the key
    if (e.code !== 'BAD_INDENT') continue;
    let at = e.pos[0];
    while (text[at] === ' ' || text[at] === '\t') at++;
    if (at > e.pos[0] && at < text.length && text[at] !== '\n' && text[at] !== '\r') e.pos = [at, Math.max(at + 1, e.pos[1])];
  }
  return errors;
}

/**
 * The slips people make on one line, said as such, and the other errors of the text once each is mended:
 * a tab in a line's indentation (as deep as the line before it, or one step deeper when that line opens a
 * block, what a tab usually stands for), and a key without its colon or the space after it
 * (`summarize` above its fields, `assign summarizer`, `assign:summarizer`). The parser misreads the lines
 * around such a slip: one tab gave three errors (one hinting at a quote, one at the aligned key below), a
 * phase name without its colon one error per field of the phase. Positions are the original text's.
 */
function withSlipsRepaired(text: string, errors: readonly YamlError[]): YamlError[] {
  const lineAt = (at: number): { from: number; line: string } => {
    const from = text.lastIndexOf('\n', at - 1) + 1;
    const end = text.indexOf('\n', from);
    return { from, line: text.slice(from, end < 0 ? text.length : end).replace(/\r$/, '') };
  };
  // each slip by the start of its line: the error to report, and the line as mended
  const slips = new Map<number, { error: YamlError; mended: (previous: number, previousItem: boolean, opens: boolean) => string }>();
  const find = (errors: readonly YamlError[]): void => {
    for (const e of errors) {
      const { from, line } = lineAt(e.pos[0]);
      if (slips.has(from)) continue;
      const indent = /^[ \t]*/.exec(line)![0];
      const content = line.slice(indent.length);
      if (indent.includes('\t') && (e.code === 'TAB_AS_INDENT' || e.pos[0] <= from + indent.length)) {
        // the parser does not always say it is the tab (a block scalar indented with one is "Block scalars with
        // more-indented leading empty lines must use an explicit indentation indicator"): the tab is what to fix
        const tab = from + indent.indexOf('\t');
        const item = /^-(\s|$)/.test(content);
        slips.set(from, {
          error: { pos: e.code === 'TAB_AS_INDENT' ? e.pos : [tab, tab + 1], message: e.code === 'TAB_AS_INDENT' ? e.message : 'Tabs are not allowed as indentation', code: 'TAB_AS_INDENT' },
          // a `- item` beside the item before it; a key beside the keys of the item before it (`- a: 1` then `b: 2`)
          mended: (previous, previousItem, opens) => ' '.repeat(previous + (previousItem && !item ? 2 : 0) + (opens ? 2 : 0)) + content,
        });
        continue;
      }
      if ((e.code !== 'MULTILINE_IMPLICIT_KEY' && e.code !== 'MISSING_CHAR') || e.pos[0] !== from + indent.length || indent.includes('\t')) continue;
      const key = /^([A-Za-z_][\w-]*)(?:(:)(?=[^\s:/])|( +)(?=[^\s#:]))(.*)$/.exec(content.replace(/\s+#.*$/, ''));
      const bare = /^([A-Za-z_][\w-]*)\s*(?:#.*)?$/.exec(content);
      const at: [number, number] = [from + indent.length, from + indent.length + (key?.[1] ?? bare?.[1] ?? '').length];
      if (key?.[2]) {
        const fixed = `${key[1]!}: ${key[4]!}`;
        slips.set(from, { error: { pos: at, message: `\`${content.trim()}\` is not a \`key: value\` pair: a space must follow the colon`, code: 'KEY_SLIP', hint: `write \`${fixed}\`` }, mended: () => indent + fixed });
      } else if (key?.[3] !== undefined && /^\S+$/.test(key[4]!)) {
        // one word after a name (`assign summarizer`); more (`sentence continued here`) is likely prose, not a key
        const fixed = `${key[1]!}: ${key[4]!}`;
        slips.set(from, { error: { pos: at, message: `\`${key[1]!}\` has no colon after it`, code: 'KEY_SLIP', hint: `a key is followed by a colon and a space: \`${fixed}\`` }, mended: () => indent + fixed });
      } else if (bare) {
        // a name alone on its line, with more-indented lines below it: a key that lost its colon
        let next = text.indexOf('\n', from);
        let below = '';
        while (next >= 0 && below.trim() === '') {
          const end = text.indexOf('\n', next + 1);
          below = text.slice(next + 1, end < 0 ? text.length : end).replace(/\s+#.*$/, '');
          if (below.trim().startsWith('#')) below = '';
          next = end;
        }
        if (/^[ \t]*/.exec(below)![0].length <= indent.length) continue;
        slips.set(from, { error: { pos: at, message: `\`${bare[1]!}\` has no colon after it`, code: 'KEY_SLIP', hint: `the fields below it belong to a key: write \`${bare[1]!}:\`` }, mended: () => `${indent}${bare[1]!}:` });
      }
    }
  };
  find(errors);
  if (slips.size === 0) return [...errors];
  let rest: YamlError[] = [];
  // a slip may hide another (`assign:researcher` as a phase's last line reads as text until the next phase
  // name, itself without its colon, is mended): a few rounds
  for (let round = 0, known = 0; round < 4 && slips.size > known; round++) {
    known = slips.size;
    rest = mendAndParse(text, slips);
    find(rest);
  }
  return [...[...slips.values()].map((v) => v.error), ...rest].sort((a, b) => a.pos[0] - b.pos[0]);
}

/** The errors of `text` with each line of `slips` mended, positioned in `text` (those of the slips' own kind dropped). */
function mendAndParse(text: string, slips: ReadonlyMap<number, { mended: (previous: number, previousItem: boolean, opens: boolean) => string }>): YamlError[] {
  // each line: where it starts in the original and in the mended text, its length and indentation in both
  const lines: { from: number; to: number; length: number; newLength: number; indent: number; newIndent: number }[] = [];
  let out = '';
  let previous = 0;
  let previousItem = false;
  let opens = false;
  for (let from = 0; from < text.length; ) {
    const end = text.indexOf('\n', from);
    const next = end < 0 ? text.length : end + 1;
    const whole = text.slice(from, next);
    const eol = /\r?\n?$/.exec(whole)![0];
    const line = whole.slice(0, whole.length - eol.length);
    const slip = slips.get(from);
    const mended: string = slip ? slip.mended(previous, previousItem, opens) : line;
    const indent = /^[ \t]*/.exec(line)![0].length;
    const newIndent = /^[ \t]*/.exec(mended)![0].length;
    lines.push({ from, to: out.length, length: line.length, newLength: mended.length, indent, newIndent });
    out += mended + eol;
    const content: string = mended.slice(newIndent).replace(/\s+#.*$/, '').trimEnd();
    if (content !== '' && !content.startsWith('#')) {
      previous = newIndent;
      previousItem = /^-(\s|$)/.test(content);
      opens = /(?:^|\s|:)(?:[|>][-+0-9]*)$/.test(content) || content.endsWith(':');
    }
    from = next;
  }
  const back = (at: number): number => {
    let lo = 0;
    for (let hi = lines.length - 1; lo < hi; ) {
      const mid = (lo + hi + 1) >> 1;
      if (lines[mid]!.to <= at) lo = mid;
      else hi = mid - 1;
    }
    const l = lines[lo];
    if (!l) return at;
    const within = at - l.to;
    if (within < l.newIndent) return l.from + Math.min(within, l.indent);
    if (within >= l.newLength) return l.from + l.length + (within - l.newLength); // its line end, and past it
    // past the indentation: the same text (a mended key gained a character: clamped to the line)
    return l.from + Math.min(l.indent + (within - l.newIndent), l.length);
  };
  return yamlErrors(out)
    .filter((e) => e.code !== 'TAB_AS_INDENT')
    .map((e) => ({ ...e, pos: [back(e.pos[0]), Math.max(back(e.pos[0]) + 1, back(e.pos[1]))] as [number, number] }));
}

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
