import { z } from 'zod';

/** Every stable error code of spec 06, with its category. */
export const ERROR_CODES = [
  'CONFIG_INVALID',
  'INPUT_INVALID',
  'INSTANCE_REQUIRED',
  'INSTANCE_NOT_FOUND',
  'INSTANCE_DISPOSED',
  'HANDOFF_NOT_FOUND',
  'HANDOFF_CONFLICT',
  'HANDOFF_CANCELLED',
  'HANDOFF_EXPIRED',
  'CANDIDATE_INVALID',
  'CANDIDATE_REJECTED',
  'CAPACITY_EXCEEDED',
  'SESSION_CLOSED',
  'EXECUTOR_FAILED',
  'TIMEOUT',
  'ABORTED',
  'INTERNAL',
] as const;
export type IntentErrorCode = (typeof ERROR_CODES)[number];

export const ERROR_CATEGORIES = [
  'config',
  'transport',
  'input',
  'handoff',
  'cancelled',
  'timeout',
  'candidate',
  'executor',
  'internal',
] as const;
export type IntentErrorCategory = (typeof ERROR_CATEGORIES)[number];

/**
 * The category each code has unless the raiser says otherwise. Only `CONFIG_INVALID` has two categories
 * (`config` for configuration, `transport` for `connect()` options); its default is `config`.
 */
const DEFAULT_CATEGORY: Readonly<Record<IntentErrorCode, IntentErrorCategory>> = {
  CONFIG_INVALID: 'config',
  INPUT_INVALID: 'input',
  INSTANCE_REQUIRED: 'input',
  INSTANCE_NOT_FOUND: 'input',
  INSTANCE_DISPOSED: 'config',
  HANDOFF_NOT_FOUND: 'handoff',
  HANDOFF_CONFLICT: 'handoff',
  HANDOFF_CANCELLED: 'cancelled',
  HANDOFF_EXPIRED: 'timeout',
  CANDIDATE_INVALID: 'candidate',
  CANDIDATE_REJECTED: 'candidate',
  CAPACITY_EXCEEDED: 'handoff',
  SESSION_CLOSED: 'handoff',
  EXECUTOR_FAILED: 'executor',
  TIMEOUT: 'timeout',
  ABORTED: 'cancelled',
  INTERNAL: 'internal',
};

/** Codes whose failures are worth retrying as they are. `EXECUTOR_FAILED` decides per cause. */
const DEFAULT_RETRYABLE: ReadonlySet<IntentErrorCode> = new Set(['CANDIDATE_INVALID', 'CAPACITY_EXCEEDED', 'TIMEOUT']);

/** One problem found in a candidate or a request: a JSON Pointer and a sentence a model (or a person) can act on. */
export const FeedbackItemSchema = z.object({ path: z.string(), message: z.string() }).strict();
export type FeedbackItem = z.infer<typeof FeedbackItemSchema>;

/** The wire form of an {@link IntentError} (spec 06). */
export const SerializedIntentErrorSchema = z
  .object({
    code: z.enum(ERROR_CODES),
    category: z.enum(ERROR_CATEGORIES),
    message: z.string(),
    retryable: z.boolean(),
    requestId: z.string().optional(),
    details: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type SerializedIntentError = z.infer<typeof SerializedIntentErrorSchema>;

export interface IntentErrorOptions {
  /** Overrides the code's default category (only meaningful for `CONFIG_INVALID` → `transport`). */
  category?: IntentErrorCategory;
  /** Overrides the code's default retryability (used by `EXECUTOR_FAILED`). */
  retryable?: boolean;
  requestId?: string;
  /** Structured, serialisable details. Never a token, a key, a stack trace or candidate text. */
  details?: Record<string, unknown>;
  /** The underlying cause; kept on the object for debugging, never serialised. */
  cause?: unknown;
}

/**
 * The one error class of the library. `code` is stable; `message` is one English sentence saying what to do next.
 * Thrown by the library API (constructors, `createIntentMcpAdapter`, `Intent.parse`) and carried in MCP error envelopes.
 */
export class IntentError extends Error {
  override readonly name = 'IntentError';
  readonly code: IntentErrorCode;
  readonly category: IntentErrorCategory;
  readonly retryable: boolean;
  readonly requestId: string | undefined;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: IntentErrorCode, message: string, options: IntentErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.category = options.category ?? DEFAULT_CATEGORY[code];
    this.retryable = options.retryable ?? DEFAULT_RETRYABLE.has(code);
    this.requestId = options.requestId;
    this.details = options.details;
  }

  /** The wire form; key order is fixed so serialised errors are byte-stable. */
  toJSON(): SerializedIntentError {
    const out: SerializedIntentError = {
      code: this.code,
      category: this.category,
      message: this.message,
      retryable: this.retryable,
    };
    if (this.requestId !== undefined) out.requestId = this.requestId;
    if (this.details !== undefined) out.details = { ...this.details };
    return out;
  }

  /** Rebuilds an error from its wire form (for clients of the MCP tools). */
  static fromJSON(value: unknown): IntentError {
    const result = SerializedIntentErrorSchema.safeParse(value);
    if (!result.success)
      throw new IntentError(
        'INPUT_INVALID',
        'The value is not a serialised IntentError; pass the "error" object of an error envelope.',
      );
    const parsed = result.data;
    const options: IntentErrorOptions = { category: parsed.category, retryable: parsed.retryable };
    if (parsed.requestId !== undefined) options.requestId = parsed.requestId;
    if (parsed.details !== undefined) options.details = parsed.details;
    return new IntentError(parsed.code, parsed.message, options);
  }
}

/** The same error with `requestId` set, when it has none (an executor's own IntentError, say). */
export function withRequestId(error: IntentError, requestId: string): IntentError {
  if (error.requestId !== undefined) return error;
  const options: IntentErrorOptions = {
    category: error.category,
    retryable: error.retryable,
    requestId,
    cause: error.cause,
  };
  if (error.details !== undefined) options.details = { ...error.details };
  return new IntentError(error.code, error.message, options);
}

export function isIntentError(value: unknown): value is IntentError {
  return value instanceof IntentError;
}

/**
 * Turns anything thrown into an `IntentError`. Unknown throwables become `INTERNAL` with a fixed message: their text may
 * hold a stack, a key or a candidate, and spec 06 forbids leaking any of those.
 */
export function toIntentError(value: unknown, requestId?: string): IntentError {
  if (value instanceof IntentError) return value;
  return new IntentError(
    'INTERNAL',
    'An internal error occurred in intent-mcp; this is a bug, please report it with the steps that led to it.',
    requestId === undefined ? { cause: value } : { cause: value, requestId },
  );
}

/**
 * Most characters of one caller string (a key, a name, an id) an error quotes: enough to recognise it, never the whole
 * of a hostile one. Names of the configuration (1–64 characters) always fit whole.
 */
export const QUOTE_MAX_CHARS = 64;

/**
 * Upper bound on `JSON.stringify(error.toJSON())` for every error the core raises about caller input (request
 * arguments, candidate feedback), however large or hostile that input is: messages quote at most
 * {@link QUOTE_MAX_CHARS} characters of any caller string and feedback is cut to a size budget.
 */
export const MAX_ERROR_TEXT_CHARS = 8 * 1024;

/**
 * A short prefix of a caller string, safe to put in an error: at most {@link QUOTE_MAX_CHARS} UTF-16 units, then "…"
 * when cut; a surrogate pair is never split and a lone surrogate becomes U+FFFD, so the text survives any UTF-8
 * transport. Linear in the prefix only, never in the whole string.
 */
export function callerPrefix(text: string, max = QUOTE_MAX_CHARS): string {
  const cut = text.length > max;
  let end = Math.min(text.length, max);
  // Do not end between the two halves of a pair.
  if (cut && end > 0 && isHigh(text.charCodeAt(end - 1)) && isLow(text.charCodeAt(end))) end--;
  let out = '';
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    if (isHigh(c) && i + 1 < end && isLow(text.charCodeAt(i + 1))) {
      out += text[i] ?? '';
      out += text[++i] ?? '';
    } else out += isHigh(c) || isLow(c) ? '\uFFFD' : (text[i] ?? '');
  }
  return cut ? out + '…' : out;
}

/**
 * Characters JSON leaves as they are that a terminal or a log viewer would act on: C1 controls (U+009B is a CSI on
 * some terminals), the bidirectional controls that reorder what a reader sees (U+202E and friends, "Trojan Source"),
 * and the line and paragraph separators.
 */
const INVISIBLE_CONTROLS = /[\u0080-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * A caller string quoted for an error message: its {@link callerPrefix} as a JSON string literal (quotes, backslashes
 * and control characters escaped, and also the C1, bidirectional and separator controls as `\uXXXX`), e.g.
 * `"sk-liv…"`. The result is still a valid JSON string literal of the same prefix.
 */
export function quoteCaller(text: string): string {
  return JSON.stringify(callerPrefix(text)).replace(
    INVISIBLE_CONTROLS,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/** Renders feedback items as one readable sentence fragment: `"/a/b: message; /c: message"`. */
export function describeIssues(issues: readonly FeedbackItem[], max = 3): string {
  const shown = issues.slice(0, max).map((i) => `${i.path === '' ? '(root)' : i.path}: ${i.message}`);
  const more = issues.length > max ? ` (and ${issues.length - max} more)` : '';
  return shown.join('; ') + more;
}

/**
 * Reads a caller's option objects through `read`: an `IntentError` it throws goes through, and anything else thrown
 * while reading (a getter that throws, a revoked proxy) is `CONFIG_INVALID` naming `what`, never a raw TypeError.
 */
export function readCallerOptions<T>(what: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof IntentError) throw error;
    throw new IntentError(
      'CONFIG_INVALID',
      `The ${what} could not be read (a getter threw, or a proxy was revoked); pass plain objects.`,
    );
  }
}
