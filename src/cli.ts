#!/usr/bin/env node
/**
 * The `intent-mcp` command (spec 05): `serve` (default), `check-config FILE`, `diagram`, `trace check|report`, `--help`,
 * `--version`.
 * Invalid flags or configuration: one line on stderr naming the problem, exit code 2. stdout carries only the protocol
 * (stdio) or the output a subcommand was asked for; logs go to stderr.
 */
import { once } from 'node:events';
import { open } from 'node:fs/promises';
import { Command, InvalidArgumentError, Option } from 'commander';
import { HANDOFF_STATES } from '../machines/handoff.js';
import { IntentError, quoteCaller } from './core/errors.js';
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
import { TRACE_MAX_BYTES_DEFAULT, TRACE_MAX_BYTES_MIN } from './trace/writer.js';
import { VERSION } from './version.js';

/** Shutdown must finish within this many ms (spec 05: exit 0 within 5 s); the drain takes at most `drainMs` of it. */
const SHUTDOWN_GRACE_MS = 4500;
/** `trace check` prints at most this many problems (then a count): a broken 1 GB trace must not flood a terminal. */
const MAX_PRINTED_PROBLEMS = 1000;
/** Requests `trace check` / `trace report` follow live at once by default, and the most `--max-live` allows. */
const TRACE_MAX_LIVE_DEFAULT = 100_000;
const TRACE_MAX_LIVE_MAX = 10_000_000;

/** Told on stderr when stdio is served to a terminal: a person, not an MCP client, is at the other end. */
const STDIO_TTY_HINT =
  'intent-mcp: serving MCP over stdio, waiting for an MCP client on stdin; configure your client to run this command (README "Connect a client"), use --transport http, or press Ctrl+C to stop.';

/**
 * Commander quotes what was typed (`unknown option '--x'`, `argument 'v' is invalid`): a long one is cut to a
 * 64-character prefix, like every caller text in an error, so a hostile argument cannot fill the terminal or a log.
 */
function shortenQuoted(text: string): string {
  return text.replace(/'([^'\n]{64})[^'\n]*'/g, "'$1…'");
}

function fail(message: string): never {
  process.stderr.write(`intent-mcp: ${message}\n`);
  process.exit(2);
}

/**
 * For the commands that print to stdout (not `serve`, whose stdio transport owns stdout): a reader that stops early
 * (`intent-mcp trace check FILE | head`) closes the pipe; the command then ends quietly with the exit code it has so
 * far, as Unix tools do, instead of an unhandled EPIPE and a stack trace.
 */
function endQuietlyWhenStdoutCloses(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    fail(`cannot write to stdout: ${error.code ?? 'error'}`);
  });
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
      // One line: commander puts its suggestion ("(Did you mean serve?)") on a line of its own.
      write(
        `intent-mcp: ${shortenQuoted(
          text
            .trim()
            .split('\n')
            .join(' ')
            .replace(/^error: /, ''),
        )}\n`,
      );
    },
  })
  .exitOverride((error) => {
    process.exit(error.exitCode === 0 ? 0 : 2);
  });

const serve = program
  .command('serve', { isDefault: true })
  .description('serve the MCP tools (the default command)')
  // `serve` is the default command, so a mistyped command name ("serv") arrives here as an argument: the action turns
  // it into commander's own "unknown command" error with its suggestion, instead of "too many arguments".
  .allowExcessArguments(true)
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
  .addOption(
    new Option(
      '--log-level <level>',
      'stderr log level (debug = JSON lines, one per tool call and per transition)',
    ).choices([...LOG_LEVELS]),
  )
  .option('--trace <file>', 'append every request transition to <file> as JSON lines (see `intent-mcp trace --help`)')
  .option(
    '--trace-max-bytes <n>',
    `rotate the trace file at this size, keeping one <file>.1 (default ${TRACE_MAX_BYTES_DEFAULT}, at least ${TRACE_MAX_BYTES_MIN})`,
    integer({ min: TRACE_MAX_BYTES_MIN, max: Number.MAX_SAFE_INTEGER }),
  )
  .option(
    '--inspect [port]',
    'serve the debug inspector page on loopback (default port: the HTTP port + 1, or 3002 over stdio; 0 = any free port)',
    integer({ min: 0, max: 65535 }),
  )
  .option('--inspect-host <host>', `the inspector's loopback address (default ${SERVER_DEFAULTS.host})`)
  .option(
    '--otel',
    'export OpenTelemetry spans over OTLP/HTTP, configured by the standard OTEL_EXPORTER_OTLP_* variables (needs the optional @opentelemetry packages)',
  )
  .action(
    exitOnIntentError(async (opts: ServeFlags, command: Command) => {
      if (command.args.length > 0) unknownCommand(command.args);
      const resolved = resolveServe(opts);
      const logger = createLogger(resolved.logLevel);
      const running = await startServe(resolved, logger);
      // Someone ran the command in a terminal (`npm start`): say what it waits for rather than sit there silently.
      if (resolved.transport === 'stdio' && process.stdin.isTTY) process.stderr.write(`${STDIO_TTY_HINT}\n`);
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
      // --otel: a process ending by itself (stdin closed) exports its last spans first; beforeExit comes again after.
      const closeTelemetry = running.closeTelemetry;
      if (closeTelemetry !== undefined) {
        process.once('beforeExit', () => {
          void closeTelemetry(SHUTDOWN_GRACE_MS);
        });
        // But an exporter retrying a collector that is down or slow keeps the loop busy, so beforeExit waited for its
        // timeouts (8-20 s). Once stdin ends, the stdio server answers what it read (within the drain), then the
        // last spans get what is left of the shutdown grace, and the process ends.
        if (resolved.transport === 'stdio')
          process.stdin.once('end', () => {
            setTimeout(() => {
              void closeTelemetry(SHUTDOWN_GRACE_MS - SERVER_DEFAULTS.drainMs).finally(() => process.exit(0));
            }, SERVER_DEFAULTS.drainMs).unref();
          });
      }
    }),
  );

// The top-level help shows the serve flags too: `intent-mcp --help` is what people type, and serve is the default.
program.addHelpText('after', () => `\n${serve.helpInformation().trimEnd()}\n`);

/** Commander's "unknown command" error, with its suggestion of the closest command name. */
function unknownCommand(args: readonly string[]): never {
  program.args = [...args];
  // `unknownCommand` is commander's own (used when a program has no default command); it reports and exits.
  (program as unknown as { unknownCommand(): void }).unknownCommand();
  return fail(`unknown command ${quoteCaller(args[0] ?? '')}`);
}

program
  .command('check-config')
  .description('validate a config file and print what would be served; exit 0, or 2 with the problem')
  .argument('<file>', 'JSON config file')
  .action(
    exitOnIntentError((file: string) => {
      endQuietlyWhenStdoutCloses();
      const resolved = resolveServe({ config: file });
      // Checking needs no secret: the executors are validated but not created, so CI can check a config without keys.
      const adapter = buildAdapter(resolved, process.env, { check: true });
      const instances = Object.entries(servedInstances(resolved)).map(([name, instance]) => ({
        name,
        fields: Object.keys(instance.schema?.fields ?? {}),
        executor:
          instance.executor === undefined
            ? null
            : {
                kind: instance.executor.kind,
                baseUrl: instance.executor.baseUrl,
                model: instance.executor.model,
                // Whether serving would find the key: its name and presence only, never its value.
                ...(instance.executor.apiKeyEnv === undefined
                  ? {}
                  : {
                      apiKeyEnv: instance.executor.apiKeyEnv,
                      apiKeySet: (process.env[instance.executor.apiKeyEnv]?.trim() ?? '') !== '',
                    }),
              },
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
    endQuietlyWhenStdoutCloses();
    const render = opts.format === 'dot' ? toDot : toMermaid;
    process.stdout.write(render({ highlight: opts.highlight }));
  });

const trace = program.command('trace').description('check or report a trace file written with serve --trace');

trace
  .command('check')
  .description(
    'replay every request of the trace through the machine; print each step it would not take, each answer that differs and each request left live; exit 1 when anything is printed, 0 when clean',
  )
  .argument('<files...>', 'trace files in order (a rotated pair: <file>.1 <file>)')
  .option(
    '--max-live <n>',
    'requests followed live at once; raise it for a server configured for more (~600 bytes each)',
    integer({ min: 1, max: TRACE_MAX_LIVE_MAX }),
    TRACE_MAX_LIVE_DEFAULT,
  )
  .action(async (files: string[], opts: { maxLive: number }) => {
    endQuietlyWhenStdoutCloses();
    // Loaded here: serving never needs the trace checker.
    const { checkTrace, formatProblem } = await import('./trace/check.js');
    let printed = 0;
    let summary;
    try {
      summary = await checkTrace(files, {
        maxLive: opts.maxLive,
        onProblem: (problem) => {
          // Known now: a reader that closes the pipe early (| head) still sees exit 1.
          process.exitCode = 1;
          if (printed++ < MAX_PRINTED_PROBLEMS) process.stdout.write(formatProblem(problem) + '\n');
        },
      });
    } catch (error) {
      fail(`cannot read the trace: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message.slice(0, 120)}`);
    }
    if (printed > MAX_PRINTED_PROBLEMS)
      process.stdout.write(`... and ${printed - MAX_PRINTED_PROBLEMS} more problems not printed\n`);
    process.stdout.write(
      `${summary.problems === 0 ? 'clean' : 'problems found'}: ${summary.requests} requests, ${summary.records} records, ${summary.lines} lines; ${summary.errors} errors, ${summary.warnings} warnings\n`,
    );
    process.exitCode = summary.problems === 0 ? 0 : 1;
  });

trace
  .command('report')
  .description(
    'write one self-contained HTML report of the trace: the machine diagram with its counts, how requests ended, time per state, a table of requests and their timelines',
  )
  .argument('<files...>', 'trace files in order (a rotated pair: <file>.1 <file>)')
  .option('-o, --output <file>', 'write the HTML here (default: stdout)')
  .option(
    '--detail <n>',
    'requests shown in full at each end of the trace (first n and last n finished); all are counted',
    // 2 × 2,000 timelines of up to 64 steps make ~31 MB of HTML, written chunk by chunk; what is held is the timelines.
    integer({ min: 0, max: 2_000 }),
    200,
  )
  .option(
    '--max-live <n>',
    'requests followed live at once; raise it for a server configured for more',
    integer({ min: 1, max: TRACE_MAX_LIVE_MAX }),
    TRACE_MAX_LIVE_DEFAULT,
  )
  .action(async (files: string[], opts: { output?: string; detail: number; maxLive: number }) => {
    endQuietlyWhenStdoutCloses();
    const { collectReport, reportChunks } = await import('./trace/report.js');
    let data;
    try {
      data = await collectReport(files, { detail: opts.detail, maxLive: opts.maxLive });
    } catch (error) {
      fail(`cannot read the trace: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message.slice(0, 120)}`);
    }
    const output = opts.output;
    if (output === undefined) {
      // Chunk by chunk, waiting for a full pipe to drain: the report is never one string in memory.
      for await (const chunk of reportChunks(data))
        if (!process.stdout.write(chunk)) await once(process.stdout, 'drain');
      return;
    }
    const refused = (error: unknown): never =>
      fail(`cannot write the report to ${quoteCaller(output)}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    const file = await open(output, 'w').catch(refused);
    try {
      for await (const chunk of reportChunks(data)) await file.write(chunk).catch(refused);
    } finally {
      await file.close().catch(refused);
    }
  });

await program.parseAsync();
