/**
 * Candidate validation (spec 02, "What counts as a correctable format error"). Pure and deterministic: the same text
 * for the same request always gives the same outcome, which is what makes replies replayable byte for byte.
 */
import type { FeedbackItem } from './errors.js';
import { MAX_FEEDBACK_ITEMS, boundFeedback, toPointer, zodIssuesToFeedback } from './feedback.js';
import { findShapeProblem } from './nesting.js';
import type { CandidateIntent, IntentCandidate } from './candidate.js';
import type { PreparedRequest } from './request.js';
import { RESERVED_NAMES, type EffectiveState, type IntentNode } from './schemas.js';

export type CandidateCheck = { ok: true; candidate: IntentCandidate } | { ok: false; issues: FeedbackItem[] };

/**
 * Strips one surrounding Markdown code fence (```json … ``` or ``` … ```): optional whitespace, three backticks, an
 * info string of `[A-Za-z0-9_+-]`, optional spaces or tabs and a line break open it; a line break (optional), spaces or
 * tabs and three backticks followed only by whitespace close it. Anything else is returned as is.
 *
 * A linear scan with the exact semantics of the former pattern
 * `^\s*```[A-Za-z0-9_+-]*[ \t]*\r?\n([\s\S]*?)\r?\n?[ \t]*```\s*$`, whose lazy body made it quadratic: each
 * step finds its end once instead of trying every position of the body.
 */
export function stripCodeFence(text: string): string {
  // `trimStart`/`trimEnd` remove exactly what `\s` matches (WhiteSpace and LineTerminator).
  let i = text.length - text.trimStart().length;
  if (!text.startsWith('```', i)) return text;
  i += 3;
  while (i < text.length && isInfoChar(text.charCodeAt(i))) i++;
  while (i < text.length && isBlank(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) === CR) i++;
  if (text.charCodeAt(i) !== LF) return text;
  const bodyStart = i + 1;
  // The closing backticks are the last non-whitespace characters: only whitespace may follow them.
  const close = text.trimEnd().length - 3;
  if (close < bodyStart || !text.startsWith('```', close)) return text;
  // The body is the shortest one: it stops before the spaces/tabs, line feed and carriage return ahead of the close.
  let end = close;
  while (end > bodyStart && isBlank(text.charCodeAt(end - 1))) end--;
  if (end > bodyStart && text.charCodeAt(end - 1) === LF) end--;
  if (end > bodyStart && text.charCodeAt(end - 1) === CR) end--;
  return text.slice(bodyStart, end);
}

const CR = 0x0d;
const LF = 0x0a;
const isBlank = (c: number): boolean => c === 0x20 || c === 0x09;
/** `[A-Za-z0-9_+-]` */
const isInfoChar = (c: number): boolean =>
  (c >= 0x41 && c <= 0x5a) ||
  (c >= 0x61 && c <= 0x7a) ||
  (c >= 0x30 && c <= 0x39) ||
  c === 0x5f ||
  c === 0x2b ||
  c === 0x2d;

function jsonProblem(error: unknown): string {
  // V8's message quotes the text around the error; only the position is kept (candidate text never goes into errors).
  // The message is bounded by V8, and the pattern has one unanchored literal and no nested repetition: linear.
  const pos = error instanceof Error ? /position (\d+)/.exec(error.message) : null;
  return pos === null
    ? 'The candidate is not one valid JSON document; send exactly one JSON object and nothing else.'
    : `The candidate is not one valid JSON document (syntax error at character ${pos[1] ?? '?'}); send exactly one JSON object and nothing else.`;
}

/** Checks candidate text for a prepared request. Never throws. */
export function validateCandidate(prepared: PreparedRequest, text: string): CandidateCheck {
  let value: unknown;
  try {
    value = JSON.parse(stripCodeFence(text));
  } catch (error) {
    return { ok: false, issues: [{ path: '', message: jsonProblem(error) }] };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return {
      ok: false,
      issues: [{ path: '', message: 'The candidate must be a JSON object as described by the outputSchema.' }],
    };
  // Before zod: every later step recurses over the value, and a stack overflow would make the answer depend on the
  // stack in use instead of on the text.
  const maxDepth = prepared.instance.limits.maxNestingDepth;
  const tooDeep = findShapeProblem(value, maxDepth);
  if (tooDeep !== undefined)
    return {
      ok: false,
      issues: [
        {
          path: tooDeep.pointer,
          message: `The candidate nests deeper than ${maxDepth} levels of arrays and objects here; flatten it: list sub-intents as top-level intents linked by relations instead of deeper children.`,
        },
      ],
    };
  const parsed = prepared.plan.schema.safeParse(value);
  if (!parsed.success) return { ok: false, issues: zodIssuesToFeedback(parsed.error.issues, value) };
  const issues = checkReferences(parsed.data, prepared.baseline);
  return issues.length === 0 ? { ok: true, candidate: parsed.data } : { ok: false, issues: boundFeedback(issues) };
}

/** Everything the schema cannot say: refs resolve, baseline ids exist, filled fields carry a value. */
function checkReferences(candidate: IntentCandidate, baseline: EffectiveState | undefined): FeedbackItem[] {
  const issues: FeedbackItem[] = [];
  const push = (path: readonly (string | number)[], message: string): void => {
    if (issues.length < MAX_FEEDBACK_ITEMS) issues.push({ path: toPointer(path), message });
  };

  const refs = new Set<string>();
  // One path, pushed and popped: a pointer is built only for an issue, so the walk stays linear at any depth.
  const at: (string | number)[] = ['intents'];
  const pushAt = (tail: readonly (string | number)[], message: string): void => {
    if (issues.length < MAX_FEEDBACK_ITEMS) push([...at, ...tail], message);
  };
  const walk = (intents: readonly CandidateIntent[]): void => {
    intents.forEach((intent, i) => {
      at.push(i);
      if (intent.ref !== undefined && intent.ref !== null) {
        if (intent.ref === '') pushAt(['ref'], 'A ref must not be empty; use null when none is needed.');
        else if (refs.has(intent.ref))
          pushAt(['ref'], 'This ref is already used by another intent; give each intent its own ref.');
        refs.add(intent.ref);
      }
      const names = new Set<string>();
      (intent.inputs ?? []).forEach((entry, j) => {
        if (RESERVED_NAMES.has(entry.name))
          pushAt(
            ['inputs', j, 'name'],
            'This input name is reserved (__proto__, prototype, constructor); use another name.',
          );
        else if (names.has(entry.name))
          pushAt(['inputs', j, 'name'], 'This input name is already listed for this intent; list each input once.');
        names.add(entry.name);
      });
      at.push('children');
      walk(intent.children ?? []);
      at.length -= 2;
    });
  };
  walk(candidate.intents);

  const baselineIntents = new Set<string>();
  const baselineConstraints = new Set<string>();
  /** Baseline intents this candidate removes, with their descendants: a reference to one would dangle. */
  const removedIntents = new Set<string>();
  const removedTargets = new Set(
    (candidate.baselineChanges ?? [])
      .filter((c) => c.operation === 'remove' && c.target.kind === 'intent')
      .map((c) => c.target.id),
  );
  if (baseline !== undefined) {
    const visit = (intents: readonly IntentNode[], removedAbove: boolean): void => {
      for (const intent of intents) {
        baselineIntents.add(intent.id);
        const removed = removedAbove || removedTargets.has(intent.id);
        if (removed) removedIntents.add(intent.id);
        for (const c of intent.constraints) baselineConstraints.add(c.id);
        visit(intent.children, removed);
      }
    };
    visit(baseline.intents, false);
    for (const c of baseline.constraints) baselineConstraints.add(c.id);
  }
  const resolves = (ref: string): boolean => refs.has(ref) || (baselineIntents.has(ref) && !removedIntents.has(ref));
  const refHint =
    baseline === undefined
      ? 'a ref defined on an intent'
      : 'a ref defined on an intent or the id of a baseline intent this candidate does not remove';

  (candidate.relations ?? []).forEach((rel, i) => {
    for (const end of ['from', 'to'] as const)
      if (!resolves(rel[end])) push(['relations', i, end], `This reference points nowhere; use ${refHint}.`);
  });
  (candidate.unresolved ?? []).forEach((u, i) => {
    if (u.intentRef !== undefined && u.intentRef !== null && !resolves(u.intentRef))
      push(['unresolved', i, 'intentRef'], `This reference points nowhere; use ${refHint}, or null.`);
  });
  (candidate.baselineChanges ?? []).forEach((change, i) => {
    const ids = change.target.kind === 'intent' ? baselineIntents : baselineConstraints;
    if (!ids.has(change.target.id))
      push(
        ['baselineChanges', i, 'target', 'id'],
        `The baseline has no ${change.target.kind} with this id; use an id from the baseline.`,
      );
  });
  for (const [name, field] of Object.entries(candidate.fields ?? {})) {
    if (field.status === 'filled' && (field.value === undefined || field.value === null))
      push(
        ['fields', name, 'value'],
        'A filled field needs its value; if the input does not state it, use status "missing".',
      );
  }
  return issues;
}
