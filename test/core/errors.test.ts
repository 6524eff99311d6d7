import { describe, expect, it } from 'vitest';
import {
  ERROR_CATEGORIES,
  ERROR_CODES,
  IntentError,
  SerializedIntentErrorSchema,
  isIntentError,
  toIntentError,
  type IntentErrorCategory,
  type IntentErrorCode,
} from '../../src/core/errors.js';
import { resolveInstance } from '../../src/core/instance.js';
import { prepareRequest } from '../../src/core/request.js';
import { executorFailure } from '../../src/engine/recognize.js';
import { Intent } from '../../src/intent.js';
import { thrownBy, rejectionOf } from '../support/intentErrors.js';

/** Spec 06's table: code → [category, retryable]. EXECUTOR_FAILED's default; its cause decides (below). */
const TABLE: Record<IntentErrorCode, [IntentErrorCategory, boolean]> = {
  CONFIG_INVALID: ['config', false],
  INPUT_INVALID: ['input', false],
  INSTANCE_REQUIRED: ['input', false],
  INSTANCE_NOT_FOUND: ['input', false],
  INSTANCE_DISPOSED: ['config', false],
  HANDOFF_NOT_FOUND: ['handoff', false],
  HANDOFF_CONFLICT: ['handoff', false],
  HANDOFF_CANCELLED: ['cancelled', false],
  HANDOFF_EXPIRED: ['timeout', false],
  CANDIDATE_INVALID: ['candidate', true],
  CANDIDATE_REJECTED: ['candidate', false],
  CAPACITY_EXCEEDED: ['handoff', true],
  SESSION_CLOSED: ['handoff', false],
  EXECUTOR_FAILED: ['executor', false],
  TIMEOUT: ['timeout', true],
  ABORTED: ['cancelled', false],
  INTERNAL: ['internal', false],
};

describe('codes and categories', () => {
  it('[S06-CODES] knows exactly the codes of spec 06 and the categories they use', () => {
    expect([...ERROR_CODES].sort()).toEqual(Object.keys(TABLE).sort());
    const used = new Set([...Object.values(TABLE).map(([c]) => c), 'transport']);
    expect([...ERROR_CATEGORIES].sort()).toEqual([...used].sort());
  });

  it.each(Object.entries(TABLE))(
    '[S06-CODES] %s has category %s and its retryable default',
    (code, [category, retryable]) => {
      const error = new IntentError(code as IntentErrorCode, 'Something happened; do the next thing.');
      expect(error).toBeInstanceOf(Error);
      expect(isIntentError(error)).toBe(true);
      expect(error.name).toBe('IntentError');
      expect(error.code).toBe(code);
      expect(error.category).toBe(category);
      expect(error.retryable).toBe(retryable);
    },
  );

  it('[S06-CODES] CONFIG_INVALID can carry the transport category for connect() options', () => {
    const error = new IntentError('CONFIG_INVALID', 'Pass a supported protocolVersion to connect().', {
      category: 'transport',
    });
    expect(error.category).toBe('transport');
    expect(error.retryable).toBe(false);
    expect(IntentError.fromJSON(error.toJSON()).category).toBe('transport');
  });

  it('[S06-CODES] [S06-EXECUTOR-FAILED] EXECUTOR_FAILED is retryable for 429, 5xx and network causes only', () => {
    const httpError = (status: number) => Object.assign(new Error(`HTTP ${status}`), { status });
    const networkError = (code: string) => Object.assign(new TypeError('fetch failed'), { cause: { code } });
    const cases: [unknown, boolean, number | undefined][] = [
      [httpError(429), true, 429],
      [httpError(500), true, 500],
      [httpError(503), true, 503],
      [httpError(400), false, 400],
      [httpError(401), false, 401],
      [httpError(404), false, 404],
      [networkError('ECONNRESET'), true, undefined],
      [networkError('ECONNREFUSED'), true, undefined],
      [Object.assign(new Error('socket'), { code: 'ETIMEDOUT' }), true, undefined],
      [new Error('the model answered nonsense'), false, undefined],
      ['a string was thrown', false, undefined],
    ];
    for (const [cause, retryable, status] of cases) {
      const error = executorFailure(cause, 'req-1');
      expect(error.code).toBe('EXECUTOR_FAILED');
      expect(error.category).toBe('executor');
      expect(error.retryable, String(cause)).toBe(retryable);
      expect(error.requestId).toBe('req-1');
      expect(error.details?.['status']).toBe(status);
    }
  });

  it('[S06-EXECUTOR-FAILED] [S06-NO-LEAK] EXECUTOR_FAILED never copies the cause’s message', () => {
    const cause = Object.assign(new Error('POST https://user:sk-live-123@api.example.invalid/v1 failed'), {
      status: 502,
    });
    const serialized = JSON.stringify(executorFailure(cause).toJSON());
    expect(serialized).not.toContain('sk-live-123');
    expect(serialized).not.toContain('api.example.invalid');
  });

  it('[S06-CODES] passes an IntentError through executorFailure and toIntentError unchanged', () => {
    const original = new IntentError('TIMEOUT', 'The recognition passed its deadline; retry.');
    expect(executorFailure(original)).toBe(original);
    expect(toIntentError(original)).toBe(original);
  });
});

describe('serialisation', () => {
  const full = new IntentError('CANDIDATE_INVALID', 'The candidate has a format problem; fix it once.', {
    requestId: 'b7c1f7c2-4a55-4d6f-9e1a-2f5c1c0d9a11',
    details: {
      issues: [{ path: '/intents', message: 'Expected a JSON array, got a string.' }],
      correction: { allowed: true, remaining: 1 },
    },
    cause: new Error('internal cause'),
  });

  it('[S06-SERIALIZED] toJSON gives { code, category, message, retryable, requestId?, details? } in that order', () => {
    const json = full.toJSON();
    expect(Object.keys(json)).toEqual(['code', 'category', 'message', 'retryable', 'requestId', 'details']);
    expect(json).toEqual({
      code: 'CANDIDATE_INVALID',
      category: 'candidate',
      message: 'The candidate has a format problem; fix it once.',
      retryable: true,
      requestId: 'b7c1f7c2-4a55-4d6f-9e1a-2f5c1c0d9a11',
      details: {
        issues: [{ path: '/intents', message: 'Expected a JSON array, got a string.' }],
        correction: { allowed: true, remaining: 1 },
      },
    });
    expect(JSON.stringify(full)).toBe(JSON.stringify(json));
    expect(JSON.stringify(json)).not.toContain('internal cause');
  });

  it('[S06-SERIALIZED] leaves out requestId and details when there are none', () => {
    const json = new IntentError('ABORTED', 'The call was aborted by its caller.').toJSON();
    expect(Object.keys(json)).toEqual(['code', 'category', 'message', 'retryable']);
  });

  it('[S06-SERIALIZED] SerializedIntentErrorSchema accepts every serialised error and refuses extra keys', () => {
    for (const code of ERROR_CODES) {
      const json = new IntentError(code, 'Do the next thing.', { requestId: 'r', details: { a: 1 } }).toJSON();
      expect(SerializedIntentErrorSchema.parse(json)).toEqual(json);
    }
    expect(SerializedIntentErrorSchema.parse(full.toJSON())).toEqual(full.toJSON());
    expect(SerializedIntentErrorSchema.safeParse({ ...full.toJSON(), stack: 'Error: at x' }).success).toBe(false);
    expect(SerializedIntentErrorSchema.safeParse({ ...full.toJSON(), code: 'NOPE' }).success).toBe(false);
    expect(SerializedIntentErrorSchema.safeParse({ ...full.toJSON(), category: 'network' }).success).toBe(false);
  });

  it('[S06-SERIALIZED] fromJSON round-trips the wire form byte for byte', () => {
    const back = IntentError.fromJSON(JSON.parse(JSON.stringify(full)));
    expect(back).toBeInstanceOf(IntentError);
    expect(JSON.stringify(back)).toBe(JSON.stringify(full));
    expect(back.message).toBe(full.message);
    // A category or retryability that differs from the default survives the trip.
    const odd = new IntentError('EXECUTOR_FAILED', 'Retry the call.', { retryable: true, details: { status: 503 } });
    expect(IntentError.fromJSON(odd.toJSON()).toJSON()).toEqual(odd.toJSON());
  });

  it('[S06-THROWN] fromJSON of something that is not a serialised error throws an IntentError', () => {
    const error = thrownBy(() => IntentError.fromJSON({ code: 'NOPE', message: 'x' }));
    expect(error.code).toMatch(/^(INPUT_INVALID|INTERNAL)$/);
  });
});

describe('no leaks', () => {
  it('[S06-NO-LEAK] toIntentError turns a foreign Error into INTERNAL without its message or stack', () => {
    const foreign = new Error('ENOENT: /home/alice/.config/intent/secret.json apiKey=sk-live-abc');
    const error = toIntentError(foreign, 'req-9');
    expect(error.code).toBe('INTERNAL');
    expect(error.category).toBe('internal');
    expect(error.retryable).toBe(false);
    expect(error.requestId).toBe('req-9');
    expect(error.message).toMatch(/bug/i);
    const wire = JSON.stringify(error.toJSON());
    expect(wire).not.toContain('sk-live-abc');
    expect(wire).not.toContain('/home/alice');
    expect(wire).not.toMatch(/\n\s+at /);
    expect(wire).not.toContain(foreign.stack!.split('\n')[1]!.trim());
    expect(error.details).toBeUndefined();
  });

  it('[S06-NO-LEAK] toIntentError handles non-Error throwables the same way', () => {
    for (const thrown of ['sk-live-string', { token: 'sk-live-object' }, 42, null, undefined]) {
      const error = toIntentError(thrown);
      expect(error.code).toBe('INTERNAL');
      expect(JSON.stringify(error.toJSON())).not.toContain('sk-live');
    }
  });
});

describe('messages', () => {
  /** Why `message` is not one English sentence ending with a full stop (no CJK, no sentence break inside). */
  function sentenceProblems(message: string): string[] {
    const problems: string[] = [];
    if (!/^[A-Z"]/.test(message)) problems.push('does not start like a sentence');
    if (!message.endsWith('.')) problems.push('does not end with "."');
    if (/[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]/u.test(message)) problems.push('is not English');
    if (message.includes('\n')) problems.push('spans lines');
    if (/[.!?]["')]?\s+[A-Z]/.test(message.replace(/\be\.g\.|\bi\.e\./g, ''))) problems.push('is several sentences');
    return problems;
  }

  /** Every message that breaks the rule, with why: `[]` when all are fine. */
  function badMessages(errors: readonly IntentError[]): string[] {
    return errors.flatMap((e) => {
      const problems = sentenceProblems(e.message);
      return problems.length === 0 ? [] : [`${e.message} → ${problems.join(', ')}`];
    });
  }

  it('the sentence check catches what it should', () => {
    expect(sentenceProblems('The request "input" is empty; send a non-empty string.')).toEqual([]);
    expect(sentenceProblems('Pass e.g. new Intent({}) for the defaults.')).toEqual([]);
    expect(sentenceProblems('It broke. Fix it.')).toEqual(['is several sentences']);
    expect(sentenceProblems('it broke')).toEqual(['does not start like a sentence', 'does not end with "."']);
    expect(sentenceProblems('输入为空。')).toContain('is not English');
  });

  const withSchema = resolveInstance({ schema: { fields: { orderId: { type: 'string', required: true } } } });
  const now = new Date('2026-03-04T05:06:07.000Z');

  it('[S06-MESSAGES] prepareRequest raises one English sentence per problem, also for Chinese input', () => {
    const requests: unknown[] = [
      'not an object',
      {},
      { input: '   ' },
      { input: '查询订单', apiKey: 'x' },
      { input: '查询订单', fields: ['zip'] },
      { input: '查询订单', fields: ['orderId', 'orderId'] },
      { input: '查询订单', fields: 'orderId' },
      { input: '查询订单', context: [{ role: 'bot', text: 'hi' }] },
      { input: '查询订单', referenceTime: 'tomorrow' },
      { input: '查询订单', output: { language: 'fr' } },
      { input: 'x'.repeat(20_001) },
      { input: 'hi', context: Array.from({ length: 51 }, () => ({ role: 'user', text: 'a' })) },
      { input: 'hi', baseline: { intents: [] } },
    ];
    const errors = requests.map((request) => thrownBy(() => prepareRequest(withSchema, request, now)));
    expect(errors.every((e) => e.code === 'INPUT_INVALID')).toBe(true);
    expect(badMessages(errors)).toEqual([]);
  });

  it('[S06-MESSAGES] resolveInstance raises one English sentence per problem', () => {
    const configs: unknown[] = [
      { bogus: true },
      { language: 'fr' },
      { timeoutMs: 0 },
      { limits: { maxInputChars: -1 } },
      { schema: { fields: { 'a b': { type: 'string' } } } },
      { schema: { fields: { e: { type: 'enum' } } } },
      { schema: { fields: { s: { type: 'string', pattern: '(' } } } },
      { schema: { fields: { s: { type: 'string', pattern: '^a$', default: 'b' } } } },
    ];
    const errors = configs.map((config) => thrownBy(() => resolveInstance(config)));
    expect(errors.every((e) => e.code === 'CONFIG_INVALID')).toBe(true);
    expect(badMessages(errors)).toEqual([]);
  });

  it('[S06-MESSAGES] the Intent class raises one English sentence per problem', async () => {
    const errors: IntentError[] = [
      thrownBy(() => new Intent(null as never)),
      thrownBy(() => new Intent({ executor: 'no' as never })),
      await rejectionOf(new Intent({}).parse({ input: 'hi' })),
    ];
    const disposed = new Intent({ executor: () => Promise.resolve('{}') });
    disposed.dispose();
    errors.push(await rejectionOf(disposed.parse({ input: '查询订单' })));
    let calls = 0;
    const chatty = new Intent({
      executor: () => Promise.resolve(`Sure! Here is the JSON you asked for (${++calls}).`),
    });
    errors.push(await rejectionOf(chatty.parse({ input: '查询订单' })));
    errors.push(await rejectionOf(chatty.parse({ input: '查询订单', mode: 'host' })));
    expect(errors.map((e) => e.code)).toEqual([
      'CONFIG_INVALID',
      'CONFIG_INVALID',
      'CONFIG_INVALID',
      'INSTANCE_DISPOSED',
      'CANDIDATE_REJECTED',
      'INPUT_INVALID',
    ]);
    expect(badMessages(errors)).toEqual([]);
  });
});
