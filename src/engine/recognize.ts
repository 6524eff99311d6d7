/**
 * The executor loop behind `Intent.parse` and `intent_parse` (spec 03, "Executor mode"): the same machine as host mode,
 * with the executor in the host's place. Prepare, ask the executor, accept its candidate; after `CANDIDATE_INVALID` ask
 * once more with the feedback; return the terminal reply.
 */
import { IntentError, toIntentError, withRequestId, type FeedbackItem } from '../core/errors.js';
import type { IntentExecutor } from '../core/executor.js';
import type { RequestCaps } from '../core/request.js';
import type { CandidateFeedback, ModelTask } from '../core/schemas.js';
import type { EngineSession, HandoffInstance } from './engine.js';
import { errorReply, handoffErrors, type HandoffReply } from './replies.js';

export interface RecognizeOptions {
  /** Cancels the recognition (`ABORTED`) and aborts the executor's call. */
  signal?: AbortSignal | undefined;
  /** Deadline in ms from prepare; overrides the instance's `timeoutMs`. Passing it gives `TIMEOUT`. */
  timeoutMs?: number | undefined;
}

type Ending = 'aborted' | 'expired' | 'closed';

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

/** Runs one recognition through `session` with `executor`. Never throws: every outcome is a reply. */
export async function recognize(
  session: EngineSession,
  instance: HandoffInstance,
  executor: IntentExecutor,
  request: unknown,
  options: RecognizeOptions = {},
  caps?: RequestCaps,
): Promise<HandoffReply> {
  const { signal } = options;
  if (signal?.aborted === true) return errorReply(handoffErrors.aborted());
  let tracked: ReturnType<EngineSession['prepareTracked']>;
  try {
    tracked = session.prepareTracked(instance, request, { timeoutMs: options.timeoutMs, caps });
  } catch (error) {
    return errorReply(toIntentError(error));
  }
  const { task: hostTask, settled } = tracked;
  const { requestId, submissionToken } = hostTask;
  const task: ModelTask = {
    instructions: hostTask.instructions,
    input: hostTask.input,
    outputSchema: hostTask.outputSchema,
  };
  const deadlineMs = options.timeoutMs ?? instance.model.timeoutMs;

  let ending: Ending | undefined;
  let controller: AbortController | undefined;
  const abortExecutor = (): void => {
    controller?.abort();
  };
  const onAbort = (): void => {
    ending ??= 'aborted';
    abortExecutor();
    try {
      session.cancel(requestId, 'aborted');
    } catch {
      // Already terminal: nothing left to cancel.
    }
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  void settled.then((state) => {
    if (state === 'expired') ending ??= 'expired';
    else if (state === 'cancelled') ending ??= 'closed';
    if (state !== 'completed') abortExecutor();
  });

  const endingError = (why: Ending): IntentError =>
    why === 'aborted'
      ? handoffErrors.aborted(requestId)
      : why === 'expired'
        ? new IntentError(
            'TIMEOUT',
            `The recognition passed its deadline of ${deadlineMs ?? 0} ms; retry, or allow more time with timeoutMs.`,
            { requestId },
          )
        : handoffErrors.sessionClosed(requestId);

  const ask = async (feedback: CandidateFeedback | undefined): Promise<string> => {
    controller = new AbortController();
    let text: unknown;
    try {
      text = await executor(
        task,
        feedback === undefined ? { signal: controller.signal } : { signal: controller.signal, feedback },
      );
    } catch (error) {
      if (ending !== undefined) throw endingError(ending);
      const failure = executorFailure(error, requestId);
      cancelQuietly(session, requestId);
      throw failure;
    }
    if (ending !== undefined) throw endingError(ending);
    if (typeof text !== 'string') {
      cancelQuietly(session, requestId);
      throw new IntentError(
        'EXECUTOR_FAILED',
        'The executor resolved with something other than the candidate text; it must resolve with a string.',
        {
          requestId,
          retryable: false,
        },
      );
    }
    return text;
  };

  const finish = (reply: HandoffReply): HandoffReply => {
    if (!reply.isError) return reply;
    const { code } = reply.error;
    if (code === 'HANDOFF_EXPIRED') return errorReply(endingError('expired'));
    if (code === 'HANDOFF_CANCELLED') return errorReply(endingError(ending ?? 'aborted'));
    return reply;
  };

  try {
    const first = await ask(undefined);
    let reply = await session.accept(requestId, submissionToken, first);
    if (reply.isError && reply.error.code === 'CANDIDATE_INVALID') {
      const issues = (reply.error.details?.['issues'] ?? []) as FeedbackItem[];
      const second = await ask({ candidateText: first, issues });
      reply = await session.accept(requestId, submissionToken, second);
      if (reply.isError && reply.error.code === 'CANDIDATE_INVALID') {
        // The executor sent the same candidate again: the machine replays its feedback without spending the budget
        // (spec 03), but the executor has had its one correction. End the request rather than leave it in correcting.
        cancelQuietly(session, requestId);
        return errorReply(handoffErrors.candidateRejected(requestId, issues));
      }
    }
    return finish(reply);
  } catch (error) {
    return errorReply(toIntentError(error, requestId));
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

function cancelQuietly(session: EngineSession, requestId: string): void {
  try {
    session.cancel(requestId, 'incomplete');
  } catch {
    // Already terminal.
  }
}
