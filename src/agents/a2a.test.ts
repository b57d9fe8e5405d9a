import { describe, expect, test } from 'vitest';
import { parseWorkflow } from '../workflow/compile.js';
import { AgentError } from '../engine/agent.js';
import { cardLocation, tokenOf } from './a2a.js';
import { answerOf, dataOf, dataPart, isInterrupted, isTerminal, stateName, textOf, textPart } from './a2a-sdk.js';

const wf = (a2a: string): string => `openintent: "1.0"
info: {name: t}
agents:
  peer:
    x-a2a: ${a2a}
workflow:
  a: {assign: peer, outputs: {answer: string}}
`;

describe('x-a2a declarations', () => {
  test('url, skill, token_env and streaming become the agent\'s a2a declaration', () => {
    const r = parseWorkflow(wf('{url: "http://127.0.0.1:9/base", skill: s1, token_env: T, streaming: false}'));
    expect(r.ok).toBe(true);
    expect(r.model!.agents!['peer']!.a2a).toEqual({ url: 'http://127.0.0.1:9/base', skill: 's1', tokenEnv: 'T', streaming: false });
  });

  test('a missing url, a URL that is not http(s), an unknown key: positioned diagnostics', () => {
    const missing = parseWorkflow(wf('{skill: s1}'));
    expect(missing.diagnostics.map((d) => [d.code, d.path.join('.')])).toContainEqual(['missing-field', 'agents.peer.x-a2a']);
    const ftp = parseWorkflow(wf('{url: "ftp://example.com"}'));
    expect(ftp.ok).toBe(false);
    expect(ftp.diagnostics.map((d) => [d.code, d.path.join('.')])).toEqual([['invalid-value', 'agents.peer.x-a2a.url']]);
    expect(ftp.diagnostics[0]!.range).toBeDefined();
    const extra = parseWorkflow(wf('{url: "http://x", skil: s1}'));
    expect(extra.diagnostics.map((d) => [d.code, d.severity, d.path.join('.')])).toContainEqual(['unknown-key', 'warning', 'agents.peer.x-a2a.skil']);
  });
});

describe('A2A helpers', () => {
  test('the card URL: a base gets the well-known path, a .json URL is the card itself', () => {
    expect(cardLocation('http://h:1/agents/x')).toEqual({ base: 'http://h:1/agents/x', path: undefined });
    expect(cardLocation('http://h:1/cards/x.json')).toEqual({ base: 'http://h:1/cards/x.json', path: '' });
  });

  test('token_env: unset is a non-retryable A2AConfig failure', () => {
    expect(tokenOf({ url: 'http://x' }, {}, 'a')).toBeUndefined();
    expect(tokenOf({ url: 'http://x', tokenEnv: 'T' }, { T: 'secret' }, 'a')).toBe('secret');
    let err: unknown;
    try {
      tokenOf({ url: 'http://x', tokenEnv: 'T' }, {}, 'a');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AgentError);
    expect(err).toMatchObject({ code: 'A2AConfig', retryable: false });
  });

  test('parts: the last object data part is the output; an answer is any data part, else the text', () => {
    expect(dataOf([dataPart({ a: 1 }), textPart('x'), dataPart({ b: 2 })])).toEqual({ b: 2 });
    expect(dataOf([dataPart('str'), textPart('x')])).toBeUndefined();
    expect(answerOf([textPart('blue')])).toBe('blue');
    expect(answerOf([dataPart(3), textPart('x')])).toBe(3);
    expect(answerOf([])).toBeUndefined();
    expect(textOf([textPart('a'), dataPart({}), textPart('b')])).toBe('a\nb');
  });

  test('states: terminal, interrupted and their spec names', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((s) => [stateName(s), isTerminal(s), isInterrupted(s)])).toEqual([
      ['submitted', false, false],
      ['working', false, false],
      ['completed', true, false],
      ['failed', true, false],
      ['canceled', true, false],
      ['input-required', false, true],
      ['rejected', true, false],
      ['auth-required', false, true],
    ]);
  });
});
