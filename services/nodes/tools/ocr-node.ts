import fs from 'node:fs/promises';
import path from 'node:path';
import type { Artifact } from '../../contract';
import { openImage, readImage } from '../image-io';
import { defineNode, type NodeDefinition } from '../node-definition';
import { connector, ports } from '../spec-builders';
import { runForNode, withWorkDir } from './media-files';
import { OCR_MICROS } from './tool-pricing';
import type { LocalTools } from './tool-detection';

/** Text recognition with tesseract, offered in the languages whose data is installed. */
export function ocrNode(tools: LocalTools): NodeDefinition | undefined {
  const { tesseract, tesseractLanguages } = tools;
  if (!tesseract || tesseractLanguages.length === 0) return undefined;
  const fallback = tesseractLanguages.includes('eng') ? 'eng' : tesseractLanguages[0]!;
  return defineNode({
    spec: {
      id: 'ocr-tesseract',
      kind: 'model',
      title: 'Read text in an image (tesseract OCR)',
      category: 'image',
      description:
        'Recognizes the printed text in "image" (png, jpeg, webp, gif or tiff, within the image limits) with tesseract, running ' +
        `on the service's own machines, in "language" (${tesseractLanguages.join(', ')}). "text" keeps the lines of the image, ` +
        `trimmed. Costs ${OCR_MICROS} micro-USD.`,
      inputs: ports({
        image: connector('IMAGE'),
        language: connector('TEXT', { defaultValue: fallback, optionValues: [...tesseractLanguages] }),
      }),
      outputs: ports({ text: connector('TEXT') }),
    },
    estimate: () => OCR_MICROS,
    price: () => OCR_MICROS,
    async execute(inputs, ctx) {
      // The image checks (format, bytes, pixels) of the image nodes apply: tesseract reads the same files.
      const image = await readImage('ocr-tesseract', 'image', inputs.image as Artifact, ctx);
      // Decoded by sharp (oriented, first frame) and handed over as PNG, which tesseract always reads.
      const png = await (await openImage(image)).png().toBuffer();
      ctx.signal.throwIfAborted();
      return withWorkDir(async (dir) => {
        const file = path.join(dir, 'image.png');
        await fs.writeFile(file, png);
        ctx.progress(`reading text in a ${image.width}×${image.height} image (${inputs.language as string})`);
        const { stdout } = await runForNode('ocr-tesseract', 'image', tesseract, [file, 'stdout', '-l', inputs.language as string], ctx, {
          maxOutputBytes: 4 * 1024 * 1024,
        });
        return { text: stdout.toString('utf8').replace(/\f/g, '').trim() };
      });
    },
  });
}
