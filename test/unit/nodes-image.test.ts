import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import type { Artifact } from '../../services/contract';
import {
  dataKindOfMimeType,
  findNode,
  imagePriceMicros,
  type ArtifactStore,
  type NodeContext,
  type NodeDefinition,
  type NodeInputs,
} from '../../services/nodes';
import { stillTrueFor } from '../support/eventually';

/** Stands in for the blob store: a Map of buffers behind the artifact port. */
function memoryArtifacts() {
  const blobs = new Map<string, { bytes: Buffer; mimeType: string }>();
  const puts: Artifact[] = [];
  const store: ArtifactStore = {
    async put(bytes, { mimeType, metadata }) {
      const ref = `mem://blobs/${blobs.size + 1}`;
      blobs.set(ref, { bytes, mimeType });
      const artifact: Artifact = { kind: dataKindOfMimeType(mimeType), ref, mimeType, ...(metadata ? { metadata } : {}) };
      puts.push(artifact);
      return artifact;
    },
    async read(artifact) {
      const blob = artifact.ref === undefined ? undefined : blobs.get(artifact.ref);
      if (!blob) throw new Error(`no blob at ${artifact.ref}`);
      return blob;
    },
    fetchForeign: () => Promise.reject(new Error('image nodes fetch no file')),
  };
  return { store, blobs, puts };
}

let artifacts: ReturnType<typeof memoryArtifacts>;
let progress: string[];

beforeEach(() => {
  artifacts = memoryArtifacts();
  progress = [];
});

function context(signal: AbortSignal = new AbortController().signal, onProgress?: (message: string) => void): NodeContext {
  return {
    signal,
    progress: (message) => {
      progress.push(message);
      onProgress?.(message);
    },
    artifacts: artifacts.store,
  };
}

/** Puts test bytes in the store as an input artifact, the way the runner would hand them over. */
async function input(bytes: Buffer, mimeType = 'image/png'): Promise<Artifact> {
  const artifact = await artifacts.store.put(bytes, { mimeType });
  artifacts.puts.length = 0;
  return artifact;
}

function solid(width: number, height: number, background: string | { r: number; g: number; b: number; alpha: number }, channels: 3 | 4 = 3) {
  return sharp({ create: { width, height, channels, background } });
}

/** 64×32: red on the left half, blue on the right half. */
async function halves(): Promise<Buffer> {
  const blue = await solid(32, 32, '#00f').png().toBuffer();
  return solid(64, 32, '#f00').composite([{ input: blue, left: 32, top: 0 }]).png().toBuffer();
}

function node(id: string): NodeDefinition {
  const found = findNode(id);
  if (!found) throw new Error(`no node ${id}`);
  return found;
}

/** Runs a node, checks pricing (price from the real output, never above the estimate) and returns the output image. */
async function runImage(id: string, inputs: NodeInputs): Promise<{ artifact: Artifact; bytes: Buffer; price: number; estimate: number }> {
  const definition = node(id);
  const outputs = await definition.execute(inputs, context());
  const artifact = outputs.image as Artifact;
  const estimate = definition.estimate(inputs);
  const price = definition.price(inputs, outputs);
  expect(price).toBeLessThanOrEqual(estimate);
  expect(artifact.kind).toBe('image');
  const stored = artifacts.blobs.get(artifact.ref!);
  expect(stored?.mimeType).toBe(artifact.mimeType);
  return { artifact, bytes: stored!.bytes, price, estimate };
}

function rejects(id: string, inputs: NodeInputs, fragment: string): Promise<void> {
  return expect(node(id).execute(inputs, context())).rejects.toMatchObject({ code: 'validation_failed', message: expect.stringContaining(fragment) as unknown });
}

async function pixel(bytes: Buffer, x: number, y: number): Promise<number[]> {
  const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
  const at = (y * info.width + x) * info.channels;
  return [...data.subarray(at, at + 3)];
}

describe('image-resize', () => {
  it('resizes to the box and stores a png ref artifact with its size', async () => {
    const image = await input(await halves());
    const { artifact, bytes, price, estimate } = await runImage('image-resize', { image, width: 16, height: 16 });
    expect(artifact).toEqual({ kind: 'image', ref: expect.stringMatching(/^mem:\/\//) as unknown, mimeType: 'image/png', metadata: { width: 16, height: 16 } });
    const meta = await sharp(bytes).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 16, 16]);
    expect(price).toBe(imagePriceMicros(256));
    expect(estimate).toBe(101);
    expect(progress).toEqual(['resizing 64×32 to 16×16', 'encoding png']);
  });

  it('keeps the aspect ratio given one side, and follows each fit', async () => {
    const image = await input(await halves());
    const size = async (extra: NodeInputs) => {
      const { bytes } = await runImage('image-resize', { image, ...extra });
      const meta = await sharp(bytes).metadata();
      return [meta.width, meta.height];
    };
    expect(await size({ width: 32 })).toEqual([32, 16]);
    expect(await size({ height: 64 })).toEqual([128, 64]);
    expect(await size({ width: 20, height: 20, fit: 'contain' })).toEqual([20, 20]);
    expect(await size({ width: 20, height: 20, fit: 'fill' })).toEqual([20, 20]);
    expect(await size({ width: 20, height: 20, fit: 'inside' })).toEqual([20, 10]);
    expect(await size({ width: 20, height: 20, fit: 'outside' })).toEqual([40, 20]);
  });

  it('estimates the ceiling when the output size is not bounded by the inputs, and prices the real size', async () => {
    const image = await input(await halves());
    const { price, estimate } = await runImage('image-resize', { image, width: 20, height: 20, fit: 'outside' });
    expect(estimate).toBe(500);
    expect(price).toBe(imagePriceMicros(800));
    expect(node('image-resize').estimate({ image, width: 8192, height: 8192 })).toBe(500);
    expect(node('image-resize').estimate({ image, width: 1000, height: 1000 })).toBe(200);
  });

  it('keeps jpeg and webp, and writes gif input as png', async () => {
    const jpeg = await runImage('image-resize', { image: await input(await solid(8, 8, '#0f0').jpeg().toBuffer(), 'image/jpeg'), width: 4 });
    expect(jpeg.artifact.mimeType).toBe('image/jpeg');
    expect((await sharp(jpeg.bytes).metadata()).format).toBe('jpeg');
    const webp = await runImage('image-resize', { image: await input(await solid(8, 8, '#0f0').webp().toBuffer(), 'image/webp'), width: 4 });
    expect((await sharp(webp.bytes).metadata()).format).toBe('webp');
    const gif = await runImage('image-resize', { image: await input(await solid(8, 8, '#0f0').gif().toBuffer(), 'image/gif'), width: 4 });
    expect(gif.artifact.mimeType).toBe('image/png');
    expect((await sharp(gif.bytes).metadata()).format).toBe('png');
  });

  it('follows EXIF orientation', async () => {
    const rotated = await solid(64, 32, '#f00').jpeg().withMetadata({ orientation: 6 }).toBuffer();
    const { bytes } = await runImage('image-resize', { image: await input(rotated, 'image/jpeg'), width: 16 });
    const meta = await sharp(bytes).metadata();
    expect([meta.width, meta.height]).toEqual([16, 32]);
  });

  it('rejects missing sizes, sizes out of bounds, unknown fits and outputs over 8192 per side', async () => {
    const image = await input(await halves());
    await rejects('image-resize', { image }, 'input "width" or "height" is required');
    await rejects('image-resize', { image, width: 9000 }, 'input "width" must be an INT between 1 and 8192, got 9000');
    await rejects('image-resize', { image, width: 0 }, 'input "width" must be an INT between 1 and 8192, got 0');
    await rejects('image-resize', { image, width: 10, fit: 'stretch' }, 'input "fit" must be one of');
    await rejects('image-resize', { image, height: 8192 }, 'would make a 16384×8192 image; the limit is 8192 pixels per side');
    expect(artifacts.puts).toEqual([]);
  });
});

describe('image-crop', () => {
  it('cuts out the requested rectangle', async () => {
    const image = await input(await halves());
    const { artifact, bytes, price, estimate } = await runImage('image-crop', { image, left: 30, top: 4, width: 20, height: 10 });
    expect(artifact.metadata).toEqual({ width: 20, height: 10 });
    const meta = await sharp(bytes).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 20, 10]);
    expect(await pixel(bytes, 0, 0)).toEqual([255, 0, 0]);
    expect(await pixel(bytes, 19, 9)).toEqual([0, 0, 255]);
    expect(price).toBe(estimate);
  });

  it('refuses a rectangle that leaves the image, naming the edge', async () => {
    const image = await input(await halves());
    await rejects('image-crop', { image, left: 60, width: 10, height: 10 }, 'input "width" with "left" 60 reaches x = 70, past the image\'s width 64');
    await rejects('image-crop', { image, top: 30, width: 10, height: 10 }, 'input "height" with "top" 30 reaches y = 40, past the image\'s height 32');
    await rejects('image-crop', { image, left: -1, width: 10, height: 10 }, 'input "left" must be an INT of at least 0');
  });
});

describe('image-convert', () => {
  it.each([
    ['jpeg', 'image/jpeg', 'jpeg'],
    ['webp', 'image/webp', 'webp'],
    ['avif', 'image/avif', 'heif'],
    ['png', 'image/png', 'png'],
  ])('writes %s', async (format, mimeType, decoded) => {
    const { artifact, bytes } = await runImage('image-convert', { image: await input(await halves()), format });
    expect(artifact.mimeType).toBe(mimeType);
    expect(artifact.metadata).toEqual({ width: 64, height: 32 });
    const meta = await sharp(bytes).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual([decoded, 64, 32]);
  });

  it('uses the quality: lower quality, fewer bytes', async () => {
    const noise = Buffer.alloc(64 * 64 * 3);
    let seed = 7;
    for (let i = 0; i < noise.length; i++) noise[i] = seed = (seed * 1103515245 + 12345) % 256;
    const image = await input(await sharp(noise, { raw: { width: 64, height: 64, channels: 3 } }).png().toBuffer());
    const low = await runImage('image-convert', { image, format: 'jpeg', quality: 10 });
    const high = await runImage('image-convert', { image, format: 'jpeg', quality: 95 });
    expect(low.bytes.length).toBeLessThan(high.bytes.length);
  });

  it('turns transparency white in jpeg', async () => {
    const clear = await solid(8, 8, { r: 0, g: 0, b: 0, alpha: 0 }, 4).png().toBuffer();
    const { bytes } = await runImage('image-convert', { image: await input(clear), format: 'jpeg' });
    expect(await pixel(bytes, 4, 4)).toEqual([255, 255, 255]);
  });

  it('requires a known format and a quality from 1 to 100', async () => {
    const image = await input(await halves());
    await rejects('image-convert', { image }, 'input "format" (TEXT) is required');
    await rejects('image-convert', { image, format: 'bmp' }, 'input "format" must be one of "png", "jpeg", "webp", "avif", got "bmp"');
    await rejects('image-convert', { image, format: 'jpeg', quality: 101 }, 'input "quality" must be an INT between 1 and 100');
  });
});

describe('image-composite', () => {
  it('draws the overlay at the offset, keeping the base size', async () => {
    const base = await input(await solid(64, 32, '#f00').png().toBuffer());
    const overlay = await input(await solid(16, 16, '#00f').png().toBuffer());
    const { artifact, bytes } = await runImage('image-composite', { base, overlay, left: 8, top: 8 });
    expect(artifact.metadata).toEqual({ width: 64, height: 32 });
    expect(await pixel(bytes, 10, 10)).toEqual([0, 0, 255]);
    expect(await pixel(bytes, 0, 0)).toEqual([255, 0, 0]);
    expect(await pixel(bytes, 30, 10)).toEqual([255, 0, 0]);
  });

  it('cuts off overlay parts outside the base, negative offsets included', async () => {
    const base = await input(await solid(64, 32, '#f00').png().toBuffer());
    const overlay = await input(await solid(16, 16, '#00f').png().toBuffer());
    const { bytes } = await runImage('image-composite', { base, overlay, left: -8, top: -8 });
    expect(await pixel(bytes, 0, 0)).toEqual([0, 0, 255]);
    expect(await pixel(bytes, 9, 9)).toEqual([255, 0, 0]);
  });

  it('refuses an overlay larger than the base', async () => {
    const base = await input(await solid(16, 16, '#f00').png().toBuffer());
    const overlay = await input(await halves());
    await rejects('image-composite', { base, overlay }, 'input "overlay" is 64×32, larger than the 16×16 base; resize it first');
  });
});

describe('image-metadata', () => {
  it('reports size and format as STRUCTURED and INT outputs', async () => {
    const bytes = await solid(64, 32, '#f00').png().toBuffer();
    const definition = node('image-metadata');
    const inputs = { image: await input(bytes) };
    const outputs = await definition.execute(inputs, context());
    expect(outputs).toEqual({
      metadata: { width: 64, height: 32, format: 'png', channels: 3, hasAlpha: false, bytes: bytes.length },
      width: 64,
      height: 32,
    });
    expect(definition.price(inputs, outputs)).toBe(100);
    expect(definition.estimate(inputs)).toBe(100);
    expect(artifacts.puts).toEqual([]);
  });

  it('names avif as avif and applies EXIF orientation', async () => {
    const avif = await node('image-metadata').execute({ image: await input(await solid(8, 4, '#f00').avif().toBuffer(), 'image/avif') }, context());
    expect(avif.metadata).toMatchObject({ format: 'avif', width: 8, height: 4 });
    const rotated = await solid(64, 32, '#f00').jpeg().withMetadata({ orientation: 6 }).toBuffer();
    const jpeg = await node('image-metadata').execute({ image: await input(rotated, 'image/jpeg') }, context());
    expect([jpeg.width, jpeg.height]).toEqual([32, 64]);
  });
});

/** A valid 1×1 PNG whose header claims another size: the header is all the size checks read. */
async function pngClaiming(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(await solid(1, 1, '#fff').png().toBuffer());
  // Signature (8 bytes), then IHDR: length (4), type (4), width (4), height (4), ..., CRC over type and data.
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
  return png;
}

describe('image input checks', () => {
  it('refuses bytes that are not an image', async () => {
    const text = await input(Buffer.from('hello, not an image'), 'image/png');
    await rejects('image-resize', { image: text, width: 10 }, 'node "image-resize": input "image" is not an image (expected png, jpeg, webp, avif, gif, tiff)');
    await rejects('image-metadata', { image: text }, 'input "image" is not an image');
  });

  it('refuses SVG documents', async () => {
    const svg = await input(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'), 'image/svg+xml');
    await rejects('image-convert', { image: svg, format: 'png' }, 'input "image" is a svg file; image nodes read png, jpeg, webp, avif, gif, tiff');
  });

  it('refuses images over the pixel limit before decoding them, but can still describe them', async () => {
    const huge = await input(await pngClaiming(10_000, 10_000));
    await rejects('image-resize', { image: huge, width: 10 }, 'input "image" is 10000×10000 (100000000 pixels); the limit is 67108864 pixels');
    const described = await node('image-metadata').execute({ image: huge }, context());
    expect([described.width, described.height]).toEqual([10_000, 10_000]);
  });

  it('refuses artifacts of another kind on an image port', async () => {
    await rejects('image-resize', { image: { kind: 'text', value: 'x' }, width: 10 }, 'input "image" must be an IMAGE artifact, got kind "text"');
  });
});

describe('image nodes and the abort signal', () => {
  it('reject at once on an aborted signal, reading nothing', async () => {
    const image = await input(await halves());
    const read = jest.spyOn(artifacts.store, 'read');
    const controller = new AbortController();
    controller.abort();
    await expect(node('image-resize').execute({ image, width: 8 }, context(controller.signal))).rejects.toMatchObject({ name: 'AbortError' });
    expect(read).not.toHaveBeenCalled();
  });

  it('reject promptly when aborted while encoding, and store nothing', async () => {
    const image = await input(await halves());
    const controller = new AbortController();
    const abortOnEncode = (message: string) => {
      if (message.startsWith('encoding')) controller.abort(new Error('run failed'));
    };
    await expect(node('image-convert').execute({ image, format: 'avif' }, context(controller.signal, abortOnEncode))).rejects.toThrow('run failed');
    // Let libvips finish in the background: its result must be dropped, not stored.
    await stillTrueFor(() => artifacts.puts.length === 0, 500, { what: 'nothing stored' });
    expect(artifacts.puts).toEqual([]);
  });
});
