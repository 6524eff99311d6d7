/**
 * Stateful Streamable HTTP for 2025-06-18 and 2025-11-25 (spec 05, "HTTP"): one SDK transport + server + adapter session
 * per MCP session, kept in a map by `Mcp-Session-Id`. GET opens the SSE stream; DELETE ends the session; a dropped
 * stream is not a close; unknown sessions get 404; at most `maxSessions` (503 + `Retry-After`); idle sessions are
 * reclaimed; `GET /healthz` answers outside the MCP path; bodies over 4 MiB get 413. Host and Origin are checked
 * before any MCP processing (403), against the public origin and the local diagnostic addresses only.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { McpServer } from '@modelcontextprotocol/server';
import type { IntentMcpAdapter } from '../mcp/adapter.js';
import { allowedHostsAndOrigins, type PublicOrigin } from './config.js';
import type { Logger } from './logger.js';
import { LEGACY_VERSIONS, createMountedServer } from './mcpServer.js';

/** Spec 05: body limit 4 MiB. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface HttpServeOptions {
  host: string;
  port: number;
  path: string;
  publicOrigin: PublicOrigin | undefined;
  maxSessions: number;
  sessionIdleMs: number;
  logger: Logger;
  /** Time source for idle reclaim (tests). Default `Date.now`. */
  now?: () => number;
}

interface HttpSession {
  readonly id: string;
  readonly transport: NodeStreamableHTTPServerTransport;
  readonly server: McpServer;
  lastSeen: number;
  /** Requests in flight, including an open GET stream: a session with one is not idle. */
  open: number;
  closing: boolean;
}

export interface RunningHttpServer {
  readonly url: string;
  readonly port: number;
  /** Number of live MCP sessions. */
  sessionCount(): number;
  /** Closes idle sessions now (the periodic sweep calls this too). */
  reclaimIdle(): Promise<number>;
  /** Stops accepting, closes every session. */
  close(): Promise<void>;
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

class BodyTooLarge extends Error {}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) throw new BodyTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY_BYTES) throw new BodyTooLarge();
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

function isInitialize(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => (m as { method?: unknown } | null)?.method === 'initialize');
}

function wantsModernEra(req: IncomingMessage, body: unknown): boolean {
  const header = req.headers['mcp-protocol-version'];
  if (typeof header === 'string' && header >= '2026') return true;
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => (m as { method?: unknown } | null)?.method === 'server/discover');
}

export async function serveHttp(adapter: IntentMcpAdapter, options: HttpServeOptions): Promise<RunningHttpServer> {
  const { logger } = options;
  const now = options.now ?? Date.now;
  const sessions = new Map<string, HttpSession>();
  let pending = 0; // sessions being initialised, counted against the cap
  let closed = false;
  let allowed = allowedHostsAndOrigins(options.port, options.publicOrigin);

  const closeSession = async (session: HttpSession, why: string): Promise<void> => {
    if (session.closing) return;
    session.closing = true;
    sessions.delete(session.id);
    logger.info('session closed', { session: session.id, why });
    // Closing the SDK server closes its transport and fires onclose, which closes the adapter session (mount.ts).
    await session.server.close().catch(() => undefined);
    await session.transport.close().catch(() => undefined);
  };

  const checkHostAndOrigin = (req: IncomingMessage): string | undefined => {
    // Only the Host header itself counts: X-Forwarded-Host / Forwarded never widen the list (spec 05).
    const host = req.headers.host?.toLowerCase();
    if (host === undefined || !allowed.hosts.has(host)) return 'Host';
    const origin = req.headers.origin;
    if (origin !== undefined && !allowed.origins.has(origin.toLowerCase())) return 'Origin';
    return undefined;
  };

  const handleMcp = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const sessionId = req.headers['mcp-session-id'];
    let body: unknown;
    if (method === 'POST') {
      let raw: Buffer;
      try {
        raw = await readBody(req);
      } catch (error) {
        if (error instanceof BodyTooLarge) {
          jsonRpcError(res, 413, -32600, `Request body larger than ${MAX_BODY_BYTES} bytes.`, { connection: 'close' });
          req.resume();
          return;
        }
        throw error;
      }
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        jsonRpcError(res, 400, -32700, 'Parse error: the body is not valid JSON.');
        return;
      }
    }

    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      if (session === undefined) {
        jsonRpcError(res, 404, -32001, 'Session not found; initialize a new session.');
        return;
      }
      session.lastSeen = now();
      session.open++;
      res.on('close', () => {
        session.open--;
        session.lastSeen = now();
      });
      await session.transport.handleRequest(req, res, body);
      return;
    }

    if (method !== 'POST' || !isInitialize(body)) {
      if (method === 'POST' && wantsModernEra(req, body)) {
        // 2026-07-28 is served on stdio only; answer as the SDK answers an unsupported revision.
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            jsonrpc: '2.0',
            id: (body as { id?: unknown } | null)?.id ?? null,
            error: {
              code: -32022,
              message: `Unsupported protocol version: ${String(req.headers['mcp-protocol-version'] ?? '2026-07-28')}`,
              data: { supported: LEGACY_VERSIONS, requested: req.headers['mcp-protocol-version'] ?? '2026-07-28' },
            },
          }),
        );
        return;
      }
      jsonRpcError(res, 400, -32000, 'Bad Request: no valid Mcp-Session-Id; send initialize first.');
      return;
    }

    if (sessions.size + pending >= options.maxSessions) {
      jsonRpcError(res, 503, -32000, `Too many sessions (limit ${options.maxSessions}); retry later.`, {
        'retry-after': '30',
      });
      return;
    }
    pending++;
    let counted = true; // this initialize holds a slot in `pending` until its session exists
    const release = (): void => {
      if (counted) pending--;
      counted = false;
    };
    let created: HttpSession | undefined;
    const server = await createMountedServer(adapter, 'legacy', 'http');
    try {
      const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          created = { id, transport, server, lastSeen: now(), open: 0, closing: false };
          sessions.set(id, created);
          release();
          logger.info('session opened', { session: id });
        },
        onsessionclosed: async (id) => {
          const session = sessions.get(id);
          if (session !== undefined) await closeSession(session, 'DELETE');
        },
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    } finally {
      release();
      // The SDK refused this initialize (a bad Accept header, say): nothing refers to this server any more.
      if (created === undefined) await server.close().catch(() => undefined);
    }
  };

  const httpServer: HttpServer = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname === '/healthz' && req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: 'ok', sessions: sessions.size }));
        return;
      }
      if (url.pathname !== options.path) {
        jsonRpcError(res, 404, -32601, 'Not found.');
        return;
      }
      const refused = checkHostAndOrigin(req);
      if (refused !== undefined) {
        logger.warn('request refused', {
          header: refused,
          host: req.headers.host ?? '',
          origin: req.headers.origin ?? '',
        });
        jsonRpcError(res, 403, -32000, `Forbidden: the ${refused} header is not allowed for this server.`);
        return;
      }
      if (closed) {
        jsonRpcError(res, 503, -32000, 'The server is shutting down.');
        return;
      }
      await handleMcp(req, res);
    })().catch((error: unknown) => {
      logger.error('request failed', { error: error instanceof Error ? error.name : 'unknown' });
      jsonRpcError(res, 500, -32603, 'Internal error.');
    });
  });

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(options.port, options.host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const port = (httpServer.address() as AddressInfo).port;
  allowed = allowedHostsAndOrigins(port, options.publicOrigin);

  const reclaimIdle = async (): Promise<number> => {
    const limit = now() - options.sessionIdleMs;
    const idle = [...sessions.values()].filter((s) => s.open === 0 && s.lastSeen <= limit);
    for (const s of idle) await closeSession(s, 'idle');
    return idle.length;
  };
  const sweep = setInterval(() => void reclaimIdle(), Math.min(options.sessionIdleMs, 60_000));
  sweep.unref();

  const hostForUrl = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${hostForUrl}:${port}${options.path}`,
    port,
    sessionCount: () => sessions.size,
    reclaimIdle,
    close: async () => {
      closed = true;
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((s) => closeSession(s, 'shutdown')));
      await new Promise<void>((resolve) => {
        httpServer.close(() => {
          resolve();
        });
        httpServer.closeAllConnections();
      });
    },
  };
}
