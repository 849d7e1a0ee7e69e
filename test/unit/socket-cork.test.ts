import { Writable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { corkForTurn } from '../../services/platform/socket-cork';

/** A stream that records each system-call-sized write it is handed: one entry per `_write` or `_writev`. */
function recording(): { stream: Writable; calls: string[][] } {
  const calls: string[][] = [];
  const stream = new Writable({
    decodeStrings: false,
    write(chunk: string, _encoding, done) {
      calls.push([chunk]);
      done();
    },
    writev(chunks, done) {
      calls.push(chunks.map(({ chunk }) => chunk as string));
      done();
    },
  });
  return { stream, calls };
}

describe('corkForTurn', () => {
  it("sends a turn's writes together once its callbacks and continuations have run, and the next turn's apart", async () => {
    const { stream, calls } = recording();
    corkForTurn(stream);
    stream.write('a');
    await Promise.resolve();
    corkForTurn(stream);
    stream.write('b');
    await Promise.resolve();
    stream.write('c');
    expect(calls).toEqual([]);
    await nextTurn();
    expect(calls).toEqual([['a', 'b', 'c']]);
    expect(stream.writableCorked).toBe(0);
    corkForTurn(stream);
    stream.write('d');
    await nextTurn();
    expect(calls).toEqual([['a', 'b', 'c'], ['d']]);
  });

  it("leaves a stream its owner corked alone: the owner's uncork sends everything, nothing stays held", async () => {
    const { stream, calls } = recording();
    stream.cork();
    stream.write('owner');
    corkForTurn(stream);
    stream.write('ours');
    expect(stream.writableCorked).toBe(1);
    stream.uncork();
    expect(calls).toEqual([['owner', 'ours']]);
    await nextTurn();
    expect(stream.writableCorked).toBe(0);
  });
});
