import { ceilMicros, parseUsdText, type Micros } from '../../engine';

/**
 * Token prices of LLM models and the cost arithmetic. A price table is written as in
 * `OPENAI_PRICES`: `model=input/output,…`, USD per million tokens, e.g. `gpt-4o-mini=0.15/0.60`.
 * A USD price per million tokens is a micro-USD price per token, so a price is held as integer
 * micro-USD per million tokens (read from the decimal text, never through a float) and a cost is
 * `ceil((inputTokens × input + outputTokens × output) / 1e6)` micro-USD.
 */
export interface ModelPrice {
  /** Micro-USD per million input tokens (= USD per billion). */
  inputMicrosPerMillion: number;
  outputMicrosPerMillion: number;
}

/** Token counts of one call, as the provider reports them (or as estimated). */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** A price table as config reads it: decimal USD text per million tokens. */
export type PriceTable = Readonly<Record<string, { input: string; output: string }>>;

export function modelPrices(table: PriceTable): Map<string, ModelPrice> {
  return new Map(Object.entries(table).map(([model, p]) => [model, { inputMicrosPerMillion: parseUsdText(p.input), outputMicrosPerMillion: parseUsdText(p.output) }]));
}

/** The cost of `usage` at `price`, rounded up to a whole micro-USD. */
export function tokenCostMicros(price: ModelPrice, usage: TokenUsage): Micros {
  const millionths = usage.inputTokens * price.inputMicrosPerMillion + usage.outputTokens * price.outputMicrosPerMillion;
  return ceilMicros(millionths / 1_000_000);
}

/**
 * A conservative token count of prompt text before it is sent (no tokenizer here): ASCII at 3
 * characters a token (English averages about 4), and every other character at one token per
 * UTF-8 byte (a byte-level BPE token is never shorter than one byte).
 */
export function estimateTokens(texts: readonly string[]): number {
  let ascii = 0;
  let other = 0;
  for (const text of texts) {
    for (const char of text) {
      const code = char.codePointAt(0)!;
      if (code < 0x80) ascii += 1;
      else other += code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    }
  }
  return Math.ceil(ascii / 3) + other;
}
