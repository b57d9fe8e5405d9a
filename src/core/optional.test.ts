import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { isMissingPackage, loadOptional, missingPackage, requireOptional, requirePackages } from './optional.js';

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

  it('a module that needs several packages names every one that is missing, in one install command', async () => {
    // a package of Baton's that imports two missing ones: Node names the first it meets
    const two = ['baton-test-not-installed', 'half-installed', 'baton-test-not-installed-either'];
    const err = await failure(loadOptional(two, 'Tracing', () => importFrom('baton-test-not-installed'), importFrom));
    expect(err).toMatchObject({ code: 'missing-package', name: 'BatonError' });
    // half-installed is there (its own failure is not a missing package): not named
    expect((err as Error).message).toBe('Tracing needs the `baton-test-not-installed` and `baton-test-not-installed-either` packages: npm install baton-test-not-installed baton-test-not-installed-either');
    expect(missingPackage(['a', 'b', 'c'], 'X').message).toBe('X needs the `a`, `b` and `c` packages: npm install a b c');
  });

  it('requirePackages asks for every package up front; requireOptional loads a CommonJS one synchronously', async () => {
    const err = await failure(requirePackages(['half-installed', 'baton-test-not-installed'], '`baton serve`', importFrom));
    expect((err as Error).message).toBe('`baton serve` needs the `baton-test-not-installed` package: npm install baton-test-not-installed');
    await expect(requirePackages(['half-installed'], 'X', importFrom)).resolves.toBeUndefined();
    let thrown: unknown;
    try {
      requireOptional('baton-test-not-installed', 'PostgreSQL support');
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toMatchObject({ code: 'missing-package', message: 'PostgreSQL support needs the `baton-test-not-installed` package: npm install baton-test-not-installed' });
    expect(typeof requireOptional<{ Client: unknown }>('pg', 'PostgreSQL support').Client).toBe('function');
  });
});
