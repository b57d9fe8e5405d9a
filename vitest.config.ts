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
    // CI (a shared 2-core machine) runs hundreds of child processes and real databases beside the suite:
    // a test that fails is run again, up to twice, and fails CI only when it fails every time. Locally a
    // failure is a failure. A test that needed a retry is reported as flaky by vitest and gets fixed.
    retry: process.env['CI'] ? 2 : 0,
  },
});
