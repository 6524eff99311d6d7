/**
 * Shared material for the engine tests: the seed request and candidates (valid, invalid, different), an engine wired
 * to a SimulatedClock with a VALIDATED counter, and small helpers to read replies and thrown errors.
 */
import { readFileSync } from 'node:fs';
import { SimulatedClock } from 'xstate';
import { expect, vi } from 'vitest';
import { IntentError, type IntentErrorCode } from '../../src/core/errors.js';
import { HandoffEngine, type HandoffEngineOptions, type HandoffInstance } from '../../src/engine/engine.js';
import type { HandoffReply } from '../../src/engine/replies.js';
import { Intent, type IntentOptions } from '../../src/intent.js';

/** The seed request (spec 01). */
export const SEED_REQUEST = { input: '查询订单000123，不要取消订单' } as const;

/** The seed candidate, byte for byte as the fixture holds it. */
export const SEED_CANDIDATE = readFileSync(new URL('../fixtures/seed-candidate.json', import.meta.url), 'utf8');

/** The `content[0].text` the seed executor reply carries: what the seed candidate must turn into. */
export const SEED_RESULT_TEXT = (
  JSON.parse(readFileSync(new URL('../fixtures/seed-executor-reply.json', import.meta.url), 'utf8')) as {
    content: { text: string }[];
  }
).content[0]?.text;

/** Valid too, but different bytes: the seed candidate pretty-printed. */
export const OTHER_VALID_CANDIDATE = JSON.stringify(JSON.parse(SEED_CANDIDATE), null, 2);

/** A correctable format error: `coverage` and `intents` are missing. */
export const INVALID_CANDIDATE = '{"turnKind":"request"}';

/** Another correctable format error with different bytes: `intents` is missing. */
export const OTHER_INVALID_CANDIDATE = '{"turnKind":"request","coverage":"complete"}';

/** A valid candidate carrying a marker that must never show up in inspection output. */
export function markedValidCandidate(marker: string): string {
  const seed = JSON.parse(SEED_CANDIDATE) as { intents: Record<string, unknown>[] };
  return JSON.stringify({ ...seed, intents: seed.intents.map((i) => ({ ...i, goal: `查询订单000123 ${marker}` })) });
}

/** An invalid candidate carrying a marker that must never show up in inspection output. */
export function markedInvalidCandidate(marker: string): string {
  return JSON.stringify({ turnKind: 'request', coverage: 'complete', intents: [{ action: marker }] });
}

/** A fixed, realistic start time for the simulated clock. */
export const T0 = Date.parse('2026-11-02T09:30:00.000Z');

/** Lets scheduled validations (setImmediate after ACCEPT) run and their replies settle. */
export async function flush(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
}

export interface Harness {
  clock: SimulatedClock;
  engine: HandoffEngine;
  intent: Intent;
  instance: HandoffInstance;
  /** How many VALIDATED transitions the engine has made since the harness was built. */
  validated: () => number;
  /** How many timers the engine asked the clock for. */
  timersSet: () => number;
}

/** An engine on a SimulatedClock set to T0, an instance named `main`, a VALIDATED counter subscribed before any prepare. */
export function harness(
  options: Omit<HandoffEngineOptions, 'clock'> = {},
  intentOptions: Omit<IntentOptions, 'clock' | 'executor'> = {},
): Harness {
  const clock = new SimulatedClock();
  clock.set(T0);
  let timers = 0;
  const setTimeout = clock.setTimeout.bind(clock);
  clock.setTimeout = (fn, ms) => {
    timers += 1;
    return setTimeout(fn, ms);
  };
  const engine = new HandoffEngine({ ...options, clock });
  let validations = 0;
  engine.inspect((t) => {
    if (t.event === 'VALIDATED') validations += 1;
  });
  const intent = new Intent({ ...intentOptions, clock });
  return {
    clock,
    engine,
    intent,
    instance: intent.asInstance('main'),
    validated: () => validations,
    timersSet: () => timers,
  };
}

/** Asserts an error reply with `code` and `requestId` and returns its error. */
export function expectError(reply: HandoffReply, code: IntentErrorCode, requestId?: string): IntentError {
  expect(reply.isError, reply.text).toBe(true);
  if (!reply.isError) throw new Error('unreachable');
  expect(reply.error.code).toBe(code);
  const wire = JSON.parse(reply.text) as { error: { code: string; requestId?: string } };
  expect(wire.error.code).toBe(code);
  if (requestId !== undefined) {
    expect(reply.error.requestId).toBe(requestId);
    expect(wire.error.requestId).toBe(requestId);
  }
  return reply.error;
}

/** Asserts a success reply and returns its value. */
export function expectResult(reply: HandoffReply): Record<string, unknown> {
  expect(reply.isError, reply.text).toBe(false);
  if (reply.isError) throw new Error('unreachable');
  expect(JSON.parse(reply.text)).toEqual(reply.value);
  return reply.value as Record<string, unknown>;
}

/** Runs `fn`, which must throw an `IntentError` with `code`; returns the error. */
export function thrown(fn: () => unknown, code: IntentErrorCode): IntentError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(IntentError);
  const error = caught as IntentError;
  expect(error.code).toBe(code);
  return error;
}

/**
 * Counts how often the validator parses `text` (every validation starts with `JSON.parse` of the candidate): the way to
 * see that an abandoned validation really never ran, since a stopped actor would swallow its VALIDATED silently.
 */
export function countParsesOf(text: string): { count: () => number; restore: () => void } {
  const parse = JSON.parse.bind(JSON);
  let count = 0;
  const spy = vi.spyOn(JSON, 'parse').mockImplementation((source: string, reviver?: unknown) => {
    if (source === text) count += 1;
    return parse(source, reviver as undefined) as unknown;
  });
  return {
    count: () => count,
    restore: () => {
      spy.mockRestore();
    },
  };
}
