import { describe, test } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { rerunFromPhase, rerunRefusals } from './scenarios.js';

const memory = () => new MemoryStore();

describe('rerun (memory store)', () => {
  test('reuses upstream outputs and reruns only the phase and its descendants; keeps trigger and initial state', () => rerunFromPhase(memory));
  test('an unknown phase or run is refused', () => rerunRefusals(memory));
});
