/**
 * stdio for 2025-06-18, 2025-11-25 and 2026-07-28 (spec 05, "stdio"): the SDK's `serveStdio` owns the era decision and
 * calls the factory once per connection (and once more for a probe instance that a client in `auto` mode discards).
 * Each instance gets the tools mounted; its adapter session opens lazily on the first call, so probes leak nothing.
 */
import { serveStdio, type StdioServerHandle } from '@modelcontextprotocol/server/stdio';
import type { IntentMcpAdapter } from '../mcp/adapter.js';
import type { Logger } from './logger.js';
import { createMountedServer } from './mcpServer.js';

export function serveOverStdio(adapter: IntentMcpAdapter, logger: Logger): StdioServerHandle {
  return serveStdio(async (ctx) => {
    logger.debug('stdio connection', { era: ctx.era });
    return createMountedServer(adapter, ctx.era === 'modern' ? 'modern' : 'legacy', 'stdio');
  });
}
