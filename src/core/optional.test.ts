import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { isMissingPackage, loadOptional } from './optional.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-optional-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// a package that is installed but whose own dependency is not: its failure is not "install the package"
mkdirSync(join(dir, 'node_modules', 'half-installed'), { recursive: true });
writeFileSync(join(dir, 'node_modules', 'half-installed', 'package.json'), JSON.stringify({ name: 'half-installed', type: 'module', main: 'index.js' }));
writeFileSync(join(dir, 'node_modules', 'half-installed', 'index.js'), "export * from 'baton-test-not-installed-dep';\n");
const entry = join(dir, 'entry.mjs');
writeFileSync(entry, "export const load = (s) => import(s);\n");
const importFrom = async (spec: string): Promise<unknown> => ((await import(pathToFileURL(entry).href)) as { load: (s: string) => Promise<unknown> }).load(spec);

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a failure');
}

describe('optional packages', () => {
  it('a missing package is one line naming the install command (code missing-package)', async () => {
    const err = await failure(loadOptional('baton-test-not-installed', 'PostgreSQL support', () => importFrom('baton-test-not-installed')));
    expect(err).toMatchObject({ code: 'missing-package', name: 'BatonError' });
    expect((err as Error).message).toBe('PostgreSQL support needs the `baton-test-not-installed` package: npm install baton-test-not-installed');
  });

  it('a subpath of a missing package counts as missing, for import() and require()', async () => {
    expect(isMissingPackage(await failure(importFrom('baton-test-not-installed/client/index.js')), 'baton-test-not-installed')).toBe(true);
    let err: unknown;
    try {
      createRequire(entry)('baton-test-not-installed');
    } catch (e) {
      err = e;
    }
    expect(isMissingPackage(err, 'baton-test-not-installed')).toBe(true);
  });

  it("an installed package whose own dependency is missing is passed through, not blamed on the package", async () => {
    const err = await failure(loadOptional('half-installed', 'X', () => importFrom('half-installed')));
    expect(err).not.toMatchObject({ code: 'missing-package' });
    expect(isMissingPackage(err, 'half-installed')).toBe(false);
    expect(isMissingPackage(new Error("Cannot find package 'pg'"), 'pg')).toBe(false); // no code: not a resolution error
  });
});
