/**
 * Raw LLM replies from agents Baton does not drive (subprocess, remote): an output that is exactly
 * `{"result_text": "..."}` goes through the same extraction, repair and validation as an in-process
 * LLM agent's reply. Only a re-prompt needs an in-process agent: an invalid reply fails the attempt
 * with `output_schema_validation_failed` and the phase's retry policy decides.
 */
import { isPlainObject } from '../../core/json.js';
import type { AgentContext, AgentHandler } from '../../engine/agent.js';
import type { SchemaCompiler } from '../../workflow/json-schema.js';
import type { WorkflowModel } from '../../workflow/model.js';

export function withReplyEnforcement(handler: AgentHandler, model: WorkflowModel, compiler: SchemaCompiler): AgentHandler {
  return async (ctx: AgentContext) => {
    const result: unknown = await handler(ctx);
    if (!isPlainObject(result) || typeof result['result_text'] !== 'string') return result;
    // the reply's parser and the LLM layer's contracts are loaded by the first raw reply, not by every engine
    const { enforceTextReply } = await import('./text-reply-enforce.js');
    return enforceTextReply(result, ctx, model, compiler);
  };
}
