/**
 * Raw JSON-RPC material for the process layers of the fuzz suite (stdio lines, HTTP bodies): valid requests with
 * hostile tool arguments, junk bytes, invalid UTF-8, huge and deep documents, batches, notifications. A generated item
 * is a recipe; {@link renderItem} turns it into bytes once the run has given it a unique id.
 */
import fc from 'fast-check';
import { candidateText, depth, nastyString, nastyValue, nestedText, requestArgs, jsonText } from './arbitraries.js';

/** How a request's id is written; the run makes every id unique by its position. */
export type IdKind = 'int' | 'string' | 'weird-string' | 'huge-string' | 'negative';

/** One line (stdio) or body (HTTP) of a fuzz run. */
export type Item =
  | { kind: 'request'; idKind: IdKind; suffix: string; method: string; params: unknown }
  | { kind: 'notification'; method: string; params: unknown }
  | { kind: 'batch'; members: { idKind: IdKind | 'none'; suffix: string; method: string; params: unknown }[] }
  | { kind: 'junk'; text: string }
  | { kind: 'bytes'; bytes: number[]; around: string }
  | { kind: 'huge'; size: number; asRequest: boolean; idKind: IdKind; suffix: string }
  | { kind: 'deep'; depth: number; shape: 'array' | 'object'; asRequest: boolean; idKind: IdKind; suffix: string }
  | { kind: 'bad-request'; body: unknown };

const idKind = fc.constantFrom<IdKind>('int', 'int', 'string', 'weird-string', 'huge-string', 'negative');

/** Tool calls with hostile arguments, and the other methods a client may send. */
const requestBody = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      method: fc.constant('tools/call'),
      params: fc.oneof(
        requestArgs.map((args) => ({ name: 'intent_prepare', arguments: args })),
        fc
          .record({ requestId: fc.oneof(fc.uuid(), nastyString), submissionToken: nastyString, candidateText })
          .map((args) => ({ name: 'intent_accept', arguments: args })),
        fc
          .record({ requestId: fc.oneof(fc.uuid(), nastyString), reason: nastyValue })
          .map((args) => ({ name: 'intent_cancel', arguments: args })),
        fc.record({ name: nastyString, arguments: nastyValue }),
        nastyValue,
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ method: fc.constantFrom('ping', 'tools/list'), params: fc.constant(undefined) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      method: fc.constantFrom(
        'initialize',
        'resources/list',
        'prompts/list',
        'logging/setLevel',
        'completion/complete',
      ),
      params: nastyValue,
    }),
  },
  { weight: 1, arbitrary: fc.record({ method: nastyString, params: nastyValue }) },
);

export const item: fc.Arbitrary<Item> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(idKind, fc.string({ maxLength: 8 }), requestBody)
      .map(([k, suffix, body]) => ({ kind: 'request' as const, idKind: k, suffix, ...body })),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('notification' as const),
      method: fc.oneof(
        fc.constantFrom('notifications/initialized', 'notifications/progress', 'notifications/roots/list_changed'),
        nastyString,
      ),
      params: nastyValue,
    }),
  },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.tuple(fc.oneof(idKind, fc.constant('none' as const)), fc.string({ maxLength: 4 }), requestBody), {
        maxLength: 5,
      })
      .map((members) => ({
        kind: 'batch' as const,
        members: members.map(([k, suffix, body]) => ({ idKind: k, suffix, ...body })),
      })),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('junk' as const), text: nastyString }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('bytes' as const),
      bytes: fc.array(fc.constantFrom(0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0xf8, 0x00, 0x0d), {
        minLength: 1,
        maxLength: 16,
      }),
      around: fc.constantFrom('', '{"jsonrpc":"2.0","id":', '{"jsonrpc":"2.0","method":"'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('huge' as const),
      size: fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: 10_000, max: 1_100_000 }) },
        { weight: 1, arbitrary: fc.integer({ min: 1_100_000, max: 5_000_000 }) },
        { weight: 1, arbitrary: fc.integer({ min: 10 * 1024 * 1024 - 64, max: 12 * 1024 * 1024 }) },
      ),
      asRequest: fc.boolean(),
      idKind,
      suffix: fc.constant(''),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('deep' as const),
      depth,
      shape: fc.constantFrom<'array' | 'object'>('array', 'object'),
      asRequest: fc.boolean(),
      idKind,
      suffix: fc.constant(''),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('bad-request' as const),
      body: fc.oneof(
        nastyValue,
        fc.record({ jsonrpc: fc.oneof(fc.constant('1.0'), nastyValue), id: nastyValue, method: nastyValue }),
        fc.record({ jsonrpc: fc.constant('2.0'), id: fc.constantFrom(null, 1.5, true, [], {}), method: nastyString }),
        fc.record({ jsonrpc: fc.constant('2.0'), id: fc.nat(), result: nastyValue }),
      ),
    }),
  },
);

/** A rendered item: its bytes and the ids it carries. */
export interface Rendered {
  bytes: Buffer;
  /**
   * Ids of requests (jsonrpc "2.0", a string method, a string or integer id): JSON-RPC 2.0 owes each one answer, a
   * result or an error, whatever its params are.
   */
  owed: (string | number)[];
  /** Every id present anywhere in the item (answers may carry only these, or null). */
  present: (string | number)[];
  /** The item is over 1 MiB: a protocol error without id is an acceptable answer to it. */
  oversized: boolean;
}

/** Makes the id of the `n`-th request of a run: unique by construction, in the form `kind` asks for. */
export function makeId(kind: IdKind, n: number, suffix: string): string | number {
  switch (kind) {
    case 'int':
      return 1_000 + n;
    case 'negative':
      return -1_000 - n;
    case 'string':
      return `f${n}`;
    case 'weird-string':
      return `f${n}:${suffix}\uD800__proto__`;
    case 'huge-string':
      return `f${n}:${'i'.repeat(100_000)}`;
  }
}

/** JSON text of a JSON-RPC request, written by hand around the params so deep params cannot break the harness. */
function requestText(id: string | number | undefined, method: string, params: unknown): string {
  const head = `{"jsonrpc":"2.0",${id === undefined ? '' : `"id":${JSON.stringify(id)},`}"method":${JSON.stringify(method)}`;
  return params === undefined ? `${head}}` : `${head},"params":${jsonText(params)}}`;
}

/** Renders an item; `next()` hands out the run's next request number. */
export function renderItem(it: Item, next: () => number): Rendered {
  const none: Rendered = { bytes: Buffer.alloc(0), owed: [], present: [], oversized: false };
  switch (it.kind) {
    case 'request': {
      const id = makeId(it.idKind, next(), it.suffix);
      const text = requestText(id, it.method, it.params);
      return { bytes: Buffer.from(text), owed: [id], present: [id], oversized: text.length > 1024 * 1024 };
    }
    case 'notification':
      return { ...none, bytes: Buffer.from(requestText(undefined, it.method, it.params)) };
    case 'batch': {
      const ids: (string | number)[] = [];
      const parts = it.members.map((m) => {
        const id = m.idKind === 'none' ? undefined : makeId(m.idKind, next(), m.suffix);
        if (id !== undefined) ids.push(id);
        return requestText(id, m.method, m.params);
      });
      // Batches are not part of MCP since 2025-06-18: no answer is owed, but none may carry a foreign id.
      return { ...none, bytes: Buffer.from(`[${parts.join(',')}]`), present: ids };
    }
    case 'junk':
      return { ...none, bytes: Buffer.from(it.text.replace(/\n/g, ' ')) };
    case 'bytes':
      return { ...none, bytes: Buffer.concat([Buffer.from(it.around), Buffer.from(it.bytes)]) };
    case 'huge': {
      if (!it.asRequest) return { ...none, bytes: Buffer.from('x'.repeat(it.size)), oversized: true };
      const id = makeId(it.idKind, next(), it.suffix);
      const args = { requestId: 'r', submissionToken: 't', candidateText: 'c'.repeat(it.size) };
      const text = requestText(id, 'tools/call', { name: 'intent_accept', arguments: args });
      return { bytes: Buffer.from(text), owed: [id], present: [id], oversized: text.length > 1024 * 1024 };
    }
    case 'deep': {
      if (!it.asRequest) return { ...none, bytes: Buffer.from(nestedText(it.depth, it.shape)) };
      const id = makeId(it.idKind, next(), it.suffix);
      const text =
        requestText(id, 'tools/call', { name: 'intent_prepare', arguments: { input: 'x', baseline: 0 } }).slice(0, -4) +
        nestedText(it.depth, it.shape) +
        '}}}';
      return { bytes: Buffer.from(text), owed: [id], present: [id], oversized: text.length > 1024 * 1024 };
    }
    case 'bad-request': {
      // Ids of malformed messages live apart from the run's request ids (strings "bad:…", integers below 1000).
      let body = it.body;
      let present: (string | number)[] = [];
      if (body !== null && typeof body === 'object' && 'id' in body) {
        const raw = body.id;
        const id =
          typeof raw === 'string' ? `bad:${raw}` : typeof raw === 'number' && Number.isFinite(raw) ? raw % 1000 : raw;
        body = { ...body, id };
        if (typeof id === 'string' || typeof id === 'number') present = [id];
      }
      return { ...none, bytes: Buffer.from(jsonText(body).replace(/\n/g, ' ')), present };
    }
  }
}
