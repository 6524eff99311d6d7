/**
 * The memoised replay of `trace check` (src/trace/replay.ts) against the machine run on every concrete step: for random
 * event sequences (any event, any order, candidates equal or not, early and late arrivals, both modes, with and without
 * a deadline), both give the same state, answer and validation count at every step.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { HandoffEvent } from '../../machines/handoff.js';
import { replayPrepare, replayStep } from '../../src/trace/replay.js';
import { propertySeed } from '../support/fastCheckSeed.js';

const event: fc.Arbitrary<(at: number) => HandoffEvent> = fc.oneof(
  fc
    .constantFrom('a', 'b', 'c')
    .map((h) => (at: number): HandoffEvent => ({ type: 'ACCEPT', candidate: { hash: h, text: h }, at })),
  fc.constantFrom('valid', 'invalid', 'crashed').map(
    (o) =>
      (at: number): HandoffEvent =>
        o === 'valid'
          ? { type: 'VALIDATED', ok: true, text: '', at }
          : o === 'crashed'
            ? { type: 'VALIDATED', ok: false, crashed: true, at }
            : { type: 'VALIDATED', ok: false, issues: [], at },
  ),
  fc.constantFrom('cancelled', 'refusal', 'incomplete', 'aborted').map((reason) => (at: number): HandoffEvent => ({
    type: 'CANCEL',
    reason: reason as 'cancelled',
    at,
  })),
  fc.constant((): HandoffEvent => ({ type: 'DEADLINE' })),
  fc.constant((at: number): HandoffEvent => ({ type: 'CLOSE', at })),
);

describe('trace check replay', () => {
  it('the memoised replay answers every step as the machine does on the concrete request', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('host' as const, 'executor' as const),
        fc.option(fc.integer({ min: 1, max: 50 }), { nil: undefined }),
        fc.array(fc.tuple(event, fc.integer({ min: 0, max: 20 })), { maxLength: 12 }),
        (mode, expiresAt, steps) => {
          const memo = replayPrepare('r', mode, expiresAt).model;
          const exact = replayPrepare('r', mode, expiresAt, true).model;
          let at = 0;
          for (const [make, dt] of steps) {
            at += dt;
            const e = make(at);
            expect(replayStep(memo, e)).toEqual(replayStep(exact, e, true));
            expect(memo).toEqual(exact);
          }
        },
      ),
      { seed: propertySeed(), numRuns: 300 },
    );
  });
});
