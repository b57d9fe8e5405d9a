/** The structure of an OpenIntent Workflow YAML 1.0 document, field by field (see docs/workflow-format.md). */
import { MAX_TIMEOUT_MS, MAX_TIMER_MS } from '../core/clock.js';
import { jsonTypeOf } from '../core/json.js';
import { jsonIssues } from '../types/compiled.js';
import { pointerToPath } from './json-schema.js';
import { error } from '../diagnostics/diagnostic.js';
import type { Field, Shape } from './shape.js';
import { forEachFields } from './fan-out.js';
import { filesField } from './files.js';

/**
 * Data a phase hands to agents and stores (`initial_state`, `constraints`): JSON only. YAML's `.inf` and `.nan`
 * have no JSON form (they would reach an agent as Infinity and be stored as null, a "non-null" static input that
 * is null): refused where they are written.
 */
const jsonData: Shape = {
  t: 'custom',
  expected: 'JSON data',
  check: (value, path, out) => {
    for (const i of jsonIssues(value)) {
      out.push(error('invalid-value', [...path, ...pointerToPath(i.pointer)], `${i.actual === 'non-finite number' ? String(valueAt(value, i.pointer)) : i.actual} is not JSON data`, { hint: 'YAML’s `.inf` and `.nan` have no JSON form: write a finite number, or a string (`".inf"`)' }));
    }
  },
};

function valueAt(v: unknown, pointer: string): unknown {
  for (const seg of pointerToPath(pointer)) v = (v as Record<string | number, unknown>)[seg];
  return v;
}

const str: Field = { t: 'string' };
const strList: Shape = { t: 'list', of: { t: 'string' } };
const nonNeg: Field = { t: 'number', min: 0 };
/** Hours a deadline can hold (core/clock.ts MAX_TIMEOUT_MS). */
const hours: Field = { t: 'number', min: 0, exclusiveMin: true, max: MAX_TIMEOUT_MS / 3_600_000 };
/** A phase's `x-require_approval.timeout_hours`. */
export const PHASE_GATE_HOURS: Field = hours;
const level: Shape = { t: 'enum', values: ['read', 'write', 'admin'] };

export const PERMISSION_CONTEXT_FIELDS = ['dependencies', 'peers', 'parent', 'events', 'acl', 'delegated_by'] as const;

export const permissionsShape: Shape = {
  t: 'union',
  options: [
    { t: 'enum', values: ['open', 'private', 'restricted'] },
    { t: 'list', of: { t: 'string', nonEmpty: true } },
    {
      t: 'object',
      fields: {
        policy: { t: 'enum', values: ['open', 'restricted', 'private'] },
        default: level,
        allow: {
          t: 'list',
          of: {
            t: 'object',
            fields: { agent: { t: 'string', nonEmpty: true, required: true }, level: { ...level, required: true }, expires: { t: 'string', timestamp: true } },
          },
        },
        delegate: { t: 'object', fields: { to: strList, level } },
        context: {
          t: 'union',
          options: [{ t: 'enum', values: ['auto', 'none'] }, { t: 'list', of: { t: 'enum', values: PERMISSION_CONTEXT_FIELDS } }],
        },
      },
    },
  ],
};

export const retryShape: Shape = {
  t: 'object',
  fields: {
    max_attempts: { t: 'number', integer: true, min: 1 },
    backoff: { t: 'enum', values: ['constant', 'linear', 'exponential'] },
    initial_delay_ms: { t: 'number', integer: true, min: 0 },
    max_delay_ms: { t: 'number', integer: true, min: 0 },
    retryable_errors: strList,
    fallback_agent: { t: 'string', nonEmpty: true },
  },
};

/** Phase fields other than `inputs`, `outputs` (checked by the wiring and type passes). */
export const phaseFields: Record<string, Field> = {
  title: str,
  description: str,
  assign: { t: 'string', nonEmpty: true, required: true },
  depends_on: { t: 'list', of: { t: 'string', nonEmpty: true } },
  constraints: { t: 'list', of: jsonData },
  initial_state: { t: 'map', of: jsonData },
  inputs: { t: 'map', of: { t: 'any' } },
  outputs: { t: 'union', options: [{ t: 'map', of: { t: 'any' } }, { t: 'list', of: { t: 'string', nonEmpty: true } }] },
  skip_when: { t: 'string', nonEmpty: true },
  retry: retryShape,
  leasing: {
    t: 'object',
    fields: {
      strategy: { t: 'enum', values: ['global', 'per_section', 'custom'] },
      scope: str,
      ttl_seconds: { t: 'number', integer: true, min: 1 },
      wait_for_lock: { t: 'boolean' },
    },
  },
  cost_tracking: {
    t: 'object',
    fields: { enabled: { t: 'boolean' }, budget_usd: nonNeg, alert_at_percent: { t: 'number', integer: true, min: 0, max: 100 } },
  },
  attachments: {
    t: 'list',
    of: { t: 'object', fields: { filename: { t: 'string', nonEmpty: true, required: true }, content_type: str } },
  },
  permissions: permissionsShape,
  timeout_ms: { t: 'number', integer: true, min: 1 },
  // fan-out (fan-out.ts) and AIP-16 files (files.ts)
  ...forEachFields,
  inputsFiles: filesField,
  outputsFiles: filesField,
};

export const agentFields: Record<string, Field> = {
  description: str,
  capabilities: strList,
  default_permission: level,
  approval_required: { t: 'boolean' },
  tools: strList,
  version: str,
  // blueprint fields (an LLM agent; checked in blueprint.ts)
  name: str,
  system_prompt: { t: 'any' },
  prompt: { t: 'any' },
  parameters_schema: { t: 'any' },
  output_schema: { t: 'any' },
  max_output_retries: { t: 'any' },
  llm: { t: 'any' },
  // a list is argv: the program must be named (an empty list or `[""]` has nothing to start); later arguments may be empty
  'x-command': {
    t: 'custom',
    expected: 'a command string or a list of strings (argv)',
    check: (value, path, out) => {
      const hint = 'name the program: `x-command: "python3 agent.py"` or `x-command: [python3, agent.py]`';
      if (typeof value === 'string') {
        if (value.trim() === '') out.push(error('invalid-value', path, 'the command must not be empty', { hint }));
      } else if (Array.isArray(value)) {
        if (value.length === 0) out.push(error('invalid-value', path, 'the command list is empty', { hint }));
        value.forEach((v, i) => {
          if (typeof v !== 'string') out.push(error('wrong-type', [...path, i], `expected a string, got ${jsonTypeOf(v)}`));
          else if (i === 0 && v.trim() === '') out.push(error('invalid-value', [...path, 0], 'the program name must not be empty', { hint }));
        });
      } else out.push(error('wrong-type', path, `expected a command string or a list of strings (argv), got ${jsonTypeOf(value)}`));
    },
  },
  'x-mode': { t: 'enum', values: ['once', 'serve'] },
  // served by remote agents over `baton serve`'s pull protocol (docs/server.md#remote-agents)
  'x-remote': { t: 'boolean' },
  // called over the Agent2Agent protocol (docs/agents.md#a2a-agents); the URL is checked in compile.ts
  'x-a2a': {
    t: 'object',
    fields: { url: { t: 'string', nonEmpty: true, required: true }, skill: { t: 'string', nonEmpty: true }, token_env: { t: 'string', nonEmpty: true }, streaming: { t: 'boolean' } },
  },
  inputsFiles: filesField,
  outputsFiles: filesField,
};

export const governanceFields: Record<string, Field> = {
  require_approval: {
    t: 'object',
    fields: {
      when: { t: 'string', nonEmpty: true },
      approvers: strList,
      timeout_hours: hours,
      on_timeout: { t: 'enum', values: ['escalate', 'abort', 'proceed'] },
    },
  },
  max_cost_usd: nonNeg,
  timeout_hours: hours,
  escalation: { t: 'object', fields: { contact: str, after_hours: { t: 'number', min: 0, max: MAX_TIMEOUT_MS / 3_600_000 } } },
  access_review: {
    t: 'object',
    fields: { on_request: { t: 'enum', values: ['approve', 'deny', 'defer'] }, approvers: strList, timeout_hours: hours },
  },
};

export const llmFields: Record<string, Field> = {
  provider: { t: 'string', nonEmpty: true },
  model: str,
  temperature: { t: 'number', min: 0, max: 2 },
  max_tokens: { t: 'number', integer: true, min: 1 },
  system_prompt: str,
  // Baton's extensions (docs/llm-agents.md): checked here, so a bad value is an error where it is written
  // instead of a default taking its place at run time
  'x-base_url': { t: 'string', nonEmpty: true, url: true },
  'x-replies': { t: 'string', nonEmpty: true },
  'x-structured_outputs': { t: 'boolean' },
  // a timer's longest delay (Node fires a longer one at once)
  'x-request_timeout_ms': { t: 'number', integer: true, min: 1, max: MAX_TIMER_MS },
  'x-transport_retries': { t: 'number', integer: true, min: 0, max: 10 },
  'x-prices': {
    t: 'map',
    of: { t: 'object', what: 'a model price', fields: { input_per_mtok: { ...nonNeg, required: true }, output_per_mtok: { ...nonNeg, required: true } } },
  },
};

export const infoFields: Record<string, Field> = {
  name: { t: 'string', nonEmpty: true, required: true },
  version: str,
  description: str,
};

/** Top-level sections. `mcp` and `channels` belong to other OpenIntent RFCs: accepted and passed through. */
export const TOP_LEVEL_KEYS = ['openintent', 'info', 'governance', 'agents', 'llm', 'workflow', 'types', 'mcp', 'channels'] as const;
