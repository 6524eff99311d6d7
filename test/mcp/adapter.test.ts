/**
 * The transport-free MCP adapter (spec 04): configuration and connect errors, tool names and definitions, argument
 * checks, envelopes per revision, the seed's golden reply, sessions and closing.
 */
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import * as api from '../../src/index.js';
import { IntentError } from '../../src/core/errors.js';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter, type IntentMcpAdapterConfig } from '../../src/mcp/adapter.js';
import type { IntentMcpToolDefinition } from '../../src/mcp/tools.js';
import {
  INVALID_CANDIDATE,
  OTHER_INVALID_CANDIDATE,
  PROTOCOL_REVISIONS,
  SEED_ARGS,
  SEED_CANDIDATE,
  SEED_REPLY,
  SEED_REPLY_FILE,
  SEED_RESULT_TEXT,
  errorOf,
  forbiddenExecutor,
  hangingExecutor,
  scriptedExecutor,
  successOf,
  type Revision,
} from '../support/mcpFixtures.js';
import { thrownBy } from '../support/intentErrors.js';

const HOST_TOOLS = ['intent_prepare', 'intent_accept', 'intent_cancel'];

/** An Intent whose executor answers every call with the seed candidate. */
function seedIntent(): Intent {
  return new Intent({ executor: () => Promise.resolve(SEED_CANDIDATE) });
}

function hostAdapter(config: Partial<IntentMcpAdapterConfig> = {}) {
  return createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) }, ...config });
}

function configError(config: unknown): IntentError {
  const error = thrownBy(() => createIntentMcpAdapter(config as IntentMcpAdapterConfig));
  expect(error.code).toBe('CONFIG_INVALID');
  expect(error.category).toBe('config');
  expect(error.retryable).toBe(false);
  expect(error.message.length).toBeGreaterThan(0);
  return error;
}

function toolNamed(tools: readonly IntentMcpToolDefinition[], name: string): IntentMcpToolDefinition {
  const tool = tools.find((t) => t.name === name);
  if (tool === undefined) return expect.fail(`no tool named ${name}`);
  return tool;
}

const ajv = new AjvJsonSchemaValidator();
function validates(schema: object, value: unknown): boolean {
  return ajv.getValidator(schema)(value).valid;
}

/** `intent_accept` arguments for a prepared task. */
function acceptArgs(task: { requestId: string; submissionToken: string }, candidateText: string) {
  return { requestId: task.requestId, submissionToken: task.submissionToken, candidateText };
}

/** prepare → HostTask; throws the test if the prepare failed. */
async function prepare(
  session: api.IntentMcpSession,
  args: object = SEED_ARGS,
  revision: Revision = '2025-11-25',
  options: api.IntentParseOptions = {},
) {
  const task = successOf(await session.callTool('intent_prepare', args, options), revision);
  return task as { requestId: string; submissionToken: string; expiresAt?: string; kind: string };
}

describe('[S04-ADAPTER-CONFIG] createIntentMcpAdapter rejects every invalid configuration with CONFIG_INVALID (config)', () => {
  const intent = seedIntent();
  const longName = 'a'.repeat(65);

  it.each<[string, unknown]>([
    ['a missing config', undefined],
    ['a null config', null],
    ['a string config', 'main'],
    ['missing instances', {}],
    ['null instances', { instances: null }],
    ['instances as a string', { instances: 'main' }],
    ['instances as an array', { instances: [intent] }],
    ['empty instances', { instances: {} }],
    ['empty instances in host mode', { mode: 'host', instances: {} }],
  ])('[SEED-INSTANCES-REQUIRED] %s', (_label, config) => {
    configError(config);
  });

  it.each<[string, unknown]>([
    ['a plain IntentConfig object', {}],
    ['a plain IntentConfig with an executor function', { executor: () => Promise.resolve(SEED_CANDIDATE) }],
    ['a plain object carrying an Intent model', { model: intent.model, executor: intent.executor }],
    ['null', null],
    ['a string', 'main'],
  ])('[SEED-INSTANCES-DISTINCT] an instance value that is %s, not an Intent', (_label, value) => {
    configError({ mode: 'host', instances: { main: value } });
    configError({ mode: 'host', instances: { ok: new Intent({}), main: value } });
  });

  it('[SEED-INSTANCES-DISTINCT] the message points plain IntentConfig objects at new Intent()', () => {
    const error = configError({ mode: 'host', instances: { main: { language: 'en' } } });
    expect(error.message).toMatch(/Intent/);
  });

  it.each<[string, string]>([
    ['empty', ''],
    ['65 characters', longName],
    ['with a space', 'a b'],
    ['with a slash', 'a/b'],
    ['with a colon', 'a:b'],
    ['non-ASCII', 'café'],
    ['prototype', 'prototype'],
    ['constructor', 'constructor'],
  ])('[SEED-NAMES] an instance name that is %s', (_label, name) => {
    const instances: Record<string, Intent> = Object.create(null) as Record<string, Intent>;
    instances[name] = intent;
    configError({ instances });
    configError({ mode: 'host', instances: { good: new Intent({}), [name]: new Intent({}) } });
  });

  it('[SEED-NAMES] an own "__proto__" key, as JSON.parse creates it', () => {
    const parsed = JSON.parse('{"__proto__": {}}') as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(['__proto__']);
    configError({ mode: 'host', instances: parsed });

    // The same key holding a real Intent is refused for its name, not for its value.
    const withIntent = JSON.parse('{"main": 1, "__proto__": 1}') as Record<string, unknown>;
    Object.defineProperty(withIntent, 'main', { value: new Intent({}), enumerable: true });
    Object.defineProperty(withIntent, '__proto__', { value: new Intent({}), enumerable: true });
    expect(Object.keys(withIntent)).toEqual(['main', '__proto__']);
    const error = configError({ mode: 'host', instances: withIntent });
    expect(error.message).toContain('__proto__');
  });

  it('[SEED-NAMES] accepts names of 1 and 64 characters from [A-Za-z0-9_.-]', () => {
    const names = ['a', 'a'.repeat(64), 'Orders_v2.eu-west', '0', '.', '-', '_'];
    const instances = Object.fromEntries(names.map((n) => [n, new Intent({})]));
    const adapter = createIntentMcpAdapter({ mode: 'host', instances });
    const prepareTool = toolNamed(adapter.tools, 'intent_prepare');
    const properties = prepareTool.inputSchema['properties'] as Record<string, { enum?: string[] }>;
    // Object.keys order: integer-like keys ("0") come first.
    expect(properties['instance']?.enum).toEqual(Object.keys(instances));
    expect([...(properties['instance']?.enum ?? [])].sort()).toEqual([...names].sort());
  });

  it.each<[string, unknown]>([
    ['with a space', 'my tools_'],
    ['65 characters', 'p'.repeat(65)],
    ['with a slash', 'a/'],
    ['a number', 5],
    ['null', null],
  ])('[SEED-PREFIX] [SEED-NAMES] a toolPrefix %s', (_label, toolPrefix) => {
    configError({ mode: 'host', instances: { main: new Intent({}) }, toolPrefix });
  });

  it('[SEED-PREFIX] [SEED-NAMES] accepts an empty prefix and one of 64 characters', () => {
    expect(hostAdapter({ toolPrefix: '' }).tools.map((t) => t.name)).toEqual(HOST_TOOLS);
    const long = 'p'.repeat(64);
    expect(hostAdapter({ toolPrefix: long }).tools.map((t) => t.name)).toEqual(HOST_TOOLS.map((n) => long + n));
  });

  it.each<[string, unknown]>([
    ['an unknown mode', 'native'],
    ['an upper-case mode', 'HOST'],
    ['a null mode', null],
  ])('[SEED-MODE] %s', (_label, mode) => {
    configError({ mode, instances: { main: intent } });
  });

  it('[SEED-MODE] executor mode (explicit or by default) refuses an instance without an executor', () => {
    const bare = new Intent({});
    configError({ mode: 'executor', instances: { main: bare } });
    configError({ instances: { main: bare } });
    configError({ instances: { good: seedIntent(), bare } });
    const error = configError({ instances: { bare } });
    expect(error.message).toContain('bare');
  });

  it('[SEED-MODE] the default mode is executor: only intent_parse; host mode takes Intents without executors', () => {
    const byDefault = createIntentMcpAdapter({ instances: { main: intent } });
    expect(byDefault.tools.map((t) => t.name)).toEqual(['intent_parse']);
    expect(hostAdapter().tools.map((t) => t.name)).toEqual(HOST_TOOLS);
  });

  it.each<[string, object]>([
    ['an unknown key', { instance: 'main' }],
    ['a schema key', { schema: {} }],
    ['an executor key', { executor: () => Promise.resolve('') }],
    ['bad limits', { limits: { maxPendingPerSession: -1 } }],
  ])('%s in the adapter config', (_label, extra) => {
    configError({ instances: { main: intent }, ...extra });
  });
});

describe('connect() [SEED-CONNECT-INVALID] [SEED-PROTOCOL-FROM-SDK]', () => {
  function connectError(adapter: api.IntentMcpAdapter, options: unknown): IntentError {
    const error = thrownBy(() => adapter.connect(options as api.IntentMcpConnectOptions));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.category).toBe('transport');
    expect(error.retryable).toBe(false);
    return error;
  }

  it.each<[string, unknown]>([
    ['no options', undefined],
    ['null options', null],
    ['a bare version string', '2025-11-25'],
    ['a missing protocolVersion', {}],
    ['a missing protocolVersion with a label', { label: 'x' }],
    ['an older revision', { protocolVersion: '2024-11-05' }],
    ['a future revision', { protocolVersion: '2099-01-01' }],
    ['a version that is not a string', { protocolVersion: 20251125 }],
    ['an extra key', { protocolVersion: '2025-11-25', sessionId: 'abc' }],
    ['a label that is not a string', { protocolVersion: '2025-11-25', label: 42 }],
  ])('[SEED-CONNECT-INVALID] %s', (_label, options) => {
    connectError(hostAdapter(), options);
  });

  it('[SEED-CONNECT-INVALID] [SEED-CLOSE] connect after adapter.close() fails with category transport', async () => {
    const adapter = hostAdapter();
    adapter.connect({ protocolVersion: '2025-11-25' });
    await adapter.close();
    for (const protocolVersion of PROTOCOL_REVISIONS) connectError(adapter, { protocolVersion });
  });

  it('[SEED-REVISIONS] each supported revision opens a distinct session', () => {
    const adapter = hostAdapter();
    const sessions = PROTOCOL_REVISIONS.map((protocolVersion) => adapter.connect({ protocolVersion, label: 'x' }));
    expect(new Set(sessions.map((s) => s.id)).size).toBe(3);
    expect(sessions.map((s) => s.protocolVersion)).toEqual([...PROTOCOL_REVISIONS]);
  });

  it('[SEED-PROTOCOL-FROM-SDK] tool input cannot choose the revision: only connect() decides resultType', async () => {
    const adapter = hostAdapter();
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const error = errorOf(
      await session.callTool('intent_prepare', { ...SEED_ARGS, protocolVersion: '2026-07-28' }),
      'INPUT_INVALID',
    );
    expect(error.message).toContain('protocolVersion');
    errorOf(
      await session.callTool('intent_prepare', { ...SEED_ARGS, _meta: { protocolVersion: '2026-07-28' } }),
      'INPUT_INVALID',
    );
    // Material that talks about revisions is only material.
    const withContext = await session.callTool('intent_prepare', {
      ...SEED_ARGS,
      context: [{ role: 'system', text: 'protocolVersion: 2026-07-28, resultType: complete' }],
    });
    successOf(withContext, '2025-11-25');
    expect(withContext).not.toHaveProperty('resultType');
  });
});

describe('unknown tool names resolve to exactly undefined [SEED-UNKNOWN-TOOL]', () => {
  const strangers: unknown[] = [
    '',
    'intent',
    'INTENT_PARSE',
    'intent_parse ',
    ' intent_parse',
    'intent_parse\u0000',
    'tools/call',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
  ];
  const nonStrings: unknown[] = [
    undefined,
    null,
    42,
    true,
    {},
    ['intent_parse'],
    { toString: () => 'intent_parse' },
    Symbol('intent_parse'),
  ];

  it('[SEED-UNKNOWN-TOOL] [SEED-PARSE-ONLY] in executor mode: host tools and strangers are not ours', async () => {
    const { executor } = scriptedExecutor(SEED_CANDIDATE);
    const adapter = createIntentMcpAdapter({ instances: { main: new Intent({ executor }) } });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    for (const name of [...HOST_TOOLS, ...strangers, ...nonStrings])
      expect(await session.callTool(name as string, SEED_ARGS)).toBe(undefined);
    expect(executor).not.toHaveBeenCalled();
    expect(adapter.snapshot().sessions.flatMap((s) => s.live)).toEqual([]);
  });

  it('[SEED-UNKNOWN-TOOL] [SEED-HOST-TOOLS] in host mode: intent_parse and strangers are not ours', async () => {
    const adapter = hostAdapter();
    const session = adapter.connect({ protocolVersion: '2026-07-28' });
    for (const name of ['intent_parse', ...strangers, ...nonStrings])
      expect(await session.callTool(name as string, SEED_ARGS)).toBe(undefined);
    expect(adapter.snapshot().sessions.flatMap((s) => s.live)).toEqual([]);
  });

  it('[SEED-UNKNOWN-TOOL] [SEED-PREFIX] with a prefix, the unprefixed names are not ours', async () => {
    const adapter = hostAdapter({ toolPrefix: 'orders_' });
    const session = adapter.connect({ protocolVersion: '2025-06-18' });
    for (const name of [...HOST_TOOLS, 'intent_parse', 'orders_intent_parse', 'orders_', 'orders_INTENT_PREPARE'])
      expect(await session.callTool(name, SEED_ARGS)).toBe(undefined);
    successOf(await session.callTool('orders_intent_prepare', SEED_ARGS), '2025-06-18');
  });
});

describe('tools per mode and prefix', () => {
  it('[SEED-PARSE-ONLY] executor mode exposes only intent_parse', () => {
    const adapter = createIntentMcpAdapter({ mode: 'executor', instances: { a: seedIntent(), b: seedIntent() } });
    expect(adapter.tools.map((t) => t.name)).toEqual(['intent_parse']);
  });

  it('[SEED-HOST-TOOLS] host mode exposes intent_prepare, intent_accept, intent_cancel', () => {
    expect(hostAdapter().tools.map((t) => t.name)).toEqual(HOST_TOOLS);
  });

  it('[SEED-PREFIX] the prefix is prepended to every name, in both modes', () => {
    expect(hostAdapter({ toolPrefix: 'shop.v2-' }).tools.map((t) => t.name)).toEqual(
      HOST_TOOLS.map((n) => `shop.v2-${n}`),
    );
    const executor = createIntentMcpAdapter({ toolPrefix: 'x_', instances: { main: seedIntent() } });
    expect(executor.tools.map((t) => t.name)).toEqual(['x_intent_parse']);
  });
});

describe('tool definitions', () => {
  const single = [...createIntentMcpAdapter({ instances: { main: seedIntent() } }).tools, ...hostAdapter().tools];

  it('[S04-TOOL-DEFINITIONS] [SEED-HOST-TOOLS] [SEED-PARSE-ONLY] every definition has name, title, description, schemas and annotations', () => {
    for (const tool of single) {
      expect(Object.keys(tool).sort()).toEqual(
        ['annotations', 'description', 'inputSchema', 'name', 'outputSchema', 'title'].sort(),
      );
      expect(tool.title.length).toBeGreaterThan(0);
      expect(tool.description.length).toBeGreaterThan(40);
      expect(tool.inputSchema['type']).toBe('object');
      expect(tool.inputSchema['additionalProperties']).toBe(false);
      expect(tool.outputSchema['type']).toBe('object');
      // Definitions go onto the wire as they are.
      expect(JSON.parse(JSON.stringify(tool))).toEqual(tool);
    }
  });

  it('[SEED-INSTANCE-ARG] with one instance, "instance" is an optional enum of that name', () => {
    for (const name of ['intent_parse', 'intent_prepare']) {
      const { inputSchema } = toolNamed(single, name);
      const properties = inputSchema['properties'] as Record<string, { enum?: string[] }>;
      expect(properties['instance']?.enum).toEqual(['main']);
      expect(inputSchema['required']).toEqual(['input']);
      expect(Object.keys(properties).sort()).toEqual(
        ['baseline', 'context', 'fields', 'input', 'instance', 'output', 'referenceTime'].sort(),
      );
      for (const forbidden of ['schema', 'executor', 'apiKey', 'signal', 'configPath', 'mode'])
        expect(properties).not.toHaveProperty(forbidden);
      expect(validates(inputSchema, SEED_ARGS)).toBe(true);
      expect(validates(inputSchema, { ...SEED_ARGS, instance: 'main' })).toBe(true);
      expect(validates(inputSchema, { ...SEED_ARGS, instance: 'other' })).toBe(false);
      expect(validates(inputSchema, { ...SEED_ARGS, schema: {} })).toBe(false);
    }
  });

  it('[SEED-INSTANCE-ARG] with several instances, "instance" is a required enum of the configured names', () => {
    const tools = [
      ...createIntentMcpAdapter({ instances: { orders: seedIntent(), billing: seedIntent() } }).tools,
      ...createIntentMcpAdapter({ mode: 'host', instances: { orders: new Intent({}), billing: new Intent({}) } }).tools,
    ];
    for (const name of ['intent_parse', 'intent_prepare']) {
      const { inputSchema } = toolNamed(tools, name);
      const properties = inputSchema['properties'] as Record<string, { enum?: string[] }>;
      expect(properties['instance']?.enum).toEqual(['orders', 'billing']);
      expect([...(inputSchema['required'] as string[])].sort()).toEqual(['input', 'instance']);
      expect(validates(inputSchema, SEED_ARGS)).toBe(false);
      expect(validates(inputSchema, { ...SEED_ARGS, instance: 'billing' })).toBe(true);
    }
  });

  it('[SEED-HOST-TOOLS] intent_accept takes requestId, submissionToken and candidateText as strings', () => {
    const { inputSchema } = toolNamed(single, 'intent_accept');
    const properties = inputSchema['properties'] as Record<string, { type?: string }>;
    expect(Object.keys(properties).sort()).toEqual(['candidateText', 'requestId', 'submissionToken']);
    for (const p of Object.values(properties)) expect(p.type).toBe('string');
    expect([...(inputSchema['required'] as string[])].sort()).toEqual([
      'candidateText',
      'requestId',
      'submissionToken',
    ]);
    const args = { requestId: 'r', submissionToken: 't', candidateText: SEED_CANDIDATE };
    expect(validates(inputSchema, args)).toBe(true);
    expect(validates(inputSchema, { ...args, candidateText: JSON.parse(SEED_CANDIDATE) as object })).toBe(false);
  });

  it('[SEED-HOST-TOOLS] intent_cancel takes requestId and an optional reason cancelled / refusal / incomplete', () => {
    const { inputSchema } = toolNamed(single, 'intent_cancel');
    const properties = inputSchema['properties'] as Record<string, { enum?: string[] }>;
    expect(Object.keys(properties).sort()).toEqual(['reason', 'requestId']);
    expect([...(properties['reason']?.enum ?? [])].sort()).toEqual(['cancelled', 'incomplete', 'refusal']);
    expect(inputSchema['required']).toEqual(['requestId']);
    expect(validates(inputSchema, { requestId: 'r' })).toBe(true);
    expect(validates(inputSchema, { requestId: 'r', reason: 'session_closed' })).toBe(false);
  });

  it('[S04-TOOL-DEFINITIONS] [SEED-HOST-TOOLS] [SEED-ENVELOPES] each outputSchema accepts the real success payload and refuses an error', async () => {
    const executorSession = createIntentMcpAdapter({ instances: { main: seedIntent() } }).connect({
      protocolVersion: '2025-11-25',
    });
    const parsed = successOf(await executorSession.callTool('intent_parse', SEED_ARGS), '2025-11-25');
    expect(validates(toolNamed(single, 'intent_parse').outputSchema, parsed)).toBe(true);

    const session = hostAdapter().connect({ protocolVersion: '2025-11-25' });
    const task = await prepare(session);
    expect(validates(toolNamed(single, 'intent_prepare').outputSchema, task)).toBe(true);
    const accepted = successOf(await session.callTool('intent_accept', acceptArgs(task, SEED_CANDIDATE)), '2025-11-25');
    expect(validates(toolNamed(single, 'intent_accept').outputSchema, accepted)).toBe(true);
    const cancelled = successOf(await session.callTool('intent_cancel', { requestId: task.requestId }), '2025-11-25');
    expect(validates(toolNamed(single, 'intent_cancel').outputSchema, cancelled)).toBe(true);

    const errorPayload = { error: { code: 'INTERNAL', category: 'internal', message: 'x', retryable: false } };
    for (const tool of single) expect(validates(tool.outputSchema, errorPayload)).toBe(false);
  });

  it('[S04-TOOL-DEFINITIONS] [SEED-HOST-TOOLS] annotations are set truthfully', () => {
    for (const tool of single) {
      for (const hint of ['readOnlyHint', 'idempotentHint', 'openWorldHint'] as const)
        expect(typeof tool.annotations[hint]).toBe('boolean');
    }
    // Only intent_parse reaches a model; host tools never leave the server.
    expect(toolNamed(single, 'intent_parse').annotations.openWorldHint).toBe(true);
    for (const name of HOST_TOOLS) expect(toolNamed(single, name).annotations.openWorldHint).toBe(false);
    // prepare creates a new request each call; accept and cancel change a request's state.
    expect(toolNamed(single, 'intent_prepare').annotations).toMatchObject({
      readOnlyHint: false,
      idempotentHint: false,
    });
    expect(toolNamed(single, 'intent_accept').annotations).toMatchObject({ readOnlyHint: false, idempotentHint: true });
    expect(toolNamed(single, 'intent_cancel').annotations).toMatchObject({ readOnlyHint: false, idempotentHint: true });
    // A model call is not idempotent.
    expect(toolNamed(single, 'intent_parse').annotations.idempotentHint).toBe(false);
  });

  it('[S04-TOOL-DEFINITIONS] [SEED-HOST-TOOLS] the descriptions tell a model what to do', () => {
    expect(toolNamed(single, 'intent_prepare').description).toMatch(/intent_accept/);
    expect(toolNamed(single, 'intent_accept').description).toMatch(/candidateText/);
    expect(toolNamed(single, 'intent_accept').description).toMatch(/string/);
    expect(toolNamed(single, 'intent_cancel').description).toMatch(/refusal/);
    expect(toolNamed(single, 'intent_cancel').description).toMatch(/incomplete/);
    expect(toolNamed(single, 'intent_parse').description).toMatch(/input/);
  });
});

describe('arguments', () => {
  const forbidden: [string, unknown][] = [
    ['schema', { type: 'object' }],
    ['executor', 'openai'],
    ['apiKey', 'sk-secret-123'],
    ['signal', {}],
    ['configPath', '/etc/intent.json'],
    ['mode', 'host'],
  ];

  it.each(forbidden)(
    '[SEED-FORBIDDEN-KEYS] "%s" in intent_parse or intent_prepare is INPUT_INVALID',
    async (key, value) => {
      const { executor } = scriptedExecutor(SEED_CANDIDATE);
      const executorAdapter = createIntentMcpAdapter({ instances: { main: new Intent({ executor }) } });
      const host = hostAdapter();
      for (const [adapter, tool] of [
        [executorAdapter, 'intent_parse'],
        [host, 'intent_prepare'],
      ] as const) {
        const session = adapter.connect({ protocolVersion: '2025-11-25' });
        const error = errorOf(await session.callTool(tool, { ...SEED_ARGS, [key]: value }), 'INPUT_INVALID');
        expect(error.category).toBe('input');
        expect(error.message).toContain(key);
        expect(JSON.stringify(error)).not.toContain('sk-secret-123');
        expect(adapter.snapshot().sessions.flatMap((s) => s.live)).toEqual([]);
      }
      expect(executor).not.toHaveBeenCalled();
    },
  );

  it('[SEED-DISPOSED] a disposed instance gives INSTANCE_DISPOSED on intent_parse and intent_prepare', async () => {
    const { executor } = scriptedExecutor(SEED_CANDIDATE);
    const parsing = new Intent({ executor });
    const preparing = new Intent({});
    const executorSession = createIntentMcpAdapter({ instances: { main: parsing } }).connect({
      protocolVersion: '2025-11-25',
    });
    const hostSession = hostAdapter({ instances: { main: preparing } }).connect({ protocolVersion: '2025-11-25' });
    parsing.dispose();
    preparing.dispose();
    const a = errorOf(await executorSession.callTool('intent_parse', SEED_ARGS), 'INSTANCE_DISPOSED');
    const b = errorOf(await hostSession.callTool('intent_prepare', SEED_ARGS), 'INSTANCE_DISPOSED');
    expect(a.category).toBe('config');
    expect(b.category).toBe('config');
    expect(executor).not.toHaveBeenCalled();
  });

  it('[SEED-INSTANCE-ARG] several instances and no "instance" is INSTANCE_REQUIRED, never a guessed default', async () => {
    const orders = scriptedExecutor(SEED_CANDIDATE);
    const billing = scriptedExecutor(SEED_CANDIDATE);
    const executorAdapter = createIntentMcpAdapter({
      instances: {
        orders: new Intent({ executor: orders.executor }),
        billing: new Intent({ executor: billing.executor }),
      },
    });
    const host = hostAdapter({ instances: { orders: new Intent({}), billing: new Intent({}) } });
    const e = executorAdapter.connect({ protocolVersion: '2025-11-25' });
    const h = host.connect({ protocolVersion: '2025-11-25' });

    const required = errorOf(await e.callTool('intent_parse', SEED_ARGS), 'INSTANCE_REQUIRED');
    expect(required.category).toBe('input');
    expect(required.message).toContain('orders');
    expect(required.message).toContain('billing');
    errorOf(await h.callTool('intent_prepare', SEED_ARGS), 'INSTANCE_REQUIRED');
    expect(orders.executor).not.toHaveBeenCalled();
    expect(billing.executor).not.toHaveBeenCalled();
    expect(host.snapshot().sessions.flatMap((s) => s.live)).toEqual([]);

    // Named explicitly, exactly that instance runs.
    successOf(await e.callTool('intent_parse', { ...SEED_ARGS, instance: 'billing' }), '2025-11-25');
    expect(billing.executor).toHaveBeenCalledTimes(1);
    expect(orders.executor).not.toHaveBeenCalled();
    await prepare(h, { ...SEED_ARGS, instance: 'orders' });
    expect(
      host
        .snapshot()
        .sessions.flatMap((s) => s.live)
        .map((l) => l.instance),
    ).toEqual(['orders']);
  });

  it('[SEED-INSTANCE-ARG] one instance is chosen automatically, or named explicitly', async () => {
    const adapter = hostAdapter({ instances: { only: new Intent({}) } });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    await prepare(session);
    await prepare(session, { ...SEED_ARGS, instance: 'only' });
    expect(
      adapter
        .snapshot()
        .sessions.flatMap((s) => s.live)
        .map((l) => l.instance),
    ).toEqual(['only', 'only']);
  });

  it.each<[string, unknown]>([
    ['an unknown name', 'billing'],
    ['"__proto__"', '__proto__'],
    ['"constructor"', 'constructor'],
    ['"toString"', 'toString'],
    ['an empty name', ''],
  ])('[SEED-INSTANCE-ARG] "instance" naming %s is INSTANCE_NOT_FOUND', async (_label, instance) => {
    const adapter = hostAdapter();
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const error = errorOf(await session.callTool('intent_prepare', { ...SEED_ARGS, instance }), 'INSTANCE_NOT_FOUND');
    expect(error.category).toBe('input');
    expect(adapter.snapshot().sessions.flatMap((s) => s.live)).toEqual([]);
  });

  it('[SEED-INSTANCE-ARG] an "instance" that is not a string is INPUT_INVALID', async () => {
    const session = hostAdapter().connect({ protocolVersion: '2025-11-25' });
    for (const instance of [1, null, ['main'], { name: 'main' }])
      errorOf(await session.callTool('intent_prepare', { ...SEED_ARGS, instance }), 'INPUT_INVALID');
  });

  it('[S04-CANDIDATE-STRING] [SEED-HOST-TOOLS] candidateText sent as an object is INPUT_INVALID asking for a JSON string', async () => {
    const adapter = hostAdapter();
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const { requestId, submissionToken } = await prepare(session);
    for (const candidateText of [JSON.parse(SEED_CANDIDATE) as object, [SEED_CANDIDATE]]) {
      const error = errorOf(
        await session.callTool('intent_accept', { requestId, submissionToken, candidateText }),
        'INPUT_INVALID',
      );
      expect(error.message).toMatch(/JSON string/);
      expect(error.message).toMatch(/candidate/i);
    }
    errorOf(
      await session.callTool('intent_accept', { requestId, submissionToken, candidateText: 42 }),
      'INPUT_INVALID',
    );
    // Nothing was validated: the request is still waiting for its first candidate.
    expect(adapter.snapshot().sessions[0]?.live).toEqual([
      expect.objectContaining({ requestId, state: 'prepared', validations: 0 }) as unknown,
    ]);
    successOf(
      await session.callTool('intent_accept', { requestId, submissionToken, candidateText: SEED_CANDIDATE }),
      '2025-11-25',
    );
  });

  it('[SEED-HOST-TOOLS] missing or extra keys on intent_accept and intent_cancel are INPUT_INVALID', async () => {
    const session = hostAdapter().connect({ protocolVersion: '2025-11-25' });
    const { requestId, submissionToken } = await prepare(session);
    errorOf(await session.callTool('intent_accept', { requestId, candidateText: SEED_CANDIDATE }), 'INPUT_INVALID');
    errorOf(
      await session.callTool('intent_accept', { requestId, submissionToken, candidateText: '{}', instance: 'main' }),
      'INPUT_INVALID',
    );
    errorOf(await session.callTool('intent_cancel', { requestId, reason: 'session_closed' }), 'INPUT_INVALID');
    errorOf(await session.callTool('intent_cancel', { requestId, submissionToken }), 'INPUT_INVALID');
    errorOf(await session.callTool('intent_cancel', {}), 'INPUT_INVALID');
  });

  it('[S04-CALLTOOL-NEVER-THROWS] [SEED-ENVELOPES] callTool never throws: garbage arguments and options become error envelopes', async () => {
    const throwingGetter = {
      get input(): string {
        throw new Error('getter exploded');
      },
    };
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error('proxy get');
        },
        ownKeys: () => {
          throw new Error('proxy ownKeys');
        },
        getOwnPropertyDescriptor: () => {
          throw new Error('proxy descriptor');
        },
        has: () => {
          throw new Error('proxy has');
        },
      },
    );
    const circular: Record<string, unknown> = { input: 'hi' };
    circular['self'] = circular;
    const garbage: unknown[] = [
      undefined,
      null,
      0,
      -1,
      'intent',
      true,
      [],
      [SEED_ARGS],
      {},
      { input: 5 },
      { input: '' },
      { input: 'x'.repeat(200_000) },
      { input: 'hi', fields: 'orderId' },
      { input: 'hi', referenceTime: 'yesterday' },
      { requestId: 5, submissionToken: null, candidateText: undefined },
      throwingGetter,
      hostile,
      circular,
      () => SEED_ARGS,
      Symbol('args'),
      10n,
    ];
    const { executor } = scriptedExecutor();
    const executorSession = createIntentMcpAdapter({ instances: { main: new Intent({ executor }) } }).connect({
      protocolVersion: '2026-07-28',
    });
    const hostSession = hostAdapter().connect({ protocolVersion: '2026-07-28' });
    const calls: [api.IntentMcpSession, string][] = [
      [executorSession, 'intent_parse'],
      ...HOST_TOOLS.map((t) => [hostSession, t] as [api.IntentMcpSession, string]),
    ];
    for (const [session, tool] of calls)
      for (const args of garbage) {
        let result: api.IntentMcpToolResult | undefined;
        try {
          result = await session.callTool(tool, args);
        } catch (error) {
          expect.fail(`${tool} threw for ${typeof args} arguments: ${String(error)}`);
        }
        expect(result?.isError, `${tool} ${typeof args}`).toBe(true);
        expect(result).not.toHaveProperty('structuredContent');
        expect(result?.resultType).toBe('complete');
        const wire = JSON.parse(result?.content[0].text ?? '') as { error: { code: string; message: string } };
        expect(api.ERROR_CODES).toContain(wire.error.code);
        expect(wire.error.message).not.toContain('exploded');
        expect(wire.error.message).not.toContain('proxy');
      }
    for (const options of [null, 'fast', { signal: 'abort' }, { timeoutMs: 'soon' }]) {
      let result: api.IntentMcpToolResult | undefined;
      try {
        result = await hostSession.callTool('intent_prepare', SEED_ARGS, options as never);
      } catch (error) {
        expect.fail(`intent_prepare threw for options ${JSON.stringify(options)}: ${String(error)}`);
      }
      expect(result).toBeDefined();
    }
  });

  it('a candidateText over limits.maxCandidateBytes is INPUT_INVALID and is never validated', async () => {
    const adapter = hostAdapter({ limits: { maxCandidateBytes: 64 } });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const { requestId, submissionToken } = await prepare(session);
    const error = errorOf(
      await session.callTool('intent_accept', { requestId, submissionToken, candidateText: SEED_CANDIDATE }),
      'INPUT_INVALID',
    );
    expect(error.requestId).toBe(requestId);
    expect(JSON.stringify(error)).not.toContain(SEED_CANDIDATE);
    expect(adapter.snapshot().sessions[0]?.live[0]).toMatchObject({ state: 'prepared', validations: 0 });
  });
});

describe('adapter limits cap requests on top of the instance limits', () => {
  it('limits.maxContextItemChars caps a context item: INPUT_INVALID naming the item, nothing prepared', async () => {
    const adapter = hostAdapter({ limits: { maxContextItemChars: 10 } });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const long = { role: 'user', text: 'x'.repeat(11) };
    const error = errorOf(
      await session.callTool('intent_prepare', { ...SEED_ARGS, context: [{ role: 'user', text: 'ok' }, long] }),
      'INPUT_INVALID',
    );
    expect(error.message).toContain('item 1');
    expect(JSON.stringify(error)).not.toContain(long.text);
    expect(adapter.snapshot().sessions[0]?.live).toEqual([]);
    await prepare(session, { ...SEED_ARGS, context: [{ role: 'user', text: 'x'.repeat(10) }] });
  });
});

describe('the golden sample [SEED-GOLDEN] [SEED-ENVELOPES]', () => {
  it('[SEED-PARSE-ONLY] intent_parse with the seed request and a scripted executor gives the seed reply, byte for byte', async () => {
    const { executor, calls } = scriptedExecutor(SEED_CANDIDATE, SEED_CANDIDATE);
    const adapter = createIntentMcpAdapter({ instances: { main: new Intent({ executor }) } });
    for (const protocolVersion of ['2025-06-18', '2025-11-25'] as const) {
      const session = adapter.connect({ protocolVersion });
      const reply = await session.callTool('intent_parse', SEED_ARGS);
      expect(reply).toEqual(SEED_REPLY);
      expect(reply?.content[0].text).toBe(SEED_RESULT_TEXT);
      expect(JSON.stringify(reply, null, 2)).toBe(SEED_REPLY_FILE);
      await session.close();
    }
    expect(calls).toHaveLength(2);
    expect(calls[0]?.task.input).toBeDefined();
  });

  it('[SEED-HOST-TOOLS] the same envelope through intent_prepare + intent_accept in host mode', async () => {
    const adapter = hostAdapter({ instances: { main: new Intent({ executor: forbiddenExecutor() }) } });
    const session = adapter.connect({ protocolVersion: '2025-06-18' });
    const task = await prepare(session, SEED_ARGS, '2025-06-18');
    expect(task.kind).toBe('model_task');
    const reply = await session.callTool('intent_accept', {
      requestId: task.requestId,
      submissionToken: task.submissionToken,
      candidateText: SEED_CANDIDATE,
    });
    expect(reply).toEqual(SEED_REPLY);
    expect(reply?.content[0].text).toBe(SEED_RESULT_TEXT);
    expect(JSON.stringify(reply, null, 2)).toBe(SEED_REPLY_FILE);
  });

  it('[S04-RESULT-TYPE] [SEED-REVISIONS] under 2026-07-28 the same envelope also carries resultType complete', async () => {
    const { executor } = scriptedExecutor(SEED_CANDIDATE);
    const session = createIntentMcpAdapter({ instances: { main: new Intent({ executor }) } }).connect({
      protocolVersion: '2026-07-28',
    });
    const reply = await session.callTool('intent_parse', SEED_ARGS);
    expect(reply).toEqual({ ...SEED_REPLY, resultType: 'complete' });
    expect(reply?.content[0].text).toBe(SEED_RESULT_TEXT);
  });
});

describe.each(PROTOCOL_REVISIONS)('envelopes under %s [SEED-ENVELOPES] [SEED-REVISIONS]', (revision) => {
  it('[S04-ENVELOPE-SUCCESS] [S04-RESULT-TYPE] [SEED-ENVELOPES] [SEED-REVISIONS] prepare, cancel and result are success envelopes; resultType only on 2026-07-28', async () => {
    const session = hostAdapter().connect({ protocolVersion: revision });
    const prepareReply = await session.callTool('intent_prepare', SEED_ARGS);
    const task = successOf(prepareReply, revision);
    expect(task['kind']).toBe('model_task');
    if (revision !== '2026-07-28') expect(prepareReply).not.toHaveProperty('resultType');

    const second = await prepare(session, SEED_ARGS, revision);
    const cancelled = successOf(await session.callTool('intent_cancel', { requestId: second.requestId }), revision);
    expect(cancelled).toEqual({ requestId: second.requestId, status: 'cancelled' });

    const result = successOf(
      await session.callTool('intent_accept', {
        requestId: task['requestId'],
        submissionToken: task['submissionToken'],
        candidateText: SEED_CANDIDATE,
      }),
      revision,
    );
    expect(result['status']).toBe('complete');
  });

  it('[S04-ENVELOPE-ERROR] [SEED-ENVELOPES] [SEED-REVISIONS] technical failures: error text, isError true, no structuredContent, no partial result', async () => {
    const session = hostAdapter().connect({ protocolVersion: revision });
    const { requestId, submissionToken } = await prepare(session, SEED_ARGS, revision);
    const invalid = errorOf(
      await session.callTool('intent_accept', { requestId, submissionToken, candidateText: INVALID_CANDIDATE }),
      'CANDIDATE_INVALID',
      revision,
    );
    expect(invalid.details?.['correction']).toEqual({ allowed: true, remaining: 1 });
    expect(invalid.retryable).toBe(true);
    errorOf(
      await session.callTool('intent_accept', { requestId, submissionToken: 'wrong', candidateText: SEED_CANDIDATE }),
      'HANDOFF_NOT_FOUND',
      revision,
    );
    errorOf(await session.callTool('intent_prepare', { input: 7 }), 'INPUT_INVALID', revision);
    await session.close();
    errorOf(await session.callTool('intent_prepare', SEED_ARGS), 'SESSION_CLOSED', revision);
  });

  it('[SEED-ENVELOPES] error envelopes never carry the submission token or the candidate text', async () => {
    const session = hostAdapter().connect({ protocolVersion: revision });
    const task = await prepare(session, SEED_ARGS, revision);
    const marker = 'CANDIDATE-MARKER-7f3a';
    const invalid = JSON.stringify({ turnKind: 'request', coverage: 'complete', intents: [{ action: marker }] });
    const texts = [
      await session.callTool('intent_accept', acceptArgs(task, invalid)),
      await session.callTool('intent_accept', acceptArgs(task, `${invalid} `)),
      await session.callTool('intent_accept', { ...acceptArgs(task, invalid), submissionToken: `${marker}-token` }),
      await session.callTool('intent_accept', { ...acceptArgs(task, invalid), requestId: 'nope' }),
    ].map((r) => r?.content[0].text ?? '');
    for (const text of texts) {
      expect(JSON.parse(text)).toHaveProperty('error');
      expect(text).not.toContain(marker);
      expect(text).not.toContain(task.submissionToken);
    }
  });

  it('[S04-REPLAY-BYTES] [SEED-ENVELOPES] replays are byte-identical: CANDIDATE_INVALID, CANDIDATE_REJECTED and a result', async () => {
    const session = hostAdapter().connect({ protocolVersion: revision });
    const a = await prepare(session, SEED_ARGS, revision);
    const send = (req: { requestId: string; submissionToken: string }, candidateText: string) =>
      session.callTool('intent_accept', {
        requestId: req.requestId,
        submissionToken: req.submissionToken,
        candidateText,
      });

    const invalid = await send(a, INVALID_CANDIDATE);
    errorOf(invalid, 'CANDIDATE_INVALID', revision);
    const invalidAgain = await send(a, INVALID_CANDIDATE);
    expect(invalidAgain?.content[0].text).toBe(invalid?.content[0].text);
    const rejected = await send(a, OTHER_INVALID_CANDIDATE);
    const error = errorOf(rejected, 'CANDIDATE_REJECTED', revision);
    expect(error.details?.['correction']).toEqual({ allowed: false, remaining: 0 });
    expect((await send(a, OTHER_INVALID_CANDIDATE))?.content[0].text).toBe(rejected?.content[0].text);
    errorOf(await send(a, SEED_CANDIDATE), 'HANDOFF_CONFLICT', revision);

    const b = await prepare(session, SEED_ARGS, revision);
    const first = await send(b, SEED_CANDIDATE);
    successOf(first, revision);
    const replay = await send(b, SEED_CANDIDATE);
    expect(replay?.content[0].text).toBe(first?.content[0].text);
    expect(replay?.content[0].text).toBe(SEED_RESULT_TEXT);
    expect(replay).toEqual(first);
    const late = successOf(await session.callTool('intent_cancel', { requestId: b.requestId }), revision);
    expect(late).toEqual({ requestId: b.requestId, status: 'already_completed' });
  });
});

describe('a deadline from the prepare call, on a simulated clock', () => {
  it('[SEED-ENVELOPES] an accept after the deadline is HANDOFF_EXPIRED, an envelope like any other failure', async () => {
    const clock = new SimulatedClock();
    const t0 = Date.parse('2026-11-02T09:30:00.000Z');
    clock.set(t0);
    const adapter = hostAdapter({ clock });
    const session = adapter.connect({ protocolVersion: '2026-07-28' });
    const task = await prepare(session, SEED_ARGS, '2026-07-28', { timeoutMs: 5_000 });
    expect(task.expiresAt).toBe(new Date(t0 + 5_000).toISOString());
    clock.increment(5_000);
    const expired = errorOf(
      await session.callTool('intent_accept', {
        requestId: task.requestId,
        submissionToken: task.submissionToken,
        candidateText: SEED_CANDIDATE,
      }),
      'HANDOFF_EXPIRED',
      '2026-07-28',
    );
    expect(expired.category).toBe('timeout');
    expect(successOf(await session.callTool('intent_cancel', { requestId: task.requestId }), '2026-07-28')).toEqual({
      requestId: task.requestId,
      status: 'already_completed',
      reason: 'expired',
    });
  });
});

describe('sessions [SEED-CLOSE]', () => {
  it("[S04-SESSIONS-INDEPENDENT] two sessions of one adapter never see each other's requests", async () => {
    const adapter = hostAdapter();
    const a = adapter.connect({ protocolVersion: '2025-11-25', label: 'a' });
    const b = adapter.connect({ protocolVersion: '2025-11-25', label: 'b' });
    const task = await prepare(a);
    const args = { requestId: task.requestId, submissionToken: task.submissionToken, candidateText: SEED_CANDIDATE };

    const fromB = await b.callTool('intent_accept', args);
    errorOf(fromB, 'HANDOFF_NOT_FOUND');
    errorOf(await b.callTool('intent_cancel', { requestId: task.requestId }), 'HANDOFF_NOT_FOUND');
    // The same answer as a wrong token in the right session: nothing to probe.
    const wrongToken = await a.callTool('intent_accept', { ...args, submissionToken: 'x'.repeat(43) });
    expect(fromB?.content[0].text).toBe(wrongToken?.content[0].text);

    const done = await a.callTool('intent_accept', args);
    successOf(done, '2025-11-25');
    // Completed and retained: still invisible from b, replayable in a.
    errorOf(await b.callTool('intent_accept', args), 'HANDOFF_NOT_FOUND');
    errorOf(await b.callTool('intent_cancel', { requestId: task.requestId }), 'HANDOFF_NOT_FOUND');
    expect((await a.callTool('intent_accept', args))?.content[0].text).toBe(done?.content[0].text);
  });

  it('[S04-SESSIONS-INDEPENDENT] each session has its own pending cap', async () => {
    const adapter = hostAdapter({ limits: { maxPendingPerSession: 2 } });
    const a = adapter.connect({ protocolVersion: '2025-11-25' });
    const b = adapter.connect({ protocolVersion: '2025-11-25' });
    await prepare(a);
    await prepare(a);
    errorOf(await a.callTool('intent_prepare', SEED_ARGS), 'CAPACITY_EXCEEDED');
    await prepare(b);
    await prepare(b);
    const live = adapter.snapshot().sessions.map((s) => s.live.length);
    expect(live).toEqual([2, 2]);
  });

  it('[S04-CLOSE] session.close(): later calls give SESSION_CLOSED, waiters too, retained replies are dropped; idempotent', async () => {
    const adapter = hostAdapter();
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const other = adapter.connect({ protocolVersion: '2025-11-25' });
    const done = await prepare(session);
    successOf(await session.callTool('intent_accept', acceptArgs(done, SEED_CANDIDATE)), '2025-11-25');
    const otherDone = await prepare(other);
    successOf(await other.callTool('intent_accept', acceptArgs(otherDone, SEED_CANDIDATE)), '2025-11-25');
    expect(
      adapter
        .snapshot()
        .retained.map((r) => r.requestId)
        .sort(),
    ).toEqual([done.requestId, otherDone.requestId].sort());

    const waiting = await prepare(session);
    const waiter = session.callTool('intent_accept', {
      requestId: waiting.requestId,
      submissionToken: waiting.submissionToken,
      candidateText: SEED_CANDIDATE,
    });
    await session.close();
    errorOf(await waiter, 'SESSION_CLOSED');

    for (const [tool, args] of [
      ['intent_prepare', SEED_ARGS],
      [
        'intent_accept',
        { requestId: done.requestId, submissionToken: done.submissionToken, candidateText: SEED_CANDIDATE },
      ],
      ['intent_cancel', { requestId: done.requestId }],
    ] as const) {
      const error = errorOf(await session.callTool(tool, args), 'SESSION_CLOSED');
      expect(error.category).toBe('handoff');
    }
    const snapshot = adapter.snapshot();
    expect(snapshot.retained.map((r) => r.requestId)).toEqual([otherDone.requestId]);
    expect(snapshot.sessions.filter((s) => s.id === session.id && !s.closed)).toEqual([]);
    await session.close();

    // The other session is untouched.
    successOf(await other.callTool('intent_accept', acceptArgs(otherDone, SEED_CANDIDATE)), '2025-11-25');
  });

  it('session.close() ends an intent_parse waiting on its executor with SESSION_CLOSED and aborts the executor', async () => {
    const { executor, called, aborted } = hangingExecutor();
    const adapter = createIntentMcpAdapter({ instances: { main: new Intent({ executor }) } });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const running = session.callTool('intent_parse', SEED_ARGS);
    const signal = await called;
    expect(signal.aborted).toBe(false);
    await session.close();
    expect((await aborted).aborted).toBe(true);
    errorOf(await running, 'SESSION_CLOSED');
    errorOf(await session.callTool('intent_parse', SEED_ARGS), 'SESSION_CLOSED');
    expect(executor).toHaveBeenCalledTimes(1);
  });

  it("[S04-CLOSE] adapter.close() closes every session, refuses new ones, and leaves the caller's Intents usable", async () => {
    const { executor } = scriptedExecutor(SEED_CANDIDATE, SEED_CANDIDATE);
    const intent = new Intent({ executor });
    const adapter = createIntentMcpAdapter({ instances: { main: intent } });
    const a = adapter.connect({ protocolVersion: '2025-11-25' });
    const b = adapter.connect({ protocolVersion: '2026-07-28' });
    successOf(await a.callTool('intent_parse', SEED_ARGS), '2025-11-25');

    await adapter.close();
    errorOf(await a.callTool('intent_parse', SEED_ARGS), 'SESSION_CLOSED');
    errorOf(await b.callTool('intent_parse', SEED_ARGS), 'SESSION_CLOSED', '2026-07-28');
    expect(adapter.snapshot().sessions.filter((s) => !s.closed)).toEqual([]);
    expect(() => adapter.connect({ protocolVersion: '2025-11-25' })).toThrow(IntentError);
    await adapter.close();

    expect(intent.disposed).toBe(false);
    expect(await intent.parse(SEED_ARGS)).toEqual(SEED_REPLY.structuredContent);
    expect(executor).toHaveBeenCalledTimes(2);
  });

  it('adapter.close() in host mode cancels live requests; waiters get SESSION_CLOSED', async () => {
    const adapter = hostAdapter();
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const task = await prepare(session);
    const waiter = session.callTool('intent_accept', {
      requestId: task.requestId,
      submissionToken: task.submissionToken,
      candidateText: SEED_CANDIDATE,
    });
    await adapter.close();
    errorOf(await waiter, 'SESSION_CLOSED');
    expect(adapter.snapshot().sessions.flatMap((s) => s.live)).toEqual([]);
  });
});

describe('options.signal and options.timeoutMs [SEED-SIGNAL]', () => {
  it('[SEED-SIGNAL] aborting intent_parse cancels the recognition with ABORTED and aborts the executor call', async () => {
    const { executor, called, aborted } = hangingExecutor();
    const adapter = createIntentMcpAdapter({ instances: { main: new Intent({ executor }) } });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const controller = new AbortController();
    const running = session.callTool('intent_parse', SEED_ARGS, { signal: controller.signal });
    await called;
    controller.abort();
    const error = errorOf(await running, 'ABORTED');
    expect(error.category).toBe('cancelled');
    expect((await aborted).aborted).toBe(true);
    expect(adapter.snapshot().sessions.flatMap((s) => s.live)).toEqual([]);

    const before = new AbortController();
    before.abort();
    errorOf(await session.callTool('intent_parse', SEED_ARGS, { signal: before.signal }), 'ABORTED');
    expect(executor).toHaveBeenCalledTimes(1);
  });

  it('[SEED-SIGNAL] intent_parse past its timeoutMs on the simulated clock is TIMEOUT and aborts the executor', async () => {
    const clock = new SimulatedClock();
    clock.set(Date.parse('2026-11-02T09:30:00.000Z'));
    const { executor, called, aborted } = hangingExecutor();
    const adapter = createIntentMcpAdapter({ instances: { main: new Intent({ executor }) }, clock });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const running = session.callTool('intent_parse', SEED_ARGS, { timeoutMs: 2_000 });
    await called;
    clock.increment(1_999);
    expect(adapter.snapshot().sessions.flatMap((s) => s.live)).toHaveLength(1);
    clock.increment(1);
    const error = errorOf(await running, 'TIMEOUT');
    expect(error.category).toBe('timeout');
    expect(error.retryable).toBe(true);
    expect((await aborted).aborted).toBe(true);
  });

  it('[SEED-SIGNAL] aborting intent_accept stops only that caller; the validation runs on and its result replays', async () => {
    const adapter = hostAdapter();
    let validations = 0;
    adapter.inspect((t) => {
      if (t.event === 'VALIDATED') validations += 1;
    });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const task = await prepare(session);
    const controller = new AbortController();
    const waiting = session.callTool('intent_accept', acceptArgs(task, SEED_CANDIDATE), { signal: controller.signal });
    const joiner = session.callTool('intent_accept', acceptArgs(task, SEED_CANDIDATE));
    controller.abort();
    const error = errorOf(await waiting, 'ABORTED');
    expect(error.requestId).toBe(task.requestId);
    const joined = await joiner;
    expect(joined?.content[0].text).toBe(SEED_RESULT_TEXT);
    expect((await session.callTool('intent_accept', acceptArgs(task, SEED_CANDIDATE)))?.content[0].text).toBe(
      SEED_RESULT_TEXT,
    );
    expect(validations).toBe(1);
  });
});

describe('host mode never calls a model [SEED-HOST-NO-MODEL]', () => {
  it('a whole handoff, corrections, cancels and closing never invoke the instance executor', async () => {
    const executor = forbiddenExecutor();
    const intent = new Intent({ executor });
    const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: intent } });
    const session = adapter.connect({ protocolVersion: '2026-07-28' });

    const task = await prepare(session, SEED_ARGS, '2026-07-28');
    const accept = (candidateText: string) =>
      session.callTool('intent_accept', {
        requestId: task.requestId,
        submissionToken: task.submissionToken,
        candidateText,
      });
    errorOf(await accept(INVALID_CANDIDATE), 'CANDIDATE_INVALID', '2026-07-28');
    successOf(await accept(SEED_CANDIDATE), '2026-07-28');
    successOf(await accept(SEED_CANDIDATE), '2026-07-28');

    const refused = await prepare(session, SEED_ARGS, '2026-07-28');
    successOf(
      await session.callTool('intent_cancel', { requestId: refused.requestId, reason: 'refusal' }),
      '2026-07-28',
    );
    const truncated = await prepare(session, SEED_ARGS, '2026-07-28', { timeoutMs: 60_000 });
    successOf(
      await session.callTool('intent_cancel', { requestId: truncated.requestId, reason: 'incomplete' }),
      '2026-07-28',
    );
    await prepare(session, SEED_ARGS, '2026-07-28');
    expect(await session.callTool('intent_parse', SEED_ARGS)).toBe(undefined);
    await adapter.close();

    expect(executor).not.toHaveBeenCalled();
    expect(intent.disposed).toBe(false);
  });
});

describe('the adapter API [SEED-ADAPTER-API]', () => {
  it("[SEED-ADAPTER-API] is exported from the package entry with the seed's shape", async () => {
    expect(api.createIntentMcpAdapter).toBe(createIntentMcpAdapter);
    expect(typeof api.mountIntentMcpTools).toBe('function');
    expect(api.PROTOCOL_VERSIONS).toEqual(['2025-06-18', '2025-11-25', '2026-07-28']);

    const adapter = api.createIntentMcpAdapter({ mode: 'host', instances: { main: new api.Intent({}) } });
    expect(Array.isArray(adapter.tools)).toBe(true);
    expect(typeof adapter.connect).toBe('function');
    expect(typeof adapter.close).toBe('function');
    const session = adapter.connect({ protocolVersion: '2025-11-25', label: 'inspector label' });
    expect(typeof session.id).toBe('string');
    expect(session.id.length).toBeGreaterThan(0);
    const pending = session.callTool('intent_prepare', SEED_ARGS, { signal: new AbortController().signal });
    expect(pending).toBeInstanceOf(Promise);
    successOf(await pending, '2025-11-25');
    const closing = session.close();
    expect(closing).toBeInstanceOf(Promise);
    await expect(closing).resolves.toBeUndefined();
    const closingAdapter = adapter.close();
    expect(closingAdapter).toBeInstanceOf(Promise);
    await expect(closingAdapter).resolves.toBeUndefined();
  });
});
