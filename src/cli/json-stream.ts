/**
 * JSON written as a stream of chunks, byte for byte what `JSON.stringify(value, null, 2)` gives, so
 * a run result of hundreds of megabytes is never one string (V8 caps a string near 512 MB: `RangeError:
 * Invalid string length`). Iterative, so depth costs no stack.
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';

const CHUNK_CHARS = 64 * 1024;

type Frame =
  | { kind: 'array'; items: readonly unknown[]; i: number; indent: string; self: object }
  | { kind: 'object'; entries: [string, unknown][]; i: number; indent: string; self: object };

function prepared(value: unknown, key: string): unknown {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return (value as { toJSON: (k: string) => unknown }).toJSON(key);
  }
  return value;
}

function skipped(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}

function scalar(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'bigint') return JSON.stringify(v.toString()); // JSON.stringify would throw mid-stream
  return 'null';
}

/** The chunks of `JSON.stringify(value, null, 2)` (a cycle is written as "[Circular]" instead of throwing). */
export function* jsonChunks(value: unknown): Generator<string> {
  let buf = '';
  const stack: Frame[] = [];
  const open = new Set<object>();
  // Emits one value: a scalar at once, a collection by pushing a frame.
  const start = (v: unknown, indent: string): void => {
    if (v === null || typeof v !== 'object') {
      buf += scalar(v);
      return;
    }
    if (open.has(v)) {
      buf += '"[Circular]"';
      return;
    }
    if (Array.isArray(v)) {
      if (v.length === 0) buf += '[]';
      else {
        buf += '[';
        open.add(v);
        stack.push({ kind: 'array', items: v, i: 0, indent, self: v });
      }
      return;
    }
    const entries: [string, unknown][] = [];
    for (const k of Object.keys(v)) {
      const item = prepared((v as Record<string, unknown>)[k], k);
      if (!skipped(item)) entries.push([k, item]);
    }
    if (entries.length === 0) buf += '{}';
    else {
      buf += '{';
      open.add(v);
      stack.push({ kind: 'object', entries, i: 0, indent, self: v });
    }
  };
  const top = prepared(value, '');
  if (skipped(top)) return;
  start(top, '');
  while (stack.length > 0) {
    const f = stack[stack.length - 1]!;
    const inner = `${f.indent}  `;
    const n = f.kind === 'array' ? f.items.length : f.entries.length;
    if (f.i >= n) {
      buf += `\n${f.indent}${f.kind === 'array' ? ']' : '}'}`;
      open.delete(f.self);
      stack.pop();
    } else {
      buf += f.i === 0 ? `\n${inner}` : `,\n${inner}`;
      if (f.kind === 'array') {
        const item = prepared(f.items[f.i], String(f.i));
        f.i++;
        start(skipped(item) ? null : item, inner);
      } else {
        const [k, item] = f.entries[f.i]!;
        f.i++;
        buf += `${JSON.stringify(k)}: `;
        start(item, inner);
      }
    }
    if (buf.length >= CHUNK_CHARS) {
      yield buf;
      buf = '';
    }
  }
  if (buf !== '') yield buf;
}

/**
 * Writes chunks to a stream, waiting for it to drain (memory stays bounded). Stops quietly when the
 * stream errors or closes (a reader that went away: `| head`).
 */
export async function writeChunks(chunks: Iterable<string>, stream: NodeJS.WritableStream & { destroyed?: boolean; writableEnded?: boolean }, write: (c: string) => boolean = (c) => stream.write(c)): Promise<void> {
  for (const c of chunks) {
    if (stream.destroyed || stream.writableEnded) return;
    if (!write(c)) {
      const ac = new AbortController();
      await Promise.race([once(stream, 'drain', { signal: ac.signal }), once(stream, 'close', { signal: ac.signal }), once(stream, 'error', { signal: ac.signal })]).catch(() => undefined);
      ac.abort();
    }
  }
}

/** Writes `value` as indented JSON (and a final newline) to a file, streaming. Rejects with the file system's error. */
export async function writeJsonFile(path: string, value: unknown): Promise<void> {
  const out = createWriteStream(path);
  const failed = new Promise<never>((_, reject) => out.once('error', reject));
  failed.catch(() => undefined);
  await Promise.race([once(out, 'open'), failed]);
  for (const c of jsonChunks(value)) {
    if (!out.write(c)) await Promise.race([once(out, 'drain'), failed]);
  }
  out.end('\n');
  await Promise.race([once(out, 'finish'), failed]);
}
