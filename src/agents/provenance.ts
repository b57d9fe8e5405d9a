/**
 * Provenance of the files an agent's contract declares (`sideEffects.filesRead` / `filesWritten`), for
 * agents that record none themselves (functions, `x-command` subprocesses, LLM agents; `defineAgent`
 * handlers record their staged and synced files). After an attempt that succeeded, each declared path
 * (`{name}` placeholders filled from the phase's input, globs expanded in the workspace) is hashed and
 * recorded as `file_read` / `file_written` (path, sha256, size, declared pattern); a declared output that
 * matched nothing is a warning and a `declared_file_missing` record. Recording never fails the attempt.
 *
 * Globs: `*` and `?` within one path segment, `**` for any number of segments; wildcards do not match names
 * starting with a dot. Nothing outside the workspace is read: absolute paths and `..` escapes are skipped,
 * symbolic links to directories are not followed by wildcards, and a matched file whose real path lies
 * outside the workspace is skipped.
 */
import { createHash } from 'node:crypto';
import { createReadStream, type Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, posix, relative, resolve, sep } from 'node:path';
import type { JsonObject } from '../core/json.js';
import type { AgentContext, AgentHandler } from '../engine/agent.js';
import type { AgentContract, FileEffect } from '../workflow/contract/model.js';

/** How many files one declared entry may match; the rest are not hashed. */
export const MAX_MATCHES_PER_ENTRY = 1000;

/** Wraps `handler` so that a successful attempt records the files its contract declares. */
export function recordDeclaredFiles(id: string, handler: AgentHandler, contract: AgentContract, cwd: string): AgentHandler {
  const root = resolve(cwd);
  const lists = [
    ['file_read', contract.sideEffects.filesRead],
    ['file_written', contract.sideEffects.filesWritten],
  ] as const;
  return async (ctx: AgentContext) => {
    const out: unknown = await handler(ctx);
    // only after success: a failed attempt's files are not evidence of anything
    try {
      const realRoot = await realpath(root).catch(() => root);
      for (const [kind, effects] of lists) {
        const seen = new Set<string>();
        for (const effect of effects) await recordEffect(id, ctx, kind, effect, root, realRoot, seen);
      }
    } catch (err) {
      ctx.log(`warning: provenance of agent \`${id}\`'s declared files could not be recorded: ${(err as Error).message}`);
    }
    return out;
  };
}

async function recordEffect(id: string, ctx: AgentContext, kind: 'file_read' | 'file_written', effect: FileEffect, root: string, realRoot: string, seen: Set<string>): Promise<void> {
  const declared = effect.path;
  const filled = fillPlaceholders(declared, ctx.input);
  if (!filled.ok) {
    ctx.log(`warning: declared file \`${declared}\` of agent \`${id}\` not recorded: input ${filled.missing.map((m) => `\`${m}\``).join(', ')} missing or not a string or number`);
    return;
  }
  const segments = safeSegments(filled.pattern);
  if (!segments) {
    ctx.log(`warning: declared file \`${declared}\` of agent \`${id}\` is outside the workspace; not recorded`);
    return;
  }
  const { files, capped } = await expand(root, segments, MAX_MATCHES_PER_ENTRY);
  if (capped) ctx.log(`warning: declared file \`${declared}\` of agent \`${id}\` matches more than ${MAX_MATCHES_PER_ENTRY} files; only the first ${MAX_MATCHES_PER_ENTRY} are recorded`);
  let matched = 0;
  for (const rel of files) {
    const abs = join(root, ...rel.split('/'));
    const real = await realpath(abs).catch(() => undefined);
    if (real === undefined) continue; // vanished since the walk
    if (!inside(realRoot, real)) {
      ctx.log(`warning: \`${rel}\` (declared \`${declared}\`) leads outside the workspace; not recorded`);
      continue;
    }
    matched++;
    if (seen.has(rel)) continue;
    try {
      const d = await digest(abs);
      seen.add(rel);
      ctx.record(kind, { path: rel, sha256: d.sha256, size: d.size, declared });
    } catch (err) {
      ctx.log(`warning: declared file \`${rel}\` could not be hashed: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  if (kind === 'file_written' && matched === 0) {
    ctx.log(`warning: declared output file \`${declared}\` was not produced`);
    ctx.record('declared_file_missing', { path: declared });
  }
}

/** `{name}` replaced by `input.name` (a string or a number), glob characters in the value escaped. */
export function fillPlaceholders(pattern: string, input: JsonObject): { ok: true; pattern: string } | { ok: false; missing: string[] } {
  const missing: string[] = [];
  const filled = pattern.replace(/\{([^{}]*)\}/g, (_, name: string) => {
    const v = Object.hasOwn(input, name) ? input[name] : undefined;
    if (typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) return String(v).replace(/[*?\\]/g, '\\$&');
    if (!missing.includes(name)) missing.push(name);
    return '';
  });
  return missing.length > 0 ? { ok: false, missing } : { ok: true, pattern: filled };
}

/** The pattern's segments, or undefined when it is absolute or `..` leads out of the workspace. */
export function safeSegments(pattern: string): string[] | undefined {
  if (pattern === '' || isAbsolute(pattern) || pattern.startsWith('/') || /^[A-Za-z]:/.test(pattern)) return undefined;
  const segments = posix.normalize(pattern).split('/').filter((s) => s !== '' && s !== '.');
  if (segments.length === 0 || segments.includes('..')) return undefined;
  return segments;
}

function hasWildcard(segment: string): boolean {
  return /(^|[^\\])[*?]/.test(segment);
}

function unescape(segment: string): string {
  return segment.replace(/\\(.)/g, '$1');
}

function segmentRegex(segment: string): RegExp {
  let re = '';
  for (let i = 0; i < segment.length; i++) {
    const ch = segment[i]!;
    if (ch === '\\' && i + 1 < segment.length) re += escapeRe(segment[++i]!);
    else if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else re += escapeRe(ch);
  }
  return new RegExp(`^${re}$`, 's');
}

function escapeRe(ch: string): string {
  return ch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * The workspace-relative paths (forward slashes, sorted) of regular files matching `segments`, at most
 * `limit`; `capped` when more matched.
 */
export async function expand(root: string, segments: readonly string[], limit: number): Promise<{ files: string[]; capped: boolean }> {
  const found = new Set<string>();
  let capped = false;
  const full = (): boolean => {
    if (found.size > limit) capped = true;
    return found.size > limit;
  };
  const addFile = async (rel: string[]): Promise<void> => {
    const s = await stat(join(root, ...rel)).catch(() => undefined);
    if (s?.isFile()) found.add(rel.join('/'));
  };
  const walk = async (rel: string[], i: number): Promise<void> => {
    if (full()) return;
    if (i === segments.length) return addFile(rel);
    const seg = segments[i]!;
    if (seg === '**') {
      await walk(rel, i + 1); // zero directories
      for (const e of await entries(root, rel)) {
        if (full()) return;
        if (e.isDirectory() && !e.name.startsWith('.')) await walk([...rel, e.name], i);
      }
      return;
    }
    if (!hasWildcard(seg)) return walk([...rel, unescape(seg)], i + 1);
    const re = segmentRegex(seg);
    const last = i === segments.length - 1;
    for (const e of await entries(root, rel)) {
      if (full()) return;
      if (e.name.startsWith('.') && !seg.startsWith('.')) continue;
      if (!re.test(e.name)) continue;
      // wildcards never descend through a symbolic link (it may lead out of the workspace)
      if (last) await addFile([...rel, e.name]);
      else if (e.isDirectory()) await walk([...rel, e.name], i + 1);
    }
  };
  await walk([], 0);
  const files = [...found].sort();
  return { files: files.slice(0, limit), capped: capped || files.length > limit };
}

async function entries(root: string, rel: string[]): Promise<Dirent[]> {
  const list = await readdir(join(root, ...rel), { withFileTypes: true }).catch(() => [] as Dirent[]);
  return list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

function inside(root: string, path: string): boolean {
  const r = relative(root, path);
  return r !== '' && !r.startsWith(`..${sep}`) && r !== '..' && !isAbsolute(r);
}

/** Streamed, so a large file is never held in memory. */
async function digest(path: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path)) {
    const b = chunk as Buffer;
    size += b.length;
    hash.update(b);
  }
  return { sha256: hash.digest('hex'), size };
}
