import { describe, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { GATE_SCENARIOS, MORE_GATE_SCENARIOS } from './scenarios.js';

const memory = () => new MemoryStore();

describe('gates (memory store)', () => {
  for (const [name, scenario] of Object.entries({ ...GATE_SCENARIOS, ...MORE_GATE_SCENARIOS })) test(name, () => scenario(memory));
});
