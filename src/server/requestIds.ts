/**
 * JSON-RPC request ids as map keys, for both transports: a request id is a string or a finite number, and `1` and
 * `"1"` are different ids.
 */

/** The key of a JSON-RPC id (`type:value`), or `undefined` for anything that is not a request id. */
export function requestIdKey(id: unknown): string | undefined {
  if (typeof id === 'number' && Number.isFinite(id)) return `number:${id}`;
  if (typeof id === 'string') return `string:${id}`;
  return undefined;
}
