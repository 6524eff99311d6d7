/**
 * The baseline of `bench/coldStart.ts`: a bare SDK v2 `serveStdio` server with one trivial tool, nothing of intent-mcp.
 * What any stdio MCP server built on the SDK pays to start.
 */
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

serveStdio((ctx) => {
  const server = new McpServer(
    { name: 'bare', version: '1.0.0' },
    ctx.era === 'legacy' ? { supportedProtocolVersions: ['2025-11-25', '2025-06-18'] } : {},
  );
  server.registerTool('echo', { description: 'Echo x back.', inputSchema: z.object({ x: z.string() }) }, ({ x }) => ({
    content: [{ type: 'text', text: x }],
  }));
  return server;
});
