import { AppError } from '../../platform/app-error';
import { sniffMimeType } from './sniff-mime';

/**
 * Bytes held back to decide a stream's type before any is passed on: enough for every magic
 * number `sniffMimeType` knows and for a fair look at text, small enough never to matter.
 */
const HEAD_BYTES = 4096;

// Control characters no text file holds (tab, line feed, vertical tab, form feed, carriage return
// and escape, for coloured logs, are allowed).
// eslint-disable-next-line no-control-regex
const NOT_TEXT = /[\u0000-\u0008\u000e-\u001a\u001c-\u001f\u007f]/;

/** A stream's type, and its bytes from the first one on (the head replayed). */
export interface SniffedStream {
  /** From the magic numbers of its first bytes, else `text/plain` for UTF-8 text, else null. */
  mimeType: string | null;
  /** Whether the source held no byte at all. */
  empty: boolean;
  /** Every byte of the source. For text, fails with `unsupported_media_type` at the first byte that is not text. */
  body: AsyncGenerator<Buffer>;
}

function notText(offset: number): AppError {
  return new AppError({
    code: 'unsupported_media_type',
    message: `the file starts as UTF-8 text but is not text after its first ${offset} bytes (invalid UTF-8 or a control character); send a file of a supported type`,
  });
}

/** A UTF-8 text check fed chunk by chunk: a multi-byte character may straddle two chunks. */
function textCheck(): { feed(bytes: Buffer, final: boolean): boolean; offset: number } {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const state = {
    offset: 0,
    feed(bytes: Buffer, final: boolean): boolean {
      try {
        const text = decoder.decode(bytes, { stream: !final });
        if (NOT_TEXT.test(text)) return false;
      } catch {
        return false;
      }
      state.offset += bytes.length;
      return true;
    },
  };
  return state;
}

/**
 * Reads the first bytes of `source` to tell its type by what it is, never by what a caller
 * claims: the magic numbers of `sniffMimeType`, else UTF-8 text without control characters. A
 * text file is checked to its end as it streams, since only the head was seen when its type was
 * decided. Holds at most `HEAD_BYTES` (plus one chunk) before handing the bytes on.
 */
export async function sniffStream(source: AsyncIterable<Buffer>): Promise<SniffedStream> {
  const iterator = source[Symbol.asyncIterator]();
  const held: Buffer[] = [];
  let heldBytes = 0;
  let ended = false;
  while (heldBytes < HEAD_BYTES) {
    const next = await iterator.next();
    if (next.done) {
      ended = true;
      break;
    }
    held.push(next.value);
    heldBytes += next.value.length;
  }
  const head = Buffer.concat(held);
  let mimeType = sniffMimeType(head);
  const text = mimeType === null ? textCheck() : null;
  if (text && head.length > 0 && text.feed(head, ended)) mimeType = 'text/plain';

  async function* body(): AsyncGenerator<Buffer> {
    if (head.length > 0) yield head;
    if (ended) return;
    for (;;) {
      const next = await iterator.next();
      if (next.done) break;
      if (text && !text.feed(next.value, false)) throw notText(text.offset);
      yield next.value;
    }
    // A character cut off by the end of the file.
    if (text && !text.feed(Buffer.alloc(0), true)) throw notText(text.offset);
  }
  return { mimeType, empty: head.length === 0, body: body() };
}
