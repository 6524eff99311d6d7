/**
 * The trace writer behind `--trace FILE` (issue 11): every transition record appended to FILE as one JSON line, after a
 * header line (`format.ts`). Records are buffered and written asynchronously, one write in flight at a time, so the
 * request path only pays a `JSON.stringify` and an array push. FILE is rotated at `maxBytes` (one rotated file kept,
 * `FILE.1`). A path that cannot be opened refuses at construction; a write that fails later (a full disk: ENOSPC) drops
 * the records it carried and logs one rate-limited warning, never a crash and never a stall.
 */
import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  openSync,
  write as fsWrite,
  close as fsClose,
  rename as fsRename,
  open as fsOpen,
} from 'node:fs';
import { IntentError, quoteCaller } from '../core/errors.js';
import type { HandoffTransition } from '../engine/inspection.js';
import { rateLimitedLog, type Logger, type RateLimitedLog } from '../server/logger.js';
import { headerLine } from './format.js';

/** Default size bound of a trace file before it is rotated: 64 MiB. */
export const TRACE_MAX_BYTES_DEFAULT = 64 * 1024 * 1024;
/** Smallest accepted bound: a header and a few hundred records. */
export const TRACE_MAX_BYTES_MIN = 64 * 1024;
/** Buffered bytes that trigger a write at once instead of at the next tick of the flush timer. */
const FLUSH_BYTES = 64 * 1024;
/** The flush timer: buffered records reach the file at most this late. */
const FLUSH_INTERVAL_MS = 100;
/** Buffered bytes beyond which new records are dropped while the disk lags (bounded memory, never a stall). */
const MAX_PENDING_BYTES = 8 * 1024 * 1024;
/**
 * How the trace file is opened: append, create, and non-blocking so that a FIFO without a reader fails at once (ENXIO)
 * instead of blocking the process forever in `open`; for a regular file O_NONBLOCK changes nothing.
 */
const OPEN_FLAGS = fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT | fsConstants.O_NONBLOCK;

export interface TraceWriterOptions {
  /** Rotate when the file would exceed this many bytes. Default {@link TRACE_MAX_BYTES_DEFAULT}. */
  maxBytes?: number;
  /** Where write failures are reported (warn, rate-limited to one line a minute plus a count of suppressed ones). */
  logger: Logger;
}

/** What the writer did, for tests and the shutdown log line. */
export interface TraceWriterStats {
  records: number;
  dropped: number;
  rotations: number;
  writeErrors: number;
}

/** The command's refusals about tracing (`CONFIG_INVALID`: one stderr line, exit 2). */
export const traceErrors = {
  notRegular: (path: string) =>
    new IntentError(
      'CONFIG_INVALID',
      `The trace file ${quoteCaller(path)} is neither a regular file nor a character device (a FIFO, socket or block device); choose a file path for --trace.`,
    ),
  unwritable: (path: string, reason: string) =>
    new IntentError(
      'CONFIG_INVALID',
      `Cannot write the trace file ${quoteCaller(path)} (${reason}); choose a writable --trace path.`,
    ),
  maxBytesWithoutTrace: () =>
    new IntentError('CONFIG_INVALID', '--trace-max-bytes needs --trace FILE (the file it bounds).'),
};
const traceRefused = traceErrors.unwritable;

/** Checks `--trace-max-bytes`: an integer of at least {@link TRACE_MAX_BYTES_MIN}. */
export function checkTraceMaxBytes(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < TRACE_MAX_BYTES_MIN)
    throw new IntentError(
      'CONFIG_INVALID',
      `--trace-max-bytes must be an integer of at least ${TRACE_MAX_BYTES_MIN} (got ${String(value).slice(0, 40)}).`,
    );
  return value;
}

export class TraceWriter {
  readonly path: string;
  readonly maxBytes: number;
  readonly #warn: RateLimitedLog;
  #fd: number;
  /** Bytes in the current file (what it held when opened plus what was written since). */
  #size: number;
  /** Only a regular file is rotated: a character device (`/dev/null`, `/dev/full`) is written to, never renamed. */
  readonly #rotates: boolean;
  #pending: string[] = [];
  #pendingBytes = 0;
  #writing: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #stats: TraceWriterStats = { records: 0, dropped: 0, rotations: 0, writeErrors: 0 };
  readonly #onBeforeExit = (): void => {
    if (this.#pending.length > 0) void this.flush();
  };

  /**
   * Opens FILE for appending and writes the header line. Throws `CONFIG_INVALID` (the command: one line, exit 2) when
   * the path cannot be opened for writing or `maxBytes` is out of range.
   */
  constructor(path: string, options: TraceWriterOptions) {
    if (typeof path !== 'string' || path === '') throw traceRefused(path, 'no path');
    this.path = path;
    this.maxBytes = checkTraceMaxBytes(options.maxBytes ?? TRACE_MAX_BYTES_DEFAULT);
    // A warning a minute at most: a full disk fails every flush.
    this.#warn = rateLimitedLog(options.logger, 1);
    try {
      // Opening at start (synchronously, once) is the check: an unwritable path refuses before anything is served.
      this.#fd = openSync(path, OPEN_FLAGS, 0o666);
    } catch (error) {
      throw traceRefused(path, (error as NodeJS.ErrnoException).code ?? 'cannot open');
    }
    let kind: 'file' | 'device' | 'other';
    try {
      const stat = fstatSync(this.#fd);
      kind = stat.isFile() ? 'file' : stat.isCharacterDevice() ? 'device' : 'other';
      this.#size = kind === 'file' ? stat.size : 0;
    } catch (error) {
      closeSync(this.#fd);
      throw traceRefused(path, (error as NodeJS.ErrnoException).code ?? 'cannot stat');
    }
    // A FIFO (non-blocking, it would drop partial lines), a socket or a block device is no trace file.
    if (kind === 'other') {
      closeSync(this.#fd);
      throw traceErrors.notRegular(path);
    }
    // Rotation renames FILE: run as root with --trace /dev/null it would move the device away and leave a regular
    // file in its place. A device is never rotated.
    this.#rotates = kind === 'file';
    this.#enqueue(headerLine());
    // A process that ends because its event loop ran dry (stdin closed) still gets its last records written.
    process.on('beforeExit', this.#onBeforeExit);
  }

  /** The inspection listener: appends one record. Never throws, never waits. */
  readonly record = (step: HandoffTransition): void => {
    if (this.#closed) return;
    if (this.#pendingBytes >= MAX_PENDING_BYTES) {
      this.#stats.dropped++;
      this.#warn('trace records dropped: the trace file is not keeping up', {
        path: this.path,
        pending: this.#pendingBytes,
      });
      return;
    }
    this.#stats.records++;
    this.#enqueue(JSON.stringify(step) + '\n');
  };

  get stats(): TraceWriterStats {
    return { ...this.#stats };
  }

  /** Writes everything buffered so far; resolves when it is on its way to the file (or dropped on a write error). */
  async flush(): Promise<void> {
    while (this.#writing !== undefined || this.#pending.length > 0) {
      if (this.#writing !== undefined) await this.#writing;
      else this.#startWrite();
    }
  }

  /** Flushes and closes the file. Idempotent; records arriving afterwards are ignored. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.flush();
    this.#closed = true;
    process.off('beforeExit', this.#onBeforeExit);
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#warn.flush();
    await new Promise<void>((resolve) => {
      fsClose(this.#fd, () => {
        resolve();
      });
    });
  }

  #enqueue(line: string): void {
    this.#pending.push(line);
    this.#pendingBytes += line.length;
    if (this.#writing !== undefined) return;
    if (this.#pendingBytes >= FLUSH_BYTES) this.#startWrite();
    else this.#enqueueTimer();
  }

  /** Takes the buffered lines and writes them, rotating at the bound; schedules the next write when more arrived. */
  #startWrite(): void {
    const lines = this.#pending;
    this.#pending = [];
    this.#pendingBytes = 0;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#writing = this.#writeLines(lines).finally(() => {
      this.#writing = undefined;
      if (this.#pending.length > 0 && !this.#closed) {
        if (this.#pendingBytes >= FLUSH_BYTES) this.#startWrite();
        else this.#enqueueTimer();
      }
    });
  }

  /** Writes what is buffered at the next tick of the flush timer (unref'd: it never keeps the process alive). */
  #enqueueTimer(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#writing === undefined && this.#pending.length > 0) this.#startWrite();
    }, FLUSH_INTERVAL_MS);
    this.#timer.unref();
  }

  async #writeLines(lines: string[]): Promise<void> {
    let chunk: string[] = [];
    let chunkBytes = 0;
    for (const line of lines) {
      const bytes = Buffer.byteLength(line, 'utf8');
      if (this.#rotates && this.#size + chunkBytes + bytes > this.maxBytes && this.#size + chunkBytes > 0) {
        await this.#writeChunk(chunk);
        chunk = [];
        chunkBytes = 0;
        await this.#rotate();
        // Every file starts with its own header, so FILE and FILE.1 can each be read alone.
        const header = headerLine();
        chunk.push(header);
        chunkBytes += Buffer.byteLength(header, 'utf8');
      }
      chunk.push(line);
      chunkBytes += bytes;
    }
    await this.#writeChunk(chunk);
  }

  async #writeChunk(chunk: string[]): Promise<void> {
    if (chunk.length === 0) return;
    const buffer = Buffer.from(chunk.join(''), 'utf8');
    let offset = 0;
    try {
      while (offset < buffer.length) {
        offset += await new Promise<number>((resolve, reject) => {
          fsWrite(this.#fd, buffer, offset, buffer.length - offset, null, (error, written) => {
            if (error === null) resolve(written);
            else reject(error);
          });
        });
      }
      this.#size += buffer.length;
    } catch (error) {
      // Whatever was written stays; the rest of this chunk is dropped. Counting its records is enough for the warning.
      this.#size += offset;
      const lost = chunk.length;
      this.#stats.dropped += lost;
      this.#stats.writeErrors++;
      this.#warn('trace write failed; records dropped', {
        path: this.path,
        code: (error as NodeJS.ErrnoException).code ?? 'error',
        dropped: this.#stats.dropped,
      });
    }
  }

  /** FILE becomes FILE.1 (replacing the previous one) and a new FILE is opened. On failure, keeps writing where it was. */
  async #rotate(): Promise<void> {
    try {
      await new Promise<void>((resolve, reject) => {
        fsRename(this.path, this.path + '.1', (error) => {
          if (error === null) resolve();
          else reject(error);
        });
      });
      const fd = await new Promise<number>((resolve, reject) => {
        // Non-blocking: whatever now sits at the path (a FIFO put there meanwhile) never holds a thread in open.
        fsOpen(this.path, OPEN_FLAGS, 0o666, (error, opened) => {
          if (error === null) resolve(opened);
          else reject(error);
        });
      });
      const old = this.#fd;
      this.#fd = fd;
      fsClose(old, () => undefined);
      this.#stats.rotations++;
    } catch (error) {
      this.#warn('trace rotation failed; writing on in the same file', {
        path: this.path,
        code: (error as NodeJS.ErrnoException).code ?? 'error',
      });
    }
    // Either way the bound counts from here: a failed rotation must not retry on every write.
    this.#size = 0;
  }
}
