/**
 * The `@a2a-js/sdk` package (an optional peer dependency), loaded only when an `x-a2a` agent runs,
 * `baton check` reads an agent card, or `baton serve --a2a` starts. Helpers here build and read
 * the SDK's v1.0 wire objects (messages, parts, task states) for both edges.
 */
import { randomUUID } from 'node:crypto';
import { isPlainObject, type Json, type JsonObject } from '../core/json.js';
import { loadOptional } from '../core/optional.js';

export type A2aSdk = typeof import('@a2a-js/sdk');
export type A2aClientSdk = typeof import('@a2a-js/sdk/client');
export type A2aMessage = import('@a2a-js/sdk').Message;
export type A2aPart = import('@a2a-js/sdk').Part;
export type A2aTask = import('@a2a-js/sdk').Task;
export type A2aCard = import('@a2a-js/sdk').AgentCard;

/** The media type of a data part (the only one Baton needs on either edge). */
export const JSON_MODE = 'application/json';

export async function loadA2a(what: string): Promise<{ sdk: A2aSdk; client: A2aClientSdk }> {
  return loadOptional('@a2a-js/sdk', what, async () => {
    const [sdk, client] = await Promise.all([import('@a2a-js/sdk'), import('@a2a-js/sdk/client')]);
    return { sdk, client };
  });
}

export function dataPart(value: Json): A2aPart {
  return { content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: JSON_MODE };
}

export function textPart(text: string): A2aPart {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

/** A message of `role` (SDK Role values: 1 user, 2 agent). */
export function message(role: number, parts: A2aPart[], ids: { taskId?: string; contextId?: string } = {}, metadata?: JsonObject): A2aMessage {
  return { messageId: randomUUID(), contextId: ids.contextId ?? '', taskId: ids.taskId ?? '', role, parts, metadata, extensions: [], referenceTaskIds: [] };
}

/** The last data part holding a JSON object, or undefined. */
export function dataOf(parts: readonly A2aPart[]): JsonObject | undefined {
  let out: JsonObject | undefined;
  for (const p of parts) if (p.content?.$case === 'data' && isPlainObject(p.content.value)) out = p.content.value as JsonObject;
  return out;
}

/** Any data part's value (an answer may be a string, a number, ...), else the text parts joined, else undefined. */
export function answerOf(parts: readonly A2aPart[]): Json | undefined {
  for (const p of parts) if (p.content?.$case === 'data' && p.content.value !== undefined) return p.content.value as Json;
  const text = textOf(parts);
  return text === '' ? undefined : text;
}

export function textOf(parts: readonly A2aPart[]): string {
  return parts
    .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    .filter((t) => t !== '')
    .join('\n');
}

/** Task state names as the spec writes them (lower-case, kebab), for messages and docs. */
export function stateName(state: number): string {
  const names: Record<number, string> = { 1: 'submitted', 2: 'working', 3: 'completed', 4: 'failed', 5: 'canceled', 6: 'input-required', 7: 'rejected', 8: 'auth-required' };
  return names[state] ?? 'unspecified';
}

/** Terminal: completed, failed, canceled, rejected. */
export function isTerminal(state: number): boolean {
  return state === 3 || state === 4 || state === 5 || state === 7;
}

/** Interrupted: input-required, auth-required (the agent waits on its caller). */
export function isInterrupted(state: number): boolean {
  return state === 6 || state === 8;
}
