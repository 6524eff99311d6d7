/**
 * The prepare reply's text is built from per-plan parts serialised once (issue 12's optimisation of `serialiseTask`):
 * it must stay `JSON.stringify(task)` byte for byte, with and without a deadline, for repeated and for different
 * requests of the same instance, and for different instances.
 */
import { describe, expect, it } from 'vitest';
import { HandoffEngine } from '../../src/engine/engine.js';
import { Intent } from '../../src/intent.js';
import { benchIntent, REQUEST } from '../../bench/fixture.js';

describe('prepare reply text', () => {
  it('is JSON.stringify of the task, byte for byte, however often the plan is reused', () => {
    const engine = new HandoffEngine();
    const session = engine.openSession('t');
    const travel = benchIntent().asInstance('travel');
    const plain = new Intent({}).asInstance('plain');
    const requests: [ReturnType<Intent['asInstance']>, unknown, number | undefined][] = [
      [travel, REQUEST, undefined],
      [travel, REQUEST, 5000],
      [travel, { ...REQUEST, input: 'Fly "me" to Rome \u2028 now\\' }, undefined],
      [travel, { ...REQUEST, fields: ['origin'] }, 60_000],
      [travel, { input: 'no fields at all' }, undefined],
      [plain, { input: '查询订单000123，不要取消订单' }, undefined],
      [plain, { input: 'again' }, 1],
      [travel, REQUEST, undefined],
    ];
    for (const [instance, request, timeoutMs] of requests) {
      const reply = session.prepareReply(instance, request, { timeoutMs });
      expect(reply.isError).toBe(false);
      if (reply.isError) continue;
      expect(reply.text).toBe(JSON.stringify(reply.value));
      expect(JSON.parse(reply.text)).toEqual(reply.value);
      expect('expiresAt' in reply.value).toBe(timeoutMs !== undefined);
    }
  });
});
