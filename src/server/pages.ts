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

/**
 * A page of a list read whole (phases, gates, artifacts), of the items `keep` lets through (a filter).
 * The list keeps its order and only grows at its end, so the cursor is a position in the whole list:
 * the next page starts after the last item shown, whatever entered or left the filter meanwhile (it was
 * an offset among the items that matched: a gate decided between two pages of `status=open` hid the
 * open gate after it).
 */
export function pageOf(name: string, all: readonly JsonObject[], query: Record<string, Json>, keep: (item: JsonObject) => boolean = () => true): JsonObject {
  const limit = typeof query['limit'] === 'number' ? query['limit'] : 100;
  const from = typeof query['cursor'] === 'string' ? decodeCursor(query['cursor'], (v): v is { o: number } => Number.isInteger(v['o']) && (v['o'] as number) >= 0).o : 0;
  const items: JsonObject[] = [];
  let at = from;
  for (; at < all.length && items.length < limit; at++) if (keep(all[at]!)) items.push(all[at]!);
  let more = false;
  for (let i = at; i < all.length && !more; i++) more = keep(all[i]!);
  return { [name]: items, next_cursor: more ? encodeCursor({ o: at }) : null };
}
