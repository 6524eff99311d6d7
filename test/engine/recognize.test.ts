import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { IntentError } from '../../src/core/errors.js';
import type { ExecutorContext, IntentExecutor } from '../../src/core/executor.js';
import type { ModelTask } from '../../src/core/schemas.js';
import { executorFailure, recognize } from '../../src/engine/recognize.js';
import { Intent } from '../../src/intent.js';
import {
  INVALID_CANDIDATE,
  OTHER_INVALID_CANDIDATE,
  SEED_CANDIDATE,
  SEED_REQUEST,
  SEED_RESULT_TEXT,
  expectError,
  expectResult,
  flush,
  harness,
} from './support.js';

interface Call {
  task: ModelTask;
  ctx: ExecutorContext;
}

/** An executor answering from a script, one entry per call, recording what it was given. */
function scripted(answers: ((call: Call) => Promise<unknown>)[]): { executor: IntentExecutor; calls: Call[] } {
  const calls: Call[] = [];
  const executor: IntentExecutor = (task, ctx) => {
    const call = { task, ctx };
    calls.push(call);
    const answer = answers[calls.length - 1];
    if (answer === undefined) return Promise.reject(new Error('unexpected executor call'));
    return answer(call) as Promise<string>;
  };
  return { executor, calls };
}

const answer = (text: unknown) => () => Promise.resolve(text);
// Executors reject with all sorts of things (HTTP error objects, plain objects), not only Errors.
// eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
const fail = (error: unknown) => () => Promise.reject(error);

/** A promise the test settles, plus a hook that fires when the executor has been entered. */
function gate(): {
  entered: Promise<ExecutorContext>;
  release: (text: string) => void;
  executor: IntentExecutor;
} {
  let release!: (text: string) => void;
  let entered!: (ctx: ExecutorContext) => void;
  const enteredPromise = new Promise<ExecutorContext>((resolve) => {
    entered = resolve;
  });
  const result = new Promise<string>((resolve) => {
    release = resolve;
  });
  const executor: IntentExecutor = (_task, ctx) => {
    entered(ctx);
    return result;
  };
  return { entered: enteredPromise, release, executor };
}

async function rejection(promise: Promise<unknown>): Promise<IntentError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(IntentError);
  return caught as IntentError;
}

describe('the executor loop [S03-EXECUTOR]', () => {
  it('asks once more with feedback after CANDIDATE_INVALID, then returns the result [S03-EXECUTOR]', async () => {
    const { executor, calls } = scripted([answer(INVALID_CANDIDATE), answer(SEED_CANDIDATE)]);
    const intent = new Intent({ executor });
    const result = await intent.parse(SEED_REQUEST);

    expect(JSON.stringify(result)).toBe(SEED_RESULT_TEXT);
    expect(calls).toHaveLength(2);
    const [first, second] = calls;
    expect(first?.ctx.feedback).toBeUndefined();
    expect(first?.ctx.signal).toBeInstanceOf(AbortSignal);
    expect(first?.task.input.input).toBe(SEED_REQUEST.input);
    expect(first?.task.outputSchema).toMatchObject({ type: 'object' });
    expect(Object.keys(first?.task ?? {}).sort()).toEqual(['input', 'instructions', 'outputSchema']);
    expect(second?.task).toEqual(first?.task);
    expect(second?.ctx.feedback?.candidateText).toBe(INVALID_CANDIDATE);
    const issues = second?.ctx.feedback?.issues ?? [];
    expect(issues.length).toBeGreaterThan(0);
    expect(issues.map((i) => i.path)).toContain('/intents');
    for (const issue of issues) expect(typeof issue.message).toBe('string');
    expect(first?.ctx.signal.aborted).toBe(false);
  });

  it('runs the same machine as host mode: two validations, then nothing stays live [S03-EXECUTOR]', async () => {
    const { engine, instance, validated } = harness();
    const session = engine.openSession('executor');
    const { executor, calls } = scripted([answer(INVALID_CANDIDATE), answer(SEED_CANDIDATE)]);
    const reply = await recognize(session, instance, executor, SEED_REQUEST);
    expectResult(reply);
    expect(reply.text).toBe(SEED_RESULT_TEXT);
    expect(calls).toHaveLength(2);
    expect(validated()).toBe(2);
    expect(session.size).toBe(0);
  });

  it('a valid first candidate needs one call and one validation', async () => {
    const { engine, instance, validated } = harness();
    const { executor, calls } = scripted([answer(SEED_CANDIDATE)]);
    expectResult(await recognize(engine.openSession(), instance, executor, SEED_REQUEST));
    expect(calls).toHaveLength(1);
    expect(validated()).toBe(1);
  });

  it('after a second invalid candidate it stops with CANDIDATE_REJECTED: no third call [S03-EXECUTOR]', async () => {
    const { executor, calls } = scripted([answer(INVALID_CANDIDATE), answer(OTHER_INVALID_CANDIDATE)]);
    const error = await rejection(new Intent({ executor }).parse(SEED_REQUEST));
    expect(error.code).toBe('CANDIDATE_REJECTED');
    expect(error.details?.['correction']).toEqual({ allowed: false, remaining: 0 });
    expect(calls).toHaveLength(2);
  });

  it('the same invalid candidate twice ends the recognition with a terminal CANDIDATE_REJECTED, nothing left live [S03-EXECUTOR]', async () => {
    const { engine, instance, validated } = harness();
    const session = engine.openSession();
    const { executor, calls } = scripted([answer(INVALID_CANDIDATE), answer(INVALID_CANDIDATE)]);
    const reply = await recognize(session, instance, executor, SEED_REQUEST);
    const error = expectError(reply, 'CANDIDATE_REJECTED');
    expect(error.retryable).toBe(false);
    expect(error.details?.['correction']).toEqual({ allowed: false, remaining: 0 });
    expect(error.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(calls).toHaveLength(2);
    // The identical resubmission is answered from the machine's feedback, not validated again.
    expect(validated()).toBe(1);
    expect(session.size).toBe(0);
  });

  it('a bad request is INPUT_INVALID without calling the executor', async () => {
    const { executor, calls } = scripted([answer(SEED_CANDIDATE)]);
    const error = await rejection(new Intent({ executor }).parse({ input: '' }));
    expect(error.code).toBe('INPUT_INVALID');
    expect(calls).toHaveLength(0);
  });

  it('a disposed Intent refuses to parse with INSTANCE_DISPOSED [SEED-DISPOSED]', async () => {
    const { executor, calls } = scripted([answer(SEED_CANDIDATE)]);
    const intent = new Intent({ executor });
    intent.dispose();
    expect((await rejection(intent.parse(SEED_REQUEST))).code).toBe('INSTANCE_DISPOSED');
    expect(calls).toHaveLength(0);
  });
});

describe('the executor loop leaves nothing live', () => {
  it('a candidate over maxCandidateBytes ends the recognition with EXECUTOR_FAILED (the model wrote it) and the request is not left live [S03-EXECUTOR]', async () => {
    const { engine, instance } = harness({}, { limits: { maxCandidateBytes: 64 } });
    const session = engine.openSession('executor');
    for (let i = 0; i < 3; i++) {
      const { executor } = scripted([answer(SEED_CANDIDATE)]);
      const reply = await recognize(session, instance, executor, SEED_REQUEST);
      expect(reply.isError && [reply.error.code, reply.error.details]).toEqual(['EXECUTOR_FAILED', { limit: 64 }]);
    }
    expect(session.size).toBe(0);
    expect(engine.snapshot().sessions[0]?.live).toEqual([]);
  });
});

describe('signal and deadline [S03-EXECUTOR]', () => {
  it('a signal aborting while the executor runs rejects ABORTED and aborts the executor’s signal [S03-EXECUTOR]', async () => {
    const { engine, instance } = harness();
    const session = engine.openSession();
    const { entered, release, executor } = gate();
    const controller = new AbortController();
    const pending = recognize(session, instance, executor, SEED_REQUEST, { signal: controller.signal });
    const ctx = await entered;
    expect(ctx.signal.aborted).toBe(false);
    expect(session.size).toBe(1);

    controller.abort();
    expect(ctx.signal.aborted).toBe(true);
    expect(session.size).toBe(0);
    release(SEED_CANDIDATE);
    const error = expectError(await pending, 'ABORTED');
    expect(error.category).toBe('cancelled');
    expect(error.retryable).toBe(false);
  });

  it('Intent.parse rejects ABORTED when its signal aborts, even if the executor rejects on abort', async () => {
    const controller = new AbortController();
    let seen: AbortSignal | undefined;
    const executor: IntentExecutor = (_task, { signal }) => {
      seen = signal;
      return new Promise<string>((_resolve, reject) => {
        signal.addEventListener('abort', () => {
          reject(new DOMException('This operation was aborted', 'AbortError'));
        });
      });
    };
    const parsing = new Intent({ executor }).parse(SEED_REQUEST, { signal: controller.signal });
    controller.abort();
    const error = await rejection(parsing);
    expect(error.code).toBe('ABORTED');
    expect(seen?.aborted).toBe(true);
  });

  it('an already-aborted signal gives ABORTED without calling the executor [S03-EXECUTOR]', async () => {
    const { executor, calls } = scripted([answer(SEED_CANDIDATE)]);
    const error = await rejection(new Intent({ executor }).parse(SEED_REQUEST, { signal: AbortSignal.abort() }));
    expect(error.code).toBe('ABORTED');
    expect(calls).toHaveLength(0);
  });

  it('the deadline gives TIMEOUT (retryable) and aborts the executor’s signal, even if it answers late [S03-EXECUTOR]', async () => {
    const clock = new SimulatedClock();
    const { entered, release, executor } = gate();
    // Observed from the start: the parse rejects at the deadline, before the executor answers (late).
    const failing = rejection(new Intent({ executor, clock }).parse(SEED_REQUEST, { timeoutMs: 2000 }));
    const ctx = await entered;
    clock.increment(1999);
    await flush();
    expect(ctx.signal.aborted).toBe(false);
    clock.increment(1);
    await flush();
    expect(ctx.signal.aborted).toBe(true);
    release(SEED_CANDIDATE);
    const error = await failing;
    expect(error.code).toBe('TIMEOUT');
    expect(error.category).toBe('timeout');
    expect(error.retryable).toBe(true);
    expect(error.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('the instance timeoutMs is a deadline too, counted across the correction call [S03-EXECUTOR]', async () => {
    const clock = new SimulatedClock();
    const contexts: ExecutorContext[] = [];
    const executor: IntentExecutor = (_task, ctx) => {
      contexts.push(ctx);
      if (contexts.length === 1) return Promise.resolve(INVALID_CANDIDATE);
      return new Promise<string>((_resolve, reject) => {
        ctx.signal.addEventListener('abort', () => {
          reject(new DOMException('This operation was aborted', 'AbortError'));
        });
      });
    };
    const parsing = new Intent({ executor, clock, timeoutMs: 1000 }).parse(SEED_REQUEST);
    clock.increment(400);
    for (let i = 0; i < 10 && contexts.length < 2; i += 1) await flush();
    expect(contexts[1]?.feedback?.candidateText).toBe(INVALID_CANDIDATE);
    clock.increment(600);
    const error = await rejection(parsing);
    expect(error.code).toBe('TIMEOUT');
    expect(contexts[1]?.signal.aborted).toBe(true);
  });

  it('without a deadline a slow executor is simply waited for', async () => {
    const clock = new SimulatedClock();
    const { entered, release, executor } = gate();
    const parsing = new Intent({ executor, clock }).parse(SEED_REQUEST);
    const ctx = await entered;
    clock.increment(7 * 24 * 3600 * 1000);
    await flush();
    expect(ctx.signal.aborted).toBe(false);
    release(SEED_CANDIDATE);
    expect(JSON.stringify(await parsing)).toBe(SEED_RESULT_TEXT);
  });
});

describe('executor failures [S06-EXECUTOR-FAILED]', () => {
  it.each([
    [429, true],
    [500, true],
    [503, true],
    [400, false],
    [401, false],
  ])(
    'an HTTP status %i is EXECUTOR_FAILED, retryable: %s, with details.status [S06-EXECUTOR-FAILED]',
    async (status, retryable) => {
      const { engine, instance } = harness();
      const session = engine.openSession();
      const { executor, calls } = scripted([fail({ status })]);
      const reply = await recognize(session, instance, executor, SEED_REQUEST);
      const error = expectError(reply, 'EXECUTOR_FAILED');
      expect(error.category).toBe('executor');
      expect(error.retryable).toBe(retryable);
      expect(error.details).toEqual({ status });
      expect(error.requestId).toMatch(/^[0-9a-f-]{36}$/);
      expect(JSON.parse(reply.text)).toMatchObject({
        error: { code: 'EXECUTOR_FAILED', retryable, details: { status } },
      });
      expect(calls).toHaveLength(1);
      expect(session.size).toBe(0);
    },
  );

  it('Intent.parse rejects with the same classification [S06-EXECUTOR-FAILED]', async () => {
    const { executor } = scripted([fail({ status: 503 })]);
    const error = await rejection(new Intent({ executor }).parse(SEED_REQUEST));
    expect(error.code).toBe('EXECUTOR_FAILED');
    expect(error.retryable).toBe(true);
    expect(error.details?.['status']).toBe(503);
  });

  it('a network error code (ECONNREFUSED), directly or as the cause, is retryable without a status [S06-EXECUTOR-FAILED]', async () => {
    const direct = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8080'), { code: 'ECONNREFUSED' });
    const wrapped = new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } });
    for (const cause of [direct, wrapped]) {
      const { executor } = scripted([fail(cause)]);
      const error = await rejection(new Intent({ executor }).parse(SEED_REQUEST));
      expect(error.code).toBe('EXECUTOR_FAILED');
      expect(error.retryable).toBe(true);
      expect(error.details?.['status']).toBeUndefined();
    }
    expect(executorFailure(Object.assign(new Error('x'), { code: 'ERR_BAD_THING' })).retryable).toBe(false);
  });

  it('a plain error leaks nothing: no key, no credentials, no stack [S06-EXECUTOR-FAILED] [S06-NO-LEAK]', async () => {
    const { engine, instance } = harness();
    const secret = new Error('secret sk-123 at http://user:pw@host');
    const { executor } = scripted([fail(secret)]);
    const reply = await recognize(engine.openSession(), instance, executor, SEED_REQUEST);
    const error = expectError(reply, 'EXECUTOR_FAILED');
    expect(error.retryable).toBe(false);
    for (const out of [reply.text, JSON.stringify(error), JSON.stringify(error.toJSON()), error.message]) {
      expect(out).not.toContain('sk-123');
      expect(out).not.toContain('pw@');
      expect(out).not.toContain('secret');
      expect(out).not.toContain('    at ');
    }
    expect(Object.keys(error.toJSON()).sort()).toEqual([
      'category',
      'code',
      'details',
      'message',
      'requestId',
      'retryable',
    ]);

    const viaParse = await rejection(new Intent({ executor: scripted([fail(secret)]).executor }).parse(SEED_REQUEST));
    expect(JSON.stringify(viaParse)).not.toContain('sk-123');
    expect(JSON.stringify(viaParse)).not.toContain('pw@');
  });

  it('a failure on the correction call is EXECUTOR_FAILED too and ends the request', async () => {
    const { engine, instance } = harness();
    const session = engine.openSession();
    const { executor, calls } = scripted([answer(INVALID_CANDIDATE), fail({ status: 502 })]);
    const error = expectError(await recognize(session, instance, executor, SEED_REQUEST), 'EXECUTOR_FAILED');
    expect(error.retryable).toBe(true);
    expect(calls).toHaveLength(2);
    expect(session.size).toBe(0);
  });

  it.each([
    ['a number', 42],
    ['an object', { turnKind: 'request' }],
    ['undefined', undefined],
  ])('an executor resolving %s is EXECUTOR_FAILED, not retryable', async (_name, value) => {
    const { engine, instance, validated } = harness();
    const session = engine.openSession();
    const { executor } = scripted([answer(value)]);
    const error = expectError(await recognize(session, instance, executor, SEED_REQUEST), 'EXECUTOR_FAILED');
    expect(error.retryable).toBe(false);
    expect(validated()).toBe(0);
    expect(session.size).toBe(0);
  });

  it('an IntentError thrown by the executor passes through, gaining only the requestId', async () => {
    const own = new IntentError('TIMEOUT', 'The model call timed out; retry.', { details: { where: 'model' } });
    const { executor } = scripted([fail(own)]);
    const error = await rejection(new Intent({ executor }).parse(SEED_REQUEST));
    expect(error).toBeInstanceOf(IntentError);
    const { requestId, ...rest } = error.toJSON();
    expect(rest).toEqual(own.toJSON());
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
  });
});
