/** The routes' schemas compiled (validate.ts): every route compiles, and the issues a caller gets for a body or a query. */
import { describe, expect, test } from 'vitest';
import { ROUTES, routeSpec } from './schemas.js';
import { compileRoute, issuesOf, routeCompiler } from './validate.js';

describe('route schemas', () => {
  // compiled at a route's first request (edge, nodeEdge): a schema that does not compile must fail here, not there
  test('every route compiles with one shared ajv pair, and its validators check what they say', () => {
    const compiler = routeCompiler();
    for (const spec of ROUTES) {
      const v = compileRoute(spec, compiler);
      if (spec.body) expect(typeof v.body, `${spec.method} ${spec.path}`).toBe('function');
      if (spec.query) expect(typeof v.query, `${spec.method} ${spec.path}`).toBe('function');
    }
    const v = compileRoute(routeSpec('startRun'), compiler);
    expect(v.body!({ workflow: 'x' })).toBe(true);
    expect(v.body!({ workflow: 'x', extra: 1 })).toBe(false);
  });
});

describe('issues of a refused body or query', () => {
  test('a body with both of two exclusive fields gets one issue for them, not ajv’s “must NOT be valid”', () => {
    const spec = routeSpec('taskInput');
    const v = compileRoute(spec).body!;
    for (const body of [{ question: 'q', input: 0 }, { input: 0, choices: ['a'] }, {}]) {
      expect(v(body), JSON.stringify(body)).toBe(false);
      const issues = issuesOf(v.errors, 'body', spec.body);
      expect(issues, JSON.stringify(body)).toHaveLength(1);
      expect(issues[0]!.path).toBe('');
      expect(issues[0]!.message).not.toMatch(/NOT/);
    }
  });

  test('a query number is a finite decimal, checked before ajv coerces it', () => {
    const check = compileRoute(routeSpec('claimTask')).query!;
    for (const wait of ['Infinity', '1e400', '0x10', ' 7', '']) expect(check({ wait }), wait).toMatchObject([{ path: '?wait' }]);
    const ok = { wait: '2.5' };
    expect(check(ok)).toEqual([]);
    expect(ok.wait).toBe(2.5);
  });
});
