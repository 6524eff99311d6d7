/**
 * The executor loop behind `Intent.parse` and `intent_parse` (spec 03, "Executor mode"): the same machine as host mode,
 * with the executor in the host's place. Prepare, ask the executor, accept its candidate; after `CANDIDATE_INVALID` ask
 * once more with the feedback; return the terminal reply.
 */
import { IntentError, toIntentError, withRequestId, type FeedbackItem } from '../core/errors.js';
import type { IntentExecutor } from '../core/executor.js';
import type { RequestCaps } from '../core/request.js';
import { MAX_TIMER_MS, type CandidateFeedback, type HostTask, type ModelTask } from '../core/schemas.js';
import type { WaiterAnswer } from '../../machines/handoff.js';
import type { EngineSession, HandoffInstance } from './engine.js';
import { errorReply, handoffErrors, inExecutorTerms, type HandoffReply } from './replies.js';

export interface RecognizeOptions {
  /** Cancels the recognition (`ABORTED`) and aborts the executor's call. */
  signal?: AbortSignal | undefined;
  /** Deadline in ms from prepare; overrides the instance's `timeoutMs`. Passing it gives `TIMEOUT`. */
  timeoutMs?: number | undefined;
  /**
   * Told, while the recognition waits for its executor, what it is doing: once when each executor call starts, then
   * every {@link PROGRESS_INTERVAL_MS} until it answers. `progress` grows with every report (MCP progress semantics).
   * The MCP adapter turns these into `notifications/progress` when the caller gave a progress token, so clients that
   * reset their request timeout on progress keep waiting for a slow model. A listener that throws is ignored.
   */
  onProgress?: ((report: RecognizeProgress) => void) | undefined;
}

/** One progress report of a recognition (see {@link RecognizeOptions.onProgress}). */
export interface RecognizeProgress {
  /** 1, 2, 3, …: increases with every report. */
  readonly progress: number;
  /** What is being waited for, in a few words (never candidate or request text). */
  readonly message: string;
}

/** How often a recognition waiting for its executor reports progress. */
export const PROGRESS_INTERVAL_MS = 5000;

/** HTTP statuses and network error codes after which the same call may well succeed. */
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ENETUNREACH',
  'EHOSTUNREACH',
]);

/**
 * Classifies what an executor threw. An `IntentError` passes through; anything else becomes `EXECUTOR_FAILED`, retryable
 * for 429, 5xx and network causes, with `details.status` when the cause carries an HTTP status. The cause's message is
 * never copied: it may hold a URL with credentials or a key.
 */
export function executorFailure(error: unknown, requestId?: string): IntentError {
  if (error instanceof IntentError) return requestId === undefined ? error : withRequestId(error, requestId);
  const cause = error as { status?: unknown; code?: unknown; cause?: { code?: unknown } } | null;
  const status = typeof cause?.status === 'number' ? cause.status : undefined;
  const code =
    typeof cause?.code === 'string'
      ? cause.code
      : typeof cause?.cause?.code === 'string'
        ? cause.cause.code
        : undefined;
  const network = code !== undefined && (TRANSIENT_CODES.has(code) || code.startsWith('UND_ERR'));
  const retryable = status !== undefined ? status === 429 || status >= 500 : network;
  const details: Record<string, unknown> = {};
  if (status !== undefined) details['status'] = status;
  return new IntentError(
    'EXECUTOR_FAILED',
    retryable
      ? 'The executor failed with a transient error (rate limit, server or network); retry the call.'
      : 'The executor failed to produce a candidate; check the executor and its model endpoint, then retry.',
    { retryable, details, cause: error, ...(requestId === undefined ? {} : { requestId }) },
  );
}

/**
 * How executor mode presents the machine's answers (spec 06): a request that passed its deadline is `TIMEOUT`, one the
 * caller's signal cancelled is `ABORTED`; every other reply is the machine's own.
 */
function present(reply: HandoffReply, requestId: string, deadlineMs: number | undefined): HandoffReply {
  if (!reply.isError) return reply;
  const { code } = reply.error;
  // The only caller input an accept can refuse is the candidate's size, and here the executor wrote the candidate.
  const limit = reply.error.details?.['limit'];
  if (code === 'INPUT_INVALID' && typeof limit === 'number')
    return errorReply(handoffErrors.executorAnswerTooLarge(requestId, limit));
  if (code === 'HANDOFF_EXPIRED') return errorReply(handoffErrors.timeout(requestId, deadlineMs));
  if (code === 'HANDOFF_CANCELLED' && reply.error.details?.['reason'] === 'aborted')
    return errorReply(handoffErrors.aborted(requestId));
  return reply;
}

/** The reply for a request that ended while the executor was still writing its candidate. */
function endedReply(answer: WaiterAnswer, requestId: string, deadlineMs: number | undefined): HandoffReply {
  switch (answer) {
    case 'too_late':
      return errorReply(handoffErrors.timeout(requestId, deadlineMs));
    case 'closed':
      return errorReply(handoffErrors.sessionClosed(requestId));
    default:
      // Only the caller's signal cancels an executor-mode request while its executor runs.
      return errorReply(handoffErrors.aborted(requestId));
  }
}

/**
 * The options of a recognition, checked before anything is prepared: `INPUT_INVALID` for a signal that is not an
 * `AbortSignal`, an `onProgress` that is not a function, a `timeoutMs` that is not a positive integer within the timer
 * range, or options that cannot be read (a getter that throws, a revoked proxy). `null` or `undefined` are no options.
 * Returns a plain copy, so nothing is read from the caller's object again.
 */
export function checkRecognizeOptions(options: RecognizeOptions | null | undefined): RecognizeOptions {
  if (options === undefined || options === null) return {};
  let signal: unknown;
  let timeoutMs: unknown;
  let onProgress: unknown;
  try {
    if (typeof options !== 'object') throw new TypeError('not an object');
    ({ signal, timeoutMs, onProgress } = options);
  } catch {
    throw handoffErrors.unreadableOptions();
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw handoffErrors.badSignal();
  if (onProgress !== undefined && typeof onProgress !== 'function') throw handoffErrors.badProgress();
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMER_MS)
  )
    throw handoffErrors.badTimeout();
  return {
    ...(signal === undefined ? {} : { signal }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    ...(onProgress === undefined ? {} : { onProgress: onProgress as NonNullable<RecognizeOptions['onProgress']> }),
  };
}

/**
 * Runs one recognition through `session` with `executor`. Never throws: every outcome is a reply, and its error
 * messages name nothing but what an executor-mode caller has (never the host tools).
 */
export async function recognize(
  session: EngineSession,
  instance: HandoffInstance,
  executor: IntentExecutor,
  request: unknown,
  options: RecognizeOptions = {},
  caps?: RequestCaps,
): Promise<HandoffReply> {
  let checked: RecognizeOptions;
  try {
    checked = checkRecognizeOptions(options);
  } catch (error) {
    return errorReply(toIntentError(error));
  }
  return inExecutorTerms(await run(session, instance, executor, request, checked, caps));
}

async function run(
  session: EngineSession,
  instance: HandoffInstance,
  executor: IntentExecutor,
  request: unknown,
  options: RecognizeOptions = {},
  caps?: RequestCaps,
): Promise<HandoffReply> {
  const { signal } = options;
  if (signal?.aborted === true) return errorReply(handoffErrors.aborted());
  let reported = 0;
  const report = (message: string): void => {
    if (options.onProgress === undefined) return;
    try {
      options.onProgress({ progress: ++reported, message });
    } catch {
      // A progress listener's failure is its own; the recognition goes on.
    }
  };
  // How the request ended, as the machine told its waiters; set only once it has ended.
  let endedWith: WaiterAnswer | undefined;
  /** The signal of the executor call in progress, if one is. */
  let asking: AbortController | undefined;
  const onEnded = (answer: WaiterAnswer): void => {
    endedWith = answer;
    asking?.abort();
  };
  let hostTask: HostTask;
  try {
    hostTask = session.prepareForExecutor(instance, request, { timeoutMs: options.timeoutMs, caps }, onEnded);
  } catch (error) {
    return errorReply(toIntentError(error));
  }
  const { requestId, submissionToken } = hostTask;
  const task: ModelTask = {
    instructions: hostTask.instructions,
    input: hostTask.input,
    outputSchema: hostTask.outputSchema,
  };
  const deadlineMs = options.timeoutMs ?? instance.model.timeoutMs;

  const onAbort = (): void => {
    try {
      session.cancel(requestId, 'aborted');
    } catch {
      // Already terminal: nothing left to cancel.
    }
  };
  signal?.addEventListener('abort', onAbort, { once: true });

  /**
   * The executor's candidate, or `undefined` when the request ended while it was writing. The wait ends when the request
   * does (deadline, abort, session close), whether or not the executor honours its signal: one that ignores it, or
   * never settles, cannot hold the caller past the deadline.
   */
  const ask = async (feedback: CandidateFeedback | undefined): Promise<string | undefined> => {
    const controller = new AbortController();
    asking = controller;
    const waitingFor = feedback === undefined ? 'waiting for the model' : 'waiting for the model to correct its answer';
    report(waitingFor);
    const heartbeat =
      options.onProgress === undefined
        ? undefined
        : setInterval(() => {
            report(waitingFor);
          }, PROGRESS_INTERVAL_MS);
    heartbeat?.unref();
    let text: unknown;
    try {
      const call = Promise.resolve().then(() =>
        executor(
          task,
          feedback === undefined ? { signal: controller.signal } : { signal: controller.signal, feedback },
        ),
      );
      // What the executor settles with after the request ended is dropped: nobody waits for it any more.
      call.catch(noop);
      text = await Promise.race([call, whenAborted(controller.signal)]);
    } catch (error) {
      clearInterval(heartbeat);
      asking = undefined;
      if (endedWith !== undefined) return undefined;
      const failure = executorFailure(error, requestId);
      cancelQuietly(session, requestId);
      throw failure;
    }
    clearInterval(heartbeat);
    asking = undefined;
    if (endedWith !== undefined) return undefined;
    if (typeof text !== 'string') {
      cancelQuietly(session, requestId);
      throw handoffErrors.executorNotText(requestId);
    }
    return text;
  };

  // The engine's deadline timer is unref'd (a host-mode request waiting for its host keeps no process alive), but here
  // a caller awaits the result: without a ref'd handle, an executor that never settles would leave Node nothing to
  // wait for, and a script awaiting parse() at top level would exit with code 13 and no output before the deadline.
  const keepAlive = deadlineMs === undefined ? undefined : setInterval(noop, MAX_INTERVAL_MS);
  try {
    const first = await ask(undefined);
    if (first === undefined) return endedReply(endedWith ?? 'withdrawn', requestId, deadlineMs);
    let reply = await session.accept(requestId, submissionToken, first);
    if (reply.isError && reply.error.code === 'CANDIDATE_INVALID') {
      const issues = (reply.error.details?.['issues'] ?? []) as FeedbackItem[];
      const second = await ask({ candidateText: first, issues });
      if (second === undefined) return endedReply(endedWith ?? 'withdrawn', requestId, deadlineMs);
      // A repeat of the first candidate is answered CANDIDATE_REJECTED by the machine: it was the one correction.
      reply = await session.accept(requestId, submissionToken, second);
    }
    return present(reply, requestId, deadlineMs);
  } catch (error) {
    return errorReply(toIntentError(error, requestId));
  } finally {
    clearInterval(keepAlive);
    signal?.removeEventListener('abort', onAbort);
    // Whatever the reply, the recognition is over: a request the machine did not end (a candidate over the size limit,
    // say) must not stay live and hold a slot of the session.
    if (endedWith === undefined) cancelQuietly(session, requestId);
  }
}

/** The longest delay a Node timer takes. */
const MAX_INTERVAL_MS = 2 ** 31 - 1;

function noop(): void {
  // Nothing to do: see the callers.
}

/** Resolves with `undefined` once `signal` aborts (the request ended; `endedWith` says how). */
function whenAborted(signal: AbortSignal): Promise<undefined> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(undefined);
    else
      signal.addEventListener(
        'abort',
        () => {
          resolve(undefined);
        },
        { once: true },
      );
  });
}

function cancelQuietly(session: EngineSession, requestId: string): void {
  try {
    // The executor could not produce a candidate: the request ends unfinished, which is what `incomplete` means.
    session.cancel(requestId, 'incomplete');
  } catch {
    // Already terminal.
  }
}
