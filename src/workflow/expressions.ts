/** Compile-time checks of condition expressions: syntax (positioned inside the string) and the names they read. */
import type { Path } from '../core/path.js';
import { didYouMean } from '../core/suggest.js';
import { error, warning, type Diagnostic } from '../diagnostics/diagnostic.js';
import { parseExpression, type Expression } from './expr.js';
import type { OutputDecl } from './model.js';

export function compileExpression(source: string, path: Path, out: Diagnostic[]): Expression | undefined {
  const r = parseExpression(source);
  if (r.ok) return r.expression;
  out.push(error('expression-syntax', path, `invalid expression: ${r.message}`, { hint: "conditions use CEL, e.g. `risk.category == 'HIGH' && score > 3`", data: { offset: r.offset } }));
  return undefined;
}

export interface ExpressionScope {
  /** The phase the expression belongs to (undefined for workflow-level conditions). */
  phaseName: string | undefined;
  phaseNames: ReadonlySet<string>;
  /** Phases whose outputs are available when the expression is evaluated. */
  ancestors: ReadonlySet<string>;
  /** Further names bound when it is evaluated (`_item`, `_index` in a fan-out phase). */
  extra?: readonly string[];
  /** A phase's declared outputs as the condition sees them (undefined: it declares none, any key may come). */
  outputsOf?: (phase: string) => readonly OutputDecl[] | undefined;
}

/**
 * `skip_when` reads `trigger`, `initial_state` and the outputs of upstream phases by name. A name
 * that is a phase but not upstream would be unbound at evaluation time: an error. Workflow-level
 * conditions (require_approval.when) may read any phase, so unknown names there are warnings.
 */
export function checkExpressions(expr: Expression, path: Path, scope: ExpressionScope, out: Diagnostic[]): void {
  const builtins = ['trigger', 'initial_state', 'phases'];
  const spelled = unspellable(expr, path, scope, out);
  shadowedPhases(expr, path, scope, out);
  phasesReads(expr, path, scope, out);
  for (const name of expr.names) {
    if (builtins.includes(name) || scope.ancestors.has(name) || scope.extra?.includes(name) || spelled.has(name)) continue;
    const workflowLevel = scope.phaseName === undefined;
    if (!workflowLevel && scope.phaseNames.has(name)) {
      out.push(
        error('expression-unknown-name', path, `\`${name}\` is not an upstream phase of \`${scope.phaseName}\`; its outputs are not available here`, {
          hint: `add \`${name}\` to \`depends_on\``,
          data: { name, offset: nameOffset(expr.source, name), length: name.length },
        }),
      );
      continue;
    }
    const hint = didYouMean(name, [...builtins, ...scope.ancestors]);
    const make = workflowLevel ? warning : error;
    out.push(
      make('expression-unknown-name', path, `unknown name \`${name}\` in condition`, {
        hint: hint ?? `available names: ${[...builtins, ...[...scope.ancestors].slice(0, 10)].join(', ')}`,
        data: { name, offset: nameOffset(expr.source, name), length: name.length },
      }),
    );
  }
  if (scope.outputsOf) checkFields(expr, path, scope, scope.outputsOf, out);
}

/**
 * The outputs a condition reads from an upstream phase (`research.confidence`), against what the phase
 * declares: a key it does not declare, or an optional one read without `has(...)`, makes the condition
 * fail to evaluate when the key is absent, and the phase with it. Warnings: an agent may return extra keys.
 */
function checkFields(expr: Expression, path: Path, scope: ExpressionScope, outputsOf: (phase: string) => readonly OutputDecl[] | undefined, out: Diagnostic[]): void {
  const seen = new Set<string>();
  for (const f of expr.fields) {
    const key = `${f.name}.${f.field}`;
    if (seen.has(key) || !scope.ancestors.has(f.name) || scope.extra?.includes(f.name)) continue;
    seen.add(key);
    const decls = outputsOf(f.name);
    if (!decls) continue;
    const decl = decls.find((d) => d.key === f.field);
    const data = { name: f.name, field: f.field, offset: f.offset, length: f.length };
    if (!decl) {
      const near = didYouMean(f.field, decls.map((d) => d.key));
      out.push(
        warning('expression-unknown-name', path, `\`${f.name}\` declares no output \`${f.field}\`: unless its agent returns it anyway, the condition cannot be evaluated and \`${scope.phaseName ?? 'the run'}\` fails`, {
          hint: near ?? `\`${f.name}\` declares ${decls.length === 0 ? 'no outputs' : decls.map((d) => `\`${d.key}\``).join(', ')}`,
          data,
        }),
      );
    } else if (!decl.required && !expr.tested.has(key)) {
      out.push(
        warning('expression-unknown-name', path, `\`${key}\` is an optional output: when \`${f.name}\` does not return it, the condition cannot be evaluated and \`${scope.phaseName ?? 'the run'}\` fails`, {
          hint: `test it first: \`has(${key}) && ...\``,
          data,
        }),
      );
    }
  }
}

/**
 * A phase named `draft-sections` written as a name (`draft-sections.n > 1`): CEL reads it as `draft -
 * sections.n`, two unknown names. One error on the whole name instead, whose hint spells the read that
 * works (`phases['draft-sections'].output.n`). Returns the names of the parts it accounts for.
 */
function unspellable(expr: Expression, path: Path, scope: ExpressionScope, out: Diagnostic[]): Set<string> {
  const parts = new Set<string>();
  const unknown = expr.names.filter((n) => !scope.ancestors.has(n) && !scope.phaseNames.has(n));
  if (unknown.length === 0) return parts;
  const masked = maskStrings(expr.source);
  for (const phase of [...scope.phaseNames].sort((a, b) => b.length - a.length)) {
    if (!/^[A-Za-z_][\w-]*-[\w-]*$/.test(phase)) continue;
    const split = phase.split('-').filter((x) => x !== '');
    if (!split.every((x) => /^[A-Za-z_]/.test(x) ? unknown.includes(x) || parts.has(x) : true)) continue;
    const re = new RegExp(`(?<![.\\w'"-])${phase.replace(/[-]/g, '\\s*-\\s*')}(?![\\w-])(\\.([A-Za-z_]\\w*))?`);
    const m = re.exec(masked);
    if (!m) continue;
    for (const x of split) parts.add(x);
    const key = m[2];
    const read = `phases['${phase}'].output${key ? `.${key}` : ''}`;
    const workflowLevel = scope.phaseName === undefined;
    const upstream = workflowLevel || scope.ancestors.has(phase);
    out.push(
      (workflowLevel ? warning : error)('expression-unknown-name', path, `\`${phase}\` cannot be written as a name in a condition: CEL reads it as \`${split.join(' - ')}\``, {
        hint: upstream ? `read it as \`${read}\` (and its status as \`phases['${phase}'].status\`)` : `add \`${phase}\` to \`depends_on\`, then read it as \`${read}\``,
        data: { name: phase, offset: m.index, length: m[0].length - (m[1]?.length ?? 0) },
      }),
    );
  }
  return parts;
}

/**
 * A phase named `trigger` or `initial_state`: in a condition those names are the trigger payload and the
 * initial state (`$trigger.x` reads as `trigger.x`), never the phase. A bare `trigger.v` beside such a phase
 * may mean either: say which it reads, and how to read the phase.
 */
function shadowedPhases(expr: Expression, path: Path, scope: ExpressionScope, out: Diagnostic[]): void {
  const masked = maskStrings(expr.source);
  for (const name of ['trigger', 'initial_state']) {
    if (!expr.names.includes(name) || !scope.phaseNames.has(name)) continue;
    const m = new RegExp(`(?<![.\\w'"$])${name}(?!\\w)`).exec(masked);
    if (!m) continue; // only `$trigger`: it says which
    const what = name === 'trigger' ? 'the trigger payload' : 'the initial state';
    out.push(
      warning('expression-unknown-name', path, `\`${name}\` in a condition is ${what}, not the phase \`${name}\``, {
        hint: `write \`$${name}.x\` for ${what}, and read the phase as \`phases.${name}.output.x\``,
        data: { name, offset: m.index, length: name.length },
      }),
    );
  }
}

/** `phases.NAME` and `phases['NAME']` in a condition: each NAME, and where it stands in the source. */
export function phasesNamed(source: string): { name: string; offset: number }[] {
  const out: { name: string; offset: number }[] = [];
  const masked = maskStrings(source);
  for (const m of source.matchAll(/(?<![\w.$])phases\s*(?:\.\s*([A-Za-z_]\w*)|\[\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*\])/g)) {
    if (masked[m.index] !== source[m.index] || masked.slice(m.index, m.index + 6) !== 'phases') continue; // inside a string literal
    const name = m[1] ?? m[2] ?? m[3]!;
    // on the name: after `phases.`, or inside the quotes of `phases['...']` (where it may be empty)
    const at = m[1] !== undefined ? m[0].lastIndexOf(name) : m[0].indexOf(m[2] !== undefined ? "'" : '"') + 1;
    out.push({ name, offset: m.index + at });
  }
  return out;
}

/**
 * `phases.NAME` reads how a finished phase ended. In `skip_when` only the upstream phases are sure to have
 * finished: a sibling would be there or not depending on timing, an unknown name never. An error, as for a
 * name read directly; in `require_approval.when` (which waits for the phases it reads) a warning for an
 * unknown name.
 */
function phasesReads(expr: Expression, path: Path, scope: ExpressionScope, out: Diagnostic[]): void {
  if (!expr.names.includes('phases') || scope.phaseNames.has('phases')) return;
  const seen = new Set<string>();
  for (const { name, offset } of phasesNamed(expr.source)) {
    if (seen.has(name) || scope.ancestors.has(name)) continue;
    seen.add(name);
    const data = { name, offset, length: name.length };
    if (scope.phaseNames.has(name)) {
      if (scope.phaseName === undefined) continue;
      out.push(error('expression-unknown-name', path, `\`${name}\` is not an upstream phase of \`${scope.phaseName}\`: whether \`phases.${name}\` is there depends on when it finishes`, { hint: `add \`${name}\` to \`depends_on\``, data }));
      continue;
    }
    const near = didYouMean(name, scope.phaseName === undefined ? [...scope.phaseNames] : [...scope.ancestors]);
    out.push((scope.phaseName === undefined ? warning : error)('expression-unknown-name', path, `\`phases\` has no phase \`${name}\``, { hint: near ?? `phases: ${[...scope.phaseNames].slice(0, 10).join(', ')}`, data }));
  }
}

/** The source with the insides of its string literals blanked, so that names are found only outside them. */
function maskStrings(source: string): string {
  return source.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, (q) => q[0] + ' '.repeat(q.length - 2) + q[q.length - 1]);
}

/** Where a top-level name first appears in the source (not after a `.`, not inside a string). */
function nameOffset(source: string, name: string): number {
  const re = new RegExp(`(?<![.\\w'"])${name.replace(/[$]/g, '\\$')}(?![\\w])`, 'g');
  const m = re.exec(source);
  return m ? m.index : 0;
}
