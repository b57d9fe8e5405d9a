/**
 * The workflow compiler: text -> positioned value -> structural checks -> types -> graph ->
 * wiring and edge types -> expressions -> model. Every pass runs and every problem is collected;
 * nothing is thrown for a user's mistake. The model exists only when there are no errors.
 */
import type { Path } from '../core/path.js';
import { open } from 'node:fs/promises';
import { isPlainObject, type Json, type JsonObject } from '../core/json.js';
import { error, hasErrors, warning, type Diagnostic } from '../diagnostics/diagnostic.js';
import { decodeUtf8 } from '../diagnostics/text.js';
import { compileTypes } from '../types/index.js';
import type { CompiledType, TypeRegistry } from '../types/api.js';
import { checkGraph, topologicalOrder, type GraphPhase } from './graph.js';
import type { A2aDecl, AgentDecl, FileEntry, ForEachModel, Governance, OutputDecl, PhaseModel, WorkflowForm, WorkflowModel } from './model.js';
import { agentFields, governanceFields, infoFields, llmFields, PHASE_GATE_HOURS, phaseFields, TOP_LEVEL_KEYS } from './schema.js';
import { checkObject, checkShape, reportUnknownKeys } from './shape.js';
import { parseYamlSource, type ParsedSource } from './source.js';
import { withSubOffset } from './sub-offset.js';
import { checkExpressions, compileExpression } from './expressions.js';
import { buildPhase } from './phase.js';
import { checkInputs, checkOptionalInputs, type RefParse, type WiringContext } from './wiring.js';
import { reportIgnoredKeys } from './ignored.js';
import { checkFanOutSettings, checkForEach, checkItemPaths, checkNullItems, checkItemTokens, gatheredOutputs, INDEX_NAME, ITEM_NAME, itemAwareCondition, namesFile, toleratesAny } from './fan-out.js';
import { fileContractOf, mergeFiles, tokenKind, tokensOf } from './files.js';
import type { Expression } from './expr.js';
import { checkReservedNames, mayHoldReserved } from './reserved.js';
import { checkBlueprints } from './blueprint.js';
import { checkContracts, type BoundAgents, type ContractReport } from './contract/check.js';
import { didYouMean } from '../core/suggest.js';
import { formOf, stepWords, translateSteps } from './steps.js';

/**
 * What the compiler returns: narrow on `ok` (as zod's `safeParse`) and `model` is a `WorkflowModel`;
 * on `ok: false` there is no model and `diagnostics` holds at least one error.
 */
export type CompileResult = CompileSuccess | CompileFailure;

export interface CompileSuccess extends CompileOutcome {
  ok: true;
  model: WorkflowModel;
}

export interface CompileFailure extends CompileOutcome {
  ok: false;
  model: undefined;
}

interface CompileOutcome {
  /** Every diagnostic, positioned (`range` filled in), sorted by position. */
  diagnostics: Diagnostic[];
  file: string;
  text: string;
  /** Contract files read (resolved path -> text): diagnostics with `file` point into them. */
  sources?: Map<string, string>;
  /** Every binding's and edge's contract verdict (`baton check`); undefined when the document did not get that far. */
  contracts?: ContractReport;
  /** Which form the file is written in (undefined when it is not YAML at all): Workflow YAML 1.0, or the contract spec's step form. */
  form?: WorkflowForm;
}

/** `bound`: agents bound from code (`defineAgent` handlers of an `--agents` module), whose contracts and versions the contract checks use. */
export interface CompileOptions {
  file?: string | undefined;
  bound?: BoundAgents | undefined;
}

/** Largest workflow file read (a 10,000-phase workflow is 3.4 MB); `/dev/zero` or a runaway pipe stops here. */
export const MAX_WORKFLOW_BYTES = 64 * 1024 * 1024;

export async function loadWorkflow(path: string, opts: Omit<CompileOptions, 'file'> = {}): Promise<CompileResult> {
  let bytes: Buffer;
  try {
    const read = await readBounded(path, MAX_WORKFLOW_BYTES);
    if (read === undefined) {
      const d = error('file-unreadable', [], `cannot read ${path}: larger than ${MAX_WORKFLOW_BYTES / 1024 / 1024} MB (the limit); is it a workflow?`);
      return { ok: false, model: undefined, diagnostics: [d], file: path, text: '' };
    }
    bytes = read;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' ? 'permission denied' : String((e as Error).message);
    return { ok: false, model: undefined, diagnostics: [error('file-unreadable', [], `cannot read ${path}: ${why}`)], file: path, text: '' };
  }
  return parseWorkflowBytes(bytes, { ...opts, file: path });
}

/** The file's bytes, or undefined past `limit` (read in pieces: works for pipes and devices, never reads on forever). */
export async function readBounded(path: string, limit: number): Promise<Buffer | undefined> {
  const fh = await open(path, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buf = Buffer.allocUnsafe(Math.min(1024 * 1024, limit + 1 - total));
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      chunks.push(buf.subarray(0, bytesRead));
      total += bytesRead;
      if (total > limit) return undefined;
    }
    return Buffer.concat(chunks, total);
  } finally {
    await fh.close();
  }
}

/** Compiles a file's bytes: text that is not UTF-8 is reported at its first bad byte, never replaced silently. */
export function parseWorkflowBytes(bytes: Uint8Array, opts: CompileOptions = {}): CompileResult {
  const file = opts.file ?? '<workflow>';
  const { text, invalid } = decodeUtf8(bytes);
  if (invalid) {
    const byte = `0x${invalid.byte.toString(16).toUpperCase().padStart(2, '0')}`;
    const d = error('not-utf8', [], `the file is not UTF-8: byte ${byte} cannot appear here in UTF-8 text`, {
      range: [invalid.offset, invalid.offset + 1],
      hint: 'save the file as UTF-8 (it may be Latin-1 or UTF-16); a binary file is not a workflow',
    });
    return { ok: false, model: undefined, diagnostics: [d], file, text };
  }
  return parseWorkflow(text, { ...opts, file });
}

export function parseWorkflow(text: string, opts: CompileOptions = {}): CompileResult {
  const file = opts.file ?? '<workflow>';
  const source = parseYamlSource(text);
  const diagnostics = [...source.diagnostics];
  let model: WorkflowModel | undefined;
  const extras: Extras = { text, ...(opts.bound ? { bound: opts.bound } : {}) };
  if (source.diagnostics.length === 0 || source.recovered) {
    if (formOf(source.value) === 'steps') {
      // the contract spec's step form: translated, compiled as the 1.0 form, positioned in the file as written
      // (offsets inside strings hold: conditions and file paths are copied as written)
      const own: Diagnostic[] = [];
      const t = translateSteps(source.value as Record<string, unknown>, own);
      positionAll(source, text, own);
      const rest: Diagnostic[] = [];
      model = compileDocument(t.doc, file, rest, extras);
      for (const d of rest) {
        if (d.file !== undefined) continue; // inside a contract file: its own paths, its own words
        d.path = t.mapPath(d.path);
        d.message = stepWords(d.message);
        if (d.data?.['field'] === 'assign') d.data['field'] = 'agent';
        if (d.hint !== undefined) d.hint = stepWords(d.hint);
        for (const r of d.related ?? []) r.path = t.mapPath(r.path);
      }
      diagnostics.push(...own, ...rest);
      if (model) {
        model.form = 'steps';
        model.artifacts = t.artifacts;
        // positioned with the rest below
        checkStoreItems(model, source.value as Record<string, unknown>, diagnostics);
        for (const p of model.phases) if (p.forEach) p.forEach.at = t.mapPath(p.forEach.at);
      }
      if (hasErrors(own)) model = undefined;
    } else model = compileDocument(source.value, file, diagnostics, extras);
  }
  if (model) model.sourceText = text;
  positionAll(source, text, diagnostics);
  // a text that is neither form (empty, a scalar, a mapping with neither `openintent` nor `workflow`) names none
  const doc = source.value;
  const form = (source.diagnostics.length === 0 || source.recovered) && isPlainObject(doc) && (doc['openintent'] !== undefined || doc['workflow'] !== undefined) ? formOf(doc) : undefined;
  const rest = { diagnostics, file, text, ...(form !== undefined ? { form } : {}), ...(extras.sources ? { sources: extras.sources } : {}), ...(extras.contracts ? { contracts: extras.contracts } : {}) };
  return model && !hasErrors(diagnostics) ? { ok: true, model, ...rest } : { ok: false, model: undefined, ...rest };
}

interface Extras {
  bound?: BoundAgents;
  /** The text the document was read from: when it cannot hold a reserved name (reserved.ts), the document is not walked for one. */
  text?: string;
  sources?: Map<string, string>;
  contracts?: ContractReport;
}

function positionAll(source: ParsedSource, text: string, diagnostics: Diagnostic[]): void {
  for (const d of diagnostics) {
    if (d.file !== undefined) continue; // positioned in its own file (a contract)
    if (!d.range) d.range = withSubOffset(d, source.locate(d.path, d.target ?? 'value'), text, source.value);
    for (const rel of d.related ?? []) if (!rel.range) rel.range = source.locate(rel.path, rel.target ?? 'value');
  }
  diagnostics.sort((a, b) => (a.file ?? '').localeCompare(b.file ?? '') || (a.range?.[0] ?? -1) - (b.range?.[0] ?? -1));
}


const ANY_TYPE = 'any';

function compileDocument(doc: unknown, file: string, out: Diagnostic[], extras: Extras = {}): WorkflowModel | undefined {
  if (!isPlainObject(doc)) {
    const empty = doc === null || doc === undefined;
    // an empty (or comments-only) file has no node to point at: the diagnostic goes to 1:1
    out.push(error('wrong-type', [], empty ? 'the file is empty' : 'a workflow must be a YAML mapping', { hint: 'start with `openintent: "1.0"`, `info:` and `workflow:`', ...(empty ? { range: [0, 0] as const } : {}) }));
    return undefined;
  }
  reportUnknownKeys(doc, TOP_LEVEL_KEYS, [], out);
  // accepted so that workflows written for the whole protocol load, but nothing reads them: said once each
  reportIgnoredKeys(doc, [], out);
  if (extras.text === undefined || mayHoldReserved(extras.text)) checkReservedNames(doc, out);

  // openintent
  const version = doc['openintent'];
  if (version === undefined || version === null) {
    out.push(error('missing-field', [], "Missing 'openintent' version field", { hint: 'Add \'openintent: "1.0"\' at the top of your file', error: 'WorkflowValidationError', data: { field: 'openintent' } })); // the spec's words (Example Validation Errors)
  } else if (version === 1) {
    out.push(warning('wrong-type', ['openintent'], 'the version should be the string "1.0"', { hint: 'quote it: `openintent: "1.0"`' }));
  } else if (typeof version !== 'string') {
    out.push(error('wrong-type', ['openintent'], 'the version must be the string "1.0"', { hint: 'write `openintent: "1.0"`' }));
  } else if (version !== '1.0') {
    out.push(error('unsupported-version', ['openintent'], `unsupported version \`${version}\`: Baton reads OpenIntent Workflow YAML 1.0`, { hint: 'write `openintent: "1.0"`' }));
  }

  // info
  const info = doc['info'];
  if (info === undefined || info === null) out.push(error('missing-field', [], 'missing required field `info`', { hint: 'add `info:` with at least `name: "..."`', error: 'WorkflowValidationError', data: { field: 'info' } }));
  else checkShape(info, { t: 'object', fields: infoFields }, ['info'], out);

  if (doc['governance'] != null) checkShape(doc['governance'], { t: 'object', fields: governanceFields }, ['governance'], out);
  if (doc['llm'] != null) checkShape(doc['llm'], { t: 'object', fields: llmFields }, ['llm'], out);
  const agents = checkAgents(doc['agents'], out);

  const { registry, diagnostics: typeDiags } = compileTypes(doc['types'] ?? undefined, ['types']);
  out.push(...typeDiags);
  const any = registry.compile(ANY_TYPE, []).type!;
  const trigger = compileTrigger(doc['x-trigger'], registry, any, out);

  const wf = doc['workflow'];
  if (wf === undefined || wf === null) {
    out.push(error('missing-field', [], 'missing required field `workflow`', { hint: 'add `workflow:` with at least one phase', error: 'WorkflowValidationError', data: { field: 'workflow' } }));
    return undefined;
  }
  if (!isPlainObject(wf)) {
    out.push(error('wrong-type', ['workflow'], 'expected a mapping of phase names to phases'));
    return undefined;
  }
  const names = Object.keys(wf);
  if (names.length === 0) out.push(error('empty-workflow', ['workflow'], 'the workflow has no phases', { hint: 'add a phase: `research: {assign: researcher}`' }));

  // structural pass over phases
  const phaseRaw = new Map<string, Record<string, unknown>>();
  // phaseRaw's keys and values, in its order: walked by index (no entry allocated, no lookup per step)
  const kept: string[] = [];
  const keptRaw: Record<string, unknown>[] = [];
  for (const name of names) {
    const raw = wf[name];
    if (!isPlainObject(raw)) {
      // `assign:researcher` (no space after the colon) is a string to YAML, not a key and its value
      const glued = typeof raw === 'string' ? /^([A-Za-z_][\w-]*):(\S.*)$/.exec(raw) : null;
      const hint = glued ? `a space must follow the colon of a key: \`${glued[1]!}: ${glued[2]!}\`` : 'give it at least `assign: agent-id`';
      out.push(error('wrong-type', ['workflow', name], `phase \`${name}\` must be a mapping`, { hint }));
      continue;
    }
    // the phase name is its identifier (depends_on, inputs, task ids): an empty one names nothing
    if (name.trim() === '') out.push(error('invalid-value', ['workflow', name], 'a phase name must not be empty', { target: 'key', hint: 'name the phase: `research: {assign: researcher}`' }));
    // a fan-out item's task is keyed `phase[index]` (engine/state.ts): a phase name must not look like one
    if (/\[\d+\]$/.test(name)) out.push(error('reserved-name', ['workflow', name], `phase name \`${name}\` ends in \`[N]\`, which Baton keeps for fan-out items (\`phase[index]\`)`, { target: 'key', hint: 'rename the phase' }));
    const at: Path = ['workflow', name]; // shared by the checks below: a diagnostic's path is never changed in place
    checkObject(raw, phaseFields, at, out);
    // a phase gate's timeout is a deadline like the run's (engine/plan.ts reads the rest of the extension)
    const gate = raw['x-require_approval'];
    if (isPlainObject(gate) && gate['timeout_hours'] !== undefined) checkShape(gate['timeout_hours'], PHASE_GATE_HOURS, ['workflow', name, 'x-require_approval', 'timeout_hours'], out);
    checkFanOutSettings(raw, at, out);
    checkRetrySettings(raw, at, out);
    reportIgnoredKeys(raw, at, out);
    phaseRaw.set(name, raw);
    kept.push(name);
    keptRaw.push(raw);
  }

  // graph
  const graphPhases: GraphPhase[] = [];
  for (let k = 0; k < kept.length; k++) {
    const name = kept[k]!;
    const raw = keptRaw[k]!;
    const written = raw['depends_on'];
    const dependsOn: { name: string; index: number }[] = [];
    if (Array.isArray(written)) {
      for (let index = 0; index < written.length; index++) {
        const d: unknown = written[index];
        if (typeof d === 'string' && d !== '') dependsOn.push({ name: d, index });
      }
    }
    graphPhases.push({ name, title: typeof raw['title'] === 'string' ? raw['title'] : undefined, dependsOn });
  }
  // a phase name written twice: the last definition is read (and a copy pasted under the same name may depend on it)
  const duplicated = new Set(out.flatMap((d) => (d.code === 'duplicate-key' && d.path.length === 2 && d.path[0] === 'workflow' && typeof d.path[1] === 'string' ? [d.path[1]] : [])));
  const edges = checkGraph(graphPhases, out, duplicated);

  // outputs (all phases first: wiring reads upstream declarations)
  const outputs = new Map<string, OutputDecl[] | undefined>();
  for (let k = 0; k < kept.length; k++) outputs.set(kept[k]!, compileOutputs(keptRaw[k]!['outputs'], kept[k]!, registry, any, out));

  // agents referenced
  if (agents) {
    for (let k = 0; k < kept.length; k++) {
      const name = kept[k]!;
      const raw = keptRaw[k]!;
      const assign = raw['assign'];
      if (typeof assign === 'string' && assign !== '' && !agents[assign]) {
        const hint = didYouMean(assign, Object.keys(agents));
        out.push(warning('undeclared-agent', ['workflow', name, 'assign'], `agent \`${assign}\` is not declared in \`agents\``, { hint: hint ?? 'declare it under `agents:` or fix the name' }));
      }
      const fb = isPlainObject(raw['retry']) ? raw['retry']['fallback_agent'] : undefined;
      if (typeof fb === 'string' && fb !== '' && !agents[fb]) {
        const hint = didYouMean(fb, Object.keys(agents));
        out.push(warning('undeclared-agent', ['workflow', name, 'retry', 'fallback_agent'], `fallback agent \`${fb}\` is not declared in \`agents\``, { hint: hint ?? 'declare it under `agents:`' }));
      }
    }
  }

  // wiring, expressions, model
  const phaseNames = new Set(kept);
  const ancestorsCache = new Map<string, Set<string>>();
  const ancestors = (name: string): Set<string> => ancestorsOf(name, edges, ancestorsCache);
  // a fan-out phase's outputs reach downstream gathered into arrays
  const outputsOf = (p: string): OutputDecl[] | undefined => fanOuts.get(p)?.gathered ?? outputs.get(p);
  const parsed = new Map<string, RefParse>();
  const wiring = (name: string, item?: CompiledType): WiringContext => {
    const ctx: WiringContext = { phaseName: name, dependsOn: new Set(edges.get(name)), phaseNames, outputsOf, types: registry, any, parsed };
    if (trigger) ctx.trigger = trigger;
    if (item) ctx.item = item;
    return ctx;
  };
  // fan-outs first, upstream before downstream: a `for_each` may read another fan-out's gathered outputs
  const fanOuts = new Map<string, ForEachModel>();
  const fanOutNames = new Set<string>();
  // every phase, those on a cycle last (topologicalOrder places them all)
  const ordered = topologicalOrder(kept, edges);
  for (const name of ordered) {
    const raw = phaseRaw.get(name);
    if (!raw || raw['for_each'] === undefined || raw['for_each'] === null) continue;
    fanOutNames.add(name);
    const f = checkForEach(raw, ['workflow', name], wiring(name), out);
    if (!f) continue;
    const skip = typeof raw['skip_when'] === 'string' ? itemAwareCondition(raw['skip_when']).uses.some((u) => u.name === '$item' || u.name === '$index') : false;
    const gathered = gatheredOutputs(outputs.get(name), skip || toleratesAny(f.toleratedFailures), (n) => registry.fromNode(n));
    fanOuts.set(name, { ...f, itemSkip: skip, gathered });
  }
  const phases: PhaseModel[] = [];
  for (let k = 0; k < kept.length; k++) {
    const name = kept[k]!;
    const raw = keptRaw[k]!;
    const deps = edges.get(name) ?? [];
    const fanOut = fanOuts.get(name);
    // a `for_each` that did not resolve still makes a fan-out phase: `$item` is then `any`, not an error again
    const item = fanOut?.itemType ?? (fanOutNames.has(name) ? any : undefined);
    const ctx = wiring(name, item);
    const inputs = isPlainObject(raw['inputs']) ? checkInputs(raw['inputs'], ctx, out) : undefined;
    if (fanOut && inputs) checkNullItems(name, fanOut, inputs, raw['skip_when'], out);
    if (inputs) checkOptionalInputs(ctx, inputs, raw['skip_when'], out);
    const skipWhen = typeof raw['skip_when'] === 'string' ? compileSkipWhen(raw['skip_when'], name, item !== undefined, out) : undefined;
    if (skipWhen) checkExpressions(skipWhen, ['workflow', name, 'skip_when'], { phaseName: name, phaseNames, ancestors: ancestors(name), outputsOf: ctx.outputsOf, ...(item ? { extra: [ITEM_NAME, INDEX_NAME] } : {}) }, out);
    if (skipWhen && item) checkItemPaths(skipWhen, ['workflow', name, 'skip_when'], item, registry, out);
    const files = fileContractOf(raw, ['workflow', name], { fanOut: item !== undefined }, out);
    if (files && item) checkItemTokens(files, ['workflow', name], item, registry, out);
    const phase = buildPhase(name, raw, deps, inputs, outputs.get(name), skipWhen, registry);
    if (fanOut) phase.forEach = fanOut;
    if (files) phase.files = files;
    phases.push(phase);
  }
  checkAgentItemTokens(phases, agents, out);
  // an agent's files in the fan-out phases it runs: `<item.x>` against each phase's item type
  for (const p of phases) {
    const files = p.forEach ? agents?.[p.assign]?.files : undefined;
    if (!files || !p.forEach) continue;
    const own = new Set([...(p.files?.inputs ?? []), ...(p.files?.outputs ?? [])].map((e) => e.key));
    checkItemTokens(files, ['agents', p.assign], p.forEach.itemType, registry, out, ` (in phase \`${p.name}\`)`, own);
  }
  const llmPass = checkBlueprints(doc, agents, phases, file, out); // LLM agents: blueprints, mcp (blueprint.ts)
  const contractPass = checkContracts(doc, agents, phases, file, out, extras.bound); // agent contracts (contract/check.ts)
  checkContractItemFields(phases, agents, registry, out);
  if (contractPass.sources.size > 0) extras.sources = contractPass.sources;
  extras.contracts = contractPass.report;
  const governance = buildGovernance(doc['governance'], out);
  if (governance.requireApproval?.when) checkExpressions(governance.requireApproval.when, ['governance', 'require_approval', 'when'], { phaseName: undefined, phaseNames, ancestors: phaseNames }, out);
  if (hasErrors(out)) return undefined;

  const infoObj = info as Record<string, unknown>;
  return {
    file,
    openintent: '1.0',
    info: {
      name: String(infoObj['name']),
      version: typeof infoObj['version'] === 'string' ? infoObj['version'] : '1.0.0',
      ...(typeof infoObj['description'] === 'string' ? { description: infoObj['description'] } : {}),
    },
    governance,
    agents,
    llm: isPlainObject(doc['llm']) ? (doc['llm'] as JsonObject) : undefined,
    types: registry,
    phases,
    byName: new Map(phases.map((p) => [p.name, p])),
    order: ordered, // the phases are phaseRaw's, in its order
    extensions: extensionsOf(doc),
    form: 'openintent',
    artifacts: [],
    ...(llmPass.mcp ? { mcp: llmPass.mcp } : {}),
    ...(trigger ? { trigger } : {}),
  };
}

/**
 * `x-trigger`: the trigger's type, written as a phase's `outputs` are (`{topic: string, depth:
 * {type: integer, required: false}}`) or as one type (`Request`, a record of the `types` block).
 */
function compileTrigger(raw: unknown, registry: TypeRegistry, any: CompiledType, out: Diagnostic[]): CompiledType | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isPlainObject(raw)) {
    const r = registry.compile(raw, ['x-trigger']);
    out.push(...r.diagnostics);
    return r.type;
  }
  const fields = Object.entries(raw).map(([key, expr]) => {
    const r = registry.compile(expr, ['x-trigger', key]);
    out.push(...r.diagnostics);
    return { name: key, type: (r.type ?? any).node, required: r.required };
  });
  return registry.fromNode({ kind: 'record', fields });
}

export function extensionsOf(obj: Record<string, unknown>): Record<string, Json> {
  const ext: Record<string, Json> = {};
  for (const [k, v] of Object.entries(obj)) if (k.startsWith('x-')) ext[k] = v as Json;
  return ext;
}

function checkAgents(raw: unknown, out: Diagnostic[]): Record<string, AgentDecl> | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isPlainObject(raw)) {
    out.push(error('wrong-type', ['agents'], 'expected a mapping of agent ids to agent declarations'));
    return undefined;
  }
  const agents: Record<string, AgentDecl> = Object.create(null) as Record<string, AgentDecl>;
  for (const [id, decl] of Object.entries(raw)) {
    const d = decl ?? {};
    if (!isPlainObject(d)) {
      out.push(error('wrong-type', ['agents', id], `agent \`${id}\` must be a mapping`));
      continue;
    }
    checkObject(d, agentFields, ['agents', id], out);
    const cmd = d['x-command'];
    const caps = d['capabilities'];
    agents[id] = {
      id,
      ...(typeof d['description'] === 'string' ? { description: d['description'] } : {}),
      capabilities: Array.isArray(caps) ? caps.filter((c): c is string => typeof c === 'string') : [],
      ...(d['default_permission'] === 'read' || d['default_permission'] === 'write' || d['default_permission'] === 'admin' ? { defaultPermission: d['default_permission'] } : {}),
      approvalRequired: d['approval_required'] === true,
      ...(typeof cmd === 'string' || (Array.isArray(cmd) && cmd.every((c) => typeof c === 'string')) ? { command: cmd } : {}),
      ...(d['x-mode'] === 'serve' || d['x-mode'] === 'once' ? { mode: d['x-mode'] } : {}),
      ...(typeof d['version'] === 'string' ? { version: d['version'] } : {}),
      extensions: extensionsOf(d),
    };
    const a2a = a2aOf(d['x-a2a'], ['agents', id, 'x-a2a'], out);
    if (a2a) agents[id].a2a = a2a;
    const files = fileContractOf(d, ['agents', id], { fanOut: undefined }, out);
    if (files) agents[id].files = files;
  }
  return agents;
}

/** `x-a2a`: its shape is checked by the schema (schema.ts); here the URL must be http(s). */
function a2aOf(raw: unknown, path: (string | number)[], out: Diagnostic[]): A2aDecl | undefined {
  if (!isPlainObject(raw) || typeof raw['url'] !== 'string' || raw['url'] === '') return undefined;
  let ok = false;
  try {
    const u = new URL(raw['url']);
    ok = u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    ok = false;
  }
  if (!ok) {
    out.push(error('invalid-value', [...path, 'url'], `\`${raw['url'].slice(0, 200)}\` is not an http(s) URL`, { hint: 'give the agent\'s base URL, e.g. `url: http://127.0.0.1:41241`' }));
    return undefined;
  }
  return {
    url: raw['url'],
    ...(typeof raw['skill'] === 'string' && raw['skill'] !== '' ? { skill: raw['skill'] } : {}),
    ...(typeof raw['token_env'] === 'string' && raw['token_env'] !== '' ? { tokenEnv: raw['token_env'] } : {}),
    ...(typeof raw['streaming'] === 'boolean' ? { streaming: raw['streaming'] } : {}),
  };
}

/** The output key an agent reports its spend in: taken as cost and removed before validation (docs/executor.md). */
const COST_KEY = '_cost';

function costKeyError(path: Path, target: 'key' | 'value'): Diagnostic {
  return error('reserved-name', path, `\`${COST_KEY}\` cannot be an output: an agent's \`${COST_KEY}\` is taken as its spend in USD and removed from the output, so the phase could never complete`, { target, hint: 'name the output otherwise, e.g. `cost_usd`' });
}

function compileOutputs(raw: unknown, phase: string, registry: TypeRegistry, any: CompiledType, out: Diagnostic[]): OutputDecl[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (Array.isArray(raw)) {
    // list form: `outputs: [findings, recommendations]` declares keys without types
    const decls: OutputDecl[] = [];
    const seen = new Set<string>();
    raw.forEach((k, i) => {
      if (k === COST_KEY) out.push(costKeyError(['workflow', phase, 'outputs', i], 'value'));
      if (typeof k !== 'string' || k === '') return;
      if (seen.has(k)) {
        out.push(warning('duplicate-output', ['workflow', phase, 'outputs', i], `\`${k}\` is listed more than once in outputs`, { hint: 'remove the repeated entry' }));
        return;
      }
      seen.add(k);
      decls.push({ key: k, type: any, required: true });
    });
    return decls;
  }
  if (!isPlainObject(raw)) return undefined;
  const decls: OutputDecl[] = [];
  for (const key of Object.keys(raw)) {
    if (key === COST_KEY) out.push(costKeyError(['workflow', phase, 'outputs', key], 'key'));
    const r = registry.compile(raw[key], ['workflow', phase, 'outputs', key]);
    for (const d of r.diagnostics) out.push(d);
    decls.push({ key, type: r.type ?? any, required: r.required });
  }
  return decls;
}

function ancestorsOf(name: string, edges: Map<string, string[]>, cache: Map<string, Set<string>>): Set<string> {
  const hit = cache.get(name);
  if (hit) return hit;
  const seen = new Set<string>();
  const stack = [...(edges.get(name) ?? [])];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (seen.has(n) || n === name) continue;
    seen.add(n);
    for (const d of edges.get(n) ?? []) stack.push(d);
  }
  cache.set(name, seen);
  return seen;
}

function buildGovernance(raw: unknown, out: Diagnostic[]): Governance {
  if (!isPlainObject(raw)) return {};
  const g: Governance = {};
  const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const ra = raw['require_approval'];
  if (isPlainObject(ra)) {
    const when = typeof ra['when'] === 'string' ? compileCondition(ra['when'], ['governance', 'require_approval', 'when'], out) : undefined;
    const onTimeout = ra['on_timeout'];
    const th = num(ra['timeout_hours']);
    g.requireApproval = {
      ...(when ? { when } : {}),
      approvers: strs(ra['approvers']),
      ...(th !== undefined ? { timeoutHours: th } : {}),
      onTimeout: onTimeout === 'abort' || onTimeout === 'proceed' ? onTimeout : 'escalate',
    };
  }
  const mc = num(raw['max_cost_usd']);
  if (mc !== undefined) g.maxCostUsd = mc;
  const th = num(raw['timeout_hours']);
  if (th !== undefined) g.timeoutHours = th;
  const esc = raw['escalation'];
  if (isPlainObject(esc)) {
    const ah = num(esc['after_hours']);
    g.escalation = { ...(typeof esc['contact'] === 'string' ? { contact: esc['contact'] } : {}), ...(ah !== undefined ? { afterHours: ah } : {}) };
  }
  const ar = raw['access_review'];
  if (isPlainObject(ar)) {
    const o = ar['on_request'];
    const t = num(ar['timeout_hours']);
    g.accessReview = { onRequest: o === 'approve' || o === 'deny' ? o : 'defer', approvers: strs(ar['approvers']), ...(t !== undefined ? { timeoutHours: t } : {}) };
  }
  return g;
}

/** A workflow-level condition: `$trigger.x` / `$initial_state.x` read as in `skip_when`; `$item` is not rewritten (there is no item). */
function compileCondition(source: string, path: Path, out: Diagnostic[]): Expression | undefined {
  if (source.trim() === '') return undefined; // the shape check said it: `must not be empty`, once
  const { text } = itemAwareCondition(source, false);
  const expr = compileExpression(text, path, out);
  return expr && text !== source ? { ...expr, source } : expr;
}

/** `skip_when`, where `$item` / `$index` read the current item of a fan-out phase (and are an error elsewhere). */
function compileSkipWhen(source: string, phase: string, fanOut: boolean, out: Diagnostic[]): Expression | undefined {
  const path = ['workflow', phase, 'skip_when'];
  if (source.trim() === '') return undefined; // the shape check said it: `must not be empty`, once
  const { text, uses } = itemAwareCondition(source);
  if (!fanOut) {
    for (const u of uses) out.push(error('item-outside-for-each', path, `\`skip_when\` reads \`${u.name}\`, but phase \`${phase}\` has no \`for_each\``, { hint: 'add `for_each` to the phase, or read an upstream phase instead', data: { offset: u.offset, length: u.name.length } }));
    if (uses.length > 0) return undefined;
  }
  const expr = compileExpression(text, path, out);
  // evaluated as rewritten; shown (in a skip's detail, a failure's message) as written
  return expr && text !== source ? { ...expr, source } : expr;
}

/**
 * A contract's files in the fan-out phases its agent runs: `<item.x>` against each phase's item type, as an
 * agent's own are (the contract may be in another file or in code: positioned on the phase's `assign`).
 * Keys the agent or the phase declares themselves win over the contract's and are not its to check.
 */
function checkContractItemFields(phases: PhaseModel[], agents: Record<string, AgentDecl> | undefined, registry: TypeRegistry, out: Diagnostic[]): void {
  for (const p of phases) {
    const c = p.forEach ? agents?.[p.assign]?.contract : undefined;
    if (!c?.files || !p.forEach) continue;
    const own = mergeFiles(agents?.[p.assign]?.files, p.files);
    const theirs = (list: readonly FileEntry[], mine: readonly FileEntry[] | undefined): FileEntry[] => list.filter((e) => !mine?.some((x) => x.key === e.key));
    const found: Diagnostic[] = [];
    checkItemTokens({ inputs: theirs(c.files.inputs, own?.inputs), outputs: theirs(c.files.outputs, own?.outputs) }, [], p.forEach.itemType, registry, found);
    const where = c.origin.at.file !== undefined ? ` in ${c.origin.at.file}` : '';
    for (const d of found) {
      const [side, key] = d.path as [string, string];
      out.push(error('input-path-invalid', ['workflow', p.name, 'assign'], `agent \`${p.assign}\`'s contract${where} declares ${side} \`${key}\`: ${d.message}`, { ...(d.hint !== undefined ? { hint: d.hint } : {}), data: { phase: p.name, agent: p.assign, key } }));
    }
  }
}

/**
 * An agent's files that name an item (`<index>`, `<item.x>`) fit only phases with `for_each` (the assigned
 * agent's and the fallback's), unless the phase declares the same key on the same side: its entry wins.
 */
function checkAgentItemTokens(phases: PhaseModel[], agents: Record<string, AgentDecl> | undefined, out: Diagnostic[]): void {
  if (!agents) return;
  const reported = new Set<string>();
  for (const p of phases) {
    if (p.forEach) continue;
    for (const agent of [p.assign, ...(p.retry.fallbackAgent ? [p.retry.fallbackAgent] : [])]) {
      const files = agents[agent]?.files;
      if (!files) continue;
      for (const [side, list, own] of [['inputsFiles', files.inputs, p.files?.inputs], ['outputsFiles', files.outputs, p.files?.outputs]] as const) {
        for (const e of list) {
          if (own?.some((x) => x.key === e.key)) continue;
          const t = tokensOf(e.path).find((x) => tokenKind(x.name) === 'item');
          if (!t) continue;
          // one error per entry, naming the first phase that cannot use it
          const id = `${agent}\u0000${side}\u0000${e.key}`;
          if (reported.has(id)) continue;
          reported.add(id);
          out.push(error('item-outside-for-each', ['agents', agent, side, e.key, 'path'], `\`<${t.name}>\` names a fan-out item, but phase \`${p.name}\` (agent \`${agent}\`) has no \`for_each\``, { hint: 'declare the file on the fan-out phase instead, or drop the item token', data: { offset: t.offset, length: t.name.length + 2 } }));
        }
      }
    }
  }
}

/**
 * Step form: `{$item.a.b}` segments of a fan-out step's `$store` target, against its item type. A field
 * the type does not have, or a value that is never a string or a number, places no item in the
 * `artifacts` tree (input-path-invalid, on the segment inside the `$store` string).
 */
function checkStoreItems(model: WorkflowModel, doc: Record<string, unknown>, out: Diagnostic[]): void {
  const steps = isPlainObject(doc['workflow']) && Array.isArray(doc['workflow']['steps']) ? (doc['workflow']['steps'] as unknown[]) : [];
  const registry = model.types;
  for (const t of model.artifacts) {
    const fe = model.byName.get(t.phase)?.forEach;
    if (!fe) continue;
    const index = steps.findIndex((s) => isPlainObject(s) && s['id'] === t.phase);
    if (index < 0) continue;
    let from = 0;
    for (const seg of t.path) {
      if (typeof seg === 'string') continue;
      const written = `{$item${seg.item.map((k) => `.${k}`).join('')}}`;
      const offset = t.text.indexOf(written, from);
      from = offset + written.length;
      const found = registry.lookup(fe.itemType, seg.item);
      const message = !found.ok ? found.message : namesFile(found.type) ? undefined : `it is \`${found.type.text}\`, never a string or a number`;
      if (message === undefined) continue;
      out.push(
        error('input-path-invalid', ['workflow', 'steps', index, 'outputs', t.key, '$store'], `\`${written}\`: ${message}; no item can be stored at \`${t.text}\``, {
          hint: !found.ok ? (found.hint ?? 'read a field the item type declares') : 'store under a string or number field of the item (`{$item.name}`)',
          data: offset >= 0 ? { offset, length: written.length } : {},
        }),
      );
    }
  }
}

/**
 * `retryable_errors: []` lists no error, which reads as "retry nothing" but acts as no filter at all
 * (the key absent: every retryable failure is retried). Said, not guessed: a warning at the key.
 */
function checkRetrySettings(raw: Record<string, unknown>, at: Path, out: Diagnostic[]): void {
  const retry = raw['retry'];
  if (!isPlainObject(retry) || !Array.isArray(retry['retryable_errors']) || retry['retryable_errors'].length > 0) return;
  out.push(
    warning('retry-setting-unused', [...at, 'retry', 'retryable_errors'], 'an empty `retryable_errors` filters nothing: every retryable failure is retried, as without the key', {
      hint: 'list the error codes to retry (`[Timeout, llm_rate_limited]`), remove the key, or set `max_attempts: 1` to retry nothing',
    }),
  );
}
