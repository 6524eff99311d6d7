import type { CandidateFeedback, ModelTask } from './schemas.js';

/** What an executor receives besides the task. */
export interface ExecutorContext {
  /** Aborts when the recognition is cancelled, times out or the caller's signal aborts; pass it to the model call. */
  readonly signal: AbortSignal;
  /** Present on the second (correction) call: the previous candidate and the format problems to fix in it. */
  readonly feedback?: CandidateFeedback;
}

/**
 * A function that asks a model for a candidate and resolves with the candidate text (spec 02). Executor mode calls it
 * once, and once more with `feedback` after a correctable format error.
 */
export type IntentExecutor = (task: ModelTask, ctx: ExecutorContext) => Promise<string>;
