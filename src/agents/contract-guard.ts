/**
 * Agent contracts at run time, for agents bound without their own enforcement (functions, `x-command`
 * subprocesses, recorded bindings): the input is validated against the contract's input schema before
 * the agent runs, and the output against its output schema after. `defineAgent` handlers validate
 * themselves and are left alone; so are stubs (built from the declared outputs).
 *
 * - invalid input: `InputValidationError`, not retried, message from `onInputValidationFailure`
 *   (`{validationErrors}` filled in);
 * - invalid output: `OutputValidationError` (retryable, as any agent failure).
 *
 * An LLM blueprint's `parameters_schema` / `output_schema` bind whatever runs the agent (agent output
 * schema spec: "the blueprint's schema is authoritative", "validated on every run"): the blueprint's own
 * LLM loop enforces them (`selfEnforcing`), any other binding (a function, a subprocess) is guarded here,
 * failing with the LLM agent's codes (`parameters_schema_validation_failed`, `output_schema_validation_failed`
 * with `validation_errors` in the spec's form).
 *
 * Partial completions, timeouts and failures are the decisions' (engine/decide.ts), for every kind of agent.
 */
import { AgentError, type AgentContext, type AgentHandler } from '../engine/agent.js';
import type { SchemaCompiler, SchemaError, SchemaValidator } from '../workflow/json-schema.js';
import type { AgentContract } from '../workflow/contract/model.js';
import type { WorkflowModel } from '../workflow/model.js';
import { contractOfHandler, withoutCost } from './define.js';

export function guardContracts(model: WorkflowModel, handlers: Record<string, AgentHandler>, compiler: SchemaCompiler, selfEnforcing: ReadonlySet<AgentHandler> = new Set()): void {
  for (const [id, decl] of Object.entries(model.agents ?? {})) {
    const h = handlers[id];
    const c = decl.contract;
    if (!h || !c || contractOfHandler(h) || c.origin.kind === 'typescript') continue;
    // LLM agents enforce their blueprint in their own loop (parameters_schema, output_schema with re-prompts)
    if (c.origin.kind === 'blueprint' && selfEnforcing.has(h)) continue;
    const output = c.output;
    if (!c.input && !output) continue;
    handlers[id] = guarded(id, h, c, output ? compile(compiler, output.schema) : undefined, c.input ? compile(compiler, c.input.schema) : undefined);
  }
}

function compile(compiler: SchemaCompiler, schema: Record<string, unknown>): SchemaValidator | undefined {
  const r = compiler.compile(schema);
  return r.ok ? r.validator : undefined; // `baton validate` refused invalid schemas already
}

function guarded(id: string, h: AgentHandler, c: AgentContract, output: SchemaValidator | undefined, input: SchemaValidator | undefined): AgentHandler {
  const blueprint = c.origin.kind === 'blueprint';
  const template = c.errorHandling.onInputValidationFailure?.message ?? `agent \`${id}\` rejected its input: {validationErrors}`;
  const lines = (errors: readonly SchemaError[]): string[] => errors.map((e) => `${e.path}: ${e.message}`);
  return async (ctx: AgentContext) => {
    if (input) {
      const errors = input.validate(ctx.input);
      if (errors.length > 0) {
        if (blueprint) throw new AgentError('parameters_schema_validation_failed', `agent \`${id}\`: the input does not match parameters_schema: ${lines(errors).join('; ')}`, { validation_errors: lines(errors), errors: errors.map((e) => ({ ...e })), agent: id }, false);
        throw new AgentError('InputValidationError', template.replace('{validationErrors}', lines(errors).join('; ')), { validationErrors: errors, agent: id }, false);
      }
    }
    const out: unknown = await h(ctx);
    if (output) {
      const errors = output.validate(withoutCost(out));
      if (errors.length > 0 && blueprint) throw new AgentError('output_schema_validation_failed', `agent \`${id}\`: output did not match output_schema: ${lines(errors).join('; ')}`, { validation_errors: lines(errors), errors: errors.map((e) => ({ ...e })), agent: id });
      if (errors.length > 0) throw new AgentError('OutputValidationError', `agent \`${id}\` returned an output its contract rules out: ${lines(errors).join('; ')}`, { validationErrors: errors, agent: id });
    }
    return out;
  };
}
