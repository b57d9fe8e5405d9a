/**
 * `baton run FILE`: compile, bind agents, run with live progress, report. Exit 0 when the run
 * completed, 1 when it failed or was cancelled, 2 on usage errors or an invalid workflow.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pc from 'picocolors';
import { BatonError } from '../core/errors.js';
import { isPlainObject, type Json, type JsonObject } from '../core/json.js';
import { runWorkflow, type AgentBinding } from '../api/run.js';
import { subprocessAgent } from '../agents/subprocess.js';
import { WorkflowSpec } from '../api/spec.js';
import type { RunEvent } from '../engine/events.js';
import type { RunResult } from '../engine/state.js';
import { loadWorkflow } from '../workflow/compile.js';
import { AgentsModuleError, loadAgentsModule } from './agents-module.js';
import { resolveTarget } from './examples.js';
import type { CliIo } from './io.js';
import { ProgressView, type ViewEvent } from './progress.js';
import { printDiagnostics } from './validate.js';

const RUN_USAGE = `Usage: baton run FILE|DIR|EXAMPLE [--agents MODULE] [--agent-command ID=CMD] [--agent-serve ID=CMD]
                 [--stub-agents] [--trigger JSON|@file.json]
                 [--initial-state JSON|@file.json] [--output result.json] [--json] [--concurrency N] [--timeout SECONDS] [--quiet]
`;

class UsageError extends Error {}

export async function runCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      agents: { type: 'string' },
      'agent-command': { type: 'string', multiple: true },
      'agent-serve': { type: 'string', multiple: true },
      'stub-agents': { type: 'boolean', default: false },
      trigger: { type: 'string' },
      'initial-state': { type: 'string' },
      output: { type: 'string' },
      json: { type: 'boolean', default: false },
      concurrency: { type: 'string' },
      timeout: { type: 'string' },
      quiet: { type: 'boolean', short: 'q', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    io.stdout(RUN_USAGE);
    return 0;
  }
  try {
    if (positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'name a workflow file, a directory holding workflow.yaml, or a bundled example (`baton list`)' : 'run takes one workflow');
    const arg = positionals[0]!;
    const target = resolveTarget(arg, io.cwd);
    if (!target) throw new UsageError(`no workflow at \`${arg}\` (a file, a directory with workflow.yaml, or a bundled example: see \`baton list\`)`);
    const shown = relative(io.cwd, target.workflow) || target.workflow;

    const compiled = await loadWorkflow(target.workflow);
    const r = { ...compiled, file: shown.startsWith('..') ? target.workflow : shown };
    if (r.diagnostics.length > 0) io.stderr(printDiagnostics(r, io.isTTY));
    if (!r.ok) {
      io.stderr(`${shown}: the workflow is invalid; nothing was run\n`);
      return 2;
    }
    const spec = WorkflowSpec.fromResult(compiled);

    const concurrency = values.concurrency === undefined ? undefined : positiveInt(values.concurrency, '--concurrency');
    const timeoutS = values.timeout === undefined ? undefined : positiveNumber(values.timeout, '--timeout');
    const trigger = await readJsonObject(values.trigger, target.trigger, io.cwd, 'trigger');
    const initialState = await readJsonObject(values['initial-state'], undefined, io.cwd, 'initial state');
    const agentsPath = values.agents ?? target.agents;
    const agents: Record<string, AgentBinding> = agentsPath ? ((await loadAgentsModule(agentsPath, io.cwd)) as Record<string, AgentBinding>) : {};
    for (const [flag, mode] of [['agent-command', 'once'], ['agent-serve', 'serve']] as const) {
      for (const spec of values[flag] ?? []) {
        const eq = spec.indexOf('=');
        if (eq <= 0 || eq === spec.length - 1) throw new UsageError(`--${flag} expects AGENT=COMMAND, e.g. --${flag} 'researcher=python3 research.py', got \`${spec}\``);
        agents[spec.slice(0, eq)] = subprocessAgent({ command: spec.slice(eq + 1), mode, agentId: spec.slice(0, eq), cwd: io.cwd });
      }
    }

    const quiet = values.quiet === true;
    const toStderr = values.json === true;
    const view = quiet
      ? undefined
      : new ProgressView(
          spec.phases.map((p) => p.name),
          {
            write: toStderr ? io.stderr : io.stdout,
            isTTY: io.isTTY,
            ...((toStderr ? io.stderrStream : io.stdoutStream) ? { stream: (toStderr ? io.stderrStream : io.stdoutStream)! } : {}),
          },
        );
    const ctl = new AbortController();
    const off = io.onInterrupt?.(() => ctl.abort(new Error('interrupted (SIGINT)')));
    let result: RunResult;
    try {
      result = await runWorkflow(spec, {
        agents,
        stubAgents: values['stub-agents'] === true,
        ...(trigger !== undefined ? { trigger } : {}),
        ...(initialState !== undefined ? { initialState: initialState as JsonObject } : {}),
        ...(concurrency !== undefined ? { concurrency } : {}),
        ...(timeoutS !== undefined ? { timeoutMs: timeoutS * 1000 } : {}),
        signal: ctl.signal,
        cwd: dirname(target.workflow),
        ...(view ? { onEvent: (e: RunEvent) => view.onEvent(toViewEvent(e)) } : {}),
      });
    } finally {
      view?.close();
      off?.();
      await Promise.allSettled(Object.values(agents).flatMap((a) => (typeof a === 'function' ? [] : [a.close()])));
    }

    if (values.output) await writeFile(resolve(io.cwd, values.output), JSON.stringify(result, null, 2) + '\n');
    if (values.json) io.stdout(JSON.stringify(result, null, 2) + '\n');
    else io.stdout(summary(result, io.isTTY));
    return result.status === 'completed' ? 0 : 1;
  } catch (e) {
    if (e instanceof UsageError || e instanceof AgentsModuleError) {
      io.stderr(`baton run: ${e.message}\n`);
      if (e instanceof UsageError) io.stderr(RUN_USAGE);
      return 2;
    }
    if (e instanceof BatonError && (e.code === 'unbound-agent' || e.code === 'usage')) {
      io.stderr(`baton run: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

function positiveInt(s: string, flag: string): number {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} expects a positive integer, got \`${s}\``);
  return n;
}

function positiveNumber(s: string, flag: string): number {
  const n = Number(s);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${flag} expects a positive number of seconds, got \`${s}\``);
  return n;
}

async function readJsonObject(flag: string | undefined, besideWorkflow: string | undefined, cwd: string, what: string): Promise<Json | undefined> {
  let text: string;
  let from: string;
  if (flag !== undefined) {
    if (flag.startsWith('@')) {
      from = flag.slice(1);
      try {
        text = await readFile(resolve(cwd, from), 'utf8');
      } catch (e) {
        throw new UsageError(`cannot read ${what} file ${from}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
      }
    } else {
      text = flag;
      from = what === 'trigger' ? '--trigger' : '--initial-state';
    }
  } else if (besideWorkflow) {
    text = await readFile(besideWorkflow, 'utf8');
    from = relative(cwd, besideWorkflow) || besideWorkflow;
  } else return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${from}: the ${what} is not valid JSON (${(e as Error).message})`);
  }
  if (!isPlainObject(value)) throw new UsageError(`${from}: the ${what} must be a JSON object, e.g. '{"topic": "solar"}'`);
  return value as Json;
}

/** What the progress view shows of an event. */
export function describeEvent(e: RunEvent): string {
  switch (e.type) {
    case 'task.claimed':
      return `agent ${e.agent}`;
    case 'task.claim_rejected':
    case 'task.rejected':
      return `${String(e.error['error'])}: ${String(e.error['message'])}`;
    case 'task.attempt_failed':
    case 'task.failed':
      return `${e.failure.code}: ${e.failure.message}`;
    case 'task.retrying':
      return `${e.reason}; attempt ${e.next_attempt}${e.agent ? ` (${e.agent})` : ''} in ${e.delay_ms} ms`;
    case 'task.skipped':
      return `${e.reason}: ${e.detail}`;
    case 'task.cancelled':
      return e.reason;
    case 'task.cost':
      return `$${e.usd} (phase $${round(e.phase_total_usd)}, run $${round(e.run_total_usd)})`;
    case 'task.log':
      return e.message;
    case 'task.sibling_output':
      return `read output of ${e.sibling}`;
    case 'budget.alert':
      return `${e.scope} budget ${e.percent}% used ($${round(e.spent_usd)} of $${e.budget_usd})`;
    case 'run.failed':
      return `${e.failure.code}: ${e.failure.message}`;
    case 'run.cancelled':
      return e.reason;
    case 'run.started':
      return e.workflow;
    default:
      return '';
  }
}

function round(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

function toViewEvent(e: RunEvent): ViewEvent {
  const note = describeEvent(e);
  return {
    type: e.type,
    at: e.at,
    ...('phase' in e && e.phase !== undefined ? { phase: e.phase } : {}),
    ...('attempt' in e ? { attempt: e.attempt } : {}),
    data: { reason: note },
  };
}

function summary(r: RunResult, color: boolean): string {
  const c = pc.createColors(color);
  const counts = new Map<string, number>();
  for (const p of Object.values(r.phases)) counts.set(p.status, (counts.get(p.status) ?? 0) + 1);
  const status = r.status === 'completed' ? c.green(c.bold('completed')) : c.red(c.bold(r.status));
  const lines = [`\nrun ${r.runId} ${status} in ${(r.duration_ms / 1000).toFixed(2)} s: ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ')}${r.cost_usd > 0 ? `; cost $${r.cost_usd}` : ''}`];
  for (const [name, p] of Object.entries(r.phases)) {
    if (p.status === 'failed' && p.error) lines.push(`  ${c.red('✗')} ${name}: ${p.error.code}: ${p.error.message}`);
  }
  if (r.error && r.status !== 'completed') lines.push(`  ${r.error.code}: ${r.error.message}`);
  return lines.join('\n') + '\n';
}
