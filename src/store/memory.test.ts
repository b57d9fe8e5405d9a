import { MemoryStore } from './memory.js';
import { storeConformance } from './conformance.js';

storeConformance('memory', {
  create: () => Promise.resolve(new MemoryStore()),
  peer: (store) => Promise.resolve(store),
});
