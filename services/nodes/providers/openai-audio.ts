import type { Artifact } from '../../contract';
import { ceilMicros } from '../../engine';
import { defineNode, type NodeDefinition } from '../node-definition';
import { invalidInput } from '../node-inputs';
import { connector, ports } from '../spec-builders';
import { offered, priceIn } from './media-rehost';
import { OPENAI, openaiFetch, type OpenAiMediaSettings } from './openai-client';
import { expectMediaType, jsonBody, malformedResponse, readCapped } from './provider-response';

/** OpenAI's limits: 4096 characters of speech input, 25 MB of audio to transcribe. */
const MAX_SPEECH_CHARACTERS = 4096;
const MAX_TRANSCRIBE_BYTES = 25 * 1024 * 1024;
const MAX_SPEECH_BYTES = 64 * 1024 * 1024;
const MAX_TRANSCRIBE_SECONDS = 7200;

const SPEECH_FORMATS: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

const priceNote = (prices: Record<string, number>) => Object.entries(prices).map(([m, p]) => `${m} ${p}`).join(', ');

/** `openai-speech`: POST /audio/speech; priced by the characters of the input (known up front). */
export function openaiSpeechNode(settings: OpenAiMediaSettings): NodeDefinition {
  const prices = settings.ttsPrices;
  const models = offered(prices);
  const cost = (inputs: Record<string, unknown>) => ceilMicros((String(inputs.text).length * priceIn(prices, inputs.model)) / 1_000_000);
  return defineNode({
    spec: {
      id: 'openai-speech',
      kind: 'model',
      title: 'Text to speech (OpenAI)',
      category: 'audio',
      description:
        `Reads "text" (at most ${MAX_SPEECH_CHARACTERS} characters) aloud with an OpenAI speech model and "voice"; "format" ` +
        `is the audio encoding. Costs per million characters: ${priceNote(prices)} micro-USD.`,
      inputs: ports({
        text: connector('TEXT', { maxLength: MAX_SPEECH_CHARACTERS }),
        model: connector('TEXT', { defaultValue: models.first, optionValues: models.names }),
        voice: connector('TEXT', { defaultValue: settings.ttsVoices[0] ?? 'alloy', optionValues: settings.ttsVoices }),
        format: connector('TEXT', { defaultValue: 'mp3', optionValues: Object.keys(SPEECH_FORMATS) }),
        speed: connector('FLOAT', { isOptional: true, minValue: 0.25, maxValue: 4 }),
      }),
      outputs: ports({ audio: connector('AUDIO') }),
    },
    estimate: cost,
    price: cost,
    async execute(inputs, ctx) {
      const text = String(inputs.text);
      if (text.length > MAX_SPEECH_CHARACTERS) throw invalidInput('openai-speech', 'text', `is ${text.length} characters; the limit is ${MAX_SPEECH_CHARACTERS}`);
      if (text.trim() === '') throw invalidInput('openai-speech', 'text', 'is empty');
      const format = String(inputs.format);
      const body: Record<string, unknown> = { model: inputs.model, input: text, voice: inputs.voice, response_format: format };
      if (inputs.speed !== undefined) body.speed = inputs.speed;
      ctx.progress(`speaking ${text.length} characters`);
      const response = await openaiFetch(settings, ctx.signal, '/audio/speech', { json: body });
      // Audio, or bytes of no declared kind: a JSON or HTML body (a gateway's page) is no speech.
      expectMediaType(response, OPENAI, (type) => type.startsWith('audio/') || type === 'application/octet-stream', 'audio');
      const bytes = await readCapped(response, MAX_SPEECH_BYTES, OPENAI);
      if (bytes.length === 0) throw malformedResponse(OPENAI, 'an empty audio body');
      return { audio: await ctx.artifacts.put(bytes, { mimeType: SPEECH_FORMATS[format]!, metadata: { format, characters: text.length } }) };
    },
  });
}

const EXTENSIONS: Record<string, string> = {
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/mp4': 'm4a',
  'audio/m4a': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/webm': 'webm',
  'audio/ogg': 'ogg',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
};

/** The exact length of a PCM WAV file from its header, or undefined for anything else. */
export function wavSeconds(bytes: Buffer): number | undefined {
  if (bytes.length < 12 || bytes.toString('ascii', 0, 4) !== 'RIFF' || bytes.toString('ascii', 8, 12) !== 'WAVE') return undefined;
  let byteRate: number | undefined;
  for (let at = 12; at + 8 <= bytes.length; ) {
    const id = bytes.toString('ascii', at, at + 4);
    const size = bytes.readUInt32LE(at + 4);
    if (id === 'fmt ' && at + 16 <= bytes.length) byteRate = bytes.readUInt32LE(at + 16);
    if (id === 'data') return byteRate ? Math.min(size, bytes.length - at - 8) / byteRate : undefined;
    at += 8 + size + (size % 2);
  }
  return undefined;
}

/** A length known before sending: a WAV header, or a duration another node recorded on the artifact. */
function knownSeconds(artifact: Artifact, bytes: Buffer): number | undefined {
  const wav = wavSeconds(bytes);
  if (wav !== undefined) return wav;
  const recorded = artifact.metadata?.durationSeconds;
  return typeof recorded === 'number' && Number.isFinite(recorded) && recorded >= 0 ? recorded : undefined;
}

interface TranscriptionAnswer {
  text?: unknown;
  duration?: unknown;
}

/**
 * `openai-transcribe`: POST /audio/transcriptions (multipart/form-data). The reserve is
 * "max_seconds" of audio; audio whose length is known up front to exceed it is refused before
 * anything is sent, and the charge is the length the provider reports (never above the reserve).
 */
export function openaiTranscribeNode(settings: OpenAiMediaSettings): NodeDefinition {
  const prices = settings.transcribePrices;
  const models = offered(prices);
  const costOf = (seconds: number, model: unknown) => ceilMicros((seconds * priceIn(prices, model)) / 60);
  return defineNode({
    spec: {
      id: 'openai-transcribe',
      kind: 'model',
      title: 'Transcribe audio (OpenAI)',
      category: 'audio',
      description:
        'Transcribes "audio" (mp3, mp4/m4a, wav, webm, ogg or flac, at most 25 MB) to "text" with an OpenAI model; ' +
        '"language" (ISO-639-1) and "prompt" guide it. "max_seconds" bounds the audio\'s length and what is reserved; ' +
        `"seconds" is the length billed. Costs per minute: ${priceNote(prices)} micro-USD, charged by the second.`,
      inputs: ports({
        audio: connector('AUDIO'),
        model: connector('TEXT', { defaultValue: models.first, optionValues: models.names }),
        language: connector('TEXT', { isOptional: true }),
        prompt: connector('TEXT', { isOptional: true }),
        max_seconds: connector('INT', { defaultValue: 600, minValue: 1, maxValue: MAX_TRANSCRIBE_SECONDS }),
      }),
      outputs: ports({ text: connector('TEXT'), seconds: connector('FLOAT') }),
    },
    estimate: (inputs) => costOf(Number(inputs.max_seconds), inputs.model),
    price: (inputs, outputs) => costOf(Number(outputs.seconds), inputs.model),
    async execute(inputs, ctx) {
      const artifact = inputs.audio as Artifact;
      const { bytes, mimeType } = await ctx.artifacts.read(artifact);
      if (bytes.length > MAX_TRANSCRIBE_BYTES) throw invalidInput('openai-transcribe', 'audio', `is ${bytes.length} bytes; the limit is ${MAX_TRANSCRIBE_BYTES}`);
      const maxSeconds = Number(inputs.max_seconds);
      const known = knownSeconds(artifact, bytes);
      if (known !== undefined && known > maxSeconds) {
        throw invalidInput('openai-transcribe', 'audio', `is ${Math.ceil(known)} seconds long, more than "max_seconds" (${maxSeconds})`);
      }
      const type = mimeType.split(';')[0]!.trim().toLowerCase();
      const extension = EXTENSIONS[type];
      if (!extension) throw invalidInput('openai-transcribe', 'audio', `is ${type}; accepted are ${[...new Set(Object.values(EXTENSIONS))].join(', ')}`);
      const model = String(inputs.model);
      const form = new FormData();
      form.set('file', new Blob([bytes], { type }), `audio.${extension}`);
      form.set('model', model);
      // Only whisper-1 reports the duration (verbose_json); the gpt-4o models answer json.
      form.set('response_format', model === 'whisper-1' ? 'verbose_json' : 'json');
      if (inputs.language !== undefined) form.set('language', String(inputs.language));
      if (inputs.prompt !== undefined) form.set('prompt', String(inputs.prompt));
      // Let the platform encode the multipart body, then send its bytes through providerFetch.
      const encoded = new Request('http://multipart.invalid/', { method: 'POST', body: form });
      const body = new Uint8Array(await encoded.arrayBuffer());
      const contentType = encoded.headers.get('content-type')!;
      ctx.progress(`transcribing ${bytes.length} bytes of audio with ${model}`);
      const answer = await jsonBody<TranscriptionAnswer>(await openaiFetch(settings, ctx.signal, '/audio/transcriptions', { body, contentType }), OPENAI);
      if (typeof answer.text !== 'string') throw malformedResponse(OPENAI, 'a transcription without "text"');
      const reported = typeof answer.duration === 'number' && Number.isFinite(answer.duration) && answer.duration >= 0 ? answer.duration : undefined;
      // Without a reported or known length the reserve is charged.
      const seconds = Math.min(reported ?? known ?? maxSeconds, maxSeconds);
      return { text: answer.text, seconds };
    },
  });
}
