/**
 * The debug inspector's own HTTP listener (spec 05, "Debug inspector"; issue 10): loopback only, the same exact Host /
 * Origin rule as the MCP endpoint, GET and HEAD only (nothing changes state), bounded request targets, and a
 * Content-Security-Policy that forbids fetching anything from elsewhere.
 *
 * - `GET /` the page (server-rendered; refreshes itself without JavaScript)
 * - `GET /api/snapshot` the same view as JSON
 * - `GET /api/events` SSE: `hello`, one `transition` per record (written in batches), `counts` at most every
 *   {@link COUNTS_INTERVAL_MS}
 * - `GET /api/diagram.svg` the diagram with the current counts (and `?request=` highlighted)
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { IntentError } from '../core/errors.js';
import { inspectorErrors, isLoopbackHost, unbracketed } from './errors.js';
import type { HandoffTransition } from '../engine/inspection.js';
import { HostOriginGuard } from '../server/hostOriginGuard.js';
import type { Logger } from '../server/logger.js';
import { diagramSvg } from './diagram.js';
import type { InspectorModel } from './model.js';
import { bytes, renderPage, transitionEventData } from './page.js';
import { buildView, liveSummary, parseQuery, type InspectorQuery } from './view.js';

export interface InspectorServeOptions {
  /** A loopback address (`127.0.0.1`, another `127.x.y.z`, `::1` or `localhost`). Default `127.0.0.1`. */
  host?: string;
  /** The port; 0 picks a free one. */
  port: number;
  logger: Logger;
  /** Most SSE clients at once; more get 503. Default 8. */
  maxEventClients?: number;
  /** The clock ages and deadlines are counted by. Default `Date.now`. */
  now?: () => number;
}

export interface RunningInspector {
  /** `http://127.0.0.1:PORT/` */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Longest request target accepted (path and query); beyond it 414. */
export const MAX_TARGET_CHARS = 2048;
/** At most this often a `counts` event goes to the SSE clients, however many transitions arrive. */
export const COUNTS_INTERVAL_MS = 250;
/** An SSE client that lets this much output pile up is dropped (a slow reader must not grow memory). */
export const MAX_SSE_BACKLOG_BYTES = 1024 * 1024;
const HEARTBEAT_MS = 15_000;
/** How long SSE output is gathered before it is written (a person cannot tell 50 ms apart). */
const FLUSH_MS = 50;
const MAX_CONNECTIONS = 64;

export { inspectorErrors, isLoopbackHost, unbracketed } from './errors.js';

/**
 * The CSP of every answer: nothing from elsewhere — no external script, style, image, font, frame or connection; the
 * one inline script and style run by nonce; the script may only talk to this origin (SSE, the diagram).
 */
export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  head: boolean,
  extra: Record<string, string> = {},
): void {
  const nonce = extra['x-nonce'] ?? randomBytes(16).toString('base64');
  const headers: Record<string, string | number> = {
    'content-type': type,
    'content-length': Buffer.byteLength(body, 'utf8'),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'content-security-policy': contentSecurityPolicy(nonce),
    ...Object.fromEntries(Object.entries(extra).filter(([k]) => k !== 'x-nonce')),
  };
  res.writeHead(status, headers);
  res.end(head ? undefined : body);
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  head: boolean,
  extra: Record<string, string> = {},
): void {
  send(res, status, 'text/plain; charset=utf-8', `${message}\n`, head, extra);
}

interface EventClient {
  res: ServerResponse;
  /** Output waiting for the next flush (one write per tick, however many transitions). */
  pending: string;
}

/**
 * Starts the inspector on loopback. Throws `CONFIG_INVALID` for a non-loopback host or a port it cannot bind. The
 * inspector never keeps the process alive by itself (its listener and connections are unref'd): a stdio server still
 * ends when its client closes stdin, page open or not.
 */
export async function serveInspector(model: InspectorModel, options: InspectorServeOptions): Promise<RunningInspector> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopbackHost(host)) throw inspectorErrors.notLoopback(host);
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535)
    throw inspectorErrors.portInvalid(options.port);
  const now = options.now ?? Date.now;
  const maxClients = options.maxEventClients ?? 8;
  if (!Number.isInteger(maxClients) || maxClients < 1)
    throw new IntentError('CONFIG_INVALID', `Inspector option maxEventClients must be an integer of at least 1.`);
  const logger = options.logger;
  // Re-made once bound: the address actually bound (another 127.x.y.z, say) is a Host the page is reached at too.
  let guard = new HostOriginGuard(options.port, undefined);
  const clients = new Set<EventClient>();
  const sockets = new Set<Socket>();

  // --- SSE: one batched write per tick per client, counts at most every COUNTS_INTERVAL_MS -----------------------
  let flushScheduled = false;
  let countsDirty = false;
  const flush = (): void => {
    flushScheduled = false;
    for (const client of clients) {
      if (client.pending === '') continue;
      const chunk = client.pending;
      client.pending = '';
      client.res.write(chunk);
      if (client.res.writableLength > MAX_SSE_BACKLOG_BYTES) {
        logger.warn('inspector dropped a slow SSE client', { backlogBytes: client.res.writableLength });
        clients.delete(client);
        client.res.destroy();
      }
    }
  };
  const enqueue = (client: EventClient, text: string): void => {
    client.pending += text;
    if (!flushScheduled) {
      flushScheduled = true;
      // One write per client every FLUSH_MS at most, however many transitions: a flood costs a few writes a second.
      setTimeout(flush, FLUSH_MS).unref();
    }
  };
  const countsEvent = (): string => {
    // From the view's cached live index: with thousands of live requests an engine snapshot every 250 ms would cost a
    // large share of the event loop.
    const { live, store } = liveSummary(model);
    const data = { ...model.counts(), live, store: { ...store, bytesText: bytes(store.bytes) } };
    return `event: counts\ndata: ${JSON.stringify(data)}\n\n`;
  };
  const unsubscribe = model.onTransition((t: HandoffTransition) => {
    if (clients.size === 0) return;
    const text = `event: transition\ndata: ${transitionEventData(t)}\n\n`;
    for (const client of clients) enqueue(client, text);
    countsDirty = true;
  });
  const countsTimer = setInterval(() => {
    if (!countsDirty || clients.size === 0) return;
    countsDirty = false;
    const text = countsEvent();
    for (const client of clients) enqueue(client, text);
  }, COUNTS_INTERVAL_MS);
  countsTimer.unref();
  const heartbeat = setInterval(() => {
    for (const client of clients) enqueue(client, ': keep-alive\n\n');
  }, HEARTBEAT_MS);
  heartbeat.unref();

  const openEvents = (req: IncomingMessage, res: ServerResponse): void => {
    if (clients.size >= maxClients) {
      sendError(res, 503, `At most ${maxClients} event streams at once; close one and retry.`, false, {
        'retry-after': '5',
      });
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'content-security-policy': contentSecurityPolicy(randomBytes(16).toString('base64')),
      connection: 'keep-alive',
    });
    const client: EventClient = { res, pending: '' };
    clients.add(client);
    enqueue(client, `retry: 2000\nevent: hello\ndata: ${JSON.stringify({ startedAt: model.startedAt })}\n\n`);
    enqueue(client, countsEvent());
    const drop = (): void => {
      clients.delete(client);
    };
    req.on('close', drop);
    res.on('error', drop);
  };

  // --- routes --------------------------------------------------------------------------------------------------------
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? '';
    const refused = guard.refusedHeader(req);
    if (refused !== undefined) {
      sendError(res, 403, `Forbidden: this ${refused} header is not allowed here.`, method === 'HEAD');
      return;
    }
    if (method !== 'GET' && method !== 'HEAD') {
      // Nothing on the inspector changes state: every other method is refused before any routing.
      sendError(res, 405, 'The inspector only answers GET and HEAD.', false, { allow: 'GET, HEAD' });
      return;
    }
    const head = method === 'HEAD';
    const target = req.url ?? '/';
    if (target.length > MAX_TARGET_CHARS) {
      sendError(res, 414, `Request target longer than ${MAX_TARGET_CHARS} characters.`, head);
      return;
    }
    const mark = target.indexOf('?');
    const path = mark < 0 ? target : target.slice(0, mark);
    let query: InspectorQuery;
    try {
      query = parseQuery(mark < 0 ? '' : target.slice(mark + 1));
    } catch (error) {
      if (!(error instanceof IntentError)) throw error;
      if (path.startsWith('/api/'))
        send(res, 400, 'application/json; charset=utf-8', JSON.stringify({ error: error.toJSON() }), head);
      else sendError(res, 400, `Bad request: ${error.message}`, head);
      return;
    }
    switch (path) {
      case '/': {
        const view = buildView(model, query, now());
        const picture = diagramSvg({
          counts: view.counts,
          highlight: view.selected?.state,
          path: view.selected?.steps,
        });
        const svg = await picture.svg;
        const nonce = randomBytes(16).toString('base64');
        // An older picture (render budget spent) makes the page's script ask for the current one.
        send(res, 200, 'text/html; charset=utf-8', renderPage(view, svg, nonce, picture.current), head, {
          'x-nonce': nonce,
        });
        return;
      }
      case '/api/snapshot':
        send(res, 200, 'application/json; charset=utf-8', JSON.stringify(buildView(model, query, now())), head);
        return;
      case '/api/diagram.svg': {
        const tracked = query.request === undefined ? undefined : model.request(query.request);
        const picture = diagramSvg({ counts: model.counts(), highlight: tracked?.state, path: tracked?.steps });
        // "no": an older picture was served to spare a render; the page asks again.
        send(res, 200, 'image/svg+xml; charset=utf-8', await picture.svg, head, {
          'x-diagram-current': picture.current ? 'yes' : 'no',
        });
        return;
      }
      case '/api/events':
        if (head) {
          send(res, 200, 'text/event-stream; charset=utf-8', '', true);
          return;
        }
        openEvents(req, res);
        return;
      default:
        sendError(
          res,
          404,
          'Not found: the inspector serves /, /api/snapshot, /api/events and /api/diagram.svg.',
          head,
        );
    }
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      logger.error('inspector request failed', { error: error instanceof Error ? error.message : String(error) });
      if (!res.headersSent) sendError(res, 500, 'Internal error.', false);
      else res.destroy();
    });
  });
  server.maxConnections = MAX_CONNECTIONS;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.maxHeadersCount = 64;
  // CONNECT never reaches the request handler in Node; it is refused like every other method but GET and HEAD.
  server.on('connect', (_req: IncomingMessage, socket: Socket) => {
    socket.end('HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
  });
  server.on('connection', (socket: Socket) => {
    // A watching page (an SSE stream, a keep-alive connection) must not keep a finished server alive.
    socket.unref();
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // A request body is never read: the server answers and closes the connection's input as Node does by default.
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      reject(inspectorErrors.cannotListen(host, options.port, error.code ?? error.message));
    };
    server.once('error', onError);
    server.listen(options.port, unbracketed(host), () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.unref();
  const address = server.address() as AddressInfo;
  // What was actually bound counts, whatever the spelling of the host (localhost may resolve anywhere).
  if (!isLoopbackHost(address.address)) {
    await new Promise<void>((resolve) =>
      server.close(() => {
        resolve();
      }),
    );
    throw inspectorErrors.notLoopback(address.address);
  }
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${shown}:${address.port}/`;
  guard = new HostOriginGuard(address.port, {
    origin: `http://${shown}:${address.port}`,
    host: `${shown}:${address.port}`,
  });
  return {
    url,
    port: address.port,
    close: async () => {
      unsubscribe();
      clearInterval(countsTimer);
      clearInterval(heartbeat);
      for (const client of clients) client.res.end();
      clients.clear();
      const closed = new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
