/**
 * Mounting the adapter's tools on an existing SDK server (spec 04, "Mounting on an existing SDK server").
 *
 * Works with `McpServer` and the low-level `Server` of `@modelcontextprotocol/server`. Mount before `connect()`, after
 * registering your own tools. The server's own `tools/list` / `tools/call` handlers keep answering for its tools: our
 * names go to the adapter, every other name falls through to the original handler unchanged.
 *
 * The SDK keeps request handlers in a map with no public getter; the mount reads the original handlers through the
 * protocol layer's `_getRequestHandler` accessor (the one the SDK's own role classes use) so it can chain them. That is
 * the single place this library touches an SDK internal, and a test pins the behaviour.
 */
import { McpServer, ProtocolError, ProtocolErrorCode, Server, type ServerContext } from '@modelcontextprotocol/server';
import { quoteCaller, toIntentError } from '../core/errors.js';
import { mcpErrors } from './errors.js';
import type { IntentMcpAdapter, IntentMcpSession, ProtocolVersion } from './adapter.js';
import { handoffErrors } from '../engine/replies.js';
import { errorEnvelope } from './envelopes.js';

/** The longest tool name MCP allows (2025-11-25: 1–128 characters). */
const MAX_TOOL_NAME_CHARS = 128;

type StoredHandler = (request: unknown, ctx: ServerContext) => Promise<Record<string, unknown>>;

interface HandlerAccess {
  _getRequestHandler(method: string): StoredHandler | undefined;
}

export interface MountIntentMcpToolsOptions {
  /** Label for each connection's adapter session, shown by the inspector. */
  label?: string;
}

export interface IntentMcpMount {
  /** The tool names the mount added. */
  readonly toolNames: readonly string[];
  /**
   * Closes the adapter session of the current connection, if any: its waiters get `SESSION_CLOSED`, and so does every
   * later call of our tools on this connection (spec 06: "a call on a closed session"). The server stays as it is;
   * the next connection (after the SDK's `onclose`) gets a new adapter session. This is how a server drains: close the
   * mount (or the adapter), let the SDK write the replies, then close the transport.
   */
  close(): Promise<void>;
}

/** A server's existing tool names, read through its own `tools/list` handler (all pages). */
async function existingToolNames(list: StoredHandler | undefined): Promise<string[]> {
  if (list === undefined) return [];
  const names: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1000; page++) {
    const result = await list(
      {
        jsonrpc: '2.0',
        id: `intent-mcp-mount-${page}`,
        method: 'tools/list',
        params: cursor === undefined ? {} : { cursor },
      },
      {} as ServerContext,
    );
    for (const tool of (result['tools'] ?? []) as { name: string }[]) names.push(tool.name);
    cursor = typeof result['nextCursor'] === 'string' ? result['nextCursor'] : undefined;
    if (cursor === undefined) break;
  }
  return names;
}

/**
 * Adds the adapter's tools to an SDK server. Throws `CONFIG_INVALID` (before registering anything) when a tool name is
 * already taken. One adapter session per SDK connection, opened on the first call from the negotiated protocol
 * revision and closed when the connection closes; the SDK's per-request `AbortSignal` becomes `options.signal`.
 */
export async function mountIntentMcpTools(
  adapter: IntentMcpAdapter,
  // eslint-disable-next-line @typescript-eslint/no-deprecated
  server: McpServer | Server,
  options: MountIntentMcpToolsOptions = {},
): Promise<IntentMcpMount> {
  const protocolServer = server instanceof McpServer ? server.server : server;
  // The low-level Server is deprecated for building tools by hand, not for mounting: spec 04 supports both.
  // eslint-disable-next-line @typescript-eslint/no-deprecated
  if (!(protocolServer instanceof Server)) throw mcpErrors.notAServer();
  if (server instanceof McpServer) {
    // McpServer installs its tool handlers lazily on the first registerTool; install them now so that tools registered
    // after the mount join the same handlers instead of colliding with ours.
    const lazy = server as unknown as { setToolRequestHandlers?: () => void };
    try {
      lazy.setToolRequestHandlers?.();
    } catch {
      // Someone already set tools/list by hand; we chain whatever is there.
    }
  }
  const access = protocolServer as unknown as HandlerAccess;
  const originalList = access._getRequestHandler('tools/list');
  const originalCall = access._getRequestHandler('tools/call');

  const existing = new Set(await existingToolNames(originalList));
  const clashes = adapter.tools.map((t) => t.name).filter((n) => existing.has(n));
  if (clashes.length > 0) throw mcpErrors.toolClash(clashes);

  let session: IntentMcpSession | undefined;
  /** Set by `close()`: this connection's calls answer SESSION_CLOSED until the connection itself ends. */
  let closedByOwner = false;
  const closeSession = async (): Promise<void> => {
    const current = session;
    session = undefined;
    if (current !== undefined) await current.close();
  };
  const previousOnclose = protocolServer.onclose;
  protocolServer.onclose = () => {
    closedByOwner = false;
    void closeSession();
    previousOnclose?.();
  };

  protocolServer.registerCapabilities({ tools: protocolServer.getCapabilities().tools ?? {} });
  protocolServer.setRequestHandler('tools/list', async (request, ctx) => {
    const own = originalList === undefined ? { tools: [] } : await originalList(request, ctx);
    const tools = (own['tools'] ?? []) as object[];
    // With a paginated original list, ours go on its last page only, so every tool is listed exactly once.
    const last = typeof own['nextCursor'] !== 'string';
    return { ...own, tools: last ? [...tools, ...adapter.tools] : tools } as never;
  });
  const ours = new Set(adapter.tools.map((t) => t.name));
  protocolServer.setRequestHandler('tools/call', async (request, ctx) => {
    const { name } = request.params;
    if (!ours.has(name)) {
      // A name longer than any tool name may be (MCP: 1–128 characters) names no tool: answer it here, quoting a short
      // prefix, because the SDK's own "Tool <name> not found" would echo a caller's megabytes back.
      if (name.length > MAX_TOOL_NAME_CHARS && !existing.has(name))
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${quoteCaller(name)} not found`);
      // Exact fall-through: every other name goes to the server's own handler, untouched.
      if (originalCall !== undefined) return (await originalCall(request, ctx)) as never;
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${quoteCaller(name)} not found`);
    }
    // One adapter session per connection needs the connection's revision, which is what this accessor reports on both
    // eras (the per-request envelope would only repeat it on 2026-07-28).
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    const version = protocolServer.getNegotiatedProtocolVersion() ?? '';
    if (closedByOwner || (session === undefined && adapter.closed))
      return errorEnvelope(handoffErrors.sessionClosed(), version) as never;
    if (session === undefined) {
      try {
        session = adapter.connect({
          protocolVersion: version as ProtocolVersion,
          ...(options.label === undefined ? {} : { label: options.label }),
        });
      } catch (error) {
        // An unsupported revision, or an adapter closed by its owner: our tools answer with the error, as envelopes.
        return errorEnvelope(toIntentError(error), version) as never;
      }
    }
    const result = await session.callTool(name, request.params.arguments, {
      signal: ctx.mcpReq.signal,
      ...progressOf(request.params._meta?.progressToken, ctx),
    });
    return (result ?? errorEnvelope(toIntentError(new Error('tool vanished')), version)) as never;
  });

  return {
    toolNames: adapter.tools.map((t) => t.name),
    close: () => {
      closedByOwner = true;
      return closeSession();
    },
  };
}

/**
 * `onProgress` for a call whose caller asked for progress (a `progressToken` in `_meta`): each report becomes a
 * `notifications/progress` of the request, so a client that resets its timeout on progress keeps waiting (spec 04).
 */
function progressOf(
  progressToken: unknown,
  ctx: { mcpReq: { notify: (notification: { method: string; params?: Record<string, unknown> }) => Promise<void> } },
): { onProgress?: (report: { progress: number; message: string }) => void } {
  if (typeof progressToken !== 'string' && typeof progressToken !== 'number') return {};
  return {
    onProgress: ({ progress, message }) => {
      // A connection that closed meanwhile cannot take it; the call's own answer reports how it ended.
      ctx.mcpReq
        .notify({ method: 'notifications/progress', params: { progressToken, progress, message } })
        .catch(() => {
          // Nothing to do.
        });
    },
  };
}
