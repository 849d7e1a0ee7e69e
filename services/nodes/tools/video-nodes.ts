import fs from 'node:fs/promises';
import path from 'node:path';
import type { Artifact } from '../../contract';
import { storeImage } from '../image-io';
import { MAX_IMAGE_SIDE } from '../limits';
import { loadSharp } from '../load-sharp';
import { defineNode, type NodeDefinition } from '../node-definition';
import { invalidInput } from '../node-inputs';
import { IMAGE_BASE_MICROS } from '../pricing';
import { connector, ports } from '../spec-builders';
import { FFMPEG_BASE, probeFile, readOutput, runForNode, safeInput, withWorkDir, writeInput, type MediaInfo } from './media-files';
import { FRAME_MICROS, TOOL_BASE_MICROS } from './tool-pricing';
import type { LocalTools } from './tool-detection';

/** Most frames `video-frames` returns. */
export const MAX_FRAMES = 100;

const FRAME_FORMATS = ['png', 'jpeg', 'webp'] as const;
type FrameFormat = (typeof FRAME_FORMATS)[number];

function checkVideo(node: string, info: MediaInfo): void {
  if (info.width === null || info.height === null) throw invalidInput(node, 'video', 'has no video stream');
  if (info.width > MAX_IMAGE_SIDE || info.height > MAX_IMAGE_SIDE) {
    throw invalidInput(node, 'video', `is ${info.width}×${info.height}; frames are limited to ${MAX_IMAGE_SIDE} pixels per side`);
  }
}

/** Stores a PNG frame ffmpeg wrote as an image artifact in `format`, with `{ width, height }` metadata. */
async function storeFrame(node: string, file: string, format: FrameFormat, ctx: Parameters<NodeDefinition['execute']>[1]): Promise<Artifact> {
  const sharp = await loadSharp();
  return storeImage(node, 'video', ctx, sharp(await readOutput(node, file)), format);
}

/** video-thumbnail and video-frames (ffmpeg and ffprobe). */
export function videoNodes(tools: LocalTools): NodeDefinition[] {
  const { ffmpeg, ffprobe } = tools;
  if (!ffmpeg || !ffprobe) return [];

  const thumbnail = defineNode({
    spec: {
      id: 'video-thumbnail',
      kind: 'model',
      title: 'Video thumbnail',
      category: 'video',
      description:
        'Takes the frame of "video" (mp4, mov, webm, mkv, avi...) shown "at" seconds in (before the end) as an image in "format", ' +
        `with metadata { width, height }. Costs ${IMAGE_BASE_MICROS} micro-USD.`,
      inputs: ports({
        video: connector('VIDEO'),
        at: connector('FLOAT', { defaultValue: 0, minValue: 0, maxValue: 86_400 }),
        format: connector('TEXT', { defaultValue: 'png', optionValues: [...FRAME_FORMATS] }),
      }),
      outputs: ports({ image: connector('IMAGE') }),
    },
    estimate: () => IMAGE_BASE_MICROS,
    price: () => IMAGE_BASE_MICROS,
    execute: (inputs, ctx) =>
      withWorkDir(async (dir) => {
        const input = await writeInput('video-thumbnail', 'video', inputs.video as Artifact, ctx, dir, 'input');
        const info = await probeFile('video-thumbnail', 'video', ffprobe, input, ctx);
        checkVideo('video-thumbnail', info);
        const at = inputs.at as number;
        if (at >= info.durationSeconds && at > 0) throw invalidInput('video-thumbnail', 'at', `is ${at} s, past the video's end (${info.durationSeconds} s)`);
        ctx.progress(`taking the frame at ${at} s`);
        const out = path.join(dir, 'frame.png');
        await runForNode('video-thumbnail', 'video', ffmpeg, [...FFMPEG_BASE, '-ss', String(at), ...safeInput(input), '-an', '-frames:v', '1', '-f', 'image2', '-c:v', 'png', out], ctx);
        return { image: await storeFrame('video-thumbnail', out, inputs.format as FrameFormat, ctx) };
      }),
  });

  const frames = defineNode({
    spec: {
      id: 'video-frames',
      kind: 'model',
      title: 'Video frames',
      category: 'video',
      description:
        `Samples "video" at "fps" frames per second (0.01 to 30) from the start, up to "maxFrames" (1 to ${MAX_FRAMES}) images in ` +
        `"format", each with metadata { width, height }. Costs ${TOOL_BASE_MICROS} micro-USD plus ${FRAME_MICROS} per frame.`,
      inputs: ports({
        video: connector('VIDEO'),
        fps: connector('FLOAT', { defaultValue: 1, minValue: 0.01, maxValue: 30 }),
        maxFrames: connector('INT', { defaultValue: 10, minValue: 1, maxValue: MAX_FRAMES }),
        format: connector('TEXT', { defaultValue: 'png', optionValues: [...FRAME_FORMATS] }),
      }),
      outputs: ports({ frames: connector('IMAGE', { isArray: true }) }),
    },
    estimate: (inputs) => TOOL_BASE_MICROS + FRAME_MICROS * (inputs.maxFrames as number),
    price: (_inputs, outputs) => TOOL_BASE_MICROS + FRAME_MICROS * (outputs.frames as unknown[]).length,
    execute: (inputs, ctx) =>
      withWorkDir(async (dir) => {
        const input = await writeInput('video-frames', 'video', inputs.video as Artifact, ctx, dir, 'input');
        checkVideo('video-frames', await probeFile('video-frames', 'video', ffprobe, input, ctx));
        const maxFrames = inputs.maxFrames as number;
        ctx.progress(`sampling up to ${maxFrames} frames at ${inputs.fps as number} fps`);
        const args = [...FFMPEG_BASE, ...safeInput(input), '-an', '-vf', `fps=${inputs.fps as number}`, '-frames:v', String(maxFrames), '-f', 'image2', '-c:v', 'png', path.join(dir, 'frame-%04d.png')];
        await runForNode('video-frames', 'video', ffmpeg, args, ctx);
        const names = (await fs.readdir(dir)).filter((name) => /^frame-\d{4}\.png$/.test(name)).sort();
        if (names.length === 0) throw invalidInput('video-frames', 'video', 'has no frames to sample');
        const stored: Artifact[] = [];
        for (const [i, name] of names.entries()) {
          ctx.progress(`storing frame ${i + 1} of ${names.length}`);
          stored.push(await storeFrame('video-frames', path.join(dir, name), inputs.format as FrameFormat, ctx));
        }
        return { frames: stored };
      }),
  });

  return [thumbnail, frames];
}
