/** Reading a server-sent event stream in a test: messages until a condition, then the connection is dropped. */
import { sseMessages, type SseMessage } from '../../src/server/client.js';

export async function readStream(url: string, opts: { key?: string; lastEventId?: string; until?: (m: SseMessage, all: SseMessage[]) => boolean; timeoutMs?: number } = {}): Promise<{ status: number; messages: SseMessage[]; ended: boolean }> {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), opts.timeoutMs ?? 15_000);
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (opts.key) headers['authorization'] = `Bearer ${opts.key}`;
  if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
  const messages: SseMessage[] = [];
  let ended = false;
  try {
    const res = await fetch(url, { headers, signal: ctl.signal });
    if (!res.ok || !res.body) return { status: res.status, messages, ended };
    try {
      for await (const m of sseMessages(res.body)) {
        messages.push(m);
        if (m.event === 'end') {
          ended = true;
          break;
        }
        if (opts.until?.(m, messages)) break;
      }
    } catch (e) {
      if (!ctl.signal.aborted) throw e;
    }
    return { status: res.status, messages, ended };
  } finally {
    clearTimeout(timer);
    ctl.abort();
  }
}

/** The events (not `end`) of a stream, parsed. */
export function eventsOf(messages: SseMessage[]): { seq: number; type: string; [k: string]: unknown }[] {
  return messages.filter((m) => m.id !== undefined).map((m) => JSON.parse(m.data) as { seq: number; type: string });
}
