/**
 * What a person debugging request state sees (spec 03, "Observability"): the transition records of the inspection
 * stream and the snapshot of live requests and store usage. Sizes and short hashes only: never a token or a candidate.
 */
import type { HandoffAnswer, HandoffState } from '../../machines/handoff.js';
import type { TerminalStoreUsage } from './terminalStore.js';

/**
 * One step of one request, as the inspection stream reports it, in the domain's words: `event` is `prepare`, one of the
 * machine's five events (`ACCEPT`, `VALIDATED`, `CANCEL`, `DEADLINE`, `CLOSE`), `replay` (a retained terminal reply
 * handed out again) or `evict` (the store dropped the retained reply); `answer` is what the machine answered the
 * event's sender. No token, no candidate text.
 */
export interface HandoffTransition {
  at: string;
  sessionId: string;
  requestId: string;
  instance: string;
  from: HandoffState | null;
  event: string;
  to: HandoffState;
  answer: HandoffAnswer;
  validations: number;
}

export interface LiveRequestView {
  requestId: string;
  instance: string;
  state: HandoffState;
  validations: number;
  preparedAt: string;
  expiresAt?: string;
  candidate?: { bytes: number; hash: string };
}

export interface RetainedRequestView {
  requestId: string;
  sessionId: string;
  instance: string;
  state: HandoffState;
  validations: number;
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
