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
import { createLogger, type LogLevel, type Logger } from './logger.js';
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
}

/** Everything `serve` needs, resolved and validated. */
type ResolvedHttp = Required<Omit<HttpServeOptions, 'logger' | 'now' | 'publicOrigin'>> &
  Pick<HttpServeOptions, 'publicOrigin'>;

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
  };
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
  const { serveHttp } = await import('./http.js');
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
