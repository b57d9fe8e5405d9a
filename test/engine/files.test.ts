/** AIP-16 output files against the engine's commits, and scratch roots left by dead processes, on the memory store; durable-stores.test.ts runs the same on SQLite and PostgreSQL. */
import { describe, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { FILE_SCENARIOS } from './scenarios.js';

const memory = () => new MemoryStore();

describe('output files and scratch roots (memory store)', () => {
  for (const [name, scenario] of Object.entries(FILE_SCENARIOS)) test(name, () => scenario(memory), 120_000);
});
