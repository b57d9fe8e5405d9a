import { createHash } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { ANONYMOUS, findKey, hashKey, KeysError, mayActAsAgent, mayDo, parseKeysEnv, parseKeysFile, parseRole, type Action, type Principal } from './keys.js';

const K = 'a-long-enough-key-0123';

describe('roles', () => {
  test('parseRole: the four roles, an agent id checked, anything else named', () => {
    expect(parseRole('admin')).toEqual({ ok: true, role: { kind: 'admin' } });
    expect(parseRole(' reader ')).toEqual({ ok: true, role: { kind: 'reader' } });
    expect(parseRole('agent:fetch-1')).toEqual({ ok: true, role: { kind: 'agent', agent: 'fetch-1' } });
    expect(parseRole('agent:')).toMatchObject({ ok: false });
    expect(parseRole('agent:a b')).toMatchObject({ ok: false });
    expect(parseRole('root')).toMatchObject({ ok: false, message: expect.stringMatching(/unknown role `root`/) as unknown });
  });

  test('mayDo: admin everything, operator all but admin and agent, reader read, agent the agent routes only', () => {
    const p = (role: string): Principal => ({ name: 'n', roles: [(parseRole(role) as { ok: true; role: Principal['roles'][number] }).role], anonymous: false });
    const actions: Action[] = ['read', 'start', 'cancel', 'approve', 'respond', 'admin', 'agent'];
    const table = Object.fromEntries(['admin', 'operator', 'reader', 'agent:x'].map((r) => [r, actions.filter((a) => mayDo(p(r), a))]));
    expect(table).toEqual({
      admin: actions,
      operator: ['read', 'start', 'cancel', 'approve', 'respond'],
      reader: ['read'],
      'agent:x': ['agent'],
    });
    expect(mayDo({ name: 'n', roles: [], anonymous: false }, 'read')).toBe(false);
    expect(mayDo(ANONYMOUS, 'admin')).toBe(true);
  });

  test('mayActAsAgent: its own agent, one delegated to it, or admin; never operator or reader', () => {
    const agentX: Principal = { name: 'x', roles: [{ kind: 'agent', agent: 'x' }], anonymous: false };
    expect(mayActAsAgent(agentX, 'x')).toBe(true);
    expect(mayActAsAgent(agentX, 'y')).toBe(false);
    expect(mayActAsAgent(agentX, 'y', ['x'])).toBe(true);
    expect(mayActAsAgent({ name: 'a', roles: [{ kind: 'admin' }], anonymous: false }, 'y')).toBe(true);
    expect(mayActAsAgent({ name: 'o', roles: [{ kind: 'operator' }, { kind: 'reader' }], anonymous: false }, 'x')).toBe(false);
  });
});

describe('keys', () => {
  test('BATON_API_KEYS: NAME:ROLE[+ROLE]:KEY by commas or lines; only the hash is kept', () => {
    const keys = parseKeysEnv(`alice:operator+reader:${K},\n fetch:agent:fetcher:${K}x `);
    expect(keys.map((k) => [k.name, k.roles])).toEqual([
      ['alice', [{ kind: 'operator' }, { kind: 'reader' }]],
      ['fetch', [{ kind: 'agent', agent: 'fetcher' }]],
    ]);
    expect(keys[0]!.hash).toEqual(createHash('sha256').update(K).digest());
    expect(JSON.stringify(keys)).not.toContain(K);
  });

  test('BATON_API_KEYS refuses a malformed entry, a short key, an unknown role, a name twice', () => {
    for (const [text, re] of [
      ['alice', /entry 1: expected NAME:ROLE:KEY/],
      [`alice:operator:short`, /shorter than 16/],
      [`alice:god:${K}`, /unknown role `god`/],
      [`a:reader:${K},a:admin:${K}`, /`a` is given twice/],
      [`alice:operator:${K},mallory:reader:${K}`, /`mallory` has the same key as `alice`/],
      [`a b:reader:${K}`, /the name `a b`/],
    ] as const) expect(() => parseKeysEnv(text)).toThrow(re);
    expect(() => parseKeysEnv('x')).toThrow(KeysError);
  });

  test('a keys file gives a key or its sha256; fields are checked', () => {
    const hex = createHash('sha256').update(K).digest('hex');
    const keys = parseKeysFile(JSON.stringify({ keys: [{ name: 'ci', roles: ['reader'], sha256: hex }, { name: 'ops', roles: ['admin'], key: `${K}2` }] }), 'keys.json');
    expect(findKey(keys, K)?.name).toBe('ci');
    expect(findKey(keys, `${K}2`)?.name).toBe('ops');
    expect(findKey(keys, 'wrong-key-0000000000')).toBeUndefined();
    for (const [doc, re] of [
      ['{', /not valid JSON/],
      [{ keys: {} }, /expected \{"keys"/],
      [{ keys: [{ name: 'a', roles: ['reader'] }] }, /exactly one of `key` and `sha256`/],
      [{ keys: [{ name: 'a', roles: ['reader'], key: K, sha256: hex }] }, /exactly one/],
      [{ keys: [{ name: 'a', roles: [], key: K }] }, /non-empty list/],
      [{ keys: [{ name: 'a', roles: ['reader'], sha256: 'abc' }] }, /64 hex digits/],
      [{ keys: [{ name: 'a', roles: ['reader'], key: K, extra: 1 }] }, /unknown field `extra`/],
      // one key under two names, as a key or as its hash: which name would a request act as?
      [{ keys: [{ name: 'alice', roles: ['operator'], key: K }, { name: 'mallory', roles: ['reader'], key: K }] }, /`mallory` has the same key as `alice`/],
      [{ keys: [{ name: 'alice', roles: ['operator'], key: K }, { name: 'mallory', roles: ['reader'], sha256: hex }] }, /`mallory` has the same key as `alice`/],
    ] as const) expect(() => parseKeysFile(typeof doc === 'string' ? doc : JSON.stringify(doc), 'k.json')).toThrow(re);
  });

  test('hashKey is sha256; findKey compares with every stored hash', () => {
    expect(hashKey('x').toString('hex')).toBe(createHash('sha256').update('x').digest('hex'));
    const keys = parseKeysEnv(`a:reader:${K}a,b:reader:${K}b,c:reader:${K}c`);
    expect(findKey(keys, `${K}c`)?.name).toBe('c');
    expect(findKey(keys, '')).toBeUndefined();
  });
});
