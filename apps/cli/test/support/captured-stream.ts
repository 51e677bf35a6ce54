import { Writable } from 'node:stream';

/** A stdout or stderr that keeps what is written, and says it is (or is not) a terminal. */
export function capturedStream(isTTY = false) {
  let written = '';
  const out = new Writable({
    write(chunk, _encoding, done) {
      written += chunk.toString();
      done();
    },
  }) as unknown as NodeJS.WriteStream;
  out.isTTY = isTTY;
  return { out, written: () => written };
}
