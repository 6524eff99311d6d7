/**
 * The one place this library reaches past an MCP SDK's public API (spec 04, "Mounting on an existing SDK server").
 *
 * Mounting chains the server's own `tools/list` / `tools/call` handlers, and no SDK line has a public getter for a
 * stored request handler: v2 (`@modelcontextprotocol/server`) keeps them behind the protected `_getRequestHandler`
 * accessor (the one its own role classes use), v1 (`@modelcontextprotocol/sdk`) in the private `_requestHandlers` map.
 * Everything else the mount does goes through public methods (`registerTool`, `setRequestHandler`,
 * `registerCapabilities`, `onclose`). `test/mcp/mount.test.ts` (v2) and `test/mcp/mountV1.test.ts` (v1) pin it.
 *
 * Which line a server belongs to is read from the same place, so a second copy of either SDK (another release, a
 * nested install) is recognised by its shape, never by `instanceof`.
 */

/** A stored request handler: it takes the raw JSON-RPC request and the SDK's per-request context (v2 `ctx`, v1 `extra`). */
export type StoredRequestHandler = (request: unknown, ctx: unknown) => Promise<Record<string, unknown>>;

/** `'v2'`: `@modelcontextprotocol/server`; `'v1'`: `@modelcontextprotocol/sdk` 1.x. */
export type SdkLine = 'v1' | 'v2';

interface V2Internals {
  _getRequestHandler(method: string): StoredRequestHandler | undefined;
}
interface V1Internals {
  _requestHandlers: Map<string, StoredRequestHandler>;
}

/** The SDK line of a protocol-level server (v2 `Server`, v1 `Server`), or `undefined` for anything else. */
export function sdkLineOf(server: object): SdkLine | undefined {
  if (typeof (server as Partial<V2Internals>)._getRequestHandler === 'function') return 'v2';
  if ((server as Partial<V1Internals>)._requestHandlers instanceof Map) return 'v1';
  return undefined;
}

/** The handler a server has stored for `method`, if any. */
export function storedRequestHandler(server: object, line: SdkLine, method: string): StoredRequestHandler | undefined {
  if (line === 'v2') return (server as V2Internals)._getRequestHandler(method);
  return (server as V1Internals)._requestHandlers.get(method);
}
