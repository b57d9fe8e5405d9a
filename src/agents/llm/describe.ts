/** One line for a `task.agent_event` in the CLI's progress view: an LLM agent's events, a subprocess's stderr at its abort. */
import type { JsonObject } from '../../core/json.js';

export function describeAgentEvent(kind: string, d: JsonObject): string {
  const n = (k: string): string => (typeof d[k] === 'number' ? String(d[k]) : '?');
  const s = (k: string): string => (typeof d[k] === 'string' ? d[k] : JSON.stringify(d[k] ?? null));
  switch (kind) {
    case 'llm_call':
      return `${s('model')}: ${n('input_tokens')} in, ${n('output_tokens')} out, $${typeof d['cost_usd'] === 'number' ? +d['cost_usd'].toFixed(6) : 0} (${s('finish_reason')})${d['usage_estimated'] === true ? ' (usage estimated: the provider reported none)' : ''}`;
    case 'output_reprompt': {
      const errs = Array.isArray(d['validation_errors']) ? d['validation_errors'] : [];
      const count = typeof d['error_count'] === 'number' ? d['error_count'] : errs.length;
      return `re-prompt: ${count} error${count === 1 ? '' : 's'}${typeof errs[0] === 'string' ? ` (${errs[0]})` : ''}`;
    }
    case 'json_repair':
      return `repaired JSON: ${Array.isArray(d['repairs']) ? d['repairs'].filter((r): r is string => typeof r === 'string').join(', ') : ''}`;
    case 'tool_call':
      return `tool ${s('tool')} ${JSON.stringify(d['arguments'] ?? {})}: ${n('result_bytes')} bytes in ${n('duration_ms')} ms${typeof d['truncated_to_bytes'] === 'number' ? ` (the model got the first ${n('truncated_to_bytes')})` : ''}${d['is_error'] === true ? ' (error)' : ''}`;
    case 'tool_call_refused':
      return `refused tool ${s('tool')}: ${s('reason')}`;
    case 'tool_not_offered':
      return `not offered: ${s('tool')} (${s('reason')})`;
    case 'structured_output':
      return `native structured output (${s('mode')})`;
    case 'structured_output_fallback':
      return `structured output by prompting: ${s('reason')}`;
    case 'rate_limit_wait':
      return `rate limited: waiting ${n('wait_ms')} ms`;
    case 'truncation_reprompt':
      return `reply cut at max_tokens (${n('max_tokens')}): asking for a shorter one`;
    case 'transport_retry':
      return `transport failure, retrying in ${n('wait_ms')} ms: ${s('message')}`;
    case 'llm_error':
      return `model call failed: ${s('code')}: ${s('message')}`;
    case 'provider_warnings': {
      const w = Array.isArray(d['warnings']) ? d['warnings'].filter((x): x is string => typeof x === 'string') : [];
      return `provider warnings: ${w.join('; ')}`;
    }
    case 'price_unknown':
      return `no price for ${s('model')}: calls are not costed or budgeted (add it to llm.x-prices)`;
    case 'stderr': {
      // a subprocess agent's stderr when Baton aborted it (agents/subprocess.ts): its last line says why it hung
      const lines = s('stderr').trimEnd().split('\n');
      return `stderr when aborted (${s('reason')}): ${(lines[lines.length - 1] ?? '').slice(-200)}`;
    }
    case 'result':
      return 'result_data' in d ? 'result_data validated' : 'result_text';
    default:
      return kind;
  }
}
