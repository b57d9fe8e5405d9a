/**
 * Agent contracts at compile time (one call from compile.ts, after the blueprint pass):
 * - reads every agent's contract (`x-contract` file or mapping) and folds an LLM blueprint's
 *   `parameters_schema` / `output_schema` into the same model (the contract's own schemas win);
 * - each phase's wired input type against its agent's input schema, each phase's declared outputs
 *   against the agent's output schema (JSON Schema subtyping, src/types/subschema.ts);
 * - `requiresContext` / `providesContext` along the graph, `minAgentVersion`, `sideEffects` conflicts.
 * The per-phase verdicts are kept in a report for `baton check`.
 */
import { isPlainObject } from '../../core/json.js';
import type { Path } from '../../core/path.js';
import { error, warning, type Diagnostic } from '../../diagnostics/diagnostic.js';
import { isSubschema, verdictOf, type SchemaFinding, type SubschemaResult, type Verdict } from '../../types/subschema.js';
import { SchemaCompiler } from '../json-schema.js';
import type { AgentDecl, FileContract, PhaseModel } from '../model.js';
import { mergeFiles, tokenKind, tokensOf } from '../files.js';
import { FS_ROOT_KEY } from '../wiring.js';
import { checkSideEffects } from './effects.js';
import { contractOf, type LoadedContractFile } from './load.js';
import { emptyContract, type AgentContract, type Loc } from './model.js';
import { compareVersions } from './version.js';

export type BindingVerdict = Verdict | 'none';

export interface BindingReport {
  phase: string;
  agent: string;
  role: 'assign' | 'fallback';
  contract: AgentContract['origin']['kind'] | 'none';
  input: BindingVerdict;
  output: BindingVerdict;
  findings: (SchemaFinding & { side: 'input' | 'output' })[];
}

export interface EdgeReport {
  from: string;
  to: string;
  /** Input names of `to` wired from `from`. */
  keys: string[];
  /** `none`: the consumer's agent declares no input schema (only the compiler's edge typing applies). */
  verdict: BindingVerdict;
}

export interface ContractReport {
  bindings: BindingReport[];
  edges: EdgeReport[];
}

/** Agents bound from code: their versions and contracts (`defineAgent`), keyed by agent id. `module` names where they came from. */
export interface BoundAgents {
  module: string;
  agents: Record<string, { version?: string; contract?: AgentContract }>;
}

export interface ContractPass {
  /** Contract files read (resolved path -> text), for rendering their diagnostics. */
  sources: Map<string, string>;
  report: ContractReport;
}

/** Codes whose warnings `baton validate` shows; the other may-fail notes are in `baton check`'s report. */
const SHOWN_WARNINGS = new Set(['missing', 'unknown-key', 'not-comparable']);
const MAX_PER_SIDE = 5;

export function checkContracts(doc: Record<string, unknown>, agents: Record<string, AgentDecl> | undefined, phases: readonly PhaseModel[], file: string, out: Diagnostic[], bound?: BoundAgents): ContractPass {
  const compiler = new SchemaCompiler();
  const files = new Map<string, LoadedContractFile>();
  const rawAgents = isPlainObject(doc['agents']) ? doc['agents'] : {};
  for (const [id, decl] of Object.entries(agents ?? {})) {
    const raw = rawAgents[id];
    if (!isPlainObject(raw)) continue;
    const code = bound?.agents[id];
    const c = unify(id, raw, decl, contractOf(id, raw, file, compiler, files, out) ?? fromCode(code?.contract, bound?.module), out);
    if (c) decl.contract = c;
    if (c) checkVersion(id, raw, c, out, code?.version !== undefined && typeof raw['version'] !== 'string' ? { version: code.version, module: bound!.module } : undefined);
    for (const [side, why] of Object.entries(code?.contract?.unchecked ?? {})) {
      out.push(warning('schema-not-comparable', ['agents', id], `agent \`${id}\`'s ${side} schema (defineAgent in ${bound!.module}): ${why}; static contract checks are skipped, it is validated at run time`, { hint: 'use a schema library with a JSON Schema converter (zod 4, arktype, valibot with @valibot/to-json-schema), or JSON Schema' }));
    }
  }
  // a defineAgent bound to an agent the workflow does not declare (without an `agents` block every `assign`
  // is one) carries its contract all the same: `baton run` applies it, so it is checked as a declared one's
  const coded = new Map<string, AgentContract>();
  for (const [id, code] of Object.entries(bound?.agents ?? {})) {
    if (agents?.[id]?.contract !== undefined || isPlainObject(rawAgents[id])) continue;
    const c = fromCode(code.contract, bound?.module);
    if (c) coded.set(id, c);
  }
  const contract = (agent: string): AgentContract | undefined => agents?.[agent]?.contract ?? coded.get(agent);
  const report: ContractReport = { bindings: [], edges: [] };
  const cache = new Map<string, SubschemaResult>();
  // AIP-16 files: the phase's, its agent's, and its contract's (a defineAgent's are in its sideEffects already)
  const filesOf = (p: PhaseModel, agent = p.assign): FileContract | undefined => {
    const c = contract(agent);
    return mergeFiles(mergeFiles(c?.files, agents?.[agent]?.files), p.files);
  };
  for (const p of phases) {
    const served: [string, 'assign' | 'fallback', Path][] = [[p.assign, 'assign', ['workflow', p.name, 'assign']]];
    if (p.retry.fallbackAgent) served.push([p.retry.fallbackAgent, 'fallback', ['workflow', p.name, 'retry', 'fallback_agent']]);
    for (const [agent, role, anchor] of served) {
      const c = contract(agent);
      const f = filesOf(p, agent);
      report.bindings.push(checkBinding(p, agent, role, anchor, c, cache, out, role === 'assign' ? report.edges : undefined, f !== undefined && f.inputs.length + f.outputs.length > 0));
    }
  }
  checkSteps(agents, phases, out);
  checkContractItemTokens(phases, contract, agents, out);
  checkContext(phases, contract, out);
  // a defineAgent's files are in its sideEffects already
  const effectFiles = (p: PhaseModel): FileContract | undefined => {
    const c = contract(p.assign);
    return mergeFiles(mergeFiles(c && c.origin.kind !== 'typescript' ? c.files : undefined, agents?.[p.assign]?.files), p.files);
  };
  checkSideEffects(phases, contract, out, effectFiles);
  return { sources: new Map([...files].filter(([, v]) => v.text !== '').map(([k, v]) => [k, v.text])), report };
}

/** One model: an LLM blueprint's schemas count as the contract's input and output schemas. */
function unify(id: string, raw: Record<string, unknown>, decl: AgentDecl, c: AgentContract | undefined, out: Diagnostic[]): AgentContract | undefined {
  const bp = decl.blueprint;
  if (!c && !bp?.parametersSchema && !bp?.outputSchema) return undefined;
  const contract = c ?? emptyContract({ kind: 'blueprint', at: { path: ['agents', id] } });
  const where = (f: string): Loc => ({ path: raw[f] === undefined && bp?.file !== undefined ? ['agents', id, 'x-blueprint'] : ['agents', id, f] });
  for (const [side, f, schema] of [['input', 'parameters_schema', bp?.parametersSchema], ['output', 'output_schema', bp?.outputSchema]] as const) {
    if (!schema) continue;
    if (contract[side]) {
      out.push(warning('contract-mismatch', where(f).path, `agent \`${id}\` has both \`${f}\` and a contract ${side} schema: the contract's is used`, { hint: `keep one of them` }));
      continue;
    }
    contract[side] = { schema, at: where(f) };
  }
  if (contract.agentId !== undefined && contract.agentId !== id) {
    out.push(warning('contract-mismatch', contractField(contract, 'agentId'), `the contract is for agent \`${contract.agentId}\`, but is declared for agent \`${id}\``, { hint: 'fix `agentId` in the contract, or bind the right contract' }));
  }
  return contract;
}

/** A `defineAgent` contract: its places are in the module, not the workflow. */
function fromCode(c: AgentContract | undefined, module: string | undefined): AgentContract | undefined {
  if (!c || module === undefined) return c;
  const at = (l: Loc): Loc => ({ file: module, path: l.path });
  return { ...c, ...(c.input ? { input: { ...c.input, at: at(c.input.at) } } : {}), ...(c.output ? { output: { ...c.output, at: at(c.output.at) } } : {}), origin: { ...c.origin, file: module, at: at(c.origin.at) } };
}

function checkVersion(id: string, raw: Record<string, unknown>, c: AgentContract, out: Diagnostic[], code?: { version: string; module: string }): void {
  const min = c.compatibility.minAgentVersion;
  const v = typeof raw['version'] === 'string' ? raw['version'] : code?.version;
  if (min === undefined || v === undefined) return;
  const cmp = compareVersions(v, min);
  const at: Path = code ? ['agents', id] : ['agents', id, 'version'];
  const by = code ? ` (defineAgent in ${code.module})` : '';
  if (cmp === undefined) out.push(error('invalid-value', at, `\`${v}\`${by} is not a version \`MAJOR.MINOR.PATCH\``, { hint: 'write e.g. "1.2.0"' }));
  else if (cmp < 0) {
    out.push(error('agent-version-mismatch', at, `agent \`${id}\`${by} is version ${v}, but its contract needs at least ${min}`, { hint: `upgrade the agent, or lower \`compatibility.minAgentVersion\`${inFile(c.compatibility.minAgentVersionAt)}`, ...related(c.compatibility.minAgentVersionAt, 'minAgentVersion') }));
  }
}

function checkSteps(agents: Record<string, AgentDecl> | undefined, phases: readonly PhaseModel[], out: Diagnostic[]): void {
  for (const [id, decl] of Object.entries(agents ?? {})) {
    const step = decl.contract?.workflowStep;
    if (step === undefined) continue;
    if (!phases.some((p) => p.name === step && (p.assign === id || p.retry.fallbackAgent === id))) {
      out.push(warning('contract-mismatch', contractField(decl.contract!, 'workflowStep'), `the contract of agent \`${id}\` is for workflow step \`${step}\`, which is not a phase run by \`${id}\``, { hint: 'fix `workflowStep` in the contract, or drop it' }));
    }
  }
}

/** A field of an inline contract, or the `x-contract` reference of a contract file. */
function contractField(c: AgentContract, field: string): Path {
  return c.origin.kind === 'inline' ? [...c.origin.at.path, field] : c.origin.kind === 'file' ? xContractOf(c) : c.origin.at.path;
}

function xContractOf(c: AgentContract): Path {
  return c.origin.workflowAt ?? [];
}

function inFile(at: Loc | undefined): string {
  return at?.file !== undefined ? ` in ${at.file}` : '';
}

function related(at: Loc | undefined, what: string): Partial<Diagnostic> {
  if (!at) return {};
  if (at.file !== undefined) return { data: { contract: at.file, at: at.path.join('.') } };
  return { related: [{ message: what, path: at.path }] };
}

function checkBinding(p: PhaseModel, agent: string, role: 'assign' | 'fallback', anchor: Path, c: AgentContract | undefined, cache: Map<string, SubschemaResult>, out: Diagnostic[], edges: EdgeReport[] | undefined, files = false): BindingReport {
  const b: BindingReport = { phase: p.name, agent, role, contract: c?.origin.kind ?? 'none', input: 'none', output: 'none', findings: [] };
  const upstream = new Map<string, string[]>();
  for (const i of p.inputs ?? []) {
    if (i.source.kind !== 'phase') continue;
    const keys = upstream.get(i.source.phase);
    if (keys) keys.push(i.name);
    else upstream.set(i.source.phase, [i.name]);
  }
  if (c?.input) {
    const key = `in\u0000${agent}\u0000${p.inputType.text}\u0000${files}`;
    let r = cache.get(key);
    if (!r) {
      // ctx.input holds exactly the wired keys: the producer's record is closed at the top
      // (and, when the phase has AIP-16 files, the host's `_workflowFsRoot`, a string)
      r = isSubschema(withFsRoot({ ...p.inputType.jsonSchema(), additionalProperties: false }, files), c.input.schema);
      cache.set(key, r);
    }
    b.input = r.verdict;
    b.findings.push(...r.findings.map((f) => ({ ...f, side: 'input' as const })));
    report(r.findings, 'input', p, agent, anchor, c, out);
  }
  if (edges) {
    for (const [from, keys] of upstream) {
      const verdict: BindingVerdict = c?.input ? verdictOf(b.findings.filter((f) => f.side === 'input' && keys.includes(f.path[0] ?? ''))) : 'none';
      edges.push({ from, to: p.name, keys, verdict });
    }
  }
  if (c?.output && p.outputType) {
    const key = `out\u0000${agent}\u0000${p.outputType.text}`;
    let r = cache.get(key);
    if (!r) {
      r = isSubschema(c.output.schema, p.outputType.jsonSchema());
      cache.set(key, r);
    }
    b.output = r.verdict;
    b.findings.push(...r.findings.map((f) => ({ ...f, side: 'output' as const })));
    report(r.findings, 'output', p, agent, anchor, c, out);
  }
  return b;
}

/** The input record with the scratch root the host injects when the phase has files (AIP-16). */
function withFsRoot(schema: Record<string, unknown>, files: boolean): Record<string, unknown> {
  if (!files) return schema;
  const props = isPlainObject(schema['properties']) ? schema['properties'] : {};
  const required = Array.isArray(schema['required']) ? (schema['required'] as unknown[]) : [];
  return { ...schema, type: 'object', properties: { ...props, [FS_ROOT_KEY]: { type: 'string' } }, required: [...required, FS_ROOT_KEY] };
}

function report(findings: readonly SchemaFinding[], side: 'input' | 'output', p: PhaseModel, agent: string, anchor: Path, c: AgentContract, out: Diagnostic[]): void {
  const schemaAt = side === 'input' ? c.input!.at : c.output!.at;
  const schemaName = c.origin.kind === 'blueprint' || schemaAt.path.includes('parameters_schema') || schemaAt.path.includes('output_schema') ? (side === 'input' ? 'parameters_schema' : 'output_schema') : `contract ${side} schema`;
  const inputNames = new Set((p.inputs ?? []).map((i) => i.name));
  const outputKeys = new Set((p.outputs ?? []).map((o) => o.key));
  let n = 0;
  const seenKeywords = new Set<string>();
  for (const f of findings) {
    if (n >= MAX_PER_SIDE) break;
    if (f.severity === 'warning' && !SHOWN_WARNINGS.has(f.kind)) continue;
    const head = f.path[0];
    const where = f.path.length > 1 || (f.path.length === 1 && (f.kind === 'type' || f.kind === 'not-comparable' || f.kind === 'narrower')) ? `\`${f.path.join('.').replace(/\.\*/g, '[]')}\`: ` : '';
    let path: Path;
    let target: 'key' | 'value' = 'value';
    if (side === 'input') {
      if (head !== undefined && inputNames.has(head)) path = ['workflow', p.name, 'inputs', head];
      else if (p.inputs) {
        path = ['workflow', p.name, 'inputs'];
        target = 'key';
      } else path = anchor;
    } else {
      target = 'key';
      path = head !== undefined && outputKeys.has(head) ? ['workflow', p.name, 'outputs', head] : ['workflow', p.name, 'outputs'];
    }
    const extra: Partial<Diagnostic> = { target, ...related(schemaAt, `agent \`${agent}\`'s ${schemaName}`), data: { phase: p.name, agent, side, path: f.path, kind: f.kind, ...(f.keywords ? { keywords: f.keywords } : {}) } };
    if (f.kind === 'not-comparable') {
      const k = `${f.path.join('.')}\u0000${(f.keywords ?? []).join(',')}`;
      if (seenKeywords.has(k)) continue;
      seenKeywords.add(k);
      out.push(warning('schema-not-comparable', path, `${where}cannot check ${f.keywords?.map((x) => `\`${x}\``).join(', ')} of agent \`${agent}\`'s ${schemaName}${inFile(schemaAt)} before running: checked only at run time`, { ...extra, hint: 'Baton compares types, enums, required keys and bounds it can match; other keywords are validated when the agent runs' }));
      n++;
      continue;
    }
    const sev = f.severity === 'error' ? error : warning;
    const subject = side === 'input' ? `phase \`${p.name}\`'s input` : `agent \`${agent}\`'s ${schemaName}`;
    const against = side === 'input' ? `agent \`${agent}\`'s ${schemaName}${inFile(schemaAt)}` : `phase \`${p.name}\`'s declared outputs`;
    if (side === 'output') {
      // the subschema check reads "the schema" as the consumer: here the phase's declared outputs, and "here" as the agent's schema
      const required = f.path.length === 1 ? `\`${f.path[0]}\` is a required output of phase \`${p.name}\`` : `\`${f.path.join('.').replace(/\.\*/g, '[]')}\` is required by phase \`${p.name}\`'s declared outputs`;
      const message =
        f.kind === 'missing' ? `${required} and ${subject} ${f.severity === 'error' ? 'can never produce it' : 'does not declare it'}`
        : f.kind === 'optional' ? `${required} and optional in ${subject}`
        : `${where}${f.message} (${subject} against ${against})`;
      out.push(sev('output-schema-mismatch', path, message, { ...extra, hint: f.kind === 'missing' ? `add \`${f.path.at(-1)}\` to the ${schemaName}'s properties and \`required\`` : 'make the two agree: change the output type or the schema' }));
    } else if (f.kind === 'missing') {
      out.push(sev('input-schema-missing', path, `${where}${f.message} (${against}); phase \`${p.name}\` does not wire it`, { ...extra, hint: head === FS_ROOT_KEY ? 'the host injects it when the phase (or its agent) declares `inputsFiles` / `outputsFiles`' : head !== undefined && f.path.length === 1 ? `wire it: \`inputs: {${head}: <phase>.<key>}\`` : 'declare the key in the upstream output type' }));
    } else if (f.kind === 'unknown-key') {
      out.push(sev('input-schema-unknown-key', path, `${where}${f.message} (${against})`, { ...extra, hint: head === FS_ROOT_KEY ? 'allow `_workflowFsRoot: {type: string}` in the schema: the host injects it when files are declared (AIP-16)' : 'drop the input, or allow it in the schema' }));
    } else {
      out.push(sev('input-schema-mismatch', path, `${where}${f.message} (${subject} against ${against})`, { ...extra, hint: 'change the upstream output type, the wiring, or the schema' }));
    }
    n++;
  }
}

/**
 * A contract's files that name an item (`<index>`, `<item.x>`) fit only phases with `for_each`, as an agent's
 * own do (compile.ts), unless the agent or the phase declares the key on the same side itself. In any other
 * phase the file cannot be named and is never synced. Positioned on the binding (`assign`, `retry.fallback_agent`), since the contract may be in another file or in code.
 */
function checkContractItemTokens(phases: readonly PhaseModel[], contract: (agent: string) => AgentContract | undefined, agents: Record<string, AgentDecl> | undefined, out: Diagnostic[]): void {
  for (const p of phases) {
    if (p.forEach) continue;
    const served: [string, Path][] = [[p.assign, ['workflow', p.name, 'assign']]];
    if (p.retry.fallbackAgent) served.push([p.retry.fallbackAgent, ['workflow', p.name, 'retry', 'fallback_agent']]);
    for (const [agent, at] of served) {
      const c = contract(agent);
      if (!c?.files) continue;
      // the agent's own entry of a key, and the phase's, win over the contract's (mergeFiles)
      const own = mergeFiles(agents?.[agent]?.files, p.files);
      for (const [side, list, mine] of [['inputsFiles', c.files.inputs, own?.inputs], ['outputsFiles', c.files.outputs, own?.outputs]] as const) {
        for (const e of list) {
          if (mine?.some((x) => x.key === e.key)) continue;
          const t = tokensOf(e.path).find((x) => tokenKind(x.name) === 'item');
          if (!t) continue;
          out.push(
            error('item-outside-for-each', at, `agent \`${agent}\`'s contract${inFile(c.origin.at)} declares ${side} \`${e.key}\` at \`${e.path}\`: \`<${t.name}>\` names a fan-out item, but phase \`${p.name}\` has no \`for_each\``, {
              hint: 'bind the agent to a phase with `for_each`, or drop the item token from the contract\'s path',
              data: { phase: p.name, agent, key: e.key, path: e.path },
            }),
          );
        }
      }
    }
  }
}

/**
 * `requiresContext`: some upstream phase must provide each name, through its agent's
 * `providesContext` or an output of that name; or the phase wires an input of that name.
 * Computed once in topological order over the names that are required anywhere (few).
 */
function checkContext(phases: readonly PhaseModel[], contract: (agent: string) => AgentContract | undefined, out: Diagnostic[]): void {
  const wanted = new Set<string>();
  for (const p of phases) for (const n of contract(p.assign)?.compatibility.requiresContext ?? []) wanted.add(n);
  if (wanted.size === 0) return;
  const byName = new Map(phases.map((p) => [p.name, p]));
  const own = (p: PhaseModel): string[] => [...(contract(p.assign)?.compatibility.providesContext ?? []), ...(p.outputs ?? []).map((o) => o.key)].filter((n) => wanted.has(n));
  const upstream = new Map<string, Set<string>>();
  const visit = (p: PhaseModel): Set<string> => {
    const hit = upstream.get(p.name);
    if (hit) return hit;
    const s = new Set<string>();
    upstream.set(p.name, s); // cycles were reported by the graph pass
    for (const d of p.dependsOn) {
      const dp = byName.get(d);
      if (!dp) continue;
      for (const n of visit(dp)) s.add(n);
      for (const n of own(dp)) s.add(n);
    }
    return s;
  };
  // iterative enough: visit in document order; recursion depth is the longest chain, so walk it in order
  for (const p of topo(phases, byName)) visit(p);
  for (const p of phases) {
    const c = contract(p.assign);
    for (const n of c?.compatibility.requiresContext ?? []) {
      if (upstream.get(p.name)?.has(n) || (p.inputs ?? []).some((i) => i.name === n)) continue;
      out.push(error('context-not-provided', ['workflow', p.name, 'assign'], `agent \`${p.assign}\` requires context \`${n}\`, which no phase upstream of \`${p.name}\` provides`, { hint: `depend on a phase whose agent's contract lists \`${n}\` in \`providesContext\` (or that outputs \`${n}\`), or wire an input named \`${n}\``, data: { phase: p.name, context: n } }));
    }
  }
}

function topo(phases: readonly PhaseModel[], byName: Map<string, PhaseModel>): PhaseModel[] {
  const done = new Set<string>();
  const onStack = new Set<string>();
  const order: PhaseModel[] = [];
  for (const start of phases) {
    const stack: [PhaseModel, number][] = [[start, 0]];
    onStack.add(start.name);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const [p, i] = top;
      if (done.has(p.name)) {
        stack.pop();
        onStack.delete(p.name);
        continue;
      }
      const next = p.dependsOn[i];
      if (next === undefined) {
        done.add(p.name);
        order.push(p);
        stack.pop();
        onStack.delete(p.name);
        continue;
      }
      top[1] = i + 1;
      const dp = byName.get(next);
      if (dp && !done.has(dp.name) && !onStack.has(dp.name)) {
        stack.push([dp, 0]);
        onStack.add(dp.name);
      }
    }
  }
  return order;
}
