/**
 * OpenTelemetry spans (issue 11), in process: a real SDK (`@opentelemetry/sdk-trace`'s TracerProvider with the
 * in-memory exporter) records a scripted session, and its spans are held against the inspection records of the same
 * run — one request span per request, one span event per record in the same order, attributes that agree — with no
 * token or candidate text anywhere in them.
 */
import { SpanStatusCode, trace, type HrTime } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import {
  HANDOFF_SPAN_NAME,
  Intent,
  OTEL_ATTRIBUTES as A,
  RETAINED_SPAN_NAME,
  createIntentMcpAdapter,
  instrumentOpenTelemetry,
  isIntentError,
  type HandoffTransition,
  type IntentMcpAdapter,
  type IntentMcpSession,
} from '../../src/index.js';
import { HandoffEngine } from '../../src/engine/engine.js';
import { startOtelExport } from '../../src/observability/otel.js';
import { SEED_ARGS, SEED_CANDIDATE, textOf } from '../support/mcpFixtures.js';

const T0 = Date.parse('2026-11-02T09:30:00.000Z');
/** Candidate texts that must never reach a span: each one is a correctable (invalid) candidate carrying a marker. */
const MARKED = [1, 2, 3].map((n) => `{"turnKind":"request","note":"CANDIDATE-TEXT-MARKER-${n}"}`);
const INPUT_MARKER = 'INPUT-TEXT-MARKER-7f3a';

interface Task {
  requestId: string;
  submissionToken: string;
}

function sdk(options: { sampler?: AlwaysOffSampler } = {}) {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({
    ...options,
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  return { exporter, provider };
}

function hostAdapter(clock?: SimulatedClock): IntentMcpAdapter {
  return createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) }, ...(clock ? { clock } : {}) });
}

async function prepare(session: IntentMcpSession, options: { timeoutMs?: number } = {}): Promise<Task> {
  const reply = await session.callTool('intent_prepare', { input: `${SEED_ARGS.input} ${INPUT_MARKER}` }, options);
  expect(reply?.isError, textOf(reply)).toBe(false);
  return reply?.structuredContent as unknown as Task;
}

function accept(session: IntentMcpSession, task: Task, candidateText: string) {
  return session.callTool('intent_accept', {
    requestId: task.requestId,
    submissionToken: task.submissionToken,
    candidateText,
  });
}

/** The scripted session of issue 11: correction, success, replay, conflict, rejection, cancel, expiry, session close. */
async function scriptedSession(adapter: IntentMcpAdapter, clock: SimulatedClock): Promise<Task[]> {
  const session = adapter.connect({ protocolVersion: '2025-11-25' });
  const tasks: Task[] = [];
  // Correction then success, then a replay of the retained reply.
  const a = await prepare(session);
  tasks.push(a);
  expect((await accept(session, a, MARKED[0]!))?.isError).toBe(true);
  expect((await accept(session, a, SEED_CANDIDATE))?.isError).toBe(false);
  expect((await accept(session, a, SEED_CANDIDATE))?.isError).toBe(false);
  // Conflict: a second candidate while the first is being validated.
  const b = await prepare(session);
  tasks.push(b);
  const first = accept(session, b, SEED_CANDIDATE);
  const conflict = accept(session, b, MARKED[1]!);
  expect((await first)?.isError).toBe(false);
  expect((await conflict)?.isError).toBe(true);
  // Rejected: the correction budget spent on two invalid candidates.
  const c = await prepare(session);
  tasks.push(c);
  await accept(session, c, MARKED[1]!);
  expect((await accept(session, c, MARKED[2]!))?.isError).toBe(true);
  // Cancel, then a late cancel answered from the store.
  const d = await prepare(session);
  tasks.push(d);
  await session.callTool('intent_cancel', { requestId: d.requestId, reason: 'refusal' });
  await session.callTool('intent_cancel', { requestId: d.requestId });
  // Expiry on the simulated clock.
  const e = await prepare(session, { timeoutMs: 5_000 });
  tasks.push(e);
  clock.increment(5_000);
  // Session close with a live request.
  const f = await prepare(session);
  tasks.push(f);
  await session.close();
  return tasks;
}

/** Time of a span or event as the record's ISO string (the record has milliseconds). */
function iso(time: HrTime): string {
  return new Date(time[0] * 1000 + Math.round(time[1] / 1e6)).toISOString();
}

/** Rebuilds the transition records a span carries, from the span's attributes and its events. */
function recordsOf(span: ReadableSpan): HandoffTransition[] {
  return span.events.map((event) => {
    const a = event.attributes ?? {};
    const record: HandoffTransition = {
      at: iso(event.time),
      sessionId: span.attributes[A.sessionId] as string,
      requestId: span.attributes[A.requestId] as string,
      instance: span.attributes[A.instance] as string,
      from: (a[A.from] as HandoffTransition['from'] | undefined) ?? null,
      event: event.name as HandoffTransition['event'],
      to: a[A.to] as HandoffTransition['to'],
      answer: a[A.answer] as HandoffTransition['answer'],
      validations: a[A.validations] as number,
    };
    if (a[A.mode] !== undefined) record.mode = a[A.mode] as NonNullable<HandoffTransition['mode']>;
    if (a[A.expiresAt] !== undefined) record.expiresAt = a[A.expiresAt] as string;
    if (a[A.candidateBytes] !== undefined)
      record.candidate = { bytes: a[A.candidateBytes] as number, hash: a[A.candidateHash] as string };
    if (a[A.outcome] !== undefined) record.outcome = a[A.outcome] as NonNullable<HandoffTransition['outcome']>;
    if (a[A.reason] !== undefined) record.reason = a[A.reason] as NonNullable<HandoffTransition['reason']>;
    return record;
  });
}

afterEach(() => {
  trace.disable();
});

describe('OpenTelemetry spans match the inspection records of the same run [I11-OTEL-SPANS]', () => {
  it('[I11-OTEL-SPANS] one span per request, one event per record in the same order, attributes that agree', async () => {
    const clock = new SimulatedClock();
    clock.set(T0);
    const adapter = hostAdapter(clock);
    const records: HandoffTransition[] = [];
    adapter.inspect((t) => records.push(t));
    const { exporter, provider } = sdk();
    const otel = instrumentOpenTelemetry(adapter, { tracerProvider: provider });
    const tasks = await scriptedSession(adapter, clock);
    expect(otel.openSpans).toBe(0);

    const spans = exporter.getFinishedSpans();
    const requestSpans = spans.filter((s) => s.name === HANDOFF_SPAN_NAME);
    expect(requestSpans).toHaveLength(tasks.length);
    // The script produced every kind of step it was written for.
    const answers = new Set(records.map((r) => r.answer));
    for (const answer of ['invalid', 'result', 'replay', 'conflict', 'rejected', 'withdrawn', 'too_late', 'closed'])
      expect(answers).toContain(answer);

    for (const task of tasks) {
      const own = records.filter((r) => r.requestId === task.requestId);
      const mine = spans.filter((s) => s.attributes[A.requestId] === task.requestId);
      const [span, ...retained] = mine;
      expect(span?.name).toBe(HANDOFF_SPAN_NAME);
      for (const r of retained) {
        expect(r.name).toBe(RETAINED_SPAN_NAME);
        // A retained record's span sits under its request's span, in the same trace.
        expect(r.parentSpanContext?.spanId).toBe(span!.spanContext().spanId);
        expect(r.spanContext().traceId).toBe(span!.spanContext().traceId);
      }
      // Every record of the request, in order: the request span's events, then its retained spans' one event each.
      expect(mine.flatMap(recordsOf)).toEqual(own);
      const terminal = own.find((r) => ['completed', 'cancelled', 'expired'].includes(r.to))!;
      expect(span!.events.at(-1)?.name).toBe(terminal.event);
      expect(iso(span!.startTime)).toBe(own[0]!.at);
      expect(iso(span!.endTime)).toBe(terminal.at);
      expect(span!.attributes).toMatchObject({
        [A.instance]: 'main',
        [A.sessionId]: own[0]!.sessionId,
        [A.mode]: 'host',
        [A.state]: terminal.to,
        [A.answer]: terminal.answer,
        [A.validations]: terminal.validations,
      });
      if (terminal.reason !== undefined) expect(span!.attributes[A.reason]).toBe(terminal.reason);
      const error = terminal.answer === 'rejected' || terminal.answer === 'failed';
      expect(span!.status.code).toBe(error ? SpanStatusCode.ERROR : SpanStatusCode.UNSET);
    }
    // The ends the script asked for, request by request.
    const ends = tasks.map((t) => {
      const span = requestSpans.find((s) => s.attributes[A.requestId] === t.requestId)!;
      return [span.attributes[A.state], span.attributes[A.answer], span.attributes[A.reason] ?? null];
    });
    expect(ends).toEqual([
      ['completed', 'result', null],
      ['completed', 'result', null],
      ['completed', 'rejected', null],
      ['cancelled', 'withdrawn', 'refusal'],
      ['expired', 'too_late', null],
      ['cancelled', 'closed', 'session_closed'],
    ]);
    otel.stop();
  });

  it('[I11-OTEL-NO-SECRETS] no span, event or attribute carries a token, a candidate text or the input', async () => {
    const clock = new SimulatedClock();
    clock.set(T0);
    const adapter = hostAdapter(clock);
    const { exporter, provider } = sdk();
    instrumentOpenTelemetry(adapter, { tracerProvider: provider });
    const tasks = await scriptedSession(adapter, clock);
    const spans = exporter.getFinishedSpans();
    expect(spans.length).toBeGreaterThan(tasks.length);
    const dump = JSON.stringify(
      spans.map((s) => ({
        name: s.name,
        attributes: s.attributes,
        events: s.events,
        status: s.status,
        links: s.links,
      })),
    );
    for (const task of tasks) {
      expect(task.submissionToken.length).toBeGreaterThan(8);
      expect(dump).not.toContain(task.submissionToken);
      expect(dump).toContain(task.requestId);
    }
    for (const marker of ['CANDIDATE-TEXT-MARKER', INPUT_MARKER, '"turnKind"', SEED_CANDIDATE.slice(0, 40)])
      expect(dump).not.toContain(marker);
  });
});

describe('OpenTelemetry costs nothing it need not, and leaves nothing open [I11-OTEL-BOUNDED]', () => {
  it('[I11-OTEL-BOUNDED] without a registered SDK (the global no-op API) nothing is kept', async () => {
    const adapter = hostAdapter();
    const otel = instrumentOpenTelemetry(adapter);
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    await prepare(session);
    expect(otel.openSpans).toBe(0);
    await adapter.close();
  });

  it('[I11-OTEL-BOUNDED] a globally registered SDK is picked up by default; a sampled-out request keeps nothing', async () => {
    const { exporter, provider } = sdk();
    trace.setGlobalTracerProvider(provider);
    const adapter = hostAdapter();
    const otel = instrumentOpenTelemetry(adapter);
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    await prepare(session);
    expect(otel.openSpans).toBe(1);
    await session.close();
    expect(otel.openSpans).toBe(0);
    expect(exporter.getFinishedSpans().map((s) => s.attributes[A.reason])).toEqual(['session_closed']);

    const off = sdk({ sampler: new AlwaysOffSampler() });
    const sampledOut = instrumentOpenTelemetry(adapter, { tracerProvider: off.provider });
    const other = hostAdapter();
    const otherOtel = instrumentOpenTelemetry(other, { tracerProvider: off.provider });
    await prepare(other.connect({ protocolVersion: '2025-11-25' }));
    expect(otherOtel.openSpans).toBe(0);
    await other.close();
    expect(off.exporter.getFinishedSpans()).toEqual([]);
    sampledOut.stop();
  });

  it('[I11-OTEL-BOUNDED] closing the adapter ends every live request span; stop() ends what is left and unsubscribes', async () => {
    const { exporter, provider } = sdk();
    const adapter = hostAdapter();
    const otel = instrumentOpenTelemetry(adapter, { tracerProvider: provider });
    const sessions = [1, 2, 3].map(() => adapter.connect({ protocolVersion: '2025-11-25' }));
    for (const s of sessions) for (let i = 0; i < 4; i++) await prepare(s);
    expect(otel.openSpans).toBe(12);
    await adapter.close();
    expect(otel.openSpans).toBe(0);
    expect(exporter.getFinishedSpans()).toHaveLength(12);

    const again = hostAdapter();
    const stopping = instrumentOpenTelemetry(again, { tracerProvider: provider });
    const s = again.connect({ protocolVersion: '2025-11-25' });
    const live = await prepare(s);
    await prepare(s);
    expect(stopping.openSpans).toBe(2);
    stopping.stop();
    stopping.stop();
    expect(stopping.openSpans).toBe(0);
    const stopped = exporter.getFinishedSpans().slice(12);
    expect(stopped.map((sp) => sp.attributes[A.unfinished])).toEqual([true, true]);
    // After stop, the stream is no longer followed: these records make no span.
    await accept(s, live, SEED_CANDIDATE);
    await again.close();
    expect(exporter.getFinishedSpans()).toHaveLength(14);
  });

  it('[I11-OTEL-BOUNDED] finished requests keep their span context up to maxFinished; older ones replay as their own trace', async () => {
    const { exporter, provider } = sdk();
    const adapter = hostAdapter();
    instrumentOpenTelemetry(adapter, { tracerProvider: provider, maxFinished: 1 });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const older = await prepare(session);
    await accept(session, older, SEED_CANDIDATE);
    const newer = await prepare(session);
    await accept(session, newer, SEED_CANDIDATE);
    await accept(session, older, SEED_CANDIDATE);
    await accept(session, newer, SEED_CANDIDATE);
    const spanOf = (task: Task, name: string) =>
      exporter.getFinishedSpans().find((s) => s.name === name && s.attributes[A.requestId] === task.requestId)!;
    expect(spanOf(older, RETAINED_SPAN_NAME).parentSpanContext).toBeUndefined();
    expect(spanOf(newer, RETAINED_SPAN_NAME).parentSpanContext?.spanId).toBe(
      spanOf(newer, HANDOFF_SPAN_NAME).spanContext().spanId,
    );
    expect(spanOf(older, RETAINED_SPAN_NAME).events.map((e) => e.name)).toEqual(['replay']);
    await adapter.close();
  });

  it('[I11-OTEL-BOUNDED] an eviction from the terminal store makes no span (housekeeping, one per handoff when full)', async () => {
    const { exporter, provider } = sdk();
    const engine = new HandoffEngine({ store: { maxItems: 1 } });
    const records: HandoffTransition[] = [];
    engine.inspect((t) => records.push(t));
    instrumentOpenTelemetry(engine, { tracerProvider: provider });
    const session = engine.openSession();
    const instance = new Intent({}).asInstance('main');
    for (let i = 0; i < 3; i++) {
      const task = session.prepare(instance, SEED_ARGS);
      expect((await session.accept(task.requestId, task.submissionToken, SEED_CANDIDATE)).isError).toBe(false);
    }
    expect(records.filter((r) => r.event === 'evict')).toHaveLength(2);
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual([HANDOFF_SPAN_NAME, HANDOFF_SPAN_NAME, HANDOFF_SPAN_NAME]);
    expect(spans.flatMap(recordsOf)).toEqual(records.filter((r) => r.event !== 'evict'));
    await session.close();
  });

  it('[I11-OTEL-BOUNDED] a request span takes at most the SDK limit of events, however many conflicts a caller sends', async () => {
    const { exporter } = sdk();
    const limited = new TracerProvider({
      spanLimits: { eventCountLimit: 16 },
      spanProcessors: [new SimpleSpanProcessor({ exporter })],
    });
    const adapter = hostAdapter();
    instrumentOpenTelemetry(adapter, { tracerProvider: limited });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const task = await prepare(session);
    const running = accept(session, task, SEED_CANDIDATE);
    const conflicts = Array.from({ length: 500 }, (_, i) => accept(session, task, `{"n":${i}}`));
    await Promise.all([running, ...conflicts]);
    const [span] = exporter.getFinishedSpans();
    expect(span?.events).toHaveLength(16);
    expect(span?.droppedEventsCount).toBeGreaterThan(480);
    await adapter.close();
  });

  it('[S06-CONFIG-CHECKED] invalid options are CONFIG_INVALID naming the option', () => {
    const adapter = hostAdapter();
    const cases: [unknown, unknown, string][] = [
      [null, {}, 'source'],
      [{}, {}, 'source'],
      [adapter, null, 'options'],
      [adapter, { tracer: {} }, 'tracer'],
      [adapter, { tracerProvider: 42 }, 'tracerProvider'],
      [adapter, { maxFinished: -1 }, 'maxFinished'],
      [adapter, { maxFinished: 1.5 }, 'maxFinished'],
      [adapter, { maxFinished: Number.NaN }, 'maxFinished'],
      [adapter, { maxFinished: 2_000_000 }, 'maxFinished'],
    ];
    for (const [source, options, option] of cases) {
      let thrown: unknown;
      try {
        instrumentOpenTelemetry(source as IntentMcpAdapter, options as object);
      } catch (error) {
        thrown = error;
      }
      expect(isIntentError(thrown), option).toBe(true);
      if (!isIntentError(thrown)) continue;
      expect(thrown.code).toBe('CONFIG_INVALID');
      expect(thrown.message).toContain(`"${option}"`);
    }
  });
});

describe('--otel setup: the optional SDK packages and the standard variables [I11-OTEL-MISSING]', () => {
  const failing = (absent: string[]) => async (specifier: string) => {
    if (absent.includes(specifier)) {
      const error = new Error(`Cannot find package '${specifier}' imported from /x/dist/src/observability/otel.js`);
      Object.assign(error, { code: 'ERR_MODULE_NOT_FOUND' });
      throw error;
    }
    return import(specifier) as Promise<unknown>;
  };

  it('[I11-OTEL-MISSING] a missing package is one CONFIG_INVALID line naming it and how to install', async () => {
    for (const absent of [
      ['@opentelemetry/sdk-trace'],
      ['@opentelemetry/exporter-trace-otlp-proto'],
      ['@opentelemetry/sdk-trace', '@opentelemetry/resources'],
    ]) {
      const error = await startOtelExport({ env: {}, importModule: failing(absent) }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isIntentError(error)).toBe(true);
      if (!isIntentError(error)) continue;
      expect(error.code).toBe('CONFIG_INVALID');
      expect(error.message).not.toContain('\n');
      expect(error.message).toContain(`and ${absent.join(', ')} cannot be loaded`);
      expect(error.message).toContain('npm install @opentelemetry/sdk-trace');
    }
    // http/json needs the JSON exporter, not the protobuf one.
    const json = await startOtelExport({
      env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
      importModule: failing(['@opentelemetry/exporter-trace-otlp-proto']),
    });
    expect(json?.protocol).toBe('http/json');
    await json?.shutdown(1000);
  });

  it('[I11-OTEL-MISSING] the protocol variables: http/protobuf by default, the traces one first, grpc refused', async () => {
    const seen: string[] = [];
    const recording = (specifier: string) => {
      seen.push(specifier);
      return import(specifier) as Promise<unknown>;
    };
    const byDefault = await startOtelExport({ env: {}, importModule: recording });
    expect(byDefault?.protocol).toBe('http/protobuf');
    expect(seen).toContain('@opentelemetry/exporter-trace-otlp-proto');
    await byDefault?.shutdown(1000);
    const traces = await startOtelExport({
      env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' },
    });
    expect(traces?.protocol).toBe('http/json');
    await traces?.shutdown(1000);
    for (const value of ['grpc', 'x'.repeat(10_000)]) {
      const error = await startOtelExport({ env: { OTEL_EXPORTER_OTLP_PROTOCOL: value } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isIntentError(error) && error.code).toBe('CONFIG_INVALID');
      expect((error as Error).message.length).toBeLessThan(300);
    }
    expect(await startOtelExport({ env: { OTEL_SDK_DISABLED: 'true' } })).toBeUndefined();
  });
});
