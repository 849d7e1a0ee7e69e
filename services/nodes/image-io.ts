import type { Artifact } from '../contract';
import { MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS } from './limits';
import { loadSharp, type SharpPipeline } from './load-sharp';
import type { NodeContext } from './node-definition';
import { invalidInput } from './node-inputs';

/** Formats image nodes write. */
export const IMAGE_OUTPUT_FORMATS = ['png', 'jpeg', 'webp', 'avif'] as const;
export type ImageOutputFormat = (typeof IMAGE_OUTPUT_FORMATS)[number];

/**
 * Formats image nodes read. SVG and PDF are left out on purpose: they are documents that the
 * decoder renders (fonts, external references, unbounded work), not pixels.
 */
const READABLE_FORMATS = ['png', 'jpeg', 'webp', 'avif', 'gif', 'tiff'] as const;

const MIME_TYPES: Record<ImageOutputFormat, string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  avif: 'image/avif',
};

/** Encoder quality when none is given. */
export const DEFAULT_QUALITY = 80;

/** An input image that passed the checks, with its size as displayed (EXIF orientation applied). */
export interface InputImage {
  bytes: Buffer;
  width: number;
  height: number;
  /** One of png, jpeg, webp, avif, gif, tiff. */
  format: string;
  channels: number;
  hasAlpha: boolean;
}

function sizeText(width: number, height: number): string {
  return `${width}×${height}`;
}

/**
 * Reads the image artifact on a port and checks it without decoding its pixels: a readable
 * format, at most `MAX_IMAGE_BYTES` and (unless `checkPixels` is false) at most
 * `MAX_IMAGE_PIXELS`. Anything else is a `validation_failed` naming the port.
 */
export async function readImage(node: string, port: string, artifact: Artifact, ctx: NodeContext, checkPixels = true): Promise<InputImage> {
  const { bytes } = await ctx.artifacts.read(artifact);
  ctx.signal.throwIfAborted();
  if (bytes.length > MAX_IMAGE_BYTES) {
    throw invalidInput(node, port, `is ${bytes.length} bytes; the limit is ${MAX_IMAGE_BYTES} bytes`);
  }
  const sharp = await loadSharp();
  let meta: Awaited<ReturnType<SharpPipeline['metadata']>>;
  try {
    // Header only: no pixel limit yet, so an oversized image gets its own message below.
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    throw invalidInput(node, port, `is not an image (expected ${READABLE_FORMATS.join(', ')})`);
  }
  const format = meta.format === 'heif' && meta.compression === 'av1' ? 'avif' : meta.format;
  if (!(READABLE_FORMATS as readonly string[]).includes(format)) {
    throw invalidInput(node, port, `is a ${format} file; image nodes read ${READABLE_FORMATS.join(', ')}`);
  }
  const { width, height } = meta.autoOrient;
  if (checkPixels && width * height > MAX_IMAGE_PIXELS) {
    throw invalidInput(node, port, `is ${sizeText(width, height)} (${width * height} pixels); the limit is ${MAX_IMAGE_PIXELS} pixels`);
  }
  return { bytes, width, height, format, channels: meta.channels, hasAlpha: meta.hasAlpha };
}

/** A pipeline over a checked image: oriented as displayed, first frame of animations, pixel limit enforced by the decoder too. */
export async function openImage(image: InputImage): Promise<SharpPipeline> {
  const sharp = await loadSharp();
  return sharp(image.bytes, { autoOrient: true, limitInputPixels: MAX_IMAGE_PIXELS });
}

/** The format to write when a node keeps its input's: the same when writable, PNG otherwise (gif, tiff). */
export function keepFormat(image: InputImage): ImageOutputFormat {
  return (IMAGE_OUTPUT_FORMATS as readonly string[]).includes(image.format) ? (image.format as ImageOutputFormat) : 'png';
}

function encode(pipeline: SharpPipeline, format: ImageOutputFormat, quality: number): SharpPipeline {
  switch (format) {
    case 'png':
      return pipeline.png();
    case 'jpeg':
      // JPEG has no alpha: transparent areas become white, not the encoder's black.
      return pipeline.flatten({ background: '#ffffff' }).jpeg({ quality });
    case 'webp':
      return pipeline.webp({ quality });
    case 'avif':
      return pipeline.avif({ quality });
  }
}

/**
 * Encodes a pipeline and stores the result through `ctx.artifacts` as a `ref` image artifact
 * with its mime type and `metadata: { width, height }`. A decoding failure of the input (a
 * truncated or corrupt file) is blamed on `port`.
 */
export async function storeImage(
  node: string,
  port: string,
  ctx: NodeContext,
  pipeline: SharpPipeline,
  format: ImageOutputFormat,
  quality = DEFAULT_QUALITY,
): Promise<Artifact> {
  ctx.progress(`encoding ${format}`);
  let encoded: { data: Buffer; info: { width: number; height: number } };
  try {
    encoded = await encode(pipeline, format, quality).toBuffer({ resolveWithObject: true });
  } catch (err) {
    throw invalidInput(node, port, `could not be processed: ${(err as Error).message}`);
  }
  // Aborted while libvips worked: drop the result instead of storing an orphan blob.
  ctx.signal.throwIfAborted();
  const { width, height } = encoded.info;
  return ctx.artifacts.put(encoded.data, { mimeType: MIME_TYPES[format], metadata: { width, height } });
}

/** Output pixels of a stored image artifact (from its metadata), or NaN when they are not there. */
export function pixelsOf(artifact: unknown): number {
  const metadata = (artifact as { metadata?: { width?: unknown; height?: unknown } } | undefined)?.metadata;
  const width = metadata?.width;
  const height = metadata?.height;
  return typeof width === 'number' && typeof height === 'number' ? width * height : Number.NaN;
}
