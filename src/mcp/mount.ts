/**
 * Mounting the adapter's tools on an existing SDK server (spec 04, "Mounting on an existing SDK server"), on both SDK
 * lines: v2 (`@modelcontextprotocol/server`) and v1 (`@modelcontextprotocol/sdk` 1.x), `McpServer` or the low-level
 * `Server` of either. Mount before `connect()`, after setting up your own tools. The server's own `tools/list` /
 * `tools/call` handlers keep answering for its tools: our names go to the adapter, every other name falls through to
 * the original handler unchanged.
 *
 * Public API wherever the SDKs offer one: on an `McpServer` our names are reserved with `registerTool`, so the SDK
 * itself refuses a tool the application registers later under one of them ("Tool intent_accept is already
 * registered"); the handlers are replaced with `setRequestHandler`. Reading the handlers being chained has no public
 * API on either line: that single touch point is `sdkInternals.ts`.
 */
import { quoteCaller, toIntentError } from '../core/errors.js';
import { mcpErrors } from './errors.js';
import type { IntentMcpAdapter, IntentMcpSession, ProtocolVersion } from './adapter.js';
import { handoffErrors } from '../engine/replies.js';
import { errorEnvelope } from './envelopes.js';
import { sdkLineOf, storedRequestHandler, type SdkLine, type StoredRequestHandler } from './sdkInternals.js';

/** The longest tool name MCP allows (2025-11-25: 1–128 characters). */
const MAX_TOOL_NAME_CHARS = 128;
/** JSON-RPC "Invalid params": what both SDK lines answer for an unknown tool. */
const INVALID_PARAMS = -32602;

/**
 * A protocol-level server as the mount uses it: the low-level `Server` of `@modelcontextprotocol/server` (v2) or of
 * `@modelcontextprotocol/sdk` (v1). Recognised by these public methods (and its SDK line), never by `instanceof`, so a
 * second copy of the SDK (another release, a nested install) mounts like the first.
 */
export interface MountableServer {
  setRequestHandler(...args: never[]): unknown;
  registerCapabilities(...args: never[]): unknown;
  onclose?: (() => void) | undefined;
}

/** An `McpServer` of either SDK line, recognised by its public `server` and `registerTool`. */
export interface MountableMcpServer {
  readonly server: MountableServer;
  registerTool(...args: never[]): unknown;
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

/** The public methods the mount calls, typed loosely enough for both lines. */
interface ProtocolServer {
  setRequestHandler(method: unknown, handler: (request: ToolsRequest, ctx: unknown) => Promise<unknown>): void;
  registerCapabilities(capabilities: { tools: object }): void;
  onclose?: (() => void) | undefined;
  getNegotiatedProtocolVersion?: () => string | undefined;
}
interface ToolsRequest {
  params?: { name?: unknown; arguments?: unknown; cursor?: string; protocolVersion?: string; _meta?: unknown };
}
interface ToolsMcpServer {
  server: ProtocolServer;
  registerTool(name: string, config: { title?: string; description?: string }, cb: () => unknown): { remove(): void };
}

/** How one SDK line names the methods in `setRequestHandler` (v2: strings; v1: its own request schemas). */
interface LineMethods {
  list: unknown;
  call: unknown;
  initialize: unknown;
}

async function lineMethods(line: SdkLine): Promise<LineMethods> {
  if (line === 'v2') return { list: 'tools/list', call: 'tools/call', initialize: 'initialize' };
  try {
    // v1 keys handlers by zod request schemas: its own, from the optional peer the application already uses.
    const v1 = await import('@modelcontextprotocol/sdk/types.js');
    return { list: v1.ListToolsRequestSchema, call: v1.CallToolRequestSchema, initialize: v1.InitializeRequestSchema };
  } catch {
    throw mcpErrors.v1Unavailable();
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null;
}

function isProtocolServer(value: unknown): value is ProtocolServer {
  return (
    isObject(value) &&
    typeof value['setRequestHandler'] === 'function' &&
    typeof value['registerCapabilities'] === 'function'
  );
}

function isMcpServer(value: unknown): value is ToolsMcpServer {
  return isObject(value) && typeof value['registerTool'] === 'function' && isProtocolServer(value['server']);
}

/** A server's existing tool names, read through its own `tools/list` handler (all pages). */
async function existingToolNames(list: StoredRequestHandler | undefined): Promise<string[]> {
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
      {},
    );
    for (const tool of (result['tools'] ?? []) as { name: string }[]) names.push(tool.name);
    cursor = typeof result['nextCursor'] === 'string' ? result['nextCursor'] : undefined;
    if (cursor === undefined) break;
  }
  return names;
}

/**
 * Reserves our names on an `McpServer` through `registerTool`, so the SDK refuses a later registration under one of
 * them; this also makes the `McpServer` install its own tool handlers now, which the mount then chains. The
 * placeholders are never listed or called: the mount's handlers answer for our names first. When the server's tool
 * handlers were set by hand on its low-level `server`, `registerTool` fails for that reason and the mount chains them.
 */
function reserveNames(server: ToolsMcpServer, adapter: IntentMcpAdapter): void {
  const reserved: { remove(): void }[] = [];
  for (const tool of adapter.tools) {
    try {
      reserved.push(
        server.registerTool(tool.name, { title: tool.title, description: tool.description }, () => {
          throw mcpErrors.bug(`the placeholder of ${tool.name} was called`);
        }),
      );
    } catch (error) {
      for (const placeholder of reserved.reverse()) placeholder.remove();
      // A registered (perhaps disabled, hence unlisted) tool of the same name.
      if (error instanceof Error && /already registered/i.test(error.message)) throw mcpErrors.toolClash([tool.name]);
      return;
    }
  }
}

/** The connection's negotiated revision: v2 reports it; on v1 the mount records the `initialize` answer. */
function negotiatedVersion(server: ProtocolServer, line: SdkLine, methods: LineMethods): () => string {
  if (line === 'v2') {
    return () => server.getNegotiatedProtocolVersion?.() ?? '';
  }
  let version = '';
  const initialize = storedRequestHandler(server, line, 'initialize');
  if (initialize !== undefined)
    server.setRequestHandler(methods.initialize, async (request, extra) => {
      const result = await initialize(request, extra);
      version = typeof result['protocolVersion'] === 'string' ? result['protocolVersion'] : '';
      return result;
    });
  onConnectionClose(server, () => {
    version = '';
  });
  return () => version;
}

/** What each server's `onclose` runs for the mounts on it (see {@link onConnectionClose}). */
const closeHooks = new WeakMap<object, (() => void)[]>();

/**
 * Runs `hook` whenever the server's connection closes, whatever the application does with the server's public
 * `onclose` afterwards. A plain wrapper was lost when an application assigned `onclose` after mounting: the adapter
 * session was never closed, its requests stayed live, and the next connection inherited them. So `onclose` becomes an
 * accessor: reading it gives a handler that runs the mount's hooks, then the application's own handler (set before or
 * after the mount) as it was when read; assigning it replaces only the application's handler. An application that
 * chains by hand (`const prev = server.onclose; server.onclose = () => { prev(); mine(); }`) keeps its predecessor,
 * and the hooks still run once per close.
 */
function onConnectionClose(server: ProtocolServer, hook: () => void): void {
  let hooks = closeHooks.get(server);
  if (hooks === undefined) {
    const list: (() => void)[] = [];
    hooks = list;
    closeHooks.set(server, list);
    let own = server.onclose;
    let running = false;
    // What reading `onclose` gives: the hooks (once per close, however the handlers nest), then the application's
    // handler as it was when read, so one that chains what it read before calls its predecessor.
    const handlerFor = (captured: (() => void) | undefined) => (): void => {
      const outermost = !running;
      running = true;
      try {
        if (outermost) for (const run of list) run();
        captured?.();
      } finally {
        if (outermost) running = false;
      }
    };
    Object.defineProperty(server, 'onclose', {
      configurable: true,
      enumerable: true,
      get: () => handlerFor(own),
      set: (value: unknown) => {
        own = typeof value === 'function' ? (value as () => void) : undefined;
      },
    });
  }
  hooks.push(hook);
}

function signalOf(ctx: unknown): AbortSignal | undefined {
  if (!isObject(ctx)) return undefined;
  // v2: ctx.mcpReq.signal; v1: extra.signal.
  const request = ctx['mcpReq'];
  const signal = isObject(request) ? request['signal'] : ctx['signal'];
  return signal instanceof AbortSignal ? signal : undefined;
}

function toolNotFound(name: string): Error {
  return Object.assign(new Error(`Tool ${quoteCaller(name)} not found`), { code: INVALID_PARAMS });
}

/**
 * Adds the adapter's tools to an SDK server: an `McpServer` or a low-level `Server`, of `@modelcontextprotocol/server`
 * (v2) or `@modelcontextprotocol/sdk` 1.x (v1), recognised by its public shape (never `instanceof`, so another copy or
 * release of the SDK mounts too). Throws `CONFIG_INVALID` (before registering anything) when a tool name is already
 * taken; on an `McpServer` a tool registered after the mount under one of our names is refused by the SDK's
 * `registerTool`. On a low-level `Server`, set your `tools/list` / `tools/call` handlers before mounting; a name of
 * ours that your handler lists later is left out of the list (calls of our names reach the adapter), so no tool is
 * ever listed twice.
 *
 * One adapter session per SDK connection, opened on the first call from the negotiated protocol revision and closed
 * when the connection closes; the SDK's per-request `AbortSignal` becomes `options.signal`. The mount does not add
 * the bundled Skill: that is the application's choice (README, "Mounting").
 */
export async function mountIntentMcpTools(
  adapter: IntentMcpAdapter,
  server: MountableMcpServer | MountableServer,
  options: MountIntentMcpToolsOptions = {},
): Promise<IntentMcpMount> {
  const mcpServer = isMcpServer(server) ? server : undefined;
  const protocolServer = mcpServer?.server ?? (isProtocolServer(server) ? server : undefined);
  const line = protocolServer === undefined ? undefined : sdkLineOf(protocolServer);
  if (protocolServer === undefined || line === undefined) throw mcpErrors.notAServer();
  // Mounting needs the server before it connects (the SDK refuses new capabilities after): refused before anything is
  // registered, so a later mount on the same server, done right, finds no half-registered tool of ours.
  if ((protocolServer as { transport?: unknown }).transport !== undefined) throw mcpErrors.alreadyConnected();
  const methods = await lineMethods(line);
  const ours = new Set(adapter.tools.map((t) => t.name));

  const existing = new Set(await existingToolNames(storedRequestHandler(protocolServer, line, 'tools/list')));
  const clashes = adapter.tools.map((t) => t.name).filter((n) => existing.has(n));
  if (clashes.length > 0) throw mcpErrors.toolClash(clashes);
  if (mcpServer !== undefined) reserveNames(mcpServer, adapter);
  // Read after the reservation: an McpServer installs its handlers on its first registerTool.
  const originalList = storedRequestHandler(protocolServer, line, 'tools/list');
  const originalCall = storedRequestHandler(protocolServer, line, 'tools/call');
  const versionOf = negotiatedVersion(protocolServer, line, methods);

  let session: IntentMcpSession | undefined;
  /** Set by `close()`: this connection's calls answer SESSION_CLOSED until the connection itself ends. */
  let closedByOwner = false;
  const closeSession = async (): Promise<void> => {
    const current = session;
    session = undefined;
    if (current !== undefined) await current.close();
  };
  onConnectionClose(protocolServer, () => {
    closedByOwner = false;
    void closeSession();
  });

  // Both lines merge capabilities key by key, so whatever `tools` already declares (listChanged) stays.
  protocolServer.registerCapabilities({ tools: {} });
  protocolServer.setRequestHandler(methods.list, async (request, ctx) => {
    const own = originalList === undefined ? { tools: [] } : await originalList(request, ctx);
    // Our placeholders (McpServer) and any name of ours a hand-written handler lists later: ours are the real ones.
    const tools = ((own['tools'] ?? []) as { name?: unknown }[]).filter(
      (t) => typeof t.name !== 'string' || !ours.has(t.name),
    );
    // With a paginated original list, ours go on its last page only, so every tool is listed exactly once.
    const last = typeof own['nextCursor'] !== 'string';
    return { ...own, tools: last ? [...tools, ...adapter.tools] : tools };
  });
  protocolServer.setRequestHandler(methods.call, async (request, ctx) => {
    const name = typeof request.params?.name === 'string' ? request.params.name : '';
    if (!ours.has(name)) {
      // A name longer than any tool name may be (MCP: 1–128 characters) names no tool: answer it here, quoting a short
      // prefix, because the SDK's own "Tool <name> not found" would echo a caller's megabytes back.
      if (name.length > MAX_TOOL_NAME_CHARS && !existing.has(name)) throw toolNotFound(name);
      // An McpServer keeps its tools in a plain object: "__proto__", "constructor" or "toString" find Object.prototype's
      // members there, so the SDK answers "Tool constructor disabled" (and its registerTool refuses such a name as
      // "already registered", so none can be an application's tool): they are simply not found.
      if (mcpServer !== undefined && name in Object.prototype) throw toolNotFound(name);
      // Exact fall-through: every other name goes to the server's own handler, untouched.
      if (originalCall !== undefined) return originalCall(request, ctx);
      throw toolNotFound(name);
    }
    const version = versionOf();
    if (closedByOwner || (session === undefined && adapter.closed))
      return errorEnvelope(handoffErrors.sessionClosed(), version);
    if (session === undefined) {
      try {
        session = adapter.connect({
          protocolVersion: version as ProtocolVersion,
          ...(options.label === undefined ? {} : { label: options.label }),
        });
      } catch (error) {
        // An unsupported revision, or an adapter closed by its owner: our tools answer with the error, as envelopes.
        return errorEnvelope(toIntentError(error), version);
      }
    }
    const signal = signalOf(ctx);
    const result = await session.callTool(name, request.params?.arguments, {
      ...(signal === undefined ? {} : { signal }),
      ...progressOf(request.params?._meta, ctx),
    });
    return result ?? errorEnvelope(toIntentError(new Error('tool vanished')), version);
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
 * Longest string progress token answered with notifications. MCP echoes the token as sent, so a longer one is not cut
 * but ignored: a 4 MiB token was written again with every report, every 5 s, into each unread stream.
 */
export const MAX_PROGRESS_TOKEN_CHARS = 256;

/**
 * Progress for `intent_parse` when the caller sent a progress token (spec 04): each report becomes a
 * `notifications/progress` on the caller's request, through the SDK's per-request notifier (v2 `ctx.mcpReq.notify`,
 * v1 `extra.sendNotification`). A string token longer than {@link MAX_PROGRESS_TOKEN_CHARS} gets no notifications.
 */
function progressOf(
  meta: unknown,
  ctx: unknown,
): { onProgress?: (report: { progress: number; message: string }) => void } {
  const progressToken = isObject(meta) ? meta['progressToken'] : undefined;
  if (typeof progressToken !== 'string' && typeof progressToken !== 'number') return {};
  if (typeof progressToken === 'string' && progressToken.length > MAX_PROGRESS_TOKEN_CHARS) return {};
  const notify = notifierOf(ctx);
  if (notify === undefined) return {};
  return {
    onProgress: ({ progress, message }) => {
      // A connection that closed meanwhile cannot take it; the call's own answer reports how it ended.
      notify({ method: 'notifications/progress', params: { progressToken, progress, message } }).catch(() => {
        // Nothing to do.
      });
    },
  };
}

type Notify = (notification: { method: string; params?: Record<string, unknown> }) => Promise<void>;

function notifierOf(ctx: unknown): Notify | undefined {
  if (!isObject(ctx)) return undefined;
  const request = ctx['mcpReq'];
  if (isObject(request) && typeof request['notify'] === 'function') {
    const notify = request['notify'] as Notify;
    return (n) => notify.call(request, n);
  }
  const send = ctx['sendNotification'];
  return typeof send === 'function' ? (n) => (send as Notify)(n) : undefined;
}
