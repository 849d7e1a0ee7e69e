import path from 'node:path';
import type { Artifact } from '../../contract';
import { defineNode, type NodeDefinition } from '../node-definition';
import { invalidInput } from '../node-inputs';
import { flatPricing, IMAGE_BASE_MICROS } from '../pricing';
import { connector, ports } from '../spec-builders';
import { AUDIO_FORMAT_NAMES, durationOf, encodeAudio, FFMPEG_BASE, MAX_MEDIA_SECONDS, readOutput, runForNode, safeInput, storeAudio, withWorkDir, writeInput, type AudioFormat } from './media-files';
import { MEDIA_MAX_MICROS, mediaPriceMicros } from './tool-pricing';
import type { LocalTools } from './tool-detection';

/** Most parts `audio-concat` joins. */
export const MAX_CONCAT_PARTS = 50;

const PRICE_NOTE = 'Costs 50 micro-USD plus 20 per minute of output audio, at most 1,250.';
const OUTPUT_NOTE = 'The result carries metadata { format, durationSeconds }.';

const format = () => connector('TEXT', { defaultValue: 'mp3', optionValues: [...AUDIO_FORMAT_NAMES] });
const bitrate = () => connector('INT', { isOptional: true, minValue: 32, maxValue: 320 });
const priceByOutput = (_inputs: unknown, outputs: Record<string, unknown>) => mediaPriceMicros(durationOf(outputs.audio));

/** audio-convert, audio-trim, audio-concat and audio-waveform (ffmpeg and ffprobe). */
export function audioNodes(tools: LocalTools): NodeDefinition[] {
  const { ffmpeg, ffprobe } = tools;
  if (!ffmpeg || !ffprobe) return [];

  const convert = defineNode({
    spec: {
      id: 'audio-convert',
      kind: 'model',
      title: 'Convert audio',
      category: 'audio',
      description:
        `Re-encodes "audio" (wav, mp3, ogg, flac, aac, m4a, webm... up to 1 hour) as "format" (wav, mp3 or ogg), at "bitrate" ` +
        `kbit/s (32 to 320; ignored for wav) when given. ${OUTPUT_NOTE} ${PRICE_NOTE}`,
      inputs: ports({ audio: connector('AUDIO'), format: format(), bitrate: bitrate() }),
      outputs: ports({ audio: connector('AUDIO') }),
    },
    estimate: () => MEDIA_MAX_MICROS,
    price: priceByOutput,
    execute: (inputs, ctx) =>
      withWorkDir(async (dir) => {
        const input = await writeInput('audio-convert', 'audio', inputs.audio as Artifact, ctx, dir, 'input');
        const out = await encodeAudio('audio-convert', 'audio', ffmpeg, { args: safeInput(input) }, inputs.format as AudioFormat, dir, ctx, [], inputs.bitrate as number | undefined);
        return { audio: await storeAudio('audio-convert', ffprobe, out, inputs.format as AudioFormat, ctx) };
      }),
  });

  const trim = defineNode({
    spec: {
      id: 'audio-trim',
      kind: 'model',
      title: 'Trim audio',
      category: 'audio',
      description:
        'Keeps the part of "audio" that starts "start" seconds in and lasts "duration" seconds (to the end when omitted), ' +
        `encoded as "format". ${OUTPUT_NOTE} ${PRICE_NOTE}`,
      inputs: ports({
        audio: connector('AUDIO'),
        start: connector('FLOAT', { defaultValue: 0, minValue: 0, maxValue: MAX_MEDIA_SECONDS }),
        duration: connector('FLOAT', { isOptional: true, minValue: 0.001, maxValue: MAX_MEDIA_SECONDS }),
        format: format(),
      }),
      outputs: ports({ audio: connector('AUDIO') }),
    },
    estimate: (inputs) => (typeof inputs.duration === 'number' ? mediaPriceMicros(inputs.duration) : MEDIA_MAX_MICROS),
    price: priceByOutput,
    execute: (inputs, ctx) =>
      withWorkDir(async (dir) => {
        const input = await writeInput('audio-trim', 'audio', inputs.audio as Artifact, ctx, dir, 'input');
        const start = inputs.start as number;
        const duration = inputs.duration as number | undefined;
        ctx.progress(`cutting from ${start} s${duration === undefined ? ' to the end' : ` for ${duration} s`}`);
        // -ss after -i: exact cuts (decoded up to the start, which is cheap for audio).
        const cut = ['-ss', String(start), ...(duration === undefined ? [] : ['-t', String(duration)])];
        const out = await encodeAudio('audio-trim', 'audio', ffmpeg, { args: safeInput(input) }, inputs.format as AudioFormat, dir, ctx, cut);
        return { audio: await storeAudio('audio-trim', ffprobe, out, inputs.format as AudioFormat, ctx) };
      }),
  });

  const concat = defineNode({
    spec: {
      id: 'audio-concat',
      kind: 'model',
      title: 'Join audio',
      category: 'audio',
      description:
        `Plays the clips of "audio" (2 to ${MAX_CONCAT_PARTS}, any readable formats and sample rates) one after another, as one ` +
        `44.1 kHz stereo file in "format" (at most 1 hour). ${OUTPUT_NOTE} ${PRICE_NOTE}`,
      inputs: ports({ audio: connector('AUDIO', { isArray: true }), format: format() }),
      outputs: ports({ audio: connector('AUDIO') }),
    },
    estimate: () => MEDIA_MAX_MICROS,
    price: priceByOutput,
    execute: (inputs, ctx) =>
      withWorkDir(async (dir) => {
        const parts = inputs.audio as Artifact[];
        if (parts.length < 2 || parts.length > MAX_CONCAT_PARTS) throw invalidInput('audio-concat', 'audio', `has ${parts.length} clips; give 2 to ${MAX_CONCAT_PARTS}`);
        const args: string[] = [];
        for (const [i, part] of parts.entries()) args.push(...safeInput(await writeInput('audio-concat', `audio[${i}]`, part, ctx, dir, `input-${i}`)));
        // Each clip is brought to one sample format first: the concat filter needs equal streams.
        const normalize = parts.map((_, i) => `[${i}:a:0]aresample=44100,aformat=sample_fmts=fltp:channel_layouts=stereo[a${i}]`).join(';');
        const joined = `${parts.map((_, i) => `[a${i}]`).join('')}concat=n=${parts.length}:v=0:a=1[out]`;
        args.push('-filter_complex', `${normalize};${joined}`, '-map', '[out]');
        ctx.progress(`joining ${parts.length} clips`);
        const out = await encodeAudio('audio-concat', 'audio', ffmpeg, { args }, inputs.format as AudioFormat, dir, ctx);
        return { audio: await storeAudio('audio-concat', ffprobe, out, inputs.format as AudioFormat, ctx) };
      }),
  });

  const waveform = defineNode({
    spec: {
      id: 'audio-waveform',
      kind: 'model',
      title: 'Audio waveform image',
      category: 'audio',
      description:
        'Draws the waveform of "audio" (up to 1 hour) as a "width" × "height" png (64 to 4096 by 32 to 2048) in "color" ' +
        `(#rrggbb) on a transparent background, with metadata { width, height }. Costs ${IMAGE_BASE_MICROS} micro-USD.`,
      inputs: ports({
        audio: connector('AUDIO'),
        width: connector('INT', { defaultValue: 1200, minValue: 64, maxValue: 4096 }),
        height: connector('INT', { defaultValue: 300, minValue: 32, maxValue: 2048 }),
        color: connector('TEXT', { defaultValue: '#3366cc' }),
      }),
      outputs: ports({ image: connector('IMAGE') }),
    },
    ...flatPricing(IMAGE_BASE_MICROS),
    execute: (inputs, ctx) =>
      withWorkDir(async (dir) => {
        const color = inputs.color as string;
        // Checked strictly: the colour goes into a filter graph, where ':' or ',' would start new options.
        if (!/^#[0-9a-fA-F]{6}$/.test(color)) throw invalidInput('audio-waveform', 'color', `must be #rrggbb, got ${JSON.stringify(color)}`);
        const input = await writeInput('audio-waveform', 'audio', inputs.audio as Artifact, ctx, dir, 'input');
        const out = path.join(dir, 'waveform.png');
        const size = `${inputs.width as number}x${inputs.height as number}`;
        ctx.progress(`drawing a ${size} waveform`);
        const args = [...FFMPEG_BASE, ...safeInput(input), '-t', String(MAX_MEDIA_SECONDS), '-filter_complex', `[0:a:0]showwavespic=s=${size}:colors=${color}`, '-frames:v', '1', '-f', 'image2', '-c:v', 'png', out];
        await runForNode('audio-waveform', 'audio', ffmpeg, args, ctx);
        const bytes = await readOutput('audio-waveform', out);
        ctx.signal.throwIfAborted();
        return { image: await ctx.artifacts.put(bytes, { mimeType: 'image/png', metadata: { width: inputs.width, height: inputs.height } }) };
      }),
  });

  return [convert, trim, concat, waveform];
}
