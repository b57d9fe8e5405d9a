/**
 * Where a run's result goes: `--output FILE` is checked before anything runs (a missing directory, a
 * directory given as the file, no permission), and a finished result is never lost: if the file
 * cannot be written after all, it goes to a file in the temporary directory, and Baton says where.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { CliIo } from './io.js';
import { jsonChunks, writeChunks, writeJsonFile } from './json-stream.js';

function errno(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException).code;
}

/** Why a file operation failed, in words for the common causes (else the error's code or message). */
export function fsReason(e: unknown): string {
  const code = errno(e);
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'ENOSPC') return 'the disk is full';
  return code ?? (e as Error).message;
}

/** Why `abs` cannot take the output, or undefined when it can (nothing is created). `example`: a file of the kind wanted, for the hint. */
export async function outputProblem(abs: string, example = 'result.json'): Promise<string | undefined> {
  try {
    const st = await stat(abs);
    if (st.isDirectory()) return `is a directory; name a file, e.g. ${example}`;
    await access(abs, constants.W_OK);
    return undefined;
  } catch (e) {
    if (errno(e) === 'EACCES') return 'permission denied';
    if (errno(e) !== 'ENOENT') return (e as Error).message;
  }
  const dir = dirname(abs);
  try {
    const st = await stat(dir);
    if (!st.isDirectory()) return `${dir} is not a directory`;
    await access(dir, constants.W_OK);
    return undefined;
  } catch (e) {
    if (errno(e) === 'ENOENT' || errno(e) === 'ENOTDIR') return `the directory ${dir} does not exist`;
    if (errno(e) === 'EACCES') return `cannot write in ${dir} (permission denied)`;
    return (e as Error).message;
  }
}

/** Why the file `abs` cannot be read, or undefined when it can. */
export async function inputProblem(abs: string): Promise<string | undefined> {
  try {
    const st = await stat(abs);
    if (st.isDirectory()) return 'is a directory; name a file';
    await access(abs, constants.R_OK);
    return undefined;
  } catch (e) {
    if (errno(e) === 'ENOENT' || errno(e) === 'ENOTDIR') return 'no such file';
    if (errno(e) === 'EACCES') return 'permission denied';
    return (e as Error).message;
  }
}

/**
 * Why `--workspace DIR` (given relative to `cwd`) cannot be a workspace, as a message, or undefined: it
 * names a file (every input would be refused and every output left unsynced). A missing folder is
 * allowed: outputs make it.
 */
export async function workspaceRefusal(given: string | undefined, cwd: string): Promise<string | undefined> {
  if (given === undefined) return undefined;
  const st = await stat(resolve(cwd, given)).catch(() => undefined);
  return st && !st.isDirectory() ? `--workspace ${given}: is a file, not a directory` : undefined;
}

/**
 * Writes the result to `abs`; when that fails, to the temporary directory. Returns false when the
 * result did not reach `abs` (the caller exits non-zero), having said where it went.
 */
export async function saveResult(result: { runId: string }, abs: string, shown: string, io: CliIo): Promise<boolean> {
  try {
    await writeJsonFile(abs, result);
    return true;
  } catch (e) {
    const fallback = join(tmpdir(), `baton-result-${result.runId.replace(/[^\w.-]/g, '_')}.json`);
    try {
      await writeJsonFile(fallback, result);
      io.stderr(`baton run: cannot write ${shown} (${errno(e) ?? (e as Error).message}); the result was saved to ${fallback}\n`);
    } catch {
      io.stderr(`baton run: cannot write ${shown} (${errno(e) ?? (e as Error).message}), nor ${fallback}; the result follows on stdout\n`);
      await printJson(result, io);
    }
    return false;
  }
}

/** `--json`: the result on stdout, streamed (with backpressure on a real stream). */
export async function printJson(value: unknown, io: CliIo): Promise<void> {
  if (io.stdoutStream) {
    await writeChunks(
      (function* () {
        yield* jsonChunks(value);
        yield '\n';
      })(),
      io.stdoutStream,
      io.stdoutWrite,
    );
  } else {
    for (const c of jsonChunks(value)) io.stdout(c);
    io.stdout('\n');
  }
}
