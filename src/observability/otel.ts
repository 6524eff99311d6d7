/**
 * OpenTelemetry for the handoff engine (issue 11): one span per request, from prepare to its terminal state, each step
 * of the request a span event that carries the transition record (`HandoffTransition`) as attributes.
 *
 * Built on the inspection stream alone (`adapter.inspect`), through `@opentelemetry/api` alone: the application owns
 * the SDK. Without a registered SDK the API hands out non-recording spans and this module keeps nothing; with one, the
 * span is the request's own record in the application's tracing backend.
 *
 * Why the shapes are what they are:
 * - A span can take no event once it has ended, and the request span ends when the request does. What the stream
 *   still says about a finished request — a retained reply handed out again (`replay`), a late ACCEPT or CANCEL
 *   answered from the store — becomes a short span of its own, `intent.handoff.retained`, a child of the request span,
 *   carrying that one record as its one event. So the events of a request span and of its retained children, in start
 *   order, are exactly the request's records, except `evict` (the store dropping a reply: housekeeping that every
 *   handoff of a busy server causes, left to the trace file and the snapshot's eviction count).
 * - Memory is bounded by what the engine already holds: one entry per live request (dropped at its terminal record,
 *   and a session close or an adapter close takes every live request to a terminal record), plus the span contexts of
 *   finished requests for their retained children, at most `maxFinished` (oldest dropped first, and on `evict`).
 * - Nothing of a token or of a candidate's text can reach a span: the record has none (sizes and short hashes only).
 */
import {
  DiagLogLevel,
  SpanKind,
  SpanStatusCode,
  context,
  diag,
  trace,
  type Attributes,
  type Span,
  type SpanContext,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { TERMINAL_STATES, type HandoffState } from '../../machines/handoff.js';
import { IntentError, quoteCaller } from '../core/errors.js';
import type { HandoffTransition } from '../engine/inspection.js';
import { VERSION } from '../version.js';

/** The request span's name. */
export const HANDOFF_SPAN_NAME = 'intent.handoff';
/** The name of the span that carries one record of a request that has already ended (a replay, a late ACCEPT or CANCEL). */
export const RETAINED_SPAN_NAME = 'intent.handoff.retained';
/** The instrumentation scope name under which spans are created. */
export const INSTRUMENTATION_SCOPE = 'intent-mcp';

/**
 * Attribute keys. On the request span: request, session, instance and mode from the start; final state, answer,
 * validations and (for a cancelled request) reason at the end. On every span event: the record's own fields.
 */
export const OTEL_ATTRIBUTES = {
  requestId: 'intent.request_id',
  sessionId: 'intent.session_id',
  instance: 'intent.instance',
  mode: 'intent.mode',
  expiresAt: 'intent.expires_at',
  state: 'intent.state',
  answer: 'intent.answer',
  validations: 'intent.validations',
  reason: 'intent.reason',
  from: 'intent.from',
  to: 'intent.to',
  candidateBytes: 'intent.candidate.bytes',
  candidateHash: 'intent.candidate.hash',
  outcome: 'intent.outcome',
  /** Set on a request span that `stop()` ended while its request was still live. */
  unfinished: 'intent.unfinished',
} as const;

/** Anything with an inspection stream: an `IntentMcpAdapter` (or the engine underneath it). */
export interface InspectionSource {
  inspect(listener: (t: HandoffTransition) => void): () => void;
}

export interface OpenTelemetryOptions {
  /**
   * The tracer spans are created with. Default: `tracerProvider.getTracer('intent-mcp', VERSION)`, where the provider
   * defaults to the globally registered one (`trace.getTracerProvider()`): a no-op until the application registers an
   * SDK.
   */
  tracer?: Tracer;
  /** Where to get the tracer when `tracer` is not given. Default: the global provider. */
  tracerProvider?: TracerProvider;
  /**
   * How many finished requests keep their span context, so that a later replay of their retained reply or a late
   * event becomes a child of their span (beyond it, the oldest are forgotten and such a record starts its own trace).
   * Integer from 0 to 1,000,000; default 10,000 (about 1 MB).
   */
  maxFinished?: number;
}

/** What `instrumentOpenTelemetry` returns. */
export interface OpenTelemetryInstrumentation {
  /** Request spans started and not yet ended (one per live request that is being recorded). */
  readonly openSpans: number;
  /**
   * Unsubscribes from the inspection stream and ends every open request span now, marked `intent.unfinished`; requests
   * prepared afterwards are not traced. Idempotent. Call it before dropping the instrumentation while requests are
   * live (closing the adapter first ends them all the ordinary way).
   */
  stop(): void;
}

const DEFAULT_MAX_FINISHED = 10_000;
const MAX_FINISHED_LIMIT = 1_000_000;
const TERMINAL = new Set<HandoffState>(TERMINAL_STATES);

/**
 * Records every request of `source` (an adapter) as an OpenTelemetry span, `intent.handoff`, from its prepare to its
 * terminal state; every transition is a span event named after the record's `event` (`prepare`, `ACCEPT`, `VALIDATED`,
 * `CANCEL`, `DEADLINE`, `CLOSE`), at the record's time, with its fields as `intent.*` attributes. The span's status is
 * ERROR when the request ended `rejected` (correction budget spent) or `failed` (the validation crashed), unset
 * otherwise. The span's parent is the context active when the request was prepared (an incoming HTTP request's span,
 * when the application traces those).
 *
 * Only requests prepared after this call are recorded (the engine instruments a request from its creation). Throws
 * `CONFIG_INVALID` for invalid options.
 */
export function instrumentOpenTelemetry(
  source: InspectionSource,
  options: OpenTelemetryOptions = {},
): OpenTelemetryInstrumentation {
  // Checked as unknown values: a JavaScript caller can pass anything.
  const src: unknown = source;
  if (src === null || typeof src !== 'object' || typeof (src as Partial<InspectionSource>).inspect !== 'function')
    throw optionInvalid('source', 'must be an adapter (an object with inspect(listener))');
  const opts: unknown = options;
  if (opts === null || typeof opts !== 'object') throw optionInvalid('options', 'must be an object');
  const { tracer, tracerProvider, maxFinished = DEFAULT_MAX_FINISHED } = opts as OpenTelemetryOptions;
  const t: unknown = tracer;
  if (t !== undefined && (t === null || typeof (t as Partial<Tracer>).startSpan !== 'function'))
    throw optionInvalid('tracer', 'must be an OpenTelemetry Tracer');
  const p: unknown = tracerProvider;
  if (p !== undefined && (p === null || typeof (p as Partial<TracerProvider>).getTracer !== 'function'))
    throw optionInvalid('tracerProvider', 'must be an OpenTelemetry TracerProvider');
  if (!Number.isInteger(maxFinished) || maxFinished < 0 || maxFinished > MAX_FINISHED_LIMIT)
    throw optionInvalid('maxFinished', `must be an integer from 0 to ${MAX_FINISHED_LIMIT}`);
  const recorder = new SpanRecorder(
    tracer ?? (tracerProvider ?? trace.getTracerProvider()).getTracer(INSTRUMENTATION_SCOPE, VERSION),
    maxFinished,
  );
  const unsubscribe = source.inspect((t) => {
    recorder.record(t);
  });
  let stopped = false;
  return {
    get openSpans() {
      return recorder.openSpans;
    },
    stop() {
      if (stopped) return;
      stopped = true;
      unsubscribe();
      recorder.endAll();
    },
  };
}

/** CONFIG_INVALID naming the option (spec 06: options are checked at construction). */
function optionInvalid(option: string, problem: string): IntentError {
  const message = `instrumentOpenTelemetry: "${option}" ${problem}.`;
  return new IntentError('CONFIG_INVALID', message, {
    details: { issues: [{ path: `/${option}`, message: problem }] },
  });
}

/** The span bookkeeping, one instance per instrumentation. */
class SpanRecorder {
  readonly #tracer: Tracer;
  readonly #maxFinished: number;
  /** Live requests' spans, by session and request id. */
  readonly #open = new Map<string, Span>();
  /** Finished requests' span contexts (insertion order = age), for their retained records. */
  readonly #finished = new Map<string, SpanContext>();
  /** Whether any request span was recording: until then, no step but a prepare can concern this recorder. */
  #recorded = false;

  constructor(tracer: Tracer, maxFinished: number) {
    this.#tracer = tracer;
    this.#maxFinished = maxFinished;
  }

  get openSpans(): number {
    return this.#open.size;
  }

  record(t: HandoffTransition): void {
    // Nothing recorded yet (no SDK, or every request sampled out): a later step has nothing to attach to.
    if (!this.#recorded && t.event !== 'prepare') return;
    // Request ids are unique per engine; the session id in the key costs nothing and rules out any collision.
    const key = `${t.sessionId}\u0000${t.requestId}`;
    if (t.event === 'prepare') {
      this.#start(key, t);
      return;
    }
    const span = this.#open.get(key);
    if (span !== undefined) {
      const at = new Date(t.at);
      span.addEvent(t.event, eventAttributes(t), at);
      if (TERMINAL.has(t.to)) this.#end(key, span, t, at);
      return;
    }
    // The store dropping a finished request's reply is housekeeping, not something the request did: in steady state
    // every handoff evicts an older reply, and a span for each would double what a backend stores (and cost ~10% of a
    // handoff, BENCHMARKS.md). The trace file and `snapshot().store.evictions` have them; here they only end the
    // request's remembered span context.
    if (t.event === 'evict') {
      this.#finished.delete(key);
      return;
    }
    // A record of a request that has already ended (a replay, a late ACCEPT or CANCEL), or of one prepared before this
    // instrumentation existed (then its `from` is a live state: nothing to attach it to, it is left out).
    if (t.from !== null && TERMINAL.has(t.from)) this.#retained(key, t);
  }

  #start(key: string, t: HandoffTransition): void {
    const attributes: Attributes = {
      [OTEL_ATTRIBUTES.requestId]: t.requestId,
      [OTEL_ATTRIBUTES.sessionId]: t.sessionId,
      [OTEL_ATTRIBUTES.instance]: t.instance,
    };
    if (t.mode !== undefined) attributes[OTEL_ATTRIBUTES.mode] = t.mode;
    if (t.expiresAt !== undefined) attributes[OTEL_ATTRIBUTES.expiresAt] = t.expiresAt;
    const at = new Date(t.at);
    const span = this.#tracer.startSpan(HANDOFF_SPAN_NAME, { kind: SpanKind.INTERNAL, startTime: at, attributes });
    // Sampled out, or no SDK registered: nothing to keep, and the request's later records find nothing (cheap).
    if (!span.isRecording()) return;
    this.#recorded = true;
    span.addEvent(t.event, eventAttributes(t), at);
    this.#open.set(key, span);
  }

  #end(key: string, span: Span, t: HandoffTransition, at: Date): void {
    // Bookkeeping first: a failing span implementation must not leave the entry behind.
    this.#open.delete(key);
    this.#remember(key, span.spanContext());
    const attributes: Attributes = {
      [OTEL_ATTRIBUTES.state]: t.to,
      [OTEL_ATTRIBUTES.answer]: t.answer,
      [OTEL_ATTRIBUTES.validations]: t.validations,
    };
    if (t.reason !== undefined) attributes[OTEL_ATTRIBUTES.reason] = t.reason;
    span.setAttributes(attributes);
    if (t.answer === 'rejected' || t.answer === 'failed')
      span.setStatus({ code: SpanStatusCode.ERROR, message: t.answer });
    span.end(at);
  }

  #retained(key: string, t: HandoffTransition): void {
    const parent = this.#finished.get(key);
    const at = new Date(t.at);
    const span = this.#tracer.startSpan(
      RETAINED_SPAN_NAME,
      {
        kind: SpanKind.INTERNAL,
        startTime: at,
        attributes: {
          [OTEL_ATTRIBUTES.requestId]: t.requestId,
          [OTEL_ATTRIBUTES.sessionId]: t.sessionId,
          [OTEL_ATTRIBUTES.instance]: t.instance,
          [OTEL_ATTRIBUTES.state]: t.to,
          [OTEL_ATTRIBUTES.answer]: t.answer,
          [OTEL_ATTRIBUTES.validations]: t.validations,
        },
      },
      parent === undefined ? context.active() : trace.setSpanContext(context.active(), parent),
    );
    if (!span.isRecording()) return;
    span.addEvent(t.event, eventAttributes(t), at);
    span.end(at);
  }

  #remember(key: string, spanContext: SpanContext): void {
    if (this.#maxFinished === 0) return;
    this.#finished.set(key, spanContext);
    if (this.#finished.size > this.#maxFinished) {
      const oldest = this.#finished.keys().next().value;
      if (oldest !== undefined) this.#finished.delete(oldest);
    }
  }

  endAll(): void {
    const now = new Date();
    const spans = [...this.#open.values()];
    this.#open.clear();
    this.#finished.clear();
    for (const span of spans) {
      span.setAttribute(OTEL_ATTRIBUTES.unfinished, true);
      span.end(now);
    }
  }
}

/** A record's own fields as span event attributes (the span carries request, session and instance). */
function eventAttributes(t: HandoffTransition): Attributes {
  const a: Attributes = {
    [OTEL_ATTRIBUTES.to]: t.to,
    [OTEL_ATTRIBUTES.answer]: t.answer,
    [OTEL_ATTRIBUTES.validations]: t.validations,
  };
  if (t.from !== null) a[OTEL_ATTRIBUTES.from] = t.from;
  if (t.mode !== undefined) a[OTEL_ATTRIBUTES.mode] = t.mode;
  if (t.expiresAt !== undefined) a[OTEL_ATTRIBUTES.expiresAt] = t.expiresAt;
  if (t.candidate !== undefined) {
    a[OTEL_ATTRIBUTES.candidateBytes] = t.candidate.bytes;
    a[OTEL_ATTRIBUTES.candidateHash] = t.candidate.hash;
  }
  if (t.outcome !== undefined) a[OTEL_ATTRIBUTES.outcome] = t.outcome;
  if (t.reason !== undefined) a[OTEL_ATTRIBUTES.reason] = t.reason;
  return a;
}

// ---------------------------------------------------------------------------------------------------------------------
// The command's `--otel`: export through the official SDK packages, set up from the standard environment variables.

/** The optional packages `--otel` loads, by the OTLP protocol they serve. */
export const OTEL_SDK_PACKAGES = {
  sdk: '@opentelemetry/sdk-trace',
  resources: '@opentelemetry/resources',
  'http/protobuf': '@opentelemetry/exporter-trace-otlp-proto',
  'http/json': '@opentelemetry/exporter-trace-otlp-http',
} as const;

/** The OTLP protocols `--otel` speaks (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or `OTEL_EXPORTER_OTLP_PROTOCOL`). */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** The default protocol of the OpenTelemetry specification when neither variable is set. */
const DEFAULT_PROTOCOL: OtlpProtocol = 'http/protobuf';

/** How the packages are loaded: `import()` in the command, something else in a test of the missing-package path. */
export type ModuleImporter = (specifier: string) => Promise<unknown>;

/** Where the SDK's own diagnostics go (export failures): the command's logger, at warn. */
export interface OtelDiagnostics {
  warn(message: string, fields?: Record<string, unknown>): void;
}

export interface OtelExportOptions {
  env?: NodeJS.ProcessEnv;
  importModule?: ModuleImporter;
  diagnostics?: OtelDiagnostics;
}

/** A tracer provider exporting over OTLP/HTTP, and how to flush it on the way out. */
export interface OtelExport {
  readonly tracerProvider: TracerProvider;
  readonly protocol: OtlpProtocol;
  /** Ends the provider: every span ended so far is exported first, within `timeoutMs`. Idempotent. */
  shutdown(timeoutMs: number): Promise<void>;
}

type SdkTraceModule = typeof import('@opentelemetry/sdk-trace');
type ResourcesModule = typeof import('@opentelemetry/resources');
type ExporterModule = typeof import('@opentelemetry/exporter-trace-otlp-http');

/**
 * Sets up OTLP/HTTP export the way OpenTelemetry's standard variables describe it: `OTEL_EXPORTER_OTLP_ENDPOINT` /
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `..._HEADERS`, `..._TIMEOUT`, `..._COMPRESSION` and the certificate variables
 * (read by the exporter itself), `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` / `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`,
 * the default, or `http/json`), `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` (over `service.name=intent-mcp`).
 * Returns `undefined` when `OTEL_SDK_DISABLED=true`.
 *
 * The SDK packages are optional dependencies, loaded here only: when one is missing, or the protocol is one the
 * command does not speak (`grpc`), this throws `CONFIG_INVALID` with one line that says what to do.
 */
export async function startOtelExport(options: OtelExportOptions = {}): Promise<OtelExport | undefined> {
  const env = options.env ?? process.env;
  const importModule = options.importModule ?? ((specifier: string) => import(specifier) as Promise<unknown>);
  if ((env['OTEL_SDK_DISABLED'] ?? '').trim().toLowerCase() === 'true') return undefined;
  const protocol = otlpProtocol(env);
  const wanted = [OTEL_SDK_PACKAGES.sdk, OTEL_SDK_PACKAGES.resources, OTEL_SDK_PACKAGES[protocol]];
  const loaded = await Promise.all(
    wanted.map((name) =>
      importModule(name).then(
        (module) => ({ name, module }),
        (error: unknown) => ({ name, module: undefined, error }),
      ),
    ),
  );
  const missing = loaded.filter((l) => l.module === undefined).map((l) => l.name);
  if (missing.length > 0) throw otelErrors.packagesMissing(missing, wanted);
  const [sdk, resources, exporterModule] = loaded.map((l) => l.module) as [
    SdkTraceModule,
    ResourcesModule,
    ExporterModule,
  ];
  if (options.diagnostics !== undefined) {
    const sink = options.diagnostics;
    const forward = (message: string, ...args: unknown[]): void => {
      sink.warn('opentelemetry', { message: [message, ...args.map(String)].join(' ') });
    };
    // The SDK reports export failures through the API's diagnostics, which are silent until a logger is set.
    // The command sets it once; a second call (a test, an embedding) replaces it without a warning of its own.
    diag.setLogger(
      { error: forward, warn: forward, info: noop, debug: noop, verbose: noop },
      { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
    );
  }
  let resource: ReturnType<ResourcesModule['defaultResource']>;
  try {
    // Incoming attributes win a merge: the variables override our service name.
    resource = resources
      .defaultResource()
      .merge(resources.resourceFromAttributes({ 'service.name': 'intent-mcp', 'service.version': VERSION }))
      .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  } catch (error) {
    throw otelErrors.environment(error);
  }
  const exporter = new exporterModule.OTLPTraceExporter();
  const tracerProvider = new sdk.TracerProvider({
    resource,
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter, ...batchOptions(env, options.diagnostics) })],
  });
  let shutdown: Promise<void> | undefined;
  return {
    tracerProvider,
    protocol,
    shutdown(timeoutMs) {
      shutdown ??= tracerProvider.shutdown().catch((error: unknown) => {
        options.diagnostics?.warn('opentelemetry shutdown failed', { error: String(error) });
      });
      return Promise.race([shutdown, delay(timeoutMs)]);
    },
  };
}

function otlpProtocol(env: NodeJS.ProcessEnv): OtlpProtocol {
  const name = env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL']
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const raw = (env[name] ?? '').trim();
  if (raw === '') return DEFAULT_PROTOCOL;
  if (raw === 'http/protobuf' || raw === 'http/json') return raw;
  throw otelErrors.protocol(name, raw);
}

/** The batch processor's standard variables (`OTEL_BSP_*`); an invalid value is ignored with a warning (the spec's rule). */
function batchOptions(
  env: NodeJS.ProcessEnv,
  diagnostics: OtelDiagnostics | undefined,
): { scheduledDelayMillis?: number; exportTimeoutMillis?: number; maxQueueSize?: number; maxExportBatchSize?: number } {
  const read = (name: string, min: number): number | undefined => {
    const raw = (env[name] ?? '').trim();
    if (raw === '') return undefined;
    const value = Number(raw);
    if (/^\d{1,9}$/.test(raw) && value >= min) return value;
    diagnostics?.warn('ignoring an invalid OpenTelemetry variable', { name, value: raw });
    return undefined;
  };
  const out: ReturnType<typeof batchOptions> = {};
  const delayMs = read('OTEL_BSP_SCHEDULE_DELAY', 0);
  const timeoutMs = read('OTEL_BSP_EXPORT_TIMEOUT', 0);
  const queue = read('OTEL_BSP_MAX_QUEUE_SIZE', 1);
  const batch = read('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 1);
  if (delayMs !== undefined) out.scheduledDelayMillis = delayMs;
  if (timeoutMs !== undefined) out.exportTimeoutMillis = timeoutMs;
  if (queue !== undefined) out.maxQueueSize = queue;
  if (batch !== undefined) out.maxExportBatchSize = batch;
  return out;
}

const otelErrors = {
  packagesMissing: (missing: string[], wanted: string[]) =>
    new IntentError(
      'CONFIG_INVALID',
      `--otel needs the optional packages ${wanted.join(', ')}, and ${missing.join(', ')} cannot be loaded: ` +
        `install them (npm install ${wanted.join(' ')}) or run without --otel.`,
      { details: { issues: missing.map((name) => ({ path: '/otel', message: `${name} cannot be loaded` })) } },
    ),
  protocol: (name: string, value: string) =>
    new IntentError(
      'CONFIG_INVALID',
      `--otel exports over OTLP/HTTP only, and ${name} is ${quoteCaller(value)}: set it to http/protobuf or http/json.`,
      { details: { issues: [{ path: `/env/${name}`, message: 'must be http/protobuf or http/json' }] } },
    ),
  environment: (error: unknown) =>
    new IntentError(
      'CONFIG_INVALID',
      `--otel could not read the OpenTelemetry environment: ${quoteCaller(error instanceof Error ? error.message : String(error))}; fix OTEL_RESOURCE_ATTRIBUTES or OTEL_SERVICE_NAME.`,
    ),
};

function noop(): void {}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
