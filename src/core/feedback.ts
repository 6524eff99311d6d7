import type { z } from 'zod';
import { callerPrefix, quoteCaller, type FeedbackItem } from './errors.js';

/** Spec 02: feedback holds at most 20 items. */
export const MAX_FEEDBACK_ITEMS = 20;

/** Longest JSON Pointer feedback carries; a deeper one names the nearest ancestor that fits. */
export const MAX_POINTER_CHARS = 512;
/** Longest message of one feedback item. */
const MAX_MESSAGE_CHARS = 1024;
/** Most characters all feedback items of one error take together (as JSON); items past it are left out. */
export const FEEDBACK_BUDGET_CHARS = 6 * 1024;

/**
 * RFC 6901 JSON Pointer of a path, bounded: each segment is cut to a {@link callerPrefix} (keys come from callers) and
 * the pointer stops at the last whole segment that fits in {@link MAX_POINTER_CHARS}, naming an ancestor.
 */
export function toPointer(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    const next = '/' + callerPrefix(String(seg)).replace(/~/g, '~0').replace(/\//g, '~1');
    if (out.length + next.length > MAX_POINTER_CHARS) break;
    out += next;
  }
  return out;
}

/**
 * Feedback cut to its bounds: at most {@link MAX_FEEDBACK_ITEMS} items within {@link FEEDBACK_BUDGET_CHARS}, each
 * message at most 1,024 characters. The first item is always kept, so a failure never loses its reason.
 */
export function boundFeedback(items: readonly FeedbackItem[]): FeedbackItem[] {
  const out: FeedbackItem[] = [];
  let used = 0;
  for (const item of items) {
    if (out.length >= MAX_FEEDBACK_ITEMS) break;
    const bounded = {
      path: item.path.length > MAX_POINTER_CHARS ? item.path.slice(0, MAX_POINTER_CHARS) : item.path,
      message: callerPrefix(item.message, MAX_MESSAGE_CHARS),
    };
    used += JSON.stringify(bounded).length + 1;
    if (out.length > 0 && used > FEEDBACK_BUDGET_CHARS) break;
    out.push(bounded);
  }
  return out;
}

function describeExpected(expected: string): string {
  switch (expected) {
    case 'nonoptional':
      return 'a value';
    case 'array':
      return 'a JSON array';
    case 'object':
      return 'a JSON object';
    case 'null':
      return 'null';
    case 'int':
      return 'an integer';
    default:
      return `a ${expected}`;
  }
}

function received(input: unknown): string {
  if (input === undefined) return 'nothing (the key is missing)';
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'an array';
  if (typeof input === 'number' && !Number.isInteger(input)) return 'a non-integer number';
  return `a ${typeof input}`;
}

/**
 * Turns zod issues into plain-words feedback a model can act on. Messages never quote the input's values (they may be
 * candidate text, which spec 06 keeps out of errors), only its JSON types and the allowed values of the schema.
 */
export function zodIssuesToFeedback(issues: readonly z.core.$ZodIssue[], input?: unknown): FeedbackItem[] {
  const out: FeedbackItem[] = [];
  for (const issue of issues) {
    const path = toPointer(issue.path);
    const value = input === undefined ? undefined : valueAt(input, issue.path);
    switch (issue.code) {
      case 'invalid_type':
        out.push({
          path,
          message:
            value === undefined
              ? `Add the required key here; it must be ${describeExpected(issue.expected)}.`
              : `Expected ${describeExpected(issue.expected)}, got ${received(value)}.`,
        });
        break;
      case 'unrecognized_keys':
        for (const key of issue.keys) {
          if (out.length >= MAX_FEEDBACK_ITEMS) break;
          out.push({
            path: toPointer([...issue.path, key]),
            message: `Remove the key ${quoteCaller(key)}: it is not allowed here.`,
          });
        }
        break;
      case 'invalid_value':
        out.push({
          path,
          message: `Use one of: ${issue.values.map((v) => JSON.stringify(v)).join(', ')}.`,
        });
        break;
      case 'invalid_union':
        out.push({ path, message: `The value has the wrong shape: ${unionHint(issue)}.` });
        break;
      default:
        out.push({ path, message: issue.message.endsWith('.') ? issue.message : `${issue.message}.` });
    }
    if (out.length >= MAX_FEEDBACK_ITEMS) break;
  }
  return boundFeedback(out);
}

/** The key of the first issue when it is an unknown key at the top level (for a message that names it). */
export function unknownTopLevelKey(issues: readonly z.core.$ZodIssue[]): string | undefined {
  const first = issues[0];
  return first?.code === 'unrecognized_keys' && first.path.length === 0 ? first.keys[0] : undefined;
}

function unionHint(issue: z.core.$ZodIssueInvalidUnion): string {
  const expected = new Set<string>();
  for (const branch of issue.errors)
    for (const i of branch) if (i.code === 'invalid_type' && i.path.length === 0) expected.add(i.expected);
  return expected.size > 0 ? `expected ${[...expected].map(describeExpected).join(' or ')}` : 'see the outputSchema';
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, seg)) return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[seg];
  }
  return cur;
}
