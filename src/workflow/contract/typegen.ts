/**
 * `baton types`: a TypeScript module from a compiled workflow. For every phase, its input type
 * (exactly the keys the workflow wires, with the edge-typed value types) and its output type (the
 * declared outputs, else the agent contract's output schema); the workflow's named types; and a
 * typed `defineHandlers(...)` whose handlers, keyed by agent id, receive the input of the phases
 * the agent runs and must return their output. A handler that reads a key the workflow does not
 * wire, returns the wrong shape, or names an agent the workflow does not have, fails `tsc`. The
 * `Trigger` type is `x-trigger`'s, else the keys `$trigger.*` inputs read. The `Workflow` interface
 * (`{ trigger; handlers }`) makes `createEngine<Workflow>(...)` and `engine.start(spec, { trigger })`
 * check the same at compile time.
 *
 * Names. The generated names (GENERATED) are the file's API and never change: a workflow type of the same
 * name is emitted as `<Name>Type` (`Workflow` -> `WorkflowType`); every other workflow type keeps its name.
 * Phase types (`<Phase>Input` / `<Phase>Output`) that would collide with a workflow type get a number. The
 * import of `AgentContext`, not part of the file's API, is aliased when a workflow type takes that name.
 */
import { readFileSync } from 'node:fs';
import { createTsEmitter, tsKey, tsName } from '../../types/typescript.js';
import type { PhaseModel, WorkflowModel } from '../model.js';
import { filesOfPhase } from '../files.js';
import { FS_ROOT_KEY } from '../wiring.js';

/** A phase's input schema with the host-injected `_workflowFsRoot` (a string) when it has files. */
function withFsRoot(schema: Record<string, unknown>, files: boolean): Record<string, unknown> {
  if (!files) return schema;
  const properties = { ...((schema['properties'] as Record<string, unknown> | undefined) ?? {}), [FS_ROOT_KEY]: { type: 'string' } };
  const required = [...((schema['required'] as string[] | undefined) ?? []), FS_ROOT_KEY];
  return { ...schema, type: 'object', properties, required };
}

export interface TypegenOptions {
  /** The module `AgentContext` is imported from (default: this package's name, from its package.json). */
  batonModule?: string;
  /** The workflow file as the user named it (for the header). */
  source?: string;
}

/** The names the generated file exports whatever the workflow holds (docs/contracts.md#baton-types). */
export const GENERATED = ['Trigger', 'Phases', 'PhaseContext', 'AgentPhases', 'Handler', 'Handlers', 'Workflow'] as const;

export function generateTypes(model: WorkflowModel, opts: TypegenOptions = {}): string {
  // every name the file declares, once: the generated ones first, then the workflow's types (which keep their
  // names unless they are generated ones), then the phases' types, then what schemas name as they are met
  const declared = new Set<string>(GENERATED);
  const bySource = new Map<string, string>();
  // a schema's `$defs` key under the prefix of where it was met ('' for the workflow's types): one name each
  const typeName = (prefix: string, key: string): string => {
    let n = bySource.get(`${prefix}\0${key}`);
    if (n === undefined) {
      const base = tsName(prefix + key);
      const wanted = (GENERATED as readonly string[]).includes(base) ? `${base}Type` : base;
      n = wanted;
      for (let i = 2; declared.has(n); i++) n = `${wanted}${i}`;
      declared.add(n);
      bySource.set(`${prefix}\0${key}`, n);
    }
    return n;
  };
  for (const t of model.types.names) typeName('', t);
  const ts = createTsEmitter(typeName);
  const lines: string[] = [];
  const phaseLines: string[] = [];
  const agents = new Map<string, string[]>();
  // phase names that differ only in punctuation (`write-section`, `write_section`) get numbered type names
  const names = new Map<string, string>();
  const taken = (n: string): boolean => declared.has(`${n}Input`) || declared.has(`${n}Output`) || declared.has(`${n}Item`);
  for (const p of model.phases) {
    let n = tsName(p.name);
    for (let i = 2; taken(n); i++) n = `${tsName(p.name)}${i}`;
    declared.add(`${n}Input`).add(`${n}Output`);
    if (p.forEach) declared.add(`${n}Item`);
    names.set(p.name, n);
  }
  for (const p of model.phases) {
    const base = names.get(p.name)!;
    const decl = model.agents?.[p.assign];
    // AIP-16: with files declared (the phase's, its agent's or the agent's contract's), the host injects the
    // scratch root as `_workflowFsRoot` into ctx.input
    const files = filesOfPhase(model, undefined, p.name, p.assign);
    const input = ts.typeOf(withFsRoot({ ...p.inputType.jsonSchema(), additionalProperties: false }, files !== undefined && files.inputs.length + files.outputs.length > 0));
    const contract = decl?.contract;
    const typed = p.outputType ? ts.typeOf(p.outputType.jsonSchema()) : contract?.output ? ts.typeOf(contract.output.schema, tsName(p.assign)) : 'Record<string, unknown>';
    // RFC-0024 §9: with no required output (none declared, or all optional) the agent may return nothing,
    // unless its contract's output schema asks for an object
    const mayReturnNothing = !contract?.output && (p.outputs ?? []).every((o) => !o.required);
    const output = mayReturnNothing ? `${typed} | void` : typed;
    phaseLines.push(`/** Phase \`${p.name}\` (agent \`${p.assign}\`): what ctx.input holds. */`);
    phaseLines.push(`export type ${base}Input = ${input === 'Record<string, unknown>' ? 'Record<string, never>' : input};`);
    phaseLines.push(`/** Phase \`${p.name}\`: what its agent must return. */`);
    phaseLines.push(`export type ${base}Output = ${output};`);
    if (p.forEach) {
      phaseLines.push(`/** Phase \`${p.name}\` fans out over \`${p.forEach.ref}\`: ctx.item.value, one element (\`$item\`). */`);
      phaseLines.push(`export type ${base}Item = ${ts.typeOf(p.forEach.itemType.jsonSchema())};`);
    }
    agents.set(p.assign, [...(agents.get(p.assign) ?? []), p.name]);
  }
  const triggerType = model.trigger ? ts.typeOf(model.trigger.jsonSchema(), 'Trigger') : inferredTrigger(model.phases);
  lines.push(`// Generated by \`baton types\`${opts.source ? ` from ${opts.source}` : ''}. Do not edit: run it again when the workflow changes.`);
  // the import is not the file's API: it gives way to a workflow type named AgentContext
  let context = 'AgentContext';
  for (let i = 1; declared.has(context); i++) context = `BatonAgentContext${i === 1 ? '' : i}`;
  lines.push(`import type { AgentContext${context === 'AgentContext' ? '' : ` as ${context}`} } from ${JSON.stringify(opts.batonModule ?? packageName())};`);
  lines.push('');
  for (const [name, body] of ts.named) lines.push(`export type ${name} = ${body};`);
  if (ts.named.size > 0) lines.push('');
  lines.push(...phaseLines, '');
  lines.push(model.trigger ? '/** The trigger (`x-trigger`). */' : '/** The trigger: the keys `$trigger.*` inputs read (declare `x-trigger` in the workflow to type their values). */');
  lines.push(`export type Trigger = ${triggerType};`);
  lines.push('');
  lines.push('/** Every phase: its agent, input, output, and the item a fan-out phase\'s task runs on (undefined in other phases). */');
  lines.push('export interface Phases {');
  for (const p of model.phases) {
    const n = names.get(p.name)!;
    const item = p.forEach ? `{ readonly index: number; readonly value: ${n}Item }` : 'undefined';
    lines.push(`  ${tsKey(p.name)}: { agent: ${JSON.stringify(p.assign)}; input: ${n}Input; output: ${n}Output; item: ${item} };`);
  }
  lines.push('}', '');
  lines.push('/** The context a handler of phase P receives: ctx.input is exactly what the workflow wires; ctx.item, a fan-out task\'s element. */');
  lines.push(`export type PhaseContext<P extends keyof Phases> = Omit<${context}, 'input' | 'phase' | 'item'> & { readonly phase: P; readonly input: Phases[P]['input']; readonly item: Phases[P]['item'] };`);
  lines.push('');
  lines.push('/** Per agent: the phases it runs. A handler gets the context of one of them (narrow on ctx.phase). */');
  lines.push('export interface AgentPhases {');
  for (const [a, ps] of agents) lines.push(`  ${tsKey(a)}: ${ps.map((p) => JSON.stringify(p)).join(' | ')};`);
  lines.push('}', '');
  lines.push('/** The handler of agent A: the context of one of its phases in, that phase\'s output out. */');
  lines.push('export type Handler<A extends keyof AgentPhases> = (ctx: { [P in AgentPhases[A]]: PhaseContext<P> }[AgentPhases[A]]) => Phases[AgentPhases[A]]["output"] | Promise<Phases[AgentPhases[A]]["output"]>;');
  lines.push('');
  lines.push('/** Every agent\'s handler type. */');
  lines.push('export type Handlers = { [A in keyof AgentPhases]: Handler<A> };');
  lines.push('');
  lines.push('/** This workflow\'s types: `createEngine<Workflow>({ store, agents })` rejects unknown agent ids and wrong outputs, `start(spec, { trigger })` a wrong trigger. */');
  lines.push('export interface Workflow {');
  lines.push('  trigger: Trigger;');
  lines.push('  handlers: Handlers;');
  lines.push('}');
  lines.push('');
  lines.push('/** Typed handlers, for `--agents` modules and `createEngine`: `export default defineHandlers({ agent: (ctx) => ({ ... }) })`. An agent id the workflow does not have fails `tsc`. */');
  // NoInfer: H comes from the handlers written here, never from where the result goes (an untyped engine's `agents`)
  // an id the workflow does not have must take a type no handler has; a string literal type that says so is what tsc prints
  lines.push('export function defineHandlers<H extends Partial<Handlers>>(handlers: H & { [K in Exclude<keyof H, keyof AgentPhases>]: `${K & string} is not an agent of this workflow` }): NoInfer<H> {');
  lines.push('  return handlers;');
  lines.push('}');
  return lines.join('\n') + '\n';
}

/** The trigger's shape from the `$trigger.key.path` inputs read: those keys, nested, values `unknown`. */
function inferredTrigger(phases: readonly PhaseModel[]): string {
  interface Node { [key: string]: Node }
  const root = Object.create(null) as Node;
  let any = false;
  for (const p of phases) {
    for (const b of p.inputs ?? []) {
      if (b.source.kind !== 'trigger') continue;
      any = true;
      let n = root;
      for (const k of [b.source.key, ...b.source.path]) n = n[k] ??= Object.create(null) as Node;
    }
  }
  if (!any) return 'unknown';
  const emit = (n: Node): string => {
    const keys = Object.keys(n);
    return keys.length === 0 ? 'unknown' : `{ ${keys.map((k) => `${tsKey(k)}: ${emit(n[k]!)}`).join('; ')} }`;
  };
  return emit(root);
}

let name: string | undefined;
/** The name users import this package by (src/ and dist/ both sit three levels under the package root). */
function packageName(): string {
  name ??= (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { name: string }).name;
  return name;
}
