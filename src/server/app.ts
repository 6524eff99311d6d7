/**
 * The standalone command's application: resolve flags over the config file over the embedded default, build the
 * `Intent`s and the adapter, serve over stdio or HTTP, shut down gracefully.
 */
import { IntentError } from '../core/errors.js';
import { createOpenAICompatibleExecutor } from '../executors/openaiCompatible.js';
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
import { serveHttp, type HttpServeOptions, type RunningHttpServer } from './http.js';
import { createLogger, type LogLevel, type Logger } from './logger.js';
import { routedSessionIds } from './sessionRoute.js';
import { serveOverStdio } from './stdio.js';

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
}

/** Flags over config file over embedded default. Throws `CONFIG_INVALID` with one clear message. */
export function resolveServe(flags: ServeFlags): ResolvedServe {
  const config = flags.config === undefined ? EMBEDDED_DEFAULT : loadConfigFile(flags.config);
  const httpConfig = config.http ?? {};
  const host = flags.host ?? httpConfig.host ?? SERVER_DEFAULTS.host;
  const originText = flags.publicOrigin ?? httpConfig.publicOrigin;
  const publicOrigin = originText === undefined ? undefined : parsePublicOrigin(originText);
  const transport = flags.transport ?? SERVER_DEFAULTS.transport;
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
  };
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

/** Builds the `Intent`s of the config (with their executors) and the adapter. */
/** The instances a resolved configuration serves: its own, or the embedded default's `main` when it names none. */
export function servedInstances(resolved: ResolvedServe): NonNullable<ServerConfig['instances']> {
  return resolved.config.instances ?? EMBEDDED_DEFAULT.instances ?? {};
}

export function buildAdapter(resolved: ResolvedServe, env: NodeJS.ProcessEnv = process.env): IntentMcpAdapter {
  const instances: Record<string, Intent> = {};
  for (const [name, instanceConfig] of Object.entries(servedInstances(resolved))) {
    const { executor, ...intentOptions } = instanceConfig;
    if (resolved.mode === 'executor' && executor === undefined) throw serverErrors.executorMissing(name);
    try {
      // Top-level limits are every instance's defaults; an instance's own limits override them.
      const limits = { ...resolved.config.limits, ...intentOptions.limits };
      instances[name] = new Intent({
        ...intentOptions,
        limits,
        ...(executor === undefined || resolved.mode === 'host'
          ? {}
          : { executor: createOpenAICompatibleExecutor(executor, { env }) }),
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
  /**
   * Graceful shutdown (spec 04/05): stop taking new sessions, close every adapter session so each waiter is answered
   * `SESSION_CLOSED`, wait (at most `drainMs`) until those replies are written, then close the transports.
   */
  close(drainMs?: number): Promise<void>;
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
  const tools = adapter.tools.map((tool) => tool.name).join(', ');
  if (resolved.transport === 'stdio') {
    const handle = serveOverStdio(adapter, logger, { maxMessageBytes: resolved.stdioMaxMessageBytes });
    logger.info('serving over stdio', { mode: resolved.mode, tools, config: resolved.configSource });
    return {
      adapter,
      http: undefined,
      close: async (drainMs = SERVER_DEFAULTS.drainMs) => {
        await handle.drain(drainMs);
        await handle.close();
        await adapter.close();
      },
    };
  }
  const http = await serveHttp(adapter, { ...httpOptionsOf(resolved), logger });
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
    close: async (drainMs = SERVER_DEFAULTS.drainMs) => {
      await http.close(drainMs);
      await adapter.close();
    },
  };
}
