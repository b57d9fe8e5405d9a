/** Fan-out (`for_each`) on the memory store; durable-stores.test.ts runs the same scenarios on SQLite and PostgreSQL. */
import { describe, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { FANOUT_SCENARIOS } from './scenarios.js';

const memory = () => new MemoryStore();

describe('for_each (memory store)', () => {
  for (const [name, scenario] of Object.entries(FANOUT_SCENARIOS)) test(name, () => scenario(memory), 60_000);
});
