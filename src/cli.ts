#!/usr/bin/env node
/**
 * The `intent-mcp` command (spec 05): `serve` (default), `check-config FILE`, `diagram`, `--help`, `--version`.
 * Invalid flags or configuration: one line on stderr naming the problem, exit code 2. stdout carries only the protocol
 * (stdio) or the output a subcommand was asked for; logs go to stderr.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { HANDOFF_STATES } from '../machines/handoff.js';
import { IntentError } from './core/errors.js';
import { toDot, toMermaid } from '../machines/diagram.js';
import { IntentConfigBaseSchema } from './core/schemas.js';
import {
  buildAdapter,
  httpOptionsOf,
  resolveServe,
  servedInstances,
  startServe,
  type ServeFlags,
} from './server/app.js';
import { HttpConfigSchema, SERVER_DEFAULTS, integerRange } from './server/config.js';
import { LOG_LEVELS, createLogger } from './server/logger.js';
import { VERSION } from './version.js';

/** Shutdown must finish within this many ms (spec 05: exit 0 within 5 s); the drain takes at most `drainMs` of it. */
const SHUTDOWN_GRACE_MS = 4500;

function fail(message: string): never {
  process.stderr.write(`intent-mcp: ${message}\n`);
  process.exit(2);
}

/** A flag's parser: an integer within `range` (read off the config schema, so flag and file accept the same). */
function integer({ min, max }: { min: number; max: number }) {
  return (text: string): number => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < min || value > max)
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}`);
    return value;
  };
}

const httpField = HttpConfigSchema.shape;
/** What `--max-buffered-bytes` accepts: at least one whole request body. */
const bufferedBytesRange = integerRange(httpField.maxBufferedBytes);

/** Wraps a command's action: an `IntentError` (bad flags or configuration) becomes one stderr line and exit 2. */
function exitOnIntentError<A extends unknown[]>(action: (...args: A) => Promise<void> | void) {
  return async (...args: A): Promise<void> => {
    try {
      await action(...args);
    } catch (error) {
      if (error instanceof IntentError) fail(error.message);
      throw error;
    }
  };
}

const program = new Command('intent-mcp')
  .description('Turn natural-language requests into structured intents, served over MCP (stdio or stateful HTTP).')
  .version(VERSION)
  .showSuggestionAfterError(true)
  .configureOutput({
    writeErr: (text) => process.stderr.write(text),
    outputError: (text, write) => {
      write(`intent-mcp: ${(text.split('\n')[0] ?? '').replace(/^error: /, '')}\n`);
    },
  })
  .exitOverride((error) => {
    process.exit(error.exitCode === 0 ? 0 : 2);
  });

program
  .command('serve', { isDefault: true })
  .description('serve the MCP tools (the default command)')
  .option('--config <file>', 'JSON config file; without it the embedded default is served (host mode, instance "main")')
  .addOption(new Option('--mode <mode>', 'tool mode').choices(['host', 'executor']))
  .addOption(new Option('--transport <transport>', 'transport').choices(['stdio', 'http']))
  .option('--host <host>', `HTTP listen address (default ${SERVER_DEFAULTS.host})`)
  .option('--port <port>', `HTTP port (default ${SERVER_DEFAULTS.port})`, integer(integerRange(httpField.port)))
  .option('--path <path>', `HTTP path of the MCP endpoint (default ${SERVER_DEFAULTS.path})`)
  .option(
    '--public-origin <url>',
    'public http(s) origin clients use; required when listening on every interface (0.0.0.0, :: or any spelling of them)',
  )
  .option(
    '--max-sessions <n>',
    `most concurrent HTTP sessions (default ${SERVER_DEFAULTS.maxSessions})`,
    integer(integerRange(httpField.maxSessions)),
  )
  .option(
    '--session-idle-ms <ms>',
    `close HTTP sessions idle this long (default ${SERVER_DEFAULTS.sessionIdleMs})`,
    integer(integerRange(httpField.sessionIdleMs)),
  )
  .option(
    '--session-init-idle-ms <ms>',
    `close HTTP sessions that made no request after initialize this long (default ${SERVER_DEFAULTS.sessionInitIdleMs})`,
    integer(integerRange(httpField.sessionInitIdleMs)),
  )
  .option(
    '--max-buffered-bytes <n>',
    `request body bytes buffered at once across HTTP connections, 503 beyond (default ${SERVER_DEFAULTS.maxBufferedBytes}, at least ${bufferedBytesRange.min})`,
    integer(bufferedBytesRange),
  )
  .option(
    '--headers-timeout-ms <ms>',
    `time an HTTP client has to send request headers (default ${SERVER_DEFAULTS.headersTimeoutMs})`,
    integer(integerRange(httpField.headersTimeoutMs)),
  )
  .option(
    '--body-timeout-ms <ms>',
    `time an HTTP client has to send a request body, 408 beyond (default ${SERVER_DEFAULTS.bodyTimeoutMs})`,
    integer(integerRange(httpField.bodyTimeoutMs)),
  )
  .option(
    '--route-upstreams <list>',
    'scale-out behind nginx "hash $http_mcp_session_id consistent": the upstream servers as nginx names them, comma-separated (with --route-self)',
  )
  .option('--route-self <server>', 'scale-out: which of --route-upstreams this process is')
  .option(
    '--timeout-ms <ms>',
    'recognition deadline for every instance, counted from prepare',
    integer(integerRange(IntentConfigBaseSchema.shape.timeoutMs)),
  )
  .addOption(new Option('--log-level <level>', 'stderr log level (debug = JSON lines)').choices([...LOG_LEVELS]))
  .action(
    exitOnIntentError(async (opts: ServeFlags) => {
      const resolved = resolveServe(opts);
      const logger = createLogger(resolved.logLevel);
      const running = await startServe(resolved, logger);
      let stopping = false;
      const stop = (signal: string): void => {
        if (stopping) return;
        stopping = true;
        logger.info('shutting down', { signal });
        setTimeout(() => process.exit(0), SHUTDOWN_GRACE_MS).unref();
        void running.close(SERVER_DEFAULTS.drainMs).finally(() => process.exit(0));
      };
      process.on('SIGINT', () => {
        stop('SIGINT');
      });
      process.on('SIGTERM', () => {
        stop('SIGTERM');
      });
    }),
  );

program
  .command('check-config')
  .description('validate a config file and print what would be served; exit 0, or 2 with the problem')
  .argument('<file>', 'JSON config file')
  .action(
    exitOnIntentError((file: string) => {
      const resolved = resolveServe({ config: file });
      const adapter = buildAdapter(resolved);
      const instances = Object.entries(servedInstances(resolved)).map(([name, instance]) => ({
        name,
        fields: Object.keys(instance.schema?.fields ?? {}),
        executor:
          instance.executor === undefined
            ? null
            : { kind: instance.executor.kind, baseUrl: instance.executor.baseUrl, model: instance.executor.model },
      }));
      process.stdout.write(
        JSON.stringify(
          {
            ok: true,
            mode: resolved.mode,
            tools: adapter.tools.map((tool) => tool.name),
            instances,
            http: { ...httpOptionsOf(resolved), publicOrigin: resolved.publicOrigin?.origin ?? null },
            stdio: { maxMessageBytes: resolved.stdioMaxMessageBytes },
          },
          null,
          2,
        ) + '\n',
      );
    }),
  );

program
  .command('diagram')
  .description('print the handoff machine, generated from its definition')
  .addOption(new Option('--format <format>', 'diagram format').choices(['mermaid', 'dot']).default('mermaid'))
  .addOption(new Option('--highlight <state>', 'highlight one state').choices([...HANDOFF_STATES]))
  .action((opts: { format: 'mermaid' | 'dot'; highlight?: string }) => {
    const render = opts.format === 'dot' ? toDot : toMermaid;
    process.stdout.write(render({ highlight: opts.highlight }));
  });

await program.parseAsync();
