import { createHash, randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { HandoffEngine, type HandoffTransition } from '../../src/engine/engine.js';
import type { HandoffReply } from '../../src/engine/replies.js';
import { Intent } from '../../src/intent.js';
import {
  INVALID_CANDIDATE,
  OTHER_INVALID_CANDIDATE,
  OTHER_VALID_CANDIDATE,
  SEED_CANDIDATE,
  SEED_REQUEST,
  SEED_RESULT_TEXT,
  T0,
  countParsesOf,
  expectError,
  expectResult,
  flush,
  harness,
  markedInvalidCandidate,
  markedValidCandidate,
  thrown,
} from './support.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MiB = 1024 * 1024;

describe('joining and conflicts', () => {
  it('100 concurrent identical accepts share one validation and one reply object [SEED-JOIN]', async () => {
    const { engine, instance, validated } = harness();
    const session = engine.openSession('host');
    const task = session.prepare(instance, SEED_REQUEST);
    const calls: Promise<HandoffReply>[] = [];
    for (let i = 0; i < 100; i += 1) calls.push(session.accept(task.requestId, task.submissionToken, SEED_CANDIDATE));
    const replies = await Promise.all(calls);

    expect(validated()).toBe(1);
    expect(new Set(replies).size).toBe(1);
    expect(new Set(replies.map((r) => r.text)).size).toBe(1);
    const first = replies[0];
    if (first === undefined) throw new Error('no reply');
    const value = expectResult(first);
    expect(value['status']).toBe('complete');
    expect(first.text).toBe(SEED_RESULT_TEXT);
  });

  it('a different candidate conflicts while validating and after completion; the first replays byte-identically [SEED-CONFLICT] [SEED-REPLAY]', async () => {
    const { engine, instance, validated } = harness();
    const session = engine.openSession();
    const task = session.prepare(instance, SEED_REQUEST);
    const { requestId, submissionToken } = task;

    const a = session.accept(requestId, submissionToken, SEED_CANDIDATE);
    const whileValidating = await session.accept(requestId, submissionToken, OTHER_VALID_CANDIDATE);
    const conflict = expectError(whileValidating, 'HANDOFF_CONFLICT', requestId);
    expect(conflict.category).toBe('handoff');
    expect(conflict.retryable).toBe(false);

    const first = await a;
    expectResult(first);
    expect(validated()).toBe(1);

    const replay = await session.accept(requestId, submissionToken, SEED_CANDIDATE);
    expect(replay.isError).toBe(false);
    expect(replay.text).toBe(first.text);

    const after = await session.accept(requestId, submissionToken, OTHER_VALID_CANDIDATE);
    expectError(after, 'HANDOFF_CONFLICT', requestId);
    expect(after.text).toBe(whileValidating.text);

    const again = await session.accept(requestId, submissionToken, SEED_CANDIDATE);
    expect(again.text).toBe(first.text);
    expect(validated()).toBe(1);
  });
});

describe('the correction budget [SEED-BUDGET]', () => {
  it('an invalid candidate gets feedback once; resubmitting it costs nothing; the corrected one completes [SEED-BUDGET]', async () => {
    const { engine, instance, validated } = harness();
    const session = engine.openSession();
    const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST);

    const invalid = await session.accept(requestId, submissionToken, INVALID_CANDIDATE);
    const error = expectError(invalid, 'CANDIDATE_INVALID', requestId);
    expect(error.category).toBe('candidate');
    expect(error.retryable).toBe(true);
    const issues = error.details?.['issues'] as { path: string; message: string }[];
    expect(issues.length).toBeGreaterThan(0);
    for (const issue of issues) expect(Object.keys(issue).sort()).toEqual(['message', 'path']);
    expect(issues.map((i) => i.path)).toContain('/intents');
    expect(error.details?.['correction']).toEqual({ allowed: true, remaining: 1 });
    expect(invalid.text).not.toContain(INVALID_CANDIDATE);

    const live = () => engine.snapshot().sessions.find((s) => s.id === session.id)?.live[0];
    expect(live()).toMatchObject({ requestId, state: 'correcting', validations: 1 });

    // The machine answers `feedback`: the same CANDIDATE_INVALID, byte for byte, rebuilt from the kept outcome.
    const resubmitted = await session.accept(requestId, submissionToken, INVALID_CANDIDATE);
    expect(resubmitted.text).toBe(invalid.text);
    await flush();
    expect(validated()).toBe(1);
    expect(live()).toMatchObject({ state: 'correcting', validations: 1 });

    const corrected = await session.accept(requestId, submissionToken, SEED_CANDIDATE);
    expectResult(corrected);
    expect(corrected.text).toBe(SEED_RESULT_TEXT);
    expect(validated()).toBe(2);
    expect(engine.snapshot().retained).toEqual([
      expect.objectContaining({ requestId, state: 'completed', validations: 2 }) as unknown,
    ]);

    expect((await session.accept(requestId, submissionToken, SEED_CANDIDATE)).text).toBe(corrected.text);
    expectError(await session.accept(requestId, submissionToken, INVALID_CANDIDATE), 'HANDOFF_CONFLICT', requestId);
  });

  it('a second invalid candidate is rejected for good, replays identically and is never revalidated [SEED-BUDGET] [SEED-REPLAY]', async () => {
    const { engine, instance, validated } = harness();
    const session = engine.openSession();
    const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST);

    expectError(await session.accept(requestId, submissionToken, INVALID_CANDIDATE), 'CANDIDATE_INVALID', requestId);
    const rejected = await session.accept(requestId, submissionToken, OTHER_INVALID_CANDIDATE);
    const error = expectError(rejected, 'CANDIDATE_REJECTED', requestId);
    expect(error.retryable).toBe(false);
    expect(error.category).toBe('candidate');
    expect(error.details?.['correction']).toEqual({ allowed: false, remaining: 0 });
    expect((error.details?.['issues'] as unknown[]).length).toBeGreaterThan(0);
    expect(validated()).toBe(2);

    const replay = await session.accept(requestId, submissionToken, OTHER_INVALID_CANDIDATE);
    expect(replay.isError).toBe(true);
    expect(replay.text).toBe(rejected.text);

    // The budget is spent for good: neither the valid candidate nor the first one gets another validation.
    expectError(await session.accept(requestId, submissionToken, SEED_CANDIDATE), 'HANDOFF_CONFLICT', requestId);
    expectError(await session.accept(requestId, submissionToken, INVALID_CANDIDATE), 'HANDOFF_CONFLICT', requestId);
    await flush();
    expect(validated()).toBe(2);
    expect(engine.snapshot().retained).toEqual([
      expect.objectContaining({ requestId, state: 'completed', validations: 2 }) as unknown,
    ]);
    expect((await session.accept(requestId, submissionToken, OTHER_INVALID_CANDIDATE)).text).toBe(rejected.text);
  });
});

describe('cancel', () => {
  const reasons = ['cancelled', 'refusal', 'incomplete'] as const;

  describe.each(reasons)('with reason %s', (reason) => {
    it('in prepared: cancelled, then HANDOFF_CANCELLED with the reason, then already_cancelled', async () => {
      const { engine, instance } = harness();
      const session = engine.openSession();
      const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST);

      expect(session.cancel(requestId, reason)).toEqual({ requestId, status: 'cancelled' });
      const refused = expectError(
        await session.accept(requestId, submissionToken, SEED_CANDIDATE),
        'HANDOFF_CANCELLED',
        requestId,
      );
      expect(refused.details).toEqual({ reason });
      expect(refused.category).toBe('cancelled');
      expect(session.cancel(requestId, reason)).toEqual({ requestId, status: 'already_cancelled' });
      expect(session.cancel(requestId, 'cancelled')).toEqual({ requestId, status: 'already_cancelled' });
    });

    it('in validating: the waiter gets HANDOFF_CANCELLED with the reason and the validation never runs', async () => {
      const { engine, instance, validated } = harness();
      const session = engine.openSession();
      const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST);

      const parses = countParsesOf(SEED_CANDIDATE);
      const waiting = session.accept(requestId, submissionToken, SEED_CANDIDATE);
      expect(engine.snapshot().sessions[0]?.live[0]?.state).toBe('validating');
      expect(session.cancel(requestId, reason)).toEqual({ requestId, status: 'cancelled' });
      const waiter = expectError(await waiting, 'HANDOFF_CANCELLED', requestId);
      expect(waiter.details).toEqual({ reason });
      await flush();
      parses.restore();
      expect(validated()).toBe(0);
      // The machine abandoned the validation on leaving validating: the validator never even parsed the candidate.
      expect(parses.count()).toBe(0);

      const later = expectError(
        await session.accept(requestId, submissionToken, SEED_CANDIDATE),
        'HANDOFF_CANCELLED',
        requestId,
      );
      expect(later.details).toEqual({ reason });
      expect(session.cancel(requestId, reason)).toEqual({ requestId, status: 'already_cancelled' });
    });

    it('in correcting: cancelled, then HANDOFF_CANCELLED with the reason for the corrected candidate', async () => {
      const { engine, instance, validated } = harness();
      const session = engine.openSession();
      const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST);

      expectError(await session.accept(requestId, submissionToken, INVALID_CANDIDATE), 'CANDIDATE_INVALID');
      expect(session.cancel(requestId, reason)).toEqual({ requestId, status: 'cancelled' });
      const refused = expectError(
        await session.accept(requestId, submissionToken, SEED_CANDIDATE),
        'HANDOFF_CANCELLED',
        requestId,
      );
      expect(refused.details).toEqual({ reason });
      await flush();
      expect(validated()).toBe(1);
      expect(session.cancel(requestId, reason)).toEqual({ requestId, status: 'already_cancelled' });
    });
  });

  it('after completion answers already_completed and the result still replays', async () => {
    const { engine, instance } = harness();
    const session = engine.openSession();
    const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST);
    const done = await session.accept(requestId, submissionToken, SEED_CANDIDATE);
    expectResult(done);
    for (const reason of reasons)
      expect(session.cancel(requestId, reason)).toEqual({ requestId, status: 'already_completed' });
    expect((await session.accept(requestId, submissionToken, SEED_CANDIDATE)).text).toBe(done.text);
  });

  it('of an unknown or another session’s request throws HANDOFF_NOT_FOUND', () => {
    const { engine, instance } = harness();
    const session = engine.openSession();
    const unknown = randomUUID();
    const error = thrown(() => session.cancel(unknown), 'HANDOFF_NOT_FOUND');
    expect(error.requestId).toBe(unknown);

    const { requestId } = engine.openSession().prepare(instance, SEED_REQUEST);
    expect(thrown(() => session.cancel(requestId), 'HANDOFF_NOT_FOUND').requestId).toBe(requestId);
  });
});

describe('the deadline [SEED-DEADLINE]', () => {
  it('is reported as expiresAt = prepare time + timeoutMs, and absent without a deadline [SEED-DEADLINE]', () => {
    const { engine, instance, clock } = harness();
    const session = engine.openSession();
    const withDeadline = session.prepare(instance, SEED_REQUEST, { timeoutMs: 1500 });
    expect(withDeadline.expiresAt).toBe(new Date(T0 + 1500).toISOString());
    clock.increment(250);
    expect(session.prepare(instance, SEED_REQUEST, { timeoutMs: 1500 }).expiresAt).toBe(
      new Date(T0 + 250 + 1500).toISOString(),
    );
    const without = session.prepare(instance, SEED_REQUEST);
    expect('expiresAt' in without).toBe(false);
    const views = engine.snapshot().sessions[0]?.live ?? [];
    expect(views.find((v) => v.requestId === without.requestId)).not.toHaveProperty('expiresAt');
  });

  it('comes from the instance timeoutMs unless the prepare call gives one [SEED-DEADLINE]', () => {
    const { engine, instance } = harness({}, { timeoutMs: 5000 });
    const session = engine.openSession();
    expect(session.prepare(instance, SEED_REQUEST).expiresAt).toBe(new Date(T0 + 5000).toISOString());
    expect(session.prepare(instance, SEED_REQUEST, { timeoutMs: 1000 }).expiresAt).toBe(
      new Date(T0 + 1000).toISOString(),
    );
  });

  it('expires a prepared request exactly at the deadline [SEED-DEADLINE]', async () => {
    const { engine, instance, clock } = harness();
    const session = engine.openSession();
    const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST, { timeoutMs: 1000 });

    clock.increment(999);
    expect(engine.snapshot().sessions[0]?.live[0]?.state).toBe('prepared');
    clock.increment(1);
    expect(engine.snapshot().sessions[0]?.live).toEqual([]);
    const expired = expectError(
      await session.accept(requestId, submissionToken, SEED_CANDIDATE),
      'HANDOFF_EXPIRED',
      requestId,
    );
    expect(expired.category).toBe('timeout');
    expect(expired.retryable).toBe(false);
    expect(session.cancel(requestId, 'cancelled')).toEqual({
      requestId,
      status: 'already_completed',
      reason: 'expired',
    });
  });

  it('counts from prepare, not from accept: a validating request expires and its waiters get HANDOFF_EXPIRED [SEED-DEADLINE]', async () => {
    const { engine, instance, clock, validated } = harness();
    const session = engine.openSession();
    const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST, { timeoutMs: 1000 });

    clock.increment(600);
    const first = session.accept(requestId, submissionToken, SEED_CANDIDATE);
    const joined = session.accept(requestId, submissionToken, SEED_CANDIDATE);
    clock.increment(399);
    expect(engine.snapshot().sessions[0]?.live[0]?.state).toBe('validating');
    clock.increment(1);
    expectError(await first, 'HANDOFF_EXPIRED', requestId);
    expectError(await joined, 'HANDOFF_EXPIRED', requestId);
    await flush();
    expect(validated()).toBe(0);

    expectError(await session.accept(requestId, submissionToken, SEED_CANDIDATE), 'HANDOFF_EXPIRED', requestId);
    expect(session.cancel(requestId, 'refusal')).toEqual({ requestId, status: 'already_completed', reason: 'expired' });
  });

  it('covers correction: a correcting request from an instance deadline expires on time [SEED-DEADLINE]', async () => {
    const { engine, instance, clock } = harness({}, { timeoutMs: 1000 });
    const session = engine.openSession();
    const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST);

    clock.increment(500);
    expectError(await session.accept(requestId, submissionToken, INVALID_CANDIDATE), 'CANDIDATE_INVALID', requestId);
    clock.increment(499);
    expect(engine.snapshot().sessions[0]?.live[0]?.state).toBe('correcting');
    clock.increment(1);
    expect(engine.snapshot().sessions[0]?.live).toEqual([]);
    expect(engine.snapshot().retained).toEqual([
      expect.objectContaining({ requestId, state: 'expired', validations: 1 }) as unknown,
    ]);
    expectError(await session.accept(requestId, submissionToken, SEED_CANDIDATE), 'HANDOFF_EXPIRED', requestId);
    expectError(await session.accept(requestId, submissionToken, INVALID_CANDIDATE), 'HANDOFF_EXPIRED', requestId);
    expect(session.cancel(requestId)).toEqual({ requestId, status: 'already_completed', reason: 'expired' });
  });

  it('a request completed before its deadline stays completed when the time passes [SEED-DEADLINE]', async () => {
    const { engine, instance, clock } = harness();
    const session = engine.openSession();
    const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST, { timeoutMs: 1000 });
    const done = await session.accept(requestId, submissionToken, SEED_CANDIDATE);
    expectResult(done);
    clock.increment(5000);
    expect((await session.accept(requestId, submissionToken, SEED_CANDIDATE)).text).toBe(done.text);
    expect(engine.snapshot().retained[0]?.state).toBe('completed');
  });

  describe('is judged by the clock when an event arrives, not only by the timer [S03-DEADLINE-ARRIVAL]', () => {
    /** A busy event loop: the clock moves on, but the deadline timer has not run (and here never runs). */
    function busyHarness() {
      let now = T0;
      const timers: (() => void)[] = [];
      const engine = new HandoffEngine({
        clock: {
          now: () => now,
          setTimeout: (fn: () => void) => timers.push(fn),
          clearTimeout: () => undefined,
        },
      });
      const instance = new Intent({}).asInstance('main');
      return {
        engine,
        session: engine.openSession(),
        instance,
        advance: (ms: number) => {
          now += ms;
        },
        timers,
      };
    }

    it('an accept at or after expiresAt is HANDOFF_EXPIRED and never validated; one just before it completes', async () => {
      const { engine, session, instance, advance, timers } = busyHarness();
      const late = session.prepare(instance, SEED_REQUEST, { timeoutMs: 100 });
      const early = session.prepare(instance, SEED_REQUEST, { timeoutMs: 101 });
      expect(timers).toHaveLength(2);
      advance(100);
      expectResult(await session.accept(early.requestId, early.submissionToken, SEED_CANDIDATE));
      expectError(
        await session.accept(late.requestId, late.submissionToken, SEED_CANDIDATE),
        'HANDOFF_EXPIRED',
        late.requestId,
      );
      // The request really is expired: retained as such, answering as such, although its timer never ran.
      expect(engine.snapshot().sessions[0]?.live).toEqual([]);
      expect(engine.snapshot().retained).toContainEqual(
        expect.objectContaining({ requestId: late.requestId, state: 'expired', validations: 0 }) as unknown,
      );
      expectError(
        await session.accept(late.requestId, late.submissionToken, SEED_CANDIDATE),
        'HANDOFF_EXPIRED',
        late.requestId,
      );
      expect(session.cancel(late.requestId)).toEqual({
        requestId: late.requestId,
        status: 'already_completed',
        reason: 'expired',
      });
    });

    it('[I13-CANCEL-EXPIRED] a cancel at or after expiresAt answers already_completed with the reason expired', () => {
      const { session, instance, advance } = busyHarness();
      const { requestId } = session.prepare(instance, SEED_REQUEST, { timeoutMs: 100 });
      advance(250);
      expect(session.cancel(requestId, 'refusal')).toEqual({
        requestId,
        status: 'already_completed',
        reason: 'expired',
      });
      expect(session.cancel(requestId, 'refusal')).toEqual({
        requestId,
        status: 'already_completed',
        reason: 'expired',
      });
    });

    it('a validation that ends after the deadline is abandoned: its waiters get HANDOFF_EXPIRED, not the result', async () => {
      const { engine, session, instance, advance } = busyHarness();
      const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST, { timeoutMs: 100 });
      advance(50);
      const first = session.accept(requestId, submissionToken, SEED_CANDIDATE);
      const joined = session.accept(requestId, submissionToken, SEED_CANDIDATE);
      advance(50); // the validation is still queued behind a busy loop when the deadline passes
      expectError(await first, 'HANDOFF_EXPIRED', requestId);
      expectError(await joined, 'HANDOFF_EXPIRED', requestId);
      expect(engine.snapshot().retained).toContainEqual(
        expect.objectContaining({ requestId, state: 'expired', validations: 1 }) as unknown,
      );
      expectError(await session.accept(requestId, submissionToken, SEED_CANDIDATE), 'HANDOFF_EXPIRED', requestId);
    });

    it('the same events at the same times get the same answers, whatever the load', async () => {
      const answers: string[][] = [];
      for (let run = 0; run < 2; run++) {
        const { session, instance, advance } = busyHarness();
        const a = session.prepare(instance, SEED_REQUEST, { timeoutMs: 100 });
        const b = session.prepare(instance, SEED_REQUEST, { timeoutMs: 100 });
        advance(99);
        const one = await session.accept(a.requestId, a.submissionToken, INVALID_CANDIDATE);
        advance(1);
        const two = await session.accept(a.requestId, a.submissionToken, SEED_CANDIDATE);
        const three = await session.accept(b.requestId, b.submissionToken, SEED_CANDIDATE);
        answers.push([one, two, three].map((r) => (r.isError ? r.error.code : 'ok')));
      }
      expect(answers[0]).toEqual(['CANDIDATE_INVALID', 'HANDOFF_EXPIRED', 'HANDOFF_EXPIRED']);
      expect(answers[1]).toEqual(answers[0]);
    });
  });

  it('by default there is none: no timer is ever set, however much time passes [SEED-DEADLINE]', async () => {
    const { engine, instance, clock, timersSet } = harness();
    const session = engine.openSession();
    const idle = session.prepare(instance, SEED_REQUEST);
    const corrected = session.prepare(instance, SEED_REQUEST);
    expectError(
      await session.accept(corrected.requestId, corrected.submissionToken, INVALID_CANDIDATE),
      'CANDIDATE_INVALID',
    );
    expectResult(await session.accept(corrected.requestId, corrected.submissionToken, SEED_CANDIDATE));
    const cancelled = session.prepare(instance, SEED_REQUEST);
    session.cancel(cancelled.requestId);

    clock.increment(30 * 24 * 3600 * 1000);
    expect(timersSet()).toBe(0);
    expect(engine.snapshot().sessions[0]?.live).toEqual([
      expect.objectContaining({ requestId: idle.requestId, state: 'prepared' }) as unknown,
    ]);
    expectResult(await session.accept(idle.requestId, idle.submissionToken, SEED_CANDIDATE));
    expect(timersSet()).toBe(0);
  });
});

describe('a validation that crashes [S03-VALIDATION-CRASH]', () => {
  it('ends the request with its own answer: every waiter gets INTERNAL, later calls HANDOFF_CANCELLED (internal_error)', async () => {
    const { engine, instance } = harness();
    const transitions: HandoffTransition[] = [];
    engine.inspect((t) => transitions.push(t));
    const session = engine.openSession();
    const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST);
    const stringify = JSON.stringify.bind(JSON);
    // A bug inside validation: serialising the result throws.
    const spy = vi
      .spyOn(JSON, 'stringify')
      .mockImplementation((value: unknown, replacer?: unknown, space?: unknown) => {
        if ((value as { schemaVersion?: unknown } | null)?.schemaVersion !== undefined && 'turn' in (value as object))
          throw new RangeError('Maximum call stack size exceeded');
        return stringify(value, replacer as undefined, space as undefined);
      });
    let first: HandoffReply;
    let joined: HandoffReply;
    try {
      const a = session.accept(requestId, submissionToken, SEED_CANDIDATE);
      const b = session.accept(requestId, submissionToken, SEED_CANDIDATE);
      [first, joined] = await Promise.all([a, b]);
    } finally {
      spy.mockRestore();
    }
    expect(joined).toBe(first);
    const error = expectError(first, 'INTERNAL', requestId);
    expect(error.message).not.toContain('Maximum call stack');
    expect(transitions.at(-1)).toMatchObject({
      event: 'VALIDATED',
      from: 'validating',
      to: 'cancelled',
      answer: 'failed',
    });

    // The reason is the machine's own, never the host's "incomplete"; the same answer replays, nothing is live.
    expect(session.size).toBe(0);
    const later = expectError(
      await session.accept(requestId, submissionToken, SEED_CANDIDATE),
      'HANDOFF_CANCELLED',
      requestId,
    );
    expect(later.details).toEqual({ reason: 'internal_error' });
    expect(session.cancel(requestId)).toEqual({ requestId, status: 'already_cancelled' });
  });
});

describe('session close [S03-SESSION-CLOSE]', () => {
  it('cancels live requests, wakes waiters with SESSION_CLOSED, refuses later calls and drops retained replies [S03-SESSION-CLOSE]', async () => {
    const { engine, instance, validated } = harness();
    const session = engine.openSession('closing');
    const other = engine.openSession('other');

    const done = session.prepare(instance, SEED_REQUEST);
    expectResult(await session.accept(done.requestId, done.submissionToken, SEED_CANDIDATE));
    const correcting = session.prepare(instance, SEED_REQUEST);
    expectError(
      await session.accept(correcting.requestId, correcting.submissionToken, INVALID_CANDIDATE),
      'CANDIDATE_INVALID',
    );
    const idle = session.prepare(instance, SEED_REQUEST);
    const validating = session.prepare(instance, SEED_REQUEST);
    const w1 = session.accept(validating.requestId, validating.submissionToken, SEED_CANDIDATE);
    const w2 = session.accept(validating.requestId, validating.submissionToken, SEED_CANDIDATE);
    const survivor = other.prepare(instance, SEED_REQUEST);
    expect(validated()).toBe(2);
    expect(engine.snapshot().store.items).toBe(1);

    await session.close();
    const closed1 = expectError(await w1, 'SESSION_CLOSED', validating.requestId);
    expect(closed1.category).toBe('handoff');
    expectError(await w2, 'SESSION_CLOSED', validating.requestId);
    await flush();
    expect(validated()).toBe(2);

    for (const task of [done, correcting, idle, validating])
      expectError(await session.accept(task.requestId, task.submissionToken, SEED_CANDIDATE), 'SESSION_CLOSED');
    thrown(() => session.cancel(idle.requestId), 'SESSION_CLOSED');
    thrown(() => session.prepare(instance, SEED_REQUEST), 'SESSION_CLOSED');

    const snap = engine.snapshot();
    expect(snap.sessions.map((s) => s.id)).toEqual([other.id]);
    expect(snap.retained).toEqual([]);
    expect(snap.store.items).toBe(0);
    expectError(
      await other.accept(done.requestId, done.submissionToken, SEED_CANDIDATE),
      'HANDOFF_NOT_FOUND',
      done.requestId,
    );

    expectResult(await other.accept(survivor.requestId, survivor.submissionToken, SEED_CANDIDATE));
    await session.close();
  });
});

describe('the terminal store [SEED-STORE]', () => {
  it('keeps 32 replies: the 33rd evicts the oldest, the others replay [SEED-STORE]', async () => {
    const { engine, instance } = harness();
    const evicted: HandoffTransition[] = [];
    engine.inspect((t) => {
      if (t.event === 'evict') evicted.push(t);
    });
    const session = engine.openSession();
    const tasks = [];
    const texts: string[] = [];
    for (let i = 0; i < 33; i += 1) {
      const task = session.prepare(instance, SEED_REQUEST);
      const reply = await session.accept(task.requestId, task.submissionToken, SEED_CANDIDATE);
      expectResult(reply);
      tasks.push(task);
      texts.push(reply.text);
    }
    const usage = engine.snapshot().store;
    expect(usage).toMatchObject({ items: 32, maxItems: 32, maxBytes: 8 * MiB });
    expect(usage.bytes).toBeGreaterThan(0);
    expect(usage.bytes).toBeLessThanOrEqual(8 * MiB);

    const [oldest, ...rest] = tasks;
    if (oldest === undefined) throw new Error('no task');
    // The inspection stream says so, in the domain's words: one `evict` step of the oldest, from and to completed.
    expect(evicted).toEqual([
      expect.objectContaining({
        requestId: oldest.requestId,
        sessionId: session.id,
        event: 'evict',
        from: 'completed',
        to: 'completed',
        validations: 1,
      }) as unknown,
    ]);
    // Usage counts the LRU's evictions so far; a session close drops records without counting them.
    expect(engine.store.usage().evictions).toBe(1);
    expectError(
      await session.accept(oldest.requestId, oldest.submissionToken, SEED_CANDIDATE),
      'HANDOFF_NOT_FOUND',
      oldest.requestId,
    );
    thrown(() => session.cancel(oldest.requestId), 'HANDOFF_NOT_FOUND');
    for (const [i, task] of rest.entries()) {
      const replay = await session.accept(task.requestId, task.submissionToken, SEED_CANDIDATE);
      expect(replay.text).toBe(texts[i + 1]);
    }
  });

  it('returns a reply larger than the byte bound but does not keep it [SEED-STORE]', async () => {
    const { engine, instance } = harness({ store: { maxBytes: 1000 } });
    const session = engine.openSession();
    const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST);
    const reply = await session.accept(requestId, submissionToken, SEED_CANDIDATE);
    expectResult(reply);
    expect(reply.text).toBe(SEED_RESULT_TEXT);
    expect(Buffer.byteLength(reply.text, 'utf8')).toBeGreaterThan(1000);
    expect(engine.snapshot().store).toMatchObject({ items: 0, bytes: 0, maxBytes: 1000 });
    expectError(await session.accept(requestId, submissionToken, SEED_CANDIDATE), 'HANDOFF_NOT_FOUND', requestId);
  });
});

describe('identity', () => {
  it('other session, unknown, evicted and wrong token give byte-identical HANDOFF_NOT_FOUND [S03-NOT-FOUND]', async () => {
    const { engine, instance } = harness({ store: { maxItems: 1 } });
    const owner = engine.openSession();
    const stranger = engine.openSession();
    const task = owner.prepare(instance, SEED_REQUEST);
    const { requestId, submissionToken } = task;
    const wrongToken = owner.prepare(instance, SEED_REQUEST).submissionToken;

    const otherSession = await stranger.accept(requestId, submissionToken, SEED_CANDIDATE);
    const error = expectError(otherSession, 'HANDOFF_NOT_FOUND', requestId);
    expect(error.category).toBe('handoff');
    expect(error.retryable).toBe(false);
    expect(error.message).toMatch(/prepare again/);

    const texts = [
      otherSession.text,
      (await owner.accept(requestId, wrongToken, SEED_CANDIDATE)).text,
      (await owner.accept(requestId, '', SEED_CANDIDATE)).text,
    ];
    // The live request was not disturbed by those probes.
    const done = await owner.accept(requestId, submissionToken, SEED_CANDIDATE);
    expectResult(done);
    texts.push((await owner.accept(requestId, wrongToken, SEED_CANDIDATE)).text);
    texts.push((await stranger.accept(requestId, submissionToken, SEED_CANDIDATE)).text);

    // Evict it (maxItems 1) and ask with the right token.
    const next = owner.prepare(instance, SEED_REQUEST);
    expectResult(await owner.accept(next.requestId, next.submissionToken, SEED_CANDIDATE));
    texts.push((await owner.accept(requestId, submissionToken, SEED_CANDIDATE)).text);
    expect(new Set(texts).size).toBe(1);

    const unknown = randomUUID();
    const unknownReply = await owner.accept(unknown, submissionToken, SEED_CANDIDATE);
    expectError(unknownReply, 'HANDOFF_NOT_FOUND', unknown);
    expect(unknownReply.text).toBe(otherSession.text.replace(requestId, unknown));
    expect(otherSession.text).not.toContain(submissionToken);
  });

  it('requestId is a UUID v4 and the token has at least 128 random bits, new on every prepare [S03-TOKEN]', () => {
    const { engine, instance } = harness();
    const sessions = [engine.openSession(), engine.openSession()];
    const ids = new Set<string>();
    const tokens = new Set<string>();
    for (let i = 0; i < 40; i += 1) {
      const session = sessions[i % 2];
      if (session === undefined) throw new Error('no session');
      const task = session.prepare(instance, SEED_REQUEST);
      expect(task.requestId).toMatch(UUID_V4);
      expect(task.submissionToken).toMatch(/^[A-Za-z0-9_-]{22,}$/);
      expect(Buffer.from(task.submissionToken, 'base64url').length).toBeGreaterThanOrEqual(16);
      ids.add(task.requestId);
      tokens.add(task.submissionToken);
    }
    expect(ids.size).toBe(40);
    expect(tokens.size).toBe(40);
    const snapshot = JSON.stringify(engine.snapshot());
    for (const token of tokens) expect(snapshot).not.toContain(token);
  });
});

describe('the pending cap [S03-PENDING-CAP]', () => {
  it('refuses the prepare beyond maxPendingPerSession with CAPACITY_EXCEEDED, disturbing nothing [S03-PENDING-CAP]', async () => {
    const { engine, instance } = harness({ maxPendingPerSession: 3 });
    const session = engine.openSession();
    const other = engine.openSession();
    const pending = [0, 1, 2].map(() => session.prepare(instance, SEED_REQUEST));
    const error = thrown(() => session.prepare(instance, SEED_REQUEST), 'CAPACITY_EXCEEDED');
    expect(error.retryable).toBe(true);
    expect(error.category).toBe('handoff');
    expect(engine.snapshot().sessions.find((s) => s.id === session.id)?.live).toHaveLength(3);

    const otherTasks = [0, 1, 2].map(() => other.prepare(instance, SEED_REQUEST));
    expect(otherTasks).toHaveLength(3);

    for (const task of pending)
      expectResult(await session.accept(task.requestId, task.submissionToken, SEED_CANDIDATE));
    // Finished requests free their slots.
    const more = [0, 1, 2].map(() => session.prepare(instance, SEED_REQUEST));
    thrown(() => session.prepare(instance, SEED_REQUEST), 'CAPACITY_EXCEEDED');
    const first = more[0];
    if (first === undefined) throw new Error('no task');
    session.cancel(first.requestId);
    expect(session.prepare(instance, SEED_REQUEST).requestId).toMatch(UUID_V4);
  });
});

describe('signals on accept [S03-SIGNAL-ACCEPT]', () => {
  it('aborts only that caller; the shared validation goes on for the others [S03-SIGNAL-ACCEPT]', async () => {
    const { engine, instance, validated } = harness();
    const session = engine.openSession();
    const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST);
    const controller = new AbortController();

    const aborted = session.accept(requestId, submissionToken, SEED_CANDIDATE, { signal: controller.signal });
    const staying = session.accept(requestId, submissionToken, SEED_CANDIDATE);
    controller.abort();
    const error = expectError(await aborted, 'ABORTED', requestId);
    expect(error.category).toBe('cancelled');
    expect(error.retryable).toBe(false);

    const result = await staying;
    expectResult(result);
    expect(validated()).toBe(1);
    expect((await session.accept(requestId, submissionToken, SEED_CANDIDATE)).text).toBe(result.text);
  });

  it('an already-aborted signal gets ABORTED at once', async () => {
    const { engine, instance } = harness();
    const session = engine.openSession();
    const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST);
    const reply = await session.accept(requestId, submissionToken, SEED_CANDIDATE, { signal: AbortSignal.abort() });
    expectError(reply, 'ABORTED', requestId);
    expectResult(await session.accept(requestId, submissionToken, SEED_CANDIDATE));
  });
});

describe('inspection [S03-INSPECT]', () => {
  it('[S03-INSPECT] a listener that subscribes late sees the next step of a request prepared before, from where it is', async () => {
    const { engine, instance } = harness();
    const session = engine.openSession();
    const task = session.prepare(instance, SEED_REQUEST);
    const transitions: HandoffTransition[] = [];
    const stop = engine.inspect((t) => transitions.push(t));
    expectResult(await session.accept(task.requestId, task.submissionToken, SEED_CANDIDATE));
    expect(transitions.map((t) => [t.from, t.event, t.to, t.answer])).toEqual([
      ['prepared', 'ACCEPT', 'validating', 'validate'],
      ['validating', 'VALIDATED', 'completed', 'result'],
    ]);
    stop();
    // Once nobody listens, nothing is announced.
    session.cancel(task.requestId);
    expect(transitions).toHaveLength(2);
  });

  it('streams every transition and snapshots live requests without tokens or candidate text [S03-INSPECT]', async () => {
    const { engine, instance, clock } = harness();
    const transitions: HandoffTransition[] = [];
    engine.inspect((t) => transitions.push(t));
    const session = engine.openSession('inspected');
    const valid = markedValidCandidate('zq-valid-marker');
    const invalid = markedInvalidCandidate('zq-invalid-marker');

    const done = session.prepare(instance, SEED_REQUEST);
    const doneReply = await session.accept(done.requestId, done.submissionToken, valid);
    expectResult(doneReply);
    const base = { sessionId: session.id, requestId: done.requestId, instance: 'main' };
    const at = new Date(T0).toISOString();
    expect(transitions.slice(0, 3)).toEqual([
      { ...base, at, from: null, event: 'prepare', to: 'prepared', answer: 'none', validations: 0, mode: 'host' },
      {
        ...base,
        at,
        from: 'prepared',
        event: 'ACCEPT',
        to: 'validating',
        answer: 'validate',
        validations: 1,
        candidate: {
          bytes: Buffer.byteLength(valid, 'utf8'),
          hash: createHash('sha256').update(valid).digest('hex').slice(0, 12),
        },
      },
      {
        ...base,
        at,
        from: 'validating',
        event: 'VALIDATED',
        to: 'completed',
        answer: 'result',
        validations: 1,
        outcome: 'valid',
      },
    ]);

    clock.increment(1000);
    const correcting = session.prepare(instance, SEED_REQUEST, { timeoutMs: 60_000 });
    expectError(await session.accept(correcting.requestId, correcting.submissionToken, invalid), 'CANDIDATE_INVALID');
    const validating = session.prepare(instance, SEED_REQUEST);
    const waiting = session.accept(validating.requestId, validating.submissionToken, valid);
    const idle = session.prepare(instance, SEED_REQUEST);
    expect(transitions.filter((t) => t.requestId === correcting.requestId).at(-1)).toMatchObject({
      at: new Date(T0 + 1000).toISOString(),
      from: 'validating',
      event: 'VALIDATED',
      to: 'correcting',
      answer: 'invalid',
      validations: 1,
    });

    const snapshot = engine.snapshot();
    const hash = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 12);
    const view = snapshot.sessions.find((s) => s.id === session.id);
    expect(view).toMatchObject({ label: 'inspected', closed: false });
    expect(view?.live).toHaveLength(3);
    expect(view?.live.find((l) => l.requestId === correcting.requestId)).toEqual({
      requestId: correcting.requestId,
      instance: 'main',
      state: 'correcting',
      validations: 1,
      preparedAt: new Date(T0 + 1000).toISOString(),
      expiresAt: new Date(T0 + 61_000).toISOString(),
      candidate: { bytes: Buffer.byteLength(invalid, 'utf8'), hash: hash(invalid) },
    });
    const validatingView = view?.live.find((l) => l.requestId === validating.requestId);
    expect(validatingView).toMatchObject({ state: 'validating', validations: 1 });
    expect(validatingView?.candidate?.hash).toMatch(/^[0-9a-f]{12}$/);
    expect(validatingView?.candidate?.bytes).toBe(Buffer.byteLength(valid, 'utf8'));
    expect(view?.live.find((l) => l.requestId === idle.requestId)).not.toHaveProperty('candidate');
    expect(snapshot.retained).toEqual([
      expect.objectContaining({ requestId: done.requestId, state: 'completed', validations: 1 }) as unknown,
    ]);
    expect(snapshot.store).toMatchObject({ items: 1, maxItems: 32, maxBytes: 8 * MiB });

    expectResult(await waiting);
    await session.accept(done.requestId, done.submissionToken, valid);
    session.cancel(idle.requestId, 'refusal');
    // The inspection speaks the domain: a replay answered from the store is one `replay` step, and XState's own event
    // names (init, stop) never show.
    expect(transitions.filter((t) => t.requestId === done.requestId).slice(3)).toEqual([
      {
        ...base,
        at: expect.any(String) as unknown,
        from: 'completed',
        event: 'replay',
        to: 'completed',
        answer: 'replay',
        validations: 1,
        candidate: { bytes: Buffer.byteLength(valid, 'utf8'), hash: hash(valid) },
      },
    ]);
    // A CANCEL step carries its reason; the retained view says how each request ended.
    expect(transitions.filter((t) => t.requestId === idle.requestId).at(-1)).toMatchObject({
      event: 'CANCEL',
      to: 'cancelled',
      answer: 'withdrawn',
      reason: 'refusal',
    });
    expect(engine.snapshot().retained.find((r) => r.requestId === idle.requestId)).toMatchObject({
      state: 'cancelled',
      ended: 'withdrawn',
      reason: 'refusal',
    });
    expect(engine.snapshot().retained.find((r) => r.requestId === done.requestId)).toMatchObject({ ended: 'result' });
    expect(transitions.filter((t) => t.event.startsWith('xstate'))).toEqual([]);
    expect(new Set(transitions.map((t) => t.event))).toEqual(
      new Set(['prepare', 'ACCEPT', 'VALIDATED', 'CANCEL', 'replay']),
    );

    const outputs = [JSON.stringify(transitions), JSON.stringify(snapshot), JSON.stringify(engine.snapshot())];
    for (const out of outputs) {
      for (const task of [done, correcting, validating, idle]) expect(out).not.toContain(task.submissionToken);
      expect(out).not.toContain('zq-valid-marker');
      expect(out).not.toContain('zq-invalid-marker');
      expect(out).not.toContain('turnKind');
    }
  });
});

describe('options are checked at construction [S06-CONFIG-CHECKED]', () => {
  it.each([
    ['store.maxItems', { store: { maxItems: 0 } }],
    ['store.maxItems', { store: { maxItems: 33 } }],
    ['store.maxItems', { store: { maxItems: 2.5 } }],
    ['store.maxBytes', { store: { maxBytes: 1.5 } }],
    ['store.maxBytes', { store: { maxBytes: -1 } }],
    ['store.maxBytes', { store: { maxBytes: Infinity } }],
    ['maxPendingPerSession', { maxPendingPerSession: NaN }],
    ['maxPendingPerSession', { maxPendingPerSession: 0 }],
    ['maxPendingPerSession', { maxPendingPerSession: '64' }],
    ['retain', { retain: 'yes' }],
    ['clock', { clock: { now: () => 0 } }],
  ])('%s in %j is CONFIG_INVALID naming the option, never a removed bound', (option, options) => {
    const error = thrown(() => new HandoffEngine(options as never), 'CONFIG_INVALID');
    expect(error.message).toContain(`"${option}"`);
    expect(error.category).toBe('config');
  });

  it('an unknown option is named too, and a good set of options builds an engine with those bounds', () => {
    expect(thrown(() => new HandoffEngine({ maxPending: 3 } as never), 'CONFIG_INVALID').message).toContain(
      '"maxPending"',
    );
    const engine = new HandoffEngine({ maxPendingPerSession: 3, store: { maxItems: 2, maxBytes: 4096 } });
    expect(engine.maxPendingPerSession).toBe(3);
    expect(engine.snapshot().store).toMatchObject({ maxItems: 2, maxBytes: 4096 });
  });
});

describe('refusals at the door', () => {
  it('a disposed instance cannot prepare; a request prepared before disposal still completes [SEED-DISPOSED]', async () => {
    const { engine, intent, instance } = harness();
    const session = engine.openSession();
    const before = session.prepare(instance, SEED_REQUEST);
    intent.dispose();
    const error = thrown(() => session.prepare(instance, SEED_REQUEST), 'INSTANCE_DISPOSED');
    expect(error.category).toBe('config');
    expect(error.message).toContain('"main"');
    expect(session.size).toBe(1);
    expectResult(await session.accept(before.requestId, before.submissionToken, SEED_CANDIDATE));
  });

  it.each([
    ['an empty input', { input: '   ' }],
    ['an unknown key', { input: 'hello', schema: {} }],
    ['a missing input', {}],
    ['not an object', 'hello'],
    ['an unknown field', { input: 'hello', fields: ['nope'] }],
  ])('a bad request (%s) is INPUT_INVALID and prepares nothing', (_name, request) => {
    const { engine, instance } = harness();
    const session = engine.openSession();
    const error = thrown(() => session.prepare(instance, request), 'INPUT_INVALID');
    expect(error.category).toBe('input');
    expect(error.retryable).toBe(false);
    expect(session.size).toBe(0);
  });

  it('a prepare that fails after validation (serialising the task) registers nothing: no live request, no slot, no timer [S03-PREPARE-ATOMIC]', async () => {
    const { engine, instance, timersSet } = harness({ maxPendingPerSession: 2 });
    const session = engine.openSession();
    const stringify = JSON.stringify.bind(JSON);
    const spy = vi
      .spyOn(JSON, 'stringify')
      .mockImplementation((value: unknown, replacer?: unknown, space?: unknown) => {
        // The task, or its per-request material (serialised alone since issue 12: the per-plan parts are cached).
        const v = value as { kind?: unknown; referenceTime?: unknown; fields?: unknown } | null;
        if (v?.kind === 'model_task' || (v?.referenceTime !== undefined && v.fields !== undefined))
          throw new RangeError('Maximum call stack size exceeded');
        return stringify(value, replacer as undefined, space as undefined);
      });
    try {
      // A task too large to serialise is the caller's request being too large: a typed INPUT_INVALID.
      for (let i = 0; i < 5; i++)
        thrown(() => session.prepare(instance, SEED_REQUEST, { timeoutMs: 1000 }), 'INPUT_INVALID');
    } finally {
      spy.mockRestore();
    }
    expect(session.size).toBe(0);
    expect(engine.snapshot().sessions[0]?.live).toEqual([]);
    expect(timersSet()).toBe(0);
    // Both slots are still free.
    const a = session.prepare(instance, SEED_REQUEST);
    session.prepare(instance, SEED_REQUEST);
    expect(session.size).toBe(2);
    expectResult(await session.accept(a.requestId, a.submissionToken, SEED_CANDIDATE));
  });

  it('a candidateText over limits.maxCandidateBytes (UTF-8 bytes) is INPUT_INVALID and costs nothing', async () => {
    const { engine, instance, validated } = harness({}, { limits: { maxCandidateBytes: 64 } });
    const session = engine.openSession();
    const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST);

    const tooLarge = `"${'订'.repeat(21)}"`; // 23 characters, 65 bytes
    expect(Buffer.byteLength(tooLarge, 'utf8')).toBe(65);
    const error = expectError(await session.accept(requestId, submissionToken, tooLarge), 'INPUT_INVALID', requestId);
    expect(error.details?.['issues']).toEqual([{ path: '/candidateText', message: expect.any(String) as unknown }]);
    expect(JSON.stringify(error)).not.toContain('订订');
    expect(engine.snapshot().sessions[0]?.live[0]).toMatchObject({ state: 'prepared', validations: 0 });

    const fits = `"${'订'.repeat(20)}12"`; // exactly 64 bytes: validated (and found not to be an object)
    expect(Buffer.byteLength(fits, 'utf8')).toBe(64);
    expectError(await session.accept(requestId, submissionToken, fits), 'CANDIDATE_INVALID', requestId);
    expect(validated()).toBe(1);

    expect(new Intent({}).model.limits.maxCandidateBytes).toBe(MiB);
  });
});
