import { describe, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { WORKER_SCENARIOS } from './scenarios.js';

const memory = () => new MemoryStore();

describe('several workers on one store (memory store)', () => {
  for (const [name, scenario] of Object.entries(WORKER_SCENARIOS)) test(name, () => scenario(memory));
});
