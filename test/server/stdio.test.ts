/**
 * The built command over stdio (spec 05 "stdio", spec 01 "Protocol and remote use"): `node dist/src/cli.js` with the
 * embedded default for each of the three revisions through the official v2 client; executor mode from a config file
 * against the loopback fake OpenAI-compatible endpoint (golden reply, correction turn, no key in any output); and stdout
 * carrying nothing but the protocol while debug logs go to stderr as JSON lines.
 */
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, stopFakeOpenAI, type FakeOpenAI } from '../support/fakeOpenAI.js';
import {
  INVALID_CANDIDATE,
  PROTOCOL_REVISIONS,
  SEED_ARGS,
  SEED_CANDIDATE,
  SEED_REPLY,
  SEED_RESULT_TEXT,
  textOf,
  type Revision,
} from '../support/mcpFixtures.js';
import {
  childEnv,
  configDir,
  connectCli,
  ensureBuilt,
  executorBlock,
  startCli,
  stopAllChildren,
  writeConfig,
  type CliConnection,
} from '../support/serverProcess.js';

const HOST_TOOLS = ['intent_prepare', 'intent_accept', 'intent_cancel'];
/** The API key the executor children get through `TEST_KEY`; it must never show up in any output. */
const KEY = 'sk-test-9f2c1e7a4b-never-print-me';
const SPAWN_TIMEOUT = 30_000;

interface ToolReply {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
  [key: string]: unknown;
}

interface HostTaskShape {
  kind: string;
  requestId: string;
  submissionToken: string;
}

function errorCodeOf(reply: ToolReply): string {
  expect(reply.isError).toBe(true);
  expect(reply.structuredContent).toBeUndefined();
  return (JSON.parse(textOf(reply)) as { error: { code: string } }).error.code;
}

/**
 * The reply without what the 2026-07-28 SDK stamps on every result (`resultType: 'complete'` and the server's info in
 * `_meta`): the seed reply file has neither. Under the 2025 revisions nothing is removed.
 */
function withoutProtocolStamps(reply: ToolReply, revision: Revision): ToolReply {
  if (revision !== '2026-07-28') return reply;
  const { resultType, _meta, ...rest } = reply;
  if (resultType !== undefined) expect(resultType).toBe('complete');
  if (_meta !== undefined)
    for (const key of Object.keys(_meta as object)) expect(key).toMatch(/^io\.modelcontextprotocol\//);
  return rest;
}

beforeAll(() => ensureBuilt(), 180_000);

afterEach(async () => {
  await stopAllChildren();
});

// ---------------------------------------------------------------------------------------------------------------------
// The embedded default (no flags): host mode, instance `main`, no schema

/** One `node dist/src/cli.js` per revision, spawned side by side. */
const hostConnections = new Map<Revision, Promise<CliConnection>>();

describe('node dist/src/cli.js with no flags (the embedded default) over stdio', () => {
  beforeAll(() => {
    for (const revision of PROTOCOL_REVISIONS) {
      const connecting = connectCli(revision);
      // Reported by the tests that await it; never an unhandled rejection.
      connecting.catch(() => undefined);
      hostConnections.set(revision, connecting);
    }
  });

  afterAll(async () => {
    const all = await Promise.allSettled(hostConnections.values());
    for (const settled of all) if (settled.status === 'fulfilled') await settled.value.close();
  });

  describe.each(PROTOCOL_REVISIONS)('%s', (revision) => {
    let connection: CliConnection;

    beforeAll(async () => {
      const connecting = hostConnections.get(revision);
      if (connecting === undefined) throw new Error(`no connection for ${revision}`);
      connection = await connecting;
    }, SPAWN_TIMEOUT);

    it(`[SEED-REVISIONS] negotiates ${revision} and lists the three host tools only`, async () => {
      expect(connection.client.getNegotiatedProtocolVersion()).toBe(revision);
      const tools = (await connection.client.listTools()).tools;
      expect(tools.map((t) => t.name)).toEqual(HOST_TOOLS);
      for (const tool of tools) {
        expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
        expect(tool.outputSchema).toMatchObject({ type: 'object' });
      }
    });

    it('[SEED-REVISIONS] [SEED-GOLDEN] completes a host handoff: the seed candidate gives the seed reply text byte for byte, then cancel says already_completed', async () => {
      const { client } = connection;
      // listTools first, so the client checks every structuredContent against the tool's outputSchema.
      await client.listTools();
      const prepared = (await client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS })) as ToolReply;
      expect(prepared.isError).toBe(false);
      const task = prepared.structuredContent as HostTaskShape;
      expect(task.kind).toBe('model_task');
      expect(JSON.parse(textOf(prepared))).toEqual(task);

      const accepted = (await client.callTool({
        name: 'intent_accept',
        arguments: { requestId: task.requestId, submissionToken: task.submissionToken, candidateText: SEED_CANDIDATE },
      })) as ToolReply;
      expect(accepted.isError).toBe(false);
      expect(textOf(accepted)).toBe(SEED_RESULT_TEXT);
      expect(accepted.structuredContent).toEqual(SEED_REPLY.structuredContent);
      expect(withoutProtocolStamps(accepted, revision)).toEqual(SEED_REPLY);

      const cancelled = (await client.callTool({
        name: 'intent_cancel',
        arguments: { requestId: task.requestId },
      })) as ToolReply;
      expect(cancelled.isError).toBe(false);
      expect(cancelled.structuredContent).toEqual({ requestId: task.requestId, status: 'already_completed' });
    });

    it('answers intent_parse as an unknown tool in host mode (the model is the client’s), and keeps serving', async () => {
      const { client } = connection;
      // The SDK's answer for a tool it does not list: a JSON-RPC InvalidParams error naming the tool. A crashed or
      // closed child would reject too, but with a connection error, so the code and the message are what is checked.
      const failure = await client.callTool({ name: 'intent_parse', arguments: SEED_ARGS }).then(
        (reply) => expect.fail(`intent_parse was answered in host mode: ${JSON.stringify(reply)}`),
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(ProtocolError);
      const { code, message } = failure as ProtocolError;
      expect(code).toBe(ProtocolErrorCode.InvalidParams);
      expect(message).toMatch(/intent_parse/);
      // The same child answers the next request: the refusal ended neither the process nor the connection.
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(HOST_TOOLS);
    });
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Executor mode from a config file, against the loopback fake endpoint

describe('executor mode from a config file (openai-compatible executor, key from TEST_KEY)', () => {
  let fake: FakeOpenAI | undefined;
  let connection: CliConnection | undefined;

  afterEach(async () => {
    await connection?.close();
    connection = undefined;
    if (fake !== undefined) await stopFakeOpenAI(fake);
    fake = undefined;
  });

  async function serveExecutor(revision: Revision, extraArgs: string[] = []): Promise<[FakeOpenAI, CliConnection]> {
    fake = await startFakeOpenAI();
    const path = writeConfig(configDir(), 'executor.json', {
      mode: 'executor',
      instances: { main: { executor: executorBlock(fake.baseUrl) } },
    });
    connection = await connectCli(revision, ['--config', path, ...extraArgs], childEnv({ TEST_KEY: KEY }));
    return [fake, connection];
  }

  it.each(PROTOCOL_REVISIONS)(
    '[SEED-GOLDEN] [SEED-ONE-CORE] [SEED-REVISIONS] %s: intent_parse with the seed request gives the golden reply, text byte for byte',
    async (revision) => {
      const [endpoint, { client }] = await serveExecutor(revision);
      endpoint.reply({ content: SEED_CANDIDATE });
      expect(client.getNegotiatedProtocolVersion()).toBe(revision);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['intent_parse']);

      const reply = (await client.callTool({ name: 'intent_parse', arguments: SEED_ARGS })) as ToolReply;
      expect(textOf(reply)).toBe(SEED_RESULT_TEXT);
      expect(withoutProtocolStamps(reply, revision)).toEqual(SEED_REPLY);

      expect(endpoint.requests).toHaveLength(1);
      const request = endpoint.requests[0]!;
      expect(request.url).toBe('/v1/chat/completions');
      expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(request.body.model).toBe('m');
      expect(request.body.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } });
      expect(request.body.messages?.map((m) => m.role)).toEqual(['system', 'user']);
      expect(request.body.messages?.[1]?.content).toContain(SEED_ARGS.input);
    },
    SPAWN_TIMEOUT,
  );

  it(
    'after a malformed candidate the second request carries the previous candidate as an assistant message and the issues, then succeeds',
    async () => {
      const [endpoint, { client }] = await serveExecutor('2025-11-25');
      endpoint.reply({ content: INVALID_CANDIDATE }, { content: SEED_CANDIDATE });

      const reply = (await client.callTool({ name: 'intent_parse', arguments: SEED_ARGS })) as ToolReply;
      expect(reply.isError).toBe(false);
      expect(textOf(reply)).toBe(SEED_RESULT_TEXT);
      expect(reply.structuredContent).toEqual(SEED_REPLY.structuredContent);

      expect(endpoint.requests).toHaveLength(2);
      const [first, second] = [endpoint.requests[0]!.body, endpoint.requests[1]!.body];
      const messages = second.messages ?? [];
      expect(messages).toHaveLength(4);
      expect(messages.slice(0, 2)).toEqual(first.messages);
      expect(messages[2]).toEqual({ role: 'assistant', content: INVALID_CANDIDATE });
      expect(messages[3]?.role).toBe('user');
      // INVALID_CANDIDATE lacks `coverage` and `intents`: the feedback names both by JSON Pointer.
      expect(messages[3]?.content).toContain('/coverage');
      expect(messages[3]?.content).toContain('/intents');
    },
    SPAWN_TIMEOUT,
  );

  it(
    '[S05-SECRETS-FROM-ENV] the key never appears in a reply or on stderr, even at --log-level debug when the endpoint echoes it back in an error',
    async () => {
      const [endpoint, conn] = await serveExecutor('2025-06-18', ['--log-level', 'debug']);
      endpoint.reply({
        status: 401,
        body: { error: { message: `Incorrect API key provided: ${KEY}`, type: 'invalid_request_error' } },
      });
      const failed = (await conn.client.callTool({ name: 'intent_parse', arguments: SEED_ARGS })) as ToolReply;
      expect(errorCodeOf(failed)).toBe('EXECUTOR_FAILED');
      expect(endpoint.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);

      endpoint.reply({ content: SEED_CANDIDATE });
      const ok = (await conn.client.callTool({ name: 'intent_parse', arguments: SEED_ARGS })) as ToolReply;
      expect(textOf(ok)).toBe(SEED_RESULT_TEXT);

      expect(conn.stderr()).toMatch(/"level":"debug"/);
      for (const text of [JSON.stringify(failed), JSON.stringify(ok), conn.stderr()]) {
        expect(text).not.toContain(KEY);
        expect(text).not.toContain('never-print-me');
      }
    },
    SPAWN_TIMEOUT,
  );
});

// ---------------------------------------------------------------------------------------------------------------------
// stdout belongs to the protocol

describe('stdout carries only the protocol', () => {
  it(
    '[S05-STDOUT-PROTOCOL] a child at --log-level debug answers raw JSON-RPC on stdout (every stdout line a JSON-RPC message) and logs JSON lines on stderr',
    async () => {
      const child = startCli(['--log-level', 'debug']);
      child.send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1.0.0' } },
      });
      await child.waitForStdout(/"id":1[,}]/);
      child.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      child.send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} });
      child.send({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'intent_prepare', arguments: SEED_ARGS },
      });
      await child.waitForStdout(/"id":3[,}][^\n]*\n/);

      const lines = child.stdout().split('\n');
      expect(lines.pop()).toBe('');
      const messages = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      for (const message of messages) expect(message['jsonrpc']).toBe('2.0');
      const byId = new Map(messages.map((m) => [m['id'], m]));
      expect(byId.get(1)).toMatchObject({ result: { protocolVersion: '2025-06-18' } });
      const tools = (byId.get(2)?.['result'] as { tools: { name: string }[] }).tools;
      expect(tools.map((t) => t.name)).toEqual(HOST_TOOLS);
      expect(byId.get(3)).toMatchObject({ result: { isError: false, structuredContent: { kind: 'model_task' } } });

      const logLines = child
        .stderr()
        .split('\n')
        .filter((l) => l !== '');
      expect(logLines.length).toBeGreaterThan(0);
      for (const line of logLines) {
        const entry = JSON.parse(line) as Record<string, unknown>;
        expect(typeof entry['time']).toBe('string');
        expect(typeof entry['level']).toBe('string');
        expect(typeof entry['message']).toBe('string');
      }
      expect(logLines.some((l) => (JSON.parse(l) as { level: string }).level === 'debug')).toBe(true);
    },
    SPAWN_TIMEOUT,
  );
});
