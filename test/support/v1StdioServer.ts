/**
 * A v1-SDK application on stdio with the intent-mcp host tools mounted (test/support/v1App.ts). The kind comes from
 * argv: `node --import tsx test/support/v1StdioServer.ts McpServer|Server`.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter } from '../../src/mcp/adapter.js';
import { v1App, type V1Kind } from './v1App.js';

const kind = process.argv[2] === 'Server' ? 'Server' : ('McpServer' satisfies V1Kind);
const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) } });
const app = await v1App(kind, adapter, 'v1-stdio');
await app.server.connect(new StdioServerTransport());
