/** Builds a PhaseModel from a phase that passed the structural checks: defaults applied, shorthand expanded. */
import { isPlainObject, type Json, type JsonObject } from '../core/json.js';
import type { TypeRegistry } from '../types/api.js';
import type { Expression } from './expr.js';
import type { CostTracking, InputBinding, OutputDecl, PermissionLevel, Permissions, PhaseModel, RetryPolicy } from './model.js';

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 1,
  backoff: 'constant',
  initialDelayMs: 0,
  maxDelayMs: undefined,
  retryableErrors: [],
  fallbackAgent: undefined,
};

export function buildRetry(raw: unknown): RetryPolicy {
  if (!isPlainObject(raw)) return DEFAULT_RETRY;
  const b = raw['backoff'];
  const backoff = b === 'linear' || b === 'exponential' || b === 'constant' ? b : 'exponential';
  return {
    maxAttempts: num(raw['max_attempts']) ?? 3,
    backoff,
    initialDelayMs: num(raw['initial_delay_ms']) ?? 1000,
    maxDelayMs: num(raw['max_delay_ms']),
    retryableErrors: strs(raw['retryable_errors']),
    fallbackAgent: typeof raw['fallback_agent'] === 'string' ? raw['fallback_agent'] : undefined,
  };
}

function buildCost(raw: unknown): CostTracking | undefined {
  if (!isPlainObject(raw)) return undefined;
  return { enabled: raw['enabled'] !== false, budgetUsd: num(raw['budget_usd']), alertAtPercent: num(raw['alert_at_percent']) };
}

const asLevel = (v: unknown, d: PermissionLevel): PermissionLevel => (v === 'read' || v === 'write' || v === 'admin' ? v : d);

/** Expands the shorthand forms of RFC-0011 permissions to the full form. */
export function buildPermissions(raw: unknown, assign: string): Permissions | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (raw === 'open') return { policy: 'open', default: 'read', allow: [], context: 'auto' };
  if (raw === 'private') return { policy: 'private', default: 'read', allow: [{ agent: assign, level: 'write' }], context: 'auto' };
  if (raw === 'restricted') return { policy: 'restricted', default: 'read', allow: [], context: 'auto' };
  if (Array.isArray(raw)) return { policy: 'restricted', default: 'read', allow: strs(raw).map((agent) => ({ agent, level: 'write' as const })), context: 'auto' };
  if (!isPlainObject(raw)) return undefined;
  const p = raw['policy'];
  const allow = Array.isArray(raw['allow'])
    ? raw['allow'].filter(isPlainObject).map((a) => ({
        agent: String(a['agent']),
        level: asLevel(a['level'], 'read'),
        ...(typeof a['expires'] === 'string' ? { expires: a['expires'] } : {}),
      }))
    : [];
  const d = raw['delegate'];
  const ctx = raw['context'];
  return {
    policy: p === 'restricted' || p === 'private' ? p : 'open',
    default: asLevel(raw['default'], 'read'),
    allow,
    ...(isPlainObject(d) ? { delegate: { to: strs(d['to']), level: asLevel(d['level'], 'read') } } : {}),
    context: ctx === 'none' ? 'none' : Array.isArray(ctx) ? strs(ctx) : 'auto',
  };
}

export function buildPhase(
  name: string,
  raw: Record<string, unknown>,
  dependsOn: string[],
  inputs: InputBinding[] | undefined,
  outputs: OutputDecl[] | undefined,
  skipWhen: Expression | undefined,
  types: TypeRegistry,
): PhaseModel {
  const assign = typeof raw['assign'] === 'string' ? raw['assign'] : '';
  const constraints = Array.isArray(raw['constraints']) ? raw['constraints'].map((c) => (typeof c === 'string' ? c : JSON.stringify(c))) : [];
  const extensions: Record<string, Json> = {};
  for (const k of Object.keys(raw)) if (k.startsWith('x-')) extensions[k] = raw[k] as Json;
  const timeout = num(raw['timeout_ms']) ?? num(raw['x-timeout_ms']);
  const inputType = types.record((inputs ?? []).map((b) => ({ name: b.name, type: b.type, required: true })));
  const outputType = outputs ? types.record(outputs.map((o) => ({ name: o.key, type: o.type, required: o.required }))) : undefined;
  const attachments = Array.isArray(raw['attachments'])
    ? raw['attachments'].filter(isPlainObject).map((a) => ({
        filename: String(a['filename']),
        ...(typeof a['content_type'] === 'string' ? { contentType: a['content_type'] } : {}),
      }))
    : [];
  return {
    name,
    title: typeof raw['title'] === 'string' ? raw['title'] : name,
    description: typeof raw['description'] === 'string' ? raw['description'] : undefined,
    assign,
    dependsOn,
    constraints,
    initialState: isPlainObject(raw['initial_state']) ? (raw['initial_state'] as JsonObject) : {},
    inputs,
    outputs,
    inputType,
    outputType,
    skipWhen,
    retry: buildRetry(raw['retry']),
    costTracking: buildCost(raw['cost_tracking']),
    timeoutMs: timeout,
    leasing: isPlainObject(raw['leasing']) ? (raw['leasing'] as JsonObject) : undefined,
    attachments,
    permissions: buildPermissions(raw['permissions'], assign),
    extensions,
  };
}
