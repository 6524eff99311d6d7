/**
 * Stateful Streamable HTTP for 2025-06-18 and 2025-11-25 (spec 05, "HTTP"): one SDK transport + server + adapter session
 * per MCP session, kept in a map by `Mcp-Session-Id`. GET opens the SSE stream; DELETE ends the session; a dropped
 * stream is not a close; unknown sessions get 404; at most `maxSessions` (503 + `Retry-After`); idle sessions are
 * reclaimed; `GET /healthz` answers outside the MCP path; bodies over 4 MiB get 413. Host and Origin are checked
 * before any MCP processing (403), against the public origin and the local diagnostic addresses only.
 *
 * Against hostile clients (issue 8): the session id is checked before a body is read; bodies are read within a
 * deadline and a server-wide budget of buffered bytes (503 beyond); headers have their own deadline; a session that
 * never gets past its handshake is reclaimed after `sessionInitIdleMs` rather than `sessionIdleMs`; refusal logs are
 * rate-limited; DELETE and shutdown drain (waiters are answered `SESSION_CLOSED` before the streams close); and a
 * listener bound to an unspecified address without a public origin is closed before it serves anything.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { IntentMcpAdapter } from '../mcp/adapter.js';
import { SERVER_DEFAULTS, allowedHostsAndOrigins, isUnspecifiedAddress, type PublicOrigin } from './config.js';
import { serverErrors } from './errors.js';
import { BodyBudget, BodyRefused, MAX_BODY_BYTES, readBody } from './httpBody.js';
import { rateLimitedLog, type Logger } from './logger.js';
import { LEGACY_VERSIONS, createMountedServer, type MountedServer } from './mcpServer.js';

export { MAX_BODY_BYTES } from './httpBody.js';

/** How long a DELETE waits for its session's in-flight POSTs to be answered before closing anyway. */
const DELETE_DRAIN_MS = SERVER_DEFAULTS.drainMs;

export interface HttpServeOptions {
  host: string;
  port: number;
  path: string;
  publicOrigin: PublicOrigin | undefined;
  /** Most live sessions, integer ≥ 1. */
  maxSessions: number;
  /** A session with no request in flight for this long is closed, integer ms ≥ 1. */
  sessionIdleMs: number;
  /**
   * A session that made no request past its handshake (`initialize`, `notifications/initialized`) is closed after
   * this long instead. Default 30 000.
   */
  sessionInitIdleMs?: number;
  /**
   * Request body bytes buffered at once across the server, at least 4 MiB (one whole body); a body beyond gets 503 +
   * `Retry-After`. Default 64 MiB.
   */
  maxBufferedBytes?: number;
  /** Time a client has to send a request's headers. Default 10 000. */
  headersTimeoutMs?: number;
  /** Time a client has to send a request's body once its headers are in (408 beyond). Default 30 000. */
  bodyTimeoutMs?: number;
  /** Refused-request log lines per minute; the rest are counted in one "suppressed" line. Default 60. */
  refusalLogsPerMinute?: number;
  logger: Logger;
  /** Time source for idle reclaim (tests). Default `Date.now`. */
  now?: () => number;
}

interface HttpSession {
  readonly id: string;
  readonly transport: NodeStreamableHTTPServerTransport;
  readonly mounted: MountedServer;
  lastSeen: number;
  /** Requests in flight, including an open GET stream: a session with one is not idle. */
  open: number;
  /** POSTs in flight: a drain waits for their responses to end. */
  posts: number;
  /** True once the session made a request past its handshake. */
  active: boolean;
  closing: boolean;
  /** Told whenever `posts` drops (drains waiting for the session's POSTs to end). */
  readonly postWatchers: Set<() => void>;
}

export interface RunningHttpServer {
  readonly url: string;
  readonly port: number;
  /** Number of live MCP sessions. */
  sessionCount(): number;
  /** Closes idle and abandoned sessions now (the periodic sweep calls this too). */
  reclaimIdle(): Promise<number>;
  /** Request body bytes currently reserved (for tests and diagnostics). */
  bufferedBytes(): number;
  /**
   * Stops taking new sessions, drains every session (waiters get `SESSION_CLOSED`; calls arriving meanwhile too), then
   * closes them and the listener. `drainMs` bounds the wait for replies (default 3000).
   */
  close(drainMs?: number): Promise<void>;
}

function positiveInteger(name: string, value: unknown, min = 1): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min)
    throw serverErrors.optionNotInteger('serveHttp', name, min, value);
  return value;
}

/** Validates the numeric options at construction: 0, NaN or a fraction is `CONFIG_INVALID` naming the option. */
function resolveLimits(options: HttpServeOptions) {
  if (!Number.isSafeInteger(options.port) || options.port < 0 || options.port > 65535)
    throw serverErrors.portOutOfRange('serveHttp', 0, 65535, options.port);
  return {
    maxSessions: positiveInteger('maxSessions', options.maxSessions),
    sessionIdleMs: positiveInteger('sessionIdleMs', options.sessionIdleMs),
    sessionInitIdleMs: positiveInteger(
      'sessionInitIdleMs',
      options.sessionInitIdleMs ?? SERVER_DEFAULTS.sessionInitIdleMs,
    ),
    // At least one whole body must fit, or a large request would be told to retry forever.
    maxBufferedBytes: positiveInteger(
      'maxBufferedBytes',
      options.maxBufferedBytes ?? SERVER_DEFAULTS.maxBufferedBytes,
      MAX_BODY_BYTES,
    ),
    headersTimeoutMs: positiveInteger('headersTimeoutMs', options.headersTimeoutMs ?? SERVER_DEFAULTS.headersTimeoutMs),
    bodyTimeoutMs: positiveInteger('bodyTimeoutMs', options.bodyTimeoutMs ?? SERVER_DEFAULTS.bodyTimeoutMs),
    refusalLogsPerMinute: positiveInteger(
      'refusalLogsPerMinute',
      options.refusalLogsPerMinute ?? SERVER_DEFAULTS.refusalLogsPerMinute,
    ),
  };
}

function jsonRpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** Headers for an answer given without reading the request's body: the connection cannot be reused. */
function unreadBody(req: IncomingMessage): Record<string, string> {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  return hasBody ? { connection: 'close' } : {};
}

function messagesOf(body: unknown): unknown[] {
  return Array.isArray(body) ? body : [body];
}

function isInitialize(body: unknown): boolean {
  return messagesOf(body).some((m) => (m as { method?: unknown } | null)?.method === 'initialize');
}

/** Whether a body is only the handshake's tail: it does not make an abandoned session active. */
function isHandshakeOnly(body: unknown): boolean {
  return messagesOf(body).every((m) => (m as { method?: unknown } | null)?.method === 'notifications/initialized');
}

function wantsModernEra(req: IncomingMessage, body: unknown): boolean {
  const header = req.headers['mcp-protocol-version'];
  if (typeof header === 'string' && header >= '2026') return true;
  return messagesOf(body).some((m) => (m as { method?: unknown } | null)?.method === 'server/discover');
}

/** A JSON-RPC id to echo: a string or number of bounded size, else null. */
function echoableId(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null)?.id;
  if (typeof id === 'number' && Number.isFinite(id)) return id;
  if (typeof id === 'string' && id.length <= 256) return id;
  return null;
}

export async function serveHttp(adapter: IntentMcpAdapter, options: HttpServeOptions): Promise<RunningHttpServer> {
  const limits = resolveLimits(options);
  const { logger } = options;
  const now = options.now ?? Date.now;
  const sessions = new Map<string, HttpSession>();
  const budget = new BodyBudget(limits.maxBufferedBytes);
  const refusalLog = rateLimitedLog(logger, limits.refusalLogsPerMinute);
  // Any client can open and drop sessions in a loop: their lifecycle lines share the same per-minute budget.
  const sessionLog = rateLimitedLog(logger, limits.refusalLogsPerMinute, 60_000, Date.now, 'info');
  let pending = 0; // sessions being initialised, counted against the cap
  let closed = false;
  let allowed = allowedHostsAndOrigins(options.port, options.publicOrigin);

  const closeSession = async (session: HttpSession, why: string): Promise<void> => {
    if (session.closing) return;
    session.closing = true;
    sessions.delete(session.id);
    sessionLog('session closed', { session: session.id, why });
    // Closing the SDK server closes its transport and fires onclose, which closes the adapter session (mount.ts).
    await session.mounted.server.close().catch(() => undefined);
    await session.transport.close().catch(() => undefined);
  };

  /** Answers the session's waiters `SESSION_CLOSED` and waits (at most `timeoutMs`) until its POSTs have ended. */
  const drainSession = async (session: HttpSession, timeoutMs: number): Promise<void> => {
    await session.mounted.drain();
    if (session.posts === 0) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        session.postWatchers.delete(watcher);
        resolve();
      };
      const watcher = (): void => {
        if (session.posts === 0) done();
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      session.postWatchers.add(watcher);
    });
  };

  const checkHostAndOrigin = (req: IncomingMessage): string | undefined => {
    // Only the Host header itself counts: X-Forwarded-Host / Forwarded never widen the list (spec 05).
    const host = req.headers.host?.toLowerCase();
    if (host === undefined || !allowed.hosts.has(host)) return 'Host';
    const origin = req.headers.origin;
    if (origin !== undefined && !allowed.origins.has(origin.toLowerCase())) return 'Origin';
    return undefined;
  };

  /** Reads and parses a POST body; answers the refusal itself and resolves `undefined` when there is none to use. */
  const readJsonBody = async (req: IncomingMessage, res: ServerResponse): Promise<{ body: unknown } | undefined> => {
    let raw: Buffer;
    try {
      raw = await readBody(req, res, budget, limits.bodyTimeoutMs);
    } catch (error) {
      if (!(error instanceof BodyRefused)) throw error;
      const { refusal } = error;
      refusalLog('request body refused', { status: refusal.status, reason: error.message });
      jsonRpcError(res, refusal.status, refusal.code, refusal.message, { connection: 'close', ...refusal.headers });
      return undefined;
    }
    try {
      return { body: JSON.parse(raw.toString('utf8')) as unknown };
    } catch {
      jsonRpcError(res, 400, -32700, 'Parse error: the body is not valid JSON.');
      return undefined;
    }
  };

  const handleSessionRequest = async (
    session: HttpSession,
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
  ): Promise<void> => {
    session.lastSeen = now();
    session.open++;
    const isPost = method === 'POST';
    if (isPost) session.posts++;
    res.on('close', () => {
      session.open--;
      session.lastSeen = now();
      if (isPost) {
        session.posts--;
        for (const watcher of [...session.postWatchers]) watcher();
      }
    });
    let body: unknown;
    if (isPost) {
      const read = await readJsonBody(req, res);
      if (read === undefined) return;
      body = read.body;
      if (!isHandshakeOnly(body)) session.active = true;
    } else session.active = true;
    // The session may have been closed (DELETE, idle sweep) while its body was read.
    if (session.closing) {
      jsonRpcError(res, 404, -32001, 'Session not found; initialize a new session.');
      return;
    }
    if (method === 'DELETE') {
      // Spec 04: waiters get SESSION_CLOSED before the streams close; then the SDK answers the DELETE itself.
      await drainSession(session, DELETE_DRAIN_MS);
      await session.transport.handleRequest(req, res);
      await closeSession(session, 'DELETE');
      return;
    }
    await session.transport.handleRequest(req, res, body);
  };

  const handleInitialize = async (req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> => {
    if (closed) {
      jsonRpcError(res, 503, -32000, 'The server is shutting down.', { 'retry-after': '5' });
      return;
    }
    if (sessions.size + pending >= limits.maxSessions) {
      jsonRpcError(res, 503, -32000, `Too many sessions (limit ${limits.maxSessions}); retry later.`, {
        'retry-after': '30',
      });
      return;
    }
    pending++;
    // This initialize holds a slot in `pending` until its session exists or it fails, whatever throws.
    let counted = true;
    const release = (): void => {
      if (counted) pending--;
      counted = false;
    };
    let created: HttpSession | undefined;
    let mounted: MountedServer | undefined;
    try {
      const server = await createMountedServer(adapter, 'legacy', 'http');
      mounted = server;
      const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          created = {
            id,
            transport,
            mounted: server,
            lastSeen: now(),
            open: 0,
            posts: 0,
            active: false,
            closing: false,
            postWatchers: new Set(),
          };
          sessions.set(id, created);
          release();
          sessionLog('session opened', { session: id });
        },
        onsessionclosed: async (id) => {
          const session = sessions.get(id);
          if (session !== undefined) await closeSession(session, 'DELETE');
        },
      });
      await server.server.connect(transport);
      await transport.handleRequest(req, res, body);
    } finally {
      release();
      // The SDK refused this initialize (a bad Accept header, say): nothing refers to this server any more.
      if (created === undefined && mounted !== undefined) await mounted.server.close().catch(() => undefined);
    }
  };

  const handleMcp = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const sessionId = req.headers['mcp-session-id'];
    if (sessionId !== undefined) {
      // Checked before any body is read: an unknown session costs the caller nothing but this answer.
      const session = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
      if (session === undefined) {
        jsonRpcError(res, 404, -32001, 'Session not found; initialize a new session.', unreadBody(req));
        return;
      }
      await handleSessionRequest(session, req, res, method);
      return;
    }
    if (method !== 'POST') {
      jsonRpcError(res, 400, -32000, 'Bad Request: no valid Mcp-Session-Id; send initialize first.', unreadBody(req));
      return;
    }
    if (closed) {
      jsonRpcError(res, 503, -32000, 'The server is shutting down.', { 'retry-after': '5', ...unreadBody(req) });
      return;
    }
    const read = await readJsonBody(req, res);
    if (read === undefined) return;
    const { body } = read;
    if (isInitialize(body)) {
      await handleInitialize(req, res, body);
      return;
    }
    if (wantsModernEra(req, body)) {
      // 2026-07-28 is served on stdio only; answer as the SDK answers an unsupported revision.
      const requested = String(req.headers['mcp-protocol-version'] ?? '2026-07-28').slice(0, 40);
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: echoableId(body),
          error: {
            code: -32022,
            message: `Unsupported protocol version: ${requested}`,
            data: { supported: LEGACY_VERSIONS, requested },
          },
        }),
      );
      return;
    }
    jsonRpcError(res, 400, -32000, 'Bad Request: no valid Mcp-Session-Id; send initialize first.');
  };

  const httpServer: HttpServer = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      // Node's whole-request bound backs up our body deadline for bodies we never read (refusals).
      requestTimeout: limits.headersTimeoutMs + limits.bodyTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1000, limits.headersTimeoutMs, limits.bodyTimeoutMs)),
    },
    (req, res) => {
      void (async () => {
        const url = new URL(req.url ?? '/', 'http://localhost');
        if (url.pathname === '/healthz' && req.method === 'GET') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ status: 'ok', sessions: sessions.size }));
          return;
        }
        if (url.pathname !== options.path) {
          jsonRpcError(res, 404, -32601, 'Not found.', unreadBody(req));
          return;
        }
        const refused = checkHostAndOrigin(req);
        if (refused !== undefined) {
          // The logger cuts each field to a short prefix; the rate limit bounds the number of lines.
          refusalLog('request refused', {
            header: refused,
            host: req.headers.host ?? '',
            origin: req.headers.origin ?? '',
          });
          jsonRpcError(
            res,
            403,
            -32000,
            `Forbidden: the ${refused} header is not allowed for this server.`,
            unreadBody(req),
          );
          return;
        }
        await handleMcp(req, res);
      })().catch((error: unknown) => {
        logger.error('request failed', { error: error instanceof Error ? error.name : 'unknown' });
        jsonRpcError(res, 500, -32603, 'Internal error.');
      });
    },
  );

  // "[::1]" is how an IPv6 address is written in a URL; listen wants it bare.
  const listenHost = /^\[[^\]]*\]$/.test(options.host) ? options.host.slice(1, -1) : options.host;
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      reject(serverErrors.cannotListen(options.host, options.port, error.code ?? error.name));
    };
    httpServer.once('error', onError);
    httpServer.listen(options.port, listenHost, () => {
      httpServer.off('error', onError);
      resolve();
    });
  });
  const bound = httpServer.address() as AddressInfo;
  // Judged on the address actually bound, whatever spelling of it was asked for ("0", "0x0", "::0", a name...).
  if (isUnspecifiedAddress(bound.address) && options.publicOrigin === undefined) {
    await new Promise<void>((resolve) => {
      httpServer.close(() => {
        resolve();
      });
    });
    throw serverErrors.needsPublicOrigin(options.host, bound.address);
  }
  const port = bound.port;
  allowed = allowedHostsAndOrigins(port, options.publicOrigin);

  const reclaimIdle = async (): Promise<number> => {
    const t = now();
    const stale = [...sessions.values()].filter(
      (s) =>
        s.open === 0 &&
        (s.lastSeen <= t - limits.sessionIdleMs || (!s.active && s.lastSeen <= t - limits.sessionInitIdleMs)),
    );
    for (const s of stale) await closeSession(s, s.active ? 'idle' : 'abandoned after initialize');
    return stale.length;
  };
  const sweep = setInterval(
    () => {
      void reclaimIdle();
      refusalLog.flush();
      sessionLog.flush();
    },
    Math.min(limits.sessionIdleMs, limits.sessionInitIdleMs, 60_000),
  );
  sweep.unref();

  const hostForUrl = listenHost.includes(':') ? `[${listenHost}]` : listenHost;
  return {
    url: `http://${hostForUrl}:${port}${options.path}`,
    port,
    sessionCount: () => sessions.size,
    reclaimIdle,
    bufferedBytes: () => budget.used,
    close: async (drainMs = DELETE_DRAIN_MS) => {
      closed = true;
      clearInterval(sweep);
      const live = [...sessions.values()];
      await Promise.all(live.map((s) => drainSession(s, drainMs)));
      await Promise.all(live.map((s) => closeSession(s, 'shutdown')));
      refusalLog.flush();
      sessionLog.flush();
      await new Promise<void>((resolve) => {
        httpServer.close(() => {
          resolve();
        });
        httpServer.closeAllConnections();
      });
    },
  };
}
