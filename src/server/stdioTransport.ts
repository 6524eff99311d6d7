/**
 * The stdio wire transport the command hands to the SDK's `serveStdio({ transport })`: newline-delimited JSON-RPC on
 * stdin/stdout with a read limit of our own instead of the SDK's fixed 10 MiB buffer, which closes the connection on an
 * oversized line and leaves pending requests unanswered (issue 8, item 7).
 *
 * Reading is linear in the bytes received: a line's chunks are kept in a list and joined once when its newline arrives.
 * A line over the limit is not buffered: its bytes are dropped as they arrive while a constant-memory scanner looks for
 * the top-level `"id"`, and the line is answered with a JSON-RPC error (its id, or `null` when none could be read); the
 * connection keeps serving the lines after it. The transport also counts the requests it delivered and not yet
 * answered, so a graceful shutdown can wait until every caller has its reply on stdout.
 */
import type { Readable, Writable } from 'node:stream';
import {
  parseJSONRPCMessage,
  serializeMessage,
  type JSONRPCMessage,
  type Transport,
} from '@modelcontextprotocol/server';
import { SERVER_DEFAULTS } from './config.js';
import { requestIdKey } from './requestIds.js';
import { boundProtocolError, stdioRefusals, type StdioRefusal } from './errors.js';

/** Longest `id` value (as raw JSON text) the oversize scanner keeps; a longer one is answered with id `null`. */
const MAX_ID_TEXT = 256;

type RequestId = string | number;

export interface StdioLineTransportOptions {
  /** Largest message line in bytes, newline excluded. */
  maxMessageBytes: number;
  /** Default `process.stdin`. */
  input?: Readable;
  /** Default `process.stdout`. */
  output?: Writable;
  /** Told once per refused line (oversized, not JSON, not JSON-RPC), with a short reason; for logs. */
  onRefused?: (reason: string, bytes: number) => void;
  /**
   * When the input ends, how long to wait for the requests already read to be answered before closing. Default
   * `SERVER_DEFAULTS.drainMs` (3000).
   */
  endDrainMs?: number;
  /** Told once when the input has ended and the transport closes after answering what it read (flush logs here). */
  onInputEnded?: () => void;
}

/**
 * Finds the top-level `"id"` member of a JSON object fed to it in pieces, in constant memory: it tracks nesting and
 * string state byte by byte (every structural JSON character is ASCII, so UTF-8 continuation bytes never match one) and
 * keeps at most a few bytes of a key and {@link MAX_ID_TEXT} bytes of the id's value.
 */
class TopLevelIdScanner {
  #depth = 0;
  #inString = false;
  #escaped = false;
  #expectKey = false;
  #key: number[] | undefined;
  #idFollows = false;
  #value: number[] | undefined;
  #done = false;
  #id: RequestId | null = null;

  get id(): RequestId | null {
    return this.#id;
  }

  feed(bytes: Uint8Array): void {
    for (let index = 0; index < bytes.length && !this.#done; index++) this.#byte(bytes[index] ?? 0);
  }

  #byte(byte: number): void {
    if (this.#value !== undefined && this.#depth === 1 && !this.#inString && (byte === 0x2c || byte === 0x7d)) {
      this.#finishValue();
      return;
    }
    if (this.#value !== undefined) {
      if (this.#value.length >= MAX_ID_TEXT) {
        this.#done = true;
        return;
      }
      this.#value.push(byte);
    }
    if (this.#inString) {
      if (this.#escaped) this.#escaped = false;
      else if (byte === 0x5c) this.#escaped = true;
      else if (byte === 0x22) {
        this.#inString = false;
        if (this.#key !== undefined) {
          this.#idFollows = this.#key.length === 2 && this.#key[0] === 0x69 && this.#key[1] === 0x64; // "id"
          this.#key = undefined;
        }
      } else if (this.#key !== undefined && this.#key.length < 3) this.#key.push(byte); // 3 bytes already rule out "id"
      return;
    }
    switch (byte) {
      case 0x22: // "
        this.#inString = true;
        if (this.#depth === 1 && this.#expectKey) {
          this.#key = [];
          this.#expectKey = false;
        }
        return;
      case 0x7b: // {
      case 0x5b: // [
        if (this.#value !== undefined && this.#depth === 1) this.#done = true; // an object or array is no id
        this.#depth++;
        if (this.#depth === 1) {
          if (byte === 0x5b) this.#done = true; // a batch: no single id to answer
          this.#expectKey = true;
        }
        return;
      case 0x7d: // }
      case 0x5d: // ]
        this.#depth--;
        if (this.#depth <= 0) this.#done = true;
        return;
      case 0x2c: // ,
        if (this.#depth === 1) this.#expectKey = true;
        return;
      case 0x3a: // :
        if (this.#depth === 1 && this.#idFollows) {
          this.#idFollows = false;
          this.#value = [];
        }
        return;
      default:
        return;
    }
  }

  #finishValue(): void {
    const text = Buffer.from(this.#value ?? []).toString('utf8');
    this.#value = undefined;
    this.#done = true;
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) this.#id = value;
    } catch {
      // Not a valid id: the error goes out with id null.
    }
  }
}

function errorLine(id: RequestId | null, { code, message, data }: StdioRefusal): string {
  return (
    JSON.stringify({ jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } }) + '\n'
  );
}

/** Answers waiting to be written to stdout beyond which stdin is not read until stdout drains. */
export const MAX_OUTPUT_BACKLOG_BYTES = 16 * 1024 * 1024;

/** Newline-delimited JSON-RPC over stdin/stdout with a bounded, linear-time reader (see the module comment). */
export class StdioLineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #input: Readable;
  readonly #output: Writable;
  readonly #maxMessageBytes: number;
  readonly #onRefused: ((reason: string, bytes: number) => void) | undefined;
  /** The current line's pieces while it is within the limit; joined once at its newline. */
  #pieces: Buffer[] = [];
  #lineBytes = 0;
  /** Set while the rest of an oversized line is being skipped. */
  #skipping: TopLevelIdScanner | undefined;
  #started = false;
  #closed = false;
  /** Requests delivered and not yet answered, by id (a client may reuse an id). */
  readonly #unanswered = new Map<string, number>();
  #unansweredTotal = 0;
  #answeredWaiters: (() => void)[] = [];
  #writesInFlight = 0;
  #flushWaiters: (() => void)[] = [];
  /** True while reading stdin waits for stdout to drain (the client does not read its answers). */
  #pausedForOutput = false;
  #lastInputAt = 0;
  #ending = false;
  readonly #endDrainMs: number;
  readonly #onInputEnded: (() => void) | undefined;

  constructor(options: StdioLineTransportOptions) {
    if (!Number.isSafeInteger(options.maxMessageBytes) || options.maxMessageBytes < 1)
      throw new RangeError('maxMessageBytes must be a positive integer');
    this.#maxMessageBytes = options.maxMessageBytes;
    this.#input = options.input ?? process.stdin;
    this.#output = options.output ?? process.stdout;
    this.#onRefused = options.onRefused;
    this.#endDrainMs = options.endDrainMs ?? SERVER_DEFAULTS.drainMs;
    this.#onInputEnded = options.onInputEnded;
  }

  /** Requests delivered to the server and not answered yet. */
  get unanswered(): number {
    return this.#unansweredTotal;
  }

  /** Bytes of the current line held in memory (never more than the limit; zero while an oversized line is skipped). */
  get buffered(): number {
    return this.#skipping === undefined ? this.#lineBytes : 0;
  }

  /** `Date.now()` when the last bytes arrived on the input. */
  get lastInputAt(): number {
    return this.#lastInputAt;
  }

  start(): Promise<void> {
    if (this.#started) return Promise.reject(new Error('StdioLineTransport already started'));
    this.#started = true;
    this.#input.on('data', this.#onData);
    this.#input.on('end', this.#onEnd);
    this.#input.on('close', this.#onEnd);
    this.#input.on('error', this.#onInputError);
    this.#output.on('error', this.#onOutputError);
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('StdioLineTransport is closed'));
    // A response is what carries an id and no method. Read from the shape: the SDK's is* guards run a zod parse of the
    // whole message, a second serialisation-sized walk of every reply (issue 12).
    if (!('method' in message) && 'id' in message && (typeof message.id === 'string' || typeof message.id === 'number'))
      this.#settle(message.id);
    return this.#write(serializeMessage(boundProtocolError(message)));
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.#input.off('data', this.#onData);
    this.#input.off('end', this.#onEnd);
    this.#input.off('close', this.#onEnd);
    this.#input.off('error', this.#onInputError);
    if (this.#input.listenerCount('data') === 0) this.#input.pause();
    this.#pieces = [];
    this.#skipping = undefined;
    this.#releaseAnsweredWaiters();
    this.onclose?.();
    return Promise.resolve();
  }

  /**
   * Resolves `true` once every delivered request has been answered through {@link send} (or cancelled by the client),
   * `false` when `timeoutMs` passed first or the transport closed with requests unanswered.
   */
  whenAnswered(timeoutMs: number): Promise<boolean> {
    if (this.#unansweredTotal === 0) return Promise.resolve(true);
    if (this.#closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter = (): void => {
        clearTimeout(timer);
        resolve(this.#unansweredTotal === 0);
      };
      const timer = setTimeout(() => {
        this.#answeredWaiters = this.#answeredWaiters.filter((other) => other !== waiter);
        resolve(false);
      }, timeoutMs);
      this.#answeredWaiters.push(waiter);
    });
  }

  /** Resolves once every line written so far has been handed to the operating system. */
  flushed(): Promise<void> {
    if (this.#writesInFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#flushWaiters.push(resolve));
  }

  readonly #onData = (chunk: Buffer | string): void => {
    const data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    this.#lastInputAt = Date.now();
    let start = 0;
    while (start < data.length && !this.#closed) {
      const newline = data.indexOf(0x0a, start);
      const end = newline === -1 ? data.length : newline;
      this.#append(data.subarray(start, end));
      if (newline === -1) break;
      this.#endLine();
      start = newline + 1;
    }
  };

  readonly #onEnd = (): void => {
    if (this.#ending || this.#closed) return;
    this.#ending = true;
    // The client closed its end after writing its requests (`printf ... | intent-mcp`): answer what was read, within
    // a bound, before closing, instead of dropping the requests still in flight.
    void this.whenAnswered(this.#endDrainMs).then(() => {
      this.#onInputEnded?.();
      return this.close();
    });
  };

  readonly #onInputError = (error: Error): void => {
    this.onerror?.(error);
  };

  readonly #onOutputError = (error: Error): void => {
    if (this.#closed) return;
    this.onerror?.(error);
    void this.close();
  };

  #append(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.#skipping !== undefined) {
      this.#lineBytes += piece.length;
      this.#skipping.feed(piece);
      return;
    }
    this.#lineBytes += piece.length;
    if (this.#lineBytes <= this.#maxMessageBytes) {
      this.#pieces.push(piece);
      return;
    }
    // Over the limit: scan what was kept, then drop it and every later byte of this line.
    const scanner = new TopLevelIdScanner();
    for (const kept of this.#pieces) scanner.feed(kept);
    scanner.feed(piece);
    this.#pieces = [];
    this.#skipping = scanner;
  }

  #endLine(): void {
    const size = this.#lineBytes;
    const skipped = this.#skipping;
    const pieces = this.#pieces;
    this.#pieces = [];
    this.#lineBytes = 0;
    this.#skipping = undefined;
    if (skipped !== undefined) {
      this.#refuse(skipped.id, stdioRefusals.oversized(size, this.#maxMessageBytes), size);
      return;
    }
    let value: unknown;
    try {
      const text = (pieces.length === 1 ? (pieces[0] ?? Buffer.alloc(0)) : Buffer.concat(pieces, size)).toString(
        'utf8',
      );
      const line = text.endsWith('\r') ? text.slice(0, -1) : text;
      if (line.trim() === '') return;
      value = JSON.parse(line);
    } catch (error) {
      // A line that cannot even become a string or a value (a limit past what V8 holds) is refused like any other.
      this.#refuse(
        null,
        error instanceof SyntaxError
          ? stdioRefusals.unparsable()
          : stdioRefusals.oversized(size, this.#maxMessageBytes),
        size,
      );
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(value);
    } catch {
      const id = (value as { id?: unknown } | null)?.id;
      this.#refuse(typeof id === 'string' || typeof id === 'number' ? id : null, stdioRefusals.notJsonRpc(), size);
      return;
    }
    // parseJSONRPCMessage has validated the message: a method with an id is a request, without one a notification (the
    // SDK's is* guards would parse it with zod a second time).
    if ('method' in message && 'id' in message) this.#track(message.id);
    else if ('method' in message && message.method === 'notifications/cancelled') {
      // The SDK never answers a request its client cancelled; stop waiting for it.
      const cancelled = (message.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof cancelled === 'string' || typeof cancelled === 'number') this.#settle(cancelled);
    }
    this.onmessage?.(message);
  }

  #refuse(id: RequestId | null, refusal: StdioRefusal, bytes: number): void {
    this.#onRefused?.(refusal.reason, bytes);
    if (this.#closed) return;
    this.#write(errorLine(id, refusal)).catch(() => undefined);
  }

  #track(id: RequestId): void {
    // A parsed line's id is a string or a finite number: always a key.
    const key = requestIdKey(id) ?? String(id);
    this.#unanswered.set(key, (this.#unanswered.get(key) ?? 0) + 1);
    this.#unansweredTotal++;
  }

  #settle(id: RequestId): void {
    const key = requestIdKey(id) ?? String(id);
    const count = this.#unanswered.get(key);
    if (count === undefined) return;
    if (count <= 1) this.#unanswered.delete(key);
    else this.#unanswered.set(key, count - 1);
    this.#unansweredTotal--;
    if (this.#unansweredTotal === 0) this.#releaseAnsweredWaiters();
  }

  #releaseAnsweredWaiters(): void {
    const waiters = this.#answeredWaiters;
    this.#answeredWaiters = [];
    for (const waiter of waiters) waiter();
  }

  #write(line: string): Promise<void> {
    this.#writesInFlight++;
    const written = new Promise<void>((resolve, reject) => {
      this.#output.write(line, (error) => {
        this.#writesInFlight--;
        if (this.#writesInFlight === 0) {
          const waiters = this.#flushWaiters;
          this.#flushWaiters = [];
          for (const waiter of waiters) waiter();
        }
        if (error) reject(error);
        else resolve();
      });
    });
    this.#holdInputWhileBacklogged();
    return written;
  }

  /**
   * Backpressure: while more than {@link MAX_OUTPUT_BACKLOG_BYTES} of answers wait to be written (a client that sends
   * requests and never reads its answers), stdin is not read; reading resumes when stdout drains. Without it such a
   * client grew the server by ~1 GB of queued answers every few seconds, each request small and legal.
   */
  #holdInputWhileBacklogged(): void {
    if (this.#pausedForOutput || this.#closed || this.#output.writableLength <= MAX_OUTPUT_BACKLOG_BYTES) return;
    this.#pausedForOutput = true;
    this.#input.pause();
    this.#output.once('drain', () => {
      this.#pausedForOutput = false;
      if (!this.#closed) this.#input.resume();
    });
  }
}
