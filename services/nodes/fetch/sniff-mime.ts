/**
 * The media type of bytes from their magic numbers, for the common image, audio, video and
 * document formats; null when the bytes are none of them. Fetched files are typed by what they
 * are, not by what a remote server claims.
 */
export function sniffMimeType(bytes: Buffer): string | null {
  const ascii = (start: number, end: number) => bytes.subarray(start, end).toString('latin1');
  const startsWith = (...values: number[]) => values.every((v, i) => bytes[i] === v);
  if (startsWith(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (startsWith(0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a') return 'image/gif';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WAVE') return 'audio/wav';
  if (ascii(0, 4) === 'OggS') return 'audio/ogg';
  // EBML, the container of WebM (and Matroska, whose files players read as WebM too).
  if (startsWith(0x1a, 0x45, 0xdf, 0xa3)) return 'video/webm';
  if (ascii(0, 5) === '%PDF-') return 'application/pdf';
  if (ascii(4, 8) === 'ftyp') {
    const brand = ascii(8, 12);
    if (brand === 'avif' || brand === 'avis') return 'image/avif';
    if (brand === 'heic' || brand === 'heix' || brand === 'mif1') return 'image/heic';
    if (brand === 'qt  ') return 'video/quicktime';
    if (brand === 'M4A ' || brand === 'M4B ') return 'audio/mp4';
    return 'video/mp4';
  }
  if (ascii(0, 3) === 'ID3') return 'audio/mpeg';
  // An MPEG audio frame header: 11 sync bits, then a layer that is not "reserved".
  if (bytes.length >= 2 && bytes[0] === 0xff && (bytes[1]! & 0xe0) === 0xe0 && (bytes[1]! & 0x06) !== 0) return 'audio/mpeg';
  return null;
}

/** The `type/subtype` of a Content-Type header, lower-cased, or null when there is none usable. */
export function mimeOfContentType(header: string | undefined): string | null {
  const essence = header?.split(';', 1)[0]!.trim().toLowerCase();
  return essence && /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(essence) ? essence : null;
}
