import { defineConfig } from 'vitest/config';

export default defineConfig({
  // examples import the package by name, as a user's project does
  resolve: { alias: { baton: new URL('./src/index.ts', import.meta.url).pathname } },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 20_000,
  },
});
