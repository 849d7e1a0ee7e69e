import type { NodeDefinition } from '../node-definition';
import { audioNodes } from './audio-nodes';
import { ocrNode } from './ocr-node';
import { probeNode } from './probe-node';
import { speechNode } from './speech-node';
import { detectTools, type DetectOptions, type LocalTools } from './tool-detection';
import { videoNodes } from './video-nodes';

/** Every local tool node, whether or not its program is installed here, and the Debian packages of its program. */
export const LOCAL_TOOL_PACKAGES: Readonly<Record<string, readonly string[]>> = {
  'speech-espeak': ['espeak-ng'],
  'ocr-tesseract': ['tesseract-ocr', 'tesseract-ocr-eng'],
  'audio-convert': ['ffmpeg'],
  'audio-trim': ['ffmpeg'],
  'audio-concat': ['ffmpeg'],
  'audio-waveform': ['ffmpeg'],
  'video-thumbnail': ['ffmpeg'],
  'video-frames': ['ffmpeg'],
  'media-probe': ['ffmpeg'],
};

/** Every local tool node, whether or not its program is installed here. */
export const LOCAL_TOOL_NODE_IDS: readonly string[] = Object.keys(LOCAL_TOOL_PACKAGES);

/** The tool nodes that `tools` can run, in palette order. */
export function toolNodes(tools: LocalTools): NodeDefinition[] {
  return [speechNode(tools), ocrNode(tools), ...audioNodes(tools), ...videoNodes(tools), probeNode(tools)].filter(
    (node): node is NodeDefinition => node !== undefined,
  );
}

/**
 * The local tool nodes (espeak-ng, tesseract, ffmpeg) whose programs are installed on this
 * machine, found by running each with its version flag; a missing program leaves its nodes out.
 */
export async function localToolNodes(options: DetectOptions = {}): Promise<NodeDefinition[]> {
  // The system's tools do not change while the process runs: detected once (each runtime of the
  // process, and every test service, would otherwise spawn every tool again).
  const detected = Object.keys(options).length === 0 ? systemLocalTools() : detectTools(options);
  return toolNodes(await detected);
}

/** The programs installed on this machine, detected once per process. */
export function systemLocalTools(): Promise<LocalTools> {
  return (systemTools ??= detectTools());
}

let systemTools: ReturnType<typeof detectTools> | undefined;

export { detectTools, type DetectOptions, type LocalTools } from './tool-detection';
export { runTool, ToolError, type RunToolOptions, type ToolFailure, type ToolResult } from './run-tool';
