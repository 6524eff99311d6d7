/**
 * Reads trace files line by line, streaming (a 1 GB trace is never loaded whole) and bounded: a line longer than the cap
 * is not accumulated but skipped to its end and reported as oversized, so memory stays at one chunk plus one line
 * whatever the file holds. Linear in the file's size: each byte is looked at once by `indexOf`.
 */
import { createReadStream } from 'node:fs';
import { MAX_TRACE_LINE_BYTES } from './format.js';

/** One line of a trace file, numbered from 1 within its file. */
export type TraceLine =
  | { file: string; line: number; text: string; oversized?: undefined }
  | { file: string; line: number; text?: undefined; oversized: number };

/** Calls `onLine` for every line of every file, in order. Rejects when a file cannot be read. */
export async function readTraceLines(
  files: readonly string[],
  onLine: (line: TraceLine) => void,
  maxLineBytes = MAX_TRACE_LINE_BYTES,
): Promise<void> {
  for (const file of files) {
    let lineNo = 0;
    let pieces: Buffer[] = [];
    let pieceBytes = 0;
    /** Bytes of the current line when it went over the cap (then nothing more of it is kept). */
    let skipped = -1;
    const end = (last: Buffer): void => {
      lineNo++;
      if (skipped >= 0) {
        onLine({ file, line: lineNo, oversized: skipped + last.length });
      } else if (pieceBytes + last.length > maxLineBytes) {
        onLine({ file, line: lineNo, oversized: pieceBytes + last.length });
      } else {
        const whole = pieces.length === 0 ? last : Buffer.concat([...pieces, last]);
        let text = whole.toString('utf8');
        if (text.endsWith('\r')) text = text.slice(0, -1);
        onLine({ file, line: lineNo, text });
      }
      pieces = [];
      pieceBytes = 0;
      skipped = -1;
    };
    const stream = createReadStream(file, { highWaterMark: 1024 * 1024 });
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let start = 0;
      for (;;) {
        const newline = chunk.indexOf(10, start);
        if (newline === -1) break;
        end(chunk.subarray(start, newline));
        start = newline + 1;
      }
      if (start < chunk.length) {
        const rest = chunk.subarray(start);
        if (skipped >= 0) skipped += rest.length;
        else if (pieceBytes + rest.length > maxLineBytes) {
          skipped = pieceBytes + rest.length;
          pieces = [];
          pieceBytes = 0;
        } else {
          // A copy: the stream may reuse its chunk's memory.
          pieces.push(Buffer.from(rest));
          pieceBytes += rest.length;
        }
      }
    }
    if (pieceBytes > 0 || skipped >= 0) end(Buffer.alloc(0));
  }
}
