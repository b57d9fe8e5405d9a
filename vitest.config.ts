import { defineConfig } from 'vitest/config';

export default defineConfig({
  // examples import the package by name, as a user's project does
  resolve: { alias: { baton: new URL('./src/index.ts', import.meta.url).pathname } },
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
