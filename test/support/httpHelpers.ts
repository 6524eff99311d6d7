/**
 * Shared material for the HTTP tests (test/server/http*.test.ts, hostOrigin, nginx): an in-process `serveHttp` with a
 * silent logger, raw HTTP requests with exact headers (node:http, so `Host` can be anything or missing), SSE parsing,
 * raw MCP sessions, the official v2 client over Streamable HTTP, and bounded polling.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect as netConnect } from 'node:net';
import { Client, StreamableHTTPClientTransport, type FetchLike } from '@modelcontextprotocol/client';
import { expect } from 'vitest';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter, type IntentMcpAdapter } from '../../src/mcp/adapter.js';
import { serveHttp, type HttpServeOptions, type RunningHttpServer } from '../../src/server/http.js';
import { createLogger } from '../../src/server/logger.js';
import { SEED_ARGS, SEED_CANDIDATE, SEED_REPLY, SEED_RESULT_TEXT, textOf } from './mcpFixtures.js';

export const silentLogger = createLogger('silent');

/** The two revisions served over HTTP (spec 05). */
export const HTTP_REVISIONS = ['2025-06-18', '2025-11-25'] as const;
export type HttpRevision = (typeof HTTP_REVISIONS)[number];

/** What a Streamable HTTP client must accept on a POST. */
export const MCP_ACCEPT = 'application/json, text/event-stream';

/** The embedded default: host mode, one instance `main` without schema. */
export function hostAdapter(): IntentMcpAdapter {
  return createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) } });
}

export interface InProcessServer {
  readonly server: RunningHttpServer;
  readonly adapter: IntentMcpAdapter;
  readonly url: string;
  readonly port: number;
  /** `http://127.0.0.1:PORT` */
  readonly base: string;
  close(): Promise<void>;
}

/** `serveHttp` on 127.0.0.1 with an ephemeral port and a silent logger; options override the defaults. */
/** `serveHttp` options for a test listener: loopback, a free port, `/mcp`, no public origin, silent. */
export function serveOptions(overrides: Partial<HttpServeOptions> = {}): HttpServeOptions {
  return {
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    publicOrigin: undefined,
    maxSessions: 4,
    sessionIdleMs: 1_800_000,
    logger: silentLogger,
    ...overrides,
  };
}

export async function startInProcess(
  options: Partial<HttpServeOptions> & { adapter?: IntentMcpAdapter } = {},
): Promise<InProcessServer> {
  const { adapter = hostAdapter(), ...rest } = options;
  const server = await serveHttp(adapter, { ...serveOptions(), maxSessions: 16, ...rest });
  return {
    server,
    adapter,
    url: server.url,
    port: server.port,
    base: `http://127.0.0.1:${server.port}`,
    close: async () => {
      await server.close();
      await adapter.close();
    },
  };
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export interface RawRequestOptions {
  method?: string;
  /** Sent exactly as given. A `host` entry replaces the automatic one. */
  headers?: Record<string, string>;
  body?: string | Buffer | undefined;
  /** false: send no Host header at all (unless `headers.host` is given). */
  setHost?: boolean;
  /** Aborting destroys the connection (the promise then rejects). */
  signal?: AbortSignal;
}

/** The host to connect to: WHATWG keeps an IPv6 literal's brackets in `hostname` ("[::1]"), node wants it bare. */
function bareHost(target: URL): string {
  return target.hostname.replace(/^\[(.*)\]$/, '$1');
}

/** One HTTP/1.1 request with exact headers; resolves with the whole response body. */
export function rawRequest(url: string, options: RawRequestOptions = {}): Promise<RawResponse> {
  const target = new URL(url);
  return new Promise<RawResponse>((resolve, reject) => {
    const req = httpRequest(
      {
        host: bareHost(target),
        port: target.port,
        path: target.pathname + target.search,
        method: options.method ?? 'GET',
        headers: options.headers ?? {},
        setHost: options.setHost ?? true,
        agent: false,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A request written byte for byte on a socket (e.g. HTTP/1.0 with no Host); resolves with status and body. */
export function rawSocketRequest(port: number, head: string, body = ''): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = netConnect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const status = Number(/^HTTP\/1\.\d (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, text: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
    socket.end(head.replace(/\n/g, '\r\n') + '\r\n' + body);
  });
}

export interface JsonRpcMessage {
  jsonrpc: '2.0';
  id?: string | number | null;
  method?: string;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

/** The data of each event of an SSE body (its `data:` lines joined), empty events left out. */
export function sseDataOf(text: string): string[] {
  return text
    .split(/\r?\n\r?\n/)
    .map((event) =>
      event
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n'),
    )
    .filter((data) => data !== '');
}

/** The JSON-RPC messages of a response: a JSON body, or the `data:` lines of an SSE body. */
export function messagesOf(res: RawResponse): JsonRpcMessage[] {
  const type = res.headers['content-type'] ?? '';
  if (type.startsWith('text/event-stream'))
    return sseDataOf(res.text).map((data) => JSON.parse(data) as JsonRpcMessage);
  expect(type, `body: ${res.text}`).toMatch(/^application\/json/);
  const parsed = JSON.parse(res.text) as JsonRpcMessage | JsonRpcMessage[];
  return Array.isArray(parsed) ? parsed : [parsed];
}

/** The one JSON-RPC message of a response. */
export function messageOf(res: RawResponse): JsonRpcMessage {
  const messages = messagesOf(res);
  expect(messages).toHaveLength(1);
  return messages[0]!;
}

/** Asserts a JSON-RPC error body (`application/json`, `id` present, numeric code, a message) and returns the error. */
export function jsonRpcErrorOf(res: RawResponse): { code: number; message: string; data?: unknown } {
  expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
  const body = JSON.parse(res.text) as JsonRpcMessage;
  expect(body.jsonrpc).toBe('2.0');
  expect(body).toHaveProperty('id');
  expect(body.result).toBeUndefined();
  expect(body.error).toBeDefined();
  expect(typeof body.error?.code).toBe('number');
  expect(body.error?.message.length).toBeGreaterThan(0);
  return body.error!;
}

export function initializeBody(version: string, id: number | string = 1): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw-http-test', version: '1.0.0' } },
  });
}

/** POST an `initialize` with the given extra headers (e.g. Host, Origin) and nothing else. */
export function postInitialize(
  url: string,
  headers: Record<string, string> = {},
  version: HttpRevision = '2025-11-25',
  setHost = true,
): Promise<RawResponse> {
  return rawRequest(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: MCP_ACCEPT, ...headers },
    body: initializeBody(version),
    setHost,
  });
}

/** A session opened by hand: `initialize` + `notifications/initialized`. */
export interface RawSession {
  readonly url: string;
  readonly id: string;
  readonly version: HttpRevision;
  /** The headers every later request of this session carries. */
  headers(extra?: Record<string, string>): Record<string, string>;
  /** POST one JSON-RPC request in this session and return the response. */
  post: (body: unknown) => Promise<RawResponse>;
  /** `tools/call` in this session; returns the tool result (asserting a JSON-RPC success). */
  callTool: (name: string, args: Record<string, unknown>) => Promise<ToolReply>;
  /** DELETE the session. */
  delete: () => Promise<RawResponse>;
}

export interface ToolReply {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
}

let rawIds = 100;

export async function rawSession(
  url: string,
  version: HttpRevision = '2025-11-25',
  extraHeaders: Record<string, string> = {},
): Promise<RawSession> {
  const init = await postInitialize(url, extraHeaders, version);
  expect(init.status, init.text).toBe(200);
  const id = init.headers['mcp-session-id'];
  expect(typeof id).toBe('string');
  const result = messageOf(init).result as { protocolVersion: string };
  expect(result.protocolVersion).toBe(version);
  const sessionId = String(id);
  const headers = (extra: Record<string, string> = {}) => ({
    'content-type': 'application/json',
    accept: MCP_ACCEPT,
    'mcp-session-id': sessionId,
    'mcp-protocol-version': version,
    ...extraHeaders,
    ...extra,
  });
  const post = (body: unknown) => rawRequest(url, { method: 'POST', headers: headers(), body: JSON.stringify(body) });
  const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  expect(initialized.status, initialized.text).toBe(202);
  return {
    url,
    id: sessionId,
    version,
    headers,
    post,
    callTool: async (name, args) => {
      const res = await post({ jsonrpc: '2.0', id: ++rawIds, method: 'tools/call', params: { name, arguments: args } });
      expect(res.status, res.text).toBe(200);
      const message = messageOf(res);
      expect(message.error, JSON.stringify(message.error)).toBeUndefined();
      return message.result as ToolReply;
    },
    delete: () => rawRequest(url, { method: 'DELETE', headers: headers() }),
  };
}

/** An open GET SSE stream of a session. */
export interface SseStream {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Drops the stream from the client side (the TCP connection is destroyed). */
  abort(): void;
  /** Resolves when the connection is gone. */
  readonly closed: Promise<void>;
}

/** Opens `GET path` with `Accept: text/event-stream`; resolves once the response head arrived. */
export function openSse(url: string, headers: Record<string, string>): Promise<SseStream> {
  const target = new URL(url);
  return new Promise<SseStream>((resolve, reject) => {
    let closedResolve!: () => void;
    const closed = new Promise<void>((r) => {
      closedResolve = r;
    });
    const req = httpRequest(
      {
        host: bareHost(target),
        port: target.port,
        path: target.pathname,
        method: 'GET',
        headers: { accept: 'text/event-stream', ...headers },
        agent: false,
      },
      (res) => {
        res.on('data', () => undefined);
        res.on('error', () => undefined);
        res.on('close', closedResolve);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          abort: () => req.destroy(),
          closed,
        });
      },
    );
    req.on('error', (error) => {
      closedResolve();
      reject(error);
    });
    req.on('close', closedResolve);
    req.end();
  });
}

/** `GET /healthz`; asserts the shape and returns the session count. */
export async function healthSessions(base: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await rawRequest(`${base}/healthz`, { headers });
  expect(res.status).toBe(200);
  expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
  const body = JSON.parse(res.text) as { status: string; sessions: number };
  expect(Object.keys(body).sort()).toEqual(['sessions', 'status']);
  expect(body.status).toBe('ok');
  expect(Number.isInteger(body.sessions)).toBe(true);
  return body.sessions;
}

/** Retries `check` until it returns true, at most `timeoutMs`. */
export async function pollUntil(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 5000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface HttpClient {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
  /** Every request the transport made: method, session id header, protocol header, JSON-RPC method(s). */
  readonly requests: { method: string; session: string | null; protocol: string | null; rpc: string[] }[];
  callTool: (name: string, args: Record<string, unknown>) => Promise<ToolReply>;
  /** DELETE the session (`terminateSession`) and close the client. */
  end: () => Promise<void>;
}

function rpcMethods(body: unknown): string[] {
  if (typeof body !== 'string') return [];
  try {
    const parsed = JSON.parse(body) as { method?: string } | { method?: string }[];
    return (Array.isArray(parsed) ? parsed : [parsed]).map((m) => m.method ?? '(response)');
  } catch {
    return [];
  }
}

/** The official v2 client pinned to one 2025 revision, over Streamable HTTP (optionally with a custom fetch). */
export async function connectClient(
  url: string,
  version: HttpRevision,
  options: { fetch?: FetchLike } = {},
): Promise<HttpClient> {
  const requests: HttpClient['requests'] = [];
  const inner: FetchLike = options.fetch ?? ((u, init) => fetch(u, init));
  const recording: FetchLike = (u, init) => {
    const headers = new Headers(init?.headers);
    requests.push({
      method: init?.method ?? 'GET',
      session: headers.get('mcp-session-id'),
      protocol: headers.get('mcp-protocol-version'),
      rpc: rpcMethods(init?.body),
    });
    return inner(u, init);
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recording });
  const client = new Client({ name: 'http-test', version: '1.0.0' }, { supportedProtocolVersions: [version] });
  await client.connect(transport);
  return {
    client,
    transport,
    requests,
    callTool: (name, args) => client.callTool({ name, arguments: args }),
    end: async () => {
      await transport.terminateSession();
      await client.close();
    },
  };
}

export interface HostTask {
  kind: string;
  requestId: string;
  submissionToken: string;
}

/** `intent_prepare` of the seed input; asserts a model task and returns it. */
export async function prepareSeed(call: (name: string, args: Record<string, unknown>) => Promise<ToolReply>) {
  const prepared = await call('intent_prepare', SEED_ARGS);
  expect(prepared.isError, textOf(prepared)).toBe(false);
  const task = prepared.structuredContent as HostTask;
  expect(task.kind).toBe('model_task');
  expect(typeof task.requestId).toBe('string');
  expect(typeof task.submissionToken).toBe('string');
  return task;
}

/** `intent_accept` of the seed candidate for a task. */
export function acceptSeed(
  call: (name: string, args: Record<string, unknown>) => Promise<ToolReply>,
  task: HostTask,
): Promise<ToolReply> {
  return call('intent_accept', {
    requestId: task.requestId,
    submissionToken: task.submissionToken,
    candidateText: SEED_CANDIDATE,
  });
}

/** Asserts the seed result: `content[0].text` byte-identical to the golden text, the same structured content. */
export function expectGolden(reply: ToolReply): void {
  expect(reply.isError, textOf(reply)).toBe(false);
  expect(textOf(reply)).toBe(SEED_RESULT_TEXT);
  expect(reply.structuredContent).toEqual(SEED_REPLY.structuredContent);
}

/** The seed handoff: prepare, then accept the seed candidate; asserts the golden text. */
export async function seedHandoff(
  call: (name: string, args: Record<string, unknown>) => Promise<ToolReply>,
): Promise<HostTask> {
  const task = await prepareSeed(call);
  expectGolden(await acceptSeed(call, task));
  return task;
}

/** The `error` of a technical-failure tool reply. */
export function toolErrorCode(reply: ToolReply): string {
  expect(reply.isError).toBe(true);
  expect(reply.structuredContent).toBeUndefined();
  const wire = JSON.parse(textOf(reply)) as { error: { code: string } };
  return wire.error.code;
}

/** A request whose body stops short: the head and the first `sent` bytes of a body that declares `declared`. */
export interface StalledRequest {
  /** Resolves with the status, head and body once the server answers and closes, or the socket ends. */
  readonly response: Promise<{ status: number; head: string; text: string }>;
  /** Resolves once at least the response head has arrived; the status (0 when the socket closed with nothing). */
  readonly status: Promise<number>;
  destroy(): void;
}

/**
 * Sends `POST path` with `Content-Length: declared` (or chunked when `declared` is undefined) and only `sent` bytes
 * of body, then stalls; `extraHeaders` go as given.
 */
export function stalledPost(
  port: number,
  options: { path?: string; declared?: number; sent: number; headers?: Record<string, string> },
): StalledRequest {
  const socket = netConnect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  let statusResolve!: (status: number) => void;
  const status = new Promise<number>((r) => {
    statusResolve = r;
  });
  const response = new Promise<{ status: number; head: string; text: string }>((resolve) => {
    const settle = (): void => {
      const text = Buffer.concat(chunks).toString('utf8');
      const code = Number(/^HTTP\/1\.\d (\d{3})/.exec(text)?.[1] ?? 0);
      statusResolve(code);
      const end = text.indexOf('\r\n\r\n');
      resolve({ status: code, head: text.slice(0, Math.max(0, end)), text: text.slice(end + 4) });
    };
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      const code = /^HTTP\/1\.\d (\d{3})/.exec(Buffer.concat(chunks).toString('latin1'));
      if (code?.[1] !== undefined) statusResolve(Number(code[1]));
    });
    socket.on('error', () => undefined);
    socket.on('close', settle);
  });
  const headers = {
    host: `127.0.0.1:${port}`,
    'content-type': 'application/json',
    accept: MCP_ACCEPT,
    ...(options.declared === undefined
      ? { 'transfer-encoding': 'chunked' }
      : { 'content-length': String(options.declared) }),
    ...options.headers,
  };
  const head =
    `POST ${options.path ?? '/mcp'} HTTP/1.1\r\n` +
    Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('') +
    '\r\n';
  const body = Buffer.alloc(options.sent, 0x20);
  socket.write(head);
  if (options.sent > 0)
    socket.write(
      options.declared === undefined
        ? Buffer.concat([Buffer.from(`${options.sent.toString(16)}\r\n`), body, Buffer.from('\r\n')])
        : body,
    );
  return { response, status, destroy: () => socket.destroy() };
}
