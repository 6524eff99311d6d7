/**
 * The tools through real MCP clients (spec 04, spec 01 "Protocol and remote use"): the official v2 client against the
 * mounted stdio server (test/support/mountedStdioServer.ts) for each revision, with `resultType` checked on the wire;
 * one interop run with the v1 `@modelcontextprotocol/sdk` Client; and in process over InMemoryTransport for 2025.
 */
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { InMemoryTransport, McpServer } from '@modelcontextprotocol/server';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter } from '../../src/mcp/adapter.js';
import { mountIntentMcpTools } from '../../src/mcp/mount.js';
import {
  INVALID_CANDIDATE,
  MOUNTED_STDIO_SERVER,
  PROTOCOL_REVISIONS,
  SEED_ARGS,
  SEED_CANDIDATE,
  SEED_REPLY,
  SEED_RESULT_TEXT,
  textOf,
  type Revision,
} from '../support/mcpFixtures.js';

const HOST_TOOLS = ['intent_prepare', 'intent_accept', 'intent_cancel'];
const SPAWN_TIMEOUT = 30_000;

/** A JSON-RPC message as it came off the transport, before the client touched it. */
interface WireMessage {
  id?: string | number;
  method?: string;
  result?: Record<string, unknown>;
}

/** Records every message the client transport receives from now on (the client may strip `resultType`). */
function tapIncoming(transport: { onmessage?: ((message: never, extra?: never) => void) | undefined }): WireMessage[] {
  const seen: WireMessage[] = [];
  const original = transport.onmessage;
  if (original === undefined) throw new Error('connect the client before tapping its transport');
  transport.onmessage = (message: never, extra?: never) => {
    seen.push(JSON.parse(JSON.stringify(message)) as WireMessage);
    original.call(transport, message, extra);
  };
  return seen;
}

/** Records the ids of outgoing tools/call requests, so replies can be matched on the wire. */
function tapOutgoing(transport: {
  send: (message: never, options?: never) => Promise<void>;
}): Map<string | number, string> {
  const calls = new Map<string | number, string>();
  const send = transport.send.bind(transport);
  transport.send = (message: never, options?: never) => {
    const m = message as { id?: string | number; method?: string; params?: { name?: string } };
    if (m.method === 'tools/call' && m.id !== undefined) calls.set(m.id, m.params?.name ?? '');
    return send(message, options);
  };
  return calls;
}

interface ToolReply {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
}
type CallTool = (name: string, args: Record<string, unknown>) => Promise<ToolReply>;

interface HostTaskShape {
  kind: string;
  requestId: string;
  submissionToken: string;
  instructions: string;
  outputSchema: object;
}

function errorIn(reply: ToolReply): { code: string; details?: Record<string, unknown> } {
  expect(reply.isError).toBe(true);
  expect(reply.structuredContent).toBeUndefined();
  const wire = JSON.parse(textOf(reply)) as { error: { code: string; details?: Record<string, unknown> } };
  expect(Object.keys(wire)).toEqual(['error']);
  return wire.error;
}

/**
 * The full host handoff of spec 03: prepare → invalid candidate → CANDIDATE_INVALID feedback → corrected candidate →
 * result → replay (same text) → cancel (already_completed). Returns the texts of the result and its replay.
 */
async function fullHandoff(call: CallTool): Promise<{ result: string; replay: string }> {
  const prepared = await call('intent_prepare', SEED_ARGS);
  expect(prepared.isError).toBe(false);
  const task = prepared.structuredContent as HostTaskShape;
  expect(JSON.parse(textOf(prepared))).toEqual(task);
  expect(task.kind).toBe('model_task');
  expect(task.instructions.length).toBeGreaterThan(0);
  expect(task.outputSchema).toBeTypeOf('object');
  const accept = (candidateText: string) =>
    call('intent_accept', { requestId: task.requestId, submissionToken: task.submissionToken, candidateText });

  const feedback = errorIn(await accept(INVALID_CANDIDATE));
  expect(feedback.code).toBe('CANDIDATE_INVALID');
  expect((feedback.details?.['issues'] as unknown[]).length).toBeGreaterThan(0);
  expect(feedback.details?.['correction']).toEqual({ allowed: true, remaining: 1 });

  const result = await accept(SEED_CANDIDATE);
  expect(result.isError).toBe(false);
  expect(result.structuredContent).toEqual(SEED_REPLY.structuredContent);
  const replay = await accept(SEED_CANDIDATE);
  expect(replay.isError).toBe(false);

  const cancelled = await call('intent_cancel', { requestId: task.requestId });
  expect(cancelled.isError).toBe(false);
  expect(cancelled.structuredContent).toEqual({ requestId: task.requestId, status: 'already_completed' });
  return { result: textOf(result), replay: textOf(replay) };
}

function v2ClientFor(revision: Revision): Client {
  const info = { name: 'protocol-test', version: '1.0.0' };
  return revision === '2026-07-28'
    ? new Client(info, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
    : new Client(info, { supportedProtocolVersions: [revision] });
}

interface Connection {
  client: Client;
  incoming: WireMessage[];
  outgoing: Map<string | number, string>;
}

/** One stdio child per revision, spawned side by side (each costs a tsx start-up). */
const connections = new Map<Revision, Promise<Connection>>();

async function connectOverStdio(revision: Revision): Promise<Connection> {
  const client = v2ClientFor(revision);
  const transport = new StdioClientTransport(MOUNTED_STDIO_SERVER);
  await client.connect(transport);
  return { client, incoming: tapIncoming(transport), outgoing: tapOutgoing(transport) };
}

beforeAll(() => {
  for (const revision of PROTOCOL_REVISIONS) {
    const connecting = connectOverStdio(revision);
    // Reported by the tests that await it; never an unhandled rejection.
    connecting.catch(() => undefined);
    connections.set(revision, connecting);
  }
});

afterAll(async () => {
  const all = await Promise.allSettled(connections.values());
  for (const settled of all) if (settled.status === 'fulfilled') await settled.value.client.close();
});

describe.each(PROTOCOL_REVISIONS)('the v2 client over stdio, %s [SEED-REVISIONS]', (revision) => {
  let client: Client;
  let incoming: WireMessage[];
  let outgoing: Map<string | number, string>;

  beforeAll(async () => {
    const connection = await connections.get(revision);
    if (connection === undefined) throw new Error(`no connection for ${revision}`);
    ({ client, incoming, outgoing } = connection);
  }, SPAWN_TIMEOUT);

  it(`[SEED-REVISIONS] [SEED-PROTOCOL-FROM-SDK] negotiates ${revision}`, () => {
    expect(client.getNegotiatedProtocolVersion()).toBe(revision);
  });

  it('[SEED-MOUNT] lists the service tool and the host tools', async () => {
    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => t.name)).toEqual(['echo', ...HOST_TOOLS]);
    for (const tool of tools.slice(1)) {
      expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
      expect(tool.outputSchema).toMatchObject({ type: 'object' });
    }
  });

  it('[SEED-REVISIONS] [SEED-HOST-TOOLS] [SEED-ENVELOPES] runs a full host handoff; resultType is on the wire only under 2026-07-28', async () => {
    // listTools first: the client then checks every structuredContent against the tool's outputSchema.
    await client.listTools();
    const { result, replay } = await fullHandoff((name, args) => client.callTool({ name, arguments: args }));
    expect(result).toBe(SEED_RESULT_TEXT);
    expect(replay).toBe(result);
    const echo = await client.callTool({ name: 'echo', arguments: { x: 'hi' } });
    expect(textOf(echo)).toBe('hi');

    const replies = incoming.filter((m) => m.id !== undefined && outgoing.has(m.id));
    const ours = replies.filter((m) => HOST_TOOLS.includes(outgoing.get(m.id ?? '') ?? ''));
    expect(ours).toHaveLength(5);
    for (const reply of replies) {
      if (revision === '2026-07-28') expect(reply.result?.['resultType']).toBe('complete');
      else expect(reply.result).not.toHaveProperty('resultType');
    }
    // The wire text of the result and of its replay are byte-identical.
    const texts = ours.map((m) => textOf(m.result));
    expect(texts[2]).toBe(SEED_RESULT_TEXT);
    expect(texts[3]).toBe(texts[2]);
    // A technical failure carries no structuredContent on the wire either.
    expect(ours[1]?.result).not.toHaveProperty('structuredContent');
    expect(ours[1]?.result?.['isError']).toBe(true);
  });
});

describe('the v1 @modelcontextprotocol/sdk Client over stdio [SEED-REVISIONS]', () => {
  const open: V1Client[] = [];
  afterEach(async () => {
    for (const c of open.splice(0)) await c.close();
  });

  it(
    '[SEED-REVISIONS] [SEED-MOUNT] negotiates 2025-11-25, lists the tools and completes a handoff',
    async () => {
      const client = new V1Client({ name: 'v1-interop', version: '1.0.0' });
      open.push(client);
      const transport = new V1StdioClientTransport(MOUNTED_STDIO_SERVER);
      const handshake: WireMessage[] = [];
      const start = transport.start.bind(transport);
      // The v1 client sets onmessage before start(); tap it there to see the initialize reply.
      transport.start = () => {
        const original = transport.onmessage;
        transport.onmessage = (message) => {
          handshake.push(JSON.parse(JSON.stringify(message)) as WireMessage);
          original?.(message);
        };
        return start();
      };
      await client.connect(transport);
      expect(handshake[0]?.result?.['protocolVersion']).toBe('2025-11-25');

      const tools = (await client.listTools()).tools;
      expect(tools.map((t) => t.name)).toEqual(['echo', ...HOST_TOOLS]);
      const { result, replay } = await fullHandoff(
        async (name, args) => (await client.callTool({ name, arguments: args })) as ToolReply,
      );
      expect(result).toBe(SEED_RESULT_TEXT);
      expect(replay).toBe(result);
      for (const message of handshake.slice(1)) expect(message.result).not.toHaveProperty('resultType');
    },
    SPAWN_TIMEOUT,
  );
});

describe('in process over InMemoryTransport, on an McpServer [SEED-REVISIONS]', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it.each(['2025-06-18', '2025-11-25'] as const)(
    '[SEED-REVISIONS] [SEED-MOUNT] %s: negotiated, full handoff, no resultType',
    async (revision) => {
      const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) } });
      closers.push(() => adapter.close());
      const server = new McpServer({ name: 'in-process', version: '1.0.0' });
      server.registerTool('echo', { inputSchema: z.object({ x: z.string() }) }, ({ x }) => ({
        content: [{ type: 'text', text: x }],
      }));
      await mountIntentMcpTools(adapter, server);
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.connect(serverSide);
      const client = v2ClientFor(revision);
      await client.connect(clientSide);
      closers.push(() => server.close());
      closers.push(() => client.close());
      expect(client.getNegotiatedProtocolVersion()).toBe(revision);
      const incoming = tapIncoming(clientSide);

      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['echo', ...HOST_TOOLS]);
      const { result, replay } = await fullHandoff((name, args) => client.callTool({ name, arguments: args }));
      expect(result).toBe(SEED_RESULT_TEXT);
      expect(replay).toBe(result);
      expect(incoming.length).toBeGreaterThanOrEqual(6);
      for (const message of incoming) expect(message.result).not.toHaveProperty('resultType');
      expect(adapter.snapshot().sessions).toHaveLength(1);
    },
  );
});
