/**
 * The replies of the handoff engine. A reply is the exact text that becomes `content[0].text` of the MCP envelope, so
 * rendering is deterministic: the same outcome always gives the same bytes, which is what replay relies on.
 */
import { IntentError } from '../core/errors.js';
import type { FeedbackItem } from '../core/errors.js';

export type HandoffReply =
  | { readonly isError: false; readonly text: string; readonly value: object }
  | { readonly isError: true; readonly text: string; readonly error: IntentError };

export function successReply(value: object, text = JSON.stringify(value)): HandoffReply {
  return { isError: false, text, value };
}

export function errorReply(error: IntentError): HandoffReply {
  return { isError: true, text: JSON.stringify({ error: error.toJSON() }), error };
}

/** Rebuilds a reply from its stored text (replay of a retained terminal reply: the text itself, byte for byte). */
export function replyFromText(isError: boolean, text: string): HandoffReply {
  if (!isError) return { isError: false, text, value: JSON.parse(text) as object };
  const parsed = JSON.parse(text) as { error: unknown };
  return { isError: true, text, error: IntentError.fromJSON(parsed.error) };
}

export const handoffErrors = {
  /** The options of a recognition (`Intent.parse`, `callTool` in executor mode) that are not what they must be. */
  badSignal: () =>
    new IntentError('INPUT_INVALID', 'options.signal must be an AbortSignal; pass the SDK request signal as is.'),
  badProgress: () =>
    new IntentError('INPUT_INVALID', 'options.onProgress must be a function; pass one or leave it out.'),
  badTimeout: () =>
    new IntentError('INPUT_INVALID', 'options.timeoutMs must be a positive integer number of milliseconds.'),
  unreadableOptions: () =>
    new IntentError(
      'INPUT_INVALID',
      'The options could not be read; pass a plain object with signal, timeoutMs and onProgress.',
    ),
  notFound: (requestId: string) =>
    new IntentError(
      'HANDOFF_NOT_FOUND',
      'No request with this requestId and submissionToken is live or retained in this session; call intent_prepare again.',
      { requestId },
    ),
  conflict: (requestId: string) =>
    new IntentError(
      'HANDOFF_CONFLICT',
      'A different candidate was already submitted for this request; resubmit that exact candidate to get its reply, or call intent_prepare for a new request.',
      { requestId },
    ),
  cancelled: (requestId: string, reason: string) =>
    new IntentError('HANDOFF_CANCELLED', 'This request was cancelled; call intent_prepare again to start over.', {
      requestId,
      details: { reason },
    }),
  expired: (requestId: string) =>
    new IntentError('HANDOFF_EXPIRED', 'This request passed its deadline; call intent_prepare again to start over.', {
      requestId,
    }),
  sessionClosed: (requestId?: string) =>
    new IntentError(
      'SESSION_CLOSED',
      'The session was closed; open a new connection and call intent_prepare again.',
      requestId === undefined ? {} : { requestId },
    ),
  candidateInvalid: (requestId: string, issues: readonly FeedbackItem[]) =>
    new IntentError(
      'CANDIDATE_INVALID',
      `The candidate has ${issues.length === 1 ? 'a format problem' : `${issues.length} format problems`}; fix exactly the listed issues once and submit the whole corrected candidate with the same requestId and submissionToken.`,
      {
        requestId,
        details: {
          issues: issues.map((i) => ({ path: i.path, message: i.message })),
          correction: { allowed: true, remaining: 1 },
        },
      },
    ),
  candidateRejected: (requestId: string, issues: readonly FeedbackItem[]) =>
    new IntentError(
      'CANDIDATE_REJECTED',
      'The corrected candidate still has format problems and the one correction is spent; do not resubmit, call intent_prepare for a new request instead.',
      {
        requestId,
        details: {
          issues: issues.map((i) => ({ path: i.path, message: i.message })),
          correction: { allowed: false, remaining: 0 },
        },
      },
    ),
  capacity: (limit: number) =>
    new IntentError(
      'CAPACITY_EXCEEDED',
      `This session already has ${limit} live requests; finish or cancel some (intent_accept / intent_cancel) before preparing more.`,
      { details: { limit } },
    ),
  candidateTooLarge: (requestId: string, limit: number) =>
    new IntentError(
      'INPUT_INVALID',
      `The candidateText is larger than ${limit} bytes; send a shorter candidate that follows the outputSchema.`,
      {
        requestId,
        details: { issues: [{ path: '/candidateText', message: `At most ${limit} UTF-8 bytes.` }], limit },
      },
    ),
  /** Executor mode: the executor's candidate is over the size limit. The model wrote it, not the caller. */
  executorAnswerTooLarge: (requestId: string, limit: number) =>
    new IntentError(
      'EXECUTOR_FAILED',
      `The model's candidate is larger than ${limit} bytes (limits.maxCandidateBytes); lower executor.maxTokens or raise the limit.`,
      { requestId, retryable: false, details: { limit } },
    ),
  validationFailed: (requestId: string) =>
    new IntentError(
      'INTERNAL',
      'Validating the candidate failed inside the server (a bug, please report it); this request has ended, call intent_prepare again.',
      { requestId, details: { reason: 'internal_error' } },
    ),
  timeout: (requestId: string, deadlineMs: number | undefined) =>
    new IntentError(
      'TIMEOUT',
      `The recognition passed its deadline of ${deadlineMs ?? 0} ms; retry, or allow more time with timeoutMs.`,
      { requestId },
    ),
  executorNotText: (requestId: string) =>
    new IntentError(
      'EXECUTOR_FAILED',
      'The executor resolved with something other than the candidate text; it must resolve with a string.',
      { requestId, retryable: false },
    ),
  taskTooLarge: () =>
    new IntentError(
      'INPUT_INVALID',
      'The request is too large to hand out as one task; send a smaller baseline or context.',
      { details: { issues: [{ path: '', message: 'The task built from this request is too large.' }] } },
    ),
  engineClosed: () => new IntentError('SESSION_CLOSED', 'The engine was closed; create a new one.'),
  engineOption: (detail: string, path: string, message: string) =>
    new IntentError('CONFIG_INVALID', `HandoffEngine options ${detail}; fix the option.`, {
      details: { issues: [{ path, message }] },
    }),
  aborted: (requestId?: string) =>
    new IntentError('ABORTED', 'The call was aborted by its caller.', requestId === undefined ? {} : { requestId }),
  disposed: (name: string) =>
    new IntentError(
      'INSTANCE_DISPOSED',
      `The instance "${name}" was disposed; create a new Intent to recognise more requests.`,
    ),
};

/**
 * Messages for executor mode (`intent_parse`, `Intent.parse`): the same codes, requestIds and details as the host-mode
 * errors, told in terms of what that caller can do. Its caller has no intent_prepare, intent_accept or intent_cancel
 * and never sees a submissionToken, so no message may send it there.
 */
const EXECUTOR_MESSAGES: Partial<Record<IntentError['code'], string>> = {
  CANDIDATE_REJECTED:
    "The model's corrected candidate still has format problems and its one correction is spent; retry the call, or use a model that follows the outputSchema more closely.",
  CANDIDATE_INVALID:
    "The model's candidate has format problems that were not corrected; retry the call, or use a model that follows the outputSchema more closely.",
  SESSION_CLOSED: 'The session was closed while the recognition ran; open a new connection and retry the call.',
  CAPACITY_EXCEEDED:
    'This session already runs as many recognitions as it may; wait for some to finish before starting more.',
  HANDOFF_CANCELLED: 'The recognition was cancelled before it finished; retry the call.',
  HANDOFF_EXPIRED: 'The recognition passed its deadline; retry, or allow more time with timeoutMs.',
  HANDOFF_NOT_FOUND: 'The recognition ended before its candidate could be checked; retry the call.',
  HANDOFF_CONFLICT: 'The recognition received two different candidates; retry the call.',
};

/** Host-mode wording that must never reach an executor-mode caller. */
const HOST_ONLY_WORDS = /intent_prepare|intent_accept|intent_cancel|submissionToken/;

/** The reply of `error` said in other words: the same code, category, retryability, request id, details and cause. */
function reworded(error: IntentError, message: string): HandoffReply {
  return errorReply(
    new IntentError(error.code, message, {
      category: error.category,
      retryable: error.retryable,
      ...(error.requestId === undefined ? {} : { requestId: error.requestId }),
      ...(error.details === undefined ? {} : { details: { ...error.details } }),
      cause: error.cause,
    }),
  );
}

/**
 * An executor-mode reply: an error whose message speaks of the host tools gets the executor-mode message of its code
 * (or, for a code without one, a generic "retry the call"); everything else, including the code, passes as it is.
 */
export function inExecutorTerms(reply: HandoffReply): HandoffReply {
  if (!reply.isError || !HOST_ONLY_WORDS.test(reply.error.message)) return reply;
  const { error } = reply;
  const message =
    EXECUTOR_MESSAGES[error.code] ??
    (error.code === 'INTERNAL'
      ? 'Checking the candidate failed inside the server (a bug, please report it); retry the call.'
      : 'The recognition could not be completed; retry the call.');
  return reworded(error, message);
}

/** The base tool names as words: not inside a longer name (a prefixed one, say), whose characters are [A-Za-z0-9_.-]. */
// A "." right after the name ends a sentence unless a name character follows it.
const BASE_TOOL_NAME = /(?<![A-Za-z0-9_.-])intent_(?:prepare|accept|cancel|parse)(?![A-Za-z0-9_-]|\.[A-Za-z0-9_-])/g;

/** A text naming the base tools, with each named as this adapter lists it (under its `toolPrefix`). */
export function withToolPrefix(text: string, prefix: string): string {
  return prefix === '' ? text : text.replace(BASE_TOOL_NAME, (name) => prefix + name);
}

/**
 * A reply whose error message names the tools as an adapter with `prefix` lists them (the engine writes the base
 * names). Deterministic, so a replayed reply stays byte-identical.
 */
export function replyWithToolPrefix(reply: HandoffReply, prefix: string): HandoffReply {
  if (prefix === '' || !reply.isError) return reply;
  const { error } = reply;
  const message = withToolPrefix(error.message, prefix);
  if (message === error.message) return reply;
  return reworded(error, message);
}
