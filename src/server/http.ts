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
 *
 * This module validates the options, listens and runs the idle sweep; the parts it wires together are the
 * {@link HostOriginGuard}, the {@link HttpSessionRegistry} (cap, reclaim, drain) and the {@link HttpRouter} (the
 * request path); every answer they give themselves is an `httpRefusals` entry (errors.ts).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IntentMcpAdapter } from '../mcp/adapter.js';
import { SERVER_DEFAULTS, HttpConfigSchema, integerRange, isUnspecifiedAddress, type PublicOrigin } from './config.js';
import { serverErrors } from './errors.js';
import { HostOriginGuard } from './hostOriginGuard.js';
import { BodyBudget, MAX_BODY_BYTES } from './httpBody.js';
import { HttpRouter } from './httpRouter.js';
import { HttpSessionRegistry } from './httpSessions.js';
import { RATE_LIMIT_INTERVAL_MS, rateLimitedLog, type Logger } from './logger.js';
import { routedSessionIds, type SessionRouteOptions } from './sessionRoute.js';

export { MAX_BODY_BYTES } from './httpBody.js';

/** The idle sweep runs at least this often, however long the idle limits. */
const MAX_SWEEP_INTERVAL_MS = 60_000;
/** Node checks its header and request deadlines this often, within these bounds (ms). */
const CONNECTION_CHECK_MS = { min: 50, max: 1000 } as const;

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
  /**
   * Behind nginx's `hash $http_mcp_session_id consistent` with several processes: the upstream servers as nginx names
   * them and which one this process is, so each session id it makes hashes back to it (sessionRoute.ts). Default: plain
   * random UUIDs.
   */
  sessionRoute?: SessionRouteOptions | undefined;
  /** Time source for idle reclaim (tests). Default `Date.now`. */
  now?: () => number;
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
  const ports = integerRange(HttpConfigSchema.shape.port);
  if (!Number.isSafeInteger(options.port) || options.port < ports.min || options.port > ports.max)
    throw serverErrors.portOutOfRange('serveHttp', ports.min, ports.max, options.port);
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

/** "[::1]" is how an IPv6 address is written in a URL; listen wants it bare. */
function bareHost(host: string): string {
  return /^\[[^\]]*\]$/.test(host) ? host.slice(1, -1) : host;
}

function closeListener(httpServer: HttpServer): Promise<void> {
  return new Promise<void>((resolve) => {
    httpServer.close(() => {
      resolve();
    });
  });
}

/**
 * Listens on `options.host` and `options.port`; a listener that ended up on every interface without a public origin is
 * closed again before it serves anything. Resolves the address actually bound.
 */
async function listen(httpServer: HttpServer, options: HttpServeOptions): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      reject(serverErrors.cannotListen(options.host, options.port, error.code ?? error.name));
    };
    httpServer.once('error', onError);
    httpServer.listen(options.port, bareHost(options.host), () => {
      httpServer.off('error', onError);
      resolve();
    });
  });
  const bound = httpServer.address() as AddressInfo;
  // Judged on the address actually bound, whatever spelling of it was asked for ("0", "0x0", "::0", a name...).
  if (isUnspecifiedAddress(bound.address) && options.publicOrigin === undefined) {
    await closeListener(httpServer);
    throw serverErrors.needsPublicOrigin(options.host, bound.address);
  }
  return bound;
}

/** Serves the adapter over stateful Streamable HTTP (see the module comment); resolves once listening. */
export async function serveHttp(adapter: IntentMcpAdapter, options: HttpServeOptions): Promise<RunningHttpServer> {
  const limits = resolveLimits(options);
  const newSessionId = options.sessionRoute === undefined ? randomUUID : routedSessionIds(options.sessionRoute);
  const { logger } = options;
  const refusalLog = rateLimitedLog(logger, limits.refusalLogsPerMinute);
  // Any client can open and drop sessions in a loop: their lifecycle lines share the same per-minute budget.
  const sessionLog = rateLimitedLog(logger, limits.refusalLogsPerMinute, RATE_LIMIT_INTERVAL_MS, Date.now, 'info');
  const sessions = new HttpSessionRegistry(limits, options.now ?? Date.now, sessionLog);
  const budget = new BodyBudget(limits.maxBufferedBytes);
  const guard = new HostOriginGuard(options.port, options.publicOrigin);
  const router = new HttpRouter({
    adapter,
    path: options.path,
    sessions,
    guard,
    budget,
    bodyTimeoutMs: limits.bodyTimeoutMs,
    refusalLog,
    logger,
    newSessionId,
  });
  const httpServer: HttpServer = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      // Node's whole-request bound backs up our body deadline for bodies we never read (refusals).
      requestTimeout: limits.headersTimeoutMs + limits.bodyTimeoutMs,
      connectionsCheckingInterval: Math.max(
        CONNECTION_CHECK_MS.min,
        Math.min(CONNECTION_CHECK_MS.max, limits.headersTimeoutMs, limits.bodyTimeoutMs),
      ),
    },
    (req, res) => {
      router.handle(req, res);
    },
  );
  const { port } = await listen(httpServer, options);
  guard.bindTo(port);

  const sweep = setInterval(
    () => {
      void sessions.reclaimIdle();
      refusalLog.flush();
      sessionLog.flush();
    },
    Math.min(limits.sessionIdleMs, limits.sessionInitIdleMs, MAX_SWEEP_INTERVAL_MS),
  );
  sweep.unref();

  const listenHost = bareHost(options.host);
  const hostForUrl = listenHost.includes(':') ? `[${listenHost}]` : listenHost;
  return {
    url: `http://${hostForUrl}:${port}${options.path}`,
    port,
    sessionCount: () => sessions.size,
    reclaimIdle: () => sessions.reclaimIdle(),
    bufferedBytes: () => budget.used,
    close: async (drainMs = SERVER_DEFAULTS.drainMs) => {
      clearInterval(sweep);
      await sessions.shutdown(drainMs);
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
