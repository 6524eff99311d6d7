/**
 * The host-handoff machine (spec 03): the single place where the lifecycle of a prepared request lives. The engine,
 * the executor loop, the inspector, the diagram and the model-checking tests all read this one definition.
 *
 * Design notes (why it looks the way it does):
 * - The machine decides, the engine executes. Every event leaves in `context.answer` what it meant for its sender, and
 *   every transition that ends a validation or the request (into `correcting` or a terminal state) emits `waiters`
 *   with what the callers waiting on it get — and, when it is terminal, how the request ended. The engine
 *   turns answers into replies through one table and never looks at a state name; the answers are named for what the
 *   caller gets, not for the state the request is in. The answers, by event:
 *   - ACCEPT: `validate` (a validation starts), `join` (same bytes as the running one), `conflict`, `feedback` (the same
 *     bad candidate again in `correcting`: its CANDIDATE_INVALID is replayed, free), `replay` (the stored terminal reply
 *     of the same last candidate), `withdrawn_earlier` (HANDOFF_CANCELLED with the reason), `too_late`
 *     (HANDOFF_EXPIRED), and in executor mode `rejected` (the executor repeated the candidate its one correction was
 *     for).
 *   - CANCEL: `withdrawn` (status `cancelled`), `already_cancelled`, `already_completed`, `already_expired` (status
 *     `already_completed` too, as spec 03 has it, with the reason `expired` so the host knows the deadline ended it).
 *   - VALIDATED: `result`, `invalid` (feedback, the correction is owed), `rejected` (budget spent), `failed` (the
 *     validation itself crashed: a bug, ended with reason `internal_error`, never the host's `incomplete`), `too_late`.
 *   - DEADLINE: `too_late`; CLOSE: `closed` (or `too_late` when it arrives late).
 * - Retention is decided here too: `context.retain` says whether the terminal reply goes to the store (not after a
 *   session close, whose retained replies are dropped anyway; spec 04).
 * - `completed`, `cancelled` and `expired` are tagged `terminal` and absorb every event: ACCEPT and CANCEL get a
 *   targetless transition that records the answer; VALIDATED, DEADLINE and CLOSE change nothing there. They are not
 *   XState `final` nodes because an XState final node ignores events; the engine moves a terminal request into the
 *   store, stops its actor, and answers later events with the pure `transition(machine, snapshot, event)`.
 * - The validation is an abortable job, not an invoked child actor (an invoked actor costs ~45 µs per request, more
 *   than the validation itself; BENCHMARKS.md): entering `validating` emits `validate` and leaving it emits `abandon`,
 *   which is the one thing that stops a validation that has not reported back.
 * - The deadline is judged by the clock when an event arrives (spec 03, "Deadline"): every event a sender brings carries
 *   its arrival time `at`, and a live request whose `expiresAt` is at or before `at` takes the event to `expired`
 *   instead, even when the timer has not run yet because the event loop was busy. So the same events at the same
 *   times always get the same answers, however loaded the process is.
 * - The timer is the `DEADLINE` event, handled on `live` so moving between live children never changes it. The engine
 *   arms one timer, counted from prepare, for a request whose context has `expiresAt`, and none otherwise (never a huge
 *   delay). An XState `after` would schedule nothing without a deadline too, but it costs ~15 µs on every request even
 *   then (an internal raise and an extra macrostep), measured in BENCHMARKS.md.
 */
import { assign, emit, setup } from 'xstate';
import type { FeedbackItem } from '../src/core/errors.js';
import type { HostCancelReason } from '../src/core/schemas.js';

/** Validations per request: the first plus one correction (spec 03). */
export const VALIDATION_BUDGET = 2;

/** A candidate compared by exact bytes: a strong hash first, then the text itself on a hash match. */
export interface CandidateIdentity {
  readonly hash: string;
  readonly text: string;
}

/**
 * What the validation produced: the result's JSON text, the correctable problems of the candidate, or a crash of the
 * validation itself (a bug: the request ends, every waiter learns it).
 */
export type ValidationOutcome =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly issues: readonly FeedbackItem[] }
  | { readonly ok: false; readonly crashed: true };

/** Why a request was cancelled: the host's three reasons, a caller's abort, a session close, or a crashed validation. */
export type CancelReason = HostCancelReason | 'aborted' | 'session_closed' | 'internal_error';

/** Whether this request's model is the MCP client's (host) or the server's own executor (spec 03, "Executor mode"). */
export type HandoffMode = 'host' | 'executor';

/** What the last event meant for whoever sent it (see the header for the list per event). */
export type HandoffAnswer =
  | 'none'
  | 'validate'
  | 'join'
  | 'conflict'
  | 'feedback'
  | 'replay'
  | 'withdrawn_earlier'
  | 'withdrawn'
  | 'already_cancelled'
  | 'already_completed'
  | 'already_expired'
  | 'result'
  | 'invalid'
  | 'rejected'
  | 'failed'
  | 'too_late'
  | 'closed';

/** What the callers waiting on a validation get when it ends, whichever way it ends. */
export type WaiterAnswer = 'result' | 'invalid' | 'rejected' | 'failed' | 'withdrawn' | 'too_late' | 'closed';

export interface HandoffContext {
  readonly requestId: string;
  readonly mode: HandoffMode;
  /** The deadline, in the engine clock's milliseconds (prepare time + timeout); `undefined` = no deadline. */
  readonly expiresAt: number | undefined;
  readonly validations: number;
  /** The candidate under validation or last validated. */
  readonly candidate: CandidateIdentity | undefined;
  /** The last validation's outcome. */
  readonly outcome: ValidationOutcome | undefined;
  readonly cancelReason: CancelReason | undefined;
  /** Whether a terminal request's reply is kept for replay (spec 03, "Retention"). */
  readonly retain: boolean;
  readonly answer: HandoffAnswer;
}

export interface HandoffInput {
  readonly requestId: string;
  /** Default `'host'`. */
  readonly mode?: HandoffMode | undefined;
  /** The deadline in the engine clock's milliseconds; absent = no deadline. */
  readonly expiresAt?: number | undefined;
}

/**
 * The events. Each one a sender brings carries `at`, the engine clock's time when it arrived, so the machine judges the
 * deadline by the clock and not only by the timer. `DEADLINE` is the timer itself.
 */
export type HandoffEvent =
  | { type: 'ACCEPT'; candidate: CandidateIdentity; at: number }
  | ({ type: 'VALIDATED'; at: number } & ValidationOutcome)
  | { type: 'CANCEL'; reason: HostCancelReason | 'aborted'; at: number }
  | { type: 'DEADLINE' }
  | { type: 'CLOSE'; at: number };

/** What the machine emits to the engine: start or abandon the validation job; answer the callers waiting on it. */
export type HandoffEmitted = { type: 'validate' } | { type: 'abandon' } | { type: 'waiters'; answer: WaiterAnswer };

export const HANDOFF_STATES = ['prepared', 'validating', 'correcting', 'completed', 'cancelled', 'expired'] as const;
export type HandoffState = (typeof HANDOFF_STATES)[number];
export const LIVE_STATES: readonly HandoffState[] = ['prepared', 'validating', 'correcting'];
export const TERMINAL_STATES: readonly HandoffState[] = ['completed', 'cancelled', 'expired'];

/**
 * How a request ended, as the inspector, traces and spans name it: a result, a completion that spent its correction
 * (`rejected`), a cancel (with its reason) or an expiry.
 */
export type HandoffEnding = 'completed' | 'rejected' | 'cancelled' | 'expired';

/** What a state or an ending means for the request: still going, ended with its result, ended without one. */
export type HandoffKind = 'live' | 'completed' | 'failed';

/** The ending a step into a terminal state records (read off its state and answer), or `undefined` for a live one. */
export function endingOf(step: { to: HandoffState; answer: HandoffAnswer }): HandoffEnding | undefined {
  switch (step.to) {
    case 'completed':
      return step.answer === 'rejected' ? 'rejected' : 'completed';
    case 'cancelled':
      return 'cancelled';
    case 'expired':
      return 'expired';
    default:
      return undefined;
  }
}

/** The kind of a state: the live states are live, `completed` is completed, the other terminal states failed. */
export function kindOfState(state: HandoffState): HandoffKind {
  if (LIVE_STATES.includes(state)) return 'live';
  return state === 'completed' ? 'completed' : 'failed';
}

/** The kind of an ending: only a result is completed. */
export function kindOfEnding(ending: HandoffEnding): HandoffKind {
  return ending === 'completed' ? 'completed' : 'failed';
}

type AnswerParams = { answer: HandoffAnswer };
type WaiterParams = { answer: WaiterAnswer };

/** The machine's parameterised actions, written once: what the sender is answered, what the waiters are told. */
const answer = (value: HandoffAnswer) => ({ type: 'answer', params: { answer: value } }) as const;
const tell = (value: WaiterAnswer) => ({ type: 'tellWaiters', params: { answer: value } }) as const;
/** An ACCEPT or VALIDATED that arrives at or after the deadline finds a live request expired (spec 03, "Deadline"). */
const expireLate = {
  guard: 'isPastDeadline',
  target: '#expired',
  actions: [answer('too_late'), tell('too_late')],
} as const;

export const handoffMachine = setup({
  types: {
    context: {} as HandoffContext,
    events: {} as HandoffEvent,
    input: {} as HandoffInput,
    emitted: {} as HandoffEmitted,
    tags: {} as 'live' | 'terminal',
  },
  guards: {
    isSameCandidate: ({ context, event }) =>
      event.type === 'ACCEPT' &&
      context.candidate !== undefined &&
      context.candidate.hash === event.candidate.hash &&
      context.candidate.text === event.candidate.text,
    isValid: ({ event }) => event.type === 'VALIDATED' && event.ok,
    isCrash: ({ event }) => event.type === 'VALIDATED' && 'crashed' in event,
    hasBudget: ({ context }) => context.validations < VALIDATION_BUDGET,
    hasDeadline: ({ context }) => context.expiresAt !== undefined,
    /** The event arrived at or after the deadline: the request is expired whatever the timer has done so far. */
    isPastDeadline: ({ context, event }) =>
      context.expiresAt !== undefined && event.type !== 'DEADLINE' && event.at >= context.expiresAt,
    /** Executor mode gets one correction: repeating the candidate it was for spends it (spec 03, "Executor mode"). */
    isExecutorRepeat: ({ context, event }) =>
      context.mode === 'executor' &&
      event.type === 'ACCEPT' &&
      context.candidate !== undefined &&
      context.candidate.hash === event.candidate.hash &&
      context.candidate.text === event.candidate.text,
  },
  actions: {
    answer: assign((_, params: AnswerParams) => ({ answer: params.answer })),
    tellWaiters: emit((_, params: WaiterParams) => ({ type: 'waiters' as const, answer: params.answer })),
    startValidation: emit({ type: 'validate' as const }),
    abandonValidation: emit({ type: 'abandon' as const }),
    takeCandidate: assign({
      candidate: ({ context, event }) => (event.type === 'ACCEPT' ? event.candidate : context.candidate),
      validations: ({ context }) => context.validations + 1,
      answer: 'validate',
    }),
    keepOutcome: assign({
      outcome: ({ context, event }): ValidationOutcome | undefined => {
        if (event.type !== 'VALIDATED') return context.outcome;
        if (event.ok) return { ok: true, text: event.text };
        return 'crashed' in event ? { ok: false, crashed: true } : { ok: false, issues: event.issues };
      },
    }),
    /** A repeated candidate in executor mode counts as the spent correction. */
    spendCorrection: assign({ validations: VALIDATION_BUDGET }),
    keepCancelReason: assign({
      cancelReason: ({ event }): CancelReason => {
        if (event.type === 'CANCEL') return event.reason;
        return event.type === 'CLOSE' ? 'session_closed' : 'internal_error';
      },
    }),
    /** A session close drops the session's retained replies (spec 04): nothing of it is kept. */
    forget: assign({ retain: false }),
  },
}).createMachine({
  id: 'handoff',
  initial: 'live',
  context: ({ input }) => ({
    requestId: input.requestId,
    mode: input.mode ?? 'host',
    expiresAt: input.expiresAt,
    validations: 0,
    candidate: undefined,
    outcome: undefined,
    cancelReason: undefined,
    retain: true,
    answer: 'none',
  }),
  states: {
    live: {
      id: 'live',
      initial: 'prepared',
      on: {
        DEADLINE: {
          guard: 'hasDeadline',
          target: '#expired',
          actions: [answer('too_late'), tell('too_late')],
        },
        CANCEL: [
          {
            guard: 'isPastDeadline',
            target: '#expired',
            actions: [answer('already_expired'), tell('too_late')],
          },
          {
            target: '#cancelled',
            actions: ['keepCancelReason', answer('withdrawn'), tell('withdrawn')],
          },
        ],
        CLOSE: [
          {
            guard: 'isPastDeadline',
            target: '#expired',
            actions: ['forget', answer('too_late'), tell('too_late')],
          },
          {
            target: '#cancelled',
            actions: ['keepCancelReason', 'forget', answer('closed'), tell('closed')],
          },
        ],
      },
      states: {
        prepared: {
          id: 'prepared',
          tags: ['live'],
          on: {
            ACCEPT: [expireLate, { target: 'validating', actions: 'takeCandidate' }],
          },
        },
        validating: {
          id: 'validating',
          tags: ['live'],
          entry: 'startValidation',
          exit: 'abandonValidation',
          on: {
            ACCEPT: [
              expireLate,
              { guard: 'isSameCandidate', actions: answer('join') },
              { actions: answer('conflict') },
            ],
            VALIDATED: [
              expireLate,
              {
                guard: 'isCrash',
                target: '#cancelled',
                actions: ['keepOutcome', 'keepCancelReason', answer('failed'), tell('failed')],
              },
              {
                guard: 'isValid',
                target: '#completed',
                actions: ['keepOutcome', answer('result'), tell('result')],
              },
              {
                guard: 'hasBudget',
                target: 'correcting',
                actions: ['keepOutcome', answer('invalid'), tell('invalid')],
              },
              {
                target: '#completed',
                actions: ['keepOutcome', answer('rejected'), tell('rejected')],
              },
            ],
          },
        },
        correcting: {
          id: 'correcting',
          tags: ['live'],
          on: {
            ACCEPT: [
              expireLate,
              {
                guard: 'isExecutorRepeat',
                target: '#completed',
                actions: ['spendCorrection', answer('rejected'), tell('rejected')],
              },
              { guard: 'isSameCandidate', actions: answer('feedback') },
              { target: 'validating', actions: 'takeCandidate' },
            ],
          },
        },
      },
    },
    completed: {
      id: 'completed',
      tags: ['terminal'],
      on: {
        ACCEPT: [{ guard: 'isSameCandidate', actions: answer('replay') }, { actions: answer('conflict') }],
        CANCEL: { actions: answer('already_completed') },
      },
    },
    cancelled: {
      id: 'cancelled',
      tags: ['terminal'],
      on: {
        ACCEPT: { actions: answer('withdrawn_earlier') },
        CANCEL: { actions: answer('already_cancelled') },
      },
    },
    expired: {
      id: 'expired',
      tags: ['terminal'],
      on: {
        ACCEPT: { actions: answer('too_late') },
        CANCEL: { actions: answer('already_expired') },
      },
    },
  },
});

export type HandoffMachine = typeof handoffMachine;

/** The lifecycle state name of a snapshot value (`{ live: 'prepared' }` → `prepared`), for inspection and diagrams. */
export function stateOf(value: unknown): HandoffState {
  if (typeof value === 'string') return value as HandoffState;
  const live = (value as { live?: unknown }).live;
  return live as HandoffState;
}
