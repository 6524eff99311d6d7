/**
 * The baseline of the MCP-level benchmarks (issue 12): a bare SDK v2 `Server` that serves the very same tool
 * definitions as intent-mcp in host mode (taken from an adapter over the bench fixture, so the client validates the same
 * schemas on both sides) and answers every call with a canned reply of the same bytes as ours (the envelopes of one real
 * handoff, made at start-up). No engine, no actor, no validation: what remains is the SDK's own cost per call.
 *
 * `node dist/bench/bareServer.js stdio` serves on stdio through the SDK's `serveStdio` and its own stdio transport;
 * `node dist/bench/bareServer.js http` serves stateful Streamable HTTP (one SDK transport and server per session, kept by
 * `Mcp-Session-Id`) on 127.0.0.1 and port 0, and prints `serving over HTTP url=...` on stderr as the command does.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { Server } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { createIntentMcpAdapter } from '../src/mcp/adapter.js';
import type { IntentMcpToolResult } from '../src/mcp/envelopes.js';
import { CANDIDATE_TEXT, REQUEST, benchIntent } from './fixture.js';

const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: benchIntent() } });
const tools = adapter.tools;

/** The canned replies, per negotiated revision (2026-07-28 adds `resultType`), from one real in-process handoff. */
const canned = new Map<string, { prepare: IntentMcpToolResult; accept: IntentMcpToolResult }>();
async function cannedFor(version: string): Promise<{ prepare: IntentMcpToolResult; accept: IntentMcpToolResult }> {
  const known = canned.get(version);
  if (known !== undefined) return known;
  const session = adapter.connect({ protocolVersion: version as '2025-11-25' });
  const prepare = (await session.callTool('intent_prepare', { ...REQUEST }))!;
  const task = prepare.structuredContent as { requestId: string; submissionToken: string };
  const accept = (await session.callTool('intent_accept', {
    requestId: task.requestId,
    submissionToken: task.submissionToken,
    candidateText: CANDIDATE_TEXT,
  }))!;
  if (prepare.isError || accept.isError) throw new Error('the canned handoff failed');
  const made = { prepare, accept };
  canned.set(version, made);
  return made;
}

// The low-level Server is what a hand-written MCP server uses; deprecated for new code, not removed.
// eslint-disable-next-line @typescript-eslint/no-deprecated
function bareServer(): Server {
  // eslint-disable-next-line @typescript-eslint/no-deprecated
  const server = new Server({ name: 'bare', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler('tools/list', () => ({ tools: [...tools] }) as never);
  server.setRequestHandler('tools/call', async (request) => {
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    const replies = await cannedFor(server.getNegotiatedProtocolVersion() ?? '2025-11-25');
    return (request.params.name === 'intent_prepare' ? replies.prepare : replies.accept) as never;
  });
  return server;
}

const mode = process.argv[2] ?? 'stdio';
if (mode === 'stdio') {
  serveStdio(() => bareServer());
} else if (mode === 'http') {
  const sessions = new Map<string, NodeStreamableHTTPServerTransport>();
  const readBody = async (req: IncomingMessage): Promise<unknown> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return chunks.length === 0 ? undefined : (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
  };
  const http = createServer((req, res) => {
    void (async () => {
      const id = req.headers['mcp-session-id'];
      const body = req.method === 'POST' ? await readBody(req) : undefined;
      if (typeof id === 'string') {
        const transport = sessions.get(id);
        if (transport === undefined) {
          res.writeHead(404).end();
          return;
        }
        await transport.handleRequest(req, res, body);
        return;
      }
      const server = bareServer();
      const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => {
          sessions.set(sid, transport);
        },
        onsessionclosed: (sid) => {
          sessions.delete(sid);
        },
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    })().catch((error: unknown) => {
      process.stderr.write(`bare server: ${String(error)}\n`);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  http.listen(0, '127.0.0.1', () => {
    const { port } = http.address() as AddressInfo;
    process.stderr.write(`serving over HTTP url=http://127.0.0.1:${port}/mcp\n`);
  });
  process.on('SIGTERM', () => {
    http.close();
    process.exit(0);
  });
} else {
  process.stderr.write('usage: bareServer.js stdio|http\n');
  process.exit(2);
}
