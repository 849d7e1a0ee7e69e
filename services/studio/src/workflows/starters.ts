import type { NodeSpec, Workflow } from '../../../contract';

/** A workflow a newcomer can start from: runnable as it is, on nodes this server offers. */
export interface Starter {
  id: string;
  name: string;
  /** One sentence: what it does and what it needs from the caller. */
  blurb: string;
  definition: Workflow;
}

/**
 * Starters, AI first: each runs real models on the service's own machines (no provider key), so
 * a newcomer's first run is an AI run. Shown only when the catalog offers every node they use.
 */
export const STARTERS: readonly Starter[] = [
  {
    id: 'read-photo-text',
    name: 'Read the text in a photo',
    blurb: 'Upload a photo or a scan; PaddleOCR reads its text, line by line. Runs on this server, no key needed.',
    definition: {
      version: 2,
      nodes: [
        { id: 'photo', uses: 'input', outputType: 'IMAGE', label: 'Photo with text' },
        { id: 'read', uses: 'ocr-paddle', inputs: { image: '${photo.value}' } },
        { id: 'text', uses: 'output', inputs: { value: '${read.text}' } },
        { id: 'lines', uses: 'output', inputs: { value: '${read.lines}' } },
      ],
    },
  },
  {
    id: 'upscale-photo',
    name: 'Upscale a photo',
    blurb: 'Upload a small image (up to 256×256); an ESRGAN model makes it twice as large with sharper detail. Runs on this server.',
    definition: {
      version: 2,
      nodes: [
        { id: 'photo', uses: 'input', outputType: 'IMAGE', label: 'Small image' },
        { id: 'upscale', uses: 'image-upscale', inputs: { image: '${photo.value}', scale: 2 } },
        { id: 'image', uses: 'output', inputs: { value: '${upscale.image}' } },
      ],
    },
  },
  {
    id: 'speak-and-find-speech',
    name: 'Speak a text, then find the speech in it',
    blurb: 'Type a sentence: espeak-ng speaks it, and the Silero voice-activity model finds where the speech is. Nothing to upload.',
    definition: {
      version: 2,
      nodes: [
        { id: 'text', uses: 'input', outputType: 'TEXT', label: 'Text to speak', inputs: { default: 'Hello! This is my first AI workflow. It runs on this server.' } },
        { id: 'speak', uses: 'speech-espeak', inputs: { text: '${text.value}' } },
        { id: 'detect', uses: 'audio-detect-speech', inputs: { audio: '${speak.audio}' } },
        { id: 'speech', uses: 'output', inputs: { value: '${speak.audio}' } },
        { id: 'segments', uses: 'output', inputs: { value: '${detect.segments}' } },
      ],
    },
  },
];

const BUILT_IN = new Set(['input', 'output', 'const']);

/** The starters whose every node this server offers (by the catalog's specs). */
export function offeredStarters(specs: readonly NodeSpec[]): Starter[] {
  const offered = new Set(specs.map((spec) => spec.id));
  return STARTERS.filter((starter) => starter.definition.nodes.every((node) => BUILT_IN.has(node.uses) || offered.has(node.uses)));
}
