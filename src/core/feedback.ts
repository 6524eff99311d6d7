import type { z } from 'zod';
import type { FeedbackItem } from './errors.js';

/** Spec 02: feedback holds at most 20 items. */
export const MAX_FEEDBACK_ITEMS = 20;

/** RFC 6901 JSON Pointer of a path. */
export function toPointer(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) out += '/' + String(seg).replace(/~/g, '~0').replace(/\//g, '~1');
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
        for (const key of issue.keys)
          out.push({
            path: toPointer([...issue.path, key]),
            message: `Remove the key "${key}": it is not allowed here.`,
          });
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
  return out.slice(0, MAX_FEEDBACK_ITEMS);
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
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[seg];
  }
  return cur;
}
