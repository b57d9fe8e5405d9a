/**
 * The agent-contract spec's own workflow form (its "Workflow Integration Pattern"):
 *
 *   workflow: {name, version, steps: [{id, agent, contract, dependsOn, forEach: {$ref}, inputs, outputs}]}
 *
 * is translated into the Workflow YAML 1.0 form, which the one compiler then compiles: the same model,
 * the same checks. Every path of the translated document maps back to the node it came from in the
 * file as written, so diagnostics are positioned there. `{$input: k}` is `$trigger.k`, `{$item: p}` is
 * `$item.p`, and `{$ref: "artifacts.x.y"}` reads the output a step stored at `artifacts.x` with
 * `{$store: ...}`: the `$store` targets form the run's `artifacts` tree (recorded on the model).
 */
import { isPlainObject, type JsonObject } from '../core/json.js';
import type { Path } from '../core/path.js';
import { didYouMean } from '../core/suggest.js';
import { error, warning, type Diagnostic } from '../diagnostics/diagnostic.js';
import type { ArtifactSegment, ArtifactTarget, WorkflowForm } from './model.js';

/** Step keys with another name in the 1.0 form; every other key (retry, skip_when, x-*, ...) is the phase's own. */
const RENAMED: Readonly<Record<string, string>> = { agent: 'assign', dependsOn: 'depends_on', forEach: 'for_each' };
const BACK: Readonly<Record<string, string>> = { assign: 'agent', depends_on: 'dependsOn', for_each: 'forEach' };
/** Keys beside `workflow` that mean the same in both forms. */
const PASSED = ['agents', 'types', 'governance', 'llm', 'mcp', 'channels', 'x-trigger'];

/** Which form a parsed document is in: `steps` when it has no `openintent` and `workflow.steps`. */
export function formOf(doc: unknown): WorkflowForm {
  return isPlainObject(doc) && doc['openintent'] === undefined && isPlainObject(doc['workflow']) && 'steps' in doc['workflow'] ? 'steps' : 'openintent';
}

export interface Translation {
  /** The document in the 1.0 form. */
  doc: JsonObject;
  /** A path of `doc` -> the path of the node it came from in the file. */
  mapPath(path: Path): Path;
  artifacts: ArtifactTarget[];
}

interface Step {
  index: number;
  id: string;
  raw: Record<string, unknown>;
}

/** Translates a step-form document; problems of the form itself are reported with paths into the file. */
export function translateSteps(doc: Record<string, unknown>, out: Diagnostic[]): Translation {
  const wf = doc['workflow'] as Record<string, unknown>;
  const at = (...p: Path): Path => ['workflow', ...p];
  for (const k of Object.keys(doc)) {
    if (k !== 'workflow' && !PASSED.includes(k) && !k.startsWith('x-')) {
      out.push(warning('unknown-key', [k], `unknown key \`${k}\` beside \`workflow\``, { target: 'key', hint: didYouMean(k, PASSED) ?? `the step form has \`workflow\`, and may have ${PASSED.map((x) => `\`${x}\``).join(', ')}` }));
    }
  }
  for (const k of Object.keys(wf)) {
    if (!['name', 'version', 'description', 'steps'].includes(k) && !k.startsWith('x-')) out.push(warning('unknown-key', at(k), `unknown key \`${k}\` in \`workflow\``, { target: 'key', hint: didYouMean(k, ['name', 'version', 'description', 'steps']) ?? 'the step form has `name`, `version`, `description` and `steps`' }));
  }
  const info: JsonObject = {};
  if (wf['name'] !== undefined) info['name'] = wf['name'] as JsonObject[string];
  if (wf['version'] !== undefined) info['version'] = wf['version'] as JsonObject[string];
  if (wf['description'] !== undefined) info['description'] = wf['description'] as JsonObject[string];

  const steps: Step[] = [];
  const rawSteps = wf['steps'];
  if (!Array.isArray(rawSteps)) out.push(error('wrong-type', at('steps'), '`steps` must be a list of steps', { hint: 'write `steps:` followed by `- id: ...` items' }));
  else {
    const seen = new Map<string, number>();
    rawSteps.forEach((s, index) => {
      if (!isPlainObject(s)) return void out.push(error('wrong-type', at('steps', index), 'a step must be a mapping', { hint: 'give it at least `id` and `agent`' }));
      const id = s['id'];
      if (id === undefined || id === null) return void out.push(error('missing-field', at('steps', index), 'missing required field `id`', { target: 'key', hint: 'give the step an id: `- id: draft`', error: 'WorkflowValidationError', data: { field: 'id' } }));
      if (typeof id !== 'string' || id === '') return void out.push(error('wrong-type', at('steps', index, 'id'), 'a step `id` must be a non-empty string', { hint: 'name the step: `id: draft`' }));
      const first = seen.get(id);
      if (first !== undefined) {
        out.push(error('duplicate-key', at('steps', index, 'id'), `step id \`${id}\` is used twice`, { hint: 'each step needs its own id', related: [{ message: `\`${id}\` first used here`, path: at('steps', first, 'id') }] }));
        return;
      }
      seen.set(id, index);
      steps.push({ index, id, raw: s });
    });
  }
  const byId = new Map(steps.map((s) => [s.id, s]));
  const artifacts = collectArtifacts(steps, out);

  // agents: every step's agent is declared (a `contract` becomes its `x-contract`)
  const agents: JsonObject = isPlainObject(doc['agents']) ? { ...(doc['agents'] as JsonObject) } : {};
  const agentAt = new Map<string, Path>();
  for (const s of steps) {
    const a = s.raw['agent'];
    if (typeof a !== 'string' || a === '') continue;
    const decl: JsonObject = isPlainObject(agents[a]) ? { ...(agents[a]) } : {};
    const declared = isPlainObject(doc['agents']) && isPlainObject(doc['agents'][a]);
    if (!agentAt.has(a) && !declared) agentAt.set(a, at('steps', s.index, 'agent'));
    const c = s.raw['contract'];
    if (c !== undefined && c !== null) {
      const had = decl['x-contract'];
      if (had !== undefined && JSON.stringify(had) !== JSON.stringify(c)) {
        out.push(error('invalid-value', at('steps', s.index, 'contract'), `agent \`${a}\` already has another contract`, { hint: 'an agent has one contract: use the same file in every step of that agent' }));
      } else {
        decl['x-contract'] = c as JsonObject[string];
        agentAt.set(`${a}\u0000x-contract`, at('steps', s.index, 'contract'));
      }
    }
    agents[a] = decl;
  }

  const phases: JsonObject = {};
  const phaseAt = new Map<string, number>();
  for (const s of steps) {
    const p: JsonObject = {};
    const read = new Set<string>();
    for (const [k, v] of Object.entries(s.raw)) {
      if (k === 'id' || k === 'contract') continue;
      if (k === 'inputs' && isPlainObject(v)) p['inputs'] = translateInputs(v, at('steps', s.index, 'inputs'), s.id, artifacts, read, out);
      else if (k === 'forEach') {
        const ref = refText(v, at('steps', s.index, 'forEach'), s.id, artifacts, read, out, ['$ref', '$input']);
        if (ref !== undefined) p['for_each'] = ref;
      } else if (k === 'outputs' && isPlainObject(v)) p['outputs'] = translateOutputs(v);
      else p[RENAMED[k] ?? k] = v as JsonObject[string];
    }
    // an artifact is in the run's tree once stored: a step may read one an ancestor (not only a direct
    // dependency) stored, and that ancestor becomes a direct dependency; a step that is no ancestor stays
    // out, so the compiler says to add it to `dependsOn`
    const deps = Array.isArray(p['depends_on']) ? (p['depends_on'] as unknown[]) : undefined;
    if (deps) {
      const up = ancestorsOf(s.id, byId);
      for (const r of read) if (r !== s.id && up.has(r) && !deps.includes(r)) deps.push(r);
      p['depends_on'] = deps as JsonObject[string];
    }
    phases[s.id] = p;
    phaseAt.set(s.id, s.index);
  }

  const translated: JsonObject = { openintent: '1.0', info, workflow: phases };
  for (const k of Object.keys(doc)) if (k !== 'workflow' && (PASSED.includes(k) || k.startsWith('x-'))) translated[k] = doc[k] as JsonObject[string];
  if (Object.keys(agents).length > 0) translated['agents'] = agents;

  const mapPath = (path: Path): Path => {
    const [head, second, third, ...rest] = path;
    if (path.length === 0) return [];
    if (head === 'openintent') return at();
    if (head === 'info') return second === undefined ? at() : at(second);
    if (head === 'agents' && typeof second === 'string') {
      if (third === 'x-contract') return [...(agentAt.get(`${second}\u0000x-contract`) ?? agentAt.get(second) ?? ['agents', second, third]), ...rest];
      const own = agentAt.get(second);
      if (own) return own;
      return path;
    }
    if (head !== 'workflow') return path;
    if (second === undefined) return at('steps');
    const i = phaseAt.get(String(second));
    if (i === undefined) return at('steps');
    if (third === undefined) return at('steps', i);
    const key = BACK[String(third)] ?? String(third);
    const raw = byId.get(String(second))?.raw;
    // a wrapped value (`{$ref: ...}`): point at the string inside it
    if (key === 'forEach' && rest.length === 0 && isPlainObject(raw?.['forEach'])) return at('steps', i, 'forEach', Object.keys(raw['forEach'])[0] ?? '$ref');
    if (key === 'inputs' && rest.length === 1 && isPlainObject(raw?.['inputs'])) {
      const v = (raw['inputs'])[String(rest[0])];
      if (isPlainObject(v) && Object.keys(v).length === 1) return at('steps', i, 'inputs', rest[0]!, Object.keys(v)[0]!);
    }
    if (key === 'outputs' && rest.length >= 1 && isPlainObject(raw?.['outputs'])) {
      const v = (raw['outputs'])[String(rest[0])];
      // `{$store, type: T}` is translated to T itself: a path into it (`default`, `nullable`) is a path under `type`
      if (isPlainObject(v) && v['$store'] !== undefined && v['type'] !== undefined && Object.keys(v).length === 2) return at('steps', i, 'outputs', rest[0]!, 'type', ...rest.slice(1));
    }
    return at('steps', i, key, ...rest);
  };
  return { doc: translated, mapPath, artifacts };
}

/** A compiler message in the step form's words (`agent`, not `assign`). */
export function stepWords(message: string): string {
  // `phases` as a condition reads it (`phases['a-one'].output`, `phases.b.status`, the names a condition
  // may use) is a name in CEL, the same in both forms: not a word to translate
  const CEL = '\u0000';
  return message
    .replace(/\bphases(?=\s*[.[])/g, CEL)
    .replace(/\b(trigger, initial_state, )phases\b/g, `$1${CEL}`)
    // a step fans out over an artifact, written `{$ref: ...}`, not over `phase.key`
    .replace(/`for_each: (?:phase\.key|outline\.sections)`/g, '`forEach: {$ref: "artifacts.outline.sections"}`')
    // the 1.0 form's example phase, as a step
    .replace(/`(\w+): \{assign: (\w+)\}`/g, '`- {id: $1, agent: $2}`')
    .replace(/`assign(:?(?: [^`]*)?)`/g, '`agent$1`')
    .replace(/\bdepends_on\b/g, 'dependsOn')
    .replace(/\bfor_each\b/g, 'forEach')
    .replace(/\bphases\b/g, 'steps')
    .replace(/\bphase\b/g, 'step')
    .replace(/\bPhases\b/g, 'Steps')
    .replace(/\bPhase\b/g, 'Step')
    .replace(/\u0000/g, 'phases');
}

/** Every `{$store: "artifacts.a.b"}` of every step: its target in the artifacts tree. */
function collectArtifacts(steps: Step[], out: Diagnostic[]): ArtifactTarget[] {
  const targets: (ArtifactTarget & { at: Path })[] = [];
  for (const s of steps) {
    const outputs = s.raw['outputs'];
    if (!isPlainObject(outputs)) continue;
    for (const [key, v] of Object.entries(outputs)) {
      if (!isPlainObject(v) || v['$store'] === undefined) continue;
      const at: Path = ['workflow', 'steps', s.index, 'outputs', key, '$store'];
      const text = v['$store'];
      const path = typeof text === 'string' ? artifactPath(text) : undefined;
      if (path === undefined || typeof text !== 'string') {
        out.push(error('invalid-value', at, `\`$store\` must be \`artifacts.name[.more]\`, got ${JSON.stringify(text)}`, { hint: 'e.g. `{$store: "artifacts.outline"}` or `{$store: "artifacts.drafts.{$item.name}"}`' }));
        continue;
      }
      const clash = targets.find((t) => overlaps(t.path, path));
      if (clash) {
        out.push(error('artifact-conflict', at, `\`${text}\` and \`${clash.text}\` (step \`${clash.phase}\`) store into the same place of the artifacts tree`, { hint: 'give each stored output its own artifact name', related: [{ message: `\`${clash.text}\` stored here`, path: clash.at }] }));
        continue;
      }
      targets.push({ phase: s.id, key, path, text, at });
    }
  }
  return targets.map(({ at: _at, ...t }) => t);
}

/** `artifacts.a.{$item.name}` -> ['a', {item: ['name']}]; undefined when it is not an artifacts path. */
export function artifactPath(text: string): ArtifactSegment[] | undefined {
  const m = /^(?:context\.)?artifacts\.(.+)$/.exec(text);
  if (!m) return undefined;
  const segs: ArtifactSegment[] = [];
  for (const part of m[1]!.split(/\.(?![^{]*\})/)) {
    const item = /^\{\$item((?:\.[\p{L}\p{N}_][\p{L}\p{M}\p{N}_-]*)*)\}$/u.exec(part);
    if (item) segs.push({ item: item[1] ? item[1].slice(1).split('.') : [] });
    else if (/^[A-Za-z0-9_][A-Za-z0-9_-]*$/.test(part)) segs.push(part);
    else return undefined;
  }
  return segs;
}

/** Two targets overlap when one is a prefix of the other (a templated segment matches anything). */
/**
 * Where a fan-out item's output sits in the `artifacts` tree: `t.path` with each `{$item...}` segment
 * replaced by the item's value there. Undefined when the element has no string or number at a slot.
 */
export function itemStorePath(t: ArtifactTarget, element: unknown): string[] | undefined {
  const segs: string[] = [];
  for (const s of t.path) {
    if (typeof s === 'string') {
      segs.push(s);
      continue;
    }
    let v: unknown = element;
    for (const k of s.item) v = isPlainObject(v) && Object.prototype.hasOwnProperty.call(v, k) ? v[k] : undefined;
    if (typeof v !== 'string' && typeof v !== 'number') return undefined;
    segs.push(String(v));
  }
  return segs;
}

function overlaps(a: ArtifactSegment[], b: ArtifactSegment[]): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (typeof x === 'string' && typeof y === 'string' && x !== y) return false;
  }
  return true;
}

function translateOutputs(v: Record<string, unknown>): JsonObject {
  const outputs: JsonObject = {};
  for (const [key, o] of Object.entries(v)) {
    if (isPlainObject(o) && o['$store'] !== undefined) {
      // `{$store: ..., type: T, required: false}`: typed as declared; a bare `$store` is `any`
      const { $store: _store, ...rest } = o;
      outputs[key] = (Object.keys(rest).length === 0 ? 'any' : rest['type'] !== undefined && Object.keys(rest).length === 1 ? rest['type'] : rest) as JsonObject[string];
    } else outputs[key] = o as JsonObject[string];
  }
  return outputs;
}

/** The steps `id` depends on, directly or not, by their `dependsOn` as written. */
function ancestorsOf(id: string, byId: ReadonlyMap<string, Step>): Set<string> {
  const seen = new Set<string>();
  const stack = [id];
  while (stack.length > 0) {
    const deps = byId.get(stack.pop()!)?.raw['dependsOn'];
    if (!Array.isArray(deps)) continue;
    for (const d of deps) {
      if (typeof d !== 'string' || seen.has(d)) continue;
      seen.add(d);
      stack.push(d);
    }
  }
  return seen;
}

function translateInputs(v: Record<string, unknown>, at: Path, step: string, artifacts: ArtifactTarget[], read: Set<string>, out: Diagnostic[]): JsonObject {
  const inputs: JsonObject = {};
  for (const [key, x] of Object.entries(v)) {
    const ref = refText(x, [...at, key], step, artifacts, read, out, ['$input', '$ref', '$item']);
    // an unknown `$ref` was reported: the input is left out, so it is not reported twice
    if (ref !== undefined) inputs[key] = ref;
  }
  return inputs;
}

/** An InputWiringError (RFC-0024 §4.4) of the step form, with the RFC's fields as the 1.0 form's have them. */
function wiring(code: 'input-bad-syntax' | 'unknown-artifact', at: Path, step: string, ref: string, message: string, suggestion: string): Diagnostic {
  return error(code, at, message, { hint: suggestion, error: 'InputWiringError', data: { phase_name: step, invalid_refs: [ref], suggestion } });
}

/**
 * `{$input: k}` -> `$trigger.k`; `{$item: p}` -> `$item.p`; `{$ref: "artifacts.x.y"}` -> `step.key.y`;
 * a string stays as written (the 1.0 form's own references). Anything else goes on as written, so the
 * compiler reports it where it is.
 */
function refText(x: unknown, at: Path, step: string, artifacts: ArtifactTarget[], read: Set<string>, out: Diagnostic[], allowed: readonly string[]): string | undefined {
  if (!isPlainObject(x)) {
    // `forEach: "artifacts.outline.sections"`: an artifact read as a plain string, which the 1.0 form would take for a step `artifacts`
    const path = typeof x === 'string' && allowed.includes('$ref') ? artifactPath(x) : undefined;
    if (path?.every((s) => typeof s === 'string') && artifacts.some((t) => literalPrefix(t.path).every((s, i) => path[i] === s))) {
      out.push(wiring('input-bad-syntax', at, step, x as string, `\`${x as string}\` names an artifact: read it with \`$ref\``, `\`{$ref: ${JSON.stringify(x)}}\``));
      return undefined;
    }
    return x as string;
  }
  const keys = Object.keys(x);
  const k = keys[0];
  if (keys.length !== 1 || k === undefined || !allowed.includes(k)) {
    const examples: Record<string, string> = { $input: '`{$input: topic}`', $ref: '`{$ref: "artifacts.outline"}`', $item: '`{$item: name}`' };
    out.push(wiring('input-bad-syntax', at, step, JSON.stringify(x), `expected one of ${allowed.map((a) => `\`{${a}: ...}\``).join(', ')}`, `e.g. ${allowed.map((a) => examples[a] ?? a).join(' or ')}`));
    return undefined;
  }
  const v = x[k];
  const here = [...at, k];
  if (typeof v !== 'string') {
    out.push(error('wrong-type', here, `\`${k}\` takes a string`, { hint: k === '$input' ? 'e.g. `{$input: topic}`' : k === '$item' ? 'e.g. `{$item: name}`' : 'e.g. `{$ref: "artifacts.outline"}`' }));
    return undefined;
  }
  if (k === '$input') return v === '' ? '$trigger.' : `$trigger.${v}`;
  if (k === '$item') return v === '' ? '$item' : `$item.${v}`;
  const path = artifactPath(v);
  if (!path || path.some((s) => typeof s !== 'string')) {
    out.push(wiring('input-bad-syntax', here, step, v, `\`$ref\` must read \`artifacts.name[.path]\`, got \`${v}\``, 'read an artifact a step stores with `$store`'));
    return undefined;
  }
  const names = path as string[];
  const target = artifacts.find((t) => literalPrefix(t.path).every((s, i) => names[i] === s) && names.length >= literalPrefix(t.path).length);
  if (!target) {
    const known = artifacts.map((t) => t.text);
    const s = didYouMean(v, known);
    out.push(wiring('unknown-artifact', here, step, v, `no step stores \`${v}\``, s ?? (known.length > 0 ? `stored artifacts: ${known.join(', ')}` : 'store an output with `{$store: "artifacts.name"}`')));
    return undefined;
  }
  read.add(target.phase);
  // a templated target (`drafts.{$item.name}`) is read whole: the fan-out's gathered output, in item order
  const rest = names.slice(target.path.every((s) => typeof s === 'string') ? target.path.length : literalPrefix(target.path).length);
  return [target.phase, target.key, ...rest].join('.');
}

function literalPrefix(path: ArtifactSegment[]): string[] {
  const out: string[] = [];
  for (const s of path) {
    if (typeof s !== 'string') break;
    out.push(s);
  }
  return out;
}
