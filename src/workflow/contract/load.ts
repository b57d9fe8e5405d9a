/**
 * Finding an agent's contract: `agents.<id>.x-contract` naming a YAML/JSON file (read once, parsed
 * with the workflow's own positioned YAML front end, so problems point inside the contract file) or
 * holding the contract inline. Diagnostics in a contract file carry `file` and are positioned here.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { isPlainObject } from '../../core/json.js';
import type { Path } from '../../core/path.js';
import { error, hasErrors, type Diagnostic } from '../../diagnostics/diagnostic.js';
import type { SchemaCompiler } from '../json-schema.js';
import { parseYamlSource } from '../source.js';
import { withSubOffset } from '../sub-offset.js';
import type { AgentContract } from './model.js';
import { parseContract } from './parse.js';

/** A contract file read and checked: narrow on `ok` for a contract without errors (a failed one may hold what could be read). */
export type LoadedContractFile = ({ ok: true; contract: AgentContract } | { ok: false; contract: AgentContract | undefined }) & {
  /** The resolved path (the key of `sources`). */
  file: string;
  text: string;
  /** Positioned, each with `file` set. */
  diagnostics: Diagnostic[];
};

/** Reads and checks one contract file on its own (`baton check --contracts DIR` and `x-contract: path`). */
export function loadContractFile(path: string, compiler: SchemaCompiler): LoadedContractFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : (e as Error).message;
    return { ok: false, file: path, text: '', contract: undefined, diagnostics: [{ ...error('file-unreadable', [], `cannot read contract ${path}: ${reason}`, { data: { reason } }), file: path }] };
  }
  return parseContractText(text, path, compiler);
}

export function parseContractText(text: string, file: string, compiler: SchemaCompiler): LoadedContractFile {
  const source = parseYamlSource(text);
  const diagnostics: Diagnostic[] = [...source.diagnostics];
  let contract: AgentContract | undefined;
  if (source.diagnostics.length === 0 || source.recovered) {
    if (source.value === undefined || source.value === null) diagnostics.push(error('wrong-type', [], 'the contract file is empty', { range: [0, 0], hint: 'start with `contractVersion: "1.0.0"` and `agentId:`' }));
    else contract = parseContract(source.value, { base: [], file, compiler }, diagnostics);
  }
  for (const d of diagnostics) {
    d.file = file;
    if (!d.range) {
      const r = source.locate(d.path, d.target ?? 'value');
      if (r) d.range = withSubOffset(d, r, text, source.value);
    }
    for (const rel of d.related ?? []) if (!rel.range) {
      const r = source.locate(rel.path, rel.target ?? 'value');
      if (r) rel.range = r;
    }
  }
  diagnostics.sort((a, b) => (a.range?.[0] ?? -1) - (b.range?.[0] ?? -1));
  return contract && !hasErrors(diagnostics) ? { ok: true, file, text, contract, diagnostics } : { ok: false, file, text, contract, diagnostics };
}

/**
 * The contract of agent `id` from its raw declaration: undefined when it declares none. `files`
 * collects every contract file read (resolved path -> text), for rendering and for the cache.
 */
export function contractOf(id: string, raw: Record<string, unknown>, workflowFile: string, compiler: SchemaCompiler, files: Map<string, LoadedContractFile>, out: Diagnostic[]): AgentContract | undefined {
  const ref = raw['x-contract'];
  const at: Path = ['agents', id, 'x-contract'];
  if (ref === undefined || ref === null) return undefined;
  if (isPlainObject(ref)) return parseContract(ref, { base: at, compiler }, out);
  if (typeof ref !== 'string' || ref.trim() === '') {
    out.push(error('wrong-type', at, '`x-contract` must name a contract file (YAML or JSON) or hold the contract as a mapping'));
    return undefined;
  }
  const base = workflowFile.startsWith('<') ? process.cwd() : dirname(resolve(workflowFile));
  const path = isAbsolute(ref) ? ref : resolve(base, ref);
  let loaded = files.get(path);
  const first = !loaded;
  if (!loaded) {
    loaded = loadContractFile(path, compiler);
    files.set(path, loaded);
  }
  const unreadable = loaded.diagnostics.find((d) => d.code === 'file-unreadable');
  if (unreadable) {
    // reported at each reference, in the workflow (there is no contract text to point into)
    const reason = typeof unreadable.data?.['reason'] === 'string' ? unreadable.data['reason'] : 'no such file or unreadable';
    out.push(error('file-unreadable', at, `cannot read contract ${ref}: ${reason}`));
    return undefined;
  }
  if (first) out.push(...loaded.diagnostics);
  return loaded.contract ? { ...loaded.contract, origin: { ...loaded.contract.origin, workflowAt: at } } : undefined;
}
