import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { SimulatedClock } from 'xstate';
import { describe, expect, it, vi } from 'vitest';
import type { ExecutorContext, IntentExecutor } from '../src/core/executor.js';
import { IntentResultSchema, ModelTaskSchema, type ModelTask } from '../src/core/schemas.js';
import { Intent, type IntentOptions } from '../src/intent.js';
import { createIntentMcpAdapter } from '../src/mcp/adapter.js';
import { thrownBy, rejectionOf } from './support/intentErrors.js';

const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const SEED_CANDIDATE = fixture('seed-candidate.json');
const SEED_REQUEST = (JSON.parse(fixture('seed-executor-request.json')) as { params: { arguments: { input: string } } })
  .params.arguments;
const SEED_RESULT = (JSON.parse(fixture('seed-executor-reply.json')) as { structuredContent: unknown })
  .structuredContent;
const CJK = /[\u4e00-\u9fff]/u;

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** An executor answering from a script, one text per call; records what it was given. */
function scripted(...texts: string[]) {
  const calls: { task: ModelTask; ctx: ExecutorContext }[] = [];
  const executor = vi.fn<IntentExecutor>((task, ctx) => {
    calls.push({ task, ctx });
    const text = texts[calls.length - 1];
    return text === undefined ? Promise.reject(new Error('script exhausted')) : Promise.resolve(text);
  });
  return { executor, calls };
}

describe('new Intent(options)', () => {
  const bad: [string, unknown, string][] = [
    ['options that are null', null, 'options'],
    ['options that are a string', 'main', 'options'],
    ['options that are an array', [{}], 'options'],
    ['an unknown key', { mode: 'host' }, 'options/mode'],
    ['a bad language', { language: 'fr' }, 'options/language'],
    ['a negative timeoutMs', { timeoutMs: -1 }, 'options/timeoutMs'],
    ['a fractional timeoutMs', { timeoutMs: 2.5 }, 'options/timeoutMs'],
    ['limits that are not an object', { limits: 5 }, 'options/limits'],
    ['a zero maxInputChars', { limits: { maxInputChars: 0 } }, 'options/limits/maxInputChars'],
    ['an unknown limit', { limits: { maxTokens: 10 } }, 'options/limits/maxTokens'],
    ['domains that are not strings', { domains: [1] }, 'options/domains/0'],
    ['a schema without fields', { schema: {} }, 'options/schema/fields'],
    ['a field name with a space', { schema: { fields: { 'a b': { type: 'string' } } } }, 'options/schema/fields/a b'],
    ['the field name constructor', { schema: { fields: { constructor: { type: 'string' } } } }, 'constructor'],
    ['an unknown field type', { schema: { fields: { f: { type: 'money' } } } }, 'options/schema/fields/f/type'],
    ['an enum field without enum', { schema: { fields: { f: { type: 'enum' } } } }, 'options/schema/fields/f/enum'],
    [
      'enum on a string field',
      { schema: { fields: { f: { type: 'string', enum: ['a'] } } } },
      'options/schema/fields/f/enum',
    ],
    [
      'an invalid regex pattern',
      { schema: { fields: { f: { type: 'string', pattern: '([a-z]' } } } },
      'options/schema/fields/f/pattern',
    ],
    [
      'a pattern on an integer field',
      { schema: { fields: { f: { type: 'integer', pattern: '^1$' } } } },
      'options/schema/fields/f/pattern',
    ],
    [
      'minimum greater than maximum',
      { schema: { fields: { f: { type: 'number', minimum: 5, maximum: 1 } } } },
      'options/schema/fields/f/minimum',
    ],
    [
      'a default that breaks its own pattern',
      { schema: { fields: { f: { type: 'string', pattern: '^[0-9]+$', default: 'abc' } } } },
      'options/schema/fields/f/default',
    ],
    [
      'a default of the wrong type',
      { schema: { fields: { f: { type: 'integer', default: '3' } } } },
      'options/schema/fields/f/default',
    ],
    [
      'a default outside the enum',
      { schema: { fields: { f: { type: 'enum', enum: ['a', 'b'], default: 'c' } } } },
      'options/schema/fields/f/default',
    ],
    ['an executor that is not a function', { executor: { kind: 'openai-compatible' } }, 'options/executor'],
  ];

  it.each(bad)('[S02-CONFIG] [S06-THROWN] throws CONFIG_INVALID for %s, naming the path', (_what, options, path) => {
    const error = thrownBy(() => new Intent(options as IntentOptions));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.category).toBe('config');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(path);
    const issues = error.details?.['issues'] as { path: string }[] | undefined;
    if (path.startsWith('options/')) expect(issues?.map((i) => i.path)).toContain(path);
  });

  it('[S02-CONFIG] refuses __proto__ as a field name (a config file parsed from JSON can hold it)', () => {
    const options = JSON.parse(
      '{"schema":{"fields":{"__proto__":{"type":"string"},"ok":{"type":"string"}}}}',
    ) as IntentOptions;
    const error = thrownBy(() => new Intent(options));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('__proto__');
  });

  it('[S02-CONFIG] accepts a full, valid configuration and resolves its defaults', () => {
    const intent = new Intent({
      description: 'Order desk',
      instructions: 'Order ids are digits.',
      domains: ['orders'],
      schema: {
        fields: {
          orderId: { type: 'string', pattern: '^[0-9]+$', required: true, description: 'the order id' },
          quantity: { type: 'integer', minimum: 1, maximum: 9, default: 1 },
          express: { type: 'boolean', default: false },
          color: { type: 'enum', enum: ['red', 'blue'], default: 'red' },
          'pickup.at': { type: 'datetime' },
        },
      },
      timeoutMs: 30_000,
      limits: { maxInputChars: 500 },
      executor: () => Promise.resolve(SEED_CANDIDATE),
    });
    expect(intent.model.language).toBe('auto');
    expect(intent.model.timeoutMs).toBe(30_000);
    expect(intent.model.limits).toEqual({
      maxInputChars: 500,
      maxContextItems: 50,
      maxCandidateBytes: 1024 * 1024,
      maxPendingPerSession: 64,
      maxContextItemChars: 20_000,
      maxNestingDepth: 64,
      maxPatternValueChars: 1_000,
    });
    expect([...intent.model.fields.keys()]).toEqual(['orderId', 'quantity', 'express', 'color', 'pickup.at']);
    expect(intent.disposed).toBe(false);
  });
});

describe('intent.parse', () => {
  it('[S02-EXECUTOR-FN] calls the executor with (task, { signal, feedback: undefined }) and resolves with the result', async () => {
    const { executor, calls } = scripted(SEED_CANDIDATE);
    const intent = new Intent({ executor });
    const result = await intent.parse(SEED_REQUEST);
    expect(executor).toHaveBeenCalledTimes(1);
    const [{ task, ctx }] = calls as [(typeof calls)[0]];
    expect(Object.keys(task)).toEqual(['instructions', 'input', 'outputSchema']);
    expect(ModelTaskSchema.parse(task)).toEqual(task);
    expect(task.input.input).toBe(SEED_REQUEST.input);
    expect(ctx.signal).toBeInstanceOf(AbortSignal);
    expect(ctx.signal.aborted).toBe(false);
    expect(ctx.feedback).toBeUndefined();
    // The executor sees material only: no handoff credentials.
    expect(JSON.stringify(task)).not.toMatch(/submissionToken|requestId/);
    expect(IntentResultSchema.parse(result)).toEqual(result);
    expect(result).toEqual(SEED_RESULT);
  });

  it('[S02-EXECUTOR-FN] after a format error asks once more with { candidateText, issues } and then succeeds', async () => {
    const { executor, calls } = scripted('```json\n{"turnKind":"request"}\n```', SEED_CANDIDATE);
    const result = await new Intent({ executor }).parse(SEED_REQUEST);
    expect(executor).toHaveBeenCalledTimes(2);
    const second = calls[1]!;
    expect(second.task).toEqual(calls[0]!.task);
    expect(second.ctx.signal).toBeInstanceOf(AbortSignal);
    expect(second.ctx.feedback?.candidateText).toBe('```json\n{"turnKind":"request"}\n```');
    expect(second.ctx.feedback?.issues).toEqual([
      { path: '/coverage', message: expect.any(String) as unknown },
      { path: '/intents', message: expect.any(String) as unknown },
    ]);
    expect(result).toEqual(SEED_RESULT);
  });

  it('[S02-EXECUTOR-FN] rejects with CANDIDATE_REJECTED after two bad candidates, having asked exactly twice', async () => {
    const { executor, calls } = scripted('I cannot do that.', '{"turnKind":"request","coverage":"all","intents":[]}');
    const error = await rejectionOf(new Intent({ executor }).parse({ input: 'check order 123' }));
    expect(executor).toHaveBeenCalledTimes(2);
    expect(calls[1]!.ctx.feedback?.candidateText).toBe('I cannot do that.');
    expect(calls[1]!.ctx.feedback?.issues).toEqual([{ path: '', message: expect.stringContaining('JSON') as unknown }]);
    expect(error.code).toBe('CANDIDATE_REJECTED');
    expect(error.category).toBe('candidate');
    expect(error.retryable).toBe(false);
    expect(error.details?.['correction']).toEqual({ allowed: false, remaining: 0 });
    expect(error.details?.['issues']).toEqual([{ path: '/coverage', message: expect.any(String) as unknown }]);
  });

  it('[S02-EXECUTOR-FN] rejects with CANDIDATE_REJECTED when the executor repeats the same bad candidate', async () => {
    const { executor } = scripted('not json', 'not json');
    const error = await rejectionOf(new Intent({ executor }).parse({ input: 'check order 123' }));
    expect(executor).toHaveBeenCalledTimes(2);
    expect(error.code).toBe('CANDIDATE_REJECTED');
    expect(error.details?.['correction']).toEqual({ allowed: false, remaining: 0 });
  });

  it('[S06-THROWN] rejects (never throws synchronously) with INPUT_INVALID for a bad request, without asking the executor', async () => {
    const { executor } = scripted(SEED_CANDIDATE);
    const intent = new Intent({ executor });
    const pending = intent.parse({ input: 'hi', apiKey: 'sk-live-x' });
    expect(pending).toBeInstanceOf(Promise);
    const error = await rejectionOf(pending);
    expect(error.code).toBe('INPUT_INVALID');
    expect(error.message).toContain('"apiKey"');
    expect(executor).not.toHaveBeenCalled();
  });

  it('[S02-CONFIG] rejects with CONFIG_INVALID when the instance has no executor', async () => {
    const error = await rejectionOf(new Intent({}).parse({ input: 'check order 123' }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.category).toBe('config');
    expect(error.message).toContain('executor');
  });
});

describe('intent.dispose', () => {
  it('[S02-DISPOSE] [SEED-DISPOSED] refuses new recognitions while one started before dispose still resolves', async () => {
    const answer = deferred<string>();
    const called = deferred<undefined>();
    const executor = vi.fn<IntentExecutor>(() => {
      called.resolve(undefined);
      return answer.promise;
    });
    const intent = new Intent({ executor });
    const inFlight = intent.parse(SEED_REQUEST);
    await called.promise;

    intent.dispose();
    expect(intent.disposed).toBe(true);
    const refused = await rejectionOf(intent.parse(SEED_REQUEST));
    expect(refused.code).toBe('INSTANCE_DISPOSED');
    expect(refused.category).toBe('config');
    expect(refused.retryable).toBe(false);
    expect(executor).toHaveBeenCalledTimes(1);

    answer.resolve(SEED_CANDIDATE);
    await expect(inFlight).resolves.toEqual(SEED_RESULT);
    // Still refused afterwards, and dispose() again changes nothing.
    intent.dispose();
    expect((await rejectionOf(intent.parse(SEED_REQUEST))).code).toBe('INSTANCE_DISPOSED');
  });

  it('[S02-DISPOSE] lets an in-flight recognition finish its correction after dispose', async () => {
    const second = deferred<string>();
    const secondCalled = deferred<undefined>();
    let calls = 0;
    const executor = vi.fn<IntentExecutor>(() => {
      calls += 1;
      if (calls === 1) return Promise.resolve('oops');
      secondCalled.resolve(undefined);
      return second.promise;
    });
    const intent = new Intent({ executor });
    const inFlight = intent.parse(SEED_REQUEST);
    await secondCalled.promise;
    intent.dispose();
    second.resolve(SEED_CANDIDATE);
    await expect(inFlight).resolves.toEqual(SEED_RESULT);
    expect(executor).toHaveBeenCalledTimes(2);
  });

  it('[SEED-DISPOSED] a disposed instance never calls its executor', async () => {
    const { executor } = scripted(SEED_CANDIDATE);
    const intent = new Intent({ executor });
    intent.dispose();
    const error = await rejectionOf(intent.parse(SEED_REQUEST));
    expect(error.code).toBe('INSTANCE_DISPOSED');
    expect(executor).not.toHaveBeenCalled();
  });
});

describe('instructions', () => {
  async function taskFor(options: IntentOptions, request: unknown): Promise<ModelTask> {
    const { executor, calls } = scripted(SEED_CANDIDATE);
    await new Intent({ ...options, executor }).parse(request);
    return calls[0]!.task;
  }

  it('[S02-INSTRUCTIONS] are in zh-CN for Chinese input: the outputSchema, one correction, never inventing values', async () => {
    const task = await taskFor({}, { input: '查询订单000123，不要取消订单' });
    expect(task.input.language).toBe('zh-CN');
    const text = task.instructions;
    expect(text).toMatch(CJK);
    expect(text).toContain('outputSchema');
    expect(text).toContain('不要编造');
    expect(text).toMatch(/纠正[^\n]*一次/);
    expect(text).not.toContain('Never invent');
  });

  it('[S02-INSTRUCTIONS] are in English for English input: the outputSchema, one correction, never inventing values', async () => {
    const task = await taskFor({}, { input: 'Look up order 000123 but do not cancel it' });
    expect(task.input.language).toBe('en');
    const text = task.instructions;
    expect(text).not.toMatch(CJK);
    expect(text).toContain('outputSchema');
    expect(text).toMatch(/never invent/i);
    expect(text).toMatch(/correct[^\n]*once/i);
    expect(text).toMatch(/missing/);
    expect(text).toMatch(/ambiguous/);
  });

  it('[S02-INSTRUCTIONS] follow output.language and the instance language over the input', async () => {
    const en = await taskFor({}, { input: '查询订单000123', output: { language: 'en' } });
    expect(en.input.language).toBe('en');
    expect(en.instructions).toMatch(/never invent/i);
    const zh = await taskFor({ language: 'zh-CN' }, { input: 'Look up order 000123' });
    expect(zh.input.language).toBe('zh-CN');
    expect(zh.instructions).toContain('不要编造');
  });

  it('[S02-INSTRUCTIONS] include the instance description, instructions and domains, in both languages', async () => {
    const options: IntentOptions = {
      description: 'Recognises requests to the ACME order desk.',
      instructions: 'Order ids are six digits; "the last order" means the most recent one.',
      domains: ['orders', 'billing', 'shipping'],
    };
    for (const input of ['Look up order 000123', '查询订单000123']) {
      const { instructions } = await taskFor(options, { input });
      expect(instructions).toContain('Recognises requests to the ACME order desk.');
      expect(instructions).toContain('Order ids are six digits; "the last order" means the most recent one.');
      for (const domain of ['orders', 'billing', 'shipping']) expect(instructions).toContain(domain);
    }
    const plain = await taskFor({}, { input: 'Look up order 000123' });
    expect(plain.instructions).not.toContain('ACME');
  });

  it('[S02-INSTRUCTIONS] explain fields and baseline changes only when the request has them', async () => {
    const options: IntentOptions = { schema: { fields: { orderId: { type: 'string' } } } };
    const withField = await taskFor(options, { input: 'Look up order 000123', fields: ['orderId'] });
    const without = await taskFor(options, { input: 'Look up order 000123' });
    expect(withField.instructions).toMatch(/"filled"[^\n]*"missing"[^\n]*"ambiguous"/);
    expect(without.instructions).not.toMatch(/"filled"/);
    expect(withField.instructions).not.toContain('baselineChanges');
    const effective = (SEED_RESULT as { effective: unknown }).effective;
    const withBaseline = await taskFor({}, { input: 'Also cancel it', baseline: effective });
    expect(withBaseline.instructions).toContain('baselineChanges');
  });
});

/** A proxy already revoked: any read of it throws a TypeError. */
function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

describe('Intent.parse checks its options as callTool does', () => {
  it.each([
    ['a signal that is not an AbortSignal', { signal: {} }, /options.signal/],
    ['timeoutMs NaN', { timeoutMs: NaN }, /options.timeoutMs/],
    ['timeoutMs Infinity', { timeoutMs: Infinity }, /options.timeoutMs/],
    ['timeoutMs 0', { timeoutMs: 0 }, /options.timeoutMs/],
    ['timeoutMs -1', { timeoutMs: -1 }, /options.timeoutMs/],
    ['timeoutMs 1.5', { timeoutMs: 1.5 }, /options.timeoutMs/],
    ['timeoutMs past the timer range', { timeoutMs: 2 ** 31 }, /options.timeoutMs/],
    ['timeoutMs as text', { timeoutMs: '1000' }, /options.timeoutMs/],
    ['onProgress that is not a function', { onProgress: 'x' }, /options.onProgress/],
    [
      'options whose getter throws',
      Object.defineProperty({}, 'signal', {
        get() {
          throw new Error('boom');
        },
      }),
      /could not be read/,
    ],
    ['a revoked proxy', revokedProxy(), /could not be read/],
  ])('%s: INPUT_INVALID before anything is prepared (the executor is never asked)', async (_name, options, message) => {
    let asked = 0;
    const intent = new Intent({
      executor: () => {
        asked += 1;
        return Promise.resolve('{}');
      },
    });
    const error = await rejectionOf(intent.parse({ input: 'Book a table.' }, options as never));
    expect(error.code).toBe('INPUT_INVALID');
    expect(error.message).toMatch(message);
    expect(asked).toBe(0);
  });
});

describe('hostile option objects get CONFIG_INVALID, never a raw TypeError', () => {
  const throwing = (key: string) =>
    Object.defineProperty({}, key, {
      enumerable: true,
      get() {
        throw new Error('getter boom');
      },
    });

  it.each([
    ['a revoked proxy', () => new Intent(revokedProxy() as never)],
    ['a getter that throws', () => new Intent(throwing('schema') as never)],
    ['a revoked proxy as schema.fields', () => new Intent({ schema: { fields: revokedProxy() as never } })],
    ['a clock that is not one', () => new Intent({ clock: {} as never })],
    ['an adapter config that is a revoked proxy', () => createIntentMcpAdapter(revokedProxy() as never)],
    [
      'adapter instances that are a revoked proxy',
      () => createIntentMcpAdapter({ mode: 'host', instances: revokedProxy() as never }),
    ],
    [
      'adapter limits whose getter throws',
      () =>
        createIntentMcpAdapter({
          mode: 'host',
          instances: { main: new Intent({}) },
          limits: throwing('maxCandidateBytes'),
        }),
    ],
    [
      'connect options whose getter throws',
      () =>
        createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) } }).connect(
          throwing('protocolVersion') as never,
        ),
    ],
  ])('%s', (_name, make) => {
    const error = thrownBy(make);
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).not.toMatch(/getter boom|TypeError/);
  });
});

describe('Intent.parse with an executor whose candidate is over the size limit', () => {
  it('is EXECUTOR_FAILED naming limits.maxCandidateBytes (the model wrote it), not INPUT_INVALID about a candidateText', async () => {
    const intent = new Intent({
      limits: { maxCandidateBytes: 1024 },
      executor: () => Promise.resolve(`{"intents":[],"pad":"${'x'.repeat(4096)}"}`),
    });
    const error = await rejectionOf(intent.parse({ input: 'Book a table.' }));
    expect([error.code, error.retryable, error.details]).toEqual(['EXECUTOR_FAILED', false, { limit: 1024 }]);
    expect(error.message).toMatch(/model's candidate is larger than 1024 bytes/);
    expect(error.message).not.toMatch(/candidateText/);
  });
});

describe('Intent.parse timeoutMs with executors that do not cooperate (issue 13)', () => {
  const request = { input: 'Book a table for two tonight.' };

  it('[I13-NATIVE-TIMEOUT] an executor that ignores its signal: parse rejects TIMEOUT at the deadline, not when it returns', async () => {
    const clock = new SimulatedClock();
    let release!: (text: string) => void;
    let aborted = false;
    const intent = new Intent({
      clock,
      executor: (_task, { signal }) => {
        signal.addEventListener('abort', () => (aborted = true));
        return new Promise<string>((resolve) => (release = resolve));
      },
    });
    const parsing = rejectionOf(intent.parse(request, { timeoutMs: 100 }));
    await vi.waitFor(() => {
      expect(release).toBeDefined();
    });
    clock.increment(100);
    const error = await parsing;
    expect(error.code).toBe('TIMEOUT');
    expect(aborted).toBe(true);
    // What it returns afterwards changes nothing and is not reported.
    release('{}');
  });

  it('[I13-NATIVE-TIMEOUT] an executor that never settles: parse rejects TIMEOUT at the deadline', async () => {
    const clock = new SimulatedClock();
    let called = false;
    const intent = new Intent({
      clock,
      executor: () => {
        called = true;
        return new Promise<string>(() => undefined);
      },
    });
    const parsing = rejectionOf(intent.parse(request, { timeoutMs: 100 }));
    await vi.waitFor(() => {
      expect(called).toBe(true);
    });
    clock.increment(100);
    expect((await parsing).code).toBe('TIMEOUT');
  });

  it('[I13-NATIVE-TIMEOUT] a script awaiting parse at top level with a never-settling executor prints TIMEOUT, never exit 13 with no output', async () => {
    const { ensureBuilt, REPO_ROOT } = await import('./support/serverProcess.js');
    await ensureBuilt();
    const script = [
      `import { Intent } from ${JSON.stringify(pathToFileURL(`${REPO_ROOT}dist/src/index.js`).href)};`,
      'const intent = new Intent({ executor: () => new Promise(() => {}) });',
      "try { await intent.parse({ input: 'x' }, { timeoutMs: 50 }); console.log('resolved'); }",
      'catch (error) { console.log(error.code); }',
    ].join('\n');
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect({ status: child.status, stdout: child.stdout.trim() }).toEqual({ status: 0, stdout: 'TIMEOUT' });
  });
});

describe('optional keys and required nullable keys of a candidate (issue 13)', () => {
  const request = { input: '查询订单000123，不要取消订单' };
  const seed = JSON.parse(SEED_CANDIDATE) as { intents: Record<string, unknown>[] };
  const without = (key: string): string => {
    const [first, ...rest] = seed.intents;
    const kept = Object.fromEntries(Object.entries(first ?? {}).filter(([name]) => name !== key));
    return JSON.stringify({ ...seed, intents: [kept, ...rest] });
  };

  it('[I13-OMITTED-NULL] domain or target left out is a correctable format error naming the key; optional keys may be left out', async () => {
    for (const key of ['domain', 'target']) {
      const seen: { issues: { path: string }[] }[] = [];
      const intent = new Intent({
        executor: (_task, ctx) => {
          if (ctx.feedback !== undefined) seen.push(ctx.feedback);
          return Promise.resolve(seen.length === 0 ? without(key) : SEED_CANDIDATE);
        },
      });
      await intent.parse(request);
      expect(seen.map((f) => f.issues.map((i) => i.path))).toEqual([[`/intents/0/${key}`]]);
    }
    // The seed candidate leaves out every optional key (ref, inputs, references, children, relations, ...) and is valid.
    const ok = new Intent({ executor: () => Promise.resolve(SEED_CANDIDATE) });
    await expect(ok.parse(request)).resolves.toMatchObject({ status: expect.any(String) as unknown });
    expect(Object.keys(seed.intents[0]!)).not.toContain('ref');
  });

  it('[I13-OMITTED-NULL] the README states the same rule', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    expect(readme).not.toContain('a key whose schema admits `null` may also be left out');
    expect(readme).toMatch(/`domain` and `target` — must be present/);
  });
});
