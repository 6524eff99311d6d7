/**
 * An application built on the v1 SDK (`@modelcontextprotocol/sdk` 1.x) with the intent-mcp host tools mounted next to
 * its own tools, as an `McpServer` or a low-level `Server`. Its own tools: `echo` (answers `echo:<x>`) and
 * `adapter_sessions` (the adapter's session count, open ones and all, so a test across a process boundary can see
 * that each connection has exactly one). Used in process (HTTP) and by test/support/v1StdioServer.ts (stdio).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { IntentMcpAdapter } from '../../src/mcp/adapter.js';
import { mountIntentMcpTools } from '../../src/mcp/mount.js';

export type V1Kind = 'McpServer' | 'Server';
export const V1_KINDS: readonly V1Kind[] = ['McpServer', 'Server'];

function sessionCounts(adapter: IntentMcpAdapter): string {
  const sessions = adapter.snapshot().sessions;
  return JSON.stringify({ open: sessions.filter((s) => !s.closed).length, all: sessions.length });
}

/** A v1 server of the given kind with `echo` and `adapter_sessions`, and the adapter's tools mounted. */
export async function v1App(kind: V1Kind, adapter: IntentMcpAdapter, label?: string) {
  const info = { name: `v1-${kind}`, version: '1.0.0' };
  const options = label === undefined ? {} : { label };
  if (kind === 'McpServer') {
    const server = new McpServer(info);
    server.registerTool('echo', { description: 'Echo x back.', inputSchema: { x: z.string() } }, ({ x }) => ({
      content: [{ type: 'text', text: `echo:${x}` }],
    }));
    server.registerTool('adapter_sessions', { description: 'Adapter session counts.' }, () => ({
      content: [{ type: 'text', text: sessionCounts(adapter) }],
    }));
    const mount = await mountIntentMcpTools(adapter, server, options);
    return { server, mount, close: () => server.close() };
  }
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- the v1 low-level Server is what many v1 apps use.
  const server = new Server(info, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      { name: 'echo', inputSchema: { type: 'object', properties: { x: { type: 'string' } }, required: ['x'] } },
      { name: 'adapter_sessions', inputSchema: { type: 'object' } },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    const { name, arguments: args } = request.params;
    if (name === 'echo') return { content: [{ type: 'text', text: `echo:${String(args?.['x'])}` }] };
    if (name === 'adapter_sessions') return { content: [{ type: 'text', text: sessionCounts(adapter) }] };
    return { content: [{ type: 'text', text: `own:${name}` }], isError: true };
  });
  const mount = await mountIntentMcpTools(adapter, server, options);
  return { server, mount, close: () => server.close() };
}
