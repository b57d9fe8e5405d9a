import { describe, expect, test } from 'vitest';
import { tokensOf } from './rerun-files.js';

describe('tokensOf: the token values a recorded path was expanded with', () => {
  test('read back against the template', () => {
    expect(tokensOf('out/<runId>/draft.md', 'out/run_1/draft.md')).toEqual({ runId: 'run_1' });
    expect(tokensOf('out/<runId>/<item.title>-<attempt>.md', 'out/run_1/a-b-2.md')).toEqual({ runId: 'run_1', 'item.title': 'a-b', attempt: '2' });
    expect(tokensOf('notes/<phase>.md', 'notes/draft.md')).toEqual({ phase: 'draft' });
    expect(tokensOf('plain.md', 'plain.md')).toEqual({});
  });

  test('a path that does not match, or a token read twice two ways: undefined', () => {
    expect(tokensOf('out/<runId>/draft.md', 'elsewhere/run_1/draft.md')).toBeUndefined();
    expect(tokensOf('<runId>/<runId>.md', 'a/b.md')).toBeUndefined();
    expect(tokensOf('<runId>/<runId>.md', 'a/a.md')).toEqual({ runId: 'a' });
    // the template's own characters are literal (a dot, brackets)
    expect(tokensOf('out/[x].<runId>', 'out/[x].r')).toEqual({ runId: 'r' });
    expect(tokensOf('out/[x].<runId>', 'out/x_r')).toBeUndefined();
  });
});
