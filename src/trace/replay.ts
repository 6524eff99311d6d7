/**
 * One recorded request replayed through the machine definition, step by step, fast enough for a 1 GB trace.
 *
 * The machine decides; this module only asks it. XState's pure `transition(machine, snapshot, event)` costs ~150 µs a
 * call (it builds an actor scope each time), which would make a million-request trace take hours, so the answers are
 * memoised on an exact abstraction of what the machine can see: the state, the validation count, the mode, whether the
 * request has a deadline and a candidate, and of the event its type, whether its candidate is the request's current
 * one, whether it arrived at or after the deadline, its validation outcome and its cancel reason. Those are all the
 * machine's guards read (`machines/handoff.ts`); every other field of the context (outcome text, cancel reason, retain)
 * is written but never read by a guard. The first time a key is met, the real machine computes the step on a canonical
 * snapshot with exactly those properties; the concrete request then takes the result (new state, answer, validation
 * count, and the event's candidate when the machine took it). `exact: true` skips the memo and runs the machine on the
 * concrete snapshot for every step; a test checks both agree on every trace it checks.
 */
import { initialTransition, transition, type SnapshotFrom } from 'xstate';
import {
  LIVE_STATES,
  handoffMachine,
  stateOf,
  type HandoffAnswer,
  type HandoffContext,
  type HandoffEvent,
  type HandoffMachine,
  type HandoffMode,
  type HandoffState,
} from '../../machines/handoff.js';

type Snapshot = SnapshotFrom<HandoffMachine>;

/** What the checker keeps of a request: what the machine's guards can see, and no more. */
export interface RequestModel {
  state: HandoffState;
  validations: number;
  mode: HandoffMode;
  expiresAt: number | undefined;
  /** The short hash standing for the current candidate. */
  candidate: string | undefined;
}

/** What the machine did with an event. */
export interface StepResult {
  to: HandoffState;
  answer: HandoffAnswer;
  validations: number;
}

function snapshotOf(model: RequestModel): Snapshot {
  const context: HandoffContext = {
    requestId: 'replay',
    mode: model.mode,
    expiresAt: model.expiresAt,
    validations: model.validations,
    candidate: model.candidate === undefined ? undefined : { hash: model.candidate, text: model.candidate },
    outcome: undefined,
    cancelReason: undefined,
    retain: true,
    answer: 'none',
  };
  const value = LIVE_STATES.includes(model.state) ? { live: model.state } : model.state;
  return handoffMachine.resolveState({ value, context });
}

/** The machine's step on the concrete request (slow: one XState transition). */
function exactStep(model: RequestModel, event: HandoffEvent): { result: StepResult; candidate: string | undefined } {
  const [next] = transition(handoffMachine, snapshotOf(model), event);
  return {
    result: { to: stateOf(next.value), answer: next.context.answer, validations: next.context.validations },
    candidate: next.context.candidate?.hash,
  };
}

const CURRENT = 'current';
const OTHER = 'other';
const DEADLINE_MS = 1_000_000;

const memo = new Map<string, { result: StepResult; tookCandidate: boolean }>();

/** Applies an event to a request model; returns what the machine did. Mutates `model` to the machine's new state. */
export function replayStep(model: RequestModel, event: HandoffEvent, exact = false): StepResult {
  if (exact) {
    const { result, candidate } = exactStep(model, event);
    Object.assign(model, { state: result.to, validations: result.validations, candidate });
    return result;
  }
  const same = event.type === 'ACCEPT' && model.candidate !== undefined && event.candidate.hash === model.candidate;
  const late = event.type !== 'DEADLINE' && model.expiresAt !== undefined && event.at >= model.expiresAt;
  const outcome = event.type === 'VALIDATED' ? (event.ok ? 'valid' : 'crashed' in event ? 'crashed' : 'invalid') : '';
  const reason = event.type === 'CANCEL' ? event.reason : '';
  const key = `${model.state}|${model.validations}|${model.mode}|${model.expiresAt !== undefined}|${model.candidate !== undefined}|${event.type}|${same}|${late}|${outcome}|${reason}`;
  let found = memo.get(key);
  if (found === undefined) {
    // A canonical request and event with exactly the key's properties, judged by the machine itself.
    const canonical: RequestModel = {
      state: model.state,
      validations: model.validations,
      mode: model.mode,
      expiresAt: model.expiresAt === undefined ? undefined : DEADLINE_MS,
      candidate: model.candidate === undefined ? undefined : CURRENT,
    };
    const at = late ? DEADLINE_MS : 0;
    let canonicalEvent: HandoffEvent;
    switch (event.type) {
      case 'ACCEPT':
        canonicalEvent = {
          type: 'ACCEPT',
          candidate: same ? { hash: CURRENT, text: CURRENT } : { hash: OTHER, text: OTHER },
          at,
        };
        break;
      case 'DEADLINE':
        canonicalEvent = event;
        break;
      default:
        canonicalEvent = { ...event, at };
    }
    const { result, candidate } = exactStep(canonical, canonicalEvent);
    found = { result, tookCandidate: candidate === OTHER };
    memo.set(key, found);
  }
  model.state = found.result.to;
  model.validations = found.result.validations;
  if (found.tookCandidate && event.type === 'ACCEPT') model.candidate = event.candidate.hash;
  return found.result;
}

const initialMemo = new Map<string, StepResult>();

/** A prepared request: the machine's initial state for its input. */
export function replayPrepare(
  requestId: string,
  mode: HandoffMode,
  expiresAt: number | undefined,
  exact = false,
): { model: RequestModel; result: StepResult } {
  const key = `${mode}|${expiresAt !== undefined}`;
  let result = exact ? undefined : initialMemo.get(key);
  if (result === undefined) {
    const [snapshot] = initialTransition(handoffMachine, { requestId, mode, expiresAt });
    result = {
      to: stateOf(snapshot.value),
      answer: snapshot.context.answer,
      validations: snapshot.context.validations,
    };
    if (!exact) initialMemo.set(key, result);
  }
  return {
    model: { state: result.to, validations: result.validations, mode, expiresAt, candidate: undefined },
    result,
  };
}
