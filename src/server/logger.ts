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

export function createLogger(level: LogLevel, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const threshold = LOG_LEVELS.indexOf(level);
  const json = level === 'debug';
  const emit = (at: LogLevel, message: string, fields?: Record<string, unknown>): void => {
    if (LOG_LEVELS.indexOf(at) < threshold) return;
    if (json) write(JSON.stringify({ time: new Date().toISOString(), level: at, message, ...fields }) + '\n');
    else {
      const extra =
        fields === undefined
          ? ''
          : ' ' +
            Object.entries(fields)
              .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
              .join(' ');
      write(`intent-mcp ${at}: ${message}${extra}\n`);
    }
  };
  return {
    debug: (m, f) => {
      emit('debug', m, f);
    },
    info: (m, f) => {
      emit('info', m, f);
    },
    warn: (m, f) => {
      emit('warn', m, f);
    },
    error: (m, f) => {
      emit('error', m, f);
    },
  };
}
