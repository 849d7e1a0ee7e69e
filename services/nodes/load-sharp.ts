import type sharpFactory from 'sharp';
import { AppError } from '../platform/app-error';

/** The `sharp` function. */
export type SharpFactory = typeof sharpFactory;

/** A sharp pipeline over one input image. */
export type SharpPipeline = ReturnType<SharpFactory>;

let loading: Promise<SharpFactory> | undefined;

/**
 * Loads sharp (a native module) on first use, not at import: processes that only serve the
 * catalog (the API) never load libvips, and a platform without sharp's binaries fails image
 * nodes with a clear `unavailable` error instead of failing to start.
 */
export function loadSharp(): Promise<SharpFactory> {
  loading ??= import('sharp').then(
    (mod) => {
      const sharp = mod.default;
      // Each input is a different buffer: libvips' operation cache would only hold memory.
      sharp.cache(false);
      return sharp;
    },
    (err: unknown) => {
      loading = undefined;
      throw new AppError({ code: 'unavailable', message: 'image processing is unavailable on this worker (sharp failed to load)', cause: err });
    },
  );
  return loading;
}
