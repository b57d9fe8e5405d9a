import { describe, expect, test } from 'vitest';
import { describeAgentEvent } from './describe.js';

describe('describeAgentEvent', () => {
  test('every event kind the loop records has its own line, not just its kind', () => {
    const kinds: [string, Record<string, unknown>][] = [
      ['transport_retry', { call: 1, wait_ms: 1000, message: 'HTTP 500' }],
      ['llm_error', { call: 1, code: 'llm_transport_error', message: 'HTTP 500' }],
      ['provider_warnings', { call: 1, warnings: ['{"type":"unsupported","feature":"temperature"}'] }],
      ['price_unknown', { model: 'm' }],
    ];
    for (const [kind, data] of kinds) expect(describeAgentEvent(kind, data as never)).not.toBe(kind);
    expect(describeAgentEvent('provider_warnings', kinds[2]![1] as never)).toContain('temperature');
  });

  test("a subprocess agent's stderr at its abort: the last line, with the reason", () => {
    expect(describeAgentEvent('stderr', { stderr: 'connecting\nwaiting for the API\n', reason: 'the attempt timed out after 1000 ms' })).toBe('stderr when aborted (the attempt timed out after 1000 ms): waiting for the API');
  });

  test('a cut tool result and an estimated usage are said', () => {
    expect(describeAgentEvent('tool_call', { tool: 'mcp:t/x', arguments: {}, result_bytes: 6, truncated_to_bytes: 4, duration_ms: 1, is_error: false })).toContain('first 4');
    expect(describeAgentEvent('llm_call', { model: 'm', input_tokens: 1, output_tokens: 1, cost_usd: 0, finish_reason: 'stop', usage_estimated: true })).toContain('estimated');
  });
});
