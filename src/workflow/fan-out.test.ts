/** The compile side of `for_each`: the model it gives, the types downstream phases see, `$item` in conditions. */
import { describe, expect, test } from 'vitest';
import { parseWorkflow } from './compile.js';
import { itemAwareCondition, toleratedOf } from './fan-out.js';

const doc = (fanOut: string, extra = ''): string => `openintent: "1.0"
info: {name: fan}
types:
  Section: {name: string, words: integer}
workflow:
  outline:
    assign: a
    outputs:
      sections: Section[]
      count: integer
  draft:
    assign: d
    depends_on: [outline]
${fanOut}
    inputs: {name: $item.name, at: $index}
    outputs: {text: string, note: {type: string, required: false}}
  assemble:
    assign: e
    depends_on: [draft]
    inputs: {texts: draft.text, notes: draft.note}
${extra}`;

describe('for_each', () => {
  test('the model: reference, element type, defaults, gathered outputs typed array<T>', () => {
    const r = parseWorkflow(doc('    for_each: outline.sections'));
    expect(r.diagnostics).toEqual([]);
    const f = r.model!.byName.get('draft')!.forEach!;
    expect({ ref: f.ref, source: f.source, item: f.itemType.text, max: f.maxParallel, tolerated: f.toleratedFailures, skip: f.itemSkip }).toEqual({
      ref: 'outline.sections',
      source: { kind: 'phase', phase: 'outline', key: 'sections', path: [] },
      item: 'Section',
      max: undefined,
      tolerated: { count: 0 },
      skip: false,
    });
    expect(r.model!.byName.get('draft')!.inputs!.map((i) => `${i.name}: ${i.type.text}`)).toEqual(['name: string', 'at: integer']);
    // an optional per-item output may be missing in a slot: null there
    expect(r.model!.byName.get('assemble')!.inputs!.map((i) => `${i.name}: ${i.type.text}`)).toEqual(['texts: string[]', 'notes: array<string | null>']);
    expect(r.model!.byName.get('outline')!.forEach).toBeUndefined();
  });

  test.each([
    ['    for_each: outline.sections\n    tolerated_failures: 2', { count: 2 }],
    ['    for_each: outline.sections\n    tolerated_failures: "10%"', { percent: 10 }],
    ['    for_each: outline.sections\n    skip_when: "$item.words == 0"', { count: 0 }],
  ])('slots that may be empty make downstream types array<T | null>: %s', (fanOut, tolerated) => {
    const r = parseWorkflow(doc(`${fanOut}\n    max_parallel: 3`));
    expect(r.diagnostics).toEqual([]);
    const f = r.model!.byName.get('draft')!.forEach!;
    expect(f.toleratedFailures).toEqual(tolerated);
    expect(f.maxParallel).toBe(3);
    expect(r.model!.byName.get('assemble')!.inputs![0]!.type.text).toBe('array<string | null>');
  });

  test('`tolerated_failures: 0` and "0%" keep array<T>', () => {
    for (const t of ['0', '"0%"']) {
      const r = parseWorkflow(doc(`    for_each: outline.sections\n    tolerated_failures: ${t}`));
      expect(r.model!.byName.get('assemble')!.inputs![0]!.type.text).toBe('string[]');
    }
  });

  test('`$trigger.items` and `$initial_state.x` are fan-out sources; a typed trigger types `$item`', () => {
    const r = parseWorkflow(`openintent: "1.0"
info: {name: t}
types:
  PR: {number: integer, title: string}
x-trigger: {prs: "PR[]"}
workflow:
  review:
    assign: r
    for_each: $trigger.prs
    inputs: {n: $item.number}
  seed:
    assign: s
    initial_state: {xs: [1, 2]}
    for_each: $initial_state.xs
    inputs: {x: $item}
`);
    expect(r.diagnostics).toEqual([]);
    expect(r.model!.byName.get('review')!.inputs![0]!.type.text).toBe('integer');
    expect(r.model!.byName.get('seed')!.forEach!.source).toEqual({ kind: 'initial_state', key: 'xs', path: [] });
  });

  test('for_each reads only what inputs may: an unknown phase, a phase not in depends_on, $item itself', () => {
    const codes = (fe: string): string[] => parseWorkflow(doc(`    for_each: ${fe}`)).diagnostics.filter((d) => d.path.includes('for_each')).map((d) => d.code);
    expect(codes('outlin.sections')).toEqual(['input-unknown-phase']);
    expect(codes('assemble.texts')).toEqual(['input-not-dependency']);
    expect(codes('$item.x')).toEqual(['item-outside-for-each']);
    // the phase has a `for_each` (this one): the message says what is wrong, not that it has none
    const self = parseWorkflow(doc('    for_each: $index')).diagnostics.find((d) => d.path.includes('for_each'));
    expect(self?.message).toBe('`for_each` reads `$index`, an item of the fan-out it defines');
    expect(codes('outline.count')).toEqual(['for-each-not-array']);
    expect(codes('outline.sections.0')).toEqual(['for-each-not-array']);
  });

  test('conditions: $item and $index read as _item and _index, strings untouched, offsets kept', () => {
    expect(itemAwareCondition("$item.words > 0 && '$item' != \"$index\" && $index < 3")).toEqual({
      text: "_item.words > 0 && '$item' != \"$index\" && _index < 3",
      uses: [
        { name: '$item', offset: 0 },
        { name: '$index', offset: 42 },
      ],
    });
    expect(itemAwareCondition('$items > 0').uses).toEqual([]);
  });

  test('a fan-out over slots that may be empty: `$item.x` warns (item-may-be-null) on the input, unless skip_when tests null', () => {
    const chained = (draft: string, review: string): string => `openintent: "1.0"
info: {name: chain}
x-trigger: {names: "string[]"}
types:
  Draft: {title: string, words: integer}
workflow:
  draft:
    assign: d
    for_each: $trigger.names
${draft}
    inputs: {name: $item}
    outputs: {doc: Draft}
  review:
    assign: r
    depends_on: [draft]
    for_each: draft.doc
${review}
    inputs: {title: $item.title, whole: $item, at: $index}
`;
    const warned = (text: string): string[] => parseWorkflow(text).diagnostics.map((d) => `${d.code} ${d.severity} ${d.path.join('.')}`);
    // a tolerated failure leaves a null slot: reading into it fails that item
    expect(warned(chained('    tolerated_failures: 1', ''))).toEqual(['item-may-be-null warning workflow.review.inputs.title']);
    expect(warned(chained('    skip_when: "$item == \'x\'"', ''))).toEqual(['item-may-be-null warning workflow.review.inputs.title']);
    // guarded, or no slot can be empty
    expect(warned(chained('    tolerated_failures: 1', '    skip_when: "$item == null"'))).toEqual([]);
    expect(warned(chained('', ''))).toEqual([]);
    const d = parseWorkflow(chained('    tolerated_failures: 1', '')).diagnostics[0]!;
    expect(d.data).toMatchObject({ ref: '$item.title', item_type: 'Draft | null' });
  });

  test('toleratedOf', () => {
    expect(toleratedOf(3)).toEqual({ count: 3 });
    expect(toleratedOf('12.5%')).toEqual({ percent: 12.5 });
    expect(toleratedOf(undefined)).toEqual({ count: 0 });
  });
});
