/**
 * The API's routes as data: method, path, who may call it, and the JSON Schemas of its path
 * parameters, query and body. The same table validates requests (validate.ts compiles each schema
 * once with ajv) and generates `/openapi.json` (openapi.ts): the document cannot drift from what is
 * enforced.
 */
import { MAX_TIMEOUT_MS } from '../core/clock.js';
import type { JsonObject } from '../core/json.js';
import { RUN_EVENT_TYPES } from '../engine/events.js';
import type { Action } from './keys.js';

export type Schema = JsonObject;

export interface RouteSpec {
  method: 'get' | 'post' | 'put';
  /** OpenAPI form: `/runs/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  /** What the caller needs; `public` needs no key. */
  action: Action | 'public';
  params?: Record<string, Schema> | undefined;
  /** An object schema whose properties are query parameters (values coerced from strings). */
  query?: Schema | undefined;
  body?: Schema | undefined;
  /** The body is raw bytes (an upload), not JSON: its content type in the document. */
  rawBody?: string | undefined;
  /** `sse`: the answer may be a stream; `resumable`: one that `Last-Event-ID` resumes (a run's events, not the all-runs stream); `raw`: a success's body is raw bytes (a file), of the content type the route says. */
  responses: Record<string, { description: string; schema?: Schema; sse?: boolean; resumable?: boolean; raw?: boolean }>;
}

export const RUN_ID = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$', description: 'a run id' } as const satisfies Schema;
const NAME = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[^\\u0000-\\u001f]+$' } as const satisfies Schema;
/** A comma-separated list of known words: a typo is a 400, not an empty page. */
function listOf(words: readonly string[], what: string): Schema {
  const one = `(${words.map((w) => w.replace(/\./g, '\\.')).join('|')})`;
  return { type: 'string', pattern: `^${one}(,${one})*$`, description: `comma-separated ${what}: ${words.join(', ')}` };
}
const STATUS_LIST = listOf(['running', 'waiting', 'completed', 'failed', 'cancelled'], 'run statuses');
// engine/events.ts's TaskStatus, and 'partial' (a phase result's); engine/state.ts's GateStatus
const PHASE_STATUS_LIST = listOf(['pending', 'ready', 'running', 'awaiting_approval', 'suspended_awaiting_input', 'completed', 'failed', 'skipped', 'cancelled', 'partial'], 'phase statuses');
const GATE_STATUS_LIST = listOf(['open', 'approved', 'denied', 'answered', 'withdrawn', 'closed'], 'gate statuses');
const EVENT_TYPE_LIST = listOf(RUN_EVENT_TYPES, 'event types');
const LIMIT = { type: 'integer', minimum: 1, maximum: 1000, description: 'at most this many items (default 100)' } as const satisfies Schema;
const CURSOR = { type: 'string', maxLength: 400, description: '`next_cursor` of the previous page' } as const satisfies Schema;
const JSON_OBJECT = { type: 'object' } as const satisfies Schema;

export const ERROR = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' }, issues: { type: 'array', items: { type: 'object' } }, diagnostics: { type: 'array', items: { type: 'object' } } },
    },
  },
} as const satisfies Schema;

const RUN_SUMMARY = {
  type: 'object',
  required: ['run_id', 'workflow', 'status', 'seq', 'created_at', 'updated_at'],
  properties: {
    run_id: { type: 'string' },
    workflow: { type: 'string' },
    workflow_hash: { type: 'string' },
    status: { type: 'string', enum: ['running', 'waiting', 'completed', 'failed', 'cancelled'] },
    seq: { type: 'integer' },
    cost_usd: { type: 'number' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
    ended_at: { type: ['integer', 'null'] },
  },
} as const satisfies Schema;

const START_BODY = {
  type: 'object',
  additionalProperties: false,
  properties: {
    workflow: { type: 'string', minLength: 1, description: 'the workflow text (YAML)' },
    workflow_name: { ...NAME, description: 'the name of a workflow registered with `baton serve --workflows DIR`' },
    trigger: { ...JSON_OBJECT, description: 'the trigger payload ($trigger.*)' },
    initial_state: { ...JSON_OBJECT, description: 'run-level values for $initial_state.*' },
    run_id: { ...RUN_ID, description: 'start idempotently: the same id and body answer the same run (200); another body 409' },
    auto_approve: { type: 'boolean', description: 'approve every gate as it opens (recorded as automatic)' },
    timeout_s: { type: 'number', exclusiveMinimum: 0, description: 'timeout of the whole run, seconds' },
  },
  oneOf: [{ required: ['workflow'] }, { required: ['workflow_name'] }],
} as const satisfies Schema;

const VALIDATE_BODY = {
  type: 'object',
  additionalProperties: false,
  properties: {
    workflow: { type: 'string', description: 'the workflow text (YAML)' },
    workflow_name: { ...NAME, description: 'a registered workflow' },
    file: { ...NAME, description: 'the name diagnostics give the text (default workflow.yaml)' },
  },
  oneOf: [{ required: ['workflow'] }, { required: ['workflow_name'] }],
} as const satisfies Schema;

const AS = { ...NAME, description: 'who decides; only on a server without keys (with keys, the key’s name decides)' } as const satisfies Schema;
const DECIDE_BODY = { type: 'object', additionalProperties: false, properties: { comment: { type: 'string', maxLength: 10_000 }, as: AS } } as const satisfies Schema;
const RESPOND_BODY = { type: 'object', additionalProperties: false, required: ['value'], properties: { value: { description: 'the answer: any JSON value' }, as: AS } } as const satisfies Schema;
const CANCEL_BODY = { type: 'object', additionalProperties: false, properties: { reason: { type: 'string', minLength: 1, maxLength: 10_000 } } } as const satisfies Schema;
const RERUN_BODY = { type: 'object', additionalProperties: false, required: ['from'], properties: { from: { ...NAME, description: 'the phase to run again, with everything after it' }, run_id: RUN_ID } } as const satisfies Schema;

const ID_PARAM = { id: RUN_ID };
const GATE_PARAMS = { id: RUN_ID, gate: NAME };
const ERRORS = { '400': { description: 'a bad request', schema: ERROR }, '401': { description: 'no key, or an unknown key', schema: ERROR }, '403': { description: 'the key’s roles do not allow it', schema: ERROR } };
const NOT_FOUND = { '404': { description: 'no such run (or gate, or phase)', schema: ERROR } };
const PAGE = (name: string, item: Schema): Schema => ({ type: 'object', required: [name, 'next_cursor'], properties: { [name]: { type: 'array', items: item }, next_cursor: { type: ['string', 'null'] } } });
const OBJ = { type: 'object' } as const satisfies Schema;

const RUN_ROUTES: readonly RouteSpec[] = [
  { method: 'get', path: '/openapi.json', operationId: 'openapi', summary: 'this document (OpenAPI 3.1)', action: 'public', responses: { '200': { description: 'the OpenAPI document', schema: OBJ } } },
  { method: 'get', path: '/health', operationId: 'health', summary: 'liveness: the store answers', action: 'public', responses: { '200': { description: 'ok', schema: OBJ }, '503': { description: 'the store does not answer', schema: ERROR } } },
  { method: 'get', path: '/metrics', operationId: 'metrics', summary: 'Prometheus metrics (text exposition format)', action: 'read', responses: { '200': { description: 'metrics, text/plain; version=0.0.4' }, ...ERRORS } },
  { method: 'get', path: '/workflows', operationId: 'listWorkflows', summary: 'the workflows registered with --workflows DIR', action: 'read', responses: { '200': { description: 'the workflows', schema: OBJ }, ...ERRORS } },
  { method: 'post', path: '/workflows/validate', operationId: 'validateWorkflow', summary: 'the diagnostics of a workflow, as `baton validate --json` gives them', action: 'read', body: VALIDATE_BODY, responses: { '200': { description: '{"files": [{"file", "valid", "diagnostics"}]}', schema: OBJ }, ...ERRORS, '404': { description: 'no such registered workflow', schema: ERROR } } },
  {
    method: 'post', path: '/runs', operationId: 'startRun', summary: 'start a run (idempotent with run_id)', action: 'start', body: START_BODY,
    responses: { '201': { description: 'the run was started', schema: RUN_SUMMARY }, '200': { description: 'a run with this id and the same body exists: that run', schema: RUN_SUMMARY }, ...ERRORS, '404': { description: 'no such registered workflow', schema: ERROR }, '409': { description: 'a run with this id exists with another body', schema: ERROR }, '422': { description: 'the workflow is invalid, an agent is unbound, or the trigger does not fit', schema: ERROR } },
  },
  { method: 'get', path: '/runs', operationId: 'listRuns', summary: 'runs, newest first', action: 'read', query: { type: 'object', additionalProperties: false, properties: { status: STATUS_LIST, workflow: NAME, limit: LIMIT, cursor: CURSOR } }, responses: { '200': { description: 'a page of runs', schema: PAGE('runs', RUN_SUMMARY) }, ...ERRORS } },
  { method: 'get', path: '/runs/{id}', operationId: 'getRun', summary: 'a run: status, phases, gates (as `baton show --json`; a for_each phase\'s items are counted under `fan_out`, listed by /items)', action: 'read', params: ID_PARAM, responses: { '200': { description: 'the run', schema: OBJ }, ...ERRORS, ...NOT_FOUND } },
  { method: 'get', path: '/runs/{id}/phases', operationId: 'listPhases', summary: 'the phases of a run', action: 'read', params: ID_PARAM, query: { type: 'object', additionalProperties: false, properties: { status: PHASE_STATUS_LIST, limit: LIMIT, cursor: CURSOR } }, responses: { '200': { description: 'a page of phases', schema: PAGE('phases', OBJ) }, ...ERRORS, ...NOT_FOUND } },
  { method: 'get', path: '/runs/{id}/phases/{phase}/items', operationId: 'listItems', summary: 'the items of a for_each phase in index order (`baton show RUN --items PHASE`), with their counts by status', action: 'read', params: { id: RUN_ID, phase: NAME }, query: { type: 'object', additionalProperties: false, properties: { limit: LIMIT, cursor: CURSOR } }, responses: { '200': { description: 'a page of items', schema: PAGE('items', OBJ) }, ...ERRORS, ...NOT_FOUND } },
  { method: 'get', path: '/runs/{id}/phases/{phase}', operationId: 'getPhase', summary: 'one phase of a run', action: 'read', params: { id: RUN_ID, phase: NAME }, responses: { '200': { description: 'the phase', schema: OBJ }, ...ERRORS, ...NOT_FOUND } },
  { method: 'get', path: '/runs/{id}/gates', operationId: 'listGates', summary: 'the gates of a run', action: 'read', params: ID_PARAM, query: { type: 'object', additionalProperties: false, properties: { status: GATE_STATUS_LIST, limit: LIMIT, cursor: CURSOR } }, responses: { '200': { description: 'a page of gates', schema: PAGE('gates', OBJ) }, ...ERRORS, ...NOT_FOUND } },
  {
    method: 'get', path: '/runs/{id}/events', operationId: 'runEvents', summary: 'the event log: a JSON page, or with `Accept: text/event-stream` a live stream resumable with Last-Event-ID (the seq)', action: 'read', params: ID_PARAM,
    query: { type: 'object', additionalProperties: false, properties: { after: { type: 'integer', minimum: 0, description: 'events with a greater seq' }, type: EVENT_TYPE_LIST, limit: LIMIT, cursor: CURSOR } },
    responses: { '200': { description: 'a page of events, or the stream (text/event-stream: `id` is the seq, `event` the type, `data` the event)', schema: PAGE('events', OBJ), sse: true, resumable: true }, ...ERRORS, ...NOT_FOUND },
  },
  { method: 'get', path: '/runs/{id}/artifacts', operationId: 'runArtifacts', summary: 'the files agents declared and read or wrote (as `baton show --artifacts --json`)', action: 'read', params: ID_PARAM, query: { type: 'object', additionalProperties: false, properties: { phase: NAME, limit: LIMIT, cursor: CURSOR } }, responses: { '200': { description: 'a page of artifacts', schema: PAGE('artifacts', OBJ) }, ...ERRORS, ...NOT_FOUND } },
  { method: 'get', path: '/events', operationId: 'allEvents', summary: 'every run’s changes as server-sent events (a dashboard): `event: run` with the run row at each change', action: 'read', query: { type: 'object', additionalProperties: false, properties: { status: STATUS_LIST } }, responses: { '200': { description: 'text/event-stream', sse: true }, ...ERRORS } },
  { method: 'post', path: '/runs/{id}/cancel', operationId: 'cancelRun', summary: 'cancel a run', action: 'cancel', params: ID_PARAM, body: CANCEL_BODY, responses: { '200': { description: 'cancelled', schema: OBJ }, ...ERRORS, ...NOT_FOUND, '409': { description: 'the run has ended', schema: ERROR } } },
  { method: 'post', path: '/runs/{id}/rerun', operationId: 'rerunRun', summary: 'a new run reusing every output upstream of `from`', action: 'start', params: ID_PARAM, body: RERUN_BODY, responses: { '201': { description: 'the new run', schema: RUN_SUMMARY }, ...ERRORS, ...NOT_FOUND, '409': { description: 'the new run id is taken', schema: ERROR } } },
  { method: 'post', path: '/runs/{id}/gates/{gate}/approve', operationId: 'approveGate', summary: 'approve an approval gate', action: 'approve', params: GATE_PARAMS, body: DECIDE_BODY, responses: { '200': { description: 'approved', schema: OBJ }, ...ERRORS, ...NOT_FOUND, '409': { description: 'the gate is not open, or refuses this decision', schema: ERROR } } },
  { method: 'post', path: '/runs/{id}/gates/{gate}/deny', operationId: 'denyGate', summary: 'deny an approval gate', action: 'approve', params: GATE_PARAMS, body: DECIDE_BODY, responses: { '200': { description: 'denied', schema: OBJ }, ...ERRORS, ...NOT_FOUND, '409': { description: 'the gate is not open', schema: ERROR } } },
  { method: 'post', path: '/runs/{id}/gates/{gate}/respond', operationId: 'respondGate', summary: 'answer an input gate', action: 'respond', params: GATE_PARAMS, body: RESPOND_BODY, responses: { '200': { description: 'answered', schema: OBJ }, ...ERRORS, ...NOT_FOUND, '409': { description: 'the gate is not open, or refuses this answer', schema: ERROR } } },
];

// ---- remote agents (agents.ts, remote.ts): the pull protocol --------------------------------------

const AGENT_PARAM = { agent: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$', description: 'an agent id' } } as const;
const TOKEN_PARAM = { token: { type: 'string', pattern: '^rt_[A-Za-z0-9_-]{16,64}(\\.[A-Za-z0-9_-]{1,4096}\\.[A-Za-z0-9_-]{22})?$', description: 'the task token a claim returned (its fencing token)' } } as const;
/** The longest long poll a claim or an input poll may ask for (`?wait=`), seconds. */
export const MAX_WAIT_S = 60;
const WAIT_QUERY = { type: 'object', additionalProperties: false, properties: { wait: { type: 'number', minimum: 0, maximum: MAX_WAIT_S, description: `seconds to wait (long poll), at most ${MAX_WAIT_S}; default 20` } } } as const satisfies Schema;
const REMOTE_TASK = {
  type: 'object',
  required: ['token', 'task_id', 'run_id', 'phase', 'attempt', 'agent', 'input', 'lease_ms', 'lease_expires_at'],
  properties: {
    token: { type: 'string' }, task_id: { type: 'string' }, run_id: { type: 'string' }, phase: { type: 'string' }, attempt: { type: 'integer' }, agent: { type: 'string' },
    input: OBJ, initial_state: OBJ, idempotency_key: { type: 'string' }, input_response: {}, last_checkpoint: {},
    item: { type: 'object', required: ['index', 'value'], properties: { index: { type: 'integer' }, value: {} }, description: 'a fan-out (for_each) item: its 0-based index and its element (ctx.item)' },
    remaining_budget_usd: { type: 'number', description: 'USD the attempt may still spend before a phase or run budget is exceeded, as of the claim (absent: no budget; heartbeats and /cost answer it again)' },
    lease_ms: { type: 'integer', description: 'heartbeat at least this often (a third of it is a good period), or the task is handed back' },
    lease_expires_at: { type: 'integer', description: 'ms since the epoch (server clock)' },
    files: {
      type: 'object', required: ['inputs', 'outputs'],
      description: 'the attempt’s AIP-16 files (absent when it has none): each input to fetch (GET /tasks/{token}/files/{key}) into `<root>/<key>` of a scratch root of the agent’s own, whose path the agent sets as `input._workflowFsRoot`; each output it may send back (PUT) before it completes',
      properties: {
        inputs: { type: 'array', items: { type: 'object', required: ['key', 'size', 'sha256'], properties: { key: { type: 'string' }, size: { type: 'integer' }, sha256: { type: 'string' }, content_type: { type: 'string' } } } },
        outputs: { type: 'array', items: { type: 'object', required: ['key'], properties: { key: { type: 'string' }, content_type: { type: 'string' } } } },
      },
    },
    traceparent: { type: 'string', description: 'when the server traces: the W3C context of the attempt’s span (the remote agent’s span is its child)' },
  },
} as const satisfies Schema;
const TASK_ERRORS = { ...ERRORS, '409': { description: 'the token is unknown or old: the attempt ended (cancelled, timed out, handed back, completed)', schema: ERROR } };
const TRACEPARENT = { type: 'string', maxLength: 512, description: 'W3C traceparent of the remote agent’s span for this task: the attempt’s span links to it' } as const satisfies Schema;
const CLAIM_ID = { type: 'string', pattern: '^[A-Za-z0-9_-]{8,64}$', description: 'an id the agent chose for this claim, to cancel it when it stops (POST /agents/{agent}/claims/{claim}/cancel)' } as const satisfies Schema;
const COMPLETE_BODY = {
  type: 'object', additionalProperties: false, required: ['output'],
  properties: {
    output: { description: 'the outputs, checked against the phase’s declared outputs before the attempt is settled' },
    claim_next: { type: 'boolean', description: 'also claim the next ready task of the same agent (no wait): answered as `next` (a task or null), one round trip less' },
    claim_id: { ...CLAIM_ID, description: 'with `claim_next`: the next task is claimed under this id, so that an agent that never got the answer (the connection dropped) can cancel it (POST /agents/{agent}/claims/{claim}/cancel) and the task goes back to the queue at once' },
    traceparent: TRACEPARENT,
  },
} as const satisfies Schema;
const FAIL_BODY = {
  type: 'object', additionalProperties: false, required: ['code', 'message'],
  properties: { code: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[^\\u0000-\\u001f]+$' }, message: { type: 'string', maxLength: 10_000 }, retryable: { type: 'boolean', description: 'default true' }, details: OBJ, traceparent: TRACEPARENT },
} as const satisfies Schema;
const INPUT_BODY = {
  type: 'object', additionalProperties: false,
  properties: {
    question: { type: 'string', minLength: 1, maxLength: 10_000 }, choices: { type: 'array' }, schema: OBJ, timeout_ms: { type: 'number', minimum: 0, maximum: MAX_TIMEOUT_MS },
    input: { type: 'integer', minimum: 0, description: 'poll the answer of this earlier request (its `input` number) instead of asking again' },
  },
  oneOf: [{ required: ['question'], not: { required: ['input'] } }, { required: ['input'], not: { anyOf: [{ required: ['question'] }, { required: ['choices'] }, { required: ['schema'] }, { required: ['timeout_ms'] }] } }],
} as const satisfies Schema;
const CHECKPOINT_BODY = { type: 'object', additionalProperties: false, required: ['value'], properties: { value: { description: 'any JSON: a later attempt of this task gets it as last_checkpoint' } } } as const satisfies Schema;
const SIBLING_BODY = { type: 'object', additionalProperties: false, required: ['phase'], properties: { phase: { type: 'string', minLength: 1, maxLength: 200 } } } as const satisfies Schema;
const EVENT_BODY = { type: 'object', additionalProperties: false, required: ['kind', 'data'], properties: { kind: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[^\\u0000-\\u001f]+$' }, data: OBJ } } as const satisfies Schema;
const COST_BODY = { type: 'object', additionalProperties: false, required: ['usd'], properties: { usd: { type: 'number', minimum: 0, maximum: 1e9 } } } as const satisfies Schema;
const LOG_BODY = { type: 'object', additionalProperties: false, required: ['message'], properties: { message: { type: 'string', maxLength: 100_000 } } } as const satisfies Schema;
const FILE_PARAMS = { ...TOKEN_PARAM, key: { type: 'string', minLength: 1, maxLength: 255, pattern: '^(?!\\.\\.?$)[^/\\\\\\u0000]+$', description: 'a file key the phase declares (inputsFiles / outputsFiles): a single file name' } } as const;
const EMPTY_BODY = { type: 'object', additionalProperties: false, properties: {} } as const satisfies Schema;
const CLAIM_BODY = { type: 'object', additionalProperties: false, properties: { claim_id: CLAIM_ID } } as const satisfies Schema;

export const AGENT_ROUTES: readonly RouteSpec[] = [
  {
    method: 'post', path: '/agents/{agent}/claim', operationId: 'claimTask', summary: 'a remote agent takes a task of its agent: waits up to `wait` seconds for one (204: none)', action: 'agent', params: AGENT_PARAM, query: WAIT_QUERY, body: CLAIM_BODY,
    responses: {
      '200': { description: 'a claimed task', schema: REMOTE_TASK },
      '204': { description: 'no task came within `wait` (or the claim was cancelled)' },
      ...ERRORS,
      '409': { description: 'UpstreamIntentSuspendedError: a task of this agent the engine refused at claim time, its upstream waiting for a human (the RFC payload in `error`, with `run_id` and `phase`); claim again', schema: ERROR },
      '422': { description: 'UnresolvableInputError: a task of this agent the engine refused at claim time, its input unresolvable, and failed (the RFC payload in `error`, with `run_id` and `phase`); claim again', schema: ERROR },
    },
  },
  {
    method: 'post', path: '/agents/{agent}/claims/{claim}/cancel', operationId: 'cancelClaim', summary: 'an agent that stops gives up a claim it sent with `claim_id`: a poll still waiting ends, a task handed to it but never used goes back to the queue at once', action: 'agent', params: { ...AGENT_PARAM, claim: CLAIM_ID }, body: EMPTY_BODY,
    responses: { '200': { description: '{"requeued": boolean}: whether a task handed to the claim went back to the queue', schema: OBJ }, ...ERRORS },
  },
  { method: 'post', path: '/tasks/{token}/heartbeat', operationId: 'heartbeatTask', summary: 'the remote agent is alive: renews its hold; says whether the attempt was cancelled or lost', action: 'agent', params: TOKEN_PARAM, body: EMPTY_BODY, responses: { '200': { description: '{"status", "stop", "cancelled", "reason"?, "lease_expires_at"?, "remaining_budget_usd"?, "budget_exhausted"?}', schema: OBJ }, ...TASK_ERRORS } },
  {
    method: 'post', path: '/tasks/{token}/complete', operationId: 'completeTask', summary: 'the outputs: checked against the phase’s declared outputs first (422 keeps the task claimed)', action: 'agent', params: TOKEN_PARAM, body: COMPLETE_BODY,
    responses: { '200': { description: '{"status": "completed" | "rejected" | "failed" | "aborted" | "stale" | "unknown", "committed", "next"?, "next_rejection"?}', schema: OBJ }, ...TASK_ERRORS, '422': { description: 'MissingOutputError / OutputTypeMismatchError (the RFC payload in `error`): fix and complete again', schema: ERROR } },
  },
  { method: 'post', path: '/tasks/{token}/fail', operationId: 'failTask', summary: 'the attempt failed: a code (matched by retry.retryable_errors) and whether it is retryable', action: 'agent', params: TOKEN_PARAM, body: FAIL_BODY, responses: { '200': { description: '{"status", "committed"}', schema: OBJ }, ...TASK_ERRORS } },
  { method: 'post', path: '/tasks/{token}/release', operationId: 'releaseTask', summary: 'hand the task back (not a failure): another claim takes it at once', action: 'agent', params: TOKEN_PARAM, body: EMPTY_BODY, responses: { '200': { description: 'released', schema: OBJ }, ...TASK_ERRORS } },
  {
    method: 'post', path: '/tasks/{token}/input', operationId: 'taskInput', summary: 'ask a human (an input gate, answered with /respond) and wait up to `wait` seconds for the answer; `{"input": n}` polls request n again', action: 'agent', params: TOKEN_PARAM, query: WAIT_QUERY, body: INPUT_BODY,
    responses: { '200': { description: '{"input", "answered": true, "value"}', schema: OBJ }, '202': { description: '{"input", "answered": false}: poll again with {"input": n}', schema: OBJ }, ...TASK_ERRORS },
  },
  { method: 'post', path: '/tasks/{token}/cost', operationId: 'taskCost', summary: 'report spend in USD (adds up; checked against the budgets)', action: 'agent', params: TOKEN_PARAM, body: COST_BODY, responses: { '200': { description: '{"recorded": true, "remaining_budget_usd"?, "budget_exhausted"?}: with a budget, what the attempt may still spend after this report, and whether that is nothing', schema: OBJ }, ...TASK_ERRORS } },
  { method: 'post', path: '/tasks/{token}/checkpoint', operationId: 'taskCheckpoint', summary: 'save progress (ctx.checkpoint): committed before the answer; a later attempt of the task gets it as last_checkpoint', action: 'agent', params: TOKEN_PARAM, body: CHECKPOINT_BODY, responses: { '200': { description: 'saved', schema: OBJ }, ...TASK_ERRORS } },
  { method: 'post', path: '/tasks/{token}/sibling', operationId: 'taskSibling', summary: 'RFC-0024 §5.2 escape hatch (ctx.getSiblingOutput): a completed phase’s recorded output, or null; recorded as an event', action: 'agent', params: TOKEN_PARAM, body: SIBLING_BODY, responses: { '200': { description: '{"phase", "output": object | null}', schema: OBJ }, ...TASK_ERRORS } },
  { method: 'post', path: '/tasks/{token}/event', operationId: 'taskEvent', summary: 'a structured agent event (ctx.record: task.agent_event with kind and data), e.g. a model call’s token usage', action: 'agent', params: TOKEN_PARAM, body: EVENT_BODY, responses: { '200': { description: '{"recorded": true, "remaining_budget_usd"?, "budget_exhausted"?}: with a budget, what the attempt may still spend after this report, and whether that is nothing', schema: OBJ }, ...TASK_ERRORS } },
  {
    method: 'get', path: '/tasks/{token}/files/{key}', operationId: 'getTaskFile', summary: 'an AIP-16 input file the server staged for the attempt (or an output already sent), as raw bytes of its declared content type (default application/octet-stream)', action: 'agent', params: FILE_PARAMS,
    responses: { '200': { description: 'the file’s bytes', raw: true }, ...TASK_ERRORS, '404': { description: 'a key the attempt does not declare (`unknown-file`), or a file not in its root (`file-not-found`: an output not sent yet)', schema: ERROR } },
  },
  {
    method: 'put', path: '/tasks/{token}/files/{key}', operationId: 'putTaskFile', summary: 'an AIP-16 output file of the attempt, as raw bytes, into the server’s scratch root (whole or not at all); the engine checks, records and syncs it after the completion, as for an agent in process', action: 'agent', params: FILE_PARAMS, rawBody: 'application/octet-stream',
    responses: { '200': { description: '{"key", "size", "sha256"}: what the server wrote', schema: OBJ }, ...TASK_ERRORS, '404': { description: 'a key the attempt does not declare among its outputs (`unknown-file`)', schema: ERROR }, '413': { description: 'the file is larger than the server’s file limit (`file-too-large`, baton serve --file-limit)', schema: ERROR } },
  },
  { method: 'post', path: '/tasks/{token}/log', operationId: 'taskLog', summary: 'a log line (task.log)', action: 'agent', params: TOKEN_PARAM, body: LOG_BODY, responses: { '200': { description: '{"recorded": true, "remaining_budget_usd"?, "budget_exhausted"?}: with a budget, what the attempt may still spend after this report, and whether that is nothing', schema: OBJ }, ...TASK_ERRORS } },
];

/** Every route: the runs API, then the remote-agent protocol. */
export const ROUTES: readonly RouteSpec[] = [...RUN_ROUTES, ...AGENT_ROUTES];

export function routeSpec(operationId: string): RouteSpec {
  const r = ROUTES.find((x) => x.operationId === operationId);
  if (!r) throw new Error(`no route ${operationId}`);
  return r;
}
