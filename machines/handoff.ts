/**
 * The host-handoff machine (spec 03): the single place where the lifecycle of a prepared request lives. The engine,
 * the executor loop, the inspector, the diagram and the model-checking tests all read this one definition.
 *
 * Design notes (why it looks the way it does):
 * - The machine decides, the engine executes. Every event leaves in `context.answer` what it meant for its sender
 *   (validate, join, conflict, replay, ...), so the engine never re-derives a lifecycle rule from a status field.
 * - `completed`, `cancelled` and `expired` are tagged `terminal` and absorb every event: ACCEPT and CANCEL get a
 *   targetless transition that records the answer (replay, conflict, refused, already_*); VALIDATED, DEADLINE and CLOSE
 *   have no handler there and change nothing. They are final in the sense of spec 03 (nothing leaves them), and the
 *   late answers come from the machine too. `answer` is only meaningful after ACCEPT and CANCEL. They are not XState `final` nodes because an XState final node ignores
 *   events; the engine moves a terminal request into the store and stops its actor.
 * - The validation is started by the `startValidation` entry action and abandoned by the `abandonValidation` exit
 *   action of `validating`; its outcome comes back as a `VALIDATED` event. Both actions are implemented by the engine
 *   (`machine.provide`). This is an abortable job rather than an invoked child actor because an invoked actor costs
 *   ~45 µs per request, more than the validation itself, and the happy path must not pay for it (issue 3, BENCHMARKS.md).
 * - The deadline is judged by the clock when an event arrives (spec 03, "Deadline"): every event a sender brings carries
 *   its arrival time `at`, and a live request whose `expiresAt` is at or before `at` takes the event to `expired` instead
 *   (an ACCEPT is refused with HANDOFF_EXPIRED, a CANCEL answers already_completed, a late VALIDATED or CLOSE expires
 *   the request), even when the timer has not run yet because the event loop was busy. So the same events at the same
 *   times always get the same answers, however loaded the process is.
 * - The timer is the `DEADLINE` event, handled on `live` so moving between live children never changes it. The engine
 *   arms one timer, counted from prepare, for a request whose context has `expiresAt`, and none otherwise (never a huge
 *   delay). An XState `after` would schedule nothing without a deadline too, but it costs ~15 µs on every request even
 *   then (an internal raise and an extra macrostep), measured in BENCHMARKS.md.
 */
import { assign, setup } from 'xstate';

/** Validations per request: the first plus one correction (spec 03). */
export const VALIDATION_BUDGET = 2;

/** A candidate compared by exact bytes: a strong hash first, then the text itself on a hash match. */
export interface CandidateIdentity {
  readonly hash: string;
  readonly text: string;
}

export interface FeedbackIssue {
  readonly path: string;
  readonly message: string;
}

/** What the validation produced: the result's JSON text, or the correctable problems of the candidate. */
export type ValidationOutcome =
  { readonly ok: true; readonly text: string } | { readonly ok: false; readonly issues: readonly FeedbackIssue[] };

export type CancelReason = 'cancelled' | 'refusal' | 'incomplete' | 'aborted' | 'session_closed';

/** What the last event meant for whoever sent it. */
export type HandoffAnswer =
  | 'none'
  | 'validate'
  | 'join'
  | 'conflict'
  | 'replay'
  | 'refused'
  | 'cancelled'
  | 'already_cancelled'
  | 'already_completed';

export interface HandoffContext {
  readonly requestId: string;
  /** The deadline, in the engine clock's milliseconds (prepare time + timeout); `undefined` = no deadline. */
  readonly expiresAt: number | undefined;
  readonly validations: number;
  /** The candidate under validation or last validated. */
  readonly candidate: CandidateIdentity | undefined;
  /** The last validation's outcome. */
  readonly outcome: ValidationOutcome | undefined;
  readonly cancelReason: CancelReason | undefined;
  readonly answer: HandoffAnswer;
}

export interface HandoffInput {
  readonly requestId: string;
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
  | { type: 'CANCEL'; reason: Exclude<CancelReason, 'session_closed'>; at: number }
  | { type: 'DEADLINE' }
  | { type: 'CLOSE'; at: number };

export const HANDOFF_STATES = ['prepared', 'validating', 'correcting', 'completed', 'cancelled', 'expired'] as const;
export type HandoffState = (typeof HANDOFF_STATES)[number];
export const LIVE_STATES: readonly HandoffState[] = ['prepared', 'validating', 'correcting'];
export const TERMINAL_STATES: readonly HandoffState[] = ['completed', 'cancelled', 'expired'];

export const handoffMachine = setup({
  types: {
    context: {} as HandoffContext,
    events: {} as HandoffEvent,
    input: {} as HandoffInput,
    tags: {} as 'live' | 'terminal',
  },
  guards: {
    isSameCandidate: ({ context, event }) =>
      event.type === 'ACCEPT' &&
      context.candidate !== undefined &&
      context.candidate.hash === event.candidate.hash &&
      context.candidate.text === event.candidate.text,
    isValid: ({ event }) => event.type === 'VALIDATED' && event.ok,
    hasBudget: ({ context }) => context.validations < VALIDATION_BUDGET,
    hasDeadline: ({ context }) => context.expiresAt !== undefined,
    /** The event arrived at or after the deadline: the request is expired whatever the timer has done so far. */
    isPastDeadline: ({ context, event }) =>
      context.expiresAt !== undefined && event.type !== 'DEADLINE' && event.at >= context.expiresAt,
  },
  actions: {
    recordCandidate: assign({
      candidate: ({ context, event }) => (event.type === 'ACCEPT' ? event.candidate : context.candidate),
      validations: ({ context }) => context.validations + 1,
      answer: 'validate',
    }),
    recordOutcome: assign({
      outcome: ({ context, event }): ValidationOutcome | undefined =>
        event.type !== 'VALIDATED'
          ? context.outcome
          : event.ok
            ? { ok: true, text: event.text }
            : { ok: false, issues: event.issues },
      answer: 'none',
    }),
    recordCancel: assign({
      cancelReason: ({ event }): CancelReason => (event.type === 'CANCEL' ? event.reason : 'session_closed'),
      answer: ({ event }): HandoffAnswer => (event.type === 'CANCEL' ? 'cancelled' : 'none'),
    }),
    recordExpiry: assign({ answer: 'none' as const }),
    answerJoin: assign({ answer: 'join' }),
    answerConflict: assign({ answer: 'conflict' }),
    answerReplay: assign({ answer: 'replay' }),
    answerRefused: assign({ answer: 'refused' }),
    answerAlreadyCancelled: assign({ answer: 'already_cancelled' }),
    answerAlreadyCompleted: assign({ answer: 'already_completed' }),
    // Implemented by the engine through `provide`; the definitions here are the no-op defaults used by the model checks.
    startValidation: () => undefined,
    abandonValidation: () => undefined,
  },
}).createMachine({
  id: 'handoff',
  initial: 'live',
  context: ({ input }) => ({
    requestId: input.requestId,
    expiresAt: input.expiresAt,
    validations: 0,
    candidate: undefined,
    outcome: undefined,
    cancelReason: undefined,
    answer: 'none',
  }),
  states: {
    live: {
      id: 'live',
      initial: 'prepared',
      on: {
        DEADLINE: { guard: 'hasDeadline', target: '#expired', actions: 'recordExpiry' },
        CANCEL: [
          { guard: 'isPastDeadline', target: '#expired', actions: 'answerAlreadyCompleted' },
          { target: '#cancelled', actions: 'recordCancel' },
        ],
        CLOSE: [
          { guard: 'isPastDeadline', target: '#expired', actions: 'recordExpiry' },
          { target: '#cancelled', actions: 'recordCancel' },
        ],
      },
      states: {
        prepared: {
          id: 'prepared',
          tags: ['live'],
          on: {
            ACCEPT: [
              { guard: 'isPastDeadline', target: '#expired', actions: 'answerRefused' },
              { target: 'validating', actions: 'recordCandidate' },
            ],
          },
        },
        validating: {
          id: 'validating',
          tags: ['live'],
          entry: 'startValidation',
          exit: 'abandonValidation',
          on: {
            ACCEPT: [
              { guard: 'isPastDeadline', target: '#expired', actions: 'answerRefused' },
              { guard: 'isSameCandidate', actions: 'answerJoin' },
              { actions: 'answerConflict' },
            ],
            VALIDATED: [
              { guard: 'isPastDeadline', target: '#expired', actions: 'recordExpiry' },
              { guard: 'isValid', target: '#completed', actions: 'recordOutcome' },
              { guard: 'hasBudget', target: 'correcting', actions: 'recordOutcome' },
              { target: '#completed', actions: 'recordOutcome' },
            ],
          },
        },
        correcting: {
          id: 'correcting',
          tags: ['live'],
          on: {
            ACCEPT: [
              { guard: 'isPastDeadline', target: '#expired', actions: 'answerRefused' },
              { guard: 'isSameCandidate', actions: 'answerReplay' },
              { target: 'validating', actions: 'recordCandidate' },
            ],
          },
        },
      },
    },
    completed: {
      id: 'completed',
      tags: ['terminal'],
      on: {
        ACCEPT: [{ guard: 'isSameCandidate', actions: 'answerReplay' }, { actions: 'answerConflict' }],
        CANCEL: { actions: 'answerAlreadyCompleted' },
      },
    },
    cancelled: {
      id: 'cancelled',
      tags: ['terminal'],
      on: {
        ACCEPT: { actions: 'answerRefused' },
        CANCEL: { actions: 'answerAlreadyCancelled' },
      },
    },
    expired: {
      id: 'expired',
      tags: ['terminal'],
      on: {
        ACCEPT: { actions: 'answerRefused' },
        CANCEL: { actions: 'answerAlreadyCompleted' },
      },
    },
  },
});

export type HandoffMachine = typeof handoffMachine;

/** The lifecycle state name of a snapshot value (`{ live: 'prepared' }` → `prepared`). */
export function stateOf(value: unknown): HandoffState {
  if (typeof value === 'string') return value as HandoffState;
  const live = (value as { live?: unknown }).live;
  return live as HandoffState;
}
