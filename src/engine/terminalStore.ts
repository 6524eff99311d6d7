/**
 * The terminal store (spec 03, "Retention"): one `lru-cache` per adapter holding the terminal replies of finished
 * requests, at most 32 items and 8 MiB counted in UTF-8 bytes. A reply larger than the byte bound is returned to its
 * caller but not retained. Eviction, session close and restart all end in `HANDOFF_NOT_FOUND` on the next accept.
 */
import { LRUCache } from 'lru-cache';
import type { HandoffContext, HandoffState, WaiterAnswer } from '../../machines/handoff.js';

export const STORE_MAX_ITEMS = 32;
export const STORE_MAX_BYTES = 8 * 1024 * 1024;
/** Bytes charged per record for what is not text (ids, hash, state): keeps tiny records from looking free. */
const RECORD_OVERHEAD = 256;

export interface TerminalRecord {
  readonly requestId: string;
  readonly sessionId: string;
  readonly instance: string;
  readonly tokenHash: Buffer;
  readonly state: HandoffState;
  /** The machine context, for answering later events through the machine itself. */
  readonly context: HandoffContext;
  /** The terminal reply to an accept of the last candidate (completed only). */
  readonly reply: { readonly isError: boolean; readonly text: string } | undefined;
  readonly bytes: number;
  readonly finishedAt: number;
  /** How the request ended: what its waiters were told when the machine ended it. */
  readonly ended: WaiterAnswer;
}

export interface TerminalStoreOptions {
  /** Defaults to 32 (spec 03); lower only in tests. */
  maxItems?: number;
  /** Defaults to 8 MiB (spec 03); lower only in tests. */
  maxBytes?: number;
  /** Called when the LRU bound drops a record to make room (not for a session's records dropped on close). */
  onEvict?: (record: TerminalRecord) => void;
}

export interface TerminalStoreUsage {
  items: number;
  maxItems: number;
  bytes: number;
  maxBytes: number;
  /** Records the LRU bound dropped to make room since the store was made (not those dropped by a session close). */
  evictions: number;
}

export function recordBytes(context: HandoffContext, replyText: string | undefined): number {
  return (
    RECORD_OVERHEAD +
    (replyText === undefined ? 0 : Buffer.byteLength(replyText, 'utf8')) +
    (context.candidate === undefined ? 0 : Buffer.byteLength(context.candidate.text, 'utf8'))
  );
}

export class TerminalStore {
  readonly #cache: LRUCache<string, TerminalRecord>;
  readonly maxItems: number;
  readonly maxBytes: number;
  #evictions = 0;

  constructor(options: TerminalStoreOptions = {}) {
    this.maxItems = options.maxItems ?? STORE_MAX_ITEMS;
    this.maxBytes = options.maxBytes ?? STORE_MAX_BYTES;
    const onEvict = options.onEvict;
    this.#cache = new LRUCache<string, TerminalRecord>({
      max: this.maxItems,
      maxSize: this.maxBytes,
      sizeCalculation: (record) => record.bytes,
      dispose: (record: TerminalRecord, _key: string, reason: LRUCache.DisposeReason) => {
        if (reason !== 'evict') return;
        this.#evictions++;
        onEvict?.(record);
      },
    });
  }

  /** Retains a record; returns false when it is larger than the byte bound (the caller still has its reply). */
  put(record: TerminalRecord): boolean {
    if (record.bytes > this.maxBytes) return false;
    this.#cache.set(record.requestId, record);
    return true;
  }

  /** The record, if retained and owned by `sessionId`. Another session's record is indistinguishable from none. */
  get(requestId: string, sessionId: string): TerminalRecord | undefined {
    // peek first: another session's lookup must not even refresh the record's recency.
    const record = this.#cache.peek(requestId);
    return record !== undefined && record.sessionId === sessionId ? this.#cache.get(requestId) : undefined;
  }

  /** Drops every record of a session (spec 04: `session.close()` drops its retained replies). */
  dropSession(sessionId: string): void {
    for (const [key, record] of this.#cache.entries()) if (record.sessionId === sessionId) this.#cache.delete(key);
  }

  clear(): void {
    this.#cache.clear();
  }

  usage(): TerminalStoreUsage {
    return {
      items: this.#cache.size,
      maxItems: this.maxItems,
      bytes: this.#cache.calculatedSize,
      maxBytes: this.maxBytes,
      evictions: this.#evictions,
    };
  }

  records(): TerminalRecord[] {
    return [...this.#cache.values()];
  }
}
