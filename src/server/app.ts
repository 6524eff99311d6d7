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
  isWildcardBind,
  loadConfigFile,
  parsePublicOrigin,
  type ServerConfig,
} from './config.js';
import { serveHttp, type HttpServeOptions, type RunningHttpServer } from './http.js';
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
  timeoutMs?: number;
  logLevel?: LogLevel;
}

/** Everything `serve` needs, resolved and validated. */
export interface ResolvedServe extends Pick<
  HttpServeOptions,
  'host' | 'port' | 'path' | 'publicOrigin' | 'maxSessions' | 'sessionIdleMs'
> {
  config: ServerConfig;
  configSource: string;
  mode: 'host' | 'executor';
  transport: 'stdio' | 'http';
  logLevel: LogLevel;
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
  if (transport === 'http' && isWildcardBind(host) && publicOrigin === undefined)
    throw invalid(
      `Binding ${host} needs --public-origin (the URL clients use to reach this server), or bind 127.0.0.1.`,
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
    logLevel: flags.logLevel ?? DEFAULTS.logLevel,
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
  close(): Promise<void>;
}

/** Starts serving. Logs go to stderr only. */
export async function startServe(
  resolved: ResolvedServe,
  logger: Logger = createLogger(resolved.logLevel),
): Promise<RunningServe> {
  const adapter = buildAdapter(resolved);
  const tools = adapter.tools.map((t) => t.name).join(', ');
  if (resolved.transport === 'stdio') {
    const handle = serveOverStdio(adapter, logger);
    logger.info('serving over stdio', { mode: resolved.mode, tools, config: resolved.configSource });
    return {
      adapter,
      http: undefined,
      close: async () => {
        await handle.close();
        await adapter.close();
      },
    };
  }
  const { host, port, path, publicOrigin, maxSessions, sessionIdleMs } = resolved;
  const http = await serveHttp(adapter, { host, port, path, publicOrigin, maxSessions, sessionIdleMs, logger });
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
    close: async () => {
      await http.close();
      await adapter.close();
    },
  };
}
