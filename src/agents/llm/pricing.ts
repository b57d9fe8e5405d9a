/**
 * Token prices in USD per million tokens, per model. The figures are the providers' published list
 * prices when this table was written; override them (workflow `llm.x-prices`, or the `prices`
 * option) when yours differ. A model missing from the table costs 0 and its calls are not budgeted
 * (an event says so).
 */
export interface ModelPrice {
  inputPerMTok: number;
  outputPerMTok: number;
}

export type PriceTable = Readonly<Record<string, ModelPrice>>;

export const DEFAULT_PRICES: PriceTable = {
  'gpt-5.2': { inputPerMTok: 1.75, outputPerMTok: 14 },
  'gpt-5.1': { inputPerMTok: 1.25, outputPerMTok: 10 },
  'gpt-5': { inputPerMTok: 1.25, outputPerMTok: 10 },
  'gpt-5-mini': { inputPerMTok: 0.25, outputPerMTok: 2 },
  'gpt-5-nano': { inputPerMTok: 0.05, outputPerMTok: 0.4 },
  'gpt-4.1': { inputPerMTok: 2, outputPerMTok: 8 },
  'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6 },
  'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10 },
  'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6 },
  'claude-sonnet-4-20250514': { inputPerMTok: 3, outputPerMTok: 15 },
  'claude-sonnet-4-5': { inputPerMTok: 3, outputPerMTok: 15 },
  'claude-opus-4-1': { inputPerMTok: 15, outputPerMTok: 75 },
  'claude-haiku-4-5': { inputPerMTok: 1, outputPerMTok: 5 },
  'claude-3-5-haiku-latest': { inputPerMTok: 0.8, outputPerMTok: 4 },
  /** The scripted provider's default model: free. */
  scripted: { inputPerMTok: 0, outputPerMTok: 0 },
};

/** A snapshot's date after the model's name: OpenAI's `-2025-12-11`, Anthropic's `-20250929`. */
const DATED = /^-(\d{4}-\d{2}-\d{2}|\d{8})$/;

/**
 * The price of a model: an exact id, else the table key the id is a dated snapshot of
 * (`gpt-5.2-2025-12-11` -> `gpt-5.2`). Any other suffix is another model at another price
 * (`gpt-5.2-pro`, `gpt-4.1-nano`, `gpt-5-codex`): pricing it as its prefix would under-count it,
 * and so under-enforce every budget, without a word; unknown, it gets a `price_unknown` event.
 */
export function priceOf(model: string, table: PriceTable): ModelPrice | undefined {
  if (Object.prototype.hasOwnProperty.call(table, model)) return table[model];
  for (const k of Object.keys(table)) if (model.startsWith(k) && DATED.test(model.slice(k.length))) return table[k];
  return undefined;
}

export function costUsd(price: ModelPrice, inputTokens: number, outputTokens: number): number {
  return (inputTokens * price.inputPerMTok + outputTokens * price.outputPerMTok) / 1e6;
}

/** Reads `x-prices: {model: {input_per_mtok, output_per_mtok}}`; bad entries are skipped. */
export function pricesFromConfig(raw: unknown): Record<string, ModelPrice> {
  const out: Record<string, ModelPrice> = {};
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return out;
  for (const [model, v] of Object.entries(raw as Record<string, unknown>)) {
    if (v === null || typeof v !== 'object') continue;
    const i = (v as Record<string, unknown>)['input_per_mtok'];
    const o = (v as Record<string, unknown>)['output_per_mtok'];
    if (typeof i === 'number' && typeof o === 'number' && i >= 0 && o >= 0) out[model] = { inputPerMTok: i, outputPerMTok: o };
  }
  return out;
}
