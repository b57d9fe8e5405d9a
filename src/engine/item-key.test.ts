import fc from 'fast-check';
import { expect, test } from 'vitest';
import { itemKey, itemParent, parseItemKey } from './state.js';

/** The definition, as a regular expression: `phase[index]`, a non-empty phase, an index without leading zeros. */
function reference(name: string): { parent: string; index: number } | undefined {
  const m = /^(.+)\[(0|[1-9]\d*)\]$/s.exec(name);
  return m ? { parent: m[1]!, index: Number(m[2]) } : undefined;
}

test('item keys: the examples', () => {
  expect(parseItemKey('draft[0]')).toEqual({ parent: 'draft', index: 0 });
  expect(parseItemKey('draft[12]')).toEqual({ parent: 'draft', index: 12 });
  expect(parseItemKey('a[b[2]')).toEqual({ parent: 'a[b', index: 2 });
  for (const no of ['draft', 'draft[]', 'draft[01]', '[3]', 'draft[-1]', 'draft[1]x', 'draft[1', 'draft1]', 'd[1.5]', '']) expect(parseItemKey(no), no).toBeUndefined();
  expect(itemParent('draft[7]')).toBe('draft');
  expect(itemParent('draft')).toBeUndefined();
  expect(parseItemKey(itemKey('p', 99_999))).toEqual({ parent: 'p', index: 99_999 });
});

test('item keys: the scan agrees with the definition on any text', () => {
  const piece = fc.constantFrom('a', 'b', '[', ']', '0', '1', '7', '-', '.', ' ', 'é');
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 10 }).map((a) => a.join('')), (name) => {
      expect(parseItemKey(name)).toEqual(reference(name));
      expect(itemParent(name)).toBe(reference(name)?.parent);
    }),
    { numRuns: 3000 },
  );
});
