/**
 * A stdio MCP server for tests: an SDK server with one tool of its own (`echo`) and the intent-mcp host tools mounted
 * next to it, served by `serveStdio` (all three revisions). Run with `node --import tsx test/support/mountedStdioServer.ts`.
 */
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter } from '../../src/mcp/adapter.js';
import { mountIntentMcpTools } from '../../src/mcp/mount.js';

const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) } });

serveStdio(async (ctx) => {
  const server = new McpServer(
    { name: 'mounted-test-server', version: '1.0.0' },
    ctx.era === 'legacy' ? { supportedProtocolVersions: ['2025-11-25', '2025-06-18'] } : {},
  );
  server.registerTool('echo', { description: 'Echo x back.', inputSchema: z.object({ x: z.string() }) }, ({ x }) => ({
    content: [{ type: 'text', text: x }],
  }));
  await mountIntentMcpTools(adapter, server);
  return server;
});
