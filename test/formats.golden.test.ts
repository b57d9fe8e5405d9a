/**
 * Golden output of `baton validate|check --format sarif|github`. The SARIF log is validated against
 * the SARIF 2.1.0 JSON schema (vendored: test/fixtures/sarif/NOTICE.md); the goldens hold what the
 * formats are for, codes and positions (rule, level, file, region), never message prose.
 * UPDATE_GOLDEN=1 rewrites them.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { describe, expect, test } from 'vitest';
import type { CliIo } from '../src/cli/io.js';
import { run } from '../src/cli/main.js';
import { DIAGNOSTIC_CODES } from '../src/core/codes.js';

const fixtures = join(import.meta.dirname, 'fixtures');
const goldens = join(fixtures, 'formats');
// ajv-draft-04 is CommonJS whose module.exports is the class
const Ajv = createRequire(import.meta.url)('ajv-draft-04') as typeof import('ajv-draft-04').default;
const schema = JSON.parse(readFileSync(join(fixtures, 'sarif', 'sarif-2.1.0-rtm.5.json'), 'utf8')) as object;
// unicodeRegExp off: the schema has a pattern that is not a valid unicode regexp (`[a-zA-Z]{2}]?`)
const validateSarif = new Ajv({ allErrors: true, strict: false, unicodeRegExp: false, validateFormats: false }).compile(schema);

async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = { stdout: (s) => void (out += s), stderr: (s) => void (err += s), isTTY: false, cwd: fixtures, env: {} };
  const code = await run(argv, io);
  return { code, out, err };
}

function golden(name: string, actual: string): void {
  const path = join(goldens, name);
  if (process.env['UPDATE_GOLDEN']) writeFileSync(path, actual);
  expect(actual).toBe(readFileSync(path, 'utf8'));
}

interface SarifResult {
  ruleId: string;
  ruleIndex: number;
  level: string;
  message: { text: string };
  locations: { physicalLocation: { artifactLocation: { uri: string; uriBaseId?: string }; region?: { startLine: number; startColumn: number; endLine: number; endColumn: number } } }[];
  relatedLocations?: unknown[];
}
interface SarifLog {
  version: string;
  runs: { tool: { driver: { name: string; version: string; rules: { id: string }[] } }; originalUriBaseIds: Record<string, { uri: string }>; columnKind: string; results: SarifResult[] }[];
}

/** What a SARIF result says about where and what: rule, level, file and region. */
function located(log: SarifLog): string {
  return log.runs[0]!.results
    .map((r) => {
      const l = r.locations[0]!.physicalLocation;
      const g = l.region;
      return `${r.ruleId} ${r.level} ${l.artifactLocation.uriBaseId ?? '-'} ${l.artifactLocation.uri}${g ? ` ${g.startLine}:${g.startColumn}-${g.endLine}:${g.endColumn}` : ''}${r.relatedLocations ? ` related=${r.relatedLocations.length}` : ''}`;
    })
    .join('\n')
    .concat('\n');
}

function checkSarif(out: string): SarifLog {
  const log = JSON.parse(out) as SarifLog;
  const ok = validateSarif(log);
  expect(validateSarif.errors ?? [], JSON.stringify(validateSarif.errors?.slice(0, 3))).toEqual([]);
  expect(ok).toBe(true);
  const r = log.runs[0]!;
  expect(log.version).toBe('2.1.0');
  expect(r.tool.driver.name).toBe('baton');
  expect(r.tool.driver.rules.map((x) => x.id)).toEqual([...DIAGNOSTIC_CODES]);
  for (const res of r.results) expect(r.tool.driver.rules[res.ruleIndex]!.id).toBe(res.ruleId);
  expect(r.originalUriBaseIds['%SRCROOT%']!.uri).toBe(pathToFileURL(fixtures + '/').href);
  expect(r.columnKind).toBe('utf16CodeUnits');
  return log;
}

/** The annotation lines with the message replaced: properties are what the golden holds. */
function annotations(out: string): string {
  return out.replace(/^(::(?:error|warning) [^:]*(?:%3A[^:]*)*)::.*$/gm, '$1::<message>');
}

const FILES = ['diagnostics/unknown-dependency.yaml', 'diagnostics/duplicate-key.yaml', 'diagnostics/input-wiring.yaml', 'diagnostics/unknown-key.yaml', 'formats/wide.yaml', 'corpus/hello_world.yaml'];

describe('baton validate --format sarif', () => {
  test('a schema-valid SARIF 2.1.0 log: every code a rule, every diagnostic a result with its region', async () => {
    const r = await cli(['validate', '--format', 'sarif', ...FILES]);
    expect(r.code).toBe(1);
    golden('validate.sarif.golden', located(checkSarif(r.out)));
  });

  test('a file that cannot be read is a result without a region (exit 2)', async () => {
    const r = await cli(['validate', '--format', 'sarif', 'nope.yaml']);
    expect(r.code).toBe(2);
    expect(located(checkSarif(r.out))).toBe('file-unreadable error %SRCROOT% nope.yaml\n');
  });

  test('a valid file: no results, still a valid log', async () => {
    const r = await cli(['validate', '--format=sarif', 'corpus/hello_world.yaml']);
    expect(r.code).toBe(0);
    expect(checkSarif(r.out).runs[0]!.results).toEqual([]);
  });

  test('a bundled example outside the working directory gets a file: URI', async () => {
    const r = await cli(['validate', '--format', 'sarif', 'research-pipeline']);
    expect(r.code).toBe(0);
    checkSarif(r.out);
  });
});

describe('baton check --format sarif|github', () => {
  test('problems inside contract files are results in those files', async () => {
    const r = await cli(['check', 'contracts/workflow.yaml', '--format', 'sarif']);
    expect(r.code).toBe(2); // one contract file cannot be read
    golden('check.sarif.golden', located(checkSarif(r.out)));
  });

  test('--contracts DIR', async () => {
    const sarif = await cli(['check', '--contracts', 'contracts/contracts', '--format', 'sarif']);
    expect(sarif.code).toBe(1);
    const gh = await cli(['check', '--contracts', 'contracts/contracts', '--format', 'github']);
    expect(gh.code).toBe(1);
    golden('check-contracts.sarif.golden', located(checkSarif(sarif.out)));
    golden('check-contracts.github.golden', annotations(gh.out));
  });
});

describe('baton validate --format github', () => {
  test('one workflow command per diagnostic, positions as properties', async () => {
    const r = await cli(['validate', '--format', 'github', ...FILES]);
    expect(r.code).toBe(1);
    for (const line of r.out.trimEnd().split('\n')) expect(line).toMatch(/^::(error|warning) file=[^,]+(,line=\d+,col=\d+,endLine=\d+(,endColumn=\d+)?)?,title=[a-z0-9-]+::\S/);
    golden('validate.github.golden', annotations(r.out));
  });

  test('--json and --format together are refused; --format json is --json', async () => {
    expect((await cli(['validate', '--json', '--format', 'sarif', 'corpus/hello_world.yaml'])).code).toBe(2);
    const a = await cli(['validate', '--format', 'json', 'corpus/hello_world.yaml']);
    const b = await cli(['validate', '--json', 'corpus/hello_world.yaml']);
    expect(a.out).toBe(b.out);
  });
});
