import { mediaProviderNodes } from '../../services/nodes';
import { wavSeconds } from '../../services/nodes/providers/openai-audio';
import { ConfigError, loadConfig } from '../../services/platform/config';

const minimal = {
  DATABASE_URL: 'postgres://u:p@127.0.0.1:5432/db',
  REDIS_URL: 'redis://127.0.0.1:6379',
  BLOB_SIGNING_SECRET: 'x'.repeat(32),
};

describe('media provider settings', () => {
  it('reads price lists as integer micro-USD per model, with "none" for no model', () => {
    const config = loadConfig({ ...minimal, OPENAI_IMAGE_PRICES: 'gpt-image-1=40000, dall-e-3=80000', OPENAI_TTS_PRICES: 'none', FAL_APPS: 'fal-ai/flux/dev=25000' });
    expect(config.openaiImagePrices).toEqual({ 'gpt-image-1': 40000, 'dall-e-3': 80000 });
    expect(config.openaiTtsPrices).toEqual({});
    expect(config.falApps).toEqual({ 'fal-ai/flux/dev': 25000 });
    expect(config.replicateModels).toEqual({ 'black-forest-labs/flux-schnell': 3000 });
    expect(config.openaiApiKey).toBe('');
    expect(mediaProviderNodes(config)).toEqual([]);
    const keyed = mediaProviderNodes({ ...config, openaiApiKey: 'sk-x' }).map((n) => n.spec.id);
    expect(keyed).toEqual(['openai-image', 'openai-embed', 'openai-transcribe']);
  });

  it('refuses a price that is not whole micro-USD, naming the variable', () => {
    expect(() => loadConfig({ ...minimal, OPENAI_IMAGE_PRICES: 'gpt-image-1=0.04' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...minimal, REPLICATE_MODELS: 'owner/model' })).toThrow(/REPLICATE_MODELS must be a comma list of name=micro-USD/);
  });

  it('prices never exceed the reserve and scale with what is asked', () => {
    const config = loadConfig({ ...minimal, OPENAI_API_KEY: 'sk-x', FAL_KEY: 'fal-x', REPLICATE_API_TOKEN: 'r8-x' });
    const node = (id: string) => mediaProviderNodes(config).find((n) => n.spec.id === id)!;
    expect(node('openai-image').estimate({ prompt: 'p', n: 3 })).toBe(750_000);
    expect(node('fal-image').estimate({ prompt: 'p', num_images: 2 })).toBe(6000);
    expect(node('openai-transcribe').estimate({ audio: { kind: 'audio', ref: 'http://x/a' }, max_seconds: 90 })).toBe(9000);
    expect(node('openai-transcribe').price({ audio: { kind: 'audio', ref: 'http://x/a' }, max_seconds: 90 }, { text: '', seconds: 500 })).toBe(9000);
    expect(node('openai-embed').estimate({ text: 'héllo' })).toBe(1);
  });
});

describe('wavSeconds', () => {
  it('reads the length of a PCM WAV from its header and nothing from other bytes', () => {
    const header = Buffer.alloc(44);
    header.write('RIFF', 0);
    header.write('WAVE', 8);
    header.write('fmt ', 12);
    header.writeUInt32LE(16, 16);
    header.writeUInt32LE(16000, 28);
    header.write('data', 36);
    header.writeUInt32LE(48000, 40);
    expect(wavSeconds(Buffer.concat([header, Buffer.alloc(48000)]))).toBe(3);
    // A truncated file counts only the bytes present.
    expect(wavSeconds(Buffer.concat([header, Buffer.alloc(16000)]))).toBe(1);
    expect(wavSeconds(Buffer.from('ID3 not a wav'))).toBeUndefined();
  });
});
