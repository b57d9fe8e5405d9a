/** Cursor pagination: an opaque cursor (base64url JSON) naming where the previous page ended. */
import type { Json, JsonObject } from '../core/json.js';
import { HttpError } from './http.js';

export function encodeCursor(v: JsonObject): string {
  return Buffer.from(JSON.stringify(v), 'utf8').toString('base64url');
}

export function decodeCursor<T>(text: string, ok: (v: Record<string, unknown>) => v is Record<string, unknown> & T): T {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    v = undefined;
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v) || !ok(v as Record<string, unknown>)) throw new HttpError(400, 'invalid-request', 'the query parameter cursor is not a cursor this route gave (use next_cursor as it came)', { issues: [{ path: '?cursor', message: 'not a cursor this route gave' }] });
  return v as T;
}

/** A page of a list read whole (phases, gates, artifacts): the cursor is an offset. */
export function pageOf(name: string, all: readonly JsonObject[], query: Record<string, Json>): JsonObject {
  const limit = typeof query['limit'] === 'number' ? query['limit'] : 100;
  const from = typeof query['cursor'] === 'string' ? decodeCursor(query['cursor'], (v): v is { o: number } => Number.isInteger(v['o']) && (v['o'] as number) >= 0).o : 0;
  const items = all.slice(from, from + limit);
  return { [name]: items, next_cursor: from + limit < all.length ? encodeCursor({ o: from + limit }) : null };
}
