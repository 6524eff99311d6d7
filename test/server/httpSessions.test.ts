/**
 * The parts `serveHttp` is built from, each on its own: the session registry (the cap counts initialising sessions,
 * idle and init-idle reclaim on a simulated clock, drains that wait for POSTs, shutdown), the Host / Origin guard bound
 * to the port actually listened on, and the flag bounds read off the config schema. End-to-end behaviour is in
 * http.test.ts and httpHostile.test.ts; these pin each module's contract without a listener.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HttpConfigSchema, integerRange, parsePublicOrigin } from '../../src/server/config.js';
import { HostOriginGuard } from '../../src/server/hostOriginGuard.js';
import { MAX_BODY_BYTES } from '../../src/server/httpBody.js';
import { HttpSessionRegistry } from '../../src/server/httpSessions.js';
import { createLogger, rateLimitedLog } from '../../src/server/logger.js';
import type { MountedServer } from '../../src/server/mcpServer.js';

/** A session's SDK parts, counting what the registry does to them. */
function fakeParts() {
  const calls = { drained: 0, serverClosed: 0, transportClosed: 0 };
  const mounted = {
    server: {
      close: () => {
        calls.serverClosed++;
        return Promise.resolve();
      },
    },
    drain: () => {
      calls.drained++;
      return Promise.resolve();
    },
  } as unknown as MountedServer;
  const transport = {
    close: () => {
      calls.transportClosed++;
      return Promise.resolve();
    },
  } as unknown as NodeStreamableHTTPServerTransport;
  return { calls, mounted, transport };
}

function registry(limits: { maxSessions?: number; sessionIdleMs?: number; sessionInitIdleMs?: number }) {
  const clock = { now: 1_000_000 };
  const lines: string[] = [];
  const log = rateLimitedLog(
    createLogger('info', (line) => lines.push(line)),
    1000,
  );
  const sessions = new HttpSessionRegistry(
    { maxSessions: 8, sessionIdleMs: 60_000, sessionInitIdleMs: 5_000, ...limits },
    () => clock.now,
    log,
  );
  return { sessions, clock, lines };
}

const response = (): ServerResponse => new EventEmitter() as unknown as ServerResponse;

afterEach(() => {
  vi.useRealTimers();
});

describe('HttpSessionRegistry', () => {
  it('an initialize under way holds a slot of the cap, and its release gives back exactly one slot however often it is called', () => {
    const { sessions } = registry({ maxSessions: 2 });
    const first = sessions.holdSlot();
    const second = sessions.holdSlot();
    expect(first).toBeTypeOf('function');
    expect(second).toBeTypeOf('function');
    expect(sessions.holdSlot()).toBeUndefined();
    first?.();
    first?.();
    expect(sessions.holdSlot()).toBeTypeOf('function');
    expect(sessions.holdSlot()).toBeUndefined();
  });

  it('a registered session counts against the cap once its slot is released', () => {
    const { sessions, lines } = registry({ maxSessions: 1 });
    const release = sessions.holdSlot();
    const parts = fakeParts();
    sessions.add('s-1', parts.transport, parts.mounted);
    release?.();
    expect(sessions.size).toBe(1);
    expect(sessions.find('s-1')?.id).toBe('s-1');
    expect(sessions.holdSlot()).toBeUndefined();
    expect(lines.some((line) => line.includes('session opened') && line.includes('s-1'))).toBe(true);
  });

  it('reclaims an active session after sessionIdleMs and one that never got past its handshake after sessionInitIdleMs; a session with a request in flight stays', async () => {
    const { sessions, clock, lines } = registry({ sessionIdleMs: 60_000, sessionInitIdleMs: 5_000 });
    const active = fakeParts();
    const abandoned = fakeParts();
    const streaming = fakeParts();
    sessions.add('active', active.transport, active.mounted).pastHandshake = true;
    sessions.add('abandoned', abandoned.transport, abandoned.mounted);
    const streamingSession = sessions.add('streaming', streaming.transport, streaming.mounted);
    streamingSession.pastHandshake = true;
    sessions.track(streamingSession, response(), false);

    clock.now += 5_000;
    expect(await sessions.reclaimIdle()).toBe(1);
    expect(sessions.find('abandoned')).toBeUndefined();
    expect(abandoned.calls).toMatchObject({ serverClosed: 1, transportClosed: 1 });
    expect(lines.some((line) => line.includes('abandoned after initialize'))).toBe(true);

    clock.now += 55_000;
    expect(await sessions.reclaimIdle()).toBe(1);
    expect(sessions.find('active')).toBeUndefined();
    expect(sessions.find('streaming')).toBeDefined();
    expect(lines.some((line) => line.includes('session closed') && line.includes('why=idle'))).toBe(true);
  });

  it('a drain answers the waiters first, then waits for the POSTs in flight to end', async () => {
    const { sessions } = registry({});
    const parts = fakeParts();
    const session = sessions.add('s', parts.transport, parts.mounted);
    const post = response();
    sessions.track(session, post, true);
    let drained = false;
    const drain = sessions.drain(session, 60_000).then(() => {
      drained = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(parts.calls.drained).toBe(1);
    expect(drained).toBe(false);
    post.emit('close');
    await drain;
    expect(drained).toBe(true);
    expect(session.postsInFlight).toBe(0);
    expect(session.postWatchers.size).toBe(0);
  });

  it('a drain stops waiting for a POST that never ends after its timeout', async () => {
    vi.useFakeTimers();
    const { sessions } = registry({});
    const parts = fakeParts();
    const session = sessions.add('s', parts.transport, parts.mounted);
    sessions.track(session, response(), true);
    const drain = sessions.drain(session, 3000);
    await vi.advanceTimersByTimeAsync(3000);
    await drain;
    expect(session.postsInFlight).toBe(1);
    expect(session.postWatchers.size).toBe(0);
  });

  it('shutdown stops taking sessions, drains every live one, then closes them', async () => {
    const { sessions } = registry({});
    const a = fakeParts();
    const b = fakeParts();
    sessions.add('a', a.transport, a.mounted);
    sessions.add('b', b.transport, b.mounted);
    const shutdown = sessions.shutdown(1000);
    expect(sessions.accepting).toBe(false);
    await shutdown;
    expect(sessions.size).toBe(0);
    for (const parts of [a, b]) expect(parts.calls).toEqual({ drained: 1, serverClosed: 1, transportClosed: 1 });
  });
});

describe('HostOriginGuard', () => {
  const request = (headers: Record<string, string>): IncomingMessage =>
    ({ headers, rawHeaders: Object.entries(headers).flat(), url: '/mcp' }) as unknown as IncomingMessage;

  it('allows the local addresses of the port actually bound, not of the port asked for', () => {
    const guard = new HostOriginGuard(0, undefined);
    expect(guard.refusedHeader(request({ host: '127.0.0.1:4321' }))).toBe('Host');
    guard.bindTo(4321);
    expect(guard.refusedHeader(request({ host: '127.0.0.1:4321' }))).toBeUndefined();
    expect(guard.refusedHeader(request({ host: 'LOCALHOST:4321', origin: 'http://[::1]:4321' }))).toBeUndefined();
    expect(guard.refusedHeader(request({ host: 'localhost:4321', origin: 'http://evil.example' }))).toBe('Origin');
  });

  it('allows the public origin, and a forwarding header never stands in for Host', () => {
    const guard = new HostOriginGuard(3001, parsePublicOrigin('https://mcp.example.com'));
    expect(
      guard.refusedHeader(request({ host: 'mcp.example.com', origin: 'https://mcp.example.com' })),
    ).toBeUndefined();
    expect(guard.refusedHeader(request({ host: 'internal:3001', 'x-forwarded-host': 'mcp.example.com' }))).toBe('Host');
    expect(guard.refusedHeader(request({}))).toBe('Host');
  });
});

describe('integerRange', () => {
  it('reads the bounds the config file accepts off the schema (the flags use the same)', () => {
    expect(integerRange(HttpConfigSchema.shape.port)).toEqual({ min: 0, max: 65535 });
    expect(integerRange(HttpConfigSchema.shape.maxBufferedBytes).min).toBe(MAX_BODY_BYTES);
    const sessions = integerRange(HttpConfigSchema.shape.maxSessions);
    expect(HttpConfigSchema.safeParse({ maxSessions: sessions.min }).success).toBe(true);
    expect(HttpConfigSchema.safeParse({ maxSessions: sessions.min - 1 }).success).toBe(false);
    expect(HttpConfigSchema.safeParse({ maxSessions: sessions.max + 1 }).success).toBe(false);
  });
});
