import { describe, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { CONTRACT_SCENARIOS } from './scenarios.js';

describe('agent contracts at run time (memory store)', () => {
  for (const [name, scenario] of Object.entries(CONTRACT_SCENARIOS)) test(name, () => scenario(() => new MemoryStore()));
});
