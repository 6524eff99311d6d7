/**
 * The properties every answer of the fuzz suite must have, as plain functions that throw a short {@link FuzzFailure}
 * (fast-check shrinks on any throw; short messages keep its report readable when the input is 1 MiB).
 */
import { ERROR_CATEGORIES, ERROR_CODES } from '../../../src/core/errors.js';

/**
 * No error text may exceed this many UTF-8 bytes (issue 8, item 9: errors quote at most a short prefix of caller
 * text). 8 KiB leaves room for a message, a requestId and a few feedback items; a constant exported by the core later
 * replaces it.
 */
export const MAX_ERROR_TEXT_BYTES = 8 * 1024;

/** Codes of spec 06. */
const CODES: ReadonlySet<string> = new Set(ERROR_CODES);
const CATEGORIES: ReadonlySet<string> = new Set(ERROR_CATEGORIES);

export class FuzzFailure extends Error {
  override readonly name = 'FuzzFailure';
}

export function fail(message: string): never {
  throw new FuzzFailure(message);
}

/** A prefix of `text` short enough for a failure message. */
export function clip(text: string, max = 240): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} chars)`;
}

export interface WireError {
  code: string;
  category: string;
  message: string;
  retryable: boolean;
  requestId?: string;
  details?: { issues?: { path: string; message: string }[] } & Record<string, unknown>;
}

/** What an MCP tool result said, once its envelope has been checked. */
export type Answer = { isError: false; value: Record<string, unknown>; text: string } | AnswerError;
export interface AnswerError {
  isError: true;
  error: WireError;
  text: string;
}

/**
 * Which of the per-answer properties a check enforces. Each property of the suite turns on its own, so one failing
 * property (a long error text, say) does not hide another (an `INTERNAL`) behind its counterexample.
 */
export interface AnswerChecks {
  /** Fail on an `INTERNAL` error. */
  internal: boolean;
  /** Fail on an error text over {@link MAX_ERROR_TEXT_BYTES}. */
  size: boolean;
}

export const SHAPE_ONLY: AnswerChecks = { internal: false, size: false };

/** Checks a serialised IntentError (spec 06): code, category, message, retryable, no stack; optionally not INTERNAL. */
export function checkWireError(error: unknown, where: string, checks: AnswerChecks): WireError {
  if (error === null || typeof error !== 'object' || Array.isArray(error)) fail(`${where}: "error" is not an object`);
  const e = error as Record<string, unknown>;
  if (typeof e['code'] !== 'string' || !CODES.has(e['code'])) fail(`${where}: unknown code ${String(e['code'])}`);
  if (typeof e['category'] !== 'string' || !CATEGORIES.has(e['category']))
    fail(`${where}: unknown category ${String(e['category'])}`);
  if (typeof e['message'] !== 'string' || e['message'].length === 0) fail(`${where}: empty or missing message`);
  if (typeof e['retryable'] !== 'boolean') fail(`${where}: retryable is not a boolean`);
  if (checks.internal && e['code'] === 'INTERNAL') fail(`${where}: INTERNAL error: ${clip(JSON.stringify(e))}`);
  if (/\n\s+at /.test(JSON.stringify(e))) fail(`${where}: the error carries a stack trace`);
  return e as unknown as WireError;
}

/** The byte length of an error text, failing when it is over {@link MAX_ERROR_TEXT_BYTES}. */
export function checkErrorSize(text: string, where: string): void {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_ERROR_TEXT_BYTES)
    fail(`${where}: error text of ${bytes} bytes (limit ${MAX_ERROR_TEXT_BYTES}): ${clip(text, 160)}`);
}

/**
 * Checks an adapter / MCP tool result (spec 04 envelopes): one text item whose text is JSON; an error carries exactly
 * `{error}` with a spec-06 error and no structuredContent; a success's structuredContent deep-equals the parsed text.
 */
export function checkEnvelope(
  result: unknown,
  where: string,
  isDeepEqual: (a: unknown, b: unknown) => boolean,
  checks: AnswerChecks,
): Answer {
  if (result === null || typeof result !== 'object') fail(`${where}: the result is not an object`);
  const r = result as Record<string, unknown>;
  const content = r['content'];
  if (!Array.isArray(content) || content.length !== 1) fail(`${where}: content is not one item`);
  const item = content[0] as Record<string, unknown> | null;
  if (item?.['type'] !== 'text' || typeof item['text'] !== 'string') fail(`${where}: content[0] is not text`);
  const text = item['text'];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return fail(`${where}: content[0].text is not JSON: ${clip(text)}`);
  }
  if (typeof r['isError'] !== 'boolean') fail(`${where}: isError is not a boolean`);
  if (r['isError']) {
    if ('structuredContent' in r && r['structuredContent'] !== undefined)
      fail(`${where}: an error envelope carries structuredContent`);
    if (parsed === null || typeof parsed !== 'object' || Object.keys(parsed).join() !== 'error')
      fail(`${where}: an error text is not exactly {"error": ...}: ${clip(text)}`);
    if (checks.size) checkErrorSize(text, where);
    const error = checkWireError((parsed as { error: unknown }).error, where, checks);
    return { isError: true, error, text };
  }
  const structured = r['structuredContent'];
  if (structured === null || typeof structured !== 'object' || Array.isArray(structured))
    fail(`${where}: a success carries no structuredContent object`);
  if (!isDeepEqual(parsed, structured)) fail(`${where}: structuredContent differs from the parsed text`);
  return { isError: false, value: structured as Record<string, unknown>, text };
}

/** The parts of an answer that must not depend on which request (or how warm the process) answered it. */
export function outcomeOf(answer: Answer): unknown {
  if (!answer.isError) return { ok: answer.value };
  return { code: answer.error.code, issues: answer.error.details?.issues ?? null };
}

/**
 * Deep equality of JSON values, iterative: a HostTask echoes a caller's baseline, which may nest far deeper than a
 * recursive comparison (node:util's included) can follow.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  const stack: [unknown, unknown][] = [[a, b]];
  while (stack.length > 0) {
    const [x, y] = stack.pop()!;
    if (Object.is(x, y)) continue;
    if (x === null || y === null || typeof x !== 'object' || typeof y !== 'object') return false;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    const kx = Object.keys(x);
    const ky = Object.keys(y);
    if (kx.length !== ky.length) return false;
    for (const k of kx) {
      if (!Object.prototype.hasOwnProperty.call(y, k)) return false;
      stack.push([(x as Record<string, unknown>)[k], (y as Record<string, unknown>)[k]]);
    }
  }
  return true;
}
