/**
 * `baton check FILE|DIR|EXAMPLE [--json]`: the compatibility verdict of every agent binding (a phase's wired
 * input against its agent's input schema, the agent's output schema against the phase's declared
 * outputs) and of every edge, then the diagnostics `baton validate` gives.
 * `baton check --contracts DIR [--json]`: every contract file under DIR checked on its own (the
 * contract spec's validation tool, for any CI). Exit 0 when nothing is an error, 1 otherwise, 2 when a
 * file cannot be read.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { safeText } from '../diagnostics/terminal.js';
import type { Diagnostic } from '../diagnostics/diagnostic.js';
import { diagnosticToJson, renderDiagnostic, summaryLine } from '../diagnostics/render.js';
import { SourceFile } from '../diagnostics/source.js';
import { loadWorkflow } from '../workflow/compile.js';
import { parseYamlSource } from '../workflow/source.js';
import { checkA2aAgents } from '../agents/a2a-card.js';
import type { BindingReport, BindingVerdict, EdgeReport } from '../workflow/contract/check.js';
import { loadContractFile } from '../workflow/contract/load.js';
import { SchemaCompiler } from '../workflow/json-schema.js';
import type { BoundAgents } from '../workflow/contract/check.js';
import { AgentsModuleError, boundFromHandlers, loadAgentsModule } from './agents-module.js';
import { colorsFor, type Colors } from './color.js';
import { printFailure } from './fail.js';
import { formatOf, printMachineFormat, type Format } from './formats.js';
import { usageLine } from './help.js';
import type { CliIo } from './io.js';
import { sourceResolver } from '../api/validation.js';
import { CHECK_OPTIONS, commandSpec } from './spec.js';
import { displayPath, folderRefusal, oneWorkflow, renderOptionsFor } from './validate.js';
import { resolveTarget } from './examples.js';

export async function checkCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: CHECK_OPTIONS, allowPositionals: true });
  const format = formatOf(values);
  if (typeof format !== 'string') {
    printFailure(io, 'check', 'usage', format.error);
    return 2;
  }
  if (values.contracts !== undefined) return checkContractsDir(values.contracts, format, io);
  if (positionals.length !== 1) {
    printFailure(io, 'check', 'usage', 'name one workflow: a file, a directory holding workflow.yaml or a bundled example (or --contracts DIR)');
    io.stderr(usageLine(commandSpec('check')!));
    return 2;
  }
  const named = oneWorkflow(positionals[0]!, io.cwd);
  if (!named) {
    printFailure(io, 'check', 'usage', folderRefusal(positionals[0]!));
    return 2;
  }
  const file = named.shown;
  let bound: BoundAgents | undefined;
  // the module `baton run` would bind: --agents, else agents.mjs (.js, .ts, .mts) beside a workflow.yaml
  const beside = values.agents === undefined ? resolveTarget(positionals[0]!, io.cwd)?.agents : undefined;
  const agentsModule = values.agents ?? (beside !== undefined ? displayPath(beside, io.cwd) : undefined);
  if (agentsModule !== undefined) {
    // defineAgent handlers carry their contracts and versions: checked like contract files
    try {
      const handlers = await loadAgentsModule(agentsModule, io.cwd);
      bound = boundFromHandlers(agentsModule, handlers) ?? { module: agentsModule, agents: {} };
    } catch (e) {
      if (!(e instanceof AgentsModuleError)) throw e;
      printFailure(io, 'check', 'agents-module', e.message);
      return 2;
    }
  }
  const loaded = await loadWorkflow(named.path, bound ? { bound } : {});
  // x-a2a agents: their cards are fetched and checked (agents/a2a-card.ts); nothing is fetched for other workflows
  const cards = loaded.model ? await checkA2aAgents(loaded.model, { env: io.env }) : [];
  if (cards.length > 0) {
    const located = parseYamlSource(loaded.text);
    for (const d of cards) d.range ??= located.locate(d.path);
  }
  const r = cards.length === 0 ? loaded : { ...loaded, diagnostics: [...loaded.diagnostics, ...cards] };
  const ok = loaded.ok && !cards.some((d) => d.severity === 'error');
  // as `baton validate`: a file that cannot be read (the workflow, or a contract or blueprint it names) exits 2
  const unreadable = r.diagnostics.some((d) => d.code === 'file-unreadable');
  const report = r.contracts ?? { bindings: [], edges: [] };
  const src = sourceResolver({ ...r, file }, io.cwd);
  if (format === 'sarif' || format === 'github') {
    await printMachineFormat(format, [{ diagnostics: r.diagnostics, source: src }], io);
  } else if (format === 'json') {
    io.stdout(
      JSON.stringify(
        {
          file,
          valid: ok,
          bindings: report.bindings.map((b) => ({ ...b, findings: b.findings.map((f) => ({ ...f, path: f.path.join('.') })) })),
          edges: report.edges,
          diagnostics: r.diagnostics.map((d) => ({ ...diagnosticToJson(d, src(d)), ...(d.file !== undefined ? { file: src(d).name } : {}) })),
        },
        null,
        2,
      ) + '\n',
    );
  } else {
    const c = colorsFor(io, 'stdout');
    // no report of a workflow that could not be read or parsed: only its diagnostics
    if (r.contracts) {
      const lines: string[] = [];
      const contracted = report.bindings.filter((b) => b.contract !== 'none');
      lines.push(`${c.bold(safeText(file, 500))}: ${report.bindings.length} binding(s), ${contracted.length} with a contract; ${report.edges.length} edge(s)`);
      lines.push(c.bold('bindings'));
      for (const b of report.bindings) lines.push(bindingLine(b, c));
      lines.push(c.bold('edges'));
      for (const e of report.edges) lines.push(edgeLine(e, c));
      // a heading over nothing read as if the list had been lost (every corpus workflow: none wires `inputs`)
      if (report.edges.length === 0) lines.push(`  ${c.dim('none: no phase wires an input from an upstream phase (`inputs: {key: phase.output}`)')}`);
      io.stdout(lines.join('\n') + '\n\n');
    }
    io.stdout(r.diagnostics.map((d) => renderDiagnostic(d, src(d), renderOptionsFor(io, 'stdout')) + '\n\n').join(''));
    io.stdout(summaryLine(1, count(r.diagnostics, 'error'), count(r.diagnostics, 'warning'), c) + '\n');
  }
  if (unreadable) return 2;
  return ok ? 0 : 1;
}


function mark(v: BindingVerdict, c: Colors): string {
  switch (v) {
    case 'compatible':
      return c.green('✓');
    case 'incompatible':
      return c.red('✗');
    case 'may-fail':
    case 'unknown':
      return c.yellow('!');
    case 'none':
      return c.dim('·');
  }
}

const RANK: Record<BindingVerdict, number> = { none: 0, compatible: 1, 'may-fail': 2, unknown: 3, incompatible: 4 };

function bindingLine(b: BindingReport, c: Colors): string {
  const worst = RANK[b.input] >= RANK[b.output] ? b.input : b.output;
  // phase and agent names and messages come from files: escaped, never sent raw to a terminal
  const head = `  ${mark(worst, c)} ${safeText(b.phase, 200)} ${b.role === 'fallback' ? '(fallback) ' : ''}<- ${safeText(b.agent, 200)}`;
  if (b.contract === 'none') return `${head}: no contract`;
  const notes = b.findings.slice(0, 3).map((f) => safeText(`${f.side} ${f.path.length > 0 ? `\`${f.path.join('.').replace(/\.\*/g, '[]')}\`` : 'value'}: ${f.message}`));
  const more = b.findings.length > 3 ? ` (+${b.findings.length - 3} more)` : '';
  return `${head} (contract: ${b.contract}): input ${b.input}, output ${b.output}${notes.length > 0 ? `\n      ${notes.join('\n      ')}${more}` : ''}`;
}

function edgeLine(e: EdgeReport, c: Colors): string {
  return `  ${mark(e.verdict, c)} ${safeText(e.from, 200)} -> ${safeText(e.to, 200)} [${safeText(e.keys.join(', '), 500)}]: ${e.verdict === 'none' ? 'no input schema (edge typing only)' : e.verdict}`;
}

function count(ds: readonly Diagnostic[], s: 'error' | 'warning'): number {
  return ds.filter((d) => d.severity === s).length;
}

function contractFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...contractFiles(p));
    else if (/\.(ya?ml|json)$/i.test(name)) out.push(p);
  }
  return out;
}

async function checkContractsDir(dir: string, format: Format, io: CliIo): Promise<number> {
  const abs = resolve(io.cwd, dir);
  let files: string[];
  try {
    files = contractFiles(abs);
  } catch (e) {
    printFailure(io, 'check', 'file-unreadable', `cannot read ${dir}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such directory' : (e as Error).message}`);
    return 2;
  }
  const compiler = new SchemaCompiler();
  const results = files.map((f) => loadContractFile(f, compiler));
  const c = colorsFor(io, 'stdout');
  if (format === 'sarif' || format === 'github') {
    await printMachineFormat(
      format,
      results.map((r) => {
        const src = new SourceFile(relative(io.cwd, r.file), r.text);
        return { diagnostics: r.diagnostics, source: () => src };
      }),
      io,
    );
  } else if (format === 'json') {
    io.stdout(
      JSON.stringify(
        {
          contracts: results.map((r) => {
            const src = new SourceFile(relative(io.cwd, r.file), r.text);
            return { file: src.name, valid: r.ok, agentId: r.contract?.agentId ?? null, diagnostics: r.diagnostics.map((d) => diagnosticToJson(d, src)) };
          }),
        },
        null,
        2,
      ) + '\n',
    );
  } else {
    let errors = 0;
    let warnings = 0;
    for (const r of results) {
      const src = new SourceFile(relative(io.cwd, r.file), r.text);
      io.stdout(r.diagnostics.map((d) => renderDiagnostic(d, src, renderOptionsFor(io, 'stdout')) + '\n\n').join(''));
      errors += count(r.diagnostics, 'error');
      warnings += count(r.diagnostics, 'warning');
      if (r.ok) io.stdout(`${c.green('✓')} ${safeText(src.name, 500)}: valid contract${r.contract.agentId !== undefined ? ` for \`${safeText(r.contract.agentId, 200)}\`` : ''}\n`);
    }
    if (results.length === 0) io.stdout(`no contract files (*.yaml, *.yml, *.json) under ${dir}\n`);
    io.stdout(summaryLine(results.length, errors, warnings, c) + '\n');
  }
  return results.every((r) => r.ok) ? 0 : 1;
}
