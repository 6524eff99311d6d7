/**
 * The debug inspector in process (issue 10): an adapter with the embedded default, an inspector on a free loopback
 * port, real handoffs through `session.callTool`. What the page, `/api/snapshot` and `/api/events` show; that none of
 * them ever carries a token or a candidate text; the Host / Origin rule, GET-only, loopback-only; bounded queries and
 * bounded memory under a flood.
 */
import { SimulatedClock } from 'xstate';
import { afterEach, describe, expect, it } from 'vitest';
import { START_EDGE, describeMachine, edgeLabel, edgeOf } from '../../machines/diagram.js';
import { HANDOFF_STATES } from '../../machines/handoff.js';
import type { HandoffTransition } from '../../src/engine/inspection.js';
import { InspectorModel, type InspectionSource } from '../../src/inspector/model.js';
import { MIN_RENDER_INTERVAL_MS, diagramSvg } from '../../src/inspector/diagram.js';
import { stepDetail, transitionEventData } from '../../src/inspector/page.js';
import { serveInspector } from '../../src/inspector/server.js';
import { buildView, type InspectorView } from '../../src/inspector/view.js';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter } from '../../src/mcp/adapter.js';
import { rawSocketRequest, silentLogger } from '../support/httpHelpers.js';
import { INVALID_CANDIDATE, OTHER_INVALID_CANDIDATE, SEED_ARGS, SEED_CANDIDATE } from '../support/mcpFixtures.js';
import {
  CANDIDATE_MARKER,
  MARKED_INVALID_CANDIDATE,
  accept,
  correctedHandoff,
  get,
  prepare,
  readSse,
  startTestInspector,
  type SseReader,
  type TestInspector,
} from './support.js';

let running: TestInspector | undefined;
const readers: SseReader[] = [];
afterEach(async () => {
  for (const r of readers.splice(0)) r.close();
  await running?.close();
  running = undefined;
});

async function start(options: Parameters<typeof startTestInspector>[0] = {}): Promise<TestInspector> {
  running = await startTestInspector(options);
  return running;
}

async function snapshotOf(base: string, query = ''): Promise<InspectorView> {
  const reply = await get(`${base}/api/snapshot${query}`);
  expect(reply.status, reply.text).toBe(200);
  return JSON.parse(reply.text) as InspectorView;
}

const pathOf = (steps: HandoffTransition[]): string[] => steps.map((s) => `${s.event}:${s.from ?? '∅'}→${s.to}`);

describe('[S05-INSPECT-TIMELINE] the inspector follows a request through the machine', () => {
  it('shows the timeline, the edge counts, the ending and the store usage of a corrected handoff', async () => {
    const { adapter, base } = await start();
    const session = adapter.connect({ protocolVersion: '2025-11-25', label: 'timeline-test' });
    const task = await correctedHandoff(session);
    const view = await snapshotOf(base, `?request=${task.requestId}`);
    expect(view.selected).not.toBeNull();
    expect(pathOf(view.selected?.steps ?? [])).toEqual([
      'prepare:∅→prepared',
      'ACCEPT:prepared→validating',
      'VALIDATED:validating→correcting',
      'ACCEPT:correcting→validating',
      'VALIDATED:validating→completed',
    ]);
    expect(view.selected?.steps.map((s) => s.validations)).toEqual([0, 1, 1, 2, 2]);
    expect(view.selected?.steps.map((s) => s.answer)).toEqual(['none', 'validate', 'invalid', 'validate', 'result']);
    expect(view.selected?.ended).toBe('completed');
    const taken = (view.selected?.steps ?? []).map((s) => edgeOf(s));
    expect(taken).not.toContain(undefined);
    expect(new Set(taken).size).toBe(5);
    expect(Object.fromEntries(Object.entries(view.counts.edges).filter(([, n]) => n > 0))).toEqual(
      Object.fromEntries(taken.map((id) => [id, 1])),
    );
    expect(view.counts.states).toMatchObject({ prepared: 0, validating: 0, correcting: 0, completed: 1 });
    expect(view.recent.map((r) => [r.requestId, r.ended, r.kind])).toEqual([
      [task.requestId, 'completed', 'completed'],
    ]);
    expect(view.store).toMatchObject({ items: 1, maxItems: 32, maxBytes: 8 * 1024 * 1024, evictions: 0 });
    expect(view.sessions.map((s) => s.label)).toEqual(['timeline-test']);

    const page = await get(`${base}/?request=${task.requestId}`);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    const timeline = /<tbody id="timeline-body">([\s\S]*?)<\/tbody>/.exec(page.text)?.[1] ?? '';
    expect(timeline.match(/<tr>/g)).toHaveLength(5);
    expect(timeline).toContain('correcting → validating');
    expect(timeline).toContain('validating → completed');
    expect(page.text).toMatch(/Terminal store: items <strong id="store-items">1<\/strong> of 32/);
    expect(page.text).toContain('of 8 MiB');
    expect(page.text).toContain('id="selected-state" class="state badge kind-completed">completed<');
  });

  it('tells how each request ended: completed, rejected, cancelled with its reason, expired', async () => {
    const clock = new SimulatedClock();
    const adapter = createIntentMcpAdapter({
      mode: 'host',
      instances: { main: new Intent({ timeoutMs: 1000 }) },
      clock,
    });
    const { base } = await start({ adapter });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const rejected = await prepare(session);
    await accept(session, rejected, INVALID_CANDIDATE);
    await accept(session, rejected, OTHER_INVALID_CANDIDATE);
    const cancelled = await prepare(session);
    await session.callTool('intent_cancel', { requestId: cancelled.requestId, reason: 'refusal' });
    const expired = await prepare(session);
    clock.increment(1000);
    const completed = await prepare(session);
    await accept(session, completed, SEED_CANDIDATE);
    const view = await snapshotOf(base);
    const ended = Object.fromEntries(view.recent.map((r) => [r.requestId, [r.ended, r.kind, r.reason ?? null]]));
    expect(ended).toEqual({
      [rejected.requestId]: ['rejected', 'failed', null],
      [cancelled.requestId]: ['cancelled', 'failed', 'refusal'],
      [expired.requestId]: ['expired', 'failed', null],
      [completed.requestId]: ['completed', 'completed', null],
    });
    // Newest first.
    expect(view.recent[0]?.requestId).toBe(completed.requestId);
    const page = await get(`${base}/`);
    expect(page.text).toContain('<span class="badge kind-failed">rejected</span>');
    expect(page.text).toMatch(/kind-failed">cancelled<\/span><\/td><td>refusal</);
    expect(page.text).toContain('<span class="badge kind-failed">expired</span>');
  });

  it('lists live requests with state, age, validations used and time to deadline, filtered by session, instance and state', async () => {
    const clock = new SimulatedClock();
    clock.set(Date.parse('2026-01-01T00:00:00Z'));
    const adapter = createIntentMcpAdapter({
      mode: 'host',
      instances: { main: new Intent({ timeoutMs: 60_000 }), other: new Intent({}) },
      clock,
    });
    const { base } = await start({ adapter });
    const a = adapter.connect({ protocolVersion: '2025-11-25', label: 'a' });
    const b = adapter.connect({ protocolVersion: '2025-11-25', label: 'b' });
    const inA = await prepare(a, { ...SEED_ARGS, instance: 'main' });
    await accept(a, inA, INVALID_CANDIDATE);
    const inB = await prepare(b, { ...SEED_ARGS, instance: 'other' });
    const all = await snapshotOf(base);
    expect(all.live.total).toBe(2);
    const row = all.live.rows.find((r) => r.requestId === inA.requestId);
    expect(row).toMatchObject({ state: 'correcting', kind: 'live', validations: 1, budget: 2, instance: 'main' });
    expect(row?.expiresAt).toBe('2026-01-01T00:01:00.000Z');
    expect(all.live.rows.find((r) => r.requestId === inB.requestId)?.deadlineInMs).toBeUndefined();
    const sessionA = all.sessions.find((s) => s.label === 'a')?.id ?? '';
    const bySession = await snapshotOf(base, `?session=${sessionA}`);
    expect(bySession.live.rows.map((r) => r.requestId)).toEqual([inA.requestId]);
    const byInstance = await snapshotOf(base, '?instance=other');
    expect(byInstance.live.rows.map((r) => r.requestId)).toEqual([inB.requestId]);
    const byState = await snapshotOf(base, '?state=correcting');
    expect(byState.live.rows.map((r) => r.requestId)).toEqual([inA.requestId]);
    expect((await snapshotOf(base, '?state=validating')).live.rows).toEqual([]);
    // The page's filter form is a plain GET form; the same filter on the page shows only the matching row.
    const page = await get(`${base}/?instance=other`);
    expect(page.text).toContain('<form method="get" action="/" id="filters">');
    expect(page.text).toContain(`id="live-${inB.requestId}"`);
    expect(page.text).not.toContain(`id="live-${inA.requestId}"`);
    expect(page.text).toContain('<noscript><meta http-equiv="refresh"');
  });
});

describe('[S05-INSPECT-SSE] live updates over SSE', () => {
  it("a transition event's data is the record with its kind and detail added, as valid JSON", () => {
    const base = { at: '2026-12-01T05:00:00.000Z', sessionId: 's"1', requestId: 'r\u2028', instance: 'main' };
    const records: HandoffTransition[] = [
      { ...base, from: null, event: 'prepare', to: 'prepared', answer: 'none', validations: 0, mode: 'host' },
      {
        ...base,
        from: 'prepared',
        event: 'ACCEPT',
        to: 'validating',
        answer: 'validate',
        validations: 1,
        candidate: { bytes: 2105, hash: 'abcdef012345' },
      },
      { ...base, from: 'validating', event: 'VALIDATED', to: 'completed', answer: 'rejected', validations: 2 },
      {
        ...base,
        from: 'prepared',
        event: 'CANCEL',
        to: 'cancelled',
        answer: 'withdrawn',
        validations: 0,
        reason: 'refusal',
      },
    ];
    const kinds = records.map((t) => (JSON.parse(transitionEventData(t)) as { kind: string }).kind);
    expect(kinds).toEqual(['live', 'live', 'failed', 'failed']);
    for (const t of records)
      expect(JSON.parse(transitionEventData(t))).toEqual({
        ...t,
        kind: expect.any(String) as string,
        detail: stepDetail(t),
      });
  });

  it('sends one transition event per record, and counts', async () => {
    const { adapter, base } = await start();
    const sse = await readSse(`${base}/api/events`);
    readers.push(sse);
    expect(sse.status).toBe(200);
    await sse.waitFor((events) => events.some((e) => e.event === 'counts'));
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const task = await correctedHandoff(session);
    await sse.waitFor((events) => events.filter((e) => e.event === 'transition').length >= 5);
    const steps = sse.events
      .filter((e) => e.event === 'transition')
      .map((e) => JSON.parse(e.data) as HandoffTransition & { kind: string });
    expect(steps.every((s) => s.requestId === task.requestId)).toBe(true);
    expect(pathOf(steps)).toEqual([
      'prepare:∅→prepared',
      'ACCEPT:prepared→validating',
      'VALIDATED:validating→correcting',
      'ACCEPT:correcting→validating',
      'VALIDATED:validating→completed',
    ]);
    expect(steps.at(-1)?.kind).toBe('completed');
    await sse.waitFor((events) =>
      events.some((e) => e.event === 'counts' && (JSON.parse(e.data) as { transitions: number }).transitions === 5),
    );
    const counts = JSON.parse(sse.events.filter((e) => e.event === 'counts').at(-1)?.data ?? '{}') as {
      store: { items: number };
      edges: Record<string, number>;
    };
    expect(counts.store.items).toBe(1);
    const done = edgeOf({ from: 'validating', event: 'VALIDATED', to: 'completed', answer: 'result' }) ?? '?';
    expect(counts.edges[done]).toBe(1);
  });

  it('caps the number of event streams (503 beyond)', async () => {
    const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) } });
    const model = new InspectorModel(adapter);
    const server = await serveInspector(model, { port: 0, logger: silentLogger, maxEventClients: 1 });
    try {
      const first = await readSse(`${server.url}api/events`);
      readers.push(first);
      const second = await get(`${server.url}api/events`);
      expect(second.status).toBe(503);
      expect(second.headers['retry-after']).toBe('5');
    } finally {
      for (const r of readers.splice(0)) r.close();
      await server.close();
      model.close();
      await adapter.close();
    }
  });
});

describe('[S05-INSPECT-NO-SECRETS] the page, the JSON and the SSE stream never carry a token or a candidate text', () => {
  it('shows sizes and short hashes only (recognisable markers in the candidate, a real token)', async () => {
    const { adapter, base } = await start();
    const sse = await readSse(`${base}/api/events`);
    readers.push(sse);
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const done = await correctedHandoff(session);
    const live = await prepare(session);
    await accept(session, live, MARKED_INVALID_CANDIDATE);
    await sse.waitFor((events) => events.filter((e) => e.event === 'transition').length >= 8);
    await sse.waitFor((events) =>
      events.some((e) => e.event === 'counts' && (JSON.parse(e.data) as { transitions: number }).transitions >= 8),
    );
    const outputs = [
      sse.raw(),
      (await get(`${base}/`)).text,
      (await get(`${base}/?request=${done.requestId}`)).text,
      (await get(`${base}/?request=${live.requestId}`)).text,
      (await get(`${base}/api/snapshot`)).text,
      (await get(`${base}/api/snapshot?request=${live.requestId}`)).text,
      (await get(`${base}/api/diagram.svg?request=${live.requestId}`)).text,
    ];
    const candidateBytes = Buffer.byteLength(MARKED_INVALID_CANDIDATE, 'utf8');
    for (const text of outputs) {
      expect(text).not.toContain(CANDIDATE_MARKER);
      expect(text).not.toContain(done.submissionToken);
      expect(text).not.toContain(live.submissionToken);
      expect(text).not.toContain('不要取消订单'); // the seed candidate's text, and the request's input
      expect(text).not.toContain(SEED_ARGS.input);
    }
    // What is shown instead: the size and a 12-digit hash.
    expect(outputs[3]).toMatch(new RegExp(`candidate ${candidateBytes} B #[0-9a-f]{12}`));
  });
});

describe('[S05-INSPECT-SECURITY] Host / Origin, GET only, loopback only, bounded queries', () => {
  it('answers 403 to a foreign Host or Origin, on every path', async () => {
    const { base, inspector } = await start();
    const port = inspector.port;
    for (const path of ['/', '/api/snapshot', '/api/events', '/api/diagram.svg']) {
      expect((await get(`${base}${path}`, { headers: { host: 'evil.example' } })).status).toBe(403);
      expect((await get(`${base}${path}`, { headers: { host: `evil.example:${port}` } })).status).toBe(403);
      expect((await get(`${base}${path}`, { headers: { origin: 'http://evil.example' } })).status).toBe(403);
      expect((await get(`${base}${path}`, { headers: { origin: `http://127.0.0.1:${port + 1}` } })).status).toBe(403);
      // A DNS-rebinding host pointing here, spelled with the right port, is still foreign.
      expect((await get(`${base}${path}`, { headers: { host: `rebind.example:${port}` } })).status).toBe(403);
    }
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`])
      expect((await get(`${base}/api/snapshot`, { headers: { host, origin: `http://${host}` } })).status).toBe(200);
  });

  it('has no endpoint that changes state: anything but GET and HEAD is 405, whatever the path', async () => {
    const { adapter, base } = await start();
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const task = await prepare(session);
    const before = await snapshotOf(base);
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'])
      for (const path of ['/', '/api/snapshot', '/api/events', `/?request=${task.requestId}`, '/api/cancel']) {
        const reply = await get(`${base}${path}`, { method, body: method === 'POST' ? '{}' : undefined });
        expect(reply.status, `${method} ${path}`).toBe(405);
        expect(reply.headers['allow']).toBe('GET, HEAD');
      }
    // CONNECT is answered on the socket (Node never hands it to the request handler).
    const port = Number(new URL(base).port);
    const connect = await rawSocketRequest(port, `CONNECT 127.0.0.1:${port} HTTP/1.1\nHost: 127.0.0.1:${port}\n`);
    expect(connect.status).toBe(405);
    const head = await get(`${base}/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    const after = await snapshotOf(base);
    expect(after.live.rows.map((r) => [r.requestId, r.state])).toEqual(
      before.live.rows.map((r) => [r.requestId, r.state]),
    );
    expect(after.counts.transitions).toBe(before.counts.transitions);
  });

  it('refuses to listen on a non-loopback address', async () => {
    const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) } });
    const model = new InspectorModel(adapter);
    try {
      // An IPv4-mapped loopback is loopback, but browsers rewrite it ([::ffff:7f00:1]): its URL could never be opened.
      for (const host of [
        '0.0.0.0',
        '::',
        '192.168.1.10',
        '10.0.0.1',
        'example.com',
        '0',
        '[::]',
        '::ffff:10.0.0.1',
        '::ffff:127.0.0.1',
      ])
        await expect(serveInspector(model, { host, port: 0, logger: silentLogger }), host).rejects.toMatchObject({
          code: 'CONFIG_INVALID',
          message: expect.stringMatching(/only listens on loopback/) as unknown,
        });
    } finally {
      model.close();
      await adapter.close();
    }
  });

  it('the URL it logs answers on every loopback spelling it accepts (another 127.x.y.z, [::1])', async () => {
    const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) } });
    const model = new InspectorModel(adapter);
    try {
      for (const host of ['127.0.0.2', '[::1]', '::1', 'localhost']) {
        const served = await serveInspector(model, { host, port: 0, logger: silentLogger });
        try {
          const page = await get(`${served.url}api/snapshot`);
          expect(page.status, `${host}: ${served.url}`).toBe(200);
          // Still exact: another loopback address on the same port is a foreign Host.
          expect(
            (await get(`${served.url}api/snapshot`, { headers: { host: `127.0.0.3:${served.port}` } })).status,
          ).toBe(403);
        } finally {
          await served.close();
        }
      }
    } finally {
      model.close();
      await adapter.close();
    }
  });

  it('sends a Content-Security-Policy that forbids fetching anything from elsewhere', async () => {
    const { base } = await start();
    const page = await get(`${base}/`);
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/https?:|\*/);
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(page.text).toContain(`<script nonce="${nonce ?? '?'}">`);
    // Nothing in the page points outside: no absolute URL in any src, href or action.
    expect(page.text).not.toMatch(/(?:src|href|action)="(?:https?:)?\/\//);
  });

  it('bounds the query: long, repeated, unknown-state and malformed values get a short typed 400 or 414', async () => {
    const { base } = await start();
    const long = await get(`${base}/api/snapshot?session=${'a'.repeat(200)}`);
    expect(long.status).toBe(400);
    expect((JSON.parse(long.text) as { error: { code: string } }).error.code).toBe('INPUT_INVALID');
    expect(long.text.length).toBeLessThan(600);
    expect((await get(`${base}/api/snapshot?state=nowhere`)).status).toBe(400);
    expect((await get(`${base}/api/snapshot?page=0`)).status).toBe(400);
    expect((await get(`${base}/api/snapshot?page=1e3`)).status).toBe(400);
    expect((await get(`${base}/?${'x=1&'.repeat(20)}`)).status).toBe(400);
    expect((await get(`${base}/?q=${'x'.repeat(3000)}`)).status).toBe(414);
    // A huge target never reaches the handler (Node refuses oversized headers), and the server keeps serving.
    const huge = await get(`${base}/?q=${'x'.repeat(1024 * 1024)}`).catch(() => ({ status: 0 }));
    expect([0, 414, 431]).toContain(huge.status);
    expect((await get(`${base}/api/snapshot?state=&session=`)).status).toBe(200);
    expect((await get(`${base}/nowhere`)).status).toBe(404);
  });
});

describe('[S05-INSPECT-BOUNDED] the inspector stays bounded under a flood', () => {
  /** A source that replays synthetic records (the model only reads records). */
  function fakeSource(): InspectionSource & { emit(t: HandoffTransition): void } {
    let listener: ((t: HandoffTransition) => void) | undefined;
    return {
      inspect(l) {
        listener = l;
        return () => (listener = undefined);
      },
      snapshot: () => ({
        at: '',
        sessions: [],
        retained: [],
        store: { items: 0, maxItems: 32, bytes: 0, maxBytes: 8 << 20, evictions: 0 },
      }),
      emit: (t) => listener?.(t),
    };
  }
  const step = (requestId: string, event: HandoffTransition['event'], from: string | null, to: string) =>
    ({
      at: '2026-01-01T00:00:00.000Z',
      sessionId: 's',
      requestId,
      instance: 'main',
      from,
      event,
      to,
      answer: 'none',
      validations: 0,
    }) as HandoffTransition;

  it('caps timelines, steps per timeline and finished requests, while counts stay exact', () => {
    const source = fakeSource();
    const model = new InspectorModel(source, { maxRequests: 10, maxSteps: 4, maxRecent: 5 });
    for (let i = 0; i < 10_000; i += 1) source.emit(step(`r${i}`, 'prepare', null, 'prepared'));
    expect(model.usage()).toMatchObject({ liveTimelines: 10, untracked: 9990 });
    expect(model.counts().states.prepared).toBe(10_000);
    expect(model.request('r0')).toBeUndefined();
    // A request flooding one timeline: the prepare and the latest steps are kept.
    for (let i = 0; i < 1000; i += 1) source.emit(step('r9999', 'ACCEPT', 'prepared', 'prepared'));
    const tracked = model.request('r9999');
    expect(tracked?.steps).toHaveLength(4);
    expect(tracked?.steps[0]?.event).toBe('prepare');
    expect(tracked?.omittedSteps).toBe(997);
    for (let i = 9990; i < 10_000; i += 1) source.emit(step(`r${i}`, 'CANCEL', 'prepared', 'cancelled'));
    expect(model.usage()).toMatchObject({ liveTimelines: 0, recent: 5 });
    expect(model.recent().map((r) => r.requestId)).toEqual(['r9999', 'r9998', 'r9997', 'r9996', 'r9995']);
    expect(model.counts().states).toMatchObject({ prepared: 9990, cancelled: 10 });
    const cancel = edgeOf({ from: 'prepared', event: 'CANCEL', to: 'cancelled', answer: 'none' });
    expect(cancel).toBeUndefined(); // the synthetic records answer 'none', which no CANCEL edge answers
    expect(model.counts().edges[START_EDGE]).toBe(10_000);
    model.close();
  });

  it('a page polled in a loop does not rebuild the engine snapshot per request (operation count)', () => {
    let snapshots = 0;
    const source = fakeSource();
    const slow: InspectionSource = {
      inspect: (l) => source.inspect(l),
      snapshot: () => {
        snapshots += 1;
        // An engine with many live requests: building its snapshot takes a few milliseconds.
        const until = performance.now() + 5;
        while (performance.now() < until);
        return source.snapshot();
      },
    };
    const model = new InspectorModel(slow);
    try {
      for (let i = 0; i < 200; i += 1) buildView(model, { page: 1 + (i % 7) }, Date.now());
      // One build per request was 200; a build is reused for ten times its own cost.
      expect(snapshots).toBeGreaterThan(0);
      expect(snapshots).toBeLessThan(20);
    } finally {
      model.close();
    }
  });

  it('renders the diagram at most once a second under changing counts (older picture marked not current)', async () => {
    const counts = (n: number) => ({
      states: { prepared: n, validating: 0, correcting: 0, completed: 0, cancelled: 0, expired: 0 },
      edges: { [START_EDGE]: n },
      transitions: n,
    });
    const t = 4_000_000_000_000; // far from any other test's clock: the render budget is per process
    const first = diagramSvg({ counts: counts(1), highlight: 'expired' }, t);
    expect(first.current).toBe(true);
    const again = diagramSvg({ counts: counts(1), highlight: 'expired' }, t + 1);
    expect(again).toMatchObject({ current: true });
    expect(again.svg).toBe(first.svg);
    const soon = diagramSvg({ counts: counts(2), highlight: 'expired' }, t + 500);
    expect(soon.current).toBe(false);
    expect(soon.svg).toBe(first.svg);
    const later = diagramSvg({ counts: counts(2), highlight: 'expired' }, t + MIN_RENDER_INTERVAL_MS);
    expect(later.current).toBe(true);
    expect(later.svg).not.toBe(first.svg);
    expect(await later.svg).toMatch(/^<svg/);
  });

  it('a picture never drawn (another ?request= path) waits for the render budget too: the latest picture, not current', async () => {
    const counts = {
      states: { prepared: 1, validating: 0, correcting: 0, completed: 0, cancelled: 0, expired: 0 },
      edges: { [START_EDGE]: 1 },
      transitions: 1,
    };
    const t = 5_000_000_000_000; // far from the other tests' clocks: the render budget is per process
    const drawn = diagramSvg({ counts, highlight: 'prepared' }, t);
    expect(drawn.current).toBe(true);
    // Distinct highlights within the interval, as a caller cycling through request ids would ask: no render.
    for (const [i, highlight] of (['validating', 'correcting', 'completed', 'cancelled'] as const).entries()) {
      const other = diagramSvg({ counts, highlight }, t + 10 + i);
      expect(other.current).toBe(false);
      expect(other.svg).toBe(drawn.svg);
    }
    const later = diagramSvg({ counts, highlight: 'expired' }, t + MIN_RENDER_INTERVAL_MS);
    expect(later.current).toBe(true);
    expect(later.svg).not.toBe(drawn.svg);
    expect(await later.svg).toMatch(/^<svg/);
  });

  it('drops an SSE client that stops reading instead of buffering for it', async () => {
    const source = fakeSource();
    const model = new InspectorModel(source, { maxRequests: 10 });
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (message: string) => void warnings.push(message) };
    const server = await serveInspector(model, { port: 0, logger });
    const { request } = await import('node:http');
    try {
      // A paused client socket never reads the close either: the server's word (its warning) is what counts.
      const closed = await new Promise<boolean>((resolve, reject) => {
        const req = request(`${server.url}api/events`, (res) => {
          res.pause(); // never reads again
          // Enough transitions to pass the kernel's socket buffers and the 1 MiB backlog bound, in 50 ms batches.
          let sent = 0;
          const pump = setInterval(() => {
            for (let i = 0; i < 4000; i += 1) source.emit(step(`r${sent++}`, 'prepare', null, 'prepared'));
            const dropped = warnings.includes('inspector dropped a slow SSE client');
            if (dropped || sent > 2_000_000) {
              clearInterval(pump);
              req.destroy();
              resolve(dropped);
            }
          }, 10);
        });
        req.on('error', (error) => {
          if (!req.destroyed) reject(error);
        });
        req.end();
      });
      expect(closed).toBe(true);
      expect(model.usage().liveTimelines).toBe(10);
    } finally {
      await server.close();
      model.close();
    }
  }, 60_000);

  it('validates its options (CONFIG_INVALID naming the option)', () => {
    for (const bad of [0, -1, 1.5, Number.NaN])
      expect(() => new InspectorModel(fakeSource(), { maxRequests: bad })).toThrow(/option maxRequests/);
    expect(() => new InspectorModel(fakeSource(), { maxRecent: 0 })).toThrow(/option maxRecent/);
  });

  it('[S05-INSPECT-PAGINATED] paginates 1,000 live requests: the first paint stays under 200 KB', async () => {
    const adapter = createIntentMcpAdapter({
      mode: 'host',
      instances: { main: new Intent({}) },
      limits: { maxPendingPerSession: 1000 },
    });
    const { base } = await start({ adapter });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    for (let i = 0; i < 1000; i += 1) await prepare(session);
    const page = await get(`${base}/`);
    expect(page.status).toBe(200);
    expect(Buffer.byteLength(page.text)).toBeLessThan(200 * 1024);
    expect(page.text.match(/<tr id="live-/g)).toHaveLength(50);
    expect(page.text).toContain('page 1 of 20');
    expect(page.text).toContain('href="/?page=2"');
    const last = await snapshotOf(base, '?page=20');
    expect(last.live).toMatchObject({ total: 1000, page: 20, pages: 20 });
    expect(last.live.rows).toHaveLength(50);
    expect(Buffer.byteLength((await get(`${base}/api/snapshot`)).text)).toBeLessThan(200 * 1024);
  });
});

describe('[S05-INSPECT-DIAGRAM] the page draws the machine generated from its definition', () => {
  it("names exactly the machine's states and transitions", async () => {
    const { base } = await start();
    const page = await get(`${base}/`);
    const svg = /<div id="diagram"[^>]*>([\s\S]*?)<\/div>/.exec(page.text)?.[1] ?? '';
    expect(svg.startsWith('<svg')).toBe(true);
    const model = describeMachine();
    const ids = [...svg.matchAll(/<g id="(state|edge)-([^"]+)"/g)];
    const drawnStates = ids.filter((m) => m[1] === 'state').map((m) => m[2] ?? '');
    const drawnEdges = ids.filter((m) => m[1] === 'edge').map((m) => m[2] ?? '');
    expect(drawnStates.sort()).toEqual(
      model.states
        .map((st) => st.key)
        .concat('__start')
        .sort(),
    );
    expect([...HANDOFF_STATES].every((st) => drawnStates.includes(st))).toBe(true);
    expect(drawnEdges.sort()).toEqual(
      model.edges
        .map((e) => e.id)
        .concat(START_EDGE)
        .sort(),
    );
    // Every edge carries its label in words (guards as words, the answer).
    const text = svg.replace(/&gt;/g, '>').replace(/&lt;/g, '<').replace(/&amp;/g, '&');
    for (const e of model.edges) expect(text).toContain(edgeLabel(e));
  });
});
