import type { Artifact } from '../contract';
import { DEFAULT_QUALITY, IMAGE_OUTPUT_FORMATS, keepFormat, openImage, pixelsOf, readImage, storeImage, type ImageOutputFormat } from './image-io';
import { MAX_IMAGE_SIDE } from './limits';
import { defineNode, type NodeDefinition } from './node-definition';
import { invalidInput } from './node-inputs';
import { flatPricing, IMAGE_BASE_MICROS, IMAGE_MAX_MICROS, imagePriceMicros } from './pricing';
import { connector, ports } from './spec-builders';

const PRICE_NOTE = 'Costs 100 micro-USD plus 100 per output megapixel, at most 500.';

/** Prices by the stored result's real size; the estimate is the caller's worst case for these inputs. */
const priceByOutput = (_inputs: unknown, outputs: Record<string, unknown>) => imagePriceMicros(pixelsOf(outputs.image));

const side = (options: { isOptional?: boolean } = {}) => connector('INT', { ...options, minValue: 1, maxValue: MAX_IMAGE_SIDE });

function checkSides(node: string, port: string, width: number, height: number): void {
  if (width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE) {
    throw invalidInput(node, port, `would make a ${width}×${height} image; the limit is ${MAX_IMAGE_SIDE} pixels per side`);
  }
}

const FITS = ['cover', 'contain', 'fill', 'inside', 'outside'] as const;
type Fit = (typeof FITS)[number];

/** The size sharp produces for a resize, computed up front so oversized results are refused before any work. */
function resizedSize(src: { width: number; height: number }, width: number | undefined, height: number | undefined, fit: Fit): [number, number] {
  const round = (n: number) => Math.max(1, Math.round(n));
  if (width === undefined) return [round((src.width * height!) / src.height), height!];
  if (height === undefined) return [width, round((src.height * width) / src.width)];
  if (fit === 'inside' || fit === 'outside') {
    const pick = fit === 'inside' ? Math.min : Math.max;
    const scale = pick(width / src.width, height / src.height);
    return [round(src.width * scale), round(src.height * scale)];
  }
  return [width, height];
}

const imageResize = defineNode({
  spec: {
    id: 'image-resize',
    kind: 'model',
    title: 'Resize image',
    category: 'image',
    description:
      'Scales an image to "width" × "height" (1 to 8192 each; give one to keep the aspect ratio). "fit": cover (fill the ' +
      'box, cropping the overflow), contain (fit inside, padding the rest), fill (stretch), inside or outside (keep the ' +
      `aspect ratio, at most or at least the box). Keeps the input format (gif and tiff become png). ${PRICE_NOTE}`,
    inputs: ports({
      image: connector('IMAGE'),
      width: side({ isOptional: true }),
      height: side({ isOptional: true }),
      fit: connector('TEXT', { defaultValue: 'cover', optionValues: [...FITS] }),
    }),
    outputs: ports({ image: connector('IMAGE') }),
  },
  estimate(inputs) {
    const { width, height, fit } = inputs;
    // Only a full box bounds the output; "outside" and one-sided sizes may exceed it.
    if (typeof width === 'number' && typeof height === 'number' && fit !== 'outside') return imagePriceMicros(width * height);
    return IMAGE_MAX_MICROS;
  },
  price: priceByOutput,
  // Pure image processing of the input bytes: the same bytes and options give the same output.
  cache: { kind: 'deterministic' },
  async execute(inputs, ctx) {
    const width = inputs.width as number | undefined;
    const height = inputs.height as number | undefined;
    const fit = inputs.fit as Fit;
    if (width === undefined && height === undefined) throw invalidInput('image-resize', 'width', 'or "height" is required');
    const image = await readImage('image-resize', 'image', inputs.image as Artifact, ctx);
    const [outWidth, outHeight] = resizedSize(image, width, height, fit);
    checkSides('image-resize', width === undefined ? 'height' : 'width', outWidth, outHeight);
    ctx.progress(`resizing ${image.width}×${image.height} to ${outWidth}×${outHeight}`);
    const pipeline = (await openImage(image)).resize({ width, height, fit });
    return { image: await storeImage('image-resize', 'image', ctx, pipeline, keepFormat(image)) };
  },
});

const imageCrop = defineNode({
  spec: {
    id: 'image-crop',
    kind: 'model',
    title: 'Crop image',
    category: 'image',
    description:
      'Cuts the rectangle at "left", "top" (pixels from the top-left corner) of "width" × "height" out of an image; the ' +
      `rectangle must lie inside the image. Keeps the input format (gif and tiff become png). ${PRICE_NOTE}`,
    inputs: ports({
      image: connector('IMAGE'),
      left: connector('INT', { defaultValue: 0, minValue: 0 }),
      top: connector('INT', { defaultValue: 0, minValue: 0 }),
      width: side(),
      height: side(),
    }),
    outputs: ports({ image: connector('IMAGE') }),
  },
  estimate: (inputs) => imagePriceMicros(Number(inputs.width) * Number(inputs.height)),
  price: priceByOutput,
  // Pure image processing of the input bytes: the same bytes and options give the same output.
  cache: { kind: 'deterministic' },
  async execute(inputs, ctx) {
    const left = inputs.left as number;
    const top = inputs.top as number;
    const width = inputs.width as number;
    const height = inputs.height as number;
    const image = await readImage('image-crop', 'image', inputs.image as Artifact, ctx);
    if (left + width > image.width) {
      throw invalidInput('image-crop', 'width', `with "left" ${left} reaches x = ${left + width}, past the image's width ${image.width}`);
    }
    if (top + height > image.height) {
      throw invalidInput('image-crop', 'height', `with "top" ${top} reaches y = ${top + height}, past the image's height ${image.height}`);
    }
    ctx.progress(`cropping ${width}×${height} at ${left},${top}`);
    const pipeline = (await openImage(image)).extract({ left, top, width, height });
    return { image: await storeImage('image-crop', 'image', ctx, pipeline, keepFormat(image)) };
  },
});

const imageConvert = defineNode({
  spec: {
    id: 'image-convert',
    kind: 'model',
    title: 'Convert image format',
    category: 'image',
    description:
      'Re-encodes an image as png, jpeg, webp or avif. "quality" (1 to 100) applies to jpeg, webp and avif; png is ' +
      `lossless. Transparency becomes white in jpeg. ${PRICE_NOTE}`,
    inputs: ports({
      image: connector('IMAGE'),
      format: connector('TEXT', { optionValues: [...IMAGE_OUTPUT_FORMATS] }),
      quality: connector('INT', { defaultValue: DEFAULT_QUALITY, minValue: 1, maxValue: 100 }),
    }),
    outputs: ports({ image: connector('IMAGE') }),
  },
  // The output has the input's size, unknown until the image is read: reserve the ceiling.
  estimate: () => IMAGE_MAX_MICROS,
  price: priceByOutput,
  // Pure image processing of the input bytes: the same bytes and options give the same output.
  cache: { kind: 'deterministic' },
  async execute(inputs, ctx) {
    const format = inputs.format as ImageOutputFormat;
    const image = await readImage('image-convert', 'image', inputs.image as Artifact, ctx);
    const pipeline = await openImage(image);
    return { image: await storeImage('image-convert', 'image', ctx, pipeline, format, inputs.quality as number) };
  },
});

const BLENDS = ['over', 'multiply', 'screen', 'overlay', 'darken', 'lighten', 'difference'] as const;

const imageComposite = defineNode({
  spec: {
    id: 'image-composite',
    kind: 'model',
    title: 'Overlay image',
    category: 'image',
    description:
      'Draws "overlay" onto "base" with its top-left corner at "left", "top" (may be negative; parts outside the base are ' +
      'cut off), blended by "blend" ("over" by default, respecting transparency). The overlay may not be larger than the ' +
      `base. The result has the base's size and format (gif and tiff become png). ${PRICE_NOTE}`,
    inputs: ports({
      base: connector('IMAGE'),
      overlay: connector('IMAGE'),
      left: connector('INT', { defaultValue: 0, minValue: -MAX_IMAGE_SIDE, maxValue: MAX_IMAGE_SIDE }),
      top: connector('INT', { defaultValue: 0, minValue: -MAX_IMAGE_SIDE, maxValue: MAX_IMAGE_SIDE }),
      blend: connector('TEXT', { defaultValue: 'over', optionValues: [...BLENDS] }),
    }),
    outputs: ports({ image: connector('IMAGE') }),
  },
  estimate: () => IMAGE_MAX_MICROS,
  price: priceByOutput,
  // Pure image processing of the input bytes: the same bytes and options give the same output.
  cache: { kind: 'deterministic' },
  async execute(inputs, ctx) {
    const base = await readImage('image-composite', 'base', inputs.base as Artifact, ctx);
    const overlay = await readImage('image-composite', 'overlay', inputs.overlay as Artifact, ctx);
    if (overlay.width > base.width || overlay.height > base.height) {
      throw invalidInput('image-composite', 'overlay', `is ${overlay.width}×${overlay.height}, larger than the ${base.width}×${base.height} base; resize it first`);
    }
    ctx.progress(`compositing ${overlay.width}×${overlay.height} onto ${base.width}×${base.height}`);
    // The overlay goes in already oriented and decoded, so both images follow the same rules.
    const overlayPixels = await (await openImage(overlay)).png().toBuffer();
    const pipeline = (await openImage(base)).composite([
      { input: overlayPixels, left: inputs.left as number, top: inputs.top as number, blend: inputs.blend as (typeof BLENDS)[number] },
    ]);
    return { image: await storeImage('image-composite', 'base', ctx, pipeline, keepFormat(base)) };
  },
});

const imageMetadata = defineNode({
  spec: {
    id: 'image-metadata',
    kind: 'model',
    title: 'Image metadata',
    category: 'image',
    description:
      'Reads an image\'s size and format without changing it: "metadata" is { width, height, format, channels, hasAlpha, ' +
      'bytes }, with width and height as displayed (EXIF orientation applied), also given as INT "width" and "height". ' +
      `Costs ${IMAGE_BASE_MICROS} micro-USD.`,
    inputs: ports({ image: connector('IMAGE') }),
    outputs: ports({
      metadata: connector('STRUCTURED'),
      width: connector('INT'),
      height: connector('INT'),
    }),
  },
  ...flatPricing(IMAGE_BASE_MICROS),
  // Pure image processing of the input bytes: the same bytes and options give the same output.
  cache: { kind: 'deterministic' },
  async execute(inputs, ctx) {
    // Only the header is read, so images above the pixel limit can still be described.
    const image = await readImage('image-metadata', 'image', inputs.image as Artifact, ctx, false);
    const { width, height, format, channels, hasAlpha } = image;
    return { metadata: { width, height, format, channels, hasAlpha, bytes: image.bytes.length }, width, height };
  },
});

/** The image family, in palette order. */
export const IMAGE_NODES: readonly NodeDefinition[] = [imageResize, imageCrop, imageConvert, imageComposite, imageMetadata];
