/**
 * Engine-level path tests (issue 9): the real engine, through a session and the simulated clock, driven along every
 * simple path of the handoff machine — and, at the end of each, every event once more — with the reply of every step
 * checked against the transition table of spec 03. The expectations below are written from the spec, not read off the
 * machine: the machine only supplies the paths.
 */
import { describe, expect, it } from 'vitest';
import { getSimplePaths } from 'xstate/graph';
import type { SnapshotFrom } from 'xstate';
import { IntentError } from '../../src/core/errors.js';
import type { HandoffReply } from '../../src/engine/replies.js';
import {
  handoffMachine,
  stateOf,
  type CandidateIdentity,
  type HandoffEvent,
  type HandoffMachine,
  type HandoffState,
} from '../../machines/handoff.js';
import {
  INVALID_CANDIDATE,
  OTHER_INVALID_CANDIDATE,
  SEED_CANDIDATE,
  SEED_REQUEST,
  SEED_RESULT_TEXT,
  flush,
  harness,
} from './support.js';

type Snapshot = SnapshotFrom<HandoffMachine>;

/** Abstract candidates of the model and the real texts the engine gets for them. */
const V: CandidateIdentity = { hash: 'v', text: 'valid' };
const I1: CandidateIdentity = { hash: 'i1', text: 'invalid-1' };
const I2: CandidateIdentity = { hash: 'i2', text: 'invalid-2' };
const TEXT = new Map([
  [V.text, SEED_CANDIDATE],
  [I1.text, INVALID_CANDIDATE],
  [I2.text, OTHER_INVALID_CANDIDATE],
]);
const DEADLINE_MS = 1000;

const EVENTS: HandoffEvent[] = [
  { type: 'ACCEPT', candidate: V, at: 0 },
  { type: 'ACCEPT', candidate: I1, at: 0 },
  { type: 'ACCEPT', candidate: I2, at: 0 },
  { type: 'VALIDATED', ok: true, text: 'result', at: 0 },
  { type: 'VALIDATED', ok: false, issues: [], at: 0 },
  { type: 'CANCEL', reason: 'cancelled', at: 0 },
  { type: 'DEADLINE' },
  { type: 'CLOSE', at: 0 },
];

/** A step the engine can be made to take: VALIDATED happens by letting the validation run, with the candidate's outcome. */
function realisable(from: Snapshot, event: HandoffEvent): boolean {
  if (event.type !== 'VALIDATED') return true;
  if (stateOf(from.value) !== 'validating') return false;
  return (from.context.candidate?.text === V.text) === event.ok;
}

/** Every simple path of the machine (states compared without the answer, so self-loops do not count as new). */
function simplePaths(): { steps: { from: Snapshot; event: HandoffEvent }[]; last: Snapshot }[] {
  const paths = getSimplePaths(
    handoffMachine as never,
    {
      input: { requestId: 'r', expiresAt: DEADLINE_MS },
      events: EVENTS,
      serializeState: (s: Snapshot) => JSON.stringify({ value: s.value, context: { ...s.context, answer: undefined } }),
    } as never,
  ) as unknown as { steps: { state: Snapshot; event: HandoffEvent }[]; state: Snapshot }[];
  const out: { steps: { from: Snapshot; event: HandoffEvent }[]; last: Snapshot }[] = [];
  for (const p of paths) {
    const steps = p.steps.slice(1).map((s, i) => ({ from: p.steps[i]!.state, event: s.event }));
    if (steps.every((s) => realisable(s.from, s.event))) out.push({ steps, last: p.state });
  }
  return out;
}

/** What a call gets right away, or `pending` when it waits on a validation (spec 03's table). */
type Now =
  | { kind: 'pending' }
  | { kind: 'error'; code: string; reason?: string; sameAs?: 'feedback' | 'terminal' }
  | { kind: 'status'; status: string }
  | { kind: 'throws'; code: string };

function sameBytes(from: Snapshot, event: HandoffEvent): boolean {
  return event.type === 'ACCEPT' && from.context.candidate?.text === event.candidate.text;
}

function expectedNow(from: Snapshot, event: HandoffEvent): Now | undefined {
  const state = stateOf(from.value);
  const closed = from.context.cancelReason === 'session_closed';
  if (event.type === 'ACCEPT') {
    if (closed) return { kind: 'error', code: 'SESSION_CLOSED' };
    switch (state) {
      case 'prepared':
        return { kind: 'pending' };
      case 'validating':
        return sameBytes(from, event) ? { kind: 'pending' } : { kind: 'error', code: 'HANDOFF_CONFLICT' };
      case 'correcting':
        return sameBytes(from, event)
          ? { kind: 'error', code: 'CANDIDATE_INVALID', sameAs: 'feedback' }
          : { kind: 'pending' };
      case 'completed':
        return sameBytes(from, event)
          ? { kind: 'error', code: '(replay)', sameAs: 'terminal' }
          : { kind: 'error', code: 'HANDOFF_CONFLICT' };
      case 'cancelled':
        return { kind: 'error', code: 'HANDOFF_CANCELLED', reason: 'cancelled' };
      case 'expired':
        return { kind: 'error', code: 'HANDOFF_EXPIRED' };
    }
  }
  if (event.type === 'CANCEL') {
    if (closed) return { kind: 'throws', code: 'SESSION_CLOSED' };
    if (state === 'cancelled') return { kind: 'status', status: 'already_cancelled' };
    if (state === 'completed' || state === 'expired') return { kind: 'status', status: 'already_completed' };
    return { kind: 'status', status: 'cancelled' };
  }
  return undefined;
}

/** What the callers waiting on a validation get when the step ends it (spec 03), or undefined if it does not. */
function waitersGet(from: Snapshot, event: HandoffEvent): { code: string; reason?: string } | undefined {
  if (stateOf(from.value) !== 'validating') return undefined;
  switch (event.type) {
    case 'VALIDATED':
      if (event.ok) return { code: '(result)' };
      return { code: from.context.validations < 2 ? 'CANDIDATE_INVALID' : 'CANDIDATE_REJECTED' };
    case 'CANCEL':
      return { code: 'HANDOFF_CANCELLED', reason: event.reason };
    case 'DEADLINE':
      return { code: 'HANDOFF_EXPIRED' };
    case 'CLOSE':
      return { code: 'SESSION_CLOSED' };
    default:
      return undefined;
  }
}

const codeOf = (reply: HandoffReply): string => (reply.isError ? reply.error.code : '(result)');

async function drive(steps: { from: Snapshot; event: HandoffEvent }[]): Promise<string[]> {
  const problems: string[] = [];
  const { engine, instance, clock } = harness();
  const session = engine.openSession();
  const { requestId, submissionToken } = session.prepare(instance, SEED_REQUEST, { timeoutMs: DEADLINE_MS });
  let waiters: { label: string; reply: HandoffReply | undefined }[] = [];
  let feedbackText: string | undefined;
  let terminalText: string | undefined;
  const label = (i: number, from: Snapshot, e: HandoffEvent) =>
    `step ${i}: ${stateOf(from.value)} + ${e.type}${e.type === 'ACCEPT' ? `(${e.candidate.text})` : ''}`;

  for (const [i, { from, event }] of steps.entries()) {
    const where = label(i, from, event);
    const now = expectedNow(from, event);
    const ending = waitersGet(from, event);
    if (event.type === 'ACCEPT') {
      const slot: { label: string; reply: HandoffReply | undefined } = { label: where, reply: undefined };
      void session.accept(requestId, submissionToken, TEXT.get(event.candidate.text)!).then((r) => {
        slot.reply = r;
      });
      for (let k = 0; k < 5; k++) await Promise.resolve();
      if (now?.kind === 'pending') {
        if (slot.reply !== undefined) problems.push(`${where}: answered ${codeOf(slot.reply)} before any validation`);
        else waiters.push(slot);
      } else if (slot.reply === undefined) problems.push(`${where}: no answer`);
      else if (now?.kind === 'error') {
        const reply = slot.reply;
        if (now.sameAs === 'terminal') {
          if (reply.text !== terminalText) problems.push(`${where}: replay is not the terminal reply byte for byte`);
        } else if (codeOf(reply) !== now.code) problems.push(`${where}: got ${codeOf(reply)}, spec says ${now.code}`);
        else if (now.sameAs === 'feedback' && reply.text !== feedbackText)
          problems.push(`${where}: the replayed CANDIDATE_INVALID differs from the feedback`);
        if (now.reason !== undefined && reply.isError && reply.error.details?.['reason'] !== now.reason)
          problems.push(`${where}: reason ${String(reply.error.details?.['reason'])}, spec says ${now.reason}`);
      }
    } else if (event.type === 'CANCEL') {
      try {
        const status = session.cancel(requestId, event.reason).status;
        if (now?.kind !== 'status' || now.status !== status)
          problems.push(`${where}: got status ${status}, spec says ${JSON.stringify(now)}`);
      } catch (error) {
        const code = error instanceof IntentError ? error.code : String(error);
        if (now?.kind !== 'throws' || now.code !== code) problems.push(`${where}: threw ${code}`);
      }
    } else if (event.type === 'VALIDATED') await flush();
    else if (event.type === 'DEADLINE') clock.increment(DEADLINE_MS);
    else await session.close();
    // Let replies already decided reach their callers (microtasks only: a validation runs on VALIDATED, never here).
    for (let k = 0; k < 5; k++) await Promise.resolve();

    if (ending !== undefined) {
      for (const w of waiters) {
        if (w.reply === undefined) problems.push(`${w.label}: still waiting after ${where}`);
        else if (codeOf(w.reply) !== ending.code)
          problems.push(`${w.label}: got ${codeOf(w.reply)} after ${where}, spec says ${ending.code}`);
        else if (ending.code === '(result)' && w.reply.text !== SEED_RESULT_TEXT)
          problems.push(`${w.label}: the result is not the golden one`);
        else if (ending.reason !== undefined && w.reply.isError && w.reply.error.details?.['reason'] !== ending.reason)
          problems.push(`${w.label}: wrong reason`);
      }
      // Every waiter of one validation gets the one reply object (spec 03: "every joiner gets the same reply object").
      if (new Set(waiters.map((w) => w.reply)).size > 1) problems.push(`${where}: joiners got different reply objects`);
      const reply = waiters[0]?.reply;
      if (reply !== undefined && codeOf(reply) === 'CANDIDATE_INVALID') feedbackText = reply.text;
      if (reply !== undefined && (codeOf(reply) === '(result)' || codeOf(reply) === 'CANDIDATE_REJECTED'))
        terminalText = reply.text;
      waiters = [];
    } else if (waiters.some((w) => w.reply !== undefined))
      problems.push(`${where}: a waiter was answered though the validation did not end`);
  }
  return problems;
}

describe('the engine along every simple path of the machine [S03-ENGINE-PATHS]', () => {
  const paths = simplePaths();

  it('there are paths to walk, reaching every state', () => {
    expect(paths.length).toBeGreaterThan(30);
    const reached = new Set<HandoffState>(paths.map((p) => stateOf(p.last.value)));
    expect(reached).toEqual(new Set(['prepared', 'validating', 'correcting', 'completed', 'cancelled', 'expired']));
  });

  it('every step of every path, and every event after it, gets the reply spec 03 gives', async () => {
    const problems: string[] = [];
    let walked = 0;
    for (const path of paths) {
      for (const event of EVENTS) {
        if (!realisable(path.last, event)) continue;
        const steps = [...path.steps, { from: path.last, event }];
        walked += 1;
        for (const p of await drive(steps)) problems.push(`${steps.map((s) => s.event.type).join(' → ')} | ${p}`);
      }
    }
    expect(walked).toBeGreaterThan(200);
    expect(problems).toEqual([]);
  });
});
