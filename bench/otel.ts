/**
 * Issue 11, OpenTelemetry: what recording every request as a span costs a handoff.
 *
 *   npm run build && node dist/bench/otel.js [--rounds N]
 *
 * One handoff = `session.prepare` + `session.accept` of the ~2 KB bench candidate with the reply awaited (the same
 * workload as `bench/run.ts`'s issue 3a), on four engines side by side, each in its steady state (its terminal store
 * full, so every handoff also evicts an old reply, which the stream reports too):
 * - `off`: nobody listens to the inspection stream (the engine does not instrument its actors);
 * - `inspect`: one listener that does nothing — the price of the stream itself;
 * - `otel, no SDK`: `instrumentOpenTelemetry` over the global API with no SDK registered (a library user who has not
 *   set up tracing);
 * - `otel, SDK`: a real SDK — `@opentelemetry/sdk-trace`'s TracerProvider (the 2.x successor of BasicTracerProvider)
 *   and the in-memory exporter (flushed and emptied every 1,000 handoffs), once with the BatchSpanProcessor (what
 *   `--otel` and production setups use) and once with the SimpleSpanProcessor (every span exported as it ends).
 * Times are CPU per handoff, cases interleaved in short chunks round by round (`bench/measure.ts`); a ratio is the
 * median of the per-round ratios. Target (issue 11): `otel, SDK` ≤ 1.15× `off`. It reports; it never asserts.
 */
import { trace } from '@opentelemetry/api';
import {
  BatchSpanProcessor,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import { HandoffEngine, type EngineSession, type HandoffInstance } from '../src/engine/engine.js';
import { createIntentMcpAdapter, type IntentMcpSession } from '../src/mcp/adapter.js';
import type { HandoffReply } from '../src/engine/replies.js';
import { instrumentOpenTelemetry } from '../src/observability/otel.js';
import { CANDIDATE_TEXT, REQUEST, benchHandoff, benchIntent } from './fixture.js';
import { compare, ratio, round, type Ratio, type Stat } from './measure.js';
import { log, positiveIntArg } from './support.js';

const ROUNDS = positiveIntArg('rounds', 150);

const intent = benchIntent();
const instance: HandoffInstance = intent.asInstance('travel');

const handoff = (session: EngineSession): Promise<HandoffReply> => benchHandoff(session, instance);

function engineSession(): EngineSession {
  return new HandoffEngine({ maxPendingPerSession: 1_000_000 }).openSession('bench');
}

// The four engines.
const offSession = engineSession();

const inspectEngine = new HandoffEngine({ maxPendingPerSession: 1_000_000 });
inspectEngine.inspect(() => undefined);
const inspectSession = inspectEngine.openSession('bench');

trace.disable(); // no global SDK: the API hands out non-recording spans
const noSdkEngine = new HandoffEngine({ maxPendingPerSession: 1_000_000 });
instrumentOpenTelemetry(noSdkEngine);
const noSdkSession = noSdkEngine.openSession('bench');

/** An engine recorded by a real SDK through `processor`, its exporter emptied every 1,000 handoffs. */
function sdkCase(processor: (exporter: InMemorySpanExporter) => SpanProcessor) {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [processor(exporter)] });
  const engine = new HandoffEngine({ maxPendingPerSession: 1_000_000 });
  const otel = instrumentOpenTelemetry(engine, { tracerProvider: provider });
  const session = engine.openSession('bench');
  let count = 0;
  return {
    exporter,
    provider,
    otel,
    session,
    run: async (): Promise<HandoffReply> => {
      const reply = await handoff(session);
      if (++count % 1000 === 0) {
        await provider.forceFlush();
        exporter.reset();
      }
      return reply;
    },
  };
}
// The batch processor is what `--otel` and production setups use (spans queued, exported in batches); the simple one
// exports every span as it ends. The batch delay is long enough that the flushes every 1,000 handoffs do the exporting.
const batch = sdkCase(
  (exporter) => new BatchSpanProcessor({ exporter, maxQueueSize: 4096, scheduledDelayMillis: 60_000 }),
);
const simple = sdkCase((exporter) => new SimpleSpanProcessor({ exporter }));

// The same handoff through the MCP adapter's tools (what a library user's server pays per request: argument checks and
// the MCP envelope of the reply around the same engine work), without and with the SDK.
function adapterSession(): IntentMcpSession {
  return createIntentMcpAdapter({
    mode: 'host',
    instances: { travel: intent },
    limits: { maxPendingPerSession: 1_000_000 },
  }).connect({ protocolVersion: '2025-11-25' });
}
async function toolHandoff(session: IntentMcpSession): Promise<unknown> {
  const task = (await session.callTool('intent_prepare', REQUEST))?.structuredContent as {
    requestId: string;
    submissionToken: string;
  };
  const reply = await session.callTool('intent_accept', {
    requestId: task.requestId,
    submissionToken: task.submissionToken,
    candidateText: CANDIDATE_TEXT,
  });
  if (reply?.isError !== false) throw new Error('tool handoff failed');
  return reply;
}
const toolOff = adapterSession();
const toolAdapter = createIntentMcpAdapter({
  mode: 'host',
  instances: { travel: intent },
  limits: { maxPendingPerSession: 1_000_000 },
});
const toolExporter = new InMemorySpanExporter();
const toolProvider = new TracerProvider({
  spanProcessors: [
    new BatchSpanProcessor({ exporter: toolExporter, maxQueueSize: 4096, scheduledDelayMillis: 60_000 }),
  ],
});
instrumentOpenTelemetry(toolAdapter, { tracerProvider: toolProvider });
const toolOn = toolAdapter.connect({ protocolVersion: '2025-11-25' });
let toolCount = 0;
async function toolOnHandoff(): Promise<unknown> {
  const reply = await toolHandoff(toolOn);
  if (++toolCount % 1000 === 0) {
    await toolProvider.forceFlush();
    toolExporter.reset();
  }
  return reply;
}

// Warm up each path and fill each terminal store, so every case runs in its steady state (evicting as it goes).
const FILL = 12_000;
for (let i = 0; i < FILL; i++) {
  await handoff(offSession);
  await handoff(inspectSession);
  await handoff(noSdkSession);
  await batch.run();
  await simple.run();
  await toolHandoff(toolOff);
  await toolOnHandoff();
}

const stats = await compare(
  {
    off: { fn: () => handoff(offSession), async: true },
    inspect: { fn: () => handoff(inspectSession), async: true },
    noSdk: { fn: () => handoff(noSdkSession), async: true },
    batch: { fn: batch.run, async: true },
    simple: { fn: simple.run, async: true },
  },
  { rounds: ROUNDS, chunkMicros: 2000, warmupMicros: 100_000 },
);
const tools = await compare(
  {
    off: { fn: () => toolHandoff(toolOff), async: true },
    on: { fn: toolOnHandoff, async: true },
  },
  { rounds: ROUNDS, chunkMicros: 2000, warmupMicros: 100_000 },
);

// What one handoff leaves in the exporter: its request span and, once the store is full, an eviction's retained span.
await simple.provider.forceFlush();
simple.exporter.reset();
for (let i = 0; i < 100; i++) await handoff(simple.session);
const spans = simple.exporter.getFinishedSpans();
const events = spans.reduce((n, s) => n + s.events.length, 0);

const f2 = (n: number): string => `${round(n, 2)}`;
const xr = (r: Ratio): string => `${f2(r.median)}× (ratio of means ${f2(r.totals)}×)`;
const row = (label: string, s: Stat, vsOff: string): string =>
  `${label.padEnd(34)}${f2(s.median).padStart(10)}${f2(s.best).padStart(10)}${f2(s.mean).padStart(10)}${vsOff.padStart(10)}`;

log(
  `ISSUE 11 — OpenTelemetry: one handoff (prepare + accept, reply awaited), ${ROUNDS} rounds, node ${process.version}`,
);
log(
  `${'per handoff'.padEnd(34)}${'µs median'.padStart(10)}${'µs best'.padStart(10)}${'µs mean'.padStart(10)}${'vs off'.padStart(10)}`,
);
log(row('off (no listener)', stats.off, '1×'));
log(row('inspect (a listener doing nothing)', stats.inspect, `${f2(ratio(stats.inspect, stats.off).median)}×`));
log(row('otel, no SDK registered', stats.noSdk, `${f2(ratio(stats.noSdk, stats.off).median)}×`));
log(row('otel, SDK, batch processor', stats.batch, `${f2(ratio(stats.batch, stats.off).median)}×`));
log(row('otel, SDK, simple processor', stats.simple, `${f2(ratio(stats.simple, stats.off).median)}×`));
log();
log(`  per 100 steady-state handoffs the exporter got ${spans.length} spans with ${events} events in all`);
const batchVsOff = ratio(stats.batch, stats.off);
log(
  `  target: otel with an SDK ≤ 1.15× off — batch processor ${xr(batchVsOff)} → ${batchVsOff.median <= 1.15 ? 'met' : 'NOT MET'}`,
);
log(
  `  simple processor: ${xr(ratio(stats.simple, stats.off))}; SDK batch vs the stream alone: ${xr(ratio(stats.batch, stats.inspect))}`,
);
log(
  `  otel with no SDK vs off: ${xr(ratio(stats.noSdk, stats.off))}; the stream alone: ${xr(ratio(stats.inspect, stats.off))}`,
);
log();
log('Through the adapter (intent_prepare + intent_accept tool calls, MCP envelopes included)');
log(row('off', tools.off, '1×'));
log(row('otel, SDK, batch processor', tools.on, `${f2(ratio(tools.on, tools.off).median)}×`));
log(`  otel with an SDK through the tools vs off: ${xr(ratio(tools.on, tools.off))}`);
log(`  open request spans at the end: ${batch.otel.openSpans + simple.otel.openSpans}`);
