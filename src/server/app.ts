/**
 * The standalone command's application: resolve flags over the config file over the embedded default, build the
 * `Intent`s and the adapter, serve over stdio or HTTP, shut down gracefully.
 */
import { IntentError } from '../core/errors.js';
import { checkOpenAICompatibleExecutorConfig, createOpenAICompatibleExecutor } from '../executors/openaiCompatible.js';
import { Intent } from '../intent.js';
import { createIntentMcpAdapter, type IntentMcpAdapter } from '../mcp/adapter.js';
import {
  EMBEDDED_DEFAULT,
  HEALTH_PATH,
  HttpConfigSchema,
  MCP_PATH_PATTERN,
  SERVER_DEFAULTS,
  isUnspecifiedAddress,
  loadConfigFile,
  parsePublicOrigin,
  stdioMessageLimit,
  type ServerConfig,
} from './config.js';
import { serverErrors } from './errors.js';
// Types only: the HTTP side (and @modelcontextprotocol/node) is loaded when HTTP is served, not for stdio.
import type { HttpServeOptions, RunningHttpServer } from './http.js';
import { createLogger, rateLimitedLog, type LogLevel, type Logger } from './logger.js';
import { routedSessionIds } from './sessionRoute.js';
import { serveOverStdio } from './stdio.js';
// The inspector itself (page, listener, Graphviz) is imported only with --inspect; its flags are checked without it.
import { inspectorErrors, isLoopbackHost } from '../inspector/errors.js';
import type { RunningInspector } from '../inspector/index.js';
import { TRACE_MAX_BYTES_DEFAULT, TraceWriter, checkTraceMaxBytes, traceErrors } from '../trace/writer.js';

/** Command-line flags of `serve`; each overrides the config file. */
export interface ServeFlags {
  config?: string;
  mode?: 'host' | 'executor';
  transport?: 'stdio' | 'http';
  host?: string;
  port?: number;
  path?: string;
  publicOrigin?: string;
  maxSessions?: number;
  sessionIdleMs?: number;
  sessionInitIdleMs?: number;
  maxBufferedBytes?: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  timeoutMs?: number;
  logLevel?: LogLevel;
  /** `--inspect [PORT]`: serve the debug inspector (`true` = the default port). */
  inspect?: number | true;
  /** `--inspect-host`: the inspector's loopback address (default 127.0.0.1). */
  inspectHost?: string;
  /** `--trace FILE`: append every transition record to FILE (`src/trace/writer.ts`). */
  trace?: string;
  /** `--trace-max-bytes N`: rotate the trace file at N bytes. */
  traceMaxBytes?: number;
  /** Export OpenTelemetry spans over OTLP/HTTP, configured by the standard `OTEL_*` variables (issue 11). */
  otel?: boolean;
  /** Scale-out: the nginx upstream servers, comma-separated (with `routeSelf`). */
  routeUpstreams?: string;
  /** Scale-out: which of `routeUpstreams` this process is. */
  routeSelf?: string;
}

/** Everything `serve` needs, resolved and validated. */
type ResolvedHttp = Required<Omit<HttpServeOptions, 'logger' | 'now' | 'publicOrigin' | 'sessionRoute'>> &
  Pick<HttpServeOptions, 'publicOrigin' | 'sessionRoute'>;

export interface ResolvedServe extends ResolvedHttp {
  config: ServerConfig;
  configSource: string;
  mode: 'host' | 'executor';
  transport: 'stdio' | 'http';
  logLevel: LogLevel;
  /** The stdio read limit in bytes (see `stdioMessageLimit`). */
  stdioMaxMessageBytes: number;
  /** The debug inspector's address, when `--inspect` asks for it (off by default). */
  inspect?: { host: string; port: number };
  /** Where transitions are traced, if anywhere. */
  trace: { path: string; maxBytes: number } | undefined;
  /** `--otel`: export spans (the SDK packages are loaded only then). */
  otel: boolean;
}

/** The inspector's port when `--inspect` names none: the listen port + 1 over HTTP, 3002 over stdio (spec 05). */
export const INSPECT_STDIO_PORT = 3002;

/** Flags over config file over embedded default. Throws `CONFIG_INVALID` with one clear message. */
export function resolveServe(flags: ServeFlags): ResolvedServe {
  const config = flags.config === undefined ? EMBEDDED_DEFAULT : loadConfigFile(flags.config);
  const httpConfig = config.http ?? {};
  const host = flags.host ?? httpConfig.host ?? SERVER_DEFAULTS.host;
  const originText = flags.publicOrigin ?? httpConfig.publicOrigin;
  const publicOrigin = originText === undefined ? undefined : parsePublicOrigin(originText);
  const transport = flags.transport ?? SERVER_DEFAULTS.transport;
  // Flags that would do nothing are refused, not ignored (a config's http section may stay for either transport).
  if (transport === 'stdio' && (flags.routeUpstreams !== undefined || flags.routeSelf !== undefined))
    throw serverErrors.routeOverStdio();
  // A cheap early check for a clear message; serveHttp checks the address actually bound, whatever its spelling.
  if (transport === 'http' && isUnspecifiedAddress(host) && publicOrigin === undefined)
    throw serverErrors.needsPublicOrigin(host);
  const path = flags.path ?? httpConfig.path ?? SERVER_DEFAULTS.path;
  if (!MCP_PATH_PATTERN.test(path) || path === HEALTH_PATH) throw serverErrors.pathInvalid(path, HEALTH_PATH);
  const resolved: ResolvedServe = {
    config,
    configSource: flags.config ?? '(embedded default)',
    mode: flags.mode ?? config.mode ?? SERVER_DEFAULTS.mode,
    transport,
    host,
    port: flags.port ?? httpConfig.port ?? SERVER_DEFAULTS.port,
    path,
    publicOrigin,
    maxSessions: flags.maxSessions ?? httpConfig.maxSessions ?? SERVER_DEFAULTS.maxSessions,
    sessionIdleMs: flags.sessionIdleMs ?? httpConfig.sessionIdleMs ?? SERVER_DEFAULTS.sessionIdleMs,
    sessionInitIdleMs: flags.sessionInitIdleMs ?? httpConfig.sessionInitIdleMs ?? SERVER_DEFAULTS.sessionInitIdleMs,
    maxBufferedBytes: flags.maxBufferedBytes ?? httpConfig.maxBufferedBytes ?? SERVER_DEFAULTS.maxBufferedBytes,
    headersTimeoutMs: flags.headersTimeoutMs ?? httpConfig.headersTimeoutMs ?? SERVER_DEFAULTS.headersTimeoutMs,
    bodyTimeoutMs: flags.bodyTimeoutMs ?? httpConfig.bodyTimeoutMs ?? SERVER_DEFAULTS.bodyTimeoutMs,
    refusalLogsPerMinute: httpConfig.refusalLogsPerMinute ?? SERVER_DEFAULTS.refusalLogsPerMinute,
    sessionRoute: resolveRoute(flags, httpConfig.route),
    logLevel: flags.logLevel ?? SERVER_DEFAULTS.logLevel,
    stdioMaxMessageBytes: stdioMessageLimit(config),
    trace: resolveTrace(flags),
    otel: flags.otel ?? false,
  };
  const inspectHost = flags.inspectHost ?? SERVER_DEFAULTS.host;
  if (!isLoopbackHost(inspectHost)) throw inspectorErrors.notLoopback(inspectHost);
  if (flags.inspectHost !== undefined && flags.inspect === undefined) throw inspectorErrors.hostWithoutInspect();
  if (flags.inspect !== undefined) {
    const listen = resolved.port;
    const port =
      typeof flags.inspect === 'number'
        ? flags.inspect
        : transport === 'stdio'
          ? INSPECT_STDIO_PORT
          : listen === 0
            ? 0
            : listen + 1;
    resolved.inspect = { host: inspectHost, port };
  }
  if (flags.timeoutMs !== undefined) {
    const instances = Object.fromEntries(
      Object.entries(config.instances ?? {}).map(([name, instance]) => [
        name,
        { ...instance, timeoutMs: flags.timeoutMs },
      ]),
    );
    resolved.config = { ...config, instances };
  }
  return resolved;
}

function resolveTrace(flags: ServeFlags): ResolvedServe['trace'] {
  if (flags.trace === undefined) {
    if (flags.traceMaxBytes !== undefined) throw traceErrors.maxBytesWithoutTrace();
    return undefined;
  }
  return { path: flags.trace, maxBytes: checkTraceMaxBytes(flags.traceMaxBytes ?? TRACE_MAX_BYTES_DEFAULT) };
}

/**
 * What the command observes of its adapter: the trace file (`--trace`) and, at `--log-level debug`, one stderr line per
 * tool call and per transition. Opens the trace file, so an unwritable path refuses here, before anything is served.
 * Returns what closes them.
 */
function observe(adapter: IntentMcpAdapter, resolved: ResolvedServe, logger: Logger): () => Promise<void> {
  const writer =
    resolved.trace === undefined
      ? undefined
      : new TraceWriter(resolved.trace.path, { maxBytes: resolved.trace.maxBytes, logger });
  if (writer !== undefined) adapter.inspect(writer.record);
  if (resolved.logLevel === 'debug') {
    // Sizes, short hashes, ids and names only: a transition record never holds a token or candidate text.
    adapter.inspect((step) => {
      const { sessionId, requestId, ...rest } = step;
      logger.debug('transition', { session: sessionId, request: requestId, ...rest });
    });
    adapter.observeToolCalls?.((call) => {
      logger.debug('tool call', {
        tool: call.tool,
        requestId: call.requestId,
        session: call.sessionId,
        durationMs: call.durationMs,
        outcome: call.outcome,
      });
    });
  }
  return async () => {
    if (writer === undefined) return;
    await writer.close();
    const { records, dropped } = writer.stats;
    if (dropped > 0) logger.warn('trace file closed with records dropped', { path: writer.path, records, dropped });
  };
}

/** Builds the `Intent`s of the config (with their executors) and the adapter. */
/** The instances a resolved configuration serves: its own, or the embedded default's `main` when it names none. */
export function servedInstances(resolved: ResolvedServe): NonNullable<ServerConfig['instances']> {
  return resolved.config.instances ?? EMBEDDED_DEFAULT.instances ?? {};
}

/** Options of {@link buildAdapter}. */
export interface BuildAdapterOptions {
  /**
   * Validate every executor configuration without creating the executors (`check-config`): no key is read, so a
   * config can be checked where its secret is not set. The adapter's executors then fail every call.
   */
  check?: boolean;
}

/** Stands in for an executor `check-config` validated but did not create (no key was read). */
const uncreatedExecutor = (): Promise<string> =>
  Promise.reject(new IntentError('CONFIG_INVALID', 'This executor was only checked, not created.'));

export function buildAdapter(
  resolved: ResolvedServe,
  env: NodeJS.ProcessEnv = process.env,
  options: BuildAdapterOptions = {},
): IntentMcpAdapter {
  const instances: Record<string, Intent> = {};
  for (const [name, instanceConfig] of Object.entries(servedInstances(resolved))) {
    const { executor, ...intentOptions } = instanceConfig;
    if (resolved.mode === 'executor' && executor === undefined) throw serverErrors.executorMissing(name);
    try {
      // Top-level limits are every instance's defaults; an instance's own limits override them.
      const limits = { ...resolved.config.limits, ...intentOptions.limits };
      // In executor mode the executor's timeoutMs bounds the whole intent_parse (both calls, every retry): it becomes
      // the recognition deadline unless the instance sets a shorter one.
      const timeoutMs =
        resolved.mode === 'executor' && executor !== undefined
          ? Math.min(intentOptions.timeoutMs ?? Number.POSITIVE_INFINITY, executor.timeoutMs)
          : intentOptions.timeoutMs;
      instances[name] = new Intent({
        ...intentOptions,
        ...(timeoutMs === undefined || !Number.isFinite(timeoutMs) ? {} : { timeoutMs }),
        limits,
        ...(executor === undefined || resolved.mode === 'host'
          ? {}
          : {
              executor:
                options.check === true
                  ? (checkOpenAICompatibleExecutorConfig(executor), uncreatedExecutor)
                  : createOpenAICompatibleExecutor(executor, { env }),
            }),
      });
    } catch (error) {
      if (error instanceof IntentError) throw serverErrors.instanceInvalid(name, error.message);
      throw error;
    }
  }
  return createIntentMcpAdapter({
    mode: resolved.mode,
    instances,
    ...(resolved.config.toolPrefix === undefined ? {} : { toolPrefix: resolved.config.toolPrefix }),
    // The request-level limits went into every instance above; the adapter keeps the session-level ones.
    limits: {
      ...(resolved.config.limits?.maxPendingPerSession === undefined
        ? {}
        : { maxPendingPerSession: resolved.config.limits.maxPendingPerSession }),
      ...(resolved.config.limits?.maxCandidateBytes === undefined
        ? {}
        : { maxCandidateBytes: resolved.config.limits.maxCandidateBytes }),
    },
  });
}

export interface RunningServe {
  readonly adapter: IntentMcpAdapter;
  readonly http: RunningHttpServer | undefined;
  /** The debug inspector, when `--inspect` started one. */
  readonly inspector: RunningInspector | undefined;
  /**
   * Graceful shutdown (spec 04/05): stop taking new sessions, close every adapter session so each waiter is answered
   * `SESSION_CLOSED`, wait (at most `drainMs`) until those replies are written, then close the transports.
   */
  close(drainMs?: number): Promise<void>;
  /**
   * `--otel` only: closes the adapter (every live request's span ends) and exports what is left, within `timeoutMs`.
   * `close` does it too; the command calls it alone when the process is about to end by itself (stdin ended).
   */
  closeTelemetry?: (timeoutMs: number) => Promise<void>;
}

/** How long the exit may wait for the last spans to reach the collector: the shutdown grace is 4.5 s in all. */
const TELEMETRY_FLUSH_MS = 1000;
/** OpenTelemetry diagnostic lines (export failures) per minute on stderr; the rest are counted. */
const DIAGNOSTICS_PER_MINUTE = 6;

/** `--otel`: loads the SDK, subscribes the OpenTelemetry instrumentation to the adapter. Refuses to start when the SDK is missing. */
async function startTelemetry(
  adapter: IntentMcpAdapter,
  logger: Logger,
): Promise<((timeoutMs: number) => Promise<void>) | undefined> {
  const { instrumentOpenTelemetry, startOtelExport } = await import('../observability/otel.js');
  // Export failures repeat with every batch while a collector is down: rate-limited like every line traffic can cause.
  const diagnostics = rateLimitedLog(logger, DIAGNOSTICS_PER_MINUTE);
  const exporting = await startOtelExport({ diagnostics: { warn: diagnostics } });
  if (exporting === undefined) {
    logger.info('OpenTelemetry disabled by OTEL_SDK_DISABLED');
    return undefined;
  }
  const instrumentation = instrumentOpenTelemetry(adapter, { tracerProvider: exporting.tracerProvider });
  logger.info('exporting OpenTelemetry spans', { protocol: exporting.protocol });
  let closing: Promise<void> | undefined;
  return (timeoutMs) =>
    (closing ??= (async () => {
      await adapter.close();
      instrumentation.stop();
      await exporting.shutdown(timeoutMs);
    })());
}

/** The HTTP part of the resolved options (what `serveHttp` takes; `check-config` prints it too). */
export function httpOptionsOf(resolved: ResolvedServe): ResolvedHttp {
  return {
    host: resolved.host,
    port: resolved.port,
    path: resolved.path,
    publicOrigin: resolved.publicOrigin,
    maxSessions: resolved.maxSessions,
    sessionIdleMs: resolved.sessionIdleMs,
    sessionInitIdleMs: resolved.sessionInitIdleMs,
    maxBufferedBytes: resolved.maxBufferedBytes,
    headersTimeoutMs: resolved.headersTimeoutMs,
    bodyTimeoutMs: resolved.bodyTimeoutMs,
    refusalLogsPerMinute: resolved.refusalLogsPerMinute,
    sessionRoute: resolved.sessionRoute,
  };
}

/** `--route-upstreams` / `--route-self` over `http.route`; both or neither. */
function resolveRoute(
  flags: ServeFlags,
  route: NonNullable<ServerConfig['http']>['route'],
): HttpServeOptions['sessionRoute'] {
  const upstreams =
    flags.routeUpstreams === undefined
      ? route?.upstreams
      : flags.routeUpstreams
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
  const self = flags.routeSelf ?? route?.self;
  if (upstreams === undefined && self === undefined) return undefined;
  if (upstreams === undefined || upstreams.length === 0 || self === undefined) throw serverErrors.routeIncomplete();
  // Flags get the config file's bounds (count and length of the names).
  const bounded = HttpConfigSchema.shape.route.safeParse({ upstreams, self });
  if (!bounded.success)
    throw serverErrors.configIssue('--route-upstreams/--route-self', 'route', bounded.error.issues[0]?.message ?? '');
  // Checked now (self listed, no repeats), so a bad pair is a CONFIG_INVALID at start-up, not at the first session.
  routedSessionIds({ upstreams, self });
  return { upstreams, self };
}

/** Starts serving. Logs go to stderr only. */
export async function startServe(
  resolved: ResolvedServe,
  logger: Logger = createLogger(resolved.logLevel),
): Promise<RunningServe> {
  const adapter = buildAdapter(resolved);
  const closeObservers = observe(adapter, resolved, logger);
  const closeTelemetry = resolved.otel ? await startTelemetry(adapter, logger) : undefined;
  const tools = adapter.tools.map((tool) => tool.name).join(', ');
  // Before the transport, so the inspector sees every request from its prepare on.
  const inspector =
    resolved.inspect === undefined
      ? undefined
      : await (
          await import('../inspector/index.js')
        )
          .startInspector(adapter, { ...resolved.inspect, logger })
          .catch(async (error: unknown) => {
            await closeObservers();
            throw error;
          });
  if (inspector !== undefined) logger.info('inspector listening', { url: inspector.url });
  const closeInspector = async (): Promise<void> => {
    await inspector?.close();
  };
  if (resolved.transport === 'stdio') {
    const handle = serveOverStdio(adapter, logger, { maxMessageBytes: resolved.stdioMaxMessageBytes });
    logger.info('serving over stdio', { mode: resolved.mode, tools, config: resolved.configSource });
    return {
      adapter,
      http: undefined,
      inspector,
      close: async (drainMs = SERVER_DEFAULTS.drainMs) => {
        await handle.drain(drainMs);
        await handle.close();
        await adapter.close();
        await closeObservers();
        await closeInspector();
        await closeTelemetry?.(TELEMETRY_FLUSH_MS);
      },
      ...(closeTelemetry === undefined ? {} : { closeTelemetry }),
    };
  }
  const { serveHttp } = await import('./http.js');
  const http = await serveHttp(adapter, { ...httpOptionsOf(resolved), logger }).catch(async (error: unknown) => {
    await closeObservers();
    await closeInspector();
    throw error;
  });
  logger.info('serving over HTTP', {
    url: http.url,
    publicOrigin: resolved.publicOrigin?.origin ?? '(none)',
    mode: resolved.mode,
    tools,
    config: resolved.configSource,
  });
  return {
    adapter,
    http,
    inspector,
    close: async (drainMs = SERVER_DEFAULTS.drainMs) => {
      await http.close(drainMs);
      await adapter.close();
      await closeObservers();
      await closeInspector();
      await closeTelemetry?.(TELEMETRY_FLUSH_MS);
    },
    ...(closeTelemetry === undefined ? {} : { closeTelemetry }),
  };
}
