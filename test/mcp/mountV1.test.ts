/**
 * Mounting on an application built on the v1 SDK (`@modelcontextprotocol/sdk` 1.x, issue 13 item 12): the same
 * scenarios as on v2 — fall-through to the application's own tools, a clash refused at mount and after it, one adapter
 * session per connection, a full handoff with the official client — for a v1 `McpServer` and a v1 low-level `Server`,
 * over stdio (a child process) and stateful Streamable HTTP (in process, loopback), at the revisions v1 negotiates.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter, type IntentMcpAdapter } from '../../src/mcp/adapter.js';
import { mountIntentMcpTools } from '../../src/mcp/mount.js';
import { HTTP_REVISIONS, connectClient, type HttpRevision } from '../support/httpHelpers.js';
import { rejectionOf } from '../support/intentErrors.js';
import { INVALID_CANDIDATE, SEED_ARGS, SEED_CANDIDATE, SEED_RESULT_TEXT, textOf } from '../support/mcpFixtures.js';
import { V1_KINDS, v1App, type V1Kind } from '../support/v1App.js';

const HOST_TOOLS = ['intent_prepare', 'intent_accept', 'intent_cancel'];
const SPAWN_TIMEOUT = 30_000;

type CallTool = (name: string, args: Record<string, unknown>) => Promise<{ content?: unknown; isError?: unknown }>;

interface Connected {
  listNames(): Promise<string[]>;
  callTool: CallTool;
  end(): Promise<void>;
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function hostAdapter(): IntentMcpAdapter {
  const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) } });
  closers.push(() => adapter.close());
  return adapter;
}

/** The official v2 client on stdio against test/support/v1StdioServer.ts, pinned to one 2025 revision. */
async function overStdio(kind: V1Kind, revision: HttpRevision): Promise<Connected> {
  const client = new Client({ name: 'v1-mount-test', version: '1.0.0' }, { supportedProtocolVersions: [revision] });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', 'test/support/v1StdioServer.ts', kind],
    stderr: 'pipe',
  });
  await client.connect(transport);
  return {
    listNames: async () => (await client.listTools()).tools.map((t) => t.name),
    callTool: (name, args) => client.callTool({ name, arguments: args }),
    end: () => client.close(),
  };
}

/** A stateful Streamable HTTP endpoint of v1 transports: one v1 app (and mount) per MCP session, one shared adapter. */
async function v1HttpEndpoint(kind: V1Kind, adapter: IntentMcpAdapter) {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const http: HttpServer = createServer((req, res) => {
    const id = req.headers['mcp-session-id'];
    const existing = typeof id === 'string' ? transports.get(id) : undefined;
    if (existing !== undefined) return void existing.handleRequest(req, res);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => void transports.set(sessionId, transport),
      onsessionclosed: (sessionId) => void transports.delete(sessionId),
    });
    void v1App(kind, adapter, `http-${transports.size}`).then(async (app) => {
      await app.server.connect(transport);
      await transport.handleRequest(req, res);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  const close = async () => {
    for (const transport of transports.values()) await transport.close();
    await new Promise<void>((resolve) =>
      http.close(() => {
        resolve();
      }),
    );
  };
  return { url, close };
}

async function overHttp(url: string, revision: HttpRevision): Promise<Connected> {
  const connected = await connectClient(url, revision);
  return {
    listNames: async () => (await connected.client.listTools()).tools.map((t) => t.name),
    callTool: connected.callTool,
    end: connected.end,
  };
}

interface HostTaskShape {
  requestId: string;
  submissionToken: string;
}

async function prepare(call: CallTool): Promise<HostTaskShape> {
  const prepared = await call('intent_prepare', SEED_ARGS);
  expect(prepared.isError, textOf(prepared)).toBe(false);
  return JSON.parse(textOf(prepared)) as HostTaskShape;
}

/** The mount scenarios on one connection: fall-through, listing once, a full handoff with a correction in between. */
async function mountScenarios(connection: Connected): Promise<void> {
  const names = await connection.listNames();
  expect(names).toEqual(['echo', 'adapter_sessions', ...HOST_TOOLS]);
  expect(new Set(names).size).toBe(names.length);
  expect(await connection.callTool('echo', { x: 'hi' })).toMatchObject({
    content: [{ type: 'text', text: 'echo:hi' }],
  });

  // prepare, a wrong candidate and the corrected one arrive as separate calls and meet: one adapter session.
  const task = await prepare(connection.callTool);
  const args = { requestId: task.requestId, submissionToken: task.submissionToken };
  const invalid = await connection.callTool('intent_accept', { ...args, candidateText: INVALID_CANDIDATE });
  expect(textOf(invalid)).toContain('CANDIDATE_INVALID');
  const accepted = await connection.callTool('intent_accept', { ...args, candidateText: SEED_CANDIDATE });
  expect(accepted.isError).toBe(false);
  expect(textOf(accepted)).toBe(SEED_RESULT_TEXT);
  const cancelled = await connection.callTool('intent_cancel', {
    requestId: (await prepare(connection.callTool)).requestId,
  });
  expect(cancelled.isError).toBe(false);
}

function sessionsOf(reply: { content?: unknown }): { open: number; all: number } {
  return JSON.parse(textOf(reply)) as { open: number; all: number };
}

describe.each(V1_KINDS)('on a v1 %s [I13-MOUNT-V1]', (kind) => {
  describe.each(HTTP_REVISIONS)('revision %s', (revision) => {
    it(
      `[I13-MOUNT-V1] over stdio: fall-through, one session per connection, a full handoff with the official client`,
      async () => {
        const connection = await overStdio(kind, revision);
        closers.push(() => connection.end());
        await mountScenarios(connection);
        // The child's adapter saw exactly one session for this connection, however many calls it made.
        expect(sessionsOf(await connection.callTool('adapter_sessions', {}))).toEqual({ open: 1, all: 1 });
      },
      SPAWN_TIMEOUT,
    );

    it(
      `[I13-MOUNT-V1] over Streamable HTTP: fall-through, one session per connection, a full handoff; DELETE closes it`,
      async () => {
        const adapter = hostAdapter();
        const endpoint = await v1HttpEndpoint(kind, adapter);
        closers.push(() => endpoint.close());
        const a = await overHttp(endpoint.url, revision);
        const b = await overHttp(endpoint.url, revision);
        await mountScenarios(a);
        await mountScenarios(b);
        // a's request is not b's: another connection, another session.
        const fromA = await prepare(a.callTool);
        const crossed = await b.callTool('intent_accept', {
          requestId: fromA.requestId,
          submissionToken: fromA.submissionToken,
          candidateText: SEED_CANDIDATE,
        });
        expect(textOf(crossed)).toContain('HANDOFF_NOT_FOUND');
        expect(sessionsOf(await a.callTool('adapter_sessions', {}))).toEqual({ open: 2, all: 2 });
        expect(adapter.snapshot().sessions.map((s) => s.closed)).toEqual([false, false]);

        await a.end();
        const after = adapter.snapshot().sessions;
        expect(after.filter((s) => !s.closed)).toHaveLength(1);
        expect(after.flatMap((s) => s.live)).toEqual([]);
        await b.end();
      },
      SPAWN_TIMEOUT,
    );
  });

  it('[I13-MOUNT-V1] [S04-MOUNT-CLASH] a clash at mount is refused with CONFIG_INVALID; nothing is registered', async () => {
    const adapter = hostAdapter();
    const app = await v1App(kind, hostAdapter());
    const error = await rejectionOf(mountIntentMcpTools(adapter, app.server));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('intent_prepare');
    expect(adapter.snapshot().sessions).toEqual([]);
  });
});

describe('a tool registered after the mount on a v1 McpServer [I13-MOUNT-V1] [I13-MOUNT-LATE]', () => {
  it('[I13-MOUNT-LATE] [I13-MOUNT-V1] a clashing name is refused at registration; a new name joins; lists and calls keep working', async () => {
    const adapter = hostAdapter();
    const server = new McpServer({ name: 'v1-late', version: '1.0.0' });
    await mountIntentMcpTools(adapter, server);
    expect(() =>
      server.registerTool('intent_accept', { description: 'Theirs.' }, () => ({
        content: [{ type: 'text', text: 'x' }],
      })),
    ).toThrow(/intent_accept.*already registered/);
    server.registerTool(
      'later',
      { description: 'Registered after the mount.', inputSchema: { n: z.number() } },
      ({ n }) => ({
        content: [{ type: 'text', text: `later:${n}` }],
      }),
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'late', version: '1.0.0' }, { supportedProtocolVersions: ['2025-11-25'] });
    await client.connect(clientSide);
    closers.push(() => client.close());
    closers.push(() => server.close());
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect([...names].sort()).toEqual(['later', ...HOST_TOOLS].sort());
    expect(await client.callTool({ name: 'later', arguments: { n: 2 } })).toMatchObject({
      content: [{ type: 'text', text: 'later:2' }],
    });
    const task = await prepare((name, args) => client.callTool({ name, arguments: args }));
    const accepted = await client.callTool({
      name: 'intent_accept',
      arguments: { requestId: task.requestId, submissionToken: task.submissionToken, candidateText: SEED_CANDIDATE },
    });
    expect(textOf(accepted)).toBe(SEED_RESULT_TEXT);
  });
});

afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
