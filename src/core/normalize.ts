/**
 * Normalisation of a valid candidate into an `IntentResult` (spec 02, "The result"). Pure and deterministic; every
 * object is built with its keys in the order spec 02 lists, because results are compared byte for byte.
 *
 * Choices where spec 02 is silent (kept here so the next reader finds them):
 * - `effective.unresolved` holds this turn's open questions only: the model restates what is still open given the
 *   baseline, so an answered question does not linger. Baseline relations are kept while both ends still exist.
 * - A baseline change is `ignored` (with a `change_ignored` warning) when its target was already removed this turn,
 *   when an update sets nothing, or when it sets keys that do not apply to the target's kind.
 * - A missing required field adds a `field_missing` warning; a content problem adds a `field_invalid` error.
 * - A filled `date`/`datetime` value that does not occur literally in the input or context was resolved by the model
 *   from the reference time: it gets an `Inference` of kind `time`.
 * - `coverage: "none"` with intents present counts like `partial` for the status.
 */
import type { BaselineChange, CandidateIntent, IntentCandidate } from './candidate.js';
import { checkFieldValue, type FieldProblem, type ResolvedField } from './instance.js';
import { resultMessages, type ResultMessages } from './language.js';
import { substringSearch } from './search.js';
import type { PreparedRequest } from './request.js';
import {
  SCHEMA_VERSION,
  type Change,
  type Constraint,
  type EffectiveState,
  type FieldResult,
  type Inference,
  type IntentNode,
  type IntentResult,
  type Issue,
  type Reference,
  type Relation,
  type Scalar,
  type SourceRef,
  type Unresolved,
} from './schemas.js';

type Counters = Record<'intent' | 'constraint' | 'relation' | 'unresolved', number>;

const INPUT_REF: SourceRef = { root: 'input', pointer: '' };

function highest(counters: Counters, id: string): void {
  const dash = id.lastIndexOf('-');
  const kind = id.slice(0, dash) as keyof Counters;
  const n = Number(id.slice(dash + 1));
  if (kind in counters && n > counters[kind]) counters[kind] = n;
}

function baselineCounters(baseline: EffectiveState | undefined): Counters {
  const counters: Counters = { intent: 0, constraint: 0, relation: 0, unresolved: 0 };
  if (baseline === undefined) return counters;
  for (const i of allIntents(baseline.intents)) {
    highest(counters, i.id);
    for (const c of i.constraints) highest(counters, c.id);
  }
  for (const c of baseline.constraints) highest(counters, c.id);
  for (const r of baseline.relations) highest(counters, r.id);
  for (const u of baseline.unresolved) highest(counters, u.id);
  return counters;
}

function added(kind: Change['target']['kind'], id: string, msgs: ResultMessages): Change {
  return {
    operation: 'add',
    target: { kind, id },
    description: msgs.added,
    sourceRefs: [{ ...INPUT_REF }],
    effect: 'applied',
  };
}

function issue(code: string, severity: Issue['severity'], message: string, target?: Issue['target']): Issue {
  const out: Issue = { code, severity, message };
  if (target !== undefined) out.target = target;
  return out;
}

function cloneIntent(i: IntentNode): IntentNode {
  return {
    id: i.id,
    domain: i.domain,
    action: i.action,
    target: i.target,
    goal: i.goal,
    understanding: i.understanding,
    constraints: i.constraints.map(cloneConstraint),
    inputs: { ...i.inputs },
    references: i.references.map((r) => ({ ...r })),
    children: i.children.map(cloneIntent),
    extensions: structuredClone(i.extensions),
  };
}

function cloneConstraint(c: Constraint): Constraint {
  return { id: c.id, kind: c.kind, text: c.text, scope: { ...c.scope } };
}

function sourceRefsFor(prepared: PreparedRequest, evidence: string | null | undefined): SourceRef[] {
  if (evidence === undefined || evidence === null || evidence.trim() === '') return [];
  const occursIn = substringSearch(evidence);
  if (occursIn(prepared.request.input)) return [{ ...INPUT_REF }];
  const context = prepared.request.context ?? [];
  for (let i = 0; i < context.length; i++) {
    const text = context[i]?.text;
    if (text !== undefined && occursIn(text)) return [{ root: 'context', pointer: `/${i}/text` }];
  }
  return [];
}

function problemText(problem: FieldProblem, field: ResolvedField, msgs: ResultMessages): string {
  switch (problem) {
    case 'enum':
      return msgs.why.enum((field.spec.enum ?? []).join(', '));
    case 'minimum':
      return msgs.why.minimum(field.spec.minimum ?? 0);
    case 'maximum':
      return msgs.why.maximum(field.spec.maximum ?? 0);
    case 'date':
      return msgs.why.date;
    case 'datetime':
      return msgs.why.datetime;
    case 'pattern':
    case 'type':
      return msgs.why.pattern;
  }
}

/** Normalises a candidate that passed `validateCandidate` for the same prepared request. */
export function normalizeCandidate(prepared: PreparedRequest, candidate: IntentCandidate): IntentResult {
  const msgs = resultMessages(prepared.language);
  const baseline = prepared.baseline;
  const added = addTurnItems(candidate, baselineCounters(baseline), msgs);
  const base = applyBaselineChanges(baseline, candidate.baselineChanges ?? [], msgs);
  const fields = resolveFields(prepared, candidate, msgs);

  const intents = [...base.intents, ...added.intents];
  const liveIntents = new Set(allIntents(intents).map((i) => i.id));
  const relations = [
    ...(baseline?.relations ?? [])
      .filter((r) => liveIntents.has(r.from) && liveIntents.has(r.to))
      .map((r) => ({ ...r })),
    ...added.relations,
  ];
  const effective: EffectiveState = {
    schemaVersion: SCHEMA_VERSION,
    coverage: candidate.coverage,
    scope: baseline === undefined ? 'current_request' : 'conversation',
    intents,
    constraints: [...base.constraints, ...added.constraints],
    relations,
    unresolved: added.unresolved,
  };

  return {
    schemaVersion: SCHEMA_VERSION,
    input: prepared.request.input,
    status: statusOf(effective, fields),
    turn: {
      kind: candidate.turnKind,
      normalizedInput: prepared.normalizedInput,
      intentIds: [...added.intentIds, ...base.updatedIntents],
      changes: [...added.changes, ...base.changes],
      facts: prepared.explicitReferenceTime ? { referenceTime: prepared.referenceTime } : {},
    },
    effective,
    fieldResults: fields.results,
    issues: [...base.issues, ...fields.issues],
    inferences: fields.inferences,
  };
}

/** Phase 1: this turn's new items, with ids assigned depth-first after the baseline's, and their `add` changes. */
function addTurnItems(candidate: IntentCandidate, counters: Counters, msgs: ResultMessages) {
  const changes: Change[] = [];
  const intentIds: string[] = [];
  const refToId = new Map<string, string>();

  // New intents, depth-first: an intent's id and its constraints' ids come before its children's.
  const buildIntent = (c: CandidateIntent): IntentNode => {
    const id = `intent-${++counters.intent}`;
    if (c.ref !== undefined && c.ref !== null) refToId.set(c.ref, id);
    intentIds.push(id);
    changes.push(added('intent', id, msgs));
    const constraints: Constraint[] = [];
    for (const k of c.constraints ?? []) {
      const cid = `constraint-${++counters.constraint}`;
      constraints.push({ id: cid, kind: k.kind, text: k.text, scope: { type: 'intent', intentId: id } });
      changes.push(added('constraint', cid, msgs));
    }
    const inputs: Record<string, Scalar | null> = {};
    for (const entry of c.inputs ?? []) inputs[entry.name] = entry.value;
    const references: Reference[] = (c.references ?? []).map((r) => {
      const ref: Reference = { kind: r.kind } as Reference;
      if (r.id !== undefined && r.id !== null) ref.id = r.id;
      ref.text = r.text;
      return ref;
    });
    const node: IntentNode = {
      id,
      domain: c.domain,
      action: c.action,
      target: c.target,
      goal: c.goal,
      understanding: c.understanding,
      constraints,
      inputs,
      references,
      children: [],
      extensions: {},
    };
    node.children = (c.children ?? []).map(buildIntent);
    return node;
  };
  const intents = candidate.intents.map(buildIntent);

  const constraints: Constraint[] = (candidate.constraints ?? []).map((k) => {
    const id = `constraint-${++counters.constraint}`;
    changes.push(added('constraint', id, msgs));
    return { id, kind: k.kind, text: k.text, scope: { type: 'request' } };
  });

  const resolve = (ref: string): string => refToId.get(ref) ?? ref;
  const relations: Relation[] = (candidate.relations ?? []).map((r) => {
    const id = `relation-${++counters.relation}`;
    changes.push(added('relation', id, msgs));
    const rel: Relation = { id, kind: r.kind, from: resolve(r.from), to: resolve(r.to) };
    if (r.text !== undefined && r.text !== null) rel.text = r.text;
    return rel;
  });

  const unresolved: Unresolved[] = (candidate.unresolved ?? []).map((u) => {
    const id = `unresolved-${++counters.unresolved}`;
    changes.push(added('unresolved', id, msgs));
    const out: Unresolved = { id, kind: u.kind, text: u.text };
    if (u.intentRef !== undefined && u.intentRef !== null) out.intentId = resolve(u.intentRef);
    if (u.options !== undefined && u.options !== null) out.options = [...u.options];
    return out;
  });

  return { intents, constraints, relations, unresolved, intentIds, changes };
}

/**
 * Phase 2: the baseline's items, with this turn's changes applied. Every change finds its target through an index built
 * once, and removals are applied in one pass at the end: each change costs O(1) plus its target's depth, not a tree
 * walk.
 */
function applyBaselineChanges(
  baseline: EffectiveState | undefined,
  baselineChanges: readonly BaselineChange[],
  msgs: ResultMessages,
) {
  const changes: Change[] = [];
  const issues: Issue[] = [];
  const baseIntents = (baseline?.intents ?? []).map(cloneIntent);
  let baseConstraints = (baseline?.constraints ?? []).map(cloneConstraint);
  const index = indexBaseline(baseIntents, baseConstraints);
  const removed = new Set<string>();
  let removedAny = false as boolean;
  const updatedIntents: string[] = [];
  const updated = new Set<string>();

  for (const change of baselineChanges) {
    const { kind, id } = change.target;
    const located = kind === 'intent' ? index.intents.get(id)?.node : index.constraints.get(id)?.constraint;
    const refs: SourceRef[] = [{ ...INPUT_REF }];
    const pointer = index.pointer(id);
    if (pointer !== undefined) refs.push({ root: 'baseline', pointer });
    const record = (operation: Change['operation'], effect: Change['effect'], fallback: string): void => {
      changes.push({
        operation,
        target: { kind, id },
        description: change.text ?? fallback,
        sourceRefs: refs,
        effect,
      });
    };
    const ignore = (operation: Change['operation'], fallback: string, why: string): void => {
      record(operation, 'ignored', fallback);
      issues.push(issue('change_ignored', 'warning', why, { kind, id }));
    };
    const fallback = change.operation === 'update' ? msgs.updated : msgs.removed;
    if (located === undefined || removed.has(id)) {
      ignore(change.operation, fallback, msgs.changeIgnoredTargetGone(id));
      continue;
    }
    if (change.operation === 'remove') {
      if (kind === 'intent') markRemoved(located as IntentNode, removed);
      else removed.add(id);
      removedAny = true;
      record('remove', 'applied', fallback);
      continue;
    }
    const set = change.set ?? {};
    const allowed = kind === 'intent' ? INTENT_SET_KEYS : CONSTRAINT_SET_KEYS;
    const given = Object.entries(set).filter(([, v]) => v !== undefined && v !== null);
    const wrong = given.filter(([k]) => !allowed.has(k)).map(([k]) => k);
    if (given.length === 0) {
      ignore('update', fallback, msgs.changeIgnoredNothingToSet(id));
      continue;
    }
    if (wrong.length > 0) {
      ignore('update', fallback, msgs.changeIgnoredWrongKeys(id, wrong.join(', ')));
      continue;
    }
    const target = located as unknown as Record<string, unknown>;
    for (const [k, v] of given) target[k] = v;
    if (kind === 'intent' && !updated.has(id)) {
      updated.add(id);
      updatedIntents.push(id);
    }
    record('update', 'applied', fallback);
  }
  const intents = removedAny ? dropRemoved(baseIntents, removed) : baseIntents;
  if (removedAny) baseConstraints = baseConstraints.filter((c) => !removed.has(c.id));
  return { intents, constraints: baseConstraints, updatedIntents, changes, issues };
}

interface ResolvedFields {
  results: FieldResult[];
  issues: Issue[];
  inferences: Inference[];
  /** A selected field is ambiguous (counts for the status). */
  ambiguous: boolean;
  /** A required selected field is missing or invalid (counts for the status). */
  requiredGap: boolean;
}

/** Phase 3: one field result per selected field, in request order, with its issues and inferences. */
function resolveFields(prepared: PreparedRequest, candidate: IntentCandidate, msgs: ResultMessages): ResolvedFields {
  const out: ResolvedFields = { results: [], issues: [], inferences: [], ambiguous: false, requiredGap: false };
  for (const field of prepared.plan.fields) {
    const entry = candidate.fields?.[field.name];
    const status = entry?.status ?? 'missing';
    if (status === 'filled' && entry?.value !== undefined && entry.value !== null) {
      const value = entry.value;
      const sourceRefs = sourceRefsFor(prepared, entry.evidence);
      const problem = checkFieldValue(field, value);
      if (problem !== undefined) {
        if (field.required) out.requiredGap = true;
        out.issues.push(
          issue('field_invalid', 'error', msgs.fieldInvalid(field.name, problemText(problem, field, msgs)), {
            kind: 'field',
            id: field.name,
          }),
        );
        out.results.push({ field: field.name, status: 'invalid', value, sourceRefs });
        continue;
      }
      if (
        (field.type === 'date' || field.type === 'datetime') &&
        typeof value === 'string' &&
        !statedLiterally(prepared, value)
      )
        out.inferences.push({
          kind: 'time',
          target: { kind: 'field', id: field.name },
          value,
          basis: msgs.timeBasis(prepared.referenceTime),
        });
      out.results.push({ field: field.name, status: 'filled', value, sourceRefs });
      continue;
    }
    if (status === 'ambiguous') {
      out.ambiguous = true;
      out.results.push({
        field: field.name,
        status: 'ambiguous',
        candidates: [...(entry?.candidates ?? [])],
        sourceRefs: sourceRefsFor(prepared, entry?.evidence),
      });
      continue;
    }
    const fallback = field.spec.default;
    if (!field.required && fallback !== undefined) {
      out.inferences.push({
        kind: 'default',
        target: { kind: 'field', id: field.name },
        value: fallback,
        basis: msgs.defaultBasis,
      });
      out.results.push({ field: field.name, status: 'filled', value: fallback, sourceRefs: [] });
      continue;
    }
    if (field.required) {
      out.requiredGap = true;
      out.issues.push(
        issue('field_missing', 'warning', msgs.requiredMissing(field.name), { kind: 'field', id: field.name }),
      );
    }
    out.results.push({ field: field.name, status: 'missing', sourceRefs: [] });
  }
  return out;
}

/** Phase 4: the result status, first match wins (spec 02). */
function statusOf(effective: EffectiveState, fields: ResolvedFields): IntentResult['status'] {
  const everyIntent = allIntents(effective.intents);
  if (effective.intents.length === 0) return 'no_intent';
  if (
    effective.unresolved.some((u) => u.kind === 'ambiguity') ||
    fields.ambiguous ||
    everyIntent.some((i) => i.understanding === 'ambiguous')
  )
    return 'ambiguous';
  if (fields.requiredGap) return 'needs_input';
  if (
    effective.coverage !== 'complete' ||
    effective.unresolved.length > 0 ||
    everyIntent.some((i) => i.understanding !== 'clear')
  )
    return 'partial';
  return 'complete';
}

const INTENT_SET_KEYS: ReadonlySet<string> = new Set(['domain', 'action', 'target', 'goal', 'understanding']);
const CONSTRAINT_SET_KEYS: ReadonlySet<string> = new Set(['kind', 'text']);

function statedLiterally(prepared: PreparedRequest, value: string): boolean {
  const occursIn = substringSearch(value);
  if (occursIn(prepared.request.input)) return true;
  return (prepared.request.context ?? []).some((c) => occursIn(c.text));
}

function allIntents(intents: readonly IntentNode[]): IntentNode[] {
  const out: IntentNode[] = [];
  const walk = (list: readonly IntentNode[]): void => {
    for (const i of list) {
      out.push(i);
      walk(i.children);
    }
  };
  walk(intents);
  return out;
}

interface IntentEntry {
  readonly node: IntentNode;
  readonly parent: IntentEntry | undefined;
  /** Position in the parent's `children` (or in the baseline's `intents`). */
  readonly position: number;
}

interface ConstraintEntry {
  readonly constraint: Constraint;
  /** The intent the constraint belongs to; `undefined` for a request-level constraint. */
  readonly owner: IntentEntry | undefined;
  readonly position: number;
}

interface BaselineIndex {
  readonly intents: ReadonlyMap<string, IntentEntry>;
  readonly constraints: ReadonlyMap<string, ConstraintEntry>;
  /** The JSON Pointer into the baseline of the intent or constraint with this id (ids are unique across kinds). */
  pointer(id: string): string | undefined;
}

/** One walk over the (cloned) baseline: every intent and constraint by id, with parent links for its pointer. */
function indexBaseline(intents: readonly IntentNode[], requestConstraints: readonly Constraint[]): BaselineIndex {
  const byIntent = new Map<string, IntentEntry>();
  const byConstraint = new Map<string, ConstraintEntry>();
  const walk = (list: readonly IntentNode[], parent: IntentEntry | undefined): void => {
    list.forEach((node, position) => {
      const entry: IntentEntry = { node, parent, position };
      byIntent.set(node.id, entry);
      node.constraints.forEach((constraint, k) =>
        byConstraint.set(constraint.id, { constraint, owner: entry, position: k }),
      );
      walk(node.children, entry);
    });
  };
  walk(intents, undefined);
  requestConstraints.forEach((constraint, k) =>
    byConstraint.set(constraint.id, { constraint, owner: undefined, position: k }),
  );
  const intentPointer = (entry: IntentEntry): string => {
    const positions: number[] = [];
    for (let e: IntentEntry | undefined = entry; e !== undefined; e = e.parent) positions.push(e.position);
    return '/intents/' + positions.reverse().join('/children/');
  };
  return {
    intents: byIntent,
    constraints: byConstraint,
    pointer(id) {
      const intent = byIntent.get(id);
      if (intent !== undefined) return intentPointer(intent);
      const constraint = byConstraint.get(id);
      if (constraint === undefined) return undefined;
      const at = constraint.owner === undefined ? '' : intentPointer(constraint.owner);
      return `${at}/constraints/${constraint.position}`;
    },
  };
}

/**
 * Marks an intent removed with its descendants and their constraints. A subtree already marked is not walked again, so
 * every removal of a turn together marks each intent once.
 */
function markRemoved(intent: IntentNode, removed: Set<string>): void {
  const pending = [intent];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (removed.has(next.id)) continue;
    removed.add(next.id);
    for (const c of next.constraints) removed.add(c.id);
    for (const child of next.children) pending.push(child);
  }
}

/** The intents without the removed ones (and their subtrees), and every kept intent without its removed constraints. */
function dropRemoved(intents: readonly IntentNode[], removed: ReadonlySet<string>): IntentNode[] {
  const kept = intents.filter((i) => !removed.has(i.id));
  for (const i of kept) {
    if (i.constraints.some((c) => removed.has(c.id))) i.constraints = i.constraints.filter((c) => !removed.has(c.id));
    i.children = dropRemoved(i.children, removed);
  }
  return kept;
}
