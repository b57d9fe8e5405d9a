/**
 * AIP-16 files of a remote agent's attempt: the engine staged its inputs into a scratch root on the
 * server's disk (engine/files.ts) before the attempt was parked, and checks, records and syncs its
 * outputs from that root once the attempt returns. A remote agent is another AIP-16 host for its own
 * body: it fetches each staged input (`GET /tasks/{token}/files/{key}`) into a root of its own, runs
 * the body there, and sends back each declared output it produced (`PUT /tasks/{token}/files/{key}`)
 * into the server's root, before it completes. The engine's part (hashing, `task.file` events, the sync
 * to the workspace only after the completion commits) is unchanged: the server's root looks as it would
 * had the agent run in process.
 *
 * Invariants:
 * - Only the attempt's own files: a key the phase does not declare (an input, or for a PUT an output)
 *   is 404, whatever the root holds; the resolved path must be a direct child of the root.
 * - An upload lands whole or not at all: it is written beside its target under a name of its own and
 *   renamed over it once every byte came; a body cut short, or over the limit, leaves nothing.
 * - An upload counts only while its token does (the caller checks the token at the start; the rename
 *   happens only if the attempt still holds its task at the end). A completion waits for the uploads
 *   of its task in flight, so that the engine's check sees every byte the agent sent before it, as long
 *   as they move: one that received nothing for UPLOAD_STALL_MS (an abandoned connection, whose
 *   agent sent the file again or gave it up) no longer holds the completion, and writes nothing after it.
 * - Bytes arriving count as the agent's heartbeat: a long upload alone keeps the task.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lstat, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import type { JsonObject } from '../core/json.js';
import type { StagedFiles } from '../engine/files.js';
import { HttpError } from './http-types.js';
import { headerContentType } from './remote-client-files.js';

/** An upload in flight that received no bytes for this long (ms; at most a third of the lease) no longer holds its task's completion. */
export const UPLOAD_STALL_MS = 5000;

/**
 * Waits for a task's uploads in flight while they move: returns when they settled, or when none of those
 * still in flight received a byte for `stallMs`. Such an upload writes nothing once the attempt ended.
 */
export async function uploadsSettled(uploads: ReadonlyMap<Promise<unknown>, { lastByteAt: number }>, stallMs: number): Promise<void> {
  const all = Promise.allSettled([...uploads.keys()]).then(() => true);
  for (;;) {
    const moving = [...uploads.values()];
    if (moving.length === 0) return;
    const idle = performance.now() - Math.max(...moving.map((u) => u.lastByteAt));
    if (idle >= stallMs) return;
    let timer: NodeJS.Timeout | undefined;
    const settled = await Promise.race([all, new Promise<boolean>((res) => (timer = setTimeout(() => res(false), stallMs - idle)))]);
    clearTimeout(timer);
    if (settled) return;
  }
}

/** The default largest file a remote agent may upload (`baton serve --file-limit`). */
export const DEFAULT_FILE_LIMIT = 64 * 1024 * 1024;

/** What the claim says of an attempt's files: what to fetch, what may be sent back. */
export interface RemoteFilesView {
  inputs: { key: string; size: number; sha256: string; content_type?: string }[];
  outputs: { key: string; content_type?: string }[];
}

/** The attempt's files when the server can hand them over: staged under a local directory (the local stager's roots). */
export function servedFiles(files: StagedFiles | undefined): StagedFiles | undefined {
  if (!files || !isAbsolute(files.root) || files.inputs.length + files.outputs.length === 0) return undefined;
  return files;
}

export function filesView(files: StagedFiles): RemoteFilesView {
  return {
    inputs: files.inputs.map((i) => ({ key: i.key, size: i.size, sha256: i.sha256, ...(i.contentType !== undefined ? { content_type: i.contentType } : {}) })),
    outputs: files.outputs.map((o) => ({ key: o.key, ...(o.contentType !== undefined ? { content_type: o.contentType } : {}) })),
  };
}

/** `<root>/<key>`, checked to be a direct child of the root (the key schema and the declared keys say so already). */
function pathIn(root: string, key: string): string {
  const p = resolve(root, key);
  if (dirname(p) !== resolve(root) || key === '.' || key === '..' || key.includes('/') || key.includes('\\') || key.includes('\0')) {
    throw new HttpError(400, 'invalid-request', `file key \`${key.slice(0, 100)}\` is not a single file name`);
  }
  return p;
}

function unknownFile(key: string, what: string): HttpError {
  return new HttpError(404, 'unknown-file', `this attempt declares no ${what} \`${key.slice(0, 100)}\``, { key });
}

/** A staged input (or an output already sent) of the attempt, opened for reading: its size and content type. */
export async function openTaskFile(files: StagedFiles | undefined, key: string): Promise<{ handle: FileHandle; size: number; contentType: string }> {
  const f = servedFiles(files);
  const input = f?.inputs.find((i) => i.key === key);
  const output = f?.outputs.find((o) => o.key === key);
  if (!f || (!input && !output)) throw unknownFile(key, 'file');
  const path = pathIn(f.root, key);
  let st: Stats | undefined;
  try {
    st = await lstat(path);
  } catch {
    st = undefined;
  }
  // only a regular file the server put there (never a link, whatever made one)
  if (!st?.isFile()) throw new HttpError(404, 'file-not-found', `file \`${key.slice(0, 100)}\` is not in the attempt's root${input ? '' : ' (an output not sent yet)'}`, { key });
  const handle = await open(path, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  try {
    const size = (await handle.stat()).size;
    return { handle, size, contentType: headerContentType((input ?? output)!.contentType) };
  } catch (e) {
    await handle.close();
    throw e;
  }
}

/** The body of a GET: the open file as a web stream (closed when read, or when the client goes). */
export function fileBody(handle: FileHandle, onBytes?: () => void): ReadableStream<Uint8Array> {
  const stream = handle.createReadStream({ autoClose: true });
  if (onBytes) stream.on('data', onBytes);
  return Readable.toWeb(stream) as ReadableStream<Uint8Array>;
}

/** Checks an upload's key before its body is read: an output the attempt declares. */
export function uploadTarget(files: StagedFiles | undefined, key: string): string {
  const f = servedFiles(files);
  if (!f || !f.outputs.some((o) => o.key === key)) throw unknownFile(key, 'output file');
  return pathIn(f.root, key);
}

/**
 * Writes an upload to `target`: every byte of `body` to a file of its own beside it, then renamed over
 * it, if `stillHeld()` says the attempt still holds its task. At most `limit` bytes (413 past it);
 * a body cut short is 400. Nothing is left behind when it fails.
 */
export async function writeUpload(target: string, body: AsyncIterable<Uint8Array>, limit: number, stillHeld: () => void, onBytes?: () => void): Promise<JsonObject> {
  const temp = join(dirname(target), `.baton-upload-${randomBytes(9).toString('hex')}`);
  const fh = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o644);
  const hash = createHash('sha256');
  let size = 0;
  let renamed = false;
  const chunks = body[Symbol.asyncIterator]();
  let done = false;
  try {
    try {
      for (;;) {
        let next: IteratorResult<Uint8Array>;
        try {
          next = await chunks.next();
        } catch {
          // the connection closed before the body's end (a write error of the server's own is not this)
          done = true;
          throw new HttpError(400, 'invalid-request', 'the upload was cut short: nothing was written');
        }
        if (next.done === true) {
          done = true;
          break;
        }
        size += next.value.byteLength;
        if (size > limit) throw tooLarge(limit);
        onBytes?.();
        hash.update(next.value);
        await fh.write(next.value);
      }
    } finally {
      // a body left before its end stays unread (its reader lets go of it; the answer closes the connection)
      if (!done) await chunks.return?.();
      await fh.close();
    }
    // a token that ended while the bytes came (a cancel, a lost lease, a completion) writes nothing
    stillHeld();
    await rename(temp, target);
    renamed = true;
    return { key: basename(target), size, sha256: hash.digest('hex') };
  } finally {
    if (!renamed) await unlink(temp).catch(() => undefined);
  }
}

export function tooLarge(limit: number): HttpError {
  return new HttpError(413, 'file-too-large', `the file is larger than this server's limit of ${limit} bytes for an uploaded file (baton serve --file-limit)`);
}
