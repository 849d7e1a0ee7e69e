import type { Artifact } from '../../contract';
import { defineNode, type NodeDefinition } from '../node-definition';
import { invalidInput } from '../node-inputs';
import { flatPricing } from '../pricing';
import { connector, ports } from '../spec-builders';
import { probeFile, withWorkDir, writeInput } from './media-files';
import { TOOL_BASE_MICROS } from './tool-pricing';
import type { LocalTools } from './tool-detection';

const MEDIA_PORTS = ['audio', 'video', 'image'] as const;

/** media-probe (ffprobe): duration, size and codecs of one audio, video or image file. */
export function probeNode(tools: LocalTools): NodeDefinition | undefined {
  const { ffprobe } = tools;
  if (!ffprobe) return undefined;
  return defineNode({
    spec: {
      id: 'media-probe',
      kind: 'model',
      title: 'Media info',
      category: 'video',
      description:
        'Describes one media file, given on exactly one of "audio", "video" or "image": "info" is { durationSeconds (0 for a ' +
        'still image), width, height (null without a picture), container, audioCodec, videoCodec, bitRate, sizeBytes }; ' +
        `"durationSeconds" repeats the duration. Costs ${TOOL_BASE_MICROS} micro-USD.`,
      inputs: ports({
        audio: connector('AUDIO', { isOptional: true }),
        video: connector('VIDEO', { isOptional: true }),
        image: connector('IMAGE', { isOptional: true }),
      }),
      outputs: ports({ info: connector('STRUCTURED'), durationSeconds: connector('FLOAT') }),
    },
    ...flatPricing(TOOL_BASE_MICROS),
    execute: (inputs, ctx) =>
      withWorkDir(async (dir) => {
        const given = MEDIA_PORTS.filter((port) => inputs[port] !== undefined && inputs[port] !== null);
        if (given.length !== 1) throw invalidInput('media-probe', 'audio', `, "video" or "image": give exactly one (got ${given.length})`);
        const port = given[0]!;
        const file = await writeInput('media-probe', port, inputs[port] as Artifact, ctx, dir, 'input');
        ctx.progress(`probing the ${port}`);
        const info = await probeFile('media-probe', port, ffprobe, file, ctx);
        return { info: { ...info }, durationSeconds: info.durationSeconds };
      }),
  });
}
