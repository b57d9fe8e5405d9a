import { defineConfig } from 'vitest/config';

const src = (file: string): string => new URL(`./src/${file}`, import.meta.url).pathname;

export default defineConfig({
  // examples and tests import the package by name, as a user's project does: the core and each
  // subpath of package.json's `exports`, resolved to the sources (tsconfig.json's `paths` say the same)
  resolve: {
    alias: [
      { find: /^@baton-run\/baton$/, replacement: src('index.ts') },
      { find: /^@baton-run\/baton\/(postgres|llm|mcp|typescript|server|otel|a2a)$/, replacement: src('exports/$1.ts') },
    ],
  },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
    // hooks create and drop real PostgreSQL databases, and PostgreSQL 15's DROP DATABASE first waits for a
    // forced checkpoint of the whole server (every other file's writes too): under CI's load that passed
    // 10 s (the default) in 4 of 6 runs of test/engine and test/timing, failing files whose tests all passed.
    // A hook checks nothing; a test's own timeout is unchanged
    hookTimeout: 60_000,
    // CI (a shared 2-core machine) runs hundreds of child processes and real databases beside the suite:
    // a test that fails is run again, up to twice, and fails CI only when it fails every time. Locally a
    // failure is a failure. A test that needed a retry is reported as flaky by vitest and gets fixed.
    retry: process.env['CI'] ? 2 : 0,
  },
});
