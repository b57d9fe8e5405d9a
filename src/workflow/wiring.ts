/**
 * RFC-0024 §8: the four input-wiring checks (phase exists, is a dependency, key is declared,
 * mapping syntax), each an InputWiringError diagnostic; then edge typing: every mapping is resolved
 * to the type of the upstream output, reaching into it along the path.
 */
import type { Path } from '../core/path.js';
import { didYouMean } from '../core/suggest.js';
import { error, warning, type Diagnostic } from '../diagnostics/diagnostic.js';
import type { CompiledType, TypeRegistry } from '../types/api.js';
import type { InputBinding, InputSource, OutputDecl } from './model.js';

/** A part of a reference: a phase, key or field name in any script (a phase may be named `調査`), or an index. */
const SEGMENT = /^[\p{L}\p{N}_][\p{L}\p{M}\p{N}_-]*$/u;

/** `SEGMENT.test(s)`, answered without the Unicode pattern when `s` is ASCII (where the letters and digits are `A-Za-z0-9`). */
function isSegment(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128) return SEGMENT.test(s);
    const ok = (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 /* _ */ || (c === 45 /* - */ && i > 0);
    if (!ok) return false;
  }
  return true;
}

/** What is wrong with the parts between the dots, when one of them is: an empty one, or one that is not a name. */
function segmentHint(parts: readonly string[]): string | undefined {
  if (parts.some((p) => p === '')) return 'a `.` too many: each part between dots names a phase, a key or a field';
  const bad = parts.find((p) => !isSegment(p));
  return bad === undefined ? undefined : `\`${bad}\` is not a name: names hold letters, digits, \`_\` and \`-\` (an array element is \`.0\`)`;
}

export type RefParse = { ok: true; source: InputSource } | { ok: false; message: string; suggestion: string };

/** Parses `phase.key[.path]`, `$trigger.key[.path]`, `$initial_state.key[.path]`, and (with `items`) `$item[.path]`, `$index`. */
export function parseInputRef(ref: string, items = true): RefParse {
  const syntax = 'use `phase_name.key`, `$trigger.key` or `$initial_state.key`';
  const trimmed = ref.trim();
  if (trimmed !== ref && trimmed !== '' && parseInputRef(trimmed, items).ok) return { ok: false, message: `malformed input mapping \`${ref}\``, suggestion: `remove the spaces around it: \`${trimmed}\`` };
  if (trimmed !== ref || ref === '') return { ok: false, message: `malformed input mapping \`${ref}\``, suggestion: syntax };
  const parts = ref.split('.');
  const head = parts[0] ?? '';
  const rest = parts.slice(1);
  if (items && head === '$index') {
    if (rest.length > 0) return { ok: false, message: `\`$index\` is a number: \`${ref}\` reaches into it`, suggestion: 'use `$index` alone' };
    return { ok: true, source: { kind: 'index' } };
  }
  if (items && head === '$item') {
    if (!rest.every(isSegment)) return { ok: false, message: `malformed input mapping \`${ref}\``, suggestion: 'use `$item` or `$item.path.into.it`' };
    return { ok: true, source: { kind: 'item', path: rest } };
  }
  if (head.startsWith('$')) {
    if (head !== '$trigger' && head !== '$initial_state') {
      const s = didYouMean(head, items ? ['$trigger', '$initial_state', '$item', '$index'] : ['$trigger', '$initial_state']);
      return { ok: false, message: `unknown input source \`${head}\``, suggestion: s ? `${s} (${syntax})` : syntax };
    }
    if (rest.length === 0 || rest[0] === '') return { ok: false, message: `\`${ref}\` needs a key: \`${head}.key\``, suggestion: `name the key, e.g. \`${head}.topic\`` };
    if (!rest.every(isSegment)) return { ok: false, message: `malformed input mapping \`${ref}\``, suggestion: segmentHint(rest) ?? syntax };
    const [key, ...path] = rest as [string, ...string[]];
    return { ok: true, source: { kind: head === '$trigger' ? 'trigger' : 'initial_state', key, path } };
  }
  if (parts.length < 2 || !parts.every(isSegment)) {
    return { ok: false, message: `malformed input mapping \`${ref}\``, suggestion: parts.length < 2 ? `reference an output key: \`${ref}.key\` (${syntax})` : (segmentHint(parts) ?? syntax) };
  }
  const [phase, key, ...path] = parts as [string, string, ...string[]];
  return { ok: true, source: { kind: 'phase', phase, key, path } };
}

export interface WiringContext {
  phaseName: string;
  dependsOn: ReadonlySet<string>;
  phaseNames: ReadonlySet<string>;
  /** Declared outputs per phase (undefined when a phase declares none). */
  outputsOf: (phase: string) => OutputDecl[] | undefined;
  types: TypeRegistry;
  any: CompiledType;
  /** The trigger's type (`x-trigger`), when the workflow declares one. */
  trigger?: CompiledType;
  /** The type of `$item` in a fan-out phase (undefined: not a fan-out phase, `$item` is an error). */
  item?: CompiledType;
  /** Where the phase sits in the document (default `['workflow', phaseName]`). */
  at?: Path;
  /**
   * References parsed so far in this compile, by their text (`p0.findings` is written by thousands of
   * phases): shared by every phase's context. Parses are never changed once made, so one serves all.
   */
  parsed?: Map<string, RefParse>;
}

function wiringError(ctx: WiringContext, path: Path, code: Parameters<typeof error>[0], ref: string, message: string, suggestion: string): Diagnostic {
  return error(code, path, message, {
    hint: suggestion,
    error: 'InputWiringError',
    data: { phase_name: ctx.phaseName, invalid_refs: [ref], suggestion },
  });
}

export function checkInputs(inputs: Record<string, unknown>, ctx: WiringContext, out: Diagnostic[]): InputBinding[] {
  const bindings: InputBinding[] = [];
  for (const name of Object.keys(inputs)) {
    const raw = inputs[name];
    const path: Path = ctx.at ? [...ctx.at, 'inputs', name] : ['workflow', ctx.phaseName, 'inputs', name];
    if (typeof raw !== 'string') {
      const ref = raw === null ? '' : JSON.stringify(raw);
      out.push(wiringError(ctx, path, 'input-bad-syntax', ref, `input \`${name}\` must be a mapping expression string`, 'use `phase_name.key`, `$trigger.key` or `$initial_state.key`'));
      continue;
    }
    if (name === FS_ROOT_KEY) {
      out.push(error('reserved-name', path, `\`${FS_ROOT_KEY}\` is reserved: the host injects the scratch root of declared files there (AIP-16)`, { target: 'key', hint: 'name the input otherwise' }));
      continue;
    }
    const b = resolveRef(raw, `input \`${name}\``, path, ctx, out);
    if (b) bindings.push({ name, ...b });
  }
  return bindings;
}

/**
 * An input that reads an optional output (`{type: T, required: false}`): when the upstream phase leaves it
 * out, the input cannot be resolved and the phase fails at claim (RFC-0024 §3.1, `UnresolvableInputError`).
 * Valid, and usually not what was meant: a warning at the input, unless the phase's `skip_when` reads that
 * phase (`!has(phase.key)`, `phases['phase'].status != 'partial'`): a guard the compiler leaves to its author.
 */
export function checkOptionalInputs(ctx: WiringContext, inputs: readonly InputBinding[], skipWhen: unknown, out: Diagnostic[]): void {
  for (const b of inputs) {
    const path: Path = ctx.at ? [...ctx.at, 'inputs', b.name] : ['workflow', ctx.phaseName, 'inputs', b.name];
    checkOptionalRef(ctx, b, `input \`${b.name}\``, path, skipWhen, out);
  }
}

/** One reference (an input's, a `for_each`'s) that reads an optional output: the warning above. */
export function checkOptionalRef(ctx: WiringContext, b: Omit<InputBinding, 'name'>, label: string, path: Path, skipWhen: unknown, out: Diagnostic[]): void {
  if (!b.upstreamOptional || b.source.kind !== 'phase') return;
  const { phase, key } = b.source;
  const tested = `has(${phase}.${key})`;
  // a `skip_when` that reads the upstream phase at all (`has(a.k)`, `phases['a'].status != 'partial'`) is
  // the author's guard: the compiler cannot tell what it proves, so it does not second-guess it
  if (typeof skipWhen === 'string' && new RegExp(`(?<![\\w-])${phase.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}(?![\\w-])`).test(skipWhen)) return;
  out.push(
    warning('input-optional-output', path, `${label} reads \`${phase}.${key}\`, an optional output: when \`${phase}\` does not return it, \`${ctx.phaseName}\` cannot be claimed and fails (UnresolvableInputError)`, {
      hint: `make \`${key}\` required in \`${phase}\`, or skip \`${ctx.phaseName}\` without it: \`skip_when: "!${tested}"\``,
      data: { phase_name: ctx.phaseName, ref: b.ref },
    }),
  );
}

/**
 * A bare name where `phase.key` goes: an output of a phase it depends on (`findings` for
 * `research.findings`), or a phase itself (`research`, which needs a key). Undefined when it is neither.
 */
function bareNameHint(raw: string, ctx: WiringContext): string | undefined {
  if (!/^[A-Za-z_][\w-]*$/.test(raw)) return undefined;
  const owners = [...ctx.dependsOn].filter((d) => ctx.outputsOf(d)?.some((o) => o.key === raw));
  if (owners.length > 0) return `name the phase that produces it: ${owners.map((d) => `\`${d}.${raw}\``).join(' or ')}`;
  if (ctx.phaseNames.has(raw)) {
    const keys = ctx.outputsOf(raw)?.map((o) => `\`${raw}.${o.key}\``) ?? [];
    return keys.length > 0 ? `\`${raw}\` is a phase: name one of its outputs, ${keys.slice(0, 5).join(', ')}` : `\`${raw}\` is a phase: name the output key, \`${raw}.key\``;
  }
  return undefined;
}

/** AIP-16's one reserved input key. */
export const FS_ROOT_KEY = '_workflowFsRoot';

/**
 * One reference (an input's mapping, a `for_each`): the four wiring checks, `$item` / `$index` only in
 * a fan-out phase, then edge typing along its path. Undefined (with diagnostics) when it does not resolve.
 */
export function resolveRef(raw: string, label: string, path: Path, ctx: WiringContext, out: Diagnostic[]): Omit<InputBinding, 'name'> | undefined {
  let parsed = ctx.parsed?.get(raw);
  if (!parsed) {
    parsed = parseInputRef(raw);
    ctx.parsed?.set(raw, parsed);
  }
  if (!parsed.ok) {
    out.push(wiringError(ctx, path, 'input-bad-syntax', raw, parsed.message, bareNameHint(raw, ctx) ?? parsed.suggestion));
    return undefined;
  }
  const src = parsed.source;
  let type = ctx.any;
  let upstreamOptional = false;
  if (src.kind === 'item' || src.kind === 'index') {
    if (ctx.item === undefined) {
      out.push(error('item-outside-for-each', path, `${label} reads \`${src.kind === 'item' ? '$item' : '$index'}\`, but phase \`${ctx.phaseName}\` has no \`for_each\``, { hint: 'add `for_each: phase.key` to the phase, or read an upstream output instead', data: { phase_name: ctx.phaseName, ref: raw } }));
      return undefined;
    }
    if (src.kind === 'index') return { ref: raw, source: src, type: ctx.types.compile('integer', []).type ?? ctx.any, upstreamOptional: false };
    type = ctx.item;
  }
  if (src.kind === 'phase') {
    if (!ctx.phaseNames.has(src.phase)) {
      const dotted = [...ctx.phaseNames].find((n) => n.includes('.') && raw.startsWith(`${n}.`));
      const deps = [...ctx.dependsOn];
      const s =
        dotted !== undefined
          ? `phase \`${dotted}\` cannot be referenced: \`.\` separates the phase from the key; rename the phase without dots`
          : (didYouMean(src.phase, ctx.phaseNames) ??
            (deps.length > 0 ? `reference one of the phases in \`depends_on\`: ${deps.map((d) => `\`${d}\``).join(', ')}` : `add the phase it reads to \`depends_on\`, and reference it as \`phase_name.key\``));
      out.push(wiringError(ctx, path, 'input-unknown-phase', raw, `${label} references unknown phase \`${src.phase}\``, s));
      return undefined;
    }
    if (src.phase === ctx.phaseName) {
      out.push(wiringError(ctx, path, 'input-not-dependency', raw, `${label} references the phase's own output`, 'a phase can only read outputs of phases it depends on'));
      return undefined;
    }
    // §8.2 and §8.3 are separate checks: a reference that fails both gets both (every problem at once)
    const notDependency = !ctx.dependsOn.has(src.phase);
    if (notDependency) {
      out.push(wiringError(ctx, path, 'input-not-dependency', raw, `${label} references phase \`${src.phase}\`, which is not in depends_on`, `add \`${src.phase}\` to \`depends_on\` of \`${ctx.phaseName}\``));
    }
    const outputs = ctx.outputsOf(src.phase);
    if (outputs) {
      const decl = outputs.find((o) => o.key === src.key);
      if (!decl) {
        // `p.a.b` against an output named `a.b`: the dot reads as key `a`, field `b`, so that output can never be wired
        const dotted = outputs.find((o) => o.key.includes('.') && [src.key, ...src.path].join('.').startsWith(o.key) && o.key.startsWith(`${src.key}.`));
        const s = dotted ? `output \`${dotted.key}\` of \`${src.phase}\` has a \`.\` in its name, and in a mapping a \`.\` separates the key from a field inside it: rename the output (\`${dotted.key.replace(/\./g, '_')}\`)` : didYouMean(src.key, outputs.map((o) => o.key));
        const declared = outputs.map((o) => o.key).join(', ') || '(none)';
        out.push(wiringError(ctx, path, 'input-undeclared-output', raw, `phase \`${src.phase}\` declares no output \`${src.key}\``, s ?? `declared outputs of \`${src.phase}\`: ${declared}`));
        return undefined;
      }
      type = decl.type;
      upstreamOptional = !decl.required;
    }
    if (notDependency) return undefined;
  }
  // a declared trigger types `$trigger.key.path` as a declared output types `phase.key.path`
  const typedTrigger = src.kind === 'trigger' && ctx.trigger !== undefined;
  if (typedTrigger) type = ctx.trigger!;
  const segments = src.kind === 'item' ? src.path : typedTrigger ? [src.key, ...src.path] : src.path;
  if (segments.length > 0) {
    const found = ctx.types.lookup(type, segments);
    if (!found.ok) {
      out.push(error('input-path-invalid', path, `${label}: ${found.message}`, { ...(found.hint ? { hint: found.hint } : {}), data: { phase_name: ctx.phaseName, ref: raw } }));
      return undefined;
    }
    type = found.type;
  }
  return { ref: raw, source: src, type, upstreamOptional };
}
