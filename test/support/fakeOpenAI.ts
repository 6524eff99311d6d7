/**
 * A real OpenAI-compatible chat completions endpoint on loopback, answering from a script. Each request is recorded
 * (headers and parsed body) before it is answered.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted answer, used by one request, in order. */
export type FakeReply =
  /** A 200 completion whose message content is `content` (a candidate text), or with a `refusal`. */
  | { content: string | null; refusal?: string; finishReason?: string }
  /** An HTTP error with an OpenAI-style error body; `headers` default to `retry-after-ms: 0` (retry at once). */
  | { status: number; body?: unknown; headers?: Record<string, string> }
  /** No answer at all: the request stays open until the client closes the connection (abort, timeout). */
  | { hang: true }
  /** A 200 whose body is `bytes` as they are, with `headers` (a gzip bomb: `content-encoding: gzip`). */
  | { raw: Buffer; headers: Record<string, string> };

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** The parsed JSON body (`{}` when it was not JSON). */
  readonly body: ChatBody;
  /** Resolves when the client closed the connection before an answer was sent (only for `hang`). */
  readonly closedByClient: Promise<void>;
}

export interface ChatBody {
  model?: string;
  temperature?: number;
  messages?: { role: string; content: string }[];
  response_format?: { type: string; json_schema?: { name: string; strict?: boolean; schema: unknown } };
  [key: string]: unknown;
}

export interface FakeOpenAI {
  /** `http://127.0.0.1:PORT/v1`: what `baseUrl` should be. */
  readonly baseUrl: string;
  readonly requests: RecordedRequest[];
  /** Appends answers to the script. A request finding the script empty gets a 500 the client does not retry. */
  reply(...replies: FakeReply[]): void;
  /** Resolves with the `n`-th request (1-based) once it has arrived. */
  request(n: number): Promise<RecordedRequest>;
}

const started = new WeakMap<FakeOpenAI, Server>();

/** Starts a fake on 127.0.0.1 with a free port. Stop it with {@link stopFakeOpenAI}. */
export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const script: FakeReply[] = [];
  const requests: RecordedRequest[] = [];
  const waiters: { n: number; resolve: (r: RecordedRequest) => void }[] = [];

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: ChatBody;
      try {
        body = JSON.parse(text) as ChatBody;
      } catch {
        body = {};
      }
      let closed!: () => void;
      const closedByClient = new Promise<void>((resolve) => {
        closed = resolve;
      });
      res.once('close', () => {
        if (!res.writableFinished) closed();
      });
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        closedByClient,
      };
      requests.push(recorded);
      for (const w of waiters.filter((x) => x.n === requests.length)) w.resolve(recorded);
      answer(res, req.method === 'POST' && req.url === '/v1/chat/completions' ? script.shift() : notFound(), body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const fake: FakeOpenAI = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    reply(...replies) {
      script.push(...replies);
    },
    request(n) {
      const seen = requests[n - 1];
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
  };
  started.set(fake, server);
  return fake;
}

/** Closes the fake and every connection still open on it. */
export async function stopFakeOpenAI(fake: FakeOpenAI): Promise<void> {
  const server = started.get(fake);
  if (server === undefined) return;
  started.delete(fake);
  server.closeAllConnections();
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
}

/** A loopback URL on which nothing listens (a port that was just free), for connection-refused tests. */
export async function closedPortBaseUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
  return `http://127.0.0.1:${port}/v1`;
}

function notFound(): FakeReply {
  return { status: 404, body: { error: { message: 'Not found', type: 'invalid_request_error' } } };
}

function answer(res: ServerResponse, reply: FakeReply | undefined, body: ChatBody): void {
  if (reply === undefined) {
    sendJson(
      res,
      500,
      { error: { message: 'The fake endpoint has no scripted answer left.' } },
      {
        'x-should-retry': 'false',
      },
    );
    return;
  }
  if ('hang' in reply) return;
  if ('raw' in reply) {
    res.writeHead(200, { 'content-length': reply.raw.length, ...reply.headers });
    res.end(reply.raw);
    return;
  }
  if ('status' in reply) {
    const errorBody = reply.body ?? { error: { message: `status ${reply.status}`, type: 'error' } };
    sendJson(res, reply.status, errorBody, reply.headers ?? { 'retry-after-ms': '0' });
    return;
  }
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: reply.content,
    refusal: reply.refusal ?? null,
  };
  sendJson(res, 200, {
    id: `chatcmpl-fake-${Date.now()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model ?? 'fake-model',
    choices: [{ index: 0, message, logprobs: null, finish_reason: reply.finishReason ?? 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 },
  });
}

function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}
