/**
 * The standalone command's application: resolve flags over the config file over the embedded default, build the
 * `Intent`s and the adapter, serve over stdio or HTTP, shut down gracefully.
 */
import { IntentError } from '../core/errors.js';
import { createOpenAICompatibleExecutor } from '../executors/openaiCompatible.js';
import { Intent } from '../intent.js';
import { createIntentMcpAdapter, type IntentMcpAdapter } from '../mcp/adapter.js';
import {
  DEFAULTS,
  EMBEDDED_DEFAULT,
  isUnspecifiedAddress,
  loadConfigFile,
  parsePublicOrigin,
  stdioMessageLimit,
  type ServerConfig,
} from './config.js';
import { serveHttp, type HttpServeOptions, type RunningHttpServer } from './http.js';
import { createLogger, type LogLevel, type Logger } from './logger.js';
import { serveOverStdio } from './stdio.js';

/** How long a graceful shutdown waits for waiters' replies before closing anyway (spec 05: exit within 5 s). */
export const DRAIN_TIMEOUT_MS = 3000;

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

function invalid(message: string): IntentError {
  return new IntentError('CONFIG_INVALID', message);
}

/** Flags over config file over embedded default. Throws `CONFIG_INVALID` with one clear message. */
export function resolveServe(flags: ServeFlags): ResolvedServe {
  const config = flags.config === undefined ? EMBEDDED_DEFAULT : loadConfigFile(flags.config);
  const http = config.http ?? {};
  const host = flags.host ?? http.host ?? DEFAULTS.host;
  const originText = flags.publicOrigin ?? http.publicOrigin;
  const publicOrigin = originText === undefined ? undefined : parsePublicOrigin(originText);
  const transport = flags.transport ?? DEFAULTS.transport;
  // A cheap early check for a clear message; serveHttp checks the address actually bound, whatever its spelling.
  if (transport === 'http' && isUnspecifiedAddress(host) && publicOrigin === undefined)
    throw invalid(
      `Binding ${JSON.stringify(host.slice(0, 80))} listens on every interface and needs --public-origin (the URL clients use to reach this server), or bind 127.0.0.1.`,
    );
  const path = flags.path ?? http.path ?? DEFAULTS.path;
  if (!/^\/[^\s?#]*$/.test(path) || path === '/healthz')
    throw invalid(`--path ${JSON.stringify(path)} is invalid; use an absolute path such as /mcp (not /healthz).`);
  const resolved: ResolvedServe = {
    config,
    configSource: flags.config ?? '(embedded default)',
    mode: flags.mode ?? config.mode ?? 'host',
    transport,
    host,
    port: flags.port ?? http.port ?? DEFAULTS.port,
    path,
    publicOrigin,
    maxSessions: flags.maxSessions ?? http.maxSessions ?? DEFAULTS.maxSessions,
    sessionIdleMs: flags.sessionIdleMs ?? http.sessionIdleMs ?? DEFAULTS.sessionIdleMs,
    sessionInitIdleMs: flags.sessionInitIdleMs ?? http.sessionInitIdleMs ?? DEFAULTS.sessionInitIdleMs,
    maxBufferedBytes: flags.maxBufferedBytes ?? http.maxBufferedBytes ?? DEFAULTS.maxBufferedBytes,
    headersTimeoutMs: flags.headersTimeoutMs ?? http.headersTimeoutMs ?? DEFAULTS.headersTimeoutMs,
    bodyTimeoutMs: flags.bodyTimeoutMs ?? http.bodyTimeoutMs ?? DEFAULTS.bodyTimeoutMs,
    refusalLogsPerMinute: http.refusalLogsPerMinute ?? DEFAULTS.refusalLogsPerMinute,
    logLevel: flags.logLevel ?? DEFAULTS.logLevel,
    stdioMaxMessageBytes: stdioMessageLimit(config),
  };
  if (flags.timeoutMs !== undefined) {
    const instances = Object.fromEntries(
      Object.entries(config.instances ?? {}).map(([name, c]) => [name, { ...c, timeoutMs: flags.timeoutMs }]),
    );
    resolved.config = { ...config, instances };
  }
  return resolved;
}

/** Builds the `Intent`s of the config (with their executors) and the adapter. */
export function buildAdapter(resolved: ResolvedServe, env: NodeJS.ProcessEnv = process.env): IntentMcpAdapter {
  const instances: Record<string, Intent> = {};
  for (const [name, cfg] of Object.entries(resolved.config.instances ?? EMBEDDED_DEFAULT.instances ?? {})) {
    const { executor, ...rest } = cfg;
    if (resolved.mode === 'executor' && executor === undefined)
      throw invalid(
        `Executor mode needs an executor for instance "${name}"; add instances.${name}.executor to the config, or use --mode host.`,
      );
    try {
      // Top-level limits are every instance's defaults; an instance's own limits override them.
      const limits = { ...resolved.config.limits, ...rest.limits };
      instances[name] = new Intent({
        ...rest,
        limits,
        ...(executor === undefined || resolved.mode === 'host'
          ? {}
          : { executor: createOpenAICompatibleExecutor(executor, { env }) }),
      });
    } catch (error) {
      if (error instanceof IntentError) throw invalid(`Instance "${name}": ${error.message}`);
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

function httpOptionsOf(r: ResolvedServe): ResolvedHttp {
  return {
    host: r.host,
    port: r.port,
    path: r.path,
    publicOrigin: r.publicOrigin,
    maxSessions: r.maxSessions,
    sessionIdleMs: r.sessionIdleMs,
    sessionInitIdleMs: r.sessionInitIdleMs,
    maxBufferedBytes: r.maxBufferedBytes,
    headersTimeoutMs: r.headersTimeoutMs,
    bodyTimeoutMs: r.bodyTimeoutMs,
    refusalLogsPerMinute: r.refusalLogsPerMinute,
  };
}

/** Starts serving. Logs go to stderr only. */
export async function startServe(
  resolved: ResolvedServe,
  logger: Logger = createLogger(resolved.logLevel),
): Promise<RunningServe> {
  const adapter = buildAdapter(resolved);
  const tools = adapter.tools.map((t) => t.name).join(', ');
  if (resolved.transport === 'stdio') {
    const handle = serveOverStdio(adapter, logger, { maxMessageBytes: resolved.stdioMaxMessageBytes });
    logger.info('serving over stdio', { mode: resolved.mode, tools, config: resolved.configSource });
    return {
      adapter,
      http: undefined,
      close: async (drainMs = DRAIN_TIMEOUT_MS) => {
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
    close: async (drainMs = DRAIN_TIMEOUT_MS) => {
      await http.close(drainMs);
      await adapter.close();
    },
  };
}
