/**
 * Mounting the adapter's tools on an existing SDK server (spec 04, "Mounting on an existing SDK server"), in process
 * over the SDK's InMemoryTransport: McpServer and the low-level Server, exact fall-through to the server's own tools,
 * name clashes refused before registration, per-request cancellation, one adapter session per connection.
 */
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport, McpServer, Server } from '@modelcontextprotocol/server';
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { HandoffTransition } from '../../src/engine/engine.js';
import { Intent } from '../../src/intent.js';
import {
  createIntentMcpAdapter,
  type IntentMcpAdapter,
  type IntentMcpAdapterConfig,
  type IntentMcpSession,
} from '../../src/mcp/adapter.js';
import type { IntentMcpToolResult } from '../../src/mcp/envelopes.js';
import { MAX_PROGRESS_TOKEN_CHARS, mountIntentMcpTools } from '../../src/mcp/mount.js';
import {
  INVALID_CANDIDATE,
  SEED_ARGS,
  SEED_CANDIDATE,
  SEED_RESULT_TEXT,
  deferred,
  hangingExecutor,
  textOf,
} from '../support/mcpFixtures.js';
import { rejectionOf } from '../support/intentErrors.js';

const HOST_TOOLS = ['intent_prepare', 'intent_accept', 'intent_cancel'];

// eslint-disable-next-line @typescript-eslint/no-deprecated -- spec 04 supports mounting on the low-level Server.
type LowLevelServer = Server;

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function hostAdapter(config: Partial<IntentMcpAdapterConfig> = {}): IntentMcpAdapter {
  const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) }, ...config });
  closers.push(() => adapter.close());
  return adapter;
}

/** An McpServer with one tool of its own, `echo`. */
function echoServer(): McpServer {
  const server = new McpServer({ name: 'service', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echo x back.', inputSchema: z.object({ x: z.string() }) }, ({ x }) => ({
    content: [{ type: 'text', text: `echo:${x}` }],
  }));
  return server;
}

const WEATHER_TOOL = {
  name: 'weather',
  description: 'Weather for a city.',
  inputSchema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

/** A low-level Server with its own tools/list and tools/call handlers; `calls` records what reached its handler. */
function lowLevelServer(tools: object[] = [WEATHER_TOOL]) {
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- see LowLevelServer
  const server: LowLevelServer = new Server({ name: 'service', version: '1.0.0' }, { capabilities: { tools: {} } });
  const calls: { name: string; arguments: unknown }[] = [];
  server.setRequestHandler('tools/list', () => Promise.resolve({ tools } as never));
  server.setRequestHandler('tools/call', (request) => {
    calls.push({ name: request.params.name, arguments: request.params.arguments });
    return Promise.resolve(ownReply(request.params.name, request.params.arguments));
  });
  return { server, calls };
}

/** What the low-level server's own handler answers: deliberately shaped with `_meta` and a non-default isError. */
function ownReply(name: string, args: unknown) {
  return {
    _meta: { 'example.com/trace': `trace-${name}` },
    content: [{ type: 'text' as const, text: `own:${name}:${JSON.stringify(args ?? null)}` }],
    isError: name === 'nope',
  };
}

async function connect(server: McpServer | LowLevelServer, name = 'client'): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(clientSide);
  closers.push(() => server.close());
  closers.push(() => client.close());
  return client;
}

/** A call's outcome, resolved or rejected, in a comparable form. */
async function outcome(call: Promise<unknown>): Promise<{ ok: unknown } | { rejected: string }> {
  try {
    return { ok: await call };
  } catch (error) {
    return { rejected: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
  }
}

interface HostTaskShape {
  requestId: string;
  submissionToken: string;
}

async function handoff(client: Client, prefix = ''): Promise<string> {
  const prepared = await client.callTool({ name: `${prefix}intent_prepare`, arguments: SEED_ARGS });
  expect(prepared.isError).toBe(false);
  const task = prepared.structuredContent as HostTaskShape;
  const accepted = await client.callTool({
    name: `${prefix}intent_accept`,
    arguments: { requestId: task.requestId, submissionToken: task.submissionToken, candidateText: SEED_CANDIDATE },
  });
  expect(accepted.isError).toBe(false);
  return textOf(accepted);
}

describe('mounted next to existing tools [SEED-MOUNT]', () => {
  it('[S04-MOUNT-ROUTING] [SEED-MOUNT] on McpServer: both tools listed, both callable, the other tool answers exactly as without the mount', async () => {
    const adapter = hostAdapter();
    const server = echoServer();
    const mount = await mountIntentMcpTools(adapter, server);
    expect(mount.toolNames).toEqual(HOST_TOOLS);
    const client = await connect(server);
    const reference = await connect(echoServer(), 'reference');

    const listed = (await client.listTools()).tools;
    expect(listed.map((t) => t.name)).toEqual(['echo', ...HOST_TOOLS]);
    const referenceListed = (await reference.listTools()).tools;
    expect(listed[0]).toEqual(referenceListed[0]);
    for (const tool of adapter.tools)
      expect(listed.find((t) => t.name === tool.name)).toMatchObject({
        name: tool.name,
        title: tool.title,
        description: tool.description,
        inputSchema: tool.inputSchema,
        outputSchema: tool.outputSchema,
        annotations: tool.annotations,
      });

    for (const call of [
      { name: 'echo', arguments: { x: 'hi' } },
      { name: 'echo', arguments: { x: 5 } },
      { name: 'nope', arguments: {} },
      { name: 'intent_parse', arguments: SEED_ARGS },
    ])
      expect(await outcome(client.callTool(call))).toEqual(await outcome(reference.callTool(call)));
    expect(await client.callTool({ name: 'echo', arguments: { x: 'hi' } })).toEqual({
      content: [{ type: 'text', text: 'echo:hi' }],
    });

    expect(await handoff(client)).toBe(SEED_RESULT_TEXT);
  });

  it('[S04-MOUNT-ROUTING] [SEED-MOUNT] on the low-level Server: its own handlers keep answering, exactly, and never see our calls', async () => {
    const adapter = hostAdapter();
    const { server, calls } = lowLevelServer();
    await mountIntentMcpTools(adapter, server);
    const client = await connect(server);

    const listed = (await client.listTools()).tools;
    expect(listed.map((t) => t.name)).toEqual(['weather', ...HOST_TOOLS]);
    expect(listed[0]).toEqual(WEATHER_TOOL);

    const weatherArgs = { city: 'Lyon', extra: [1, { deep: true }] };
    expect(await client.callTool({ name: 'weather', arguments: weatherArgs })).toEqual(
      ownReply('weather', weatherArgs),
    );
    // Unknown to both: the adapter's `undefined` hands it to the server's own handler, which answers as it likes.
    expect(await client.callTool({ name: 'nope', arguments: {} })).toEqual(ownReply('nope', {}));
    expect(await client.callTool({ name: 'intent_parse', arguments: SEED_ARGS })).toEqual(
      ownReply('intent_parse', SEED_ARGS),
    );

    expect(await handoff(client)).toBe(SEED_RESULT_TEXT);
    expect(await client.callTool({ name: 'intent_cancel', arguments: { requestId: 'unknown' } })).toMatchObject({
      isError: true,
    });
    expect(calls).toEqual([
      { name: 'weather', arguments: weatherArgs },
      { name: 'nope', arguments: {} },
      { name: 'intent_parse', arguments: SEED_ARGS },
    ]);
  });

  it('[SEED-MOUNT] [H08-ERROR-BOUND] progress for intent_parse: a short progress token gets notifications, one over 256 characters none', async () => {
    const adapter = createIntentMcpAdapter({
      instances: { main: new Intent({ executor: () => Promise.resolve(SEED_CANDIDATE) }) },
    });
    closers.push(() => adapter.close());
    const server = new McpServer({ name: 'service', version: '1.0.0' });
    await mountIntentMcpTools(adapter, server);
    const client = await connect(server);
    const seen: unknown[] = [];
    client.setNotificationHandler('notifications/progress', (n) => {
      seen.push(n.params.progressToken);
    });
    for (const token of ['short-token', 'x'.repeat(MAX_PROGRESS_TOKEN_CHARS + 1)]) {
      const result = await client.callTool({
        name: 'intent_parse',
        arguments: SEED_ARGS,
        _meta: { progressToken: token },
      });
      expect(result.isError).not.toBe(true);
    }
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((t) => t === 'short-token')).toBe(true);
  });

  it('[SEED-MOUNT] [SEED-PARSE-ONLY] an executor-mode adapter mounts intent_parse only', async () => {
    const adapter = createIntentMcpAdapter({
      instances: { main: new Intent({ executor: () => Promise.resolve(SEED_CANDIDATE) }) },
    });
    closers.push(() => adapter.close());
    const { server, calls } = lowLevelServer();
    await mountIntentMcpTools(adapter, server);
    const client = await connect(server);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['weather', 'intent_parse']);
    const reply = await client.callTool({ name: 'intent_parse', arguments: SEED_ARGS });
    expect(textOf(reply)).toBe(SEED_RESULT_TEXT);
    expect(await client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS })).toEqual(
      ownReply('intent_prepare', SEED_ARGS),
    );
    expect(calls.map((c) => c.name)).toEqual(['intent_prepare']);
  });
});

describe('listing and routing edge cases [SEED-MOUNT]', () => {
  it('[S04-MOUNT-ROUTING] [SEED-MOUNT] a paginated tools/list shows every tool exactly once, ours included', async () => {
    const adapter = hostAdapter();
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- see LowLevelServer
    const server: LowLevelServer = new Server({ name: 'service', version: '1.0.0' }, { capabilities: { tools: {} } });
    const page = (name: string) => ({ name, inputSchema: { type: 'object' as const } });
    server.setRequestHandler('tools/list', (request) =>
      Promise.resolve(
        request.params?.cursor === 'page-2' ? { tools: [page('b')] } : { tools: [page('a')], nextCursor: 'page-2' },
      ),
    );
    server.setRequestHandler('tools/call', (request) =>
      Promise.resolve({ content: [{ type: 'text' as const, text: request.params.name }] }),
    );
    await mountIntentMcpTools(adapter, server);
    const client = await connect(server);

    const names: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 5; i++) {
      const listed = await client.listTools(cursor === undefined ? {} : { cursor });
      names.push(...listed.tools.map((t) => t.name));
      cursor = listed.nextCursor;
      if (cursor === undefined) break;
    }
    expect([...names].sort()).toEqual(['a', 'b', ...HOST_TOOLS].sort());
    expect(await client.callTool({ name: 'b', arguments: {} })).toEqual({ content: [{ type: 'text', text: 'b' }] });
  });

  it("[SEED-MOUNT] [SEED-CLOSE] after adapter.close() the service's own tools still answer on a new connection", async () => {
    const adapter = hostAdapter();
    const server = echoServer();
    await mountIntentMcpTools(adapter, server);
    await adapter.close();
    const client = await connect(server);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['echo', ...HOST_TOOLS]);
    expect(await outcome(client.callTool({ name: 'echo', arguments: { x: 'hi' } }))).toEqual({
      ok: { content: [{ type: 'text', text: 'echo:hi' }] },
    });
    // Our tools answer with an error envelope (a tool failure), not a JSON-RPC error.
    const ours = await outcome(client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS }));
    expect(ours).toMatchObject({ ok: { isError: true } });
  });

  it('[SEED-MOUNT] [SEED-CLOSE] after adapter.close() an open connection keeps its own tools; ours give SESSION_CLOSED', async () => {
    const adapter = hostAdapter();
    const server = echoServer();
    await mountIntentMcpTools(adapter, server);
    const client = await connect(server);
    expect(await handoff(client)).toBe(SEED_RESULT_TEXT);
    await adapter.close();
    expect(await client.callTool({ name: 'echo', arguments: { x: 'hi' } })).toEqual({
      content: [{ type: 'text', text: 'echo:hi' }],
    });
    const ours = await client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS });
    expect(ours.isError).toBe(true);
    expect(textOf(ours)).toContain('SESSION_CLOSED');
  });

  it('[SEED-MOUNT] [SEED-CLOSE] after adapter.close() a connection that never called our tools gets SESSION_CLOSED too', async () => {
    const adapter = hostAdapter();
    const server = echoServer();
    await mountIntentMcpTools(adapter, server);
    const client = await connect(server);
    await adapter.close();
    const ours = await client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS });
    expect(ours.isError).toBe(true);
    expect(JSON.parse(textOf(ours))).toMatchObject({ error: { code: 'SESSION_CLOSED', category: 'handoff' } });
  });

  it('[SEED-MOUNT] mount.close() answers waiters and every later call on that connection SESSION_CLOSED; a new connection starts afresh', async () => {
    const adapter = hostAdapter();
    const server = echoServer();
    const mount = await mountIntentMcpTools(adapter, server);
    const client = await connect(server);
    const task = JSON.parse(textOf(await client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS }))) as {
      requestId: string;
      submissionToken: string;
    };
    const waiting = client.callTool({
      name: 'intent_accept',
      arguments: { requestId: task.requestId, submissionToken: task.submissionToken, candidateText: SEED_CANDIDATE },
    });
    await mount.close();
    const codeOf = (r: Awaited<typeof waiting>) => (JSON.parse(textOf(r)) as { error?: { code: string } }).error?.code;
    expect(codeOf(await waiting)).toBe('SESSION_CLOSED');
    expect(codeOf(await client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS }))).toBe('SESSION_CLOSED');
    expect(adapter.snapshot().sessions.flatMap((s) => s.live)).toEqual([]);
    // The server's own tools are untouched, and after this connection ends the next one is served as usual.
    expect(await client.callTool({ name: 'echo', arguments: { x: 'hi' } })).toEqual({
      content: [{ type: 'text', text: 'echo:hi' }],
    });
    await client.close();
    await server.close();
    const again = await connect(server);
    expect(await handoff(again)).toBe(SEED_RESULT_TEXT);
  });

  it("[SEED-MOUNT] an onclose the application assigns after the mount still ends the connection's adapter session", async () => {
    const adapter = hostAdapter();
    const server = echoServer();
    await mountIntentMcpTools(adapter, server);
    let appClosed = 0;
    // Assigned after the mount, as an application would (it replaced the mount's wrapper before).
    server.server.onclose = () => {
      appClosed += 1;
    };
    // And an application that chains by hand what it read: the mount's hooks still run once.
    const before = server.server.onclose;
    server.server.onclose = () => {
      before();
      appClosed += 10;
    };
    const first = await connect(server, 'first');
    const prepared = await first.callTool({ name: 'intent_prepare', arguments: SEED_ARGS });
    const task = prepared.structuredContent as HostTaskShape;
    expect(adapter.snapshot().sessions.flatMap((s) => s.live)).toHaveLength(1);
    await first.close();
    await server.close();
    await vi.waitFor(() => {
      expect(adapter.snapshot().sessions).toEqual([]);
    });
    expect(appClosed).toBe(11);
    // The next connection does not inherit the first one's request.
    const second = await connect(server, 'second');
    const accepted = await second.callTool({
      name: 'intent_accept',
      arguments: { requestId: task.requestId, submissionToken: task.submissionToken, candidateText: SEED_CANDIDATE },
    });
    expect((JSON.parse(textOf(accepted)) as { error?: { code: string } }).error?.code).toBe('HANDOFF_NOT_FOUND');
  });

  it('[SEED-MOUNT] mounting on a server already connected is refused before anything is registered; mounting before its next connection works', async () => {
    const adapter = hostAdapter();
    const server = echoServer();
    const client = await connect(server);
    const refused = await rejectionOf(mountIntentMcpTools(adapter, server));
    expect(refused.code).toBe('CONFIG_INVALID');
    expect(refused.message).toMatch(/before it is connected/);
    await client.close();
    await server.close();
    // Nothing of ours was left behind: no false clash with a half-registered intent_prepare.
    await mountIntentMcpTools(adapter, server);
    expect(await handoff(await connect(server, 'after'))).toBe(SEED_RESULT_TEXT);
  });

  it('[SEED-MOUNT] [H08-ERROR-BOUND] a megabyte tool name gets a bounded not-found error, and the connection goes on', async () => {
    const adapter = hostAdapter();
    const server = echoServer();
    await mountIntentMcpTools(adapter, server);
    const client = await connect(server);
    const name = 'x'.repeat(1_000_000);
    let message = '';
    try {
      await client.callTool({ name, arguments: {} });
    } catch (error) {
      message = error instanceof Error ? error.message : String(error);
    }
    expect(message).toMatch(/not found/);
    expect(message.length).toBeLessThan(400);
    // A name of a legal length still falls through to the server's own handler, untouched.
    expect(await client.callTool({ name: 'echo', arguments: { x: 'hi' } })).toEqual({
      content: [{ type: 'text', text: 'echo:hi' }],
    });
  });

  it('[SEED-MOUNT] on an McpServer a name of Object.prototype ("constructor", "__proto__") is not found', async () => {
    const adapter = hostAdapter();
    const server = echoServer();
    await mountIntentMcpTools(adapter, server);
    // The SDK itself refuses to register such a name, so none can be the application's own tool.
    expect(() => server.registerTool('toString', { inputSchema: z.object({}) }, () => ({ content: [] }))).toThrow(
      /already registered/,
    );
    const client = await connect(server);
    for (const name of ['constructor', '__proto__', 'hasOwnProperty', 'toString']) {
      let message = '';
      try {
        await client.callTool({ name, arguments: {} });
      } catch (error) {
        message = error instanceof Error ? error.message : String(error);
      }
      // The SDK alone answered "Tool constructor disabled": it found Object.prototype's member.
      expect(message, name).toMatch(new RegExp(`Tool "${name}" not found`));
    }
    expect(await client.callTool({ name: 'echo', arguments: { x: 'hi' } })).toEqual({
      content: [{ type: 'text', text: 'echo:hi' }],
    });
    expect(await handoff(client)).toBe(SEED_RESULT_TEXT);
  });

  it('[SEED-MOUNT] an McpServer without tools of its own lists only ours', async () => {
    const adapter = hostAdapter();
    const server = new McpServer({ name: 'bare', version: '1.0.0' });
    await mountIntentMcpTools(adapter, server);
    const client = await connect(server);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(HOST_TOOLS);
    expect(await handoff(client)).toBe(SEED_RESULT_TEXT);
  });
});

describe('name clashes [SEED-PREFIX] [SEED-MOUNT]', () => {
  it('[S04-MOUNT-CLASH] [SEED-PREFIX] a clash on McpServer is refused with CONFIG_INVALID before anything is registered', async () => {
    const adapter = hostAdapter();
    const theirs = (): McpServer => {
      const server = new McpServer({ name: 'service', version: '1.0.0' });
      server.registerTool('intent_prepare', { description: 'Their own prepare.' }, () => ({
        content: [{ type: 'text', text: 'theirs' }],
      }));
      return server;
    };
    const server = theirs();
    const error = await rejectionOf(mountIntentMcpTools(adapter, server));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.category).toBe('config');
    expect(error.message).toContain('intent_prepare');
    expect(error.message).toMatch(/toolPrefix/);

    // The server behaves exactly like one that was never offered the mount.
    const client = await connect(server);
    const reference = await connect(theirs(), 'reference');
    const listed = (await client.listTools()).tools;
    expect(listed.map((t) => t.name)).toEqual(['intent_prepare']);
    expect(listed).toEqual((await reference.listTools()).tools);
    for (const call of [
      { name: 'intent_prepare', arguments: SEED_ARGS },
      { name: 'intent_accept', arguments: { requestId: 'r', submissionToken: 't', candidateText: '{}' } },
      { name: 'intent_cancel', arguments: { requestId: 'r' } },
    ])
      expect(await outcome(client.callTool(call))).toEqual(await outcome(reference.callTool(call)));
    expect(await client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS })).toEqual({
      content: [{ type: 'text', text: 'theirs' }],
    });
    expect(adapter.snapshot().sessions).toEqual([]);
  });

  it('[S04-MOUNT-CLASH] [SEED-PREFIX] a clash on the low-level Server is refused; its tools/list and tools/call stay as they were', async () => {
    const adapter = hostAdapter();
    const theirs = { name: 'intent_cancel', inputSchema: { type: 'object' as const } };
    const { server, calls } = lowLevelServer([WEATHER_TOOL, theirs]);
    const error = await rejectionOf(mountIntentMcpTools(adapter, server));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.category).toBe('config');
    expect(error.message).toContain('intent_cancel');

    const client = await connect(server);
    expect((await client.listTools()).tools).toEqual([WEATHER_TOOL, theirs]);
    expect(await client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS })).toEqual(
      ownReply('intent_prepare', SEED_ARGS),
    );
    expect(await client.callTool({ name: 'intent_cancel', arguments: { requestId: 'r' } })).toEqual(
      ownReply('intent_cancel', { requestId: 'r' }),
    );
    expect(calls.map((c) => c.name)).toEqual(['intent_prepare', 'intent_cancel']);
    expect(adapter.snapshot().sessions).toEqual([]);
  });

  it('[SEED-PREFIX] with a toolPrefix the clash disappears: their intent_prepare and ours live side by side', async () => {
    const adapter = hostAdapter({ toolPrefix: 'orders_' });
    const server = new McpServer({ name: 'service', version: '1.0.0' });
    server.registerTool('intent_prepare', { description: 'Their own prepare.' }, () => ({
      content: [{ type: 'text', text: 'theirs' }],
    }));
    const mount = await mountIntentMcpTools(adapter, server);
    expect(mount.toolNames).toEqual(HOST_TOOLS.map((n) => `orders_${n}`));
    const client = await connect(server);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual([
      'intent_prepare',
      ...HOST_TOOLS.map((n) => `orders_${n}`),
    ]);
    expect(await client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS })).toEqual({
      content: [{ type: 'text', text: 'theirs' }],
    });
    expect(await handoff(client, 'orders_')).toBe(SEED_RESULT_TEXT);
  });
});

describe('cancellation by the protocol [SEED-SIGNAL] [SEED-MOUNT]', () => {
  it("[S04-MOUNT-SIGNAL] [SEED-SIGNAL] aborting intent_parse on the client aborts the executor's ctx.signal and cancels the request", async () => {
    const { executor, called, aborted } = hangingExecutor();
    const adapter = createIntentMcpAdapter({ instances: { main: new Intent({ executor }) } });
    closers.push(() => adapter.close());
    const server = echoServer();
    await mountIntentMcpTools(adapter, server);
    const client = await connect(server);

    const controller = new AbortController();
    const call = client.callTool({ name: 'intent_parse', arguments: SEED_ARGS }, { signal: controller.signal });
    const signal = await called;
    expect(signal.aborted).toBe(false);
    expect(adapter.snapshot().sessions.flatMap((s) => s.live)).toHaveLength(1);
    controller.abort();
    await expect(call).rejects.toThrow();
    expect((await aborted).aborted).toBe(true);
    expect(adapter.snapshot().sessions.flatMap((s) => s.live)).toEqual([]);
    expect(executor).toHaveBeenCalledTimes(1);

    // The connection and its session go on.
    expect(await client.callTool({ name: 'echo', arguments: { x: 'still here' } })).toEqual({
      content: [{ type: 'text', text: 'echo:still here' }],
    });
  });

  it('[S04-MOUNT-SIGNAL] [SEED-SIGNAL] aborting intent_accept while it waits on a validation reaches the adapter: that caller gets ABORTED, the request lives on', async () => {
    const real = hostAdapter();
    /** Every call the mount makes into the adapter, with the options it passed and the reply it got back. */
    const seen: { name: string; signal: AbortSignal | undefined; reply: Promise<IntentMcpToolResult | undefined> }[] =
      [];
    const recording: IntentMcpAdapter = {
      mode: real.mode,
      tools: real.tools,
      close: () => real.close(),
      get closed() {
        return real.closed;
      },
      inspect: (listener) => real.inspect(listener),
      snapshot: () => real.snapshot(),
      connect(options) {
        const session = real.connect(options);
        const wrapped: IntentMcpSession = {
          id: session.id,
          protocolVersion: session.protocolVersion,
          close: () => session.close(),
          callTool(name, args, callOptions) {
            const reply = session.callTool(name, args, callOptions);
            seen.push({ name, signal: callOptions?.signal, reply });
            return reply;
          },
        };
        return wrapped;
      },
    };
    const validating = deferred();
    const stopInspecting = real.inspect((t: HandoffTransition) => {
      if (t.to === 'validating') validating.resolve();
    });
    const server = echoServer();
    await mountIntentMcpTools(recording, server);
    const client = await connect(server);

    const prepared = await client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS });
    const task = prepared.structuredContent as HostTaskShape;
    const args = { requestId: task.requestId, submissionToken: task.submissionToken, candidateText: SEED_CANDIDATE };

    const controller = new AbortController();
    const call = client.callTool({ name: 'intent_accept', arguments: args }, { signal: controller.signal });
    await validating.promise;
    controller.abort();
    await expect(call).rejects.toThrow();
    stopInspecting();

    const acceptCall = seen.find((s) => s.name === 'intent_accept');
    expect(acceptCall?.signal).toBeInstanceOf(AbortSignal);
    expect(acceptCall?.signal?.aborted).toBe(true);
    const aborted = await acceptCall?.reply;
    expect(aborted?.isError).toBe(true);
    expect((JSON.parse(textOf(aborted)) as { error: { code: string } }).error.code).toBe('ABORTED');

    // The shared validation ran on for nobody; the request completed and the same candidate replays its result.
    const again = await client.callTool({ name: 'intent_accept', arguments: args });
    expect(again.isError).toBe(false);
    expect(textOf(again)).toBe(SEED_RESULT_TEXT);
    // Each request carries its own signal; all of them went to one adapter session.
    expect(new Set(seen.map((s) => s.signal)).size).toBe(seen.length);
    expect(real.snapshot().sessions).toHaveLength(1);
  });
});

describe('one adapter session per connection [SEED-MOUNT]', () => {
  it('[S04-MOUNT-SESSION] [SEED-MOUNT] prepare and accept in separate calls meet; each client has exactly one session, never one per request', async () => {
    const adapter = hostAdapter();
    const sessionsByRequest = new Map<string, string>();
    adapter.inspect((t) => sessionsByRequest.set(t.requestId, t.sessionId));
    const serverA = echoServer();
    const serverB = echoServer();
    await mountIntentMcpTools(adapter, serverA, { label: 'client-a' });
    await mountIntentMcpTools(adapter, serverB, { label: 'client-b' });
    const a = await connect(serverA, 'a');
    const b = await connect(serverB, 'b');

    const prepared: HostTaskShape[] = [];
    for (let i = 0; i < 3; i++) {
      const reply = await a.callTool({ name: 'intent_prepare', arguments: SEED_ARGS });
      prepared.push(reply.structuredContent as HostTaskShape);
      await a.callTool({ name: 'echo', arguments: { x: String(i) } });
    }
    expect(adapter.snapshot().sessions).toHaveLength(1);
    const first = prepared[0]!;
    const invalid = await a.callTool({
      name: 'intent_accept',
      arguments: {
        requestId: first.requestId,
        submissionToken: first.submissionToken,
        candidateText: INVALID_CANDIDATE,
      },
    });
    expect(textOf(invalid)).toContain('CANDIDATE_INVALID');
    const corrected = await a.callTool({
      name: 'intent_accept',
      arguments: { requestId: first.requestId, submissionToken: first.submissionToken, candidateText: SEED_CANDIDATE },
    });
    expect(textOf(corrected)).toBe(SEED_RESULT_TEXT);
    await a.callTool({ name: 'intent_cancel', arguments: { requestId: prepared[1]!.requestId } });

    // b is another connection: another session, which cannot reach a's requests.
    const fromB = await b.callTool({
      name: 'intent_accept',
      arguments: {
        requestId: prepared[2]!.requestId,
        submissionToken: prepared[2]!.submissionToken,
        candidateText: SEED_CANDIDATE,
      },
    });
    expect(textOf(fromB)).toContain('HANDOFF_NOT_FOUND');
    expect(await handoff(b)).toBe(SEED_RESULT_TEXT);

    const sessions = adapter.snapshot().sessions;
    expect(sessions.map((s) => s.label).sort()).toEqual(['client-a', 'client-b']);
    const sessionA = sessions.find((s) => s.label === 'client-a')!;
    expect(sessionA.live.map((l) => l.requestId)).toEqual([prepared[2]!.requestId]);
    for (const task of prepared) expect(sessionsByRequest.get(task.requestId)).toBe(sessionA.id);
    expect(new Set(sessionsByRequest.values()).size).toBe(2);
  });

  it('[S04-MOUNT-SESSION] [SEED-MOUNT] [SEED-CLOSE] closing a client closes its adapter session only; the adapter and the server callbacks go on', async () => {
    const adapter = hostAdapter();
    const serverA = echoServer();
    const serverB = echoServer();
    const closedA = deferred();
    serverA.server.onclose = () => {
      closedA.resolve();
    };
    await mountIntentMcpTools(adapter, serverA, { label: 'client-a' });
    await mountIntentMcpTools(adapter, serverB, { label: 'client-b' });
    const a = await connect(serverA, 'a');
    const b = await connect(serverB, 'b');

    const live = await a.callTool({ name: 'intent_prepare', arguments: SEED_ARGS });
    expect(live.isError).toBe(false);
    expect(await handoff(a)).toBe(SEED_RESULT_TEXT);
    expect(await handoff(b)).toBe(SEED_RESULT_TEXT);
    const before = adapter.snapshot();
    const idA = before.sessions.find((s) => s.label === 'client-a')?.id;
    const idB = before.sessions.find((s) => s.label === 'client-b')?.id;
    expect(idA).toBeDefined();
    expect(before.retained.map((r) => r.sessionId).sort()).toEqual([idA, idB].sort());

    await a.close();
    // The server's own onclose, set before the mount, still runs.
    await closedA.promise;
    const after = adapter.snapshot();
    expect(after.sessions.filter((s) => s.id === idA && !s.closed)).toEqual([]);
    expect(after.sessions.flatMap((s) => s.live)).toEqual([]);
    expect(after.retained.map((r) => r.sessionId)).toEqual([idB]);

    // b's session, the adapter and the caller's world are untouched.
    expect(after.sessions.find((s) => s.id === idB)?.closed).toBe(false);
    expect(await handoff(b)).toBe(SEED_RESULT_TEXT);
    expect(() => adapter.connect({ protocolVersion: '2025-11-25' })).not.toThrow();
  });
});

describe('tools registered after the mount [I13-MOUNT-LATE]', () => {
  it('[I13-MOUNT-LATE] on McpServer a clashing name is refused at registration; a new name joins; lists and calls keep working', async () => {
    const adapter = hostAdapter();
    const server = echoServer();
    await mountIntentMcpTools(adapter, server);
    for (const name of HOST_TOOLS)
      expect(() =>
        server.registerTool(name, { description: 'Theirs.' }, () => ({ content: [{ type: 'text', text: 'theirs' }] })),
      ).toThrow(new RegExp(`${name}.*already registered`));
    server.registerTool(
      'later',
      { description: 'After the mount.', inputSchema: z.object({ n: z.number() }) },
      ({ n }) => ({
        content: [{ type: 'text', text: `later:${n}` }],
      }),
    );
    const client = await connect(server);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(['echo', 'later', ...HOST_TOOLS]);
    const listed = (await client.listTools()).tools;
    for (const tool of adapter.tools)
      expect(listed.find((t) => t.name === tool.name)?.inputSchema).toEqual(tool.inputSchema);
    expect(await client.callTool({ name: 'later', arguments: { n: 3 } })).toEqual({
      content: [{ type: 'text', text: 'later:3' }],
    });
    expect(await handoff(client)).toBe(SEED_RESULT_TEXT);
  });

  it('[I13-MOUNT-LATE] on McpServer a disabled tool of the same name (unlisted, still registered) is a clash: CONFIG_INVALID, nothing left behind', async () => {
    const adapter = hostAdapter();
    const server = echoServer();
    server
      .registerTool('intent_cancel', { description: 'Theirs, disabled.' }, () => ({
        content: [{ type: 'text', text: 'theirs' }],
      }))
      .disable();
    const error = await rejectionOf(mountIntentMcpTools(adapter, server));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('intent_cancel');
    const client = await connect(server);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['echo']);
  });

  it('[I13-MOUNT-LATE] on the low-level Server a name of ours its handler lists later is listed once, and calls reach the adapter', async () => {
    const adapter = hostAdapter();
    const tools: object[] = [WEATHER_TOOL];
    const { server, calls } = lowLevelServer(tools);
    await mountIntentMcpTools(adapter, server);
    tools.push({ name: 'intent_accept', inputSchema: { type: 'object' } });
    const client = await connect(server);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(['weather', ...HOST_TOOLS]);
    expect(await handoff(client)).toBe(SEED_RESULT_TEXT);
    expect(calls).toEqual([]);
  });
});

describe('servers recognised by shape [I13-MOUNT-SHAPE]', () => {
  it('[I13-MOUNT-SHAPE] an McpServer and a Server from another copy of the SDK (its CommonJS build) mount and serve a handoff', async () => {
    const require = createRequire(import.meta.url);
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- see LowLevelServer
    const other = require('@modelcontextprotocol/server') as { McpServer: typeof McpServer; Server: typeof Server };
    expect(other.McpServer).not.toBe(McpServer);
    const adapter = hostAdapter();
    const mcp = new other.McpServer({ name: 'other-copy', version: '1.0.0' });
    await mountIntentMcpTools(adapter, mcp);
    const client = await connect(mcp);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(HOST_TOOLS);
    expect(await handoff(client)).toBe(SEED_RESULT_TEXT);

    const low = new other.Server({ name: 'other-low', version: '1.0.0' }, { capabilities: {} });
    await mountIntentMcpTools(hostAdapter(), low);
    const lowClient = await connect(low, 'low');
    expect((await lowClient.listTools()).tools.map((t) => t.name)).toEqual(HOST_TOOLS);
    expect(await handoff(lowClient)).toBe(SEED_RESULT_TEXT);
  });

  it('[I13-MOUNT-SHAPE] anything that is not an SDK server is CONFIG_INVALID naming both SDK packages', async () => {
    const adapter = hostAdapter();
    const lookalike = { setRequestHandler: () => undefined, registerCapabilities: () => undefined };
    for (const candidate of [{}, lookalike, { server: lookalike, registerTool: () => undefined }, null]) {
      const error = await rejectionOf(mountIntentMcpTools(adapter, candidate as never));
      expect(error.code).toBe('CONFIG_INVALID');
      expect(error.message).toContain('@modelcontextprotocol/server');
      expect(error.message).toContain('@modelcontextprotocol/sdk');
    }
  });
});
