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
 * Partial completions, timeouts and failures are the decisions' (engine/decide.ts), for every kind of agent.
 */
import { AgentError, type AgentContext, type AgentHandler } from '../engine/agent.js';
import type { SchemaCompiler, SchemaValidator } from '../workflow/json-schema.js';
import type { AgentContract } from '../workflow/contract/model.js';
import type { WorkflowModel } from '../workflow/model.js';
import { contractOfHandler } from './define.js';

export function guardContracts(model: WorkflowModel, handlers: Record<string, AgentHandler>, compiler: SchemaCompiler, skip: ReadonlySet<AgentHandler> = new Set()): void {
  for (const [id, decl] of Object.entries(model.agents ?? {})) {
    const h = handlers[id];
    const c = decl.contract;
    // LLM blueprints enforce both sides in their own loop (parameters_schema, output_schema with re-prompts)
    if (!h || !c || skip.has(h) || contractOfHandler(h) || c.origin.kind === 'typescript' || c.origin.kind === 'blueprint') continue;
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
  const template = c.errorHandling.onInputValidationFailure?.message ?? `agent \`${id}\` rejected its input: {validationErrors}`;
  return async (ctx: AgentContext) => {
    if (input) {
      const errors = input.validate(ctx.input);
      if (errors.length > 0) {
        const text = errors.map((e) => `${e.path}: ${e.message}`).join('; ');
        throw new AgentError('InputValidationError', template.replace('{validationErrors}', text), { validationErrors: errors, agent: id }, false);
      }
    }
    const out: unknown = await h(ctx);
    if (output) {
      const errors = output.validate(out);
      if (errors.length > 0) throw new AgentError('OutputValidationError', `agent \`${id}\` returned an output its contract rules out: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, { validationErrors: errors, agent: id });
    }
    return out;
  };
}
