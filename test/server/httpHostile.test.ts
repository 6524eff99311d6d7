/**
 * Issue 8 over HTTP: stalled bodies against the server-wide buffer cap and the body/header deadlines (item 11), the
 * session id checked before a body is read (11), abandoned initializes reclaimed by the short rule (11), DELETE and
 * shutdown answering waiters `SESSION_CLOSED` (8), refusal logs truncated and rate-limited (12), exception-safe session
 * slots and numeric options validated at construction (13). Time is driven by short configured values and a fake
 * clock; the assertions are on status codes, answers and counts.
 */
import { connect as netConnect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { IntentError } from '../../src/core/errors.js';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter, type IntentMcpAdapter } from '../../src/mcp/adapter.js';
import { MAX_BODY_BYTES, serveHttp } from '../../src/server/http.js';
import { createLogger, rateLimitedLog } from '../../src/server/logger.js';
import { startFakeOpenAI, stopFakeOpenAI } from '../support/fakeOpenAI.js';
import { startBuiltServer } from '../support/httpChild.js';
import {
  hostAdapter,
  messageOf,
  pollUntil,
  postInitialize,
  rawRequest,
  rawSession,
  serveOptions,
  stalledPost,
  startInProcess,
  type InProcessServer,
} from '../support/httpHelpers.js';
import { SEED_ARGS, hangingExecutor } from '../support/mcpFixtures.js';
import { configDir, writeConfig } from '../support/serverProcess.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse())
    await Promise.resolve()
      .then(c)
      .catch(() => undefined);
});

async function server(options: Parameters<typeof startInProcess>[0] = {}): Promise<InProcessServer> {
  const s = await startInProcess(options);
  cleanups.push(() => s.close());
  return s;
}

function toolErrorCodeOf(text: string): string {
  return (JSON.parse(text) as { error: { code: string } }).error.code;
}

describe('buffered bodies and deadlines [H08-HTTP-RESOURCES]', () => {
  it('stalled bodies are charged for the bytes they sent: 16 nearly whole 4 MiB bodies fit the 64 MiB default cap, the next get 503 + Retry-After; the deadline answers 408 and frees the cap', async () => {
    const s = await server({ bodyTimeoutMs: 2500 });
    const stalled = Array.from({ length: 20 }, () =>
      stalledPost(s.port, { declared: MAX_BODY_BYTES, sent: MAX_BODY_BYTES - 1 }),
    );
    cleanups.push(() => {
      for (const r of stalled) r.destroy();
    });
    const answers = await Promise.all(stalled.map((r) => r.response));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((st) => st === 503)).toHaveLength(4);
    expect(statuses.filter((st) => st === 408)).toHaveLength(16);
    for (const a of answers.filter((x) => x.status === 503)) expect(a.head).toMatch(/\r\nretry-after: \d+/i);
    expect(s.server.bufferedBytes()).toBe(0);
    expect((await postInitialize(s.url)).status).toBe(200);
  });

  it('a declared Content-Length reserves nothing: 100 sockets that send only headers lock nobody out', async () => {
    const s = await server({ bodyTimeoutMs: 5000 });
    const idle = Array.from({ length: 100 }, () => stalledPost(s.port, { declared: MAX_BODY_BYTES, sent: 0 }));
    cleanups.push(() => {
      for (const r of idle) r.destroy();
    });
    await pollUntil('the idle requests to be read', () => s.server.bufferedBytes() === 0);
    expect((await postInitialize(s.url)).status).toBe(200);
    expect(s.server.bufferedBytes()).toBe(0);
  });

  it('a chunked body with no declared length counts the bytes it sends against the cap', async () => {
    const s = await server({ maxBufferedBytes: MAX_BODY_BYTES, bodyTimeoutMs: 1500 });
    const first = stalledPost(s.port, { sent: MAX_BODY_BYTES - 4096 });
    cleanups.push(() => {
      first.destroy();
    });
    await pollUntil('the first body to be counted', () => s.server.bufferedBytes() === MAX_BODY_BYTES - 4096);
    const second = stalledPost(s.port, { sent: 8 * 1024 });
    expect((await second.response).status).toBe(503);
    expect((await first.response).status).toBe(408);
    expect(s.server.bufferedBytes()).toBe(0);
  });

  it('headers that never end are cut off by headersTimeoutMs (408)', async () => {
    const s = await server({ headersTimeoutMs: 300 });
    const status = await new Promise<number>((resolve) => {
      const socket = netConnect(s.port, '127.0.0.1');
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        resolve(Number(/^HTTP\/1\.\d (\d{3})/.exec(text)?.[1] ?? 0));
      });
      socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nX-Slow: `);
    });
    expect(status).toBe(408);
  });

  it('[S05-HTTP-UNKNOWN-SESSION] an unknown session id gets 404 before its body is read', async () => {
    const s = await server();
    const req = stalledPost(s.port, {
      declared: MAX_BODY_BYTES,
      sent: 0,
      headers: { 'mcp-session-id': 'no-such-session', 'mcp-protocol-version': '2025-11-25' },
    });
    cleanups.push(() => {
      req.destroy();
    });
    expect(await req.status).toBe(404);
    expect(s.server.bufferedBytes()).toBe(0);
  });
});

describe('abandoned initializes [H08-HTTP-RESOURCES]', () => {
  it('sessions that never get past their handshake are reclaimed after sessionInitIdleMs; an active one survives', async () => {
    let clock = 5_000_000;
    const s = await server({
      maxSessions: 3,
      sessionIdleMs: 1_800_000,
      sessionInitIdleMs: 30_000,
      now: () => clock,
    });
    const active = await rawSession(s.url);
    expect((await active.post({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })).status).toBe(200);
    const abandoned = await rawSession(s.url);
    const bare = await postInitialize(s.url); // initialize and gone, without even notifications/initialized
    expect(bare.status).toBe(200);
    expect((await postInitialize(s.url)).status).toBe(503);

    clock += 29_999;
    expect(await s.server.reclaimIdle()).toBe(0);
    clock += 1;
    expect(await s.server.reclaimIdle()).toBe(2);
    expect(s.server.sessionCount()).toBe(1);
    expect((await abandoned.post({ jsonrpc: '2.0', id: 2, method: 'ping' })).status).toBe(404);
    expect((await active.post({ jsonrpc: '2.0', id: 3, method: 'ping' })).status).toBe(200);
    expect((await postInitialize(s.url)).status).toBe(200);

    // The active session still ages by the long rule only.
    clock += 1_800_000;
    expect(await s.server.reclaimIdle()).toBe(2);
    expect((await active.post({ jsonrpc: '2.0', id: 4, method: 'ping' })).status).toBe(404);
  });
});

describe('DELETE and shutdown drain [H08-DRAIN]', () => {
  async function waitingCall(s: InProcessServer, hanging: ReturnType<typeof hangingExecutor>) {
    const session = await rawSession(s.url);
    const call = session.post({
      jsonrpc: '2.0',
      id: 42,
      method: 'tools/call',
      params: { name: 'intent_parse', arguments: SEED_ARGS },
    });
    await hanging.called;
    return { session, call };
  }

  function executorAdapter(hanging: ReturnType<typeof hangingExecutor>): IntentMcpAdapter {
    return createIntentMcpAdapter({
      mode: 'executor',
      instances: { main: new Intent({ executor: hanging.executor }) },
    });
  }

  it('a POST waiting on its call gets a SESSION_CLOSED envelope when its session is deleted', async () => {
    const hanging = hangingExecutor();
    const s = await server({ adapter: executorAdapter(hanging) });
    const { session, call } = await waitingCall(s, hanging);
    const deleted = await session.delete();
    expect(deleted.status).toBe(200);
    const answer = await call;
    expect(answer.status).toBe(200);
    const message = messageOf(answer);
    expect(message.id).toBe(42);
    const result = message.result as { isError: boolean; content: { text: string }[] };
    expect(result.isError).toBe(true);
    expect(toolErrorCodeOf(result.content[0]?.text ?? '')).toBe('SESSION_CLOSED');
    expect((await session.post({ jsonrpc: '2.0', id: 43, method: 'ping' })).status).toBe(404);
  });

  it('a POST waiting on its call gets a SESSION_CLOSED envelope when the server shuts down', async () => {
    const hanging = hangingExecutor();
    const adapter = executorAdapter(hanging);
    const s = await startInProcess({ adapter });
    const { call } = await waitingCall(s, hanging);
    const closing = s.server.close();
    const answer = await call;
    await closing;
    await adapter.close();
    const result = messageOf(answer).result as { isError: boolean; content: { text: string }[] };
    expect(toolErrorCodeOf(result.content[0]?.text ?? '')).toBe('SESSION_CLOSED');
  });
});

describe('SIGTERM drain of the built command [H08-DRAIN]', () => {
  it('a POST waiting on the model gets SESSION_CLOSED, then the process exits 0', async () => {
    const fake = await startFakeOpenAI();
    cleanups.push(() => stopFakeOpenAI(fake));
    fake.reply({ hang: true });
    const config = writeConfig(configDir(), 'executor.json', {
      mode: 'executor',
      instances: { main: { executor: { kind: 'openai-compatible', baseUrl: fake.baseUrl, model: 'm' } } },
    });
    const child = await startBuiltServer(['--config', config]);
    cleanups.push(() => child.stop());
    const session = await rawSession(child.url);
    const call = session.post({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'intent_parse', arguments: SEED_ARGS },
    });
    await fake.request(1);
    const exit = child.stop();
    const answer = await call;
    expect(await exit).toBe(0);
    const message = messageOf(answer);
    expect(message.id).toBe(7);
    const result = message.result as { isError: boolean; content: { text: string }[] };
    expect(toolErrorCodeOf(result.content[0]?.text ?? '')).toBe('SESSION_CLOSED');
  }, 30_000);
});

describe('session slots and options [H08-SLOTS] [S06-CONFIG-CHECKED]', () => {
  it('an initialize whose server construction throws gives its slot back', async () => {
    let failing = true;
    const real = hostAdapter();
    const flaky = new Proxy(real, {
      get(target, property) {
        if (property === 'tools' && failing) throw new Error('construction failed');
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as () => unknown).bind(target) : value;
      },
    });
    const s = await server({ adapter: flaky, maxSessions: 1 });
    expect((await postInitialize(s.url)).status).toBe(500);
    expect((await postInitialize(s.url)).status).toBe(500);
    failing = false;
    expect((await postInitialize(s.url)).status).toBe(200);
  });

  const base = serveOptions();
  it.each([
    ['maxSessions', 0],
    ['maxSessions', Number.NaN],
    ['maxSessions', 1.5],
    ['sessionIdleMs', 0],
    ['sessionIdleMs', Number.NaN],
    ['sessionInitIdleMs', 0.5],
    ['maxBufferedBytes', 0],
    ['maxBufferedBytes', MAX_BODY_BYTES - 1],
    ['maxBufferedBytes', Number.POSITIVE_INFINITY],
    ['headersTimeoutMs', -1],
    ['bodyTimeoutMs', Number.NaN],
    ['refusalLogsPerMinute', 2.5],
    ['port', 1.5],
    ['port', 70_000],
  ] as const)('serveHttp refuses %s = %s with CONFIG_INVALID naming it', async (name, value) => {
    let caught: unknown;
    try {
      const running = await serveHttp(hostAdapter(), { ...base, [name]: value });
      await running.close();
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(IntentError);
    expect((caught as IntentError).code).toBe('CONFIG_INVALID');
    expect((caught as IntentError).message).toContain(name);
  });
});

describe('refusal logs [H08-LOG-FLOOD]', () => {
  it('the token bucket logs at most N lines per interval and reports the rest as one "suppressed" line', () => {
    const lines: string[] = [];
    let clock = 0;
    const log = rateLimitedLog(
      createLogger('info', (l) => lines.push(l)),
      5,
      60_000,
      () => clock,
    );
    for (let i = 0; i < 100; i++) log('request refused', { origin: 'x'.repeat(15_000) });
    expect(lines).toHaveLength(5);
    for (const line of lines) expect(line.length).toBeLessThan(300);
    clock += 12_000; // one token back
    log('request refused', { origin: 'y' });
    expect(lines).toHaveLength(7);
    expect(lines[5]).toMatch(/suppressed=95/);
    log.flush();
    expect(lines).toHaveLength(7);
  });

  it('2,000 refused requests with a 15 KB Origin: stderr stays small and says how many lines were suppressed', async () => {
    const child = await startBuiltServer();
    cleanups.push(() => child.stop());
    const origin = 'http://' + 'e'.repeat(15_000) + '.example';
    let sent = 0;
    const worker = async (): Promise<void> => {
      while (sent < 2000) {
        sent++;
        const res = await rawRequest(child.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin },
          body: '{}',
        });
        expect(res.status).toBe(403);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    expect(await child.stop()).toBe(0);
    const stderr = child.stderr();
    expect(stderr.length).toBeLessThan(64 * 1024);
    const logged = stderr.split('\n').filter((l) => l.includes('request refused')).length;
    const suppressed = [...stderr.matchAll(/suppressed=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    expect(logged + suppressed).toBe(2000);
    expect(suppressed).toBeGreaterThan(1800);
  }, 60_000);
});
