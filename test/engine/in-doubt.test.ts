/** Commits whose answer is lost (scenarios/in-doubt.ts) on the memory store; durable-stores.test.ts runs them on SQLite and PostgreSQL. */
import { describe, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { IN_DOUBT_SCENARIOS } from './scenarios/in-doubt.js';

describe('commits whose answer is lost (memory)', () => {
  for (const [name, scenario] of Object.entries(IN_DOUBT_SCENARIOS)) test(name, () => scenario(() => new MemoryStore()), 60_000);
});
