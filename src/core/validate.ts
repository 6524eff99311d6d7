/**
 * Candidate validation (spec 02, "What counts as a correctable format error"). Pure and deterministic: the same text
 * for the same request always gives the same outcome, which is what makes replies replayable byte for byte.
 */
import type { FeedbackItem } from './errors.js';
import { MAX_FEEDBACK_ITEMS, toPointer, zodIssuesToFeedback } from './feedback.js';
import type { CandidateIntent, IntentCandidate } from './candidate.js';
import type { PreparedRequest } from './request.js';
import { RESERVED_NAMES, type EffectiveState, type IntentNode } from './schemas.js';

export type CandidateCheck = { ok: true; candidate: IntentCandidate } | { ok: false; issues: FeedbackItem[] };

/** One surrounding Markdown code fence (```json … ``` or ``` … ```) is tolerated and stripped. */
const FENCE = /^\s*```[A-Za-z0-9_+-]*[ \t]*\r?\n([\s\S]*?)\r?\n?[ \t]*```\s*$/;

export function stripCodeFence(text: string): string {
  const m = FENCE.exec(text);
  return m === null ? text : (m[1] ?? '');
}

function jsonProblem(error: unknown): string {
  // V8's message quotes the text around the error; only the position is kept (candidate text never goes into errors).
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
  const parsed = prepared.plan.schema.safeParse(value);
  if (!parsed.success) return { ok: false, issues: zodIssuesToFeedback(parsed.error.issues, value) };
  const issues = checkReferences(parsed.data, prepared.baseline);
  return issues.length === 0 ? { ok: true, candidate: parsed.data } : { ok: false, issues };
}

/** Everything the schema cannot say: refs resolve, baseline ids exist, filled fields carry a value. */
function checkReferences(candidate: IntentCandidate, baseline: EffectiveState | undefined): FeedbackItem[] {
  const issues: FeedbackItem[] = [];
  const push = (path: string, message: string): void => {
    if (issues.length < MAX_FEEDBACK_ITEMS) issues.push({ path, message });
  };

  const refs = new Set<string>();
  const walk = (intents: readonly CandidateIntent[], path: (string | number)[]): void => {
    intents.forEach((intent, i) => {
      const at = [...path, i];
      if (intent.ref !== undefined && intent.ref !== null) {
        if (intent.ref === '')
          push(toPointer([...at, 'ref']), 'A ref must not be empty; use null when none is needed.');
        else if (refs.has(intent.ref))
          push(toPointer([...at, 'ref']), 'This ref is already used by another intent; give each intent its own ref.');
        refs.add(intent.ref);
      }
      const names = new Set<string>();
      (intent.inputs ?? []).forEach((entry, j) => {
        if (RESERVED_NAMES.has(entry.name))
          push(
            toPointer([...at, 'inputs', j, 'name']),
            'This input name is reserved (__proto__, prototype, constructor); use another name.',
          );
        else if (names.has(entry.name))
          push(
            toPointer([...at, 'inputs', j, 'name']),
            'This input name is already listed for this intent; list each input once.',
          );
        names.add(entry.name);
      });
      walk(intent.children ?? [], [...at, 'children']);
    });
  };
  walk(candidate.intents, ['intents']);

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
      if (!resolves(rel[end])) push(toPointer(['relations', i, end]), `This reference points nowhere; use ${refHint}.`);
  });
  (candidate.unresolved ?? []).forEach((u, i) => {
    if (u.intentRef !== undefined && u.intentRef !== null && !resolves(u.intentRef))
      push(toPointer(['unresolved', i, 'intentRef']), `This reference points nowhere; use ${refHint}, or null.`);
  });
  (candidate.baselineChanges ?? []).forEach((change, i) => {
    const ids = change.target.kind === 'intent' ? baselineIntents : baselineConstraints;
    if (!ids.has(change.target.id))
      push(
        toPointer(['baselineChanges', i, 'target', 'id']),
        `The baseline has no ${change.target.kind} with this id; use an id from the baseline.`,
      );
  });
  for (const [name, field] of Object.entries(candidate.fields ?? {})) {
    if (field.status === 'filled' && (field.value === undefined || field.value === null))
      push(
        toPointer(['fields', name, 'value']),
        'A filled field needs its value; if the input does not state it, use status "missing".',
      );
  }
  return issues;
}
