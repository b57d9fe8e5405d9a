/**
 * API keys and roles. Keys come from `BATON_API_KEYS` or a keys file; only their sha256 is kept in
 * memory (a file may give the hash instead of the key), and a presented key is compared with every
 * stored hash in constant time, so neither timing nor a memory dump gives a key away.
 *
 * Roles: `admin` (everything), `operator` (start, cancel, approve, respond), `reader` (read), and
 * `agent:<id>` (the remote-agent routes, registered in agents.ts: the check is `mayActAsAgent`).
 */
import { hash, timingSafeEqual } from 'node:crypto';
import { isPlainObject, jsonSyntaxError } from '../core/json.js';

export type Role = { kind: 'admin' } | { kind: 'operator' } | { kind: 'reader' } | { kind: 'agent'; agent: string };

/** Who is calling: a key's name and roles. `anonymous` is the caller of a server without keys (loopback only). */
export interface Principal {
  name: string;
  roles: readonly Role[];
  anonymous: boolean;
}

export interface ApiKey {
  name: string;
  roles: Role[];
  /** sha256 of the key, 32 bytes. */
  hash: Buffer;
}

/**
 * What a route needs. `agent`: the remote-agent routes (agents.ts), open at the edge to `agent:<id>`
 * keys and admins, then checked per request against the agent the task belongs to (mayActAsAgent).
 */
export type Action = 'read' | 'start' | 'cancel' | 'approve' | 'respond' | 'admin' | 'agent';

const AGENT_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** `admin`, `operator`, `reader` or `agent:<id>`; a message for anything else. */
export function parseRole(text: string): { ok: true; role: Role } | { ok: false; message: string } {
  const t = text.trim();
  if (t === 'admin' || t === 'operator' || t === 'reader') return { ok: true, role: { kind: t } };
  if (t.startsWith('agent:')) {
    const agent = t.slice('agent:'.length);
    if (AGENT_ID.test(agent)) return { ok: true, role: { kind: 'agent', agent } };
    return { ok: false, message: `role \`${t}\`: an agent id is letters, digits and _ . - (at most 128)` };
  }
  return { ok: false, message: `unknown role \`${t}\`: expected admin, operator, reader or agent:<id>` };
}

export function roleText(r: Role): string {
  return r.kind === 'agent' ? `agent:${r.agent}` : r.kind;
}

/** May `p` do `action`? admin: everything; operator: start, cancel, approve, respond and read; reader: read; agent:<id>: the agent routes. */
export function mayDo(p: Principal, action: Action): boolean {
  return p.roles.some((r) => {
    switch (r.kind) {
      case 'admin':
        return true;
      case 'operator':
        return action !== 'admin' && action !== 'agent';
      case 'reader':
        return action === 'read';
      case 'agent':
        return action === 'agent';
      default: {
        const never: never = r;
        return never;
      }
    }
  });
}

/**
 * May `p` claim and complete tasks of `agent`? Its own agent (`agent:<id>`), or any agent for admin.
 * `delegatedTo`: agents the phase's `permissions` delegate the task to (RFC permissions), which an
 * `agent:<id>` key of one of them may also take.
 */
export function mayActAsAgent(p: Principal, agent: string, delegatedTo: readonly string[] = []): boolean {
  return p.roles.some((r) => r.kind === 'admin' || (r.kind === 'agent' && (r.agent === agent || delegatedTo.includes(r.agent))));
}

export function hashKey(key: string): Buffer {
  return hash('sha256', key, 'buffer');
}

/** Each list of keys indexed by hash, built once: a request costs one sha256 and one lookup, however many keys. */
const indexes = new WeakMap<readonly ApiKey[], { n: number; byHash: Map<string, ApiKey> }>();

/**
 * The key presented matches one stored hash. The lookup is by the sha256 of the presented key, so its
 * timing depends on that hash only, which tells nothing about any stored key; the match is then
 * confirmed in constant time.
 */
export function findKey(keys: readonly ApiKey[], presented: string): ApiKey | undefined {
  let index = indexes.get(keys);
  // a list that grew since it was indexed (a caller's own array) is indexed again
  if (index?.n !== keys.length) {
    index = { n: keys.length, byHash: new Map() };
    for (const k of keys) if (!index.byHash.has(k.hash.toString('latin1'))) index.byHash.set(k.hash.toString('latin1'), k);
    indexes.set(keys, index);
  }
  const h = hashKey(presented);
  const found = index.byHash.get(h.toString('latin1'));
  return found && found.hash.length === h.length && timingSafeEqual(found.hash, h) ? found : undefined;
}

export class KeysError extends Error {
  override readonly name = 'KeysError';
}

const MIN_KEY_LENGTH = 16;

/**
 * `BATON_API_KEYS`: entries `NAME:ROLE[+ROLE...]:KEY`, separated by commas or newlines, e.g.
 * `alice:operator:k1...,ci:reader:k2...,fetcher:agent:fetcher:k3...` (a role may hold a colon: the key
 * is the last field, the name the first).
 */
export function parseKeysEnv(text: string): ApiKey[] {
  const out: ApiKey[] = [];
  for (const [i, raw] of text.split(/[,\n]/).entries()) {
    const entry = raw.trim();
    if (entry === '') continue;
    const first = entry.indexOf(':');
    const last = entry.lastIndexOf(':');
    if (first <= 0 || last === first || last === entry.length - 1) throw new KeysError(`BATON_API_KEYS entry ${i + 1}: expected NAME:ROLE:KEY (e.g. alice:operator:<a random key>)`);
    out.push(makeKey(entry.slice(0, first), entry.slice(first + 1, last).split('+'), { key: entry.slice(last + 1) }, `BATON_API_KEYS entry ${i + 1}`));
  }
  return checkUnique(out, 'BATON_API_KEYS');
}

/**
 * A keys file: JSON, `{"keys": [{"name", "roles": [...], "key" | "sha256"}]}`. `sha256` (64 hex
 * digits) keeps the key itself out of the file.
 */
export function parseKeysFile(text: string, file: string): ApiKey[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    const at = jsonSyntaxError(e, text);
    throw new KeysError(`${file}${at.line !== undefined ? `:${at.line}:${at.column}` : ''}: not valid JSON: ${at.reason}`);
  }
  const list = isPlainObject(doc) ? doc['keys'] : undefined;
  if (!Array.isArray(list)) throw new KeysError(`${file}: expected {"keys": [{"name": ..., "roles": [...], "key" or "sha256": ...}]}`);
  const out = list.map((k, i) => {
    const where = `${file}: keys[${i}]`;
    if (!isPlainObject(k)) throw new KeysError(`${where}: expected an object`);
    for (const f of Object.keys(k)) if (!['name', 'roles', 'key', 'sha256'].includes(f)) throw new KeysError(`${where}: unknown field \`${f}\` (name, roles, key, sha256)`);
    const { name, roles, key, sha256 } = k;
    if (typeof name !== 'string') throw new KeysError(`${where}: \`name\` must be a string`);
    if (!Array.isArray(roles) || roles.length === 0 || !roles.every((r) => typeof r === 'string')) throw new KeysError(`${where}: \`roles\` must be a non-empty list of strings`);
    if ((key === undefined) === (sha256 === undefined)) throw new KeysError(`${where}: give exactly one of \`key\` and \`sha256\``);
    if (key !== undefined && typeof key !== 'string') throw new KeysError(`${where}: \`key\` must be a string`);
    if (sha256 !== undefined && (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(sha256))) throw new KeysError(`${where}: \`sha256\` must be 64 hex digits (sha256 of the key)`);
    return makeKey(name, roles, key !== undefined ? { key: key } : { sha256: sha256 as string }, where);
  });
  return checkUnique(out, file);
}

function makeKey(name: string, roleTexts: string[], secret: { key: string } | { sha256: string }, where: string): ApiKey {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$/.test(name)) throw new KeysError(`${where}: the name \`${name}\` must be letters, digits and _ . @ - (at most 128)`);
  const roles: Role[] = [];
  for (const t of roleTexts) {
    const r = parseRole(t);
    if (!r.ok) throw new KeysError(`${where}: ${r.message}`);
    roles.push(r.role);
  }
  if ('key' in secret && secret.key.length < MIN_KEY_LENGTH) throw new KeysError(`${where}: the key of \`${name}\` is shorter than ${MIN_KEY_LENGTH} characters; use a random one (openssl rand -hex 24)`);
  return { name, roles, hash: 'key' in secret ? hashKey(secret.key) : Buffer.from(secret.sha256, 'hex') };
}

function checkUnique(keys: ApiKey[], where: string): ApiKey[] {
  const names = new Set<string>();
  for (const k of keys) {
    if (names.has(k.name)) throw new KeysError(`${where}: the name \`${k.name}\` is given twice`);
    names.add(k.name);
  }
  checkDistinctKeys(keys, where);
  return keys;
}

/**
 * One key under two names would act as whichever is found first: its requests would be attributed
 * (approvers, `started_by`) and allowed (roles) as one name while the file says another. Refused, by
 * hash (a key given as `sha256` too), naming the names and never the key.
 */
export function checkDistinctKeys(keys: readonly ApiKey[], where: string): void {
  const byHash = new Map<string, string>();
  for (const k of keys) {
    const h = k.hash.toString('hex');
    const other = byHash.get(h);
    if (other !== undefined) throw new KeysError(`${where}: \`${k.name}\` has the same key as \`${other}\`: each name needs a key of its own (requests would act as one of them)`);
    byHash.set(h, k.name);
  }
}

/** The principal of a server without keys: loopback callers only, all rights. */
export const ANONYMOUS: Principal = { name: 'anonymous', roles: [{ kind: 'admin' }], anonymous: true };
