import fs from 'node:fs/promises';
import path from 'node:path';
import { defineNode, type NodeDefinition } from '../node-definition';
import { invalidInput } from '../node-inputs';
import { connector, ports } from '../spec-builders';
import { AUDIO_FORMATS, encodeAudio, readOutput, runForNode, safeInput, storeAudio, withWorkDir, type AudioFormat } from './media-files';
import { speechPriceMicros } from './tool-pricing';
import type { LocalTools } from './tool-detection';

/** Longest text `speech-espeak` speaks, in characters. */
export const MAX_SPEECH_CHARACTERS = 5000;

/** A short list of espeak-ng voices (all part of Debian's espeak-ng-data). */
export const ESPEAK_VOICES = ['en-us', 'en-gb', 'de', 'fr-fr', 'es', 'it', 'nl', 'pt-br', 'pl', 'sv', 'ru', 'hi', 'cmn', 'ja'] as const;

/** Seconds of a PCM wav file, from its header's byte rate. */
function wavSeconds(bytes: Buffer): number {
  const byteRate = bytes.length >= 44 ? bytes.readUInt32LE(28) : 0;
  return byteRate > 0 ? Math.round(((bytes.length - 44) / byteRate) * 1000) / 1000 : 0;
}

/** Text to speech with espeak-ng; mp3 and ogg need ffmpeg too, and are offered only when it is installed. */
export function speechNode(tools: LocalTools): NodeDefinition | undefined {
  const { espeak, ffmpeg, ffprobe } = tools;
  if (!espeak) return undefined;
  const formats: AudioFormat[] = ffmpeg && ffprobe ? ['wav', 'mp3', 'ogg'] : ['wav'];
  return defineNode({
    spec: {
      id: 'speech-espeak',
      kind: 'model',
      title: 'Text to speech (espeak-ng)',
      category: 'audio',
      description:
        `Speaks "text" (at most ${MAX_SPEECH_CHARACTERS} characters) with the espeak-ng synthesizer running on the service's own ` +
        `machines: "voice" picks the language and accent, "speed" is in words per minute (80 to 450). "audio" is ${formats.join(', ')} ` +
        'with metadata { format, durationSeconds }. Costs 50 micro-USD plus 1 per 100 characters.',
      inputs: ports({
        text: connector('TEXT', { maxLength: MAX_SPEECH_CHARACTERS }),
        voice: connector('TEXT', { defaultValue: 'en-us', optionValues: [...ESPEAK_VOICES] }),
        speed: connector('INT', { defaultValue: 175, minValue: 80, maxValue: 450 }),
        format: connector('TEXT', { defaultValue: 'wav', optionValues: formats }),
      }),
      outputs: ports({ audio: connector('AUDIO') }),
    },
    estimate: (inputs) => speechPriceMicros(Math.min(String(inputs.text).length, MAX_SPEECH_CHARACTERS)),
    price: (inputs) => speechPriceMicros(Math.min(String(inputs.text).length, MAX_SPEECH_CHARACTERS)),
    async execute(inputs, ctx) {
      const text = inputs.text as string;
      const format = inputs.format as AudioFormat;
      if (text.length > MAX_SPEECH_CHARACTERS) throw invalidInput('speech-espeak', 'text', `is ${text.length} characters; the limit is ${MAX_SPEECH_CHARACTERS}`);
      if (text.trim() === '') throw invalidInput('speech-espeak', 'text', 'is empty');
      return withWorkDir(async (dir) => {
        // The text goes through a file, never as an argument, so it cannot be read as an option.
        const textFile = path.join(dir, 'text.txt');
        const wav = path.join(dir, 'speech.wav');
        await fs.writeFile(textFile, text, 'utf8');
        ctx.progress(`speaking ${text.length} characters (${inputs.voice as string})`);
        await runForNode('speech-espeak', 'text', espeak, ['-b', '1', '-v', inputs.voice as string, '-s', String(inputs.speed), '-w', wav, '-f', textFile], ctx);
        if (format === 'wav') {
          const bytes = await readOutput('speech-espeak', wav);
          ctx.signal.throwIfAborted();
          return { audio: await ctx.artifacts.put(bytes, { mimeType: AUDIO_FORMATS.wav.mimeType, metadata: { format, durationSeconds: wavSeconds(bytes) } }) };
        }
        const out = await encodeAudio('speech-espeak', 'text', ffmpeg!, { args: safeInput(wav) }, format, dir, ctx);
        return { audio: await storeAudio('speech-espeak', ffprobe!, out, format, ctx) };
      });
    },
  });
}
