import { expect, test } from 'vitest';
import { costUsd, DEFAULT_PRICES, priceOf, pricesFromConfig } from './pricing.js';

test('dated model ids match their longest prefix; unknown models have no price', () => {
  expect(priceOf('gpt-5.2-2025-12-11', DEFAULT_PRICES)).toEqual(DEFAULT_PRICES['gpt-5.2']);
  expect(priceOf('gpt-5-mini-2025-08-07', DEFAULT_PRICES)).toEqual(DEFAULT_PRICES['gpt-5-mini']);
  expect(priceOf('llama3.1', DEFAULT_PRICES)).toBeUndefined();
  expect(priceOf('claude-sonnet-4-5-20250929', DEFAULT_PRICES)).toEqual(DEFAULT_PRICES['claude-sonnet-4-5']);
  expect(priceOf('claude-haiku-4-5-20251001', DEFAULT_PRICES)).toEqual(DEFAULT_PRICES['claude-haiku-4-5']);
});

test('another model whose name starts like a priced one is not priced as it (a budget would be under-enforced)', () => {
  // gpt-5.2-pro lists at about twelve times gpt-5.2's price; gpt-4.1-nano at a twentieth of gpt-4.1's
  for (const m of ['gpt-5.2-pro', 'gpt-5.2-pro-2025-12-11', 'gpt-5-codex', 'gpt-4.1-nano', 'gpt-4o-audio-preview', 'claude-opus-4-1-extra', 'toString', 'constructor']) {
    expect([m, priceOf(m, DEFAULT_PRICES)]).toEqual([m, undefined]);
  }
  // its own entry (x-prices) prices it
  expect(priceOf('gpt-5.2-pro-2025-12-11', { ...DEFAULT_PRICES, 'gpt-5.2-pro': { inputPerMTok: 21, outputPerMTok: 168 } })).toEqual({ inputPerMTok: 21, outputPerMTok: 168 });
});

test('cost per call and x-prices overrides', () => {
  expect(costUsd({ inputPerMTok: 3, outputPerMTok: 15 }, 1_000_000, 100_000)).toBeCloseTo(4.5, 10);
  expect(pricesFromConfig({ 'my-model': { input_per_mtok: 0.5, output_per_mtok: 1 }, bad: { input_per_mtok: -1, output_per_mtok: 1 }, junk: 3 })).toEqual({ 'my-model': { inputPerMTok: 0.5, outputPerMTok: 1 } });
});
