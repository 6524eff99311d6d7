/**
 * The standalone command's configuration (spec 05): the config file, the embedded default, flags over file, and the
 * public-origin rules. Everything invalid is an `IntentError` `CONFIG_INVALID` whose message names the problem.
 */
import { constants } from 'node:buffer';
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync } from 'node:fs';
import { BlockList, isIP } from 'node:net';
import { z } from 'zod';
import { IntentError, quoteCaller } from '../core/errors.js';
import { zodIssuesToFeedback } from '../core/feedback.js';
import {
  MAX_TIMER_MS,
  IntentConfigSchema,
  LimitsOverrideSchema,
  LimitsSchema,
  PREFIX_PATTERN,
  isValidName,
  type LimitsOverride,
} from '../core/schemas.js';
import { serverErrors } from './errors.js';
import { MAX_BODY_BYTES } from './httpBody.js';

/** Longest delay a Node timer honours: the ceiling of every millisecond option. */

/** What `--path` / `http.path` must look like: absolute, no query or fragment. */
export const MCP_PATH_PATTERN = /^\/[^\s?#]*$/;
/** The health endpoint, answered outside the MCP path; the MCP path cannot be this. */
export const HEALTH_PATH = '/healthz';

export const HttpConfigSchema = z
  .object({
    host: z.string().min(1).optional(),
    port: z.int().min(0).max(65535).optional(),
    path: z.string().regex(MCP_PATH_PATTERN, 'must start with "/" and hold no query or fragment').optional(),
    publicOrigin: z.string().optional(),
    maxSessions: z.int().min(1).max(1_000_000).optional(),
    sessionIdleMs: z.int().min(1000).max(MAX_TIMER_MS).optional(),
    sessionInitIdleMs: z.int().min(100).max(MAX_TIMER_MS).optional(),
    // At least one whole body must fit, or a large request would be told to retry forever.
    maxBufferedBytes: z.int().min(MAX_BODY_BYTES).max(Number.MAX_SAFE_INTEGER).optional(),
    headersTimeoutMs: z.int().min(100).max(MAX_TIMER_MS).optional(),
    bodyTimeoutMs: z.int().min(100).max(MAX_TIMER_MS).optional(),
    refusalLogsPerMinute: z.int().min(1).max(1_000_000).optional(),
    /** Scale-out behind nginx `hash $http_mcp_session_id consistent` (sessionRoute.ts): the upstreams and this one. */
    route: z
      .object({
        upstreams: z.array(z.string().min(1).max(300)).min(1).max(1024),
        self: z.string().min(1).max(300),
      })
      .strict()
      .optional(),
  })
  .strict();

/** An integer field of a config schema (optional or not). */
type IntegerField = z.ZodNumber | z.ZodOptional<z.ZodNumber>;

/** The integer range a config field accepts, read off its schema: the flags and their help text use the same. */
export function integerRange(field: IntegerField): { min: number; max: number } {
  const number = field instanceof z.ZodOptional ? field.unwrap() : field;
  return { min: number.minValue ?? Number.MIN_SAFE_INTEGER, max: number.maxValue ?? Number.MAX_SAFE_INTEGER };
}

/**
 * The longest stdio line that can be read at all: a line is decoded into one string, and V8 holds no longer string
 * (`buffer.constants.MAX_STRING_LENGTH`, about 512 MiB; a UTF-8 byte never decodes to more than one UTF-16 unit).
 */
export const STDIO_MAX_MESSAGE_BYTES = constants.MAX_STRING_LENGTH;

export const StdioConfigSchema = z
  .object({
    maxMessageBytes: z.int().min(1024).max(STDIO_MAX_MESSAGE_BYTES).optional(),
  })
  .strict();

/** The config file (JSON). `instances` holds serialisable `IntentConfig`s; the command builds the `Intent`s itself. */
export const ServerConfigSchema = z
  .object({
    mode: z.enum(['host', 'executor']).optional(),
    toolPrefix: z.string().regex(PREFIX_PATTERN).optional(),
    instances: z.record(z.string(), IntentConfigSchema).optional(),
    http: HttpConfigSchema.optional(),
    stdio: StdioConfigSchema.optional(),
    limits: LimitsOverrideSchema.optional(),
  })
  .strict();
export type ServerConfig = z.infer<typeof ServerConfigSchema>;

/** What `npm start` serves with no config: host mode, one instance `main` without schema. No model, key or network. */
export const EMBEDDED_DEFAULT: ServerConfig = ServerConfigSchema.parse({ mode: 'host', instances: { main: {} } });

/**
 * The command's defaults, the one source for resolving flags over the config file, `serveHttp`'s optional options and
 * the `--help` text. The request and session limits are not here: their defaults are `LimitsSchema`'s.
 */
export const SERVER_DEFAULTS = {
  mode: 'host',
  transport: 'stdio',
  host: '127.0.0.1',
  port: 3001,
  path: '/mcp',
  maxSessions: 256,
  sessionIdleMs: 1_800_000,
  /** A session that never made a request after its `initialize` is reclaimed after this long. */
  sessionInitIdleMs: 30_000,
  /** Request bytes buffered at once across every connection; a POST beyond it gets 503 + `Retry-After`. */
  maxBufferedBytes: 64 * 1024 * 1024,
  /** Time for a client to send a request's headers (Node's `headersTimeout`). */
  headersTimeoutMs: 10_000,
  /** Time for a client to send a request's body, counted from its headers. */
  bodyTimeoutMs: 30_000,
  /** Refused-request log lines per minute; the rest are counted and summarised. */
  refusalLogsPerMinute: 60,
  /**
   * How long a drain waits for replies before closing anyway: a graceful shutdown (spec 05: exit within 5 s), a DELETE
   * waiting for its session's POSTs, stdin ending with requests unanswered.
   */
  drainMs: 3000,
  logLevel: 'info',
} as const;

/** Parses and validates a config object; `source` names where it came from in messages. */
export function parseServerConfig(value: unknown, source: string): ServerConfig {
  // A literal key in a file is refused with its own message: secrets come only from the environment (spec 05).
  const instances = (value as { instances?: unknown } | null)?.instances;
  if (instances !== null && typeof instances === 'object') {
    for (const name of Object.keys(instances)) {
      if (!isValidName(name)) throw serverErrors.instanceNameInvalid(source, name);
      const executor: unknown = (instances as Record<string, { executor?: unknown } | null>)[name]?.executor;
      if (executor !== null && typeof executor === 'object' && 'apiKey' in executor)
        throw serverErrors.literalApiKey(source, name);
    }
  }
  const parsed = ServerConfigSchema.safeParse(value);
  if (!parsed.success) {
    const first = zodIssuesToFeedback(parsed.error.issues, value)[0] ?? { path: '', message: 'Invalid.' };
    const where = first.path === '' ? 'the top level' : first.path.slice(1).replace(/\//g, '.');
    throw serverErrors.configIssue(source, where, first.message);
  }
  if (parsed.data.instances !== undefined && Object.keys(parsed.data.instances).length === 0)
    throw serverErrors.noInstances(source);
  return parsed.data;
}

/**
 * Largest config file read: far above any real configuration (schemas, instructions and domains of many instances),
 * and small enough that a wrong path (a log, a disk image, `/dev/zero`) is refused before it is read into memory.
 */
export const MAX_CONFIG_FILE_BYTES = 16 * 1024 * 1024;

/** Reads a JSON config file: a regular file of at most {@link MAX_CONFIG_FILE_BYTES}, JSON with an optional BOM. */
export function loadConfigFile(path: string): ServerConfig {
  const text = readConfigText(path);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw serverErrors.configNotJson(path, jsonErrorPosition(text, error));
  }
  return parseServerConfig(value, path);
}

/** The file's text, read through one descriptor so what was checked is what is read (never more than the limit). */
function readConfigText(path: string): string {
  let fd: number;
  try {
    // Non-blocking: a FIFO (a wrong path, or `--config <(...)` with no writer yet) would block open forever; opened
    // at once, it is refused below as not a regular file. For a regular file O_NONBLOCK changes nothing.
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  } catch {
    throw serverErrors.configUnreadable(path);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw serverErrors.configNotAFile(path);
    if (stats.size > MAX_CONFIG_FILE_BYTES) throw serverErrors.configTooLarge(path, MAX_CONFIG_FILE_BYTES);
    // Read up to one byte past the limit: a file that grew after fstat is refused too, never read without bound.
    const buffer = Buffer.alloc(Math.min(stats.size, MAX_CONFIG_FILE_BYTES) + 1);
    let length = 0;
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
      if (length === buffer.length) {
        if (length > MAX_CONFIG_FILE_BYTES) throw serverErrors.configTooLarge(path, MAX_CONFIG_FILE_BYTES);
        break;
      }
    }
    // Editors on Windows may start a UTF-8 file with a byte order mark, which JSON.parse refuses.
    return buffer.toString('utf8', 0, length).replace(/^\uFEFF/, '');
  } catch (error) {
    if (error instanceof IntentError) throw error;
    throw serverErrors.configUnreadable(path);
  } finally {
    closeSync(fd);
  }
}

/** Where a JSON syntax error is, as 1-based line and column, or undefined when the parser did not say. */
export interface JsonErrorPosition {
  line: number;
  column: number;
}

/**
 * Whether `JSON.parse` finds nothing wrong in `prefix` before its end: it parses, or fails only for want of more text
 * (the end of input, or a position at the end).
 */
function isSoundJsonPrefix(prefix: string): boolean {
  try {
    JSON.parse(prefix);
    return true;
  } catch (error) {
    const message = error instanceof Error ? error.message : '';
    const at = /\bposition (\d+)/.exec(message);
    if (at?.[1] !== undefined) return Number(at[1]) >= prefix.length;
    return /end of (JSON )?input/i.test(message);
  }
}

/**
 * Where `JSON.parse` first objects, for the messages that give no position (V8's "Unexpected token 'x', "…" is not
 * valid JSON"): the longest prefix with nothing wrong in it, found by bisection (a prefix of a sound prefix is sound),
 * so about log₂(n) parses of at most n characters. Undefined when the whole text is sound.
 */
function firstUnsoundOffset(text: string): number | undefined {
  if (isSoundJsonPrefix(text)) return undefined;
  let sound = 0;
  let unsound = text.length;
  while (unsound - sound > 1) {
    const mid = sound + Math.floor((unsound - sound) / 2);
    if (isSoundJsonPrefix(text.slice(0, mid))) sound = mid;
    else unsound = mid;
  }
  // text[0, sound) is sound and text[0, sound + 1) is not: the character at `sound` is the one refused.
  return sound;
}

/**
 * The line and column of a `JSON.parse` error. V8 reports the offset in most messages ("at position N"); an input that
 * ends too early is placed at its end; for the messages without a position the offset is found by bisection
 * ({@link firstUnsoundOffset}). Linear in the text up to that offset, apart from that bisection (n log n, config files
 * only, on an error).
 */
export function jsonErrorPosition(text: string, error: unknown): JsonErrorPosition | undefined {
  const message = error instanceof Error ? error.message : '';
  const at = /\bposition (\d+)/.exec(message);
  let offset: number;
  if (at?.[1] !== undefined) offset = Math.min(Number(at[1]), text.length);
  else if (/end of (JSON )?input/i.test(message) || text.trim() === '') offset = text.length;
  else {
    const found = firstUnsoundOffset(text);
    if (found === undefined) return undefined;
    offset = found;
  }
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

// ---------------------------------------------------------------------------------------------------------------------
// Public origin and the Host / Origin rules (spec 05)

export interface PublicOrigin {
  /** The origin exactly as browsers send it in `Origin` (`https://host[:port]`). */
  readonly origin: string;
  /** The `Host` header value clients send: host, plus the port when it is not the scheme's default. */
  readonly host: string;
}

/**
 * The public origin as typed: `scheme://host[:port][/]`. Checked on the string itself, before WHATWG URL parsing,
 * which would silently drop dot segments, empty user info, tabs and newlines, and rewrite hosts (spec 05).
 */
const ORIGIN_SHAPE = /^(?<scheme>[A-Za-z][A-Za-z0-9+.-]*):\/\/(?<authority>[^/?#]*)(?<rest>.*)$/s;
const REG_NAME =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;
const IPV6_LITERAL = /^\[[0-9A-Fa-f:.]+\]$/;
const PORT = /^[1-9][0-9]{0,4}$/;
/** Longer than any origin a browser could send: scheme, a 253-character host and a port fit easily. */
const MAX_ORIGIN_CHARS = 512;

/** Validates `--public-origin` as typed; throws `CONFIG_INVALID` naming the rule that failed. */
export function parsePublicOrigin(value: string): PublicOrigin {
  const fail = (rule: string): never => {
    throw serverErrors.publicOriginRefused(value, rule);
  };
  if (value.includes('*')) fail('it must not contain a wildcard "*"');
  if (value.length > MAX_ORIGIN_CHARS) fail(`it must be at most ${MAX_ORIGIN_CHARS} characters`);
  const shape = ORIGIN_SHAPE.exec(value)?.groups;
  if (shape === undefined) {
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(value)?.[1]?.toLowerCase();
    if (scheme !== undefined && scheme !== 'http' && scheme !== 'https' && !/^\d/.test(value.slice(scheme.length + 1)))
      fail('the scheme must be http: or https:');
    return fail('it must be an absolute http: or https: URL such as https://mcp.example.com');
  }
  const scheme = (shape['scheme'] ?? '').toLowerCase();
  const authority = shape['authority'] ?? '';
  const rest = shape['rest'] ?? '';
  if (scheme !== 'http' && scheme !== 'https') fail('the scheme must be http: or https:');
  if (authority === '' && rest === '')
    fail('it must be an absolute http: or https: URL such as https://mcp.example.com');
  if (!/^[\x21-\x7e]*$/.test(value))
    fail('it must be printable ASCII with no spaces, tabs or line breaks (write an international host in punycode)');
  if (value.includes('\\')) fail('it must not contain a backslash');
  if (authority.includes('@')) fail('it must not contain a user name or password (not even an empty one)');
  if (authority.includes('%')) fail('the host must not be percent-encoded');
  const colon = authority.startsWith('[') ? authority.indexOf(']') + 1 : authority.indexOf(':');
  const hostText = colon <= 0 ? authority : authority.slice(0, colon);
  const portText = colon <= 0 || colon === authority.length ? undefined : authority.slice(colon);
  if (hostText === '') fail('it must name a host');
  if ((!REG_NAME.test(hostText) || hostText.replace(/\.$/, '').length > 253) && !IPV6_LITERAL.test(hostText))
    fail('the host must be a DNS name (at most 253 characters), an IPv4 address or a bracketed IPv6 address');
  if (portText !== undefined) {
    const digits = portText.slice(1);
    if (!portText.startsWith(':') || !PORT.test(digits) || Number(digits) > 65535)
      fail('the port must be a number from 1 to 65535 with no leading zeros');
  }
  if (rest.startsWith('?') || rest.includes('?')) fail('it must not contain a query');
  if (rest.includes('#')) fail('it must not contain a fragment');
  if (/(^|\/)\.\.?(\/|$)/.test(rest)) fail('it must not contain dot segments ("." or "..")');
  if (rest !== '' && rest !== '/') fail('it must not contain a path (only a single "/" is allowed)');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail('it must be an absolute http: or https: URL such as https://mcp.example.com');
  }
  // The host must already be what browsers send: "0x7f.1" or "[0:0::1]" would be rewritten, so they are refused.
  if (url.hostname !== hostText.toLowerCase())
    fail(`the host must be written as browsers send it (${quoteCaller(url.hostname)})`);
  // URL drops the scheme's default port, so `host` is already "host" or "host:port" as spec 05 wants.
  return { origin: url.origin, host: url.host };
}

const UNSPECIFIED = new BlockList();
UNSPECIFIED.addAddress('0.0.0.0', 'ipv4');
UNSPECIFIED.addAddress('::', 'ipv6');

/**
 * Whether an address, as `server.address()` reports it or as an operator typed it, is the unspecified address of
 * either family (every interface). Node's `BlockList` matches IPv4-mapped forms (`::ffff:0.0.0.0`) too; a typed
 * host goes through the WHATWG host parser first, which reads the legacy IPv4 spellings (`0`, `0.0`, `0x0`, `000.0.0.0`)
 * exactly as the resolver behind `listen` does.
 */
export function isUnspecifiedAddress(address: string): boolean {
  let text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (isIP(text) === 0) {
    try {
      const hostname = new URL(`http://${text.includes(':') ? `[${text}]` : text}/`).hostname;
      text = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    } catch {
      return false;
    }
  }
  const family = isIP(text);
  if (family === 4) return UNSPECIFIED.check(text, 'ipv4');
  if (family === 6) return UNSPECIFIED.check(text, 'ipv6');
  return false;
}

/** The Host and Origin values a listener accepts: the public origin's, plus the local diagnostic addresses. */
export function allowedHostsAndOrigins(
  port: number,
  publicOrigin: PublicOrigin | undefined,
): { hosts: ReadonlySet<string>; origins: ReadonlySet<string> } {
  const local = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
  const hosts = new Set(local);
  const origins = new Set(local.map((host) => `http://${host}`));
  if (publicOrigin !== undefined) {
    hosts.add(publicOrigin.host);
    origins.add(publicOrigin.origin);
  }
  return { hosts, origins };
}

/** Room on a stdio line for everything but the largest string argument: JSON-RPC fields, ids, tokens, context. */
export const STDIO_ENVELOPE_BYTES = 1024 * 1024;
/** JSON can escape one byte or UTF-16 unit of a string as six bytes (`\u0000`); a line must hold the worst case. */
const JSON_ESCAPE_FACTOR = 6;
/** The defaults of every limit, from the one schema that defines them. */
const LIMIT_DEFAULTS = LimitsSchema.parse({});
/** How the derived stdio read limit is computed, for its refusal. */
const STDIO_LIMIT_RULE = `${JSON_ESCAPE_FACTOR} × the largest accepted candidate or request text + ${STDIO_ENVELOPE_BYTES / (1024 * 1024)} MiB`;

/**
 * The stdio read limit in bytes: `stdio.maxMessageBytes` when set, else derived so that any candidate and any request
 * text the configuration accepts fits on one line however the client escapes it:
 * `6 × max(largest accepted candidateText bytes, largest accepted input + context chars) + 1 MiB`, where the request
 * text is `maxInputChars + maxContextItems × maxContextItemChars`. The largest accepted candidate is the session gate
 * (top-level `limits.maxCandidateBytes`, default 1 MiB) or the largest instance's own limit, whichever is lower. The
 * default configuration gives 7 MiB. A configured value below the derived one is `CONFIG_INVALID`: it would refuse
 * requests the configuration accepts. Either is capped at {@link STDIO_MAX_MESSAGE_BYTES}: limits that would need a
 * longer line (10,000 context items of 10 M characters, say) still get an answered error for such a line, never a crash.
 */
export function stdioMessageLimit(config: ServerConfig): number {
  const topLimits = config.limits ?? {};
  const perConfig = Object.values(config.instances ?? {}).map((instance) => instance.limits ?? {});
  const instances: { limits: LimitsOverride }[] = (perConfig.length === 0 ? [{}] : perConfig).map((limits) => ({
    limits,
  }));
  type CountKey = 'maxCandidateBytes' | 'maxInputChars' | 'maxContextItems' | 'maxContextItemChars';
  const limit = (instance: { limits: LimitsOverride }, key: CountKey): number =>
    instance.limits[key] ?? topLimits[key] ?? LIMIT_DEFAULTS[key];
  const gate = topLimits.maxCandidateBytes ?? LIMIT_DEFAULTS.maxCandidateBytes;
  // A loop, not Math.max(...list): spreading one argument per instance overflows the stack for a config of
  // ~100,000 instances (a 16 MiB file holds more), which crashed the command instead of serving or refusing it.
  let largestCandidate = 0;
  let requestText = 0;
  for (const instance of instances) {
    largestCandidate = Math.max(largestCandidate, limit(instance, 'maxCandidateBytes'));
    requestText = Math.max(
      requestText,
      limit(instance, 'maxInputChars') + limit(instance, 'maxContextItems') * limit(instance, 'maxContextItemChars'),
    );
  }
  const candidate = Math.min(gate, largestCandidate);
  const derived = Math.min(
    STDIO_MAX_MESSAGE_BYTES,
    JSON_ESCAPE_FACTOR * Math.max(candidate, requestText) + STDIO_ENVELOPE_BYTES,
  );
  const configured = config.stdio?.maxMessageBytes;
  if (configured === undefined) return derived;
  if (configured < derived) throw serverErrors.stdioLimitTooLow(configured, derived, STDIO_LIMIT_RULE);
  return configured;
}
