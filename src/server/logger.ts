/**
 * The command's logger. stdout belongs to the protocol in stdio mode, so every line goes to stderr: plain text at
 * `info`/`warn`/`error`, JSON lines when the level is `debug` (spec 05).
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Longest string field a log line carries: anything a caller sent is quoted as a short prefix at most. */
export const LOG_FIELD_CHARS = 120;

function shortField(value: unknown): unknown {
  if (typeof value === 'string')
    return value.length > LOG_FIELD_CHARS ? `${value.slice(0, LOG_FIELD_CHARS)}…(${value.length} chars)` : value;
  return value;
}

/**
 * A logger writing one line per call to stderr (or `write`). Every string field is cut to {@link LOG_FIELD_CHARS}
 * characters, so a header or message a caller controls never makes a long line.
 */
export function createLogger(
  level: LogLevel,
  write: (line: string) => void = (line) => process.stderr.write(line),
): Logger {
  const threshold = LOG_LEVELS.indexOf(level);
  const json = level === 'debug';
  const emit = (at: LogLevel, message: string, rawFields?: Record<string, unknown>): void => {
    if (LOG_LEVELS.indexOf(at) < threshold) return;
    const fields =
      rawFields === undefined
        ? undefined
        : Object.fromEntries(Object.entries(rawFields).map(([name, value]) => [name, shortField(value)]));
    if (json) write(JSON.stringify({ time: new Date().toISOString(), level: at, message, ...fields }) + '\n');
    else {
      const extra =
        fields === undefined
          ? ''
          : ' ' +
            Object.entries(fields)
              .map(([name, value]) => `${name}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
              .join(' ');
      write(`intent-mcp ${at}: ${message}${extra}\n`);
    }
  };
  return {
    debug: (message, fields) => {
      emit('debug', message, fields);
    },
    info: (message, fields) => {
      emit('info', message, fields);
    },
    warn: (message, fields) => {
      emit('warn', message, fields);
    },
    error: (message, fields) => {
      emit('error', message, fields);
    },
  };
}

/** The interval a rate-limited log's budget refills over, unless told otherwise. */
export const RATE_LIMIT_INTERVAL_MS = 60_000;

export interface RateLimitedLog {
  /** Logs at its level when the budget allows, else counts the line as suppressed. */
  (message: string, fields?: Record<string, unknown>): void;
  /** Writes the pending "suppressed K" summary now, if any (on shutdown and once per interval). */
  flush(): void;
}

/**
 * A token bucket over one level of `logger` (default `warn`) for lines a caller can trigger at will (refused requests,
 * sessions opened and closed): at most `perInterval` lines per `intervalMs`, refilled continuously; the lines over
 * budget are counted and reported as one summary line ("suppressed K") when the budget allows again or on
 * {@link RateLimitedLog.flush}.
 */
export function rateLimitedLog(
  logger: Logger,
  perInterval: number,
  intervalMs = RATE_LIMIT_INTERVAL_MS,
  now: () => number = Date.now,
  level: 'info' | 'warn' = 'warn',
): RateLimitedLog {
  let tokens = perInterval;
  let last = now();
  let suppressed = 0;
  const refill = (): void => {
    const at = now();
    tokens = Math.min(perInterval, tokens + ((at - last) * perInterval) / intervalMs);
    last = at;
  };
  const summary = (): void => {
    if (suppressed === 0) return;
    logger[level]('log lines suppressed', { suppressed, perMinute: Math.round((perInterval * 60_000) / intervalMs) });
    suppressed = 0;
  };
  const log = ((message: string, fields?: Record<string, unknown>) => {
    refill();
    if (tokens < 1) {
      suppressed++;
      return;
    }
    tokens -= 1;
    summary();
    logger[level](message, fields);
  }) as RateLimitedLog;
  log.flush = summary;
  return log;
}
