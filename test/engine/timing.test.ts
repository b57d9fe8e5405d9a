/** The timing scenarios (store calls that take time) on the memory store; durable-stores.test.ts runs them on SQLite and PostgreSQL. */
import { describe, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { TIMING_SCENARIOS } from './scenarios/timing.js';

describe('store calls that take time (memory)', () => {
  for (const [name, scenario] of Object.entries(TIMING_SCENARIOS)) test(name, () => scenario(() => new MemoryStore()), 60_000);
});
