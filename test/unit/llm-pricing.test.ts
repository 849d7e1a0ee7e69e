import { estimateTokens, modelPrices, tokenCostMicros } from '../../services/nodes/providers/llm-pricing';
import { ConfigError, loadConfig } from '../../services/platform/config';

const base = { DATABASE_URL: 'postgres://localhost/x', REDIS_URL: 'redis://localhost', BLOB_SIGNING_SECRET: 'x'.repeat(32) };

describe('LLM token pricing', () => {
  it('reads USD-per-million prices as exact integers and rounds a cost up to the micro-USD', () => {
    const prices = modelPrices({ 'gpt-4o-mini': { input: '0.15', output: '0.60' } });
    const price = prices.get('gpt-4o-mini')!;
    expect(price).toEqual({ inputMicrosPerMillion: 150_000, outputMicrosPerMillion: 600_000 });
    // 1000 × 0.15 + 200 × 0.60 = 270 micro-USD exactly; 1 input token is 0.15 → 1.
    expect(tokenCostMicros(price, { inputTokens: 1000, outputTokens: 200 })).toBe(270);
    expect(tokenCostMicros(price, { inputTokens: 1, outputTokens: 0 })).toBe(1);
    expect(tokenCostMicros(price, { inputTokens: 0, outputTokens: 0 })).toBe(0);
  });

  it('counts ASCII at 3 characters a token and other characters at one token per UTF-8 byte', () => {
    expect(estimateTokens(['abcd'])).toBe(2);
    expect(estimateTokens(['abc', 'def'])).toBe(2);
    expect(estimateTokens(['日本'])).toBe(6);
    expect(estimateTokens(['é😀'])).toBe(6);
  });

  it('reads the price tables from the environment and refuses a model without a price', () => {
    const config = loadConfig({ ...base, OPENAI_MODELS: 'llama3.2:3b, openai/gpt-4o-mini', OPENAI_PRICES: 'llama3.2:3b=0/0,openai/gpt-4o-mini=0.15/0.6' });
    expect(config.openaiModels).toEqual(['llama3.2:3b', 'openai/gpt-4o-mini']);
    expect(config.openaiPrices['openai/gpt-4o-mini']).toEqual({ input: '0.15', output: '0.6' });
    expect(config.anthropicApiKey).toBe('');
    expect(() => loadConfig({ ...base, ANTHROPIC_MODELS: 'claude-x' })).toThrow('ANTHROPIC_MODELS lists claude-x, which ANTHROPIC_PRICES does not price');
    expect(() => loadConfig({ ...base, OPENAI_PRICES: 'gpt-4o=$2.50' })).toThrow(ConfigError);
  });
});
