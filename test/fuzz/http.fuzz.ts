/**
 * Fuzz layer c (HTTP): the built command (`serve --transport http --port 0`) gets random requests on its MCP path —
 * random methods, content types, Accept headers, Mcp-Session-Id / MCP-Protocol-Version values, bodies that are bad
 * JSON, over 4 MiB, deep, batches, hostile tool calls inside a real session — interleaved (concurrently) with one
 * legitimate session doing initialize, prepare and accept.
 *
 * Properties: the process never crashes (`/healthz` answers 200 at the end); every response has a sane status (never
 * 5xx except 503 for the session cap); every JSON error body is a JSON-RPC error; tool results in the legitimate
 * session are well-formed envelopes; the legitimate handoff completes with the golden reply.
 */
import { request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { SEED_ARGS, SEED_CANDIDATE, SEED_RESULT_TEXT } from '../support/mcpFixtures.js';
import { startBuiltServer, type ChildServer } from '../support/httpChild.js';
import { sseDataOf } from '../support/httpHelpers.js';
import { nastyString } from './support/arbitraries.js';
import { ANSWER_GUARD_MS } from './support/child.js';
import { SHAPE_ONLY, checkEnvelope, clip, fail, jsonEqual } from './support/checks.js';
import { fuzzParams } from './support/config.js';
import { item, renderItem, type Item } from './support/lines.js';

const RUNS = 25;
const BUDGET_MS = 80_000;
const ACCEPT = 'application/json, text/event-stream';
/**
 * Statuses a hostile request may get: the 4xx a refusal can carry (408 and 429 for body timeouts and buffered-byte
 * caps, 431 when Node refuses headers over 16 KiB) and 503 for the session cap. Never another 5xx.
 */
const SANE = new Set([200, 202, 400, 403, 404, 405, 406, 408, 409, 413, 415, 429, 431, 503]);

interface Response {
  status: number;
  type: string;
  text: string;
  sessionId: string | undefined;
}

/** One HTTP/1.1 request; resolves with the response, or with `undefined` when the connection failed. */
function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
): Promise<Response | { error: string }> {
  const target = new URL(url);
  return new Promise((resolve) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method,
        headers,
        agent: false,
        signal: AbortSignal.timeout(ANSWER_GUARD_MS),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const id = res.headers['mcp-session-id'];
          resolve({
            status: res.statusCode ?? 0,
            type: res.headers['content-type'] ?? '',
            text: Buffer.concat(chunks).toString('utf8'),
            sessionId: typeof id === 'string' ? id : undefined,
          });
        });
        res.on('error', (error) => {
          resolve({ error: error.message });
        });
      },
    );
    req.on('error', (error) => {
      resolve({ error: `${error.name}: ${error.message}` });
    });
    req.end(body);
  });
}

/** The JSON-RPC messages of a 2xx response: a JSON body or the data lines of an SSE stream. */
function messagesOf(res: Response, where: string): Record<string, unknown>[] {
  let texts: string[];
  if (res.type.startsWith('text/event-stream')) texts = sseDataOf(res.text);
  else if (res.type.startsWith('application/json')) texts = [res.text];
  else if (res.text === '') return [];
  else return fail(`${where}: a ${res.status} body of type "${res.type}": ${clip(res.text)}`);
  return texts.flatMap((t) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(t);
    } catch {
      return fail(`${where}: a ${res.status} body that is not JSON: ${clip(t)}`);
    }
    return (Array.isArray(parsed) ? parsed : [parsed]) as Record<string, unknown>[];
  });
}

/** Checks one JSON-RPC message of a response: version, and a well-formed error when it is one. */
function checkMessage(m: Record<string, unknown>, where: string): void {
  if (m['jsonrpc'] !== '2.0') fail(`${where}: not a JSON-RPC 2.0 message: ${clip(JSON.stringify(m))}`);
  const error = m['error'] as { code?: unknown; message?: unknown } | undefined;
  if (error !== undefined) {
    if (typeof error.code !== 'number' || typeof error.message !== 'string')
      fail(`${where}: a malformed JSON-RPC error: ${clip(JSON.stringify(m))}`);
    if (!('id' in m)) fail(`${where}: a JSON-RPC error without an id member`);
  }
}

/** A random request to the server. */
interface Hostile {
  item: Item;
  method: string;
  path: 'mcp' | 'other' | 'healthz';
  contentType: string | undefined;
  accept: string | undefined;
  session: 'none' | 'legit' | 'random';
  randomSession: string;
  protocol: string | undefined;
}

/** Header values must be Latin-1 without control characters; a hostile client still controls the rest. */
const headerText = nastyString.map((s) => s.replace(/[^\x20-\x7e\x80-\xff]/g, '?').slice(0, 8192));

const hostile: fc.Arbitrary<Hostile> = fc.record({
  item,
  method: fc.constantFrom('POST', 'POST', 'POST', 'POST', 'GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS', 'HEAD'),
  path: fc.constantFrom<'mcp' | 'other' | 'healthz'>('mcp', 'mcp', 'mcp', 'mcp', 'other', 'healthz'),
  contentType: fc.oneof(
    fc.constantFrom(undefined, 'application/json', 'application/json; charset=utf-8', 'text/plain'),
    fc.constantFrom(
      'multipart/form-data; boundary=x',
      'application/x-www-form-urlencoded',
      'application/json; charset=latin1',
    ),
    headerText,
  ),
  accept: fc.oneof(fc.constantFrom(undefined, ACCEPT, 'application/json', 'text/event-stream', '*/*'), headerText),
  session: fc.constantFrom<'none' | 'legit' | 'random'>('none', 'legit', 'legit', 'random'),
  randomSession: fc.oneof(fc.uuid(), headerText),
  protocol: fc.oneof(fc.constantFrom(undefined, '2025-11-25', '2025-06-18', '2026-07-28', '1999-01-01'), headerText),
});

async function runHttp(server: ChildServer, requests: readonly Hostile[], cut: number): Promise<void> {
  const url = server.url;
  const legitHeaders = (id: string): Record<string, string> => ({
    'content-type': 'application/json',
    accept: ACCEPT,
    'mcp-session-id': id,
    'mcp-protocol-version': '2025-11-25',
  });
  const rpc = (id: string | number, method: string, params?: unknown): Buffer =>
    Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }));

  // The legitimate session.
  const init = await send(
    url,
    'POST',
    { 'content-type': 'application/json', accept: ACCEPT },
    rpc('l-init', 'initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'fuzz', version: '1.0.0' },
    }),
  );
  if ('error' in init || init.status !== 200 || init.sessionId === undefined)
    return fail(`the legitimate initialize failed: ${clip(JSON.stringify(init))}`);
  const sid = init.sessionId;
  const initialized = await send(
    url,
    'POST',
    legitHeaders(sid),
    Buffer.from('{"jsonrpc":"2.0","method":"notifications/initialized"}'),
  );
  if ('error' in initialized || initialized.status !== 202) fail('notifications/initialized was not accepted');

  let n = 0;
  const next = (): number => n++;
  const fire = async (h: Hostile, i: number): Promise<void> => {
    const where = `hostile #${i} ${h.method} ${h.path}`;
    const rendered = renderItem(h.item, next);
    const headers: Record<string, string> = {};
    if (h.contentType !== undefined) headers['content-type'] = h.contentType;
    if (h.accept !== undefined) headers['accept'] = h.accept;
    if (h.protocol !== undefined) headers['mcp-protocol-version'] = h.protocol;
    // DELETE of the legitimate session would end it for good: hostile DELETEs aim at random ids only.
    if (h.session === 'legit' && h.method !== 'DELETE') headers['mcp-session-id'] = sid;
    if (h.session === 'random') headers['mcp-session-id'] = h.randomSession;
    const path = h.path === 'mcp' ? url : h.path === 'healthz' ? `${server.base}/healthz` : `${server.base}/x`;
    const withBody = !['GET', 'HEAD', 'DELETE'].includes(h.method);
    const res = await send(path, h.method, headers, withBody ? rendered.bytes : undefined);
    if ('error' in res) {
      // A server may refuse a request before reading its body (413, an unknown session, a method without a body) and
      // close the connection; the client, still writing, then sees a reset that can swallow the answer. That is TCP,
      // not a defect: a request with a body may end in a reset (a crash still shows at /healthz). A bodiless one may not.
      if (withBody && rendered.bytes.length > 0) return;
      return fail(`${where}: the connection failed: ${res.error}`);
    }
    if (!SANE.has(res.status)) fail(`${where}: status ${res.status}: ${clip(res.text)}`);
    if (h.method === 'HEAD' || res.text === '') return;
    if (h.path === 'healthz' && h.method === 'GET' && res.status === 200) {
      // /healthz is not JSON-RPC: it answers `{ status: 'ok', sessions }` (spec 05).
      const health = JSON.parse(res.text) as { status?: unknown; sessions?: unknown };
      if (health.status !== 'ok' || typeof health.sessions !== 'number')
        fail(`${where}: /healthz answered ${clip(res.text)}`);
      return;
    }
    if (res.status >= 400 && !res.type.startsWith('application/json'))
      fail(`${where}: a ${res.status} error body of type "${res.type}": ${clip(res.text)}`);
    for (const m of messagesOf(res, where)) {
      checkMessage(m, where);
      const result = m['result'] as { content?: unknown } | undefined;
      if (result?.content !== undefined && h.session === 'legit')
        checkEnvelope(result, `${where}: tool result`, jsonEqual, SHAPE_ONLY);
    }
  };

  const toolCall = async (id: string, name: string, args: unknown) => {
    const res = await send(url, 'POST', legitHeaders(sid), rpc(id, 'tools/call', { name, arguments: args }));
    if ('error' in res || res.status !== 200)
      return fail(`the legitimate ${name} failed: ${clip(JSON.stringify(res))}`);
    const message = messagesOf(res, `legitimate ${name}`).find((m) => m['id'] === id);
    const result = message?.['result'];
    if (result === undefined) return fail(`the legitimate ${name} got no result: ${clip(res.text)}`);
    return checkEnvelope(result, `legitimate ${name}`, jsonEqual, SHAPE_ONLY);
  };

  const first = requests.slice(0, cut);
  const second = requests.slice(cut);
  const [prepared] = await Promise.all([
    toolCall('l-prepare', 'intent_prepare', SEED_ARGS),
    ...first.map((h, i) => fire(h, i)),
  ]);
  if (prepared.isError) return fail(`the legitimate prepare answered ${clip(prepared.text)}`);
  const { requestId, submissionToken } = prepared.value as { requestId: string; submissionToken: string };
  const [accepted] = await Promise.all([
    toolCall('l-accept', 'intent_accept', { requestId, submissionToken, candidateText: SEED_CANDIDATE }),
    ...second.map((h, i) => fire(h, cut + i)),
  ]);
  if (accepted.isError || accepted.text !== SEED_RESULT_TEXT)
    fail(`the legitimate accept answered ${clip(accepted.text)}`);

  if (server.child.exitCode !== null || server.child.signalCode !== null)
    fail(
      `the server exited (${server.child.exitCode ?? server.child.signalCode}); stderr: ${clip(server.stderr(), 400)}`,
    );
  const health = await send(`${server.base}/healthz`, 'GET', {}, undefined);
  if ('error' in health || health.status !== 200) fail(`/healthz answered ${clip(JSON.stringify(health))}`);
}

describe('fuzz c: the built command over HTTP under hostile requests', () => {
  it('never crashes, answers sanely with JSON-RPC errors, completes the legitimate handoff', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostile, { minLength: 1, maxLength: 12 }), fc.nat({ max: 12 }), async (reqs, cut) => {
        const server = await startBuiltServer();
        try {
          await runHttp(server, reqs, Math.min(cut, reqs.length));
        } finally {
          await server.stop();
        }
      }),
      fuzzParams(0xc1, RUNS, BUDGET_MS),
    );
  });
});
