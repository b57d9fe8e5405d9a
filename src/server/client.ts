/**
 * A small client of the server's API (fetch, no dependency): what `baton run --server` uses. Its
 * event stream reconnects with `Last-Event-ID` after a dropped connection, so a caller sees every
 * event once, in order.
 */
import { BatonError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { RunEvent } from '../engine/events.js';

export interface ServerClientOptions {
  /** `http://host:port` */
  url: string;
  key?: string | undefined;
  /**
   * `events()` gives up after this many reconnects in a row without an event between (default 5), once
   * `rideMs` has passed too since the server last answered.
   */
  reconnects?: number | undefined;
  /**
   * How long `events()` rides out a server it cannot reach, or that answers 502, 503 or 504 (its own store
   * away, a proxy in front of it restarting), before it gives up (default 30 s; the reconnects above too).
   */
  rideMs?: number | undefined;
  /**
   * How long `events()` waits for a byte on its stream (the server sends a keep-alive at least every 15 s
   * while nothing happens) before it takes the connection for dead and reconnects (default 45 s): a
   * connection cut without a reset (a partition, a NAT that forgot it) is left, not waited on for ever.
   */
  idleMs?: number | undefined;
  /**
   * How long `request()` waits for its whole answer (default 60 s): a server cut off without a reset (a
   * partition) fails the call, which the CLI then sends again (a lost answer), instead of holding it for
   * the HTTP client's own five minutes.
   */
  timeoutMs?: number | undefined;
}

/** An answer that is not a success, with the server's error code and message. */
export class ServerAnswerError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: JsonObject,
  ) {
    super(message);
    this.name = 'ServerAnswerError';
  }
}

export interface SseMessage {
  id?: string;
  event: string;
  data: string;
}

export class ServerClient {
  private readonly base: string;
  constructor(private readonly o: ServerClientOptions) {
    let u: URL;
    try {
      u = new URL(o.url);
    } catch {
      throw new BatonError('usage', `--server expects a URL such as http://127.0.0.1:8080, got \`${o.url}\``);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new BatonError('usage', `--server expects an http:// or https:// URL, got \`${o.url}\``);
    this.base = u.href.replace(/\/+$/, '');
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { ...(this.o.key !== undefined ? { authorization: `Bearer ${this.o.key}` } : {}), ...extra };
  }

  /** A JSON request; a non-2xx answer throws ServerAnswerError, an unreachable server BatonError `store-unreachable`. */
  async request(method: 'GET' | 'POST', path: string, body?: JsonObject, extraHeaders: Record<string, string> = {}): Promise<{ status: number; body: JsonObject }> {
    let res: Response;
    try {
      res = await fetch(this.base + path, {
        method,
        headers: this.headers({ ...extraHeaders, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }),
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.o.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS),
      });
    } catch (e) {
      throw unreachable(this.base, e);
    }
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      // the connection dropped while the answer was read: as unreachable as a reset before it
      throw unreachable(this.base, e);
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? {} : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined || parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ServerAnswerError(res.status, 'bad-answer', `${this.base}${path} answered ${res.status} with something that is not a JSON object; is it a Baton server?`, {});
    const b = parsed as JsonObject;
    if (!res.ok) {
      const err = (b['error'] ?? {}) as JsonObject;
      throw new ServerAnswerError(res.status, typeof err['code'] === 'string' ? err['code'] : `http-${res.status}`, typeof err['message'] === 'string' ? err['message'] : `the server answered ${res.status}`, b);
    }
    return { status: res.status, body: b };
  }

  /**
   * The run's events after `after`, live, until its terminal event. A dropped connection is
   * resumed from the last seq seen (`Last-Event-ID`).
   */
  async *events(runId: string, opts: { after?: number; signal?: AbortSignal } = {}): AsyncGenerator<RunEvent, void, undefined> {
    let seq = opts.after ?? 0;
    let failures = 0;
    const limit = this.o.reconnects ?? 5;
    const idleMs = this.o.idleMs ?? DEFAULT_IDLE_MS;
    const rideMs = this.o.rideMs ?? DEFAULT_RIDE_MS;
    // when the server last answered (a stream opened, an event came): a restart or a blip is ridden out from then
    let answered = performance.now();
    const giveUp = (): boolean => ++failures > limit && performance.now() - answered >= rideMs;
    for (;;) {
      if (opts.signal?.aborted) return;
      // this connection's own end: the caller's signal, or no byte for idleMs (armed again by every chunk)
      const connection = new AbortController();
      const watchdog = setTimeout(() => connection.abort(new Error(`no byte from the event stream for ${idleMs} ms`)), idleMs);
      const signal = opts.signal ? AbortSignal.any([opts.signal, connection.signal]) : connection.signal;
      let res: Response;
      try {
        res = await fetch(`${this.base}/runs/${encodeURIComponent(runId)}/events`, { headers: this.headers({ accept: 'text/event-stream', 'last-event-id': String(seq) }), signal });
      } catch (e) {
        clearTimeout(watchdog);
        if (opts.signal?.aborted) return;
        if (giveUp()) throw unreachable(this.base, e);
        await pause(Math.min(5000, 200 * 2 ** Math.min(failures, 5)));
        continue;
      }
      if (TRANSIENT.has(res.status)) {
        // the server's store is away (503), or a proxy's server is (502, 504): the stream is asked for again
        clearTimeout(watchdog);
        const text = await res.text().catch(() => '');
        if (giveUp()) throw new ServerAnswerError(res.status, `http-${res.status}`, `the event stream answered ${res.status} for ${Math.round((performance.now() - answered) / 1000)} s: ${text.slice(0, 200)}`, {});
        await pause(Math.min(5000, 200 * 2 ** Math.min(failures, 5)));
        continue;
      }
      if (!res.ok || !res.body) {
        const text = await res.text().catch(() => '');
        let err: JsonObject = {};
        try {
          err = ((JSON.parse(text) as JsonObject)['error'] ?? {}) as JsonObject;
        } catch {
          // not JSON: said by status
        }
        throw new ServerAnswerError(res.status, typeof err['code'] === 'string' ? err['code'] : `http-${res.status}`, typeof err['message'] === 'string' ? err['message'] : `the event stream answered ${res.status}`, { error: err });
      }
      let ended = false;
      answered = performance.now();
      try {
        for await (const m of sseMessages(res.body, () => watchdog.refresh())) {
          if (m.event === 'end') {
            ended = true;
            break;
          }
          if (m.event === 'error') break;
          if (m.id === undefined) continue;
          const e = JSON.parse(m.data) as RunEvent;
          if (e.seq <= seq) continue;
          seq = e.seq;
          failures = 0;
          answered = performance.now();
          yield e;
        }
      } catch (e) {
        if (opts.signal?.aborted) return;
        if (giveUp()) throw unreachable(this.base, e);
      } finally {
        clearTimeout(watchdog);
        // a connection left (ended, idle, or the caller stopped reading): its body is cancelled
        connection.abort();
      }
      if (ended) return;
      // the connection dropped (or the server said `error`): resume after the last seq seen
      await pause(Math.min(5000, 100 * 2 ** Math.min(failures, 6)));
    }
  }
}

function unreachable(base: string, e: unknown): BatonError {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return new BatonError('store-unreachable', `the server ${base} cannot be reached (${cause?.code ?? cause?.message ?? (e as Error).message})`, { cause: e });
}

/**
 * How a request that got no answer failed, for a caller deciding whether to send it again:
 * `refused` (nothing listens there, or the name does not resolve: a restart for a moment, a typo for
 * ever), `lost` (the connection broke or timed out: the request may have been acted on), or
 * `permanent` (a port fetch refuses, a certificate, a malformed URL: sending again cannot help).
 */
export function transportFailure(e: unknown): 'refused' | 'lost' | 'permanent' | undefined {
  if (!(e instanceof BatonError) || e.code !== 'store-unreachable') return undefined;
  const inner = (e.cause as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const code = typeof inner?.code === 'string' ? inner.code : undefined;
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'refused';
  if (code !== undefined && LOST.has(code)) return 'lost';
  const message = typeof inner?.message === 'string' ? inner.message : e.message;
  return /other side closed|socket hang up|terminated|ECONNRESET|timeout/i.test(message) ? 'lost' : 'permanent';
}

const LOST = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** `request()`'s default timeoutMs. */
const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/** `events()`'s default rideMs: as long as the CLI's commands ride out a server restart (cli/durable.ts START_BLIP_MS). */
const DEFAULT_RIDE_MS = 30_000;
/** Answers that say the server (or the store behind it) is away for a moment, not that the request is wrong. */
const TRANSIENT = new Set([502, 503, 504]);

/** `events()`'s default idleMs: three of the server's keep-alive periods. */
const DEFAULT_IDLE_MS = 45_000;

/**
 * Server-sent events from a response body (the text/event-stream format: fields, then a blank line).
 * `onChunk` hears of every chunk read, keep-alive comments included (a watchdog's sign of life).
 */
export async function* sseMessages(body: ReadableStream<Uint8Array>, onChunk?: () => void): AsyncGenerator<SseMessage, void, undefined> {
  const decoder = new TextDecoder();
  let buf = '';
  let id: string | undefined;
  let event = 'message';
  let data: string[] = [];
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onChunk?.();
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith('\r\n', nl) ? 2 : 1));
        if (line === '') {
          if (data.length > 0) yield { ...(id !== undefined ? { id } : {}), event, data: data.join('\n') };
          id = undefined;
          event = 'message';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') id = value;
        else if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => undefined);
  }
}

