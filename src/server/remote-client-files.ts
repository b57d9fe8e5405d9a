/**
 * AIP-16 files on a remote agent's side (createRemoteAgent): the agent is the host of its own body. A
 * claim whose attempt has files lists them (`files`: the inputs with their size and sha256, the outputs
 * it may send back); the agent makes a scratch root of its own (a fresh temp dir per attempt), fetches
 * each input into `<root>/<key>` (checked against the claim's size and sha256), hands the body the root
 * as `input._workflowFsRoot`, and once the body returned sends each declared output it produced back
 * to the server, which records and syncs it as for an agent in process. The root is removed after,
 * whatever happened.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentError } from '../engine/agent.js';

/** What a claim says of its attempt's files (the server's `files`). */
export interface TaskFiles {
  inputs: { key: string; size: number; sha256: string; content_type?: string }[];
  outputs: { key: string; content_type?: string }[];
}

/** A task's abort, as the client keeps it. */
interface Abort {
  readonly aborted: boolean;
  readonly signal: AbortSignal;
  abort(reason: unknown): void;
}

interface Answer {
  statusCode: number;
  body: AsyncIterable<Uint8Array> & { text(): Promise<string>; dump(): Promise<void> };
}

/** The client's requests (its connections and key), and its way of sending a call again whose answer was lost. */
export interface Transfer {
  request(path: string, init: { method: 'GET' | 'PUT'; body?: NodeJS.ReadableStream; headers?: Record<string, string>; signal: AbortSignal }): Promise<Answer>;
  again<R extends object>(send: () => Promise<R>, leaseMs: number, abort: Abort): Promise<R>;
}

/**
 * A declared `contentType` as a header value: the workflow's author wrote it, and one that is not
 * printable ASCII (a CR or LF in a quoted YAML string, say) cannot be a header: such a type is sent as
 * `application/octet-stream`, where it made the server answer 500 and the agent's upload throw.
 */
export function headerContentType(type: string | undefined): string {
  return type !== undefined && /^[\x21-\x7e][\x20-\x7e]*$/.test(type) ? type : 'application/octet-stream';
}

/** A key as a path segment (keys are single file names; any character but `/` may be in one). */
function filePath(token: string, key: string): string {
  return `/tasks/${token}/files/${encodeURIComponent(key)}`;
}

/** The attempt ended on the server (409): nothing more to do for it. */
function ended(abort: Abort, status: number, text: string): boolean {
  if (status !== 409) return false;
  abort.abort(new Error(`the server ended the attempt: ${text.slice(0, 200)}`));
  return true;
}

/**
 * Makes the attempt's root and fetches each input into it; resolves to the root. A fetch the server
 * refuses, or whose bytes are not the claim's, fails the attempt (retryable: `InputFileUnavailable`);
 * one whose answer was lost is fetched again, whole, for up to a lease.
 */
export async function downloadInputs(tr: Transfer, token: string, files: TaskFiles, abort: Abort, leaseMs: number): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'baton-remote-files-'));
  try {
    for (const f of files.inputs) {
      const target = join(root, f.key);
      const got = await tr.again(async () => {
        const res = await tr.request(filePath(token, f.key), { method: 'GET', signal: abort.signal });
        if (res.statusCode !== 200) return { status: res.statusCode, text: await res.body.text() };
        const hash = createHash('sha256');
        let size = 0;
        const fh = await open(target, 'w');
        try {
          for await (const chunk of res.body) {
            size += chunk.byteLength;
            hash.update(chunk);
            await fh.write(chunk);
          }
        } finally {
          await fh.close();
        }
        return { status: 200, text: '', size, sha256: hash.digest('hex') };
      }, leaseMs, abort);
      if (ended(abort, got.status, got.text)) throw abort.signal.reason;
      if (got.status !== 200) throw new AgentError('InputFileUnavailable', `input file \`${f.key}\` could not be fetched: HTTP ${got.status} ${got.text.slice(0, 200)}`, { key: f.key, status: got.status }, true);
      if (got.size !== f.size || got.sha256 !== f.sha256) throw new AgentError('InputFileUnavailable', `input file \`${f.key}\` came with other bytes than the server staged (${String(got.size)} bytes, sha256 ${String(got.sha256)}; staged ${f.size}, ${f.sha256})`, { key: f.key }, true);
    }
    return root;
  } catch (e) {
    await removeRoot(root);
    throw e;
  }
}

/**
 * Sends each declared output the body left at `<root>/<key>` (a regular file) to the server. One not
 * produced is not an error (the server records the warning, as AIP-16 asks); one the server refuses
 * (too large, not a regular file here) is a line in the task's log, and the completion goes on without
 * it. One whose answer was lost is sent again, whole, for up to a lease.
 */
export async function uploadOutputs(tr: Transfer, token: string, files: TaskFiles, root: string, abort: Abort, leaseMs: number, log: (line: string) => void): Promise<void> {
  for (const f of files.outputs) {
    if (abort.aborted) return;
    const source = join(root, f.key);
    const st = await lstat(source).catch(() => undefined);
    if (!st) continue;
    if (!st.isFile()) {
      log(`warning: output file \`${f.key}\` is not a regular file under the scratch root: not sent`);
      continue;
    }
    const r = await tr.again(async () => {
      const res = await tr.request(filePath(token, f.key), { method: 'PUT', body: createReadStream(source), headers: { 'content-type': headerContentType(f.content_type), 'content-length': String(st.size) }, signal: abort.signal });
      return { status: res.statusCode, text: await res.body.text() };
    }, leaseMs, abort);
    if (ended(abort, r.status, r.text)) return;
    if (r.status !== 200) log(`warning: output file \`${f.key}\` could not be sent: HTTP ${r.status} ${r.text.slice(0, 300)}`);
  }
}

/** Removes an attempt's root (best effort). */
export async function removeRoot(root: string): Promise<void> {
  await rm(root, { recursive: true, force: true }).catch(() => undefined);
}
