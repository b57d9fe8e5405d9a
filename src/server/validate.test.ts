/** Route schemas are compiled at a route's first request (edge, nodeEdge): a schema that does not compile must fail here, not there. */
import { describe, expect, test } from 'vitest';
import { compileRoute, routeCompiler } from './validate.js';
import { ROUTES } from './schemas.js';

describe('route schemas', () => {
  test('every route compiles with one shared ajv pair, and its validators check what they say', () => {
    const compiler = routeCompiler();
    for (const spec of Object.values(ROUTES)) {
      const v = compileRoute(spec, compiler);
      if (spec.body) expect(typeof v.body, `${spec.method} ${spec.path}`).toBe('function');
      if (spec.query) expect(typeof v.query, `${spec.method} ${spec.path}`).toBe('function');
    }
    const runs = Object.values(ROUTES).find((s) => s.method === 'post' && s.path === '/runs')!;
    const v = compileRoute(runs, compiler);
    expect(v.body!({ workflow: 'x' })).toBe(true);
    expect(v.body!({ workflow: 'x', extra: 1 })).toBe(false);
  });
});
