/**
 * stdio for 2025-06-18, 2025-11-25 and 2026-07-28 (spec 05, "stdio"): the SDK's `serveStdio` owns the era decision and
 * calls the factory once per connection (and once more for a probe instance that a client in `auto` mode discards).
 * Each instance gets the tools mounted; its adapter session opens lazily on the first call, so probes leak nothing.
 * The wire is our {@link StdioLineTransport}: a read limit derived from the configuration, oversized lines answered with
 * an error, and a count of unanswered requests for the graceful drain.
 */
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { IntentMcpAdapter } from '../mcp/adapter.js';
import { SERVER_DEFAULTS } from './config.js';
import { serverErrors } from './errors.js';
import { rateLimitedLog, type Logger } from './logger.js';
import { createMountedServer, type MountedServer } from './mcpServer.js';
import { StdioLineTransport } from './stdioTransport.js';

/** How long stdin must stay silent before a drain stops waiting for lines already written by the client. */
const INPUT_QUIET_MS = 150;

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

export interface StdioServeOptions {
  /** Largest JSON-RPC line accepted on stdin, in bytes (see `stdioMessageLimit`). */
  maxMessageBytes: number;
}

export interface RunningStdioServer {
  /**
   * Graceful drain (spec 04/05): closes every connection's adapter session so each waiter is answered
   * `SESSION_CLOSED`, answers calls that arrive meanwhile the same way, and resolves once every request read from
   * stdin has its reply written to stdout, or after `timeoutMs`.
   */
  drain(timeoutMs: number): Promise<void>;
  /** Closes the SDK instances and the transport. */
  close(): Promise<void>;
}

export function serveOverStdio(
  adapter: IntentMcpAdapter,
  logger: Logger,
  options: StdioServeOptions,
): RunningStdioServer {
  if (!Number.isSafeInteger(options.maxMessageBytes) || options.maxMessageBytes < 1)
    throw serverErrors.optionNotInteger('serveOverStdio', 'maxMessageBytes', 1, options.maxMessageBytes);
  // The stdio client is the only caller; its refused lines are still logged at a bounded rate.
  const refusalLog = rateLimitedLog(logger, SERVER_DEFAULTS.refusalLogsPerMinute);
  const transport = new StdioLineTransport({
    maxMessageBytes: options.maxMessageBytes,
    onRefused: (reason, bytes) => {
      refusalLog('stdio message refused', { reason, bytes });
    },
    // The count of refusals over the per-minute budget is written when stdin ends too, not only on a signal.
    onInputEnded: () => {
      refusalLog.flush();
    },
  });
  // One per connection plus a discarded probe at most: a short list for the life of the process.
  const mounted: MountedServer[] = [];
  let draining = false;
  const handle = serveStdio(
    async (ctx) => {
      logger.debug('stdio connection', { era: ctx.era });
      const connection = await createMountedServer(adapter, ctx.era === 'modern' ? 'modern' : 'legacy', 'stdio');
      mounted.push(connection);
      if (draining) await connection.drain();
      return connection.server;
    },
    {
      transport,
      onerror: (error) => {
        logger.debug('stdio error', { error: error.message.slice(0, 200) });
      },
    },
  );
  return {
    drain: async (timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      draining = true;
      await Promise.all(mounted.map((connection) => connection.drain()));
      // Lines the client wrote before the signal may still be in the pipe: they are read and answered too, so the
      // drain ends once every request is answered and the input has been quiet for a moment (or at the deadline).
      for (;;) {
        const left = deadline - Date.now();
        if (left <= 0) break;
        await transport.whenAnswered(left);
        const quietFor = Date.now() - transport.lastInputAt;
        if (transport.unanswered === 0 && quietFor >= INPUT_QUIET_MS) break;
        await delay(Math.min(Math.max(10, INPUT_QUIET_MS - quietFor), Math.max(0, deadline - Date.now())));
      }
      if (transport.unanswered > 0)
        logger.warn('shutdown with requests unanswered', { unanswered: transport.unanswered });
      refusalLog.flush();
      await Promise.race([transport.flushed(), delay(Math.max(0, deadline - Date.now()))]);
    },
    close: () => handle.close(),
  };
}
