/** The enforcement of a raw reply (text-reply.ts), loaded by the first one. */
import { isPlainObject, type JsonObject } from '../../core/json.js';
import type { AgentContext } from '../../engine/agent.js';
import type { SchemaCompiler } from '../../workflow/json-schema.js';
import type { WorkflowModel } from '../../workflow/model.js';
import { buildContract, outputOf, textOutput } from './contract.js';
import { llmError, validationDetails } from './failures.js';
import { parseAgentReply } from './reply.js';

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
