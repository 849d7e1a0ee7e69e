import { ceilMicros, type Micros } from '../../engine';
import { MAX_MEDIA_SECONDS } from './media-files';

/**
 * Prices of the local tool nodes (espeak-ng, tesseract, ffmpeg). They run on our own CPUs, so
 * they cost little; media work is priced by the seconds of media produced, bounded by the
 * one-hour media limit, so the worst case of every node is known before it runs.
 */
export const TOOL_BASE_MICROS: Micros = 50;
export const MEDIA_MICROS_PER_MINUTE: Micros = 20;
export const MEDIA_MAX_MICROS: Micros = TOOL_BASE_MICROS + (MAX_MEDIA_SECONDS / 60) * MEDIA_MICROS_PER_MINUTE;

/** 50 micro-USD plus 20 per minute of media (rounded up); unknown durations cost the ceiling (1,250). */
export function mediaPriceMicros(seconds: number): Micros {
  if (!Number.isFinite(seconds) || seconds < 0) return MEDIA_MAX_MICROS;
  return Math.min(MEDIA_MAX_MICROS, TOOL_BASE_MICROS + ceilMicros((seconds / 60) * MEDIA_MICROS_PER_MINUTE));
}

/** Speech: 50 micro-USD plus 1 per 100 characters of text (at most 100 for the 5,000-character limit). */
export function speechPriceMicros(characters: number): Micros {
  return TOOL_BASE_MICROS + Math.ceil(Math.max(0, characters) / 100);
}

/** OCR of one image (tesseract; up to about a second of CPU per megapixel). */
export const OCR_MICROS: Micros = 300;

/** Frames from a video: 50 micro-USD plus 10 per frame. */
export const FRAME_MICROS: Micros = 10;
