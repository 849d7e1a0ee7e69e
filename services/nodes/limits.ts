/**
 * Size limits of the local nodes. Inputs arrive from callers and from other nodes, so every
 * node bounds what it reads and what it produces; a limit hit is a caller-readable error.
 */

/** Longest text a text or JSON node produces, in characters. */
export const MAX_TEXT_LENGTH = 1_000_000;

/** Most parts `text-split` returns. */
export const MAX_SPLIT_PARTS = 10_000;

/** Largest side of an image a node produces, in pixels (the 1..8192 bounds of the size ports). */
export const MAX_IMAGE_SIDE = 8192;

/** Most pixels of an image a node reads or produces (8192 × 8192); guards against decompression bombs. */
export const MAX_IMAGE_PIXELS = MAX_IMAGE_SIDE * MAX_IMAGE_SIDE;

/** Largest encoded image a node reads, in bytes (64 MiB). */
export const MAX_IMAGE_BYTES = 64 * 1024 * 1024;
