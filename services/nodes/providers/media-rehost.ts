import type { Artifact } from '../../contract';
import { AppError } from '../../platform/app-error';
import type { ArtifactBytes, ArtifactStore } from '../artifact-store';
import type { NodeContext } from '../node-definition';
import { MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS } from '../limits';
import { loadSharp } from '../load-sharp';
import { providerFetch } from './provider-http';
import { malformedResponse, readCapped } from './provider-response';

/** What a provider node needs to reach its provider: the run's context and the request timeout. */
export interface ProviderCall {
  provider: string;
  timeoutMs: number;
  signal: AbortSignal;
}

/** Where a result file may come from: the provider's own origin, or anywhere public. */
export interface ResultSource extends ProviderCall {
  /** The provider's configured base URL: a result on its origin is read like any call to it. */
  baseUrl: string;
  /** The step's artifact store, whose safe fetching reads results anywhere else. */
  artifacts: Pick<ArtifactStore, 'fetchForeign'>;
}

/**
 * Downloads a result file the provider links to, under the run's signal and the size cap. Our
 * key is never sent there: result URLs are public. A result on the provider's own configured
 * origin (a self-hosted server on a private address included) is read as the provider is; any
 * other host (a CDN) goes through the rules of input URLs, so a result URL cannot make the
 * service reach its own network.
 */
export async function downloadResult(call: ResultSource, url: string, maxBytes: number): Promise<Buffer> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw malformedResponse(call.provider, 'an invalid result URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw malformedResponse(call.provider, 'a result URL that is not http(s)');
  }
  if (parsed.origin === new URL(call.baseUrl).origin) {
    const response = await providerFetch({ provider: call.provider, url: parsed.href, method: 'GET', signal: call.signal, timeoutMs: call.timeoutMs });
    return readCapped(response, maxBytes, call.provider);
  }
  let file: ArtifactBytes;
  try {
    file = await call.artifacts.fetchForeign(parsed.href);
  } catch (err) {
    // The caller gave nothing wrong: a refused result URL is the provider's failure.
    if (err instanceof AppError && err.code === 'validation_failed') {
      throw new AppError({ code: 'unavailable', message: `${call.provider} returned a result URL the service does not fetch: ${err.message}` });
    }
    throw err;
  }
  if (file.bytes.length > maxBytes) throw malformedResponse(call.provider, `a result file of more than ${maxBytes} bytes`);
  return file.bytes;
}

/** A result file's bytes: a base64 data URI (some providers answer inline) or a download (`downloadResult`). */
export async function resultFileBytes(call: ResultSource, url: string, maxBytes: number): Promise<Buffer> {
  const inline = /^data:[^;,]*;base64,(.*)$/s.exec(url);
  if (!inline) return downloadResult(call, url, maxBytes);
  const bytes = Buffer.from(inline[1]!, 'base64');
  if (bytes.length > maxBytes) throw malformedResponse(call.provider, `a result file of more than ${maxBytes} bytes`);
  return bytes;
}

const IMAGE_MIME_TYPES: Record<string, string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  avif: 'image/avif',
  gif: 'image/gif',
};

/**
 * Stores generated image bytes in our blob store and returns our ref artifact with its real
 * format and size: the provider's URL (if it gave one) never leaves this function.
 */
export async function rehostImage(provider: string, bytes: Buffer, ctx: NodeContext): Promise<Artifact> {
  if (bytes.length > MAX_IMAGE_BYTES) throw malformedResponse(provider, `an image over ${MAX_IMAGE_BYTES} bytes`);
  const sharp = await loadSharp();
  let meta: Awaited<ReturnType<ReturnType<typeof sharp>['metadata']>>;
  try {
    meta = await sharp(bytes, { limitInputPixels: MAX_IMAGE_PIXELS }).metadata();
  } catch {
    throw malformedResponse(provider, 'a result that is not an image');
  }
  const format = meta.format === 'heif' && meta.compression === 'av1' ? 'avif' : meta.format;
  const mimeType = IMAGE_MIME_TYPES[format];
  if (!mimeType || !meta.width || !meta.height) {
    throw malformedResponse(provider, `an image in an unsupported format (${format})`);
  }
  ctx.signal.throwIfAborted();
  return ctx.artifacts.put(bytes, { mimeType, metadata: { width: meta.width, height: meta.height } });
}

/** The model (or app) a node was asked for, or the first offered; a price list keyed by it. */
export function offered(prices: Record<string, number>): { names: string[]; first: string } {
  const names = Object.keys(prices);
  return { names, first: names[0]! };
}

/** The price of `model` in a price list; a name not in it is priced as the dearest (the worst case). */
export function priceIn(prices: Record<string, number>, model: unknown): number {
  return prices[String(model)] ?? Math.max(...Object.values(prices));
}
