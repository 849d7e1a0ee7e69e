import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Artifact } from '../../contract';
import { AppError } from '../../platform/app-error';
import type { NodeContext } from '../node-definition';
import { invalidInput } from '../node-inputs';
import { runTool, ToolError, type RunToolOptions } from './run-tool';

/** Largest media file a tool node reads or writes, in bytes (128 MiB). */
export const MAX_MEDIA_BYTES = 128 * 1024 * 1024;

/** Longest media a tool node reads or produces, in seconds (1 hour). */
export const MAX_MEDIA_SECONDS = 3600;

/** Time one tool run may take before it is killed. */
export const TOOL_TIMEOUT_MS = 120_000;

/**
 * Container formats ffmpeg may open. Playlists and indirections (hls, concat, image2 sequences,
 * lavfi) are left out on purpose: they would let an uploaded file make ffmpeg read other files
 * or fetch URLs. Only the `file` protocol is allowed, for the same reason.
 */
const SAFE_DEMUXERS = [
  'mov', 'matroska', 'avi', 'flv', 'asf', 'mpegts', 'mpeg', 'wav', 'w64', 'aiff', 'caf', 'mp3', 'ogg', 'flac', 'aac', 'amr',
  'gif', 'png_pipe', 'jpeg_pipe', 'webp_pipe', 'bmp_pipe', 'tiff_pipe',
].join(',');

/** ffmpeg/ffprobe options that open `file` with the whitelists above. */
export function safeInput(file: string): string[] {
  return ['-protocol_whitelist', 'file', '-format_whitelist', SAFE_DEMUXERS, '-i', file];
}

/** Runs `work` in a fresh temporary directory, removed afterwards whatever happens. */
export async function withWorkDir<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-tool-'));
  try {
    return await work(dir);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** Reads a media artifact, bounded by `MAX_MEDIA_BYTES`, into `dir/name`; returns the file's path. */
export async function writeInput(node: string, port: string, artifact: Artifact, ctx: NodeContext, dir: string, name: string): Promise<string> {
  const { bytes } = await ctx.artifacts.read(artifact);
  ctx.signal.throwIfAborted();
  if (bytes.length > MAX_MEDIA_BYTES) throw invalidInput(node, port, `is ${bytes.length} bytes; the limit is ${MAX_MEDIA_BYTES} bytes`);
  if (bytes.length === 0) throw invalidInput(node, port, 'is empty');
  const file = path.join(dir, name);
  await fs.writeFile(file, bytes);
  return file;
}

/** Reads an output file a tool wrote, bounded by `MAX_MEDIA_BYTES`. */
export async function readOutput(node: string, file: string): Promise<Buffer> {
  const stat = await fs.stat(file).catch(() => undefined);
  if (!stat || stat.size === 0) throw new AppError({ code: 'internal', message: `node "${node}": the tool wrote no output` });
  if (stat.size > MAX_MEDIA_BYTES) throw invalidInput(node, 'output', `would be ${stat.size} bytes; the limit is ${MAX_MEDIA_BYTES} bytes`);
  return fs.readFile(file);
}

/**
 * Runs a tool for a node, translating failures: a missing tool is `unavailable` (another worker
 * may have it), anything else the tool refuses is blamed on the input `port` with the tool's
 * last words, and an abort rejects with the signal's reason.
 */
export async function runForNode(node: string, port: string, binary: string, args: string[], ctx: NodeContext, options: Omit<RunToolOptions, 'signal'> = {}) {
  try {
    return await runTool(binary, args, { timeoutMs: TOOL_TIMEOUT_MS, ...options, signal: ctx.signal });
  } catch (err) {
    if (!(err instanceof ToolError)) throw err;
    if (err.reason === 'missing') {
      throw new AppError({ code: 'unavailable', message: `node "${node}": ${binary} is not installed on this worker`, cause: err });
    }
    const why = err.reason === 'exit' ? `could not be processed (${err.stderr || err.message})` : `could not be processed: ${err.message}`;
    throw invalidInput(node, port, why);
  }
}

/** What `media-probe` and the media nodes learn about a file. */
export interface MediaInfo {
  /** Seconds; 0 for a still image. */
  durationSeconds: number;
  width: number | null;
  height: number | null;
  /** The container, as ffprobe names it (e.g. "wav", "mov,mp4,m4a,3gp,3g2,mj2"). */
  container: string;
  audioCodec: string | null;
  videoCodec: string | null;
  bitRate: number | null;
  sizeBytes: number;
}

interface ProbeStream {
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  duration?: string;
}

const positive = (text: string | undefined): number | null => {
  const n = Number(text);
  return Number.isFinite(n) && n > 0 ? n : null;
};

/** Probes a file with ffprobe (JSON output); a file ffprobe cannot read is blamed on `port`. */
export async function probeFile(node: string, port: string, ffprobe: string, file: string, ctx: NodeContext): Promise<MediaInfo> {
  const args = ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', ...safeInput(file)];
  const { stdout } = await runForNode(node, port, ffprobe, args, ctx, { timeoutMs: 30_000, maxOutputBytes: 4 * 1024 * 1024 });
  const parsed = JSON.parse(stdout.toString('utf8')) as { format?: { format_name?: string; duration?: string; bit_rate?: string; size?: string }; streams?: ProbeStream[] };
  const streams = parsed.streams ?? [];
  // Still images report a codec "video" stream (png, mjpeg...) without a duration.
  const video = streams.find((s) => s.codec_type === 'video');
  const audio = streams.find((s) => s.codec_type === 'audio');
  const container = parsed.format?.format_name ?? 'unknown';
  const still = /_pipe$|^gif$/.test(container) && !audio;
  const duration = still ? 0 : positive(parsed.format?.duration) ?? positive(video?.duration) ?? positive(audio?.duration) ?? 0;
  return {
    durationSeconds: Math.round(duration * 1000) / 1000,
    width: video?.width ?? null,
    height: video?.height ?? null,
    container,
    audioCodec: audio?.codec_name ?? null,
    videoCodec: video?.codec_name ?? null,
    bitRate: positive(parsed.format?.bit_rate),
    sizeBytes: positive(parsed.format?.size) ?? 0,
  };
}

/** Audio formats the tool nodes write: ffmpeg encoder arguments and the mime type. */
export const AUDIO_FORMATS = {
  wav: { args: ['-c:a', 'pcm_s16le', '-f', 'wav'], mimeType: 'audio/wav' },
  mp3: { args: ['-c:a', 'libmp3lame', '-f', 'mp3'], mimeType: 'audio/mpeg' },
  ogg: { args: ['-c:a', 'libvorbis', '-f', 'ogg'], mimeType: 'audio/ogg' },
} as const;
export type AudioFormat = keyof typeof AUDIO_FORMATS;
export const AUDIO_FORMAT_NAMES = Object.keys(AUDIO_FORMATS) as AudioFormat[];

/** ffmpeg's usual quiet, non-interactive prefix. */
export const FFMPEG_BASE = ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y'];

/** Encodes `input` (any readable audio) as `format` into `dir/out.<format>`; returns the file. */
export async function encodeAudio(
  node: string,
  port: string,
  ffmpeg: string,
  input: { args: string[] },
  format: AudioFormat,
  dir: string,
  ctx: NodeContext,
  extra: string[] = [],
  bitrateKbps?: number,
): Promise<string> {
  const out = path.join(dir, `out.${format}`);
  // The one-hour cap comes first so that a node's own `-t` (in `extra`) overrides it.
  const bitrate = bitrateKbps !== undefined && format !== 'wav' ? ['-b:a', `${bitrateKbps}k`] : [];
  ctx.progress(`encoding ${format}`);
  await runForNode(node, port, ffmpeg, [...FFMPEG_BASE, ...input.args, '-t', String(MAX_MEDIA_SECONDS), ...extra, '-vn', '-fs', String(MAX_MEDIA_BYTES), ...AUDIO_FORMATS[format].args, ...bitrate, out], ctx);
  return out;
}

/** Stores an audio file as an artifact with `{ format, durationSeconds }` metadata (probed). */
export async function storeAudio(node: string, ffprobe: string, file: string, format: AudioFormat, ctx: NodeContext): Promise<Artifact> {
  const bytes = await readOutput(node, file);
  const info = await probeFile(node, 'output', ffprobe, file, ctx);
  ctx.signal.throwIfAborted();
  return ctx.artifacts.put(bytes, { mimeType: AUDIO_FORMATS[format].mimeType, metadata: { format, durationSeconds: info.durationSeconds } });
}

/** Seconds of audio on an artifact's metadata, or NaN when it is not there. */
export function durationOf(artifact: unknown): number {
  const value = (artifact as { metadata?: { durationSeconds?: unknown } } | undefined)?.metadata?.durationSeconds;
  return typeof value === 'number' ? value : Number.NaN;
}
