/**
 * Parses one trace line into a header or a transition record, checking every field (a trace file is input like any
 * other: it may be truncated, edited or hostile). Hand-written checks rather than a schema: this runs once per line of a
 * 1 GB file, and every check is a type test or a set lookup.
 */
import { HANDOFF_STATES, type CancelReason, type HandoffAnswer, type HandoffState } from '../../machines/handoff.js';
import { HostCancelReasonSchema } from '../core/schemas.js';
import type { HandoffTransition, TransitionEvent } from '../engine/inspection.js';
import { TRACE_FORMAT, type TraceHeader } from './format.js';

const STATES: ReadonlySet<string> = new Set(HANDOFF_STATES);
const EVENTS: ReadonlySet<string> = new Set<TransitionEvent>([
  'prepare',
  'ACCEPT',
  'VALIDATED',
  'CANCEL',
  'DEADLINE',
  'CLOSE',
  'replay',
  'evict',
]);
/**
 * Every answer the machine gives, as a record keyed by the `HandoffAnswer` type: an answer added to the machine that is
 * missing here fails to compile (a hand-kept list lacked `already_expired`, so a real late cancel was "malformed").
 */
const ANSWER_KEYS: Record<HandoffAnswer, true> = {
  none: true,
  validate: true,
  join: true,
  conflict: true,
  feedback: true,
  replay: true,
  withdrawn_earlier: true,
  withdrawn: true,
  already_cancelled: true,
  already_completed: true,
  already_expired: true,
  result: true,
  invalid: true,
  rejected: true,
  failed: true,
  too_late: true,
  closed: true,
};
const ANSWERS: ReadonlySet<string> = new Set(Object.keys(ANSWER_KEYS));
const REASONS: ReadonlySet<string> = new Set<CancelReason>([
  ...HostCancelReasonSchema.options,
  'aborted',
  'session_closed',
  'internal_error',
]);
const OUTCOMES: ReadonlySet<string> = new Set(['valid', 'invalid', 'crashed']);
/** Longest id a record may carry (engine ids are UUIDs; instance names are at most 64 characters). */
const MAX_ID_CHARS = 200;
const HASH = /^[0-9a-f]{1,64}$/;

/** A parsed record, with its arrival time in milliseconds. */
export interface ParsedRecord {
  record: HandoffTransition;
  atMs: number;
  expiresAtMs: number | undefined;
}

export type ParsedLine =
  | { kind: 'header'; header: TraceHeader }
  | { kind: 'record'; parsed: ParsedRecord }
  | { kind: 'malformed'; reason: string; requestId?: string };

const isId = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= MAX_ID_CHARS;

/** Parses one line; never throws. */
export function parseTraceLine(text: string): ParsedLine {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'malformed', reason: 'not JSON' };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { kind: 'malformed', reason: 'not a JSON object' };
  const o = value as Record<string, unknown>;
  if ('format' in o) {
    if (o['format'] !== TRACE_FORMAT) return { kind: 'malformed', reason: 'a header of another format' };
    if (typeof o['version'] !== 'number' || typeof o['machine'] !== 'string' || o['machine'].length > MAX_ID_CHARS)
      return { kind: 'malformed', reason: 'a header without version or machine hash' };
    return { kind: 'header', header: { format: TRACE_FORMAT, version: o['version'], machine: o['machine'] } };
  }
  const requestId = isId(o['requestId']) ? o['requestId'] : undefined;
  const bad = (reason: string): ParsedLine =>
    requestId === undefined ? { kind: 'malformed', reason } : { kind: 'malformed', reason, requestId };
  if (requestId === undefined) return bad('no requestId');
  if (!isId(o['sessionId'])) return bad('no sessionId');
  if (!isId(o['instance'])) return bad('no instance');
  const at = o['at'];
  const atMs = typeof at === 'string' && at.length <= 40 ? Date.parse(at) : NaN;
  if (Number.isNaN(atMs)) return bad('no valid time "at"');
  const from = o['from'];
  if (from !== null && !(typeof from === 'string' && STATES.has(from))) return bad('an unknown "from" state');
  const to = o['to'];
  if (typeof to !== 'string' || !STATES.has(to)) return bad('an unknown "to" state');
  const event = o['event'];
  if (typeof event !== 'string' || !EVENTS.has(event)) return bad('an unknown event');
  const answer = o['answer'];
  if (typeof answer !== 'string' || !ANSWERS.has(answer)) return bad('an unknown answer');
  const validations = o['validations'];
  if (typeof validations !== 'number' || !Number.isInteger(validations) || validations < 0 || validations > 1000)
    return bad('no valid validation count');
  const record: HandoffTransition = {
    at: at as string,
    sessionId: o['sessionId'],
    requestId,
    instance: o['instance'],
    from: from as HandoffState | null,
    event: event as TransitionEvent,
    to: to as HandoffState,
    answer: answer as HandoffAnswer,
    validations,
  };
  let expiresAtMs: number | undefined;
  if (o['mode'] !== undefined) {
    if (o['mode'] !== 'host' && o['mode'] !== 'executor') return bad('an unknown mode');
    record.mode = o['mode'];
  }
  if (o['expiresAt'] !== undefined) {
    const e = o['expiresAt'];
    expiresAtMs = typeof e === 'string' && e.length <= 40 ? Date.parse(e) : NaN;
    if (Number.isNaN(expiresAtMs)) return bad('no valid "expiresAt"');
    record.expiresAt = e as string;
  }
  if (o['candidate'] !== undefined) {
    const c = o['candidate'];
    if (
      c === null ||
      typeof c !== 'object' ||
      typeof (c as { bytes?: unknown }).bytes !== 'number' ||
      typeof (c as { hash?: unknown }).hash !== 'string'
    )
      return bad('a candidate without size or short hash');
    const { bytes, hash } = c as { bytes: number; hash: string };
    if (!Number.isSafeInteger(bytes) || bytes < 0 || !HASH.test(hash))
      return bad('a candidate without size or short hash');
    record.candidate = { bytes, hash };
  }
  if (o['outcome'] !== undefined) {
    if (typeof o['outcome'] !== 'string' || !OUTCOMES.has(o['outcome'])) return bad('an unknown outcome');
    record.outcome = o['outcome'] as HandoffTransition['outcome'] & string;
  }
  if (o['reason'] !== undefined) {
    if (typeof o['reason'] !== 'string' || !REASONS.has(o['reason'])) return bad('an unknown reason');
    record.reason = o['reason'] as HandoffTransition['reason'] & string;
  }
  return { kind: 'record', parsed: { record, atMs, expiresAtMs } };
}
