import { readFileSync } from 'node:fs';
import { inspect } from 'node:util';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { IntentError } from '../../src/core/errors.js';
import type { ExecutorContext, IntentExecutor } from '../../src/core/executor.js';
import type { ModelTask } from '../../src/core/schemas.js';
import { answerLimitOf, createOpenAICompatibleExecutor } from '../../src/executors/openaiCompatible.js';
import { Intent } from '../../src/intent.js';
import { closedPortBaseUrl, startFakeOpenAI, stopFakeOpenAI, type FakeOpenAI } from '../support/fakeOpenAI.js';
import { thrownBy, rejectionOf } from '../support/intentErrors.js';

const fixture = (name: string): string => readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8');
const SEED_ARGS = (JSON.parse(fixture('seed-executor-request.json')) as { params: { arguments: { input: string } } })
  .params.arguments;
const SEED_CANDIDATE = fixture('seed-candidate.json');
const SEED_TEXT = (JSON.parse(fixture('seed-executor-reply.json')) as { content: [{ text: string }] }).content[0].text;
/** The seed candidate with a value outside an enum: a correctable format error. */
const BAD_CANDIDATE = (() => {
  const candidate = JSON.parse(SEED_CANDIDATE) as { intents: { understanding: string }[] };
  candidate.intents[0]!.understanding = 'certain';
  return JSON.stringify(candidate);
})();

const KEY_ENV = 'INTENT_TEST_OPENAI_KEY';
const KEY = 'sk-test-Zq8sV3cretV4lue-0123456789';
const ENV = { [KEY_ENV]: KEY };

type Config = Parameters<typeof createOpenAICompatibleExecutor>[0];

let fake: FakeOpenAI;
beforeEach(async () => {
  fake = await startFakeOpenAI();
});
afterEach(async () => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
  await stopFakeOpenAI(fake);
});

function configFor(overrides: Partial<Config> = {}): Config {
  return {
    kind: 'openai-compatible',
    baseUrl: fake.baseUrl,
    model: 'test-model',
    apiKeyEnv: KEY_ENV,
    temperature: 0,
    maxRetries: 0,
    ...overrides,
  };
}

/** An Intent whose executor is the OpenAI-compatible one, with every task and context it was given recorded. */
function intentFor(config: Config, options: Parameters<typeof createOpenAICompatibleExecutor>[1] = { env: ENV }) {
  const inner = createOpenAICompatibleExecutor(config, options);
  const calls: { task: ModelTask; ctx: ExecutorContext }[] = [];
  const executor: IntentExecutor = (task, ctx) => {
    calls.push({ task, ctx });
    return inner(task, ctx);
  };
  return { intent: new Intent({ executor }), calls };
}

/** Everything an error shows: its wire form, its message and its string form. */
/** Everything a user could print of an error, its causes included (`console.error` prints what `inspect` does). */
const shown = (error: IntentError): string =>
  `${JSON.stringify(error)}\n${error.message}\n${String(error)}\n${inspect(error, { depth: 10 })}`;

describe('createOpenAICompatibleExecutor: requests', () => {
  it('turns the seed request into the fixture reply, byte for byte, through a real HTTP endpoint', async () => {
    fake.reply({ content: SEED_CANDIDATE });
    const { intent, calls } = intentFor(configFor());
    const result = await intent.parse(SEED_ARGS);
    expect(JSON.stringify(result)).toBe(SEED_TEXT);

    expect(fake.requests).toHaveLength(1);
    const [sent] = fake.requests;
    const task = calls[0]!.task;
    expect(sent!.method).toBe('POST');
    expect(sent!.url).toBe('/v1/chat/completions');
    expect(sent!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(sent!.body.model).toBe('test-model');
    expect(sent!.body.temperature).toBe(0);
    expect(sent!.body.messages).toEqual([
      { role: 'system', content: task.instructions },
      { role: 'user', content: JSON.stringify(task.input) },
    ]);
    expect(sent!.body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'intent_candidate', strict: true, schema: task.outputSchema },
    });
    expect(sent!.body.stream).toBeUndefined();
  });

  it('applies the schema defaults and reads nothing from the OPENAI_* environment', async () => {
    vi.stubEnv('OPENAI_API_KEY', 'sk-from-process-env');
    vi.stubEnv('OPENAI_ORG_ID', 'org-from-env');
    vi.stubEnv('OPENAI_PROJECT_ID', 'proj-from-env');
    vi.stubEnv('OPENAI_BASE_URL', 'http://127.0.0.1:9/v1');
    vi.stubEnv('OPENAI_CUSTOM_HEADERS', 'X-Leak: from-env\nAuthorization: Bearer from-env');
    fake.reply({ content: SEED_CANDIDATE });
    const { intent } = intentFor({ kind: 'openai-compatible', baseUrl: fake.baseUrl, model: 'm' }, { env: {} });
    await intent.parse(SEED_ARGS);
    const [sent] = fake.requests;
    expect(sent!.headers.authorization).toBe('Bearer not-needed');
    expect(sent!.headers['openai-organization']).toBeUndefined();
    expect(sent!.headers['openai-project']).toBeUndefined();
    expect(sent!.headers['x-leak']).toBeUndefined();
    expect('temperature' in sent!.body).toBe(false);
    expect(sent!.body.response_format?.type).toBe('json_schema');
  });

  it.each(['json_object', 'text'] as const)(
    'with responseFormat %s sends the outputSchema in the prompt',
    async (format) => {
      fake.reply({ content: SEED_CANDIDATE });
      const { intent, calls } = intentFor(configFor({ responseFormat: format }));
      expect(JSON.stringify(await intent.parse(SEED_ARGS))).toBe(SEED_TEXT);
      const task = calls[0]!.task;
      const body = fake.requests[0]!.body;
      if (format === 'json_object') expect(body.response_format).toEqual({ type: 'json_object' });
      else expect(body.response_format).toBeUndefined();
      expect(body.messages).toHaveLength(2);
      expect(body.messages![0]).toEqual({ role: 'system', content: task.instructions });
      const user = body.messages![1]!;
      expect(user.role).toBe('user');
      expect(user.content.startsWith(JSON.stringify(task.input))).toBe(true);
      expect(user.content).toContain(JSON.stringify(task.outputSchema));
    },
  );

  it('after a format error sends the previous candidate back with the feedback issues, then succeeds', async () => {
    fake.reply({ content: BAD_CANDIDATE }, { content: SEED_CANDIDATE });
    const { intent, calls } = intentFor(configFor());
    expect(JSON.stringify(await intent.parse(SEED_ARGS))).toBe(SEED_TEXT);

    expect(fake.requests).toHaveLength(2);
    const feedback = calls[1]!.ctx.feedback!;
    expect(feedback.candidateText).toBe(BAD_CANDIDATE);
    expect(feedback.issues.some((i) => i.path === '/intents/0/understanding')).toBe(true);
    const [first, second] = fake.requests.map((r) => r.body.messages!);
    expect(second!.slice(0, 2)).toEqual(first);
    expect(second![2]).toEqual({ role: 'assistant', content: BAD_CANDIDATE });
    expect(second![3]!.role).toBe('user');
    for (const issue of feedback.issues) expect(second![3]!.content).toContain(`${issue.path}: ${issue.message}`);
    expect(second![3]!.content).toMatch(/whole corrected JSON document/);
    expect(second).toHaveLength(4);
    expect(fake.requests[1]!.body.response_format).toEqual(fake.requests[0]!.body.response_format);
  });

  it('lets the client retry a 500 (maxRetries 1): the endpoint sees two requests and the call succeeds', async () => {
    fake.reply({ status: 500 }, { content: SEED_CANDIDATE });
    const { intent } = intentFor(configFor({ maxRetries: 1 }));
    expect(JSON.stringify(await intent.parse(SEED_ARGS))).toBe(SEED_TEXT);
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[1]!.headers['x-stainless-retry-count']).toBe('1');
  });

  it('uses the fetch passed in options', async () => {
    fake.reply({ content: SEED_CANDIDATE });
    const spy = vi.fn<typeof fetch>((input, init) => fetch(input, init));
    const { intent } = intentFor(configFor(), { env: ENV, fetch: spy });
    await intent.parse(SEED_ARGS);
    expect(spy).toHaveBeenCalledTimes(1);
  });
});

describe('createOpenAICompatibleExecutor: failures', () => {
  it.each([
    [429, true],
    [500, true],
    [503, true],
    [400, false],
    [401, false],
    [404, false],
    [422, false],
  ])(
    '[S06-EXECUTOR-FAILED] HTTP %i with maxRetries 0 is EXECUTOR_FAILED, retryable %s, with details.status',
    async (status, retryable) => {
      fake.reply({ status });
      const { intent } = intentFor(configFor());
      const error = await rejectionOf(intent.parse(SEED_ARGS));
      expect(error.code).toBe('EXECUTOR_FAILED');
      expect(error.category).toBe('executor');
      expect(error.retryable).toBe(retryable);
      expect(error.details).toEqual({ status });
      expect(fake.requests).toHaveLength(1);
    },
  );

  it('[S06-EXECUTOR-FAILED] a 400 is not retried by the client even with maxRetries 2', async () => {
    fake.reply({ status: 400 }, { content: SEED_CANDIDATE });
    const { intent } = intentFor(configFor({ maxRetries: 2 }));
    const error = await rejectionOf(intent.parse(SEED_ARGS));
    expect([error.code, error.retryable, error.details]).toEqual(['EXECUTOR_FAILED', false, { status: 400 }]);
    expect(fake.requests).toHaveLength(1);
  });

  it('[S06-EXECUTOR-FAILED] a 429 after the retries are spent says how many attempts were made', async () => {
    fake.reply({ status: 429 }, { status: 429 });
    const { intent } = intentFor(configFor({ maxRetries: 1 }));
    const error = await rejectionOf(intent.parse(SEED_ARGS));
    expect([error.code, error.retryable, error.details]).toEqual(['EXECUTOR_FAILED', true, { status: 429 }]);
    expect(error.message).toMatch(/after 2 attempts/);
    expect(fake.requests).toHaveLength(2);
  });

  it('[S06-EXECUTOR-FAILED] connection refused is a retryable EXECUTOR_FAILED', async () => {
    const { intent } = intentFor(configFor({ baseUrl: await closedPortBaseUrl() }));
    const error = await rejectionOf(intent.parse(SEED_ARGS));
    expect(error.code).toBe('EXECUTOR_FAILED');
    expect(error.retryable).toBe(true);
    expect(error.details).toEqual({ code: 'ECONNREFUSED' });
    expect(error.details?.['status']).toBeUndefined();
  });

  it('[S06-EXECUTOR-FAILED] an endpoint that does not answer within timeoutMs is a retryable EXECUTOR_FAILED', async () => {
    fake.reply({ hang: true });
    const { intent } = intentFor(configFor({ timeoutMs: 100 }));
    const error = await rejectionOf(intent.parse(SEED_ARGS));
    expect(error.code).toBe('EXECUTOR_FAILED');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('100 ms');
    await fake.requests[0]!.closedByClient;
  });

  it.each([
    ['a refusal', { content: null, refusal: 'I cannot help with that.' }, /refused/],
    ['empty content', { content: '' }, /empty content/],
    ['no content, cut off', { content: null, finishReason: 'length' }, /cut off/],
  ])('%s is a non-retryable EXECUTOR_FAILED', async (_name, reply, message) => {
    fake.reply(reply);
    const { intent } = intentFor(configFor());
    const error = await rejectionOf(intent.parse(SEED_ARGS));
    expect([error.code, error.retryable]).toEqual(['EXECUTOR_FAILED', false]);
    expect(error.message).toMatch(message);
    expect(shown(error)).not.toContain('I cannot help');
    expect(fake.requests).toHaveLength(1);
  });

  it('[S06-EXECUTOR-FAILED] an answer larger than the answer limit (a gzip bomb) stops being read there: EXECUTOR_FAILED', async () => {
    // 64 MiB of spaces inside a completion's content, gzipped to ~64 KB: the transport unpacks it as it is read.
    const completion = `{"choices":[{"index":0,"message":{"role":"assistant","content":"${' '.repeat(64 * 1024 * 1024)}"}}]}`;
    const bomb = gzipSync(completion);
    expect(bomb.length).toBeLessThan(256 * 1024);
    fake.reply({ raw: bomb, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
    const { intent } = intentFor(configFor({ maxTokens: 1000 }));
    const error = await rejectionOf(intent.parse(SEED_ARGS));
    expect([error.code, error.retryable]).toEqual(['EXECUTOR_FAILED', false]);
    expect(error.details).toEqual({ limit: answerLimitOf(1000) });
    expect(answerLimitOf(1000)).toBe(1024 * 1024);
    expect(answerLimitOf(100_000)).toBe(6_400_000);
    expect(error.message).toMatch(/larger than 1048576 bytes/);
  });

  it.each([
    [{ 'retry-after': '999999999' }],
    [{ 'retry-after': 'Wed, 01 Jan 2099 00:00:00 GMT' }],
    [{ 'retry-after': 'soon, perhaps' }],
    // The client reads a zero retry-after-ms as absent and sleeps the Retry-After instead.
    [{ 'retry-after-ms': '0', 'retry-after': '999999999' }],
    [{ 'retry-after-ms': '1e308' }],
  ])(
    '[S06-EXECUTOR-FAILED] a 429 asking to wait %o (past the budget, or unreadable) is not retried at once: one request, retryable',
    async (headers) => {
      fake.reply({ status: 429, headers }, { content: SEED_CANDIDATE });
      const { intent } = intentFor(configFor({ maxRetries: 2 }));
      const error = await rejectionOf(intent.parse(SEED_ARGS));
      expect([error.code, error.retryable, error.details]).toEqual(['EXECUTOR_FAILED', true, { status: 429 }]);
      expect(error.message).toMatch(/asked to wait longer than executor.timeoutMs/);
      expect(fake.requests).toHaveLength(1);
    },
  );

  it.each([[new Date(Date.now() - 5000).toUTCString()], [new Date().toUTCString()], ['-5']])(
    'a 429 whose Retry-After is already past (%s) is retried at once, as the endpoint allows',
    async (retryAfter) => {
      fake.reply({ status: 429, headers: { 'retry-after': retryAfter } }, { content: SEED_CANDIDATE });
      const { intent } = intentFor(configFor({ maxRetries: 1 }));
      await intent.parse(SEED_ARGS);
      expect(fake.requests).toHaveLength(2);
    },
  );

  it('a 429 asking to wait within the budget is retried after that wait, as the endpoint asked', async () => {
    fake.reply({ status: 429, headers: { 'retry-after-ms': '20' } }, { content: SEED_CANDIDATE });
    const { intent } = intentFor(configFor({ maxRetries: 1 }));
    await intent.parse(SEED_ARGS);
    expect(fake.requests).toHaveLength(2);
  });

  it('a 200 that is not a chat completion is a non-retryable EXECUTOR_FAILED', async () => {
    fake.reply({ status: 200, body: { object: 'list', data: [] } });
    const { intent } = intentFor(configFor());
    const error = await rejectionOf(intent.parse(SEED_ARGS));
    expect([error.code, error.retryable]).toEqual(['EXECUTOR_FAILED', false]);
    expect(error.message).toMatch(/without any choice/);
  });
});

describe('createOpenAICompatibleExecutor: aborts', () => {
  it('an aborted parse signal is ABORTED and closes the connection to the endpoint', async () => {
    fake.reply({ hang: true });
    const { intent } = intentFor(configFor());
    const controller = new AbortController();
    const parsing = rejectionOf(intent.parse(SEED_ARGS, { signal: controller.signal }));
    const sent = await fake.request(1);
    controller.abort();
    const error = await parsing;
    expect(error.code).toBe('ABORTED');
    await sent.closedByClient;
    expect(fake.requests).toHaveLength(1);
  });

  it('an abort during the client’s retry back-off ends the call at once', async () => {
    fake.reply({ status: 429, headers: { 'retry-after': '3' } }, { content: SEED_CANDIDATE });
    let responded!: () => void;
    const firstResponse = new Promise<void>((resolve) => {
      responded = resolve;
    });
    const timedFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      responded();
      return response;
    };
    const { intent } = intentFor(configFor({ maxRetries: 1 }), { env: ENV, fetch: timedFetch });
    const controller = new AbortController();
    const parsing = rejectionOf(intent.parse(SEED_ARGS, { signal: controller.signal }));
    await firstResponse;
    await new Promise((resolve) => setImmediate(resolve));
    const start = performance.now();
    controller.abort();
    const error = await parsing;
    expect(error.code).toBe('ABORTED');
    expect(performance.now() - start).toBeLessThan(1000);
    expect(fake.requests).toHaveLength(1);
  });

  it('called directly with an aborted signal, the executor rejects with the abort itself', async () => {
    const executor = createOpenAICompatibleExecutor(configFor(), { env: ENV });
    const controller = new AbortController();
    const reason = new Error('stop');
    controller.abort(reason);
    const task: ModelTask = { instructions: 'x', input: {} as ModelTask['input'], outputSchema: { type: 'object' } };
    await expect(executor(task, { signal: controller.signal })).rejects.toBe(reason);
  });
});

describe('createOpenAICompatibleExecutor: configuration and secrets', () => {
  it('an apiKeyEnv naming a missing variable is CONFIG_INVALID naming the variable', () => {
    vi.stubEnv('INTENT_TEST_MISSING_KEY', 'sk-only-in-process-env');
    const error = thrownBy(() =>
      createOpenAICompatibleExecutor(configFor({ apiKeyEnv: 'INTENT_TEST_MISSING_KEY' }), { env: {} }),
    );
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.category).toBe('config');
    expect(error.message).toContain('INTENT_TEST_MISSING_KEY');
    expect(shown(error)).not.toContain('sk-only-in-process-env');
  });

  it('an apiKeyEnv naming an empty variable is CONFIG_INVALID naming the variable', () => {
    const error = thrownBy(() => createOpenAICompatibleExecutor(configFor(), { env: { [KEY_ENV]: '  ' } }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain(KEY_ENV);
  });

  it('reads the key from process.env when no env is passed', async () => {
    vi.stubEnv(KEY_ENV, KEY);
    fake.reply({ content: SEED_CANDIDATE });
    const { intent } = intentFor(configFor(), {});
    await intent.parse(SEED_ARGS);
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('[S06-NO-LEAK] a key that cannot go in a header is CONFIG_INVALID without its value', () => {
    const bad = 'sk-line1\nsk-line2-secret';
    const error = thrownBy(() => createOpenAICompatibleExecutor(configFor(), { env: { [KEY_ENV]: bad } }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(shown(error)).not.toContain('sk-line2-secret');
  });

  it.each([
    ['a wrong kind', { kind: 'anthropic' }, 'executor/kind'],
    ['a literal apiKey', { apiKey: 'sk-literal' }, 'executor'],
    ['a bad baseUrl', { baseUrl: 'ftp://example.com' }, 'executor/baseUrl'],
    ['a negative maxRetries', { maxRetries: -1 }, 'executor/maxRetries'],
  ])('%s is CONFIG_INVALID naming the path', (_name, overrides, path) => {
    const error = thrownBy(() => createOpenAICompatibleExecutor(configFor(overrides as Partial<Config>), { env: ENV }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain(`at ${path}`);
    expect(shown(error)).not.toContain('sk-literal');
  });

  it('[S06-NO-LEAK] a baseUrl with user:pass@ is CONFIG_INVALID and the password appears nowhere', () => {
    const baseUrl = fake.baseUrl.replace('http://', 'http://alice:Pa55w0rdSecret@');
    const error = thrownBy(() => createOpenAICompatibleExecutor(configFor({ baseUrl }), { env: ENV }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('executor/baseUrl');
    expect(shown(error)).not.toContain('Pa55w0rdSecret');
    expect(shown(error)).not.toContain('alice');
    expect(fake.requests).toHaveLength(0);
  });

  it('[S06-NO-LEAK] an endpoint error echoing the key shows neither the key, the header nor the URL', async () => {
    fake.reply({
      status: 401,
      body: { error: { message: `Incorrect API key provided: ${KEY}. Authorization: Bearer ${KEY}`, code: KEY } },
    });
    const { intent } = intentFor(configFor());
    const error = await rejectionOf(intent.parse(SEED_ARGS));
    expect(error.code).toBe('EXECUTOR_FAILED');
    expect(error.details).toEqual({ status: 401 });
    for (const secret of [KEY, 'Bearer', fake.baseUrl, '127.0.0.1']) expect(shown(error)).not.toContain(secret);
  });

  it('[S06-NO-LEAK] network and timeout errors show neither the key nor the URL', async () => {
    const closed = await closedPortBaseUrl();
    const refused = await rejectionOf(intentFor(configFor({ baseUrl: closed })).intent.parse(SEED_ARGS));
    fake.reply({ hang: true });
    const timedOut = await rejectionOf(intentFor(configFor({ timeoutMs: 50 })).intent.parse(SEED_ARGS));
    for (const error of [refused, timedOut]) {
      expect(error.code).toBe('EXECUTOR_FAILED');
      for (const secret of [KEY, closed, fake.baseUrl, '127.0.0.1']) expect(shown(error)).not.toContain(secret);
    }
  });

  it('never writes to stdout, stderr or the console, even with OPENAI_LOG=debug', async () => {
    vi.stubEnv('OPENAI_LOG', 'debug');
    const writes = [
      vi.spyOn(process.stdout, 'write'),
      vi.spyOn(process.stderr, 'write'),
      ...(['log', 'info', 'warn', 'error', 'debug'] as const).map((m) => vi.spyOn(console, m)),
    ];
    fake.reply({ status: 500 }, { content: SEED_CANDIDATE }, { status: 400 });
    const { intent } = intentFor(configFor({ maxRetries: 1 }));
    await intent.parse(SEED_ARGS);
    await rejectionOf(intent.parse(SEED_ARGS));
    for (const spy of writes) expect(spy).not.toHaveBeenCalled();
  });
});

describe('executor limits: max_tokens, one budget for the whole call, progress (issue 13)', () => {
  it('[I13-MAX-TOKENS] sends max_tokens: 4096 by default, the configured maxTokens otherwise', async () => {
    fake.reply({ content: SEED_CANDIDATE }, { content: SEED_CANDIDATE });
    await intentFor(configFor()).intent.parse(SEED_ARGS);
    await intentFor(configFor({ maxTokens: 123 })).intent.parse(SEED_ARGS);
    expect(fake.requests.map((r) => r.body['max_tokens'])).toEqual([4096, 123]);
    expect(thrownBy(() => createOpenAICompatibleExecutor(configFor({ maxTokens: 0 }), { env: ENV }))).toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining('executor/maxTokens') as unknown,
    });
  });

  it('[I13-WHOLE-CALL-TIMEOUT] a never-ending answer with retries left ends at timeoutMs in total: the endpoint sees the request aborted', async () => {
    fake.reply({ hang: true }, { hang: true }, { hang: true });
    const error = await rejectionOf(intentFor(configFor({ timeoutMs: 200, maxRetries: 2 })).intent.parse(SEED_ARGS));
    expect(error).toMatchObject({ code: 'EXECUTOR_FAILED', retryable: true });
    // The budget's own message (the client's per-attempt timeout would have retried twice first and said so).
    expect(error.message).toMatch(/within 200 ms \(up to 3 attempts included\)/);
    await Promise.all(fake.requests.map((r) => r.closedByClient));
    expect(fake.requests.length).toBeLessThan(3);
  });

  it('[I13-WHOLE-CALL-TIMEOUT] Intent.parse timeoutMs bounds the correction call too: TIMEOUT, and the correction request is aborted', async () => {
    fake.reply({ content: BAD_CANDIDATE }, { hang: true });
    const { intent } = intentFor(configFor({ timeoutMs: 60_000, maxRetries: 2 }));
    const error = await rejectionOf(intent.parse(SEED_ARGS, { timeoutMs: 300 }));
    expect(error.code).toBe('TIMEOUT');
    const second = await fake.request(2);
    await second.closedByClient;
    expect(fake.requests).toHaveLength(2);
  });

  it('[I13-WHOLE-CALL-TIMEOUT] the command makes executor.timeoutMs the deadline of the whole intent_parse, correction included', async () => {
    const { buildAdapter, resolveServe } = await import('../../src/server/app.js');
    const { writeConfig, configDir } = await import('../support/serverProcess.js');
    const file = writeConfig(configDir(), 'budget.json', {
      mode: 'executor',
      instances: {
        main: { executor: { kind: 'openai-compatible', baseUrl: fake.baseUrl, model: 'm', timeoutMs: 300 } },
      },
    });
    const adapter = buildAdapter(resolveServe({ config: file }));
    try {
      fake.reply({ content: BAD_CANDIDATE }, { hang: true });
      const session = adapter.connect({ protocolVersion: '2025-11-25' });
      const result = await session.callTool('intent_parse', SEED_ARGS);
      expect(result?.isError).toBe(true);
      expect(JSON.parse((result?.content[0] as { text: string }).text)).toMatchObject({
        error: { code: 'TIMEOUT', message: expect.stringContaining('300 ms') as unknown },
      });
      await (
        await fake.request(2)
      ).closedByClient;
    } finally {
      await adapter.close();
    }
  });
});
