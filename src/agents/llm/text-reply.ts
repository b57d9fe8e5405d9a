/**
 * Raw LLM replies from agents Baton does not drive (subprocess, remote): an output that is exactly
 * `{"result_text": "..."}` goes through the same extraction, repair and validation as an in-process
 * LLM agent's reply. Only a re-prompt needs an in-process agent: an invalid reply fails the attempt
 * with `output_schema_validation_failed` and the phase's retry policy decides.
 */
import { isPlainObject, type JsonObject } from '../../core/json.js';
import type { AgentContext, AgentHandler } from '../../engine/agent.js';
import type { SchemaCompiler } from '../../workflow/json-schema.js';
import type { WorkflowModel } from '../../workflow/model.js';
import { buildContract, outputOf, textOutput } from './contract.js';
import { llmError, validationDetails } from './failures.js';
import { parseAgentReply } from './reply.js';

export function withReplyEnforcement(handler: AgentHandler, model: WorkflowModel, compiler: SchemaCompiler): AgentHandler {
  return async (ctx: AgentContext) => {
    const result: unknown = await handler(ctx);
    return enforceTextReply(result, ctx, model, compiler);
  };
}

export function enforceTextReply(result: unknown, ctx: AgentContext, model: WorkflowModel, compiler: SchemaCompiler): unknown {
  if (!isPlainObject(result) || typeof result['result_text'] !== 'string') return result;
  const keys = Object.keys(result).filter((k) => k !== '_cost');
  if (keys.length !== 1) return result;
  const text = result['result_text'];
  const phase = model.byName.get(ctx.phase);
  if (phase?.outputs?.some((o) => o.key === 'result_text') && phase.outputs.length > 1) return result; // a declared output, not a raw reply
  const cost = typeof result['_cost'] === 'number' ? { _cost: result['_cost'] } : {};
  const built = buildContract(phase, model.agents?.[ctx.agent]?.blueprint, compiler);
  if (!built.ok) throw llmError('llm_config_invalid', `agent '${ctx.agent}': ${built.message}`, validationDetails(built.errors), false);
  const c = built.contract;
  if (c.mode === 'text') return c.key !== undefined ? { ...textOutput(c.key, text), ...cost } : result;
  const parsed = parseAgentReply(text, c.validate);
  if (!parsed.ok) {
    const first = parsed.errors[0];
    throw llmError('output_schema_validation_failed', `agent '${ctx.agent}': result_text did not match the schema${first ? ` (${first.path}: ${first.message})` : ''}`, validationDetails(parsed.errors), true);
  }
  if (parsed.repairs.length > 0) ctx.record('json_repair', { repairs: parsed.repairs, source: parsed.source });
  ctx.record('result', { result_data: parsed.value as JsonObject });
  return { ...outputOf(parsed.value), ...cost };
}
