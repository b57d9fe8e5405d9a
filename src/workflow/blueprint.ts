/**
 * LLM agents at compile time: blueprints (inline under `agents.<id>` or in an `x-blueprint` file),
 * the `mcp` section, and their checks: schemas compile (positioned inside the schema), prompt
 * templates name the phase's inputs, and every `mcp:` tool names a declared server (and a tool it allows).
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { isPlainObject, type JsonObject } from '../core/json.js';
import type { Path } from '../core/path.js';
import { didYouMean } from '../core/suggest.js';
import { error, warning, type Diagnostic } from '../diagnostics/diagnostic.js';
import { SchemaCompiler } from './json-schema.js';
import type { AgentDecl, Blueprint, McpConfig, McpServerDecl, PhaseModel } from './model.js';
import { llmFields } from './schema.js';
import { checkObject, checkShape, type Field } from './shape.js';
import { parseYamlValue } from './source.js';

/** Fields that make an agent declaration a blueprint (an LLM agent). */
export const BLUEPRINT_FIELDS = ['name', 'system_prompt', 'prompt', 'parameters_schema', 'output_schema', 'max_output_retries', 'llm'] as const;

export interface BlueprintPass {
  mcp: McpConfig | undefined;
}

/**
 * Reads blueprints into `agents[id].blueprint` and `tools`, checks them against the phases, and
 * returns the `mcp` section. `file` is the workflow's path (for `x-blueprint` paths).
 */
export function checkBlueprints(doc: Record<string, unknown>, agents: Record<string, AgentDecl> | undefined, phases: readonly PhaseModel[], file: string, out: Diagnostic[]): BlueprintPass {
  const mcp = checkMcp(doc['mcp'], out);
  if (isPlainObject(doc['llm'])) checkProvider(doc['llm']['provider'], ['llm', 'provider'], out);
  const compiler = new SchemaCompiler();
  const wfLlm = isPlainObject(doc['llm']) ? doc['llm'] : {};
  let needsModel = false;
  const rawAgents = isPlainObject(doc['agents']) ? doc['agents'] : {};
  for (const [id, decl] of Object.entries(agents ?? {})) {
    const raw = rawAgents[id];
    if (!isPlainObject(raw)) continue;
    const at: Path = ['agents', id];
    const tools = Array.isArray(raw['tools']) ? raw['tools'].filter((t): t is string => typeof t === 'string') : [];
    if (tools.length > 0) decl.tools = tools;
    checkToolRefs(tools, at, mcp, out);

    let fields: Record<string, unknown> = raw;
    let fromFile: string | undefined;
    const ref = raw['x-blueprint'];
    if (ref !== undefined) {
      const loaded = loadBlueprintFile(ref, file, [...at, 'x-blueprint'], out);
      if (!loaded) continue;
      fromFile = loaded.path;
      // inline fields win over the file's: the workflow can pin a model or a retry count
      fields = { ...loaded.fields, ...Object.fromEntries(Object.entries(raw).filter(([k]) => (BLUEPRINT_FIELDS as readonly string[]).includes(k))) };
      const fileTools = Array.isArray(loaded.fields['tools']) ? loaded.fields['tools'].filter((t): t is string => typeof t === 'string') : [];
      if (fileTools.length > 0 && tools.length === 0) {
        decl.tools = fileTools;
        checkToolRefs(fileTools, [...at, 'x-blueprint'], mcp, out);
      }
    }
    if (!BLUEPRINT_FIELDS.some((f) => fields[f] !== undefined && fields[f] !== null)) continue;
    // where a field's problems point: inside the workflow when inline, at `x-blueprint` when from a file
    const where = (f: string): Path => (fromFile !== undefined && raw[f] === undefined ? [...at, 'x-blueprint'] : [...at, f]);
    const inFile = (f: string): string => (fromFile !== undefined && raw[f] === undefined ? ` (in ${fromFile})` : '');
    const bp: Blueprint = { maxOutputRetries: 1, tools: decl.tools ?? [], llm: {}, ...(fromFile !== undefined ? { file: fromFile } : {}) };
    for (const f of ['name', 'description', 'system_prompt', 'prompt'] as const) {
      const v = fields[f];
      if (v === undefined || v === null) continue;
      if (typeof v !== 'string') {
        out.push(error('wrong-type', where(f), `\`${f}\` must be a string${inFile(f)}`));
        continue;
      }
      if (f === 'name') bp.name = v;
      else if (f === 'description') bp.description = v;
      else if (f === 'system_prompt') bp.systemPrompt = v;
      else bp.prompt = v;
    }
    const mor = fields['max_output_retries'];
    if (mor !== undefined && mor !== null) {
      if (typeof mor === 'number' && Number.isInteger(mor) && mor >= 0 && mor <= 10) bp.maxOutputRetries = mor;
      else out.push(error('invalid-value', where('max_output_retries'), `\`max_output_retries\` must be an integer from 0 to 10${inFile('max_output_retries')}`));
    }
    const llm = fields['llm'];
    if (llm !== undefined && llm !== null) {
      if (isPlainObject(llm)) {
        if (raw['llm'] !== undefined) {
          checkShape(llm, { t: 'object', fields: llmFields }, [...at, 'llm'], out);
          checkProvider(llm['provider'], [...at, 'llm', 'provider'], out);
        }
        bp.llm = llm as JsonObject;
      } else out.push(error('wrong-type', where('llm'), `\`llm\` must be a mapping${inFile('llm')}`));
    }
    if (modelless(bp.llm, wfLlm)) {
      needsModel = true;
      // a warning: the agent may be bound to a handler (--agents), which validation cannot see; as an LLM agent it fails at its first call
      out.push(warning('missing-field', bp.llm['provider'] !== undefined ? [...at, 'llm'] : at, `agent \`${id}\` runs on \`openai-compatible\`, which has no default model: set \`model\` in its \`llm\` or the workflow's (run as an LLM agent, it fails at its first call)`, { hint: 'the name the server knows, e.g. `model: llama3.1`' }));
    }
    for (const f of ['parameters_schema', 'output_schema'] as const) {
      const s = fields[f];
      if (s === undefined || s === null) continue;
      const c = compiler.compile(s);
      if (!c.ok) {
        for (const p of c.problems.slice(0, 5)) out.push(error('invalid-schema', fromFile !== undefined && raw[f] === undefined ? where(f) : [...where(f), ...p.path], `\`${f}\` is not a valid JSON Schema${inFile(f)}: ${p.message}`, { hint: 'draft-07 unless `$schema` names 2020-12; see https://json-schema.org' }));
        continue;
      }
      if (f === 'parameters_schema') bp.parametersSchema = s as JsonObject;
      else bp.outputSchema = s as JsonObject;
    }
    decl.blueprint = bp;
    const served = phases.filter((p) => p.assign === id || p.retry.fallbackAgent === id);
    // (the declared outputs against `output_schema`: the contract pass, contract/check.ts)
    for (const p of served) {
      if (bp.prompt !== undefined) checkTemplate(bp.prompt, p, where('prompt'), fromFile !== undefined && raw['prompt'] === undefined, out);
    }
  }
  // agents bound to a model at run time (--llm, --llm-agents) use the workflow's block as it is
  if (!needsModel && modelless({}, wfLlm)) out.push(warning('missing-field', ['llm'], '`provider: openai-compatible` has no default model: an agent run on a model (--llm, --llm-agents) needs `model`', { hint: 'the name the server knows, e.g. `model: llama3.1`' }));
  return { mcp };
}

/** Keys that belong to one provider: its model, where it listens, what it supports. */
const PROVIDER_KEYS = new Set(['model', 'x-base_url', 'x-structured_outputs']);

/**
 * An agent's `llm` setting `k`: its own, else the workflow's, except that an agent naming another provider
 * than the workflow's does not inherit that provider's keys (the workflow's `model: gpt-4o` and OpenAI
 * proxy `x-base_url` sent to Anthropic). `env` picks a provider at run time, so it shares them.
 */
export function llmSetting(own: Record<string, unknown>, wf: Record<string, unknown>, k: string): unknown {
  if (own[k] !== undefined && own[k] !== null) return own[k];
  if (PROVIDER_KEYS.has(k)) {
    const mine = own['provider'];
    const theirs = typeof wf['provider'] === 'string' && wf['provider'] !== '' ? wf['provider'] : 'openai';
    if (typeof mine === 'string' && mine !== '' && mine !== theirs && mine !== 'env' && theirs !== 'env') return undefined;
  }
  return wf[k];
}

/** Whether an agent's effective settings name openai-compatible (which has no default model) and no model. */
function modelless(own: Record<string, unknown>, wf: Record<string, unknown>): boolean {
  const pick = (k: string): unknown => llmSetting(own, wf, k);
  const model = pick('model');
  return pick('provider') === 'openai-compatible' && (typeof model !== 'string' || model === '');
}

/** The providers Baton runs (src/agents/llm/providers.ts); the spec names openai, anthropic and env. */
const PROVIDER_NAMES = ['openai', 'anthropic', 'openai-compatible', 'env', 'scripted'];

function checkProvider(v: unknown, at: Path, out: Diagnostic[]): void {
  if (typeof v !== 'string' || v === '' || PROVIDER_NAMES.includes(v)) return;
  const hint = didYouMean(v, PROVIDER_NAMES);
  out.push(error('invalid-value', at, `unknown llm provider \`${v}\``, { hint: hint ?? `use one of ${PROVIDER_NAMES.map((p) => `\`${p}\``).join(', ')}` }));
}

function loadBlueprintFile(ref: unknown, workflowFile: string, at: Path, out: Diagnostic[]): { path: string; fields: Record<string, unknown> } | undefined {
  if (typeof ref !== 'string' || ref.trim() === '') {
    out.push(error('wrong-type', at, '`x-blueprint` must name a YAML or JSON file'));
    return undefined;
  }
  const base = workflowFile.startsWith('<') ? process.cwd() : dirname(resolve(workflowFile));
  const path = isAbsolute(ref) ? ref : resolve(base, ref);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    out.push(error('file-unreadable', at, `cannot read blueprint ${ref}: ${code === 'ENOENT' ? 'no such file' : (e as Error).message}`));
    return undefined;
  }
  let value: unknown;
  try {
    value = parseYamlValue(text);
  } catch (e) {
    out.push(error('yaml-syntax', at, `blueprint ${ref} is not valid YAML or JSON: ${(e as Error).message.split('\n')[0]}`));
    return undefined;
  }
  if (!isPlainObject(value)) {
    out.push(error('wrong-type', at, `blueprint ${ref} must be a mapping of blueprint fields`));
    return undefined;
  }
  return { path: ref, fields: value };
}

const TEMPLATE = /\{\{\s*([^{}]*?)\s*\}\}/g;

function checkTemplate(template: string, phase: PhaseModel, at: Path, fromFile: boolean, out: Diagnostic[]): void {
  const names = (phase.inputs ?? []).map((i) => i.name);
  TEMPLATE.lastIndex = 0;
  for (let m = TEMPLATE.exec(template); m !== null; m = TEMPLATE.exec(template)) {
    const ref = m[1]!;
    const [head, name] = ref.split('.');
    let problem: string | undefined;
    if (head !== 'input' || name === undefined || name === '') problem = `\`{{${ref}}}\`: templates read \`input.<name>\` only`;
    else if (!names.includes(name)) {
      const hint = didYouMean(name, names);
      problem = `\`{{${ref}}}\`: phase \`${phase.name}\` has no input \`${name}\`${names.length > 0 ? ` (its inputs: ${names.join(', ')})` : ' (it declares no inputs)'}${hint ? `; ${hint}` : ''}`;
    }
    if (problem) out.push(error('template-unknown-name', at, problem, { hint: `declare it under \`workflow.${phase.name}.inputs\` or fix the name`, ...(fromFile ? {} : { data: { offset: m.index, length: m[0].length } }) }));
  }
}

const mcpServerFields: Record<string, Field> = {
  command: { t: 'string', nonEmpty: true },
  url: { t: 'string', url: true },
  headers: { t: 'map', of: { t: 'string' } },
  args: { t: 'list', of: { t: 'string' } },
  env: { t: 'map', of: { t: 'string' } },
  allowed_tools: { t: 'list', of: { t: 'string', nonEmpty: true } },
  security: { t: 'any' },
  description: { t: 'string' },
};

function checkMcp(raw: unknown, out: Diagnostic[]): McpConfig | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isPlainObject(raw)) {
    out.push(error('wrong-type', ['mcp'], 'expected a mapping with `servers:`'));
    return undefined;
  }
  const servers = raw['servers'];
  if (servers === undefined || servers === null) return { servers: {} };
  if (!isPlainObject(servers)) {
    out.push(error('wrong-type', ['mcp', 'servers'], 'expected a mapping of server ids to servers'));
    return { servers: {} };
  }
  const decls: Record<string, McpServerDecl> = {};
  for (const [id, s] of Object.entries(servers)) {
    if (!isPlainObject(s)) {
      out.push(error('wrong-type', ['mcp', 'servers', id], `server \`${id}\` must be a mapping with \`command\``));
      continue;
    }
    const before = out.length;
    checkObject(s, mcpServerFields, ['mcp', 'servers', id], out);
    // a server is started (`command`, stdio) or reached (`url`, streamable HTTP): exactly one of the two
    const hasCommand = s['command'] !== undefined && s['command'] !== null;
    const hasUrl = s['url'] !== undefined && s['url'] !== null;
    if (!hasCommand && !hasUrl) out.push(error('missing-field', ['mcp', 'servers', id], `server \`${id}\` needs \`command\` (a server started over stdio) or \`url\` (one reached over streamable HTTP)`));
    else if (hasCommand && hasUrl) out.push(error('invalid-value', ['mcp', 'servers', id, 'url'], `server \`${id}\` has both \`command\` and \`url\`: it is either started over stdio or reached over HTTP`, { hint: 'keep one of the two' }));
    else if (hasCommand && s['headers'] !== undefined) out.push(error('invalid-value', ['mcp', 'servers', id, 'headers'], `\`headers\` are sent to a \`url\` server; server \`${id}\` is started with \`command\``, { hint: 'give a stdio server its values with `env`' }));
    else if (hasUrl && isPlainObject(s['security']) && s['security']['tls_required'] === true && typeof s['url'] === 'string' && !/^https:/i.test(s['url'])) out.push(error('invalid-value', ['mcp', 'servers', id, 'url'], `server \`${id}\` has \`security.tls_required: true\`, and \`${s['url']}\` is not https`, { hint: 'use an https:// URL, or drop tls_required' }));
    else if (hasUrl && (s['args'] !== undefined || s['env'] !== undefined)) out.push(error('invalid-value', ['mcp', 'servers', id, s['args'] !== undefined ? 'args' : 'env'], `\`${s['args'] !== undefined ? 'args' : 'env'}\` belong to a server Baton starts; server \`${id}\` is reached at its \`url\``, { hint: 'send values to an HTTP server with `headers`' }));
    if (out.slice(before).some((d) => d.severity === 'error')) continue;
    const env = isPlainObject(s['env']) ? (s['env'] as Record<string, string>) : {};
    decls[id] = {
      id,
      command: hasCommand ? (s['command'] as string) : '',
      args: Array.isArray(s['args']) ? (s['args'] as string[]) : [],
      env,
      ...(hasUrl ? { url: s['url'] as string } : {}),
      ...(isPlainObject(s['headers']) ? { headers: s['headers'] as Record<string, string> } : {}),
      allowedTools: Array.isArray(s['allowed_tools']) ? (s['allowed_tools'] as string[]) : undefined,
    };
  }
  return { servers: decls };
}

function checkToolRefs(tools: readonly string[], at: Path, mcp: McpConfig | undefined, out: Diagnostic[]): void {
  tools.forEach((ref, i) => {
    const path: Path = at[at.length - 1] === 'x-blueprint' ? at : [...at, 'tools', i];
    if (!ref.startsWith('mcp:')) return; // other tool kinds belong to other runtimes: passed through
    const m = /^mcp:([^/\s]+)\/([^\s]+)$/.exec(ref);
    if (!m) {
      out.push(error('mcp-unknown-server', path, `\`${ref}\` is not \`mcp:server/tool\``));
      return;
    }
    const [, server, tool] = m as unknown as [string, string, string];
    const decl = mcp?.servers[server];
    if (!decl) {
      const hint = didYouMean(server, Object.keys(mcp?.servers ?? {}));
      out.push(error('mcp-unknown-server', path, `\`${ref}\` names MCP server \`${server}\`, which is not declared under \`mcp.servers\``, { hint: hint ?? 'declare it under `mcp.servers` with a `command` or a `url`' }));
      return;
    }
    if (decl.allowedTools && !decl.allowedTools.includes(tool)) {
      const hint = didYouMean(tool, decl.allowedTools);
      out.push(error('mcp-tool-not-allowed', path, `\`${ref}\`: server \`${server}\` allows only ${decl.allowedTools.map((t) => `\`${t}\``).join(', ')}`, { hint: hint ?? `add \`${tool}\` to \`mcp.servers.${server}.allowed_tools\` or drop it` }));
    }
  });
}
