import { describe, expect, test } from 'vitest';
import { error, warning } from './diagnostic.js';
import { escapeData, escapeProperty, githubAnnotation, toGithub } from './github.js';
import { artifactLocation, toSarif } from './sarif.js';
import { SourceFile } from './source.js';

describe('GitHub workflow commands', () => {
  test('escaping follows the Actions toolkit: %, CR, LF in data; also : and , in properties', () => {
    expect(escapeData('50% done\r\nnext: a, b')).toBe('50%25 done%0D%0Anext: a, b');
    expect(escapeProperty('dir,1/a:b%.yaml\n')).toBe('dir%2C1/a%3Ab%25.yaml%0A');
  });

  test('an annotation cannot be broken out of by a file name or a message', () => {
    const src = new SourceFile('we,ird:name%.yaml', 'a: 1\nbb: 2\n');
    const d = error('unknown-key', [], 'line one\n::error::injected 100%', { range: [5, 7], hint: 'try `b`' });
    const line = githubAnnotation(d, { diagnostics: [d], source: () => src });
    expect(line).toBe('::error file=we%2Cird%3Aname%25.yaml,line=2,col=1,endLine=2,endColumn=2,title=unknown-key::line one%0A::error::injected 100%25%0Ahint: try `b`');
    expect(line.split('\n')).toHaveLength(1);
  });

  test('a range over several lines has no end column; a diagnostic without a range names only the file', () => {
    const src = new SourceFile('w.yaml', 'abc\ndef\n');
    const multi = warning('unknown-key', [], 'm', { range: [1, 6] });
    const none = error('file-unreadable', [], 'cannot read');
    expect(toGithub([{ diagnostics: [multi, none], source: () => src }])).toBe('::warning file=w.yaml,line=1,col=2,endLine=2,title=unknown-key::m\n::error file=w.yaml,title=file-unreadable::cannot read\n');
  });
});

describe('SARIF locations', () => {
  test('relative paths are URIs against %SRCROOT%, percent-encoded; absolute paths are file: URIs', () => {
    expect(artifactLocation('dir/a b#1.yaml')).toEqual({ uri: 'dir/a%20b%231.yaml', uriBaseId: '%SRCROOT%' });
    expect(artifactLocation('/tmp/x y.yaml')).toEqual({ uri: 'file:///tmp/x%20y.yaml' });
  });

  test('regions are 1-based with an exclusive end column; related places become relatedLocations', () => {
    const src = new SourceFile('w.yaml', 'a: 1\na: 2\n');
    const d = error('duplicate-key', [], 'dup', { range: [5, 6], related: [{ message: 'first', path: [], range: [0, 1] }] });
    const log = toSarif([{ diagnostics: [d], source: () => src }], { toolVersion: '9.9.9', cwd: '/repo' }) as { runs: { results: Record<string, unknown>[]; originalUriBaseIds: unknown }[] };
    expect(log.runs[0]!.originalUriBaseIds).toEqual({ '%SRCROOT%': { uri: 'file:///repo/' } });
    expect(log.runs[0]!.results[0]).toMatchObject({
      ruleId: 'duplicate-key',
      level: 'error',
      locations: [{ physicalLocation: { artifactLocation: { uri: 'w.yaml', uriBaseId: '%SRCROOT%' }, region: { startLine: 2, startColumn: 1, endLine: 2, endColumn: 2 } } }],
      relatedLocations: [{ id: 1, message: { text: 'first' }, physicalLocation: { region: { startLine: 1, startColumn: 1 } } }],
    });
  });
});
