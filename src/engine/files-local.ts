/**
 * The local-disk FileStager (files.ts has the port): scratch roots under the OS temporary folder,
 * files copied from and to a workspace on this machine, each byte hashed on the way, every path
 * checked against the workspace (`..`, absolute paths, symbolic links that lead out), writes made
 * beside their target and renamed over it. A root's name says its run, task and attempt, so the roots
 * a process that died left behind can be listed by run (`leftovers`), and only those: directories of
 * this user, never a symbolic link.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { makeDirs } from '../core/make-dirs.js';
import { lstat, mkdtemp, open, readdir, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { escapeProblem, keyProblem } from '../workflow/files.js';
import { FileRefused, NotAFile, type FileDigest, type FileStager, type LeftoverRoot, type ScratchRoot } from './files.js';
import { itemKey, parseItemKey } from './state.js';

/** Files up to this size are read whole (one read, one write); larger ones are streamed. */
const WHOLE_FILE_BYTES = 16 * 1024 * 1024;

/**
 * The local-disk stager: roots under `tmpDir` (the OS temporary directory by default), files
 * from and to `workspace`.
 */
export function localFileStager(opts: { workspace: string; tmpDir?: string }): FileStager {
  const workspace = resolve(opts.workspace);
  let realWs: string | undefined;
  // kept once the workspace exists; until then (the first sync makes it) found again at each use
  const ws = async (): Promise<string> => (realWs ??= await realpath(workspace).catch(() => undefined)) ?? (await realMissing(workspace));
  const tmp = (): string => opts.tmpDir ?? tmpdir();
  const rootAt = (root: string, leftover = false): ScratchRoot => {
    // during this root's syncs: folders resolved (path -> real path) and folders made, once each, not once per file
    const dirs = new Map<string, string>();
    const made = new Set<string>();
    // what check() hashed, by key: a sync of the same file, unchanged since, copies it without hashing it again
    const checked = new Map<string, { digest: FileDigest; stamp: Stamp }>();
    /** `<root>/<key>` and its stat after the target was checked: undefined when the agent did not produce it. */
    const source = async (key: string, rel: string): Promise<{ from: string; to: string; present: boolean }> => {
      const from = join(root, checkedKey(key));
      // the target is checked first: a path out of the workspace is refused whether or not the file exists
      const to = await inside(await ws(), workspace, rel, 'write', dirs);
      const st = await lstat(from).catch((e: NodeJS.ErrnoException) => {
        if (e.code === 'ENOENT') return undefined;
        throw e;
      });
      // an agent's symbolic link would copy whatever it points at into the workspace
      if (st && !st.isFile()) throw new FileRefused(`\`${key}\` under the scratch root is not a regular file`);
      return { from, to, present: st !== undefined };
    };
    return {
      path: root,
      async stage(key, rel) {
        const from = await inside(await ws(), workspace, rel, 'read');
        const { stamp: _, ...d } = await copyHashed(from, join(root, checkedKey(key)));
        return d;
      },
      async check(key, rel) {
        const { from, to, present } = await source(key, rel);
        if (!present) return 'missing';
        // what can be known before anything is written: a folder where the file goes, a file where a folder should be
        await writable(to, rel);
        const { stamp, ...digest } = await copyHashed(from, undefined);
        checked.set(key, { digest, stamp });
        return digest;
      },
      async sync(key, rel, expected) {
        const { from, to, present } = await source(key, rel);
        if (!present) {
          // another process of this host finished this root's sync and removed it: the bytes are there
          if (expected && (await copyHashed(to, undefined).catch(() => undefined))?.sha256 === expected.sha256) return expected;
          return 'missing';
        }
        if (!made.has(dirname(to))) {
          makeDirs(dirname(to));
          made.add(dirname(to));
        }
        // written beside the target and renamed over it: a reader never sees half a file. The copy's name
        // says whose root it came from: a leftover root's sync (a process died mid-copy) removes what it began
        const copy = `${basename(to)}.baton-${tag(root)}-`;
        const tmpFile = join(dirname(to), `${copy}${Math.random().toString(36).slice(2, 8).padEnd(6, '0')}`);
        try {
          const known = checked.get(key);
          const { stamp: _, ...d } = await copyHashed(from, tmpFile, known && expected && known.digest.sha256 === expected.sha256 ? known : undefined);
          if (expected && d.sha256 !== expected.sha256) throw new FileRefused(`\`${key}\` changed under the scratch root after the agent returned`);
          await rename(tmpFile, to);
          if (leftover) await removeCopies(dirname(to), copy);
          return d;
        } catch (e) {
          await rm(tmpFile, { force: true }).catch(() => undefined);
          // another process of this host synced the same root meanwhile: the bytes are there
          if (expected && (await copyHashed(to, undefined).catch(() => undefined))?.sha256 === expected.sha256) return expected;
          throw e;
        }
      },
      async remove() {
        await rm(root, { recursive: true, force: true }).catch(() => undefined);
      },
    };
  };
  return {
    workspace,
    async open(scope) {
      return rootAt(await mkdtemp(join(tmp(), attemptPrefix(scope.runId, scope.item ? itemKey(scope.phase, scope.item.index) : scope.phase, scope.attempt))));
    },
    async leftovers(runId) {
      const dir = tmp();
      const prefix = runPrefix(runId);
      const names = await readdir(dir).catch(() => [] as string[]);
      const out: LeftoverRoot[] = [];
      for (const name of names) {
        if (!name.startsWith(prefix)) continue;
        const m = ROOT_REST.exec(name.slice(prefix.length));
        if (!m) continue;
        const path = join(dir, name);
        // only a directory of this user's, never a symbolic link (lstat does not follow it), is ever removed
        const st = await lstat(path).catch(() => undefined);
        if (!st?.isDirectory() || (typeof process.getuid === 'function' && st.uid !== process.getuid())) continue;
        const root = rootAt(path, true);
        out.push({
          path,
          attempt: Number(m[2]),
          ...(m[1] !== undefined ? { item: Number(m[1]) } : {}),
          sync: (key, rel, expected) => root.sync(key, rel, expected),
          remove: () => root.remove(),
          isOf: (key, attempt) => name.startsWith(attemptPrefix(runId, key, attempt)),
        });
      }
      return out;
    },
  };
}

/*
 * A root's name says whose it is: `baton-files-<run>_<h>-<phase>[.<index>].<attempt>_<h>-XXXXXX`, each
 * name cut to [A-Za-z0-9_] and 40 characters for reading, each `<h>` the start of a sha256 of the exact
 * run id (of the task key and attempt), so a prefix names one run (one attempt) and nothing else.
 * XXXXXX is mkdtemp's.
 */
const ROOT_PREFIX = 'baton-files-';
const ROOT_REST = /^[A-Za-z0-9_]*(?:\.(\d+))?\.(\d+)_[0-9a-f]{8}-[A-Za-z0-9]{6}$/;

function nameSafe(s: string): string {
  return s.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 40);
}

function tag(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 8);
}

/** How every scratch root of the run begins. */
function runPrefix(runId: string): string {
  return `${ROOT_PREFIX}${nameSafe(runId)}_${tag(runId)}-`;
}

/** How the scratch root of one attempt of a task (`phase` or `phase[index]`) begins. */
function attemptPrefix(runId: string, key: string, attempt: number): string {
  const item = parseItemKey(key);
  return `${runPrefix(runId)}${nameSafe(item ? item.parent : key)}${item ? `.${item.index}` : ''}.${attempt}_${tag(`${key}\n${attempt}`)}-`;
}

function checkedKey(key: string): string {
  const bad = keyProblem(key);
  if (bad !== undefined) throw new FileRefused(`file key ${bad}`);
  return key;
}

/**
 * The absolute path of `rel` in the workspace, refused when it leaves it: `..`, an absolute path,
 * or (resolving symbolic links) a file or folder outside. For a write, the deepest folder that
 * exists is resolved, and the target itself when it exists.
 */
async function inside(realWs: string, workspace: string, rel: string, use: 'read' | 'write', dirs?: Map<string, string>): Promise<string> {
  const escape = escapeProblem(rel);
  if (escape !== undefined || rel.includes('\0') || isAbsolute(rel)) throw new FileRefused(escape ?? `\`${rel}\` is not a workspace path`);
  const abs = resolve(workspace, rel);
  if (!within(workspace, abs)) throw new FileRefused(`\`${rel}\` leaves the workspace`);
  if (use === 'read') {
    const real = await realpath(abs); // ENOENT: the missing input file
    if (!within(realWs, real)) throw new FileRefused(`\`${rel}\` is a symbolic link that leads out of the workspace`);
    return real;
  }
  const target = await realpath(abs).catch(() => undefined);
  if (target !== undefined) {
    if (!within(realWs, target)) throw new FileRefused(`\`${rel}\` is a symbolic link that leads out of the workspace`);
    return target;
  }
  let dir = dirname(abs);
  for (;;) {
    // the workspace itself is not there yet: nothing in it can be a link, and realWs is where it will be made
    if (!within(workspace, dir)) return join(realWs, relative(workspace, abs));
    const real = dirs?.get(dir) ?? (await realpath(dir).catch(() => undefined));
    if (real !== undefined) {
      if (!within(realWs, real)) throw new FileRefused(`\`${rel}\` goes through a symbolic link that leads out of the workspace`);
      dirs?.set(dir, real);
      return join(real, relative(dir, abs));
    }
    const up = dirname(dir);
    if (up === dir) throw new FileRefused(`\`${rel}\` has no folder in the workspace`);
    dir = up;
  }
}

/** Where a folder that does not exist would be made: its nearest existing folder, resolved, and the rest of the path. */
async function realMissing(path: string): Promise<string> {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const real = await realpath(dir).catch(() => undefined);
    if (real !== undefined) return join(real, relative(dir, path));
    if (dirname(dir) === dir) return path;
  }
}

/** Removes the copies a dead process began beside a target (`<name>.baton-<root's tag>-XXXXXX`, regular files only). */
async function removeCopies(dir: string, prefix: string): Promise<void> {
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!name.startsWith(prefix) || !/^[a-z0-9]{6}$/.test(name.slice(prefix.length))) continue;
    const p = join(dir, name);
    if ((await lstat(p).catch(() => undefined))?.isFile()) await rm(p, { force: true }).catch(() => undefined);
  }
}

/** Refuses a target that is a folder, or whose nearest existing folder on its way is a file. */
async function writable(to: string, rel: string): Promise<void> {
  if ((await stat(to).catch(() => undefined))?.isDirectory()) throw new FileRefused(`\`${rel}\` is a folder`);
  for (let d = dirname(to); ; d = dirname(d)) {
    const st = await stat(d).catch(() => undefined);
    if (st) {
      if (!st.isDirectory()) throw new FileRefused(`\`${rel}\` cannot be made: \`${basename(d)}\` on its way is a file, not a folder`);
      return;
    }
    if (dirname(d) === d) return;
  }
}

function within(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** When a file last changed, as far as its metadata says (size, modification and change times, inode). */
type Stamp = string;

/**
 * Copies `from` to `to` (created: it must not exist) and hashes the bytes on the way; without `to`, only
 * hashes them. With `known` (the digest of the same file when its metadata said `stamp`), a file whose
 * metadata still says so is copied without hashing it again: the bytes are those hashed then.
 */
async function copyHashed(from: string, to: string | undefined, known?: { digest: FileDigest; stamp: Stamp }): Promise<FileDigest & { stamp: Stamp }> {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer, for ever; a regular file reads as ever
  const src = await open(from, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = await src.stat({ bigint: true });
    if (!st.isFile()) throw new NotAFile(`\`${basename(from)}\` is ${st.isDirectory() ? 'a folder' : 'not a regular file (a FIFO, a socket or a device)'}, not a file to copy`);
    const stamp = `${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}`;
    const hash = known?.stamp === stamp ? undefined : createHash('sha256');
    const result = (size: number): FileDigest & { stamp: Stamp } => ({ sha256: hash ? hash.digest('hex') : known!.digest.sha256, size, stamp });
    if (st.size <= BigInt(WHOLE_FILE_BYTES)) {
      const bytes = await src.readFile();
      hash?.update(bytes);
      if (to !== undefined) await writeFile(to, bytes, { flag: 'wx' });
      return result(bytes.length);
    }
    const dst = to !== undefined ? await open(to, 'wx') : undefined;
    let size = 0;
    try {
      const buf = Buffer.allocUnsafe(1024 * 1024);
      for (;;) {
        const { bytesRead } = await src.read(buf, 0, buf.length, null);
        if (bytesRead === 0) break;
        const chunk = buf.subarray(0, bytesRead);
        hash?.update(chunk);
        await dst?.write(chunk);
        size += bytesRead;
      }
    } finally {
      await dst?.close();
    }
    return result(size);
  } finally {
    await src.close();
  }
}
