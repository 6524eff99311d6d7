/**
 * Stateful Streamable HTTP (spec 05 "HTTP", spec 01 "Protocol and remote use", spec 03 "HANDOFF_NOT_FOUND after session
 * close"): both 2025 revisions negotiate and complete the seed handoff with prepare and accept as separate POSTs in one
 * MCP session; a dropped SSE stream is not a close; DELETE ends the session and its records; unknown sessions get 404;
 * the session cap answers 503 + Retry-After; idle sessions are reclaimed but not busy ones; 2026-07-28 gets the
 * unsupported-version error and the server keeps serving; /healthz; the 4 MiB body limit; paths outside --path.
 * In process through `serveHttp`, and once against the built command as a child process.
 */
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter } from '../../src/mcp/adapter.js';
import { MAX_PROTOCOL_ERROR_MESSAGE_CHARS, boundProtocolError } from '../../src/server/errors.js';
import { MAX_BODY_BYTES } from '../../src/server/http.js';
import { startBuiltServer, type ChildServer } from '../support/httpChild.js';
import {
  HTTP_REVISIONS,
  MCP_ACCEPT,
  acceptSeed,
  connectClient,
  expectGolden,
  healthSessions,
  initializeBody,
  jsonRpcErrorOf,
  messageOf,
  openSse,
  pollUntil,
  postInitialize,
  prepareSeed,
  rawRequest,
  rawSession,
  seedHandoff,
  startInProcess,
  toolErrorCode,
  type HttpClient,
  type InProcessServer,
  type RawResponse,
} from '../support/httpHelpers.js';
import { SEED_ARGS, hangingExecutor, textOf } from '../support/mcpFixtures.js';

/** Everything a test opened, closed after it whatever happened. */
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function server(options: Parameters<typeof startInProcess>[0] = {}): Promise<InProcessServer> {
  const s = await startInProcess(options);
  cleanups.push(() => s.close());
  return s;
}

async function client(url: string, version: (typeof HTTP_REVISIONS)[number] = '2025-11-25'): Promise<HttpClient> {
  const c = await connectClient(url, version);
  cleanups.push(() => c.end());
  return c;
}

function expect404(res: RawResponse): void {
  expect(res.status, res.text).toBe(404);
  jsonRpcErrorOf(res);
  expect(res.headers['mcp-session-id']).toBeUndefined();
}

describe('stateful Streamable HTTP in process [SEED-HTTP]', () => {
  it.each(HTTP_REVISIONS)(
    '[S05-HTTP-SESSION] %s: negotiates and completes the seed handoff, prepare and accept as separate POSTs of one session',
    async (revision) => {
      const s = await server();
      const c = await client(s.url, revision);
      expect(c.client.getNegotiatedProtocolVersion()).toBe(revision);
      const sessionId = c.transport.sessionId;
      expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(await healthSessions(s.base)).toBe(1);

      await seedHandoff((name, args) => c.callTool(name, args));

      // Two separate HTTP POSTs, both in the one MCP session, both naming the negotiated revision.
      const calls = c.requests.filter((r) => r.method === 'POST' && r.rpc.includes('tools/call'));
      expect(calls).toHaveLength(2);
      for (const call of calls) {
        expect(call.rpc).toEqual(['tools/call']);
        expect(call.session).toBe(sessionId);
        expect(call.protocol).toBe(revision);
      }
      // Never a new session per request: the initialize was the only request without a session id.
      expect(c.requests.filter((r) => r.session === null).map((r) => r.rpc)).toEqual([['initialize']]);
      expect(await healthSessions(s.base)).toBe(1);
    },
  );

  it("[H08-ERROR-BOUND] the SDK's own errors (unknown skill, resource, prompt) are cut to a short message, and the session goes on", async () => {
    const s = await server();
    const session = await rawSession(s.url);
    const huge = 'u'.repeat(200_000);
    for (const [method, params] of [
      ['skills/get', { uri: `skill://${huge}` }],
      ['resources/read', { uri: `skill://${huge}` }],
      ['prompts/get', { name: huge }],
    ] as const) {
      const res = await session.post({ jsonrpc: '2.0', id: 7, method, params });
      const error = messageOf(res).error as { code: number; message: string; data?: unknown };
      expect(error.code, method).toBe(-32602);
      expect(error.message.length, method).toBeLessThanOrEqual(MAX_PROTOCOL_ERROR_MESSAGE_CHARS + 1);
      expect(error.message.endsWith('…'), method).toBe(true);
      expect(res.text.length, method).toBeLessThan(2_000);
    }
    await seedHandoff(session.callTool);
  });

  it('[H08-ERROR-BOUND] a session request naming an unknown revision gets 400 quoting a short prefix of it', async () => {
    const s = await server();
    const session = await rawSession(s.url);
    const res = await rawRequest(s.url, {
      method: 'POST',
      headers: session.headers({ 'mcp-protocol-version': 'x'.repeat(10_000) }),
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(res.status).toBe(400);
    const error = messageOf(res).error as { code: number; message: string };
    expect(error.code).toBe(-32000);
    expect(error.message).toMatch(/^Bad Request: Unsupported protocol version: "x{64}…" \(supported versions: /);
    expect(res.text.length).toBeLessThan(400);
    // The session is untouched: a request with its own revision still works.
    await seedHandoff(session.callTool);
  });

  it('[H08-ERROR-BOUND] boundProtocolError: cuts long messages, drops oversized data, leaves everything else as it is', () => {
    const ok = { jsonrpc: '2.0' as const, id: 1, result: { text: 'x'.repeat(10_000) } };
    expect(boundProtocolError(ok)).toBe(ok);
    const small = { jsonrpc: '2.0' as const, id: 2, error: { code: -32602, message: 'short', data: { uri: 'a' } } };
    expect(boundProtocolError(small)).toBe(small);
    const big = {
      jsonrpc: '2.0' as const,
      id: 3,
      error: { code: -32602, message: `Resource not found: ${'x'.repeat(5_000)}`, data: { uri: 'x'.repeat(5_000) } },
    };
    const bounded = boundProtocolError(big) as typeof big;
    expect(bounded).toEqual({
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32602, message: `Resource not found: ${'x'.repeat(MAX_PROTOCOL_ERROR_MESSAGE_CHARS - 20)}…` },
    });
  });

  it('prepare and accept over raw POSTs of one session; the accept reply is the golden text, and a replay is too', async () => {
    const s = await server();
    const session = await rawSession(s.url, '2025-06-18');
    const task = await prepareSeed(session.callTool);
    const first = await acceptSeed(session.callTool, task);
    expectGolden(first);
    const replay = await acceptSeed(session.callTool, task);
    expect(textOf(replay)).toBe(textOf(first));
    expect((await session.delete()).status).toBe(200);
  });

  it('[S05-HTTP-DROPPED-STREAM] a dropped SSE stream keeps the session: a later accept in it still works', async () => {
    const s = await server();
    const session = await rawSession(s.url, '2025-11-25');
    const task = await prepareSeed(session.callTool);

    const stream = await openSse(s.url, session.headers());
    expect(stream.status).toBe(200);
    expect(String(stream.headers['content-type'])).toMatch(/^text\/event-stream/);
    // While it is open a second standalone stream is refused, which shows the server holds this one.
    const second = await openSse(s.url, session.headers());
    expect(second.status).toBe(409);
    second.abort();

    stream.abort();
    await stream.closed;
    // The server has seen the drop once it accepts a new standalone stream for the same session.
    await pollUntil('the server to release the dropped stream', async () => {
      const again = await openSse(s.url, session.headers());
      again.abort();
      await again.closed;
      return again.status === 200;
    });

    expect(await healthSessions(s.base)).toBe(1);
    expectGolden(await acceptSeed(session.callTool, task));
    expect(await healthSessions(s.base)).toBe(1);
  });

  it('[S05-HTTP-DROPPED-STREAM] a dropped SSE stream of the official client keeps its session too', async () => {
    const s = await server();
    // The client opens its standalone GET stream by itself after initialize; this fetch lets the test cut it.
    const streams: AbortController[] = [];
    const cutting = (u: string | URL, init?: RequestInit) => {
      if (init?.method !== 'GET') return fetch(u, init);
      const cut = new AbortController();
      streams.push(cut);
      const signal = init.signal ? AbortSignal.any([init.signal, cut.signal]) : cut.signal;
      return fetch(u, { ...init, signal });
    };
    const c = await connectClient(s.url, '2025-06-18', { fetch: cutting });
    cleanups.push(() => c.end());
    const task = await prepareSeed((n, a) => c.callTool(n, a));
    await pollUntil('the client to open its GET stream', () => streams.length > 0);
    for (const cut of streams) cut.abort();
    expectGolden(await acceptSeed((n, a) => c.callTool(n, a), task));
    expect(await healthSessions(s.base)).toBe(1);
  });

  it('[S05-HTTP-DELETE] DELETE ends the session: its records are gone for a new session (HANDOFF_NOT_FOUND) and its id gets 404', async () => {
    const s = await server();
    const old = await connectClient(s.url, '2025-11-25');
    const oldId = old.transport.sessionId!;
    const task = await prepareSeed((n, a) => old.callTool(n, a));
    await old.transport.terminateSession();
    await old.client.close();
    expect(await healthSessions(s.base)).toBe(0);

    const fresh = await client(s.url, '2025-11-25');
    expect(fresh.transport.sessionId).not.toBe(oldId);
    expect(toolErrorCode(await acceptSeed((n, a) => fresh.callTool(n, a), task))).toBe('HANDOFF_NOT_FOUND');

    const headers = {
      'content-type': 'application/json',
      accept: MCP_ACCEPT,
      'mcp-session-id': oldId,
      'mcp-protocol-version': '2025-11-25',
    };
    const call = JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'intent_prepare', arguments: SEED_ARGS },
    });
    expect404(await rawRequest(s.url, { method: 'POST', headers, body: call }));
    expect404(await rawRequest(s.url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } }));
    expect404(await rawRequest(s.url, { method: 'DELETE', headers }));
    expect(await healthSessions(s.base)).toBe(1);
  });

  it('[S05-HTTP-UNKNOWN-SESSION] an unknown session id gets 404 for POST, GET and DELETE, and creates nothing', async () => {
    const s = await server();
    for (const id of [randomUUID(), 'not-a-session']) {
      const headers = {
        'content-type': 'application/json',
        accept: MCP_ACCEPT,
        'mcp-session-id': id,
        'mcp-protocol-version': '2025-11-25',
      };
      expect404(
        await rawRequest(s.url, {
          method: 'POST',
          headers,
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        }),
      );
      // Even an initialize that names an unknown session is not turned into a new session.
      expect404(await rawRequest(s.url, { method: 'POST', headers, body: initializeBody('2025-11-25') }));
      expect404(await rawRequest(s.url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' } }));
      expect404(await rawRequest(s.url, { method: 'DELETE', headers }));
    }
    expect(await healthSessions(s.base)).toBe(0);
  });

  it('[S05-SESSION-CAP] maxSessions 2: the third initialize gets 503 + Retry-After + a JSON-RPC error; after a DELETE a new one succeeds', async () => {
    const s = await server({ maxSessions: 2 });
    const first = await connectClient(s.url, '2025-11-25');
    cleanups.push(() => first.end());
    const second = await client(s.url, '2025-06-18');
    expect(await healthSessions(s.base)).toBe(2);

    const refused = await postInitialize(s.url);
    expect(refused.status, refused.text).toBe(503);
    expect(refused.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    expect(refused.headers['mcp-session-id']).toBeUndefined();
    expect(jsonRpcErrorOf(refused).code).toBeLessThan(0);
    // The official client fails to connect rather than getting a session.
    const third = new Client({ name: 'third', version: '1.0.0' }, { supportedProtocolVersions: ['2025-11-25'] });
    await expect(third.connect(new StreamableHTTPClientTransport(new URL(s.url)))).rejects.toThrow();
    await third.close();
    expect(await healthSessions(s.base)).toBe(2);
    // The sessions already there are not disturbed.
    await seedHandoff((n, a) => second.callTool(n, a));

    await first.transport.terminateSession();
    await first.client.close();
    expect(await healthSessions(s.base)).toBe(1);
    const replacement = await client(s.url, '2025-11-25');
    await seedHandoff((n, a) => replacement.callTool(n, a));
    expect(await healthSessions(s.base)).toBe(2);
  });

  it('[S05-SESSION-CAP] the cap holds under concurrent initializes: never more than maxSessions, the rest 503, and it fills up to the cap', async () => {
    const s = await server({ maxSessions: 3 });
    const results = await Promise.all(Array.from({ length: 6 }, () => postInitialize(s.url)));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 503);
    expect(ok.length + refused.length).toBe(6);
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.length).toBeLessThanOrEqual(3);
    for (const r of refused) expect(r.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    expect(new Set(ok.map((r) => r.headers['mcp-session-id'])).size).toBe(ok.length);
    expect(await healthSessions(s.base)).toBe(ok.length);
    // Sequential initializes then fill exactly up to the cap, and no further.
    let statuses: number[] = [];
    for (let i = ok.length; i <= 3; i++) statuses = [...statuses, (await postInitialize(s.url)).status];
    expect(statuses.at(-1)).toBe(503);
    expect(statuses.slice(0, -1).every((status) => status === 200)).toBe(true);
    expect(await healthSessions(s.base)).toBe(3);
  });

  it("[H08-HTTP-RESOURCES] a cancelled call's stream is ended (its budget, socket and in-flight count go); an id in flight cannot be reused", async () => {
    const hanging = hangingExecutor();
    const adapter = createIntentMcpAdapter({
      mode: 'executor',
      instances: { main: new Intent({ executor: hanging.executor }) },
    });
    const s = await server({ adapter });
    const session = await rawSession(s.url);
    const call = (id: number) =>
      rawRequest(s.url, {
        method: 'POST',
        headers: session.headers(),
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'intent_parse', arguments: SEED_ARGS },
        }),
      });
    const first = call(1);
    await hanging.called;
    // The same id while the first is in flight: its answer could only reach one of them.
    const duplicate = await call(1);
    expect(duplicate.status).toBe(409);
    expect(messageOf(duplicate).error?.code).toBe(-32600);
    // Cancelled: the SDK sends no response, and the router ends the stream that waited for one.
    const cancelled = await session.post({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 1, reason: 'client timeout' },
    });
    expect(cancelled.status).toBe(202);
    const ended = await first;
    expect(ended.status).toBe(200);
    expect(ended.text).not.toContain('"result"');
    expect(ended.text).toContain('"code":-32800');
    await hanging.aborted;
    // The id is free again at once, and the session goes on.
    const again = call(1);
    await vi.waitFor(() => {
      expect(hanging.executor).toHaveBeenCalledTimes(2);
    });
    await session.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
    expect((await again).status).toBe(200);

    // A batch: the stream waits for every answer, the cancelled request's one included.
    const batch = rawRequest(s.url, {
      method: 'POST',
      headers: session.headers(),
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'intent_parse', arguments: SEED_ARGS } },
        { jsonrpc: '2.0', id: 8, method: 'ping' },
      ]),
    });
    await vi.waitFor(() => {
      expect(hanging.executor).toHaveBeenCalledTimes(3);
    });
    await session.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } });
    const answered = await batch;
    expect(answered.text).toContain('"id":8');
    expect(answered.text).toContain('"code":-32800');
    // Both ids are free again.
    const ping = await session.post([
      { jsonrpc: '2.0', id: 7, method: 'ping' },
      { jsonrpc: '2.0', id: 8, method: 'ping' },
    ]);
    expect(ping.status).toBe(200);
    expect(ping.text).not.toContain('already used');
  });

  it('[S05-IDLE-RECLAIM] idle reclaim: a session idle past sessionIdleMs is closed (404), one with a stream or a request in flight is not', async () => {
    let clock = 1_000_000;
    const idleMs = 60_000;
    const hanging = hangingExecutor();
    // Executor mode with an executor that never answers: an intent_parse call stays in flight until cancelled.
    const adapter = createIntentMcpAdapter({
      mode: 'executor',
      instances: { main: new Intent({ executor: hanging.executor }) },
    });
    // The short rule for sessions that never got past their handshake is tested on its own below.
    const s = await server({ adapter, sessionIdleMs: idleMs, sessionInitIdleMs: idleMs, now: () => clock });

    const idle = await rawSession(s.url, '2025-11-25');
    const streaming = await rawSession(s.url, '2025-11-25');
    const busy = await rawSession(s.url, '2025-06-18');
    const stream = await openSse(s.url, streaming.headers());
    expect(stream.status).toBe(200);
    cleanups.push(async () => {
      stream.abort();
      await stream.closed;
    });
    const inFlight = new AbortController();
    const busyCall = rawRequest(s.url, {
      method: 'POST',
      headers: busy.headers(),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'intent_parse', arguments: SEED_ARGS },
      }),
      signal: inFlight.signal,
    }).catch((error: unknown) => error);
    await hanging.called;
    expect(await healthSessions(s.base)).toBe(3);

    // Exactly at the limit nothing is idle yet.
    clock += idleMs - 1;
    expect(await s.server.reclaimIdle()).toBe(0);
    expect(await healthSessions(s.base)).toBe(3);

    clock += 2;
    expect(await s.server.reclaimIdle()).toBe(1);
    expect(await healthSessions(s.base)).toBe(2);
    expect404(await idle.post({ jsonrpc: '2.0', id: 2, method: 'ping' }));
    // Closing the busy session's requests is not a sweep's business: its call is still waiting.
    expect(hanging.executor).toHaveBeenCalledTimes(1);

    // Once the stream and the request are gone, the two sessions age from that moment and are reclaimed in turn.
    stream.abort();
    await stream.closed;
    inFlight.abort();
    await busyCall;
    // (The server sees the drops a moment later and stamps lastSeen then, so the clock moves on at each try.)
    let reclaimed = 0;
    await pollUntil('the sweep to reclaim both sessions', async () => {
      clock += idleMs + 1;
      reclaimed += await s.server.reclaimIdle();
      return reclaimed === 2;
    });
    expect(await healthSessions(s.base)).toBe(0);
    expect404(await streaming.post({ jsonrpc: '2.0', id: 3, method: 'ping' }));
    expect404(await busy.post({ jsonrpc: '2.0', id: 4, method: 'ping' }));
    // Closed as if deleted: the pending recognition of the reclaimed session was cancelled.
    let timer: NodeJS.Timeout | undefined;
    const signal = await Promise.race([
      hanging.aborted,
      new Promise<undefined>((r) => {
        timer = setTimeout(() => {
          r(undefined);
        }, 2000);
      }),
    ]);
    clearTimeout(timer);
    expect(signal?.aborted, 'the executor call of a reclaimed session was not aborted').toBe(true);
  });

  it('[S05-IDLE-RECLAIM] a session that was used recently is not reclaimed (every request refreshes it)', async () => {
    let clock = 5_000;
    const s = await server({ sessionIdleMs: 10_000, now: () => clock });
    const session = await rawSession(s.url, '2025-11-25');
    clock += 9_000;
    const pong = await session.post({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(pong.status).toBe(200);
    clock += 9_000;
    expect(await s.server.reclaimIdle()).toBe(0);
    const task = await prepareSeed(session.callTool);
    clock += 10_001;
    expect(await s.server.reclaimIdle()).toBe(1);
    expect(await healthSessions(s.base)).toBe(0);
    // The reclaimed session's records are gone: a new session cannot accept them.
    const fresh = await rawSession(s.url, '2025-11-25');
    expect(toolErrorCode(await acceptSeed(fresh.callTool, task))).toBe('HANDOFF_NOT_FOUND');
  });

  it('[S05-HTTP-2026] 2026-07-28 is refused with the unsupported-version error (-32022 naming the revisions) and the server keeps serving', async () => {
    const s = await server();

    const modern = new Client(
      { name: 'modern', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    const failure = await modern.connect(new StreamableHTTPClientTransport(new URL(s.url))).then(
      () => undefined,
      (error: unknown) => error as { code?: number; data?: { supported?: string[] } },
    );
    await modern.close();
    expect(failure, 'a client pinned to 2026-07-28 connected over HTTP').toBeDefined();
    expect(failure?.code).toBe(-32022);
    expect([...(failure?.data?.supported ?? [])].sort()).toEqual(['2025-06-18', '2025-11-25']);

    const discover = await rawRequest(s.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: MCP_ACCEPT,
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'server/discover',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'd-1', method: 'server/discover', params: {} }),
    });
    expect(discover.status, discover.text).toBe(400);
    expect(discover.headers['mcp-session-id']).toBeUndefined();
    const body = messageOf(discover);
    expect(body.id).toBe('d-1');
    expect(body.error?.code).toBe(-32022);
    expect(body.error?.message).toContain('2026-07-28');
    const data = body.error?.data as { supported: string[]; requested: string };
    expect([...data.supported].sort()).toEqual(['2025-06-18', '2025-11-25']);
    expect(data.requested).toBe('2026-07-28');
    expect(await healthSessions(s.base)).toBe(0);

    // Still serving both 2025 revisions afterwards.
    for (const revision of HTTP_REVISIONS) {
      const c = await client(s.url, revision);
      await seedHandoff((n, a) => c.callTool(n, a));
    }
    expect(await healthSessions(s.base)).toBe(2);
  });

  it('[S05-HEALTHZ] /healthz answers 200 {"status":"ok","sessions":N} with the live count, outside the MCP path', async () => {
    const s = await server({ path: '/intent' });
    expect(await healthSessions(s.base)).toBe(0);
    const a = await client(s.url, '2025-11-25');
    expect(await healthSessions(s.base)).toBe(1);
    const b = await rawSession(s.url, '2025-06-18');
    expect(await healthSessions(s.base)).toBe(2);
    const raw = await rawRequest(`${s.base}/healthz`);
    expect(raw.text).toBe('{"status":"ok","sessions":2}');
    expect((await b.delete()).status).toBe(200);
    expect(await healthSessions(s.base)).toBe(1);
    await a.transport.terminateSession();
    expect(await healthSessions(s.base)).toBe(0);
    // It lives at /healthz only, not under the MCP path.
    expect((await rawRequest(`${s.base}/intent/healthz`)).status).toBe(404);
  });

  it('[S05-BODY-LIMIT] a body over 4 MiB gets 413 (declared or streamed), exactly 4 MiB does not, and the server keeps serving', async () => {
    const s = await server();
    const headers = { 'content-type': 'application/json', accept: MCP_ACCEPT };
    // Exactly the limit: an initialize padded with JSON whitespace is processed.
    const init = initializeBody('2025-11-25');
    const exact = Buffer.concat([Buffer.from(init), Buffer.alloc(MAX_BODY_BYTES - Buffer.byteLength(init), 0x20)]);
    expect(exact.length).toBe(4 * 1024 * 1024);
    const ok = await rawRequest(s.url, { method: 'POST', headers, body: exact });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.headers['mcp-session-id']).toBeDefined();
    expect(await healthSessions(s.base)).toBe(1);

    // One byte more, with Content-Length.
    const over = Buffer.concat([exact, Buffer.from(' ')]);
    const declared = await rawRequest(s.url, { method: 'POST', headers, body: over });
    expect(declared.status).toBe(413);
    jsonRpcErrorOf(declared);

    // Streamed without Content-Length (chunked): refused once the limit is passed.
    const streamed = await new Promise<RawResponse>((resolve, reject) => {
      const req = httpRequest(s.url, { method: 'POST', headers, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
        });
      });
      req.on('error', reject);
      const chunk = Buffer.alloc(256 * 1024, 0x20);
      let sent = 0;
      const write = (): void => {
        while (sent < MAX_BODY_BYTES + chunk.length) {
          sent += chunk.length;
          if (!req.write(chunk)) {
            req.once('drain', write);
            return;
          }
        }
        req.end();
      };
      write();
    });
    expect(streamed.status).toBe(413);
    jsonRpcErrorOf(streamed);

    // Inside a session too; the session survives its oversized request.
    const session = await rawSession(s.url, '2025-11-25');
    const inSession = await rawRequest(s.url, { method: 'POST', headers: session.headers(), body: over });
    expect(inSession.status).toBe(413);
    await seedHandoff(session.callTool);
    expect(await healthSessions(s.base)).toBe(2);
  });

  it('requests outside the path get 404 and create nothing', async () => {
    const s = await server();
    const post = { 'content-type': 'application/json', accept: MCP_ACCEPT };
    const cases: [string, string][] = [
      ['GET', '/'],
      ['POST', '/'],
      ['POST', '/mcp/'],
      ['POST', '/mcp/extra'],
      ['POST', '/MCP'],
      ['POST', '/mcpx'],
      ['GET', '/mcp.json'],
      ['POST', '/healthz'],
      ['DELETE', '/healthz'],
    ];
    for (const [method, path] of cases) {
      const res = await rawRequest(`${s.base}${path}`, {
        method,
        headers: post,
        ...(method === 'POST' ? { body: initializeBody('2025-11-25') } : {}),
      });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.headers['mcp-session-id']).toBeUndefined();
    }
    expect(await healthSessions(s.base)).toBe(0);
  });
});

describe('the built command over HTTP [SEED-HTTP]', () => {
  let started: ChildServer | undefined;
  const child = (): ChildServer => {
    if (started === undefined) throw new Error('the command did not start');
    return started;
  };
  beforeAll(async () => {
    started = await startBuiltServer(['--max-sessions', '8']);
  }, 120_000);
  afterAll(async () => {
    await started?.stop();
  });

  it('serves at 127.0.0.1 on /mcp, with /healthz', async () => {
    expect(child().url).toBe(`http://127.0.0.1:${child().port}/mcp`);
    expect(await healthSessions(child().base)).toBe(0);
  });

  it.each(HTTP_REVISIONS)('%s: the seed handoff in one session, golden text byte for byte', async (revision) => {
    const c = await connectClient(child().url, revision);
    try {
      expect(c.client.getNegotiatedProtocolVersion()).toBe(revision);
      expect(await healthSessions(child().base)).toBe(1);
      const task = await prepareSeed((n, a) => c.callTool(n, a));
      expectGolden(await acceptSeed((n, a) => c.callTool(n, a), task));
      const calls = c.requests.filter((r) => r.rpc.includes('tools/call'));
      expect(new Set(calls.map((r) => r.session))).toEqual(new Set([c.transport.sessionId]));
      expect(calls).toHaveLength(2);
      await c.transport.terminateSession();
      expect(await healthSessions(child().base)).toBe(0);
      const fresh = await connectClient(child().url, revision);
      try {
        expect(toolErrorCode(await acceptSeed((n, a) => fresh.callTool(n, a), task))).toBe('HANDOFF_NOT_FOUND');
      } finally {
        await fresh.end();
      }
    } finally {
      await c.client.close();
    }
  });

  it('answers a 2026-07-28 discover with -32022 and keeps serving', async () => {
    const res = await rawRequest(child().url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: MCP_ACCEPT, 'mcp-protocol-version': '2026-07-28' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: {} }),
    });
    expect(res.status).toBe(400);
    expect(messageOf(res).error?.code).toBe(-32022);
    const session = await rawSession(child().url, '2025-11-25');
    await seedHandoff(session.callTool);
    expect((await session.delete()).status).toBe(200);
  });

  it('[S05-SIGNALS] SIGTERM closes the sessions and exits 0', async () => {
    const session = await rawSession(child().url, '2025-06-18');
    await prepareSeed(session.callTool);
    const started = Date.now();
    expect(await child().stop()).toBe(0);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
