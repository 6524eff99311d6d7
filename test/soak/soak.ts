/**
 * The soak of issue 12, shared by `npm run soak` (test/soak/soak.test.ts, the short form .ci/run runs) and the long form
 * (`node --expose-gc dist/bench/soak.js`, 100k handoffs across 1k sessions).
 *
 * One host-mode adapter on a simulated clock, served over HTTP in the same process. Handoffs go through adapter sessions
 * (`callTool`, what each MCP connection's mount calls), round after round over many sessions, each handoff one of: a
 * plain handoff, a correction (an invalid candidate, then the valid one), a cancel (then an accept that must say
 * cancelled), a deadline (prepared with `timeoutMs`, the clock moved past it, then an accept that must say expired), a
 * replay of a finished request (the same reply again, or not found once the terminal store evicted it), a request
 * left pending, and now and then a session closed and opened again. Every reply is checked against what its scenario
 * must give. Afterwards: no live request (actor) remains once the sessions are closed, the store stayed within its
 * bounds and did evict, the heap after full GC is back near its baseline, and the server answers `/healthz` and a full
 * handoff over HTTP.
 */
import { SimulatedClock } from 'xstate';
import { createIntentMcpAdapter, type IntentMcpAdapter, type IntentMcpSession } from '../../src/mcp/adapter.js';
import type { IntentMcpToolResult } from '../../src/mcp/envelopes.js';
import { createLogger } from '../../src/server/logger.js';
import { serveHttp, type RunningHttpServer } from '../../src/server/http.js';
import { CANDIDATE_TEXT, REQUEST, benchIntent } from '../../bench/fixture.js';

export interface SoakOptions {
  handoffs: number;
  sessions: number;
  seed: number;
  /** Called every `handoffs / 10` handoffs (progress lines of the long form). */
  onProgress?: (done: number) => void;
}

export interface SoakReport {
  handoffs: number;
  sessions: number;
  scenarios: Record<string, number>;
  /** Live requests just before the sessions are closed, and the ones the soak left pending on purpose. */
  liveBeforeClose: number;
  leftPending: number;
  liveAfterClose: number;
  sessionsAfterClose: number;
  store: { items: number; maxItems: number; bytes: number; maxBytes: number; evictions: number };
  storeNeverOver: boolean;
  heapBaseline: number;
  heapAfter: number;
  healthz: { status: number; body: string };
  httpHandoffOk: boolean;
  wallSeconds: number;
}

/** mulberry32: a small seeded generator, so a failing seed replays. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gcHeap(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('the soak needs node --expose-gc (vitest: execArgv in vitest.soak.config.ts)');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const INVALID_CANDIDATE = '{"turnKind":"request"}';

function codeOf(result: IntentMcpToolResult | undefined): string {
  if (result === undefined) throw new Error('no result');
  if (!result.isError) return 'ok';
  return (JSON.parse(result.content[0].text) as { error: { code: string } }).error.code;
}

function expectCode(result: IntentMcpToolResult | undefined, code: string, what: string): void {
  const got = codeOf(result);
  if (got !== code) throw new Error(`${what}: expected ${code}, got ${got}`);
}

interface Task {
  requestId: string;
  submissionToken: string;
}

async function prepare(session: IntentMcpSession, timeoutMs?: number): Promise<Task> {
  const result = await session.callTool('intent_prepare', { ...REQUEST }, timeoutMs === undefined ? {} : { timeoutMs });
  expectCode(result, 'ok', 'prepare');
  return result!.structuredContent as unknown as Task;
}

function accept(session: IntentMcpSession, task: Task, candidateText: string) {
  return session.callTool('intent_accept', {
    requestId: task.requestId,
    submissionToken: task.submissionToken,
    candidateText,
  });
}

/** One full handoff over HTTP (initialize, initialized, prepare, accept, DELETE) with plain fetch. */
async function httpHandoff(url: string): Promise<boolean> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const post = async (body: unknown) => {
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await res.text();
    const data = text
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trim())
      .join('');
    return { res, message: data === '' ? undefined : (JSON.parse(data) as { result?: Record<string, unknown> }) };
  };
  const init = await post({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'soak', version: '1' } },
  });
  const id = init.res.headers.get('mcp-session-id');
  if (init.res.status !== 200 || id === null) return false;
  headers['mcp-session-id'] = id;
  headers['mcp-protocol-version'] = '2025-11-25';
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const prepared = await post({
    jsonrpc: '2.0',
    id: 2,
    method: 'tools/call',
    params: { name: 'intent_prepare', arguments: { ...REQUEST } },
  });
  const task = prepared.message?.result?.['structuredContent'] as Task | undefined;
  if (task === undefined) return false;
  const accepted = await post({
    jsonrpc: '2.0',
    id: 3,
    method: 'tools/call',
    params: {
      name: 'intent_accept',
      arguments: { requestId: task.requestId, submissionToken: task.submissionToken, candidateText: CANDIDATE_TEXT },
    },
  });
  const deleted = await fetch(url, { method: 'DELETE', headers });
  return accepted.message?.result?.['isError'] === false && deleted.status === 200;
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const started = Date.now();
  const rand = random(options.seed);
  const clock = new SimulatedClock();
  clock.set(Date.parse('2026-12-01T00:00:00Z'));
  const adapter: IntentMcpAdapter = createIntentMcpAdapter({
    mode: 'host',
    instances: { main: benchIntent() },
    clock,
    limits: { maxPendingPerSession: 16 },
  });
  const http: RunningHttpServer = await serveHttp(adapter, {
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    publicOrigin: undefined,
    maxSessions: 16,
    sessionIdleMs: 1_800_000,
    logger: createLogger('silent'),
  });
  const open = (): IntentMcpSession => adapter.connect({ protocolVersion: '2025-11-25', label: 'soak' });
  let sessions = Array.from({ length: options.sessions }, open);
  const pendingBySession = new Map<IntentMcpSession, number>();
  const finished: { session: IntentMcpSession; task: Task; text: string }[] = [];
  const scenarios: Record<string, number> = {};
  let storeNeverOver = true;
  const checkStore = (): void => {
    const u = adapter.snapshot().store;
    if (u.items > u.maxItems || u.bytes > u.maxBytes) storeNeverOver = false;
  };

  const one = async (session: IntentMcpSession, index: number): Promise<void> => {
    const roll = rand();
    let scenario: string;
    if (roll < 0.55) {
      scenario = 'handoff';
      const task = await prepare(session);
      const reply = await accept(session, task, CANDIDATE_TEXT);
      expectCode(reply, 'ok', scenario);
      if (finished.length < 64) finished.push({ session, task, text: reply!.content[0].text });
      else finished[index % 64] = { session, task, text: reply!.content[0].text };
    } else if (roll < 0.7) {
      scenario = 'correction';
      const task = await prepare(session);
      expectCode(await accept(session, task, INVALID_CANDIDATE), 'CANDIDATE_INVALID', scenario);
      expectCode(await accept(session, task, CANDIDATE_TEXT), 'ok', scenario);
    } else if (roll < 0.8) {
      scenario = 'cancel';
      const task = await prepare(session);
      const reason = (['cancelled', 'refusal', 'incomplete'] as const)[Math.floor(rand() * 3)];
      expectCode(await session.callTool('intent_cancel', { requestId: task.requestId, reason }), 'ok', scenario);
      expectCode(await accept(session, task, CANDIDATE_TEXT), 'HANDOFF_CANCELLED', scenario);
    } else if (roll < 0.88) {
      scenario = 'deadline';
      const timeoutMs = 1000 + Math.floor(rand() * 1000);
      const task = await prepare(session, timeoutMs);
      clock.increment(timeoutMs + 1);
      expectCode(await accept(session, task, CANDIDATE_TEXT), 'HANDOFF_EXPIRED', scenario);
    } else if (roll < 0.96) {
      scenario = 'replay';
      const earlier = finished[Math.floor(rand() * finished.length)];
      if (earlier === undefined || earlier.session !== session) {
        // Replays are asked in the session that made the request; another session must get not found.
        const any = finished[0];
        if (any !== undefined && any.session !== session)
          expectCode(await accept(session, any.task, CANDIDATE_TEXT), 'HANDOFF_NOT_FOUND', 'replay elsewhere');
      } else {
        const again = await accept(session, earlier.task, CANDIDATE_TEXT);
        const code = codeOf(again);
        // Retained: byte-identical reply; evicted from the store (or session reopened): not found.
        if (code === 'ok') {
          if (again!.content[0].text !== earlier.text) throw new Error('replay: a different reply text');
        } else if (code !== 'HANDOFF_NOT_FOUND') throw new Error(`replay: unexpected ${code}`);
      }
    } else if (roll < 0.99) {
      scenario = 'left pending';
      const pending = pendingBySession.get(session) ?? 0;
      if (pending < 8) {
        await prepare(session);
        pendingBySession.set(session, pending + 1);
      }
    } else {
      scenario = 'session reopened';
      const at = sessions.indexOf(session);
      await session.close();
      pendingBySession.delete(session);
      sessions[at] = open();
    }
    scenarios[scenario] = (scenarios[scenario] ?? 0) + 1;
  };

  // Warm-up (a tenth, at least 1,000), then a baseline with every session closed and reopened.
  const warmup = Math.max(1000, Math.floor(options.handoffs / 10));
  for (let i = 0; i < warmup; i++) await one(sessions[i % sessions.length]!, i);
  for (const s of sessions) await s.close();
  pendingBySession.clear();
  finished.length = 0;
  const heapBaseline = gcHeap();
  sessions = Array.from({ length: options.sessions }, open);

  const every = Math.max(1, Math.floor(options.handoffs / 10));
  for (let i = 0; i < options.handoffs; i++) {
    // Sessions in random order, so requests of many sessions are interleaved in the engine and the store.
    await one(sessions[Math.floor(rand() * sessions.length)]!, i);
    if (i % 97 === 0) checkStore();
    if ((i + 1) % every === 0) options.onProgress?.(i + 1);
  }
  checkStore();
  const leftPending = [...pendingBySession.values()].reduce((a, b) => a + b, 0);
  const liveBeforeClose = adapter.snapshot().sessions.reduce((n, s) => n + s.live.length, 0);
  for (const s of sessions) await s.close();
  finished.length = 0;
  const after = adapter.snapshot();
  const heapAfter = gcHeap();

  const health = await fetch(`${http.url.replace(/\/mcp$/, '')}/healthz`);
  const healthz = { status: health.status, body: await health.text() };
  const httpHandoffOk = await httpHandoff(http.url);
  await http.close();
  await adapter.close();
  return {
    handoffs: options.handoffs,
    sessions: options.sessions,
    scenarios,
    liveBeforeClose,
    leftPending,
    liveAfterClose: after.sessions.reduce((n, s) => n + s.live.length, 0),
    sessionsAfterClose: after.sessions.length,
    store: after.store,
    storeNeverOver,
    heapBaseline,
    heapAfter,
    healthz,
    httpHandoffOk,
    wallSeconds: (Date.now() - started) / 1000,
  };
}
