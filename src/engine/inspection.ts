/**
 * What a person debugging request state sees (spec 03, "Observability"): the transition records of the inspection
 * stream and the snapshot of live requests and store usage. Sizes and short hashes only: never a token or a candidate.
 */
import type {
  CancelReason,
  HandoffAnswer,
  HandoffEvent,
  HandoffMode,
  HandoffState,
  WaiterAnswer,
} from '../../machines/handoff.js';
import type { TerminalStoreUsage } from './terminalStore.js';

/**
 * One step of one request, as the inspection stream reports it, in the domain's words: `event` is `prepare`, one of the
 * machine's five events (`ACCEPT`, `VALIDATED`, `CANCEL`, `DEADLINE`, `CLOSE`), `replay` (a retained terminal reply
 * handed out again) or `evict` (the store dropped the retained reply); `answer` is what the machine answered the
 * event's sender. No token, no candidate text.
 *
 * This is THE transition record: the inspection stream, the inspector page, trace files and OpenTelemetry span events
 * all carry it as it is. It holds what the event brought (a candidate's size and short hash, a validation's outcome, a
 * cancel's reason, the request's mode and deadline at prepare), so that the machine definition can replay a recorded
 * request event by event and judge every step it took (`intent-mcp trace check`).
 */
export interface HandoffTransition {
  /** When the event arrived (the time the machine judged the deadline by), ISO 8601 with milliseconds. */
  at: string;
  sessionId: string;
  requestId: string;
  instance: string;
  from: HandoffState | null;
  event: TransitionEvent;
  to: HandoffState;
  answer: HandoffAnswer;
  validations: number;
  /** `prepare` only: whose model writes the candidate. */
  mode?: HandoffMode;
  /** `prepare` only: the deadline, when the request has one. */
  expiresAt?: string;
  /** `ACCEPT` and `replay`: the submitted candidate's UTF-8 size and short hash (never its text). */
  candidate?: CandidateView;
  /** `VALIDATED`: what the validation found. */
  outcome?: ValidationOutcomeKind;
  /**
   * `CANCEL`: the reason the event carried. Any other step into `cancelled`: why the request was cancelled
   * (`session_closed`, `internal_error`).
   */
  reason?: CancelReason;
}

/** The events of a transition record: `prepare`, the machine's own events, `replay` and `evict`. */
export type TransitionEvent = 'prepare' | HandoffEvent['type'] | 'replay' | 'evict';

/** What a validation found, without the text: a valid candidate, correctable problems, or a crash of the validation. */
export type ValidationOutcomeKind = 'valid' | 'invalid' | 'crashed';

/** A candidate as observability shows it: UTF-8 bytes and the first 12 hex digits of its SHA-256. */
export interface CandidateView {
  bytes: number;
  hash: string;
}

export interface LiveRequestView {
  requestId: string;
  instance: string;
  state: HandoffState;
  validations: number;
  preparedAt: string;
  expiresAt?: string;
  candidate?: CandidateView;
}

export interface RetainedRequestView {
  requestId: string;
  sessionId: string;
  instance: string;
  state: HandoffState;
  validations: number;
  /** How the request ended: what its last waiters were told (`result`, `rejected`, `withdrawn`, `too_late`, ...). */
  ended: WaiterAnswer;
  /** For a cancelled request: why. */
  reason?: CancelReason;
  bytes: number;
  finishedAt: string;
}

export interface SessionView {
  id: string;
  label?: string;
  closed: boolean;
  live: LiveRequestView[];
}

export interface EngineSnapshot {
  at: string;
  sessions: SessionView[];
  retained: RetainedRequestView[];
  store: TerminalStoreUsage;
}
