/**
 * The request path of the HTTP listener (spec 05, "HTTP"): `GET /healthz` outside the MCP path, the Host / Origin guard
 * before any MCP processing, then by `Mcp-Session-Id`: a known session's request goes to its transport (DELETE drains
 * it first), an unknown one gets 404 before its body is read, and a request without one may only be an `initialize`,
 * which takes a session slot. Bodies are read within their deadline and the server-wide budget (issue 8).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { IntentMcpAdapter } from '../mcp/adapter.js';
import { HEALTH_PATH, SERVER_DEFAULTS } from './config.js';
import { boundProtocolError, httpRefusals, type HttpRefusal } from './errors.js';
import type { HostOriginGuard } from './hostOriginGuard.js';
import { BodyRefused, readBody, type BodyBudget } from './httpBody.js';
import { requestIdKey } from './requestIds.js';
import type { HttpSession, HttpSessionRegistry } from './httpSessions.js';
import type { Logger, RateLimitedLog } from './logger.js';
import {
  LEGACY_VERSIONS,
  MODERN_ERA_FROM,
  MODERN_VERSIONS,
  createMountedServer,
  type MountedServer,
} from './mcpServer.js';

/** Longest string id echoed back in a refusal; a longer one is answered with id `null`. */
const MAX_ECHOED_ID_CHARS = 256;
/** Longest requested revision quoted back in a refusal. */
const MAX_QUOTED_REVISION_CHARS = 40;

function sendRefusal(
  res: ServerResponse,
  refusal: HttpRefusal,
  headers: Record<string, string> = {},
  id: string | number | null = null,
): void {
  if (res.headersSent) return;
  res.writeHead(refusal.status, { 'content-type': 'application/json', ...refusal.headers, ...headers });
  const error = {
    code: refusal.code,
    message: refusal.message,
    ...(refusal.data === undefined ? {} : { data: refusal.data }),
  };
  res.end(JSON.stringify({ jsonrpc: '2.0', error, id }));
}

/** Headers for an answer given without reading the request's body: the connection cannot be reused. */
function unreadBody(req: IncomingMessage): Record<string, string> {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  return hasBody ? { connection: 'close' } : {};
}

function messagesOf(body: unknown): unknown[] {
  return Array.isArray(body) ? body : [body];
}

function methodOf(message: unknown): unknown {
  return (message as { method?: unknown } | null)?.method;
}

function isInitialize(body: unknown): boolean {
  return messagesOf(body).some((message) => methodOf(message) === 'initialize');
}

/** Whether a body is only the handshake's tail: it does not make an abandoned session active. */
function isHandshakeOnly(body: unknown): boolean {
  return messagesOf(body).every((message) => methodOf(message) === 'notifications/initialized');
}

function wantsModernEra(req: IncomingMessage, body: unknown): boolean {
  const header = req.headers['mcp-protocol-version'];
  if (typeof header === 'string' && header >= MODERN_ERA_FROM) return true;
  return messagesOf(body).some((message) => methodOf(message) === 'server/discover');
}

/** The requests in a body (messages with a method and an id), by id key, distinct. */
function requestIdsOf(body: unknown): Map<string, string | number> {
  const ids = new Map<string, string | number>();
  for (const message of messagesOf(body)) {
    if (typeof methodOf(message) !== 'string') continue;
    const id = (message as { id?: unknown } | null)?.id;
    const key = requestIdKey(id);
    if (key !== undefined) ids.set(key, id as string | number);
  }
  return ids;
}

/** The id keys the `notifications/cancelled` of a body name. */
function cancelledIdsOf(body: unknown): string[] {
  const ids: string[] = [];
  for (const message of messagesOf(body)) {
    if (methodOf(message) !== 'notifications/cancelled') continue;
    const key = requestIdKey((message as { params?: { requestId?: unknown } } | null)?.params?.requestId);
    if (key !== undefined) ids.push(key);
  }
  return ids;
}

/** The JSON-RPC error a cancelled request is answered with (LSP's RequestCancelled code). */
const REQUEST_CANCELLED = -32800;

/**
 * Answers each request its client cancelled that is still unanswered, with a `-32800` error, through the session's
 * transport. MCP says a receiver SHOULD NOT answer a cancelled request (and its sender ignores any answer), and the
 * SDK sends none; but its transport then keeps the request's POST stream open, and its id in its own map, for the life
 * of the session: the socket, the session's in-flight count (it was never idle) and the request's share of the body
 * budget were held until the client hung up (17 cancelled 4 MiB calls made every POST of every client 503), and a
 * batch's stream never ended. Answered, the transport writes the error, forgets the id and ends the stream once the
 * rest of its batch is answered.
 */
async function answerCancelled(session: HttpSession, keys: readonly string[]): Promise<void> {
  for (const key of keys) {
    const open = session.openRequests.get(key);
    if (open === undefined) continue;
    session.openRequests.delete(key);
    await session.transport
      .send({ jsonrpc: '2.0', id: open.id, error: { code: REQUEST_CANCELLED, message: 'Request cancelled.' } })
      .catch(() => undefined);
  }
}

/** A JSON-RPC id to echo: a string or number of bounded size, else null. */
function echoableId(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null)?.id;
  if (typeof id === 'number' && Number.isFinite(id)) return id;
  if (typeof id === 'string' && id.length <= MAX_ECHOED_ID_CHARS) return id;
  return null;
}

export interface HttpRouterOptions {
  readonly adapter: IntentMcpAdapter;
  /** The MCP endpoint's path. */
  readonly path: string;
  readonly sessions: HttpSessionRegistry;
  readonly guard: HostOriginGuard;
  /** Request body bytes buffered at once across the server. */
  readonly budget: BodyBudget;
  readonly bodyTimeoutMs: number;
  /** Refused requests: the logger cuts each field to a short prefix, the rate limit bounds the number of lines. */
  readonly refusalLog: RateLimitedLog;
  readonly logger: Logger;
  /** Makes each new session's id (random UUIDs; routed ones behind nginx's consistent hash, see sessionRoute.ts). */
  readonly newSessionId: () => string;
}

export class HttpRouter {
  readonly #options: HttpRouterOptions;

  constructor(options: HttpRouterOptions) {
    this.#options = options;
  }

  /** Answers one request; an unexpected failure is logged and answered 500. */
  handle(req: IncomingMessage, res: ServerResponse): void {
    this.#route(req, res).catch((error: unknown) => {
      this.#options.logger.error('request failed', { error: error instanceof Error ? error.name : 'unknown' });
      sendRefusal(res, httpRefusals.internal());
    });
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname === HEALTH_PATH && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', sessions: this.#options.sessions.size }));
      return;
    }
    if (url.pathname !== this.#options.path) {
      sendRefusal(res, httpRefusals.notFound(), unreadBody(req));
      return;
    }
    const refused = this.#options.guard.refusedHeader(req);
    if (refused !== undefined) {
      this.#options.refusalLog('request refused', {
        header: refused,
        host: req.headers.host ?? '',
        origin: req.headers.origin ?? '',
      });
      sendRefusal(res, httpRefusals.forbiddenHeader(refused), unreadBody(req));
      return;
    }
    await this.#routeMcp(req, res);
  }

  async #routeMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const sessionId = req.headers['mcp-session-id'];
    if (sessionId !== undefined) {
      // Checked before any body is read: an unknown session costs the caller nothing but this answer.
      const session = typeof sessionId === 'string' ? this.#options.sessions.find(sessionId) : undefined;
      if (session === undefined) {
        sendRefusal(res, httpRefusals.sessionNotFound(), unreadBody(req));
        return;
      }
      await this.#handleSessionRequest(session, req, res, method);
      return;
    }
    if (method !== 'POST') {
      sendRefusal(res, httpRefusals.noSession(), unreadBody(req));
      return;
    }
    if (!this.#options.sessions.accepting) {
      sendRefusal(res, httpRefusals.shuttingDown(), unreadBody(req));
      return;
    }
    const read = await this.#readJsonBody(req, res);
    if (read === undefined) return;
    const { body } = read;
    if (isInitialize(body)) {
      await this.#handleInitialize(req, res, body);
      return;
    }
    if (wantsModernEra(req, body)) {
      const requested = String(req.headers['mcp-protocol-version'] ?? MODERN_VERSIONS.join(', ')).slice(
        0,
        MAX_QUOTED_REVISION_CHARS,
      );
      sendRefusal(res, httpRefusals.unsupportedProtocolVersion(requested, LEGACY_VERSIONS), {}, echoableId(body));
      return;
    }
    sendRefusal(res, httpRefusals.noSession());
  }

  async #handleSessionRequest(
    session: HttpSession,
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
  ): Promise<void> {
    const { sessions } = this.#options;
    const isPost = method === 'POST';
    const revision = req.headers['mcp-protocol-version'];
    if (typeof revision === 'string' && !LEGACY_VERSIONS.includes(revision)) {
      sendRefusal(res, httpRefusals.badProtocolVersionHeader(revision, LEGACY_VERSIONS), isPost ? unreadBody(req) : {});
      return;
    }
    sessions.track(session, res, isPost);
    let body: unknown;
    if (isPost) {
      const read = await this.#readJsonBody(req, res);
      if (read === undefined) return;
      body = read.body;
      if (!isHandshakeOnly(body)) session.pastHandshake = true;
    } else session.pastHandshake = true;
    // The session may have been closed (DELETE, idle sweep) while its body was read.
    if (session.closing) {
      sendRefusal(res, httpRefusals.sessionNotFound());
      return;
    }
    if (method === 'DELETE') {
      // Spec 04: waiters get SESSION_CLOSED before the streams close; then the SDK answers the DELETE itself.
      await sessions.drain(session, SERVER_DEFAULTS.drainMs);
      await session.transport.handleRequest(req, res);
      await sessions.close(session, 'DELETE');
      return;
    }
    if (isPost) {
      const ids = requestIdsOf(body);
      if ([...ids.keys()].some((key) => session.openRequests.has(key))) {
        sendRefusal(res, httpRefusals.requestIdInUse(), {}, echoableId(body));
        return;
      }
      for (const [key, id] of ids) session.openRequests.set(key, { id, res });
      if (ids.size > 0)
        res.once('close', () => {
          for (const key of ids.keys())
            if (session.openRequests.get(key)?.res === res) session.openRequests.delete(key);
        });
      const cancelled = cancelledIdsOf(body);
      if (cancelled.length > 0) {
        // The SDK first stops the cancelled requests (it then sends nothing for them); the router answers them after.
        await session.transport.handleRequest(req, res, body);
        await answerCancelled(session, cancelled);
        return;
      }
    }
    await session.transport.handleRequest(req, res, body);
  }

  async #handleInitialize(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const { sessions } = this.#options;
    if (!sessions.accepting) {
      sendRefusal(res, httpRefusals.shuttingDown());
      return;
    }
    // Held until this initialize's session exists or it fails, whatever throws.
    const releaseSlot = sessions.holdSlot();
    if (releaseSlot === undefined) {
      sendRefusal(res, httpRefusals.tooManySessions(sessions.maxSessions));
      return;
    }
    let created: HttpSession | undefined;
    let mounted: MountedServer | undefined;
    try {
      const server = await createMountedServer(this.#options.adapter, 'legacy', 'http');
      mounted = server;
      const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: this.#options.newSessionId,
        onsessioninitialized: (id) => {
          created = sessions.add(id, transport, server);
          releaseSlot();
        },
        onsessionclosed: async (id) => {
          const session = sessions.find(id);
          if (session !== undefined) await sessions.close(session, 'DELETE');
        },
      });
      // Every message the SDK sends on this session leaves through the transport's public send: error responses are
      // bounded there, as on stdio (the SDK's own errors quote a caller's URI or name whole).
      // It is also where a request stops being in flight: its response leaves (see openRequests).
      const send = transport.send.bind(transport);
      transport.send = (message, options) => {
        if (!('method' in message) && 'id' in message) {
          const key = requestIdKey(message.id);
          const session = transport.sessionId === undefined ? undefined : sessions.find(transport.sessionId);
          if (key !== undefined) session?.openRequests.delete(key);
        }
        return send(boundProtocolError(message), options);
      };
      await server.server.connect(transport);
      await transport.handleRequest(req, res, body);
    } finally {
      releaseSlot();
      // The SDK refused this initialize (a bad Accept header, say): nothing refers to this server any more.
      if (created === undefined && mounted !== undefined) await mounted.server.close().catch(() => undefined);
    }
  }

  /** Reads and parses a POST body; answers the refusal itself and resolves `undefined` when there is none to use. */
  async #readJsonBody(req: IncomingMessage, res: ServerResponse): Promise<{ body: unknown } | undefined> {
    let raw: Buffer;
    try {
      raw = await readBody(req, res, this.#options.budget, this.#options.bodyTimeoutMs);
    } catch (error) {
      if (!(error instanceof BodyRefused)) throw error;
      this.#options.refusalLog('request body refused', { status: error.refusal.status, reason: error.message });
      sendRefusal(res, error.refusal, { connection: 'close' });
      return undefined;
    }
    try {
      return { body: JSON.parse(raw.toString('utf8')) as unknown };
    } catch {
      sendRefusal(res, httpRefusals.parseError());
      return undefined;
    }
  }
}
