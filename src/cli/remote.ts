/**
 * `baton run FILE --server URL --api-key KEY` (the Workflow YAML spec's own form): the workflow is
 * checked here, posted to a Baton server (`baton serve`), and followed through its event stream with
 * the same progress view as a local run. The exit code is the run's: 0 completed, 1 failed or
 * cancelled, 2 a usage error or a refusal by the server. Ctrl-C stops following; the run goes on there.
 */
import { join, relative, resolve } from 'node:path';
import { newRunId } from '../api/engine.js';
import type { JsonObject } from '../core/json.js';
import { MAX_TIMEOUT_MS } from '../core/clock.js';
import { BatonError } from '../core/errors.js';
import { safeText } from '../diagnostics/terminal.js';
import type { RunResult } from '../engine/result.js';
import { ServerAnswerError, ServerClient } from '../server/client.js';
import { loadWorkflow } from '../workflow/compile.js';
import { useColor } from './color.js';
import { UsageError, exitFor, shellQuote } from './durable.js';
import { printFailure } from './fail.js';
import { riding } from './riding.js';
import { summary } from './foreground.js';
import { SIGNAL_EXIT, type CliIo } from './io.js';
import { inputProblem, outputProblem, printJson, saveResult } from './output.js';
import { progressView, readJsonObject, toViewEvent } from './run.js';
import { noWorkflowAt, resolveTarget } from './examples.js';
import type { RUN_OPTIONS } from './spec.js';
import { jsonDiagnostics } from '../api/validation.js';
import { printDiagnostics, renderOptionsFor } from './validate.js';
import { parseTraceparent } from '../engine/telemetry.js';

type RunValues = { [K in keyof typeof RUN_OPTIONS]?: (typeof RUN_OPTIONS)[K] extends { type: 'boolean' } ? boolean | undefined : (typeof RUN_OPTIONS)[K] extends { multiple: true } ? string[] | undefined : string | undefined };

/** Flags that bind agents or name a store here: on a server, the server does that. */
const LOCAL_ONLY = ['agents', 'agent-command', 'agent-serve', 'stub-agents', 'store', 'sync', 'llm', 'llm-agents', 'replies', 'state-out', 'concurrency'] as const;

export async function remoteRun(values: RunValues, arg: string, io: CliIo): Promise<number> {
  try {
    for (const f of LOCAL_ONLY) {
      const v = values[f];
      if (v !== undefined && v !== false) throw new UsageError(`--${f} does not go with --server: the server binds the agents and keeps the runs (see its baton serve flags)`);
    }
    // the server stages and syncs declared files in its own working directory: a folder named here was
    // never read or written, whatever the run did
    if (values.workspace !== undefined) throw new UsageError('--workspace does not go with --server: a run on a server reads and writes its declared files (inputsFiles / outputsFiles) in the server\'s working directory');
    const key = values['api-key'] ?? io.env['BATON_API_KEY'];
    const client = new ServerClient({ url: values.server!, ...(key !== undefined && key !== '' ? { key } : {}) });
    const target = resolveTarget(arg, io.cwd);
    if (!target) throw new UsageError(noWorkflowAt(arg, io.cwd));
    const shown = relative(io.cwd, target.workflow) || target.workflow;
    if (values.output !== undefined) {
      const why = await outputProblem(resolve(io.cwd, values.output), join(values.output, 'result.json'));
      if (why) throw new UsageError(`--output ${values.output}: ${why}; nothing was run`);
    }
    const compiled = await loadWorkflow(target.workflow);
    const r = { ...compiled, file: shown.startsWith('..') ? target.workflow : shown };
    if (r.diagnostics.length > 0) io.stderr(printDiagnostics(r, renderOptionsFor(io, 'stderr')));
    if (!r.ok) {
      if (io.json) printFailure(io, 'run', 'invalid-workflow', `${shown}: the workflow is invalid; nothing was run`, { diagnostics: jsonDiagnostics(r, io.cwd) });
      else io.stderr(`${safeText(shown)}: the workflow is invalid; nothing was run\n`);
      return 2;
    }
    if (target.trigger && values.trigger === undefined) {
      const why = await inputProblem(target.trigger);
      if (why) throw new UsageError(`${target.trigger}: ${why}`);
    }
    const trigger = await readJsonObject(values.trigger, target.trigger, io.cwd, 'trigger');
    const initialState = await readJsonObject(values['initial-state'], undefined, io.cwd, 'initial state');
    const timeout = values.timeout === undefined ? undefined : Number(values.timeout);
    if (timeout !== undefined && !(timeout * 1000 <= MAX_TIMEOUT_MS && timeout > 0)) throw new UsageError(`--timeout expects a positive number of seconds, got \`${values.timeout}\``);
    const body: JsonObject = {
      workflow: compiled.text,
      ...(trigger !== undefined ? { trigger } : {}),
      ...(initialState !== undefined ? { initial_state: initialState } : {}),
      // an id of the command's own when none is given: a start sent again (its answer lost to a cut) is the same run
      run_id: values['run-id'] ?? newRunId(Date.now()),
      ...(values['auto-approve'] ? { auto_approve: true } : {}),
      ...(timeout !== undefined ? { timeout_s: timeout } : {}),
    };
    // a restart or a cut of the server is ridden out (riding.ts), as approve and cancel do
    // a caller's trace (TRACEPARENT, as `baton run` without --server reads it) goes to the server, whose run continues it
    const tp = io.env['TRACEPARENT'];
    const started = await riding(io, () => client.request('POST', '/runs', body, parseTraceparent(tp) ? { traceparent: tp!.trim() } : {}));
    const runId = started.body['run_id'] as string;
    if (values.detach) {
      io.stdout(values.json ? JSON.stringify({ runId, status: started.body['status'], server: values.server }) + '\n' : `${runId}\n`);
      return 0;
    }
    if (!values.quiet) io.stderr(`run ${safeText(runId, 200)} on ${safeText(values.server!, 500)}${started.status === 200 && values['run-id'] !== undefined ? ' (already started with this id: following it)' : ''}\n`);
    const view = values.quiet ? undefined : await progressView(r.model.phases.map((p) => p.name), io, values.json === true);
    const ctl = new AbortController();
    let interrupted: keyof typeof SIGNAL_EXIT | undefined;
    const off = io.onInterrupt?.((why) => {
      if (why === 'reader-gone') return;
      interrupted = why;
      ctl.abort();
    });
    const events = [];
    try {
      for await (const e of client.events(runId, { signal: ctl.signal })) {
        events.push(e);
        view?.onEvent(toViewEvent(e));
        if (e.type === 'gate.opened' && !values.quiet) {
          const gate = safeText(e.gate_id, 200);
          const on = `${shellQuote(runId)} ${shellQuote(e.gate_id)} --server ${shellQuote(values.server!)}`;
          io.stderr(`\n⏸ gate ${gate} (${e.kind}) needs a decision: ${safeText(e.reason)}\n  ${safeText(e.kind === 'input' ? `baton respond ${on} --value JSON` : `baton approve ${on}   (or baton deny)`, 800)}\n  or POST ${safeText(values.server!, 500)}/runs/${encodeURIComponent(runId)}/gates/${encodeURIComponent(e.gate_id)}/${e.kind === 'input' ? 'respond {"value": ...}' : 'approve (or /deny)'}\n  waiting; the run continues on the server when it is decided\n`);
        }
      }
    } finally {
      view?.close();
      off?.();
    }
    if (interrupted) {
      io.stderr(`\n${interrupted}: stopped following run ${runId}; it goes on on the server (GET ${safeText(values.server!, 500)}/runs/${runId})\n`);
      return SIGNAL_EXIT[interrupted];
    }
    const doc = (await riding(io, () => client.request('GET', `/runs/${encodeURIComponent(runId)}`))).body;
    const result = { ...doc, runId, events } as unknown as RunResult;
    const saved = values.output ? await saveResult(result, resolve(io.cwd, values.output), values.output, io) : true;
    if (values.json) await printJson(result, io);
    else io.stdout(summary(result, useColor(io, 'stdout')));
    if (!saved) return 2;
    return result.status === 'completed' ? 0 : 1;
  } catch (e) {
    if (e instanceof ServerAnswerError) {
      const diagnostics = (e.body['error'] as JsonObject | undefined)?.['diagnostics'];
      printFailure(io, 'run', e.code, `${values.server!}: ${e.message} (HTTP ${e.status})`, Array.isArray(diagnostics) ? { diagnostics } : {});
      return 2;
    }
    if (e instanceof BatonError || e instanceof UsageError) return exitFor(e, 'run', io);
    throw e;
  }
}
