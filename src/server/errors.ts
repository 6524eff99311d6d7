/**
 * Every error and refusal the server and the command give, in one place (like `handoffErrors` in the engine):
 * `serverErrors` are the `CONFIG_INVALID` errors of configuration, flags and options (spec 05, 06); `httpRefusals` the
 * JSON-RPC errors the HTTP listener answers before or instead of MCP processing; `stdioRefusals` the ones the stdio
 * wire answers for lines it cannot deliver. Each message says what to do next and quotes at most a short prefix of
 * anything an operator or a caller typed.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { IntentError, QUOTE_MAX_CHARS, callerPrefix, quoteCaller } from '../core/errors.js';

/** How much of an option value given in code (a number, normally) a message quotes. */
const OPTION_VALUE_CHARS = 40;

/** An operator's or caller's string in a message: the core's bounded quote. */
const quoted = quoteCaller;

/** `value` for a message, quoted like any caller string, with anything before an "@" masked. */
function shownOrigin(value: string): string {
  const head = value.slice(0, QUOTE_MAX_CHARS * 4);
  // Never echo credentials back, even in a refusal: everything after the scheme up to the last "@" goes, whatever the
  // slashes (a mistyped "https:user:pass@host" has none).
  return quoteCaller(head.replace(/^([A-Za-z][A-Za-z0-9+.-]*:[/\\]*)?[^?#]*@/, '$1***@'));
}

function configInvalid(message: string): IntentError {
  return new IntentError('CONFIG_INVALID', message);
}

export const serverErrors = {
  /** A numeric option of a server function (`serveHttp`, `serveOverStdio`) that is not an integer in range. */
  optionNotInteger: (owner: string, option: string, min: number, value: unknown) =>
    configInvalid(
      `${owner} option ${option} must be an integer of at least ${min} (got ${String(value).slice(0, OPTION_VALUE_CHARS)}).`,
    ),
  portOutOfRange: (owner: string, min: number, max: number, value: unknown) =>
    configInvalid(`${owner} option port must be an integer from ${min} to ${max} (got ${String(value)}).`),
  cannotListen: (host: string, port: number, reason: string) =>
    configInvalid(`Cannot listen on ${quoted(host)} port ${port} (${reason}); choose another --host or --port.`),
  /**
   * Listening on every interface without a public origin (spec 05). `boundAddress` is the address actually bound, when
   * the check is made after listening.
   */
  needsPublicOrigin: (host: string, boundAddress?: string) =>
    configInvalid(
      `Binding ${quoted(host)} listens on every interface${boundAddress === undefined ? '' : ` (${boundAddress})`} and needs --public-origin (the URL clients use to reach this server), or bind 127.0.0.1.`,
    ),
  routeSelfMissing: (self: string) =>
    configInvalid(
      `--route-self ${quoted(self)} is not one of --route-upstreams; name this process exactly as the nginx upstream does.`,
    ),
  routeIncomplete: () =>
    configInvalid('--route-upstreams and --route-self go together (or http.route in the config); give both.'),
  /** `--route-upstreams` / `--route-self` route HTTP sessions; over stdio they would be silently ignored. */
  routeOverStdio: () =>
    configInvalid(
      '--route-upstreams and --route-self route HTTP sessions behind nginx; they do nothing over stdio. Add --transport http or drop them.',
    ),
  routeUpstreamRepeated: () =>
    configInvalid(
      '--route-upstreams names a server twice (nginx hashes host and port: "x" and "x:" are the same server); list each nginx upstream server once.',
    ),
  pathInvalid: (path: string, reserved: string) =>
    configInvalid(`--path ${JSON.stringify(path)} is invalid; use an absolute path such as /mcp (not ${reserved}).`),
  publicOriginRefused: (value: string, rule: string) =>
    configInvalid(`--public-origin ${shownOrigin(value)} is refused: ${rule}.`),
  configUnreadable: (path: string) =>
    configInvalid(`Cannot read the config file ${path}; check the path and its permissions.`),
  configNotJson: (path: string, at?: { line: number; column: number }) =>
    configInvalid(
      `The config file ${path} is not valid JSON${at === undefined ? '' : ` at line ${at.line}, column ${at.column}`}; fix its syntax.`,
    ),
  configNotAFile: (path: string) =>
    configInvalid(`The config file ${path} is not a regular file; pass the path of a JSON file.`),
  configTooLarge: (path: string, limit: number) =>
    configInvalid(`The config file ${path} is larger than ${limit} bytes; pass the path of the JSON config file.`),
  /** The first schema issue of a config file: `where` is its dotted path or "the top level". */
  configIssue: (source: string, where: string, message: string) =>
    configInvalid(`${source}: invalid configuration at ${where}: ${message.replace(/\.$/, '')}.`),
  instanceNameInvalid: (source: string, name: string) =>
    configInvalid(
      `${source}: the instance name ${quoteCaller(name)} is invalid; use 1–64 characters from A–Z, a–z, 0–9, "_", "." and "-", not __proto__, prototype or constructor.`,
    ),
  literalApiKey: (source: string, name: string) =>
    configInvalid(
      `${source}: instances.${name}.executor has a literal "apiKey", which is refused; put the key in an environment variable and name it with "apiKeyEnv".`,
    ),
  noInstances: (source: string) => configInvalid(`${source}: "instances" is empty; configure at least one instance.`),
  /** `rule` explains how `needed` was derived. */
  stdioLimitTooLow: (configured: number, needed: number, rule: string) =>
    configInvalid(
      `stdio.maxMessageBytes ${configured} is below the ${needed} bytes this configuration needs (${rule}); raise it or leave it out.`,
    ),
  executorMissing: (instance: string) =>
    configInvalid(
      `Executor mode needs an executor for instance "${instance}"; add instances.${instance}.executor to the config, or use --mode host.`,
    ),
  /** An instance the config describes that `new Intent` refused. */
  instanceInvalid: (instance: string, message: string) => configInvalid(`Instance "${instance}": ${message}`),
};

/** A JSON-RPC error the HTTP listener answers with itself: status, JSON-RPC code, message and extra headers. */
export interface HttpRefusal {
  readonly status: number;
  readonly code: number;
  readonly message: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly data?: Readonly<Record<string, unknown>>;
}

/** Seconds a client is told to wait (`Retry-After`) when the server is busy or shutting down. */
const RETRY_SOON_S = '5';
/** Seconds a client is told to wait (`Retry-After`) when every session slot is taken. */
const RETRY_SESSIONS_S = '30';

export const httpRefusals = {
  notFound: (): HttpRefusal => ({ status: 404, code: -32601, message: 'Not found.' }),
  forbiddenHeader: (header: 'Host' | 'Origin'): HttpRefusal => ({
    status: 403,
    code: -32000,
    message: `Forbidden: the ${header} header is not allowed for this server.`,
  }),
  sessionNotFound: (): HttpRefusal => ({
    status: 404,
    code: -32001,
    message: 'Session not found; initialize a new session.',
  }),
  noSession: (): HttpRefusal => ({
    status: 400,
    code: -32000,
    message: 'Bad Request: no valid Mcp-Session-Id; send initialize first.',
  }),
  shuttingDown: (): HttpRefusal => ({
    status: 503,
    code: -32000,
    message: 'The server is shutting down.',
    headers: { 'retry-after': RETRY_SOON_S },
  }),
  tooManySessions: (limit: number): HttpRefusal => ({
    status: 503,
    code: -32000,
    message: `Too many sessions (limit ${limit}); retry later.`,
    headers: { 'retry-after': RETRY_SESSIONS_S },
  }),
  /** 2026-07-28 is served on stdio only: answered as the SDK answers an unsupported revision. */
  unsupportedProtocolVersion: (requested: string, supported: readonly string[]): HttpRefusal => ({
    status: 400,
    code: -32022,
    message: `Unsupported protocol version: ${requested}`,
    data: { supported, requested },
  }),
  /**
   * A session request naming a revision no 2025 session speaks, answered as the SDK answers it but with the header
   * quoted by a short prefix (the SDK echoes it whole: a 10,000-character header made a 10,088-character message).
   */
  badProtocolVersionHeader: (requested: string, supported: readonly string[]): HttpRefusal => ({
    status: 400,
    code: -32000,
    message: `Bad Request: Unsupported protocol version: ${quoteCaller(requested)} (supported versions: ${supported.join(', ')})`,
  }),
  /** A request reusing the id of one still in flight in its session: its answer could only go to one of them. */
  requestIdInUse: (): HttpRefusal => ({
    status: 409,
    code: -32600,
    message: 'Invalid Request: this id is already used by a request in flight in this session; use a new id.',
  }),
  parseError: (): HttpRefusal => ({ status: 400, code: -32700, message: 'Parse error: the body is not valid JSON.' }),
  bodyTooLarge: (maxBytes: number): HttpRefusal => ({
    status: 413,
    code: -32600,
    message: `Request body larger than ${maxBytes} bytes.`,
  }),
  bodyBudgetFull: (): HttpRefusal => ({
    status: 503,
    code: -32000,
    message: 'The server is buffering too many request bodies; retry later.',
    headers: { 'retry-after': RETRY_SOON_S },
  }),
  bodyLate: (timeoutMs: number): HttpRefusal => ({
    status: 408,
    code: -32600,
    message: `The request body did not arrive within ${timeoutMs} ms.`,
  }),
  bodyEndedEarly: (): HttpRefusal => ({ status: 408, code: -32600, message: 'The request body ended early.' }),
  internal: (): HttpRefusal => ({ status: 500, code: -32603, message: 'Internal error.' }),
};

/** A line the stdio wire answers itself: JSON-RPC code and message, the reason logged, optional error data. */
export interface StdioRefusal {
  readonly code: number;
  readonly message: string;
  /** Short reason for the refusal log. */
  readonly reason: string;
  readonly data?: Record<string, unknown>;
}

/** JSON-RPC 2.0 error codes the stdio wire answers with. */
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;

export const stdioRefusals = {
  oversized: (bytes: number, maxBytes: number): StdioRefusal => ({
    code: INVALID_REQUEST,
    message: `Message of ${bytes} bytes is larger than the ${maxBytes}-byte limit of this server; send a smaller message (limits.maxCandidateBytes bounds candidateText).`,
    reason: 'oversized message',
    data: { code: 'INPUT_INVALID', limit: maxBytes },
  }),
  unparsable: (): StdioRefusal => ({
    code: PARSE_ERROR,
    message: 'Parse error: the line is not valid JSON.',
    reason: 'unparsable line',
  }),
  notJsonRpc: (): StdioRefusal => ({
    code: INVALID_REQUEST,
    message: 'Invalid Request: the line is not a JSON-RPC 2.0 message.',
    reason: 'not JSON-RPC',
  }),
};

/**
 * Longest JSON-RPC error message the server sends. Our own errors quote at most 64 characters of caller text; this bounds
 * the SDK's, which quote it whole ("Prompt <name> not found", "Resource not found: <uri>", "No skill is served at
 * <uri>": a 1 MB URI came back whole).
 */
export const MAX_PROTOCOL_ERROR_MESSAGE_CHARS = 128;
/** Largest `data` (as JSON) of a JSON-RPC error the server sends; a larger one (it echoed the caller's input) is dropped. */
export const MAX_PROTOCOL_ERROR_DATA_CHARS = 1024;

/** Whether `value` serialises to JSON of at most `max` characters (a value that cannot be serialised does not fit). */
function fitsAsJson(value: unknown, max: number): boolean {
  try {
    const text = JSON.stringify(value) as string | undefined;
    return text !== undefined && text.length <= max;
  } catch {
    return false;
  }
}

/** `text` with each run of whitespace made one space; only as much of it as a message keeps is looked at. */
function compactWhitespace(text: string): string {
  // A prefix a few times the kept length always holds enough after compaction (linear in that prefix only).
  return text.slice(0, MAX_PROTOCOL_ERROR_MESSAGE_CHARS * 64).replace(/\s+/g, ' ');
}

/**
 * A JSON-RPC message on its way out, with an error response bounded: its message cut to
 * {@link MAX_PROTOCOL_ERROR_MESSAGE_CHARS} (then "…"), an oversized `data` dropped; code and id kept. Every other
 * message is returned as it is (the same object). Both transports send through it.
 */
export function boundProtocolError(message: JSONRPCMessage): JSONRPCMessage {
  if (!('error' in message)) return message;
  const { error } = message;
  const text = typeof error.message === 'string' ? error.message : String(error.message);
  const fitsMessage = text.length <= MAX_PROTOCOL_ERROR_MESSAGE_CHARS;
  const keepData = error.data === undefined || fitsAsJson(error.data, MAX_PROTOCOL_ERROR_DATA_CHARS);
  if (fitsMessage && keepData) return message;
  const { data, ...rest } = error;
  return {
    ...message,
    error: {
      ...rest,
      // The SDK's validation errors are pretty-printed JSON: runs of whitespace go first, so the reason fits.
      message: fitsMessage ? text : callerPrefix(compactWhitespace(text), MAX_PROTOCOL_ERROR_MESSAGE_CHARS),
      ...(keepData && data !== undefined ? { data } : {}),
    },
  };
}
