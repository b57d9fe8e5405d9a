import { expect, test } from 'vitest';
import { costUsd, DEFAULT_PRICES, priceOf, pricesFromConfig } from './pricing.js';

test('dated model ids match their longest prefix; unknown models have no price', () => {
  expect(priceOf('gpt-5.2-2025-12-11', DEFAULT_PRICES)).toEqual(DEFAULT_PRICES['gpt-5.2']);
  expect(priceOf('gpt-5-mini-2025-08-07', DEFAULT_PRICES)).toEqual(DEFAULT_PRICES['gpt-5-mini']);
  expect(priceOf('llama3.1', DEFAULT_PRICES)).toBeUndefined();
});

test('cost per call and x-prices overrides', () => {
  expect(costUsd({ inputPerMTok: 3, outputPerMTok: 15 }, 1_000_000, 100_000)).toBeCloseTo(4.5, 10);
  expect(pricesFromConfig({ 'my-model': { input_per_mtok: 0.5, output_per_mtok: 1 }, bad: { input_per_mtok: -1, output_per_mtok: 1 }, junk: 3 })).toEqual({ 'my-model': { inputPerMTok: 0.5, outputPerMTok: 1 } });
});
