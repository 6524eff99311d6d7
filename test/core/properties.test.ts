/**
 * Properties of the result model (spec 02): arbitrary candidates that fit a request's `outputSchema`, for several
 * request shapes, always validate and always normalise into a well-formed, byte-stable `IntentResult`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { IntentCandidate } from '../../src/core/candidate.js';
import { resolveInstance, type InstanceModel, type ResolvedField } from '../../src/core/instance.js';
import { normalizeCandidate } from '../../src/core/normalize.js';
import { prepareRequest, type PreparedRequest } from '../../src/core/request.js';
import {
  CONSTRAINT_KINDS,
  COVERAGES,
  IntentResultSchema,
  REFERENCE_KINDS,
  RESERVED_NAMES,
  RELATION_KINDS,
  TURN_KINDS,
  UNDERSTANDINGS,
  UNRESOLVED_KINDS,
  type EffectiveState,
  type IntentNode,
  type IntentResult,
} from '../../src/core/schemas.js';
import { validateCandidate } from '../../src/core/validate.js';
import { PREPARE_TIME, keyOrderProblems } from './support.js';

const RUNS = 200;

type Obj = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------------------------------
// Instances and request shapes

const NO_SCHEMA = resolveInstance({});

/** One field of every `FieldSpec.type`, with the content rules (pattern, range, enum) and defaults that exist. */
const EVERY_TYPE = resolveInstance({
  schema: {
    fields: {
      code: { type: 'string', description: 'a product code', required: true, pattern: '^[A-Z]{2}[0-9]{2}$' },
      note: { type: 'string', default: 'none' },
      count: { type: 'integer', required: true, minimum: 1, maximum: 10 },
      ratio: { type: 'number', minimum: 0, maximum: 1, default: 0.5 },
      urgent: { type: 'boolean', default: false },
      day: { type: 'date' },
      at: { type: 'datetime', required: true },
      size: { type: 'enum', enum: ['S', 'M', 'L'], default: 'M' },
      color: { type: 'enum', enum: ['red', 'green'] },
    },
  },
});

// ---------------------------------------------------------------------------------------------------------------------
// Arbitraries of the candidate shape (spec 02, "The candidate")
//
// A candidate is generated as a seed first: wherever it must name something that exists (a ref, a baseline id, a slice
// of the input), the seed holds a number that `resolveSeed` turns into one of the things that exist for the request.
// This keeps generation free of `chain` (fast, and shrinking works on every part).

const SAMPLES = ['查询订单000123，不要取消订单', 'Paris', '明天', 'tomorrow', 'AB12', '2026-03-02', 'red', '１２３！'];
const text = fc.oneof(
  { arbitrary: fc.string({ maxLength: 12 }), weight: 3 },
  { arbitrary: fc.constantFrom(...SAMPLES), weight: 2 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }), weight: 1 },
);
const inputText = fc
  .oneof(text, fc.constantFrom('  查询订单000123，\n 不要取消订单  ', 'Book a flight, then a hotel.'))
  .filter((s) => s.trim().length > 0);

/** An optional candidate key: left out, `null` (the outputSchema's way of saying "none") or a value. */
function maybe<T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null | undefined> {
  return fc.oneof(fc.constant(undefined), fc.constant(null), { arbitrary: arb, weight: 3 });
}

/** Picks one of `values`, the first one `weight` times as often as each other (keeps "complete" results common). */
function mostly<T>(weight: number, ...values: T[]): fc.Arbitrary<T> {
  return fc.oneof(
    { arbitrary: fc.constant(values[0] as T), weight },
    { arbitrary: fc.constantFrom(...values), weight: values.length },
  );
}
const understandingArb = mostly(16, ...UNDERSTANDINGS);

/** A number standing for "one of the things that exist", resolved modulo their count. */
const pick = fc.nat({ max: 999 });
const at = <T>(list: readonly T[], n: number): T => list[n % list.length] as T;

const scalar = fc.oneof(text, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean());
const constraintArb = fc.record({ kind: fc.constantFrom(...CONSTRAINT_KINDS), text });
const constraintsArb = maybe(fc.array(constraintArb, { maxLength: 2 }));
const inputEntries = fc.uniqueArray(
  fc.record({
    // Reserved names are correctable format errors (validate.ts), tested in result.test.ts; fast-check's string
    // generator is biased towards prototype keys, so they are filtered out here.
    name: fc
      .oneof(text, fc.constantFrom('quantity', '数量', 'toString', 'valueOf', '0'))
      .filter((n) => !RESERVED_NAMES.has(n)),
    value: fc.oneof(scalar, fc.constant(null)),
  }),
  { selector: (e) => e.name, maxLength: 3 },
);
const referenceArb = fc.record({ kind: fc.constantFrom(...REFERENCE_KINDS), id: maybe(text), text });

/** Placeholder for "this intent has a ref"; {@link labelRefs} replaces it with a unique label. */
const HAS_REF = '\u0000ref';

function intentArb(depth: number): fc.Arbitrary<Obj> {
  return fc.record({
    ref: fc.constantFrom(undefined, null, HAS_REF, HAS_REF),
    domain: fc.option(text, { nil: null }),
    action: text,
    target: fc.option(text, { nil: null }),
    goal: text,
    understanding: understandingArb,
    constraints: constraintsArb,
    inputs: maybe(inputEntries),
    references: maybe(fc.array(referenceArb, { maxLength: 2 })),
    // Up to depth 3: top-level intents, children, grandchildren.
    children: depth >= 3 ? fc.constant(undefined) : maybe(fc.array(intentArb(depth + 1), { maxLength: 2 })),
  });
}

const childrenOf = (intent: Obj): Obj[] => (Array.isArray(intent['children']) ? (intent['children'] as Obj[]) : []);

/** Copies the intents with unique ref labels, depth-first; returns them with the labels used. */
function labelRefs(intents: readonly Obj[]): { intents: Obj[]; refs: string[] } {
  const refs: string[] = [];
  const label = (list: readonly Obj[]): Obj[] =>
    list.map((intent) => {
      const copy: Obj = { ...intent };
      if (intent['ref'] === HAS_REF) {
        copy['ref'] = `${at(['r', '步骤', 'step-'], refs.length)}${refs.length}`;
        refs.push(copy['ref'] as string);
      }
      if (Array.isArray(intent['children'])) copy['children'] = label(childrenOf(intent));
      return copy;
    });
  return { intents: label(intents), refs };
}

const dateArb = fc.date({
  min: new Date('1990-01-01T00:00:00Z'),
  max: new Date('2100-01-01T00:00:00Z'),
  noInvalidDate: true,
});

/** Values of the field's JSON type; some break its pattern, range or enum (content problems, not format errors). */
function valueArb(field: ResolvedField): fc.Arbitrary<string | number | boolean> {
  switch (field.type) {
    case 'string':
      return fc.oneof(text, fc.stringMatching(/^[A-Z]{2}[0-9]{2}$/));
    case 'integer':
      return fc.oneof(fc.integer({ min: -2, max: 12 }), fc.integer());
    case 'number':
      return fc.oneof(
        fc.double({ min: -0.5, max: 1.5, noNaN: true }),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
      );
    case 'boolean':
      return fc.boolean();
    case 'date':
      return fc.oneof(
        dateArb.map((d) => d.toISOString().slice(0, 10)),
        text,
        fc.constantFrom('2026-02-30', '2026-3-1'),
      );
    case 'datetime':
      return fc.oneof(
        dateArb.map((d) => d.toISOString()),
        dateArb.map((d) => `${d.toISOString().slice(0, 19)}+08:00`),
        text,
        fc.constantFrom('2026-03-01T09:00', '2026-02-30T00:00:00Z'),
      );
    case 'enum':
      return fc.oneof(fc.constantFrom(...(field.spec.enum ?? ['x'])), text);
  }
}

/** Evidence: free text, or `[from, to]` standing for a slice of the request input. */
const evidenceSeed = maybe(fc.oneof(text, fc.tuple(pick, pick)));

function fieldEntryArb(field: ResolvedField): fc.Arbitrary<Obj> {
  const value = valueArb(field);
  const candidates = maybe(fc.array(value, { maxLength: 3 }));
  return fc.oneof(
    { arbitrary: fc.record({ status: fc.constant('filled'), value, candidates, evidence: evidenceSeed }), weight: 12 },
    {
      arbitrary: fc.record({
        status: fc.constant('missing'),
        value: fc.constantFrom(undefined, null),
        candidates,
        evidence: evidenceSeed,
      }),
      weight: 4,
    },
    fc.record({ status: fc.constant('ambiguous'), value: maybe(value), candidates, evidence: evidenceSeed }),
  );
}

/** One entry for every field of the instance; `resolveSeed` keeps the selected ones, in request order. */
function fieldsSeed(instance: InstanceModel): fc.Arbitrary<Obj | null | undefined> {
  const model: Record<string, fc.Arbitrary<Obj>> = {};
  for (const field of instance.fields.values()) model[field.name] = fieldEntryArb(field);
  return maybe(fc.record(model));
}

const INTENT_SET_KEYS = ['domain', 'action', 'target', 'goal', 'understanding'];
const CONSTRAINT_SET_KEYS = ['kind', 'text'];
const setSeed = fc.record({
  domain: maybe(text),
  action: maybe(text),
  target: maybe(text),
  goal: maybe(text),
  understanding: maybe(understandingArb),
  kind: maybe(fc.constantFrom(...CONSTRAINT_KINDS)),
  text: maybe(text),
});
const changeSeed = fc.record({
  operation: fc.constantFrom('update', 'update', 'remove'),
  target: pick,
  // Mostly only the keys that fit the target's kind; sometimes all (the update is then ignored, normalize.ts).
  fitting: fc.constantFrom(true, true, true, false),
  set: maybe(setSeed),
  text: maybe(text),
});

function candidateSeed(instance: InstanceModel): fc.Arbitrary<Obj> {
  return fc.record({
    turnKind: fc.constantFrom(...TURN_KINDS),
    coverage: mostly(3, ...COVERAGES),
    intents: fc.array(intentArb(1), { maxLength: 3 }),
    constraints: constraintsArb,
    relations: maybe(
      fc.array(fc.record({ kind: fc.constantFrom(...RELATION_KINDS), from: pick, to: pick, text: maybe(text) }), {
        maxLength: 3,
      }),
    ),
    unresolved: maybe(
      fc.array(
        fc.record({
          kind: mostly(1, ...[...UNRESOLVED_KINDS].reverse()),
          text,
          intentRef: maybe(pick),
          options: maybe(fc.array(text, { maxLength: 3 })),
        }),
        { maxLength: 1 },
      ),
    ),
    fields: fieldsSeed(instance),
    baselineChanges: maybe(fc.array(changeSeed, { maxLength: 4 })),
  });
}

/** Baseline intents removed by `changes`, with their descendants. */
function removedIntents(baseline: EffectiveState | undefined, changes: Obj[] | undefined): Set<string> {
  const targets = new Set(
    (changes ?? [])
      .filter((c) => c['operation'] === 'remove' && (c['target'] as Obj)['kind'] === 'intent')
      .map((c) => (c['target'] as Obj)['id'] as string),
  );
  const out = new Set<string>();
  const walk = (list: readonly IntentNode[], above: boolean): void => {
    for (const i of list) {
      const gone = above || targets.has(i.id);
      if (gone) out.add(i.id);
      walk(i.children, gone);
    }
  };
  walk(baseline?.intents ?? [], false);
  return out;
}

function baselineIds(baseline: EffectiveState | undefined): { intents: string[]; constraints: string[] } {
  const intents: string[] = [];
  const constraints: string[] = [];
  const walk = (list: readonly IntentNode[]): void => {
    for (const i of list) {
      intents.push(i.id);
      constraints.push(...i.constraints.map((c) => c.id));
      walk(i.children);
    }
  };
  walk(baseline?.intents ?? []);
  constraints.push(...(baseline?.constraints ?? []).map((c) => c.id));
  return { intents, constraints };
}

/**
 * The candidate a seed stands for, for `prepared`: it fits the request's outputSchema, its refs resolve, its baseline
 * changes name ids the baseline has, and `fields` lists exactly the selected fields.
 */
function resolveSeed(seed: Obj, prepared: PreparedRequest): Obj {
  const { intents, refs } = labelRefs(seed['intents'] as Obj[]);
  const ids = baselineIds(prepared.baseline);
  const input = prepared.request.input;
  const candidate: Obj = { ...seed, intents };
  const changes = seed['baselineChanges'] as Obj[] | null | undefined;
  if (prepared.baseline === undefined) delete candidate['baselineChanges'];
  else if (Array.isArray(changes)) {
    const targets = [
      ...ids.intents.map((id) => ({ kind: 'intent', id })),
      ...ids.constraints.map((id) => ({ kind: 'constraint', id })),
    ];
    candidate['baselineChanges'] =
      targets.length === 0
        ? []
        : changes.map(({ fitting, ...change }) => {
            const target = at(targets, change['target'] as number);
            const set = change['set'] as Obj | null | undefined;
            const keep = target.kind === 'intent' ? INTENT_SET_KEYS : CONSTRAINT_SET_KEYS;
            return {
              ...change,
              target,
              set:
                fitting === true && set !== null && set !== undefined
                  ? Object.fromEntries(Object.entries(set).filter(([k]) => keep.includes(k)))
                  : set,
            };
          });
  }
  // A reference to a baseline intent this candidate removes would dangle: validation refuses it, so seeds avoid it.
  const removed = removedIntents(prepared.baseline, candidate['baselineChanges'] as Obj[] | undefined);
  const ends = [...refs, ...ids.intents.filter((id) => !removed.has(id))];

  const relations = seed['relations'] as Obj[] | null | undefined;
  if (Array.isArray(relations))
    candidate['relations'] =
      ends.length === 0
        ? []
        : relations.map((r) => ({ ...r, from: at(ends, r['from'] as number), to: at(ends, r['to'] as number) }));
  const unresolved = seed['unresolved'] as Obj[] | null | undefined;
  if (Array.isArray(unresolved))
    candidate['unresolved'] = unresolved.map((u) => {
      const ref = u['intentRef'];
      return typeof ref === 'number' ? { ...u, intentRef: ends.length === 0 ? null : at(ends, ref) } : u;
    });

  const fields = seed['fields'] as Record<string, Obj> | null | undefined;
  if (fields !== null && fields !== undefined) {
    const selected: Record<string, Obj> = {};
    for (const field of prepared.plan.fields) {
      const entry = { ...fields[field.name] };
      const evidence = entry['evidence'];
      if (Array.isArray(evidence)) {
        const [a, b] = (evidence as number[]).map((n) => n % (input.length + 1));
        entry['evidence'] = input.slice(Math.min(a ?? 0, b ?? 0), Math.max(a ?? 0, b ?? 0));
      }
      selected[field.name] = entry;
    }
    candidate['fields'] = selected;
  }

  return candidate;
}

// ---------------------------------------------------------------------------------------------------------------------
// Turns and conversations

/** One generated turn: a Native request and the candidate text a model would send for it. */
interface Generated {
  readonly request: Obj;
  readonly text: string;
}

/** A generated turn, prepared (preparing is pure; the plan cache makes it cheap). */
interface Turn extends Generated {
  readonly prepared: PreparedRequest;
}

const contextArb = fc.array(fc.record({ role: fc.constantFrom('user', 'assistant', 'system'), text }), {
  maxLength: 2,
});
const referenceTimeArb = fc.oneof(
  dateArb.map((d) => d.toISOString()),
  dateArb.map((d) => `${d.toISOString().slice(0, 19)}-05:30`),
);

/**
 * Field selections: all in schema order, all reversed, none, and a few subsets out of order. A fixed few, because each
 * new selection builds (and caches) a candidate plan, which is what a real instance does once per request shape.
 */
function selectionArb(instance: InstanceModel): fc.Arbitrary<string[]> {
  const names = [...instance.fields.keys()];
  if (names.length === 0) return fc.constant([]);
  return fc.constantFrom(
    names,
    [...names].reverse(),
    [],
    names.filter((_, n) => n % 2 === 0).reverse(),
    names.filter((_, n) => n % 3 === 1),
    [names[names.length - 1] ?? '', names[0] ?? ''],
  );
}

/** A request without baseline and a candidate seed for it. */
function turnSeed(instance: InstanceModel): fc.Arbitrary<[Obj, Obj]> {
  const request = fc.record(
    {
      input: inputText,
      fields: selectionArb(instance),
      context: contextArb,
      referenceTime: referenceTimeArb,
      output: fc.record({ language: fc.constantFrom('auto', 'zh-CN', 'en') }),
    },
    { requiredKeys: ['input', 'fields'] },
  );
  return fc.tuple(request, candidateSeed(instance));
}

const prepare = (instance: InstanceModel, turn: Generated): Turn => ({
  ...turn,
  prepared: prepareRequest(instance, turn.request, PREPARE_TIME),
});

function accepted(turn: Turn): IntentCandidate {
  const check = validateCandidate(turn.prepared, turn.text);
  if (!check.ok) throw new Error(`candidate rejected: ${JSON.stringify(check.issues)}`);
  return check.candidate;
}

const normalize = (turn: Turn): IntentResult => normalizeCandidate(turn.prepared, accepted(turn));

/** A turn whose baseline is the `effective` of `earlier` generated turns, folded one after the other. */
function conversationArb(instance: InstanceModel, earlier: number): fc.Arbitrary<Generated> {
  return fc
    .tuple(fc.array(turnSeed(instance), { minLength: earlier, maxLength: earlier }), turnSeed(instance))
    .map(([before, [last, lastSeed]]) => {
      let baseline: EffectiveState | undefined;
      const turnFor = (fields: Obj, seed: Obj): Turn => {
        const request = baseline === undefined ? fields : { ...fields, baseline };
        const prepared = prepareRequest(instance, request, PREPARE_TIME);
        return { request, text: JSON.stringify(resolveSeed(seed, prepared)), prepared };
      };
      for (const [fields, seed] of before) baseline = normalize(turnFor(fields, seed)).effective;
      const { request, text } = turnFor(last, lastSeed);
      return { request, text };
    });
}

const SHAPES: [string, InstanceModel, fc.Arbitrary<Generated>][] = [
  ['no schema', NO_SCHEMA, conversationArb(NO_SCHEMA, 0)],
  ['a schema with fields of every type', EVERY_TYPE, conversationArb(EVERY_TYPE, 0)],
  ['a baseline from an earlier turn', EVERY_TYPE, conversationArb(EVERY_TYPE, 1)],
  ['a baseline from two earlier turns, no schema', NO_SCHEMA, conversationArb(NO_SCHEMA, 2)],
];

function forEveryShape(check: (turn: Turn) => void): void {
  for (const [shape, instance, arb] of SHAPES) {
    try {
      fc.assert(
        fc.property(arb, (turn) => {
          check(prepare(instance, turn));
        }),
        { numRuns: RUNS },
      );
    } catch (error) {
      throw new Error(`request shape "${shape}": ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Reading a result

function walkIntents(intents: readonly IntentNode[]): IntentNode[] {
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

/** Every id in `effective`, by kind: intents deep, constraints (nested and request-level), relations, unresolved. */
function effectiveIds(
  effective: EffectiveState,
): Record<'intent' | 'constraint' | 'relation' | 'unresolved', string[]> {
  const intents = walkIntents(effective.intents);
  return {
    intent: intents.map((i) => i.id),
    constraint: [...intents.flatMap((i) => i.constraints.map((c) => c.id)), ...effective.constraints.map((c) => c.id)],
    relation: effective.relations.map((r) => r.id),
    unresolved: effective.unresolved.map((u) => u.id),
  };
}

const numberOf = (id: string): number => Number(id.slice(id.lastIndexOf('-') + 1));

/** Highest number per kind in the baseline (0 when none). */
function baselineHighest(baseline: EffectiveState | undefined): Record<string, number> {
  const out: Record<string, number> = { intent: 0, constraint: 0, relation: 0, unresolved: 0 };
  if (baseline === undefined) return out;
  for (const [kind, ids] of Object.entries(effectiveIds(baseline))) out[kind] = Math.max(0, ...ids.map(numberOf));
  return out;
}

/** This turn's new intents, depth-first: the top-level intents numbered above the baseline's highest, with children. */
function freshIntents(result: IntentResult, prepared: PreparedRequest): IntentNode[] {
  const highest = baselineHighest(prepared.baseline)['intent'] ?? 0;
  return walkIntents(result.effective.intents.filter((i) => numberOf(i.id) > highest));
}

/** The adds spec 02 lists for a candidate, in order: each intent depth-first then its constraints; then the rest. */
function expectedAddKinds(candidate: IntentCandidate): string[] {
  const kinds: string[] = [];
  const walk = (list: readonly NonNullable<IntentCandidate['intents']>[number][]): void => {
    for (const i of list) {
      kinds.push('intent', ...(i.constraints ?? []).map(() => 'constraint'));
      walk(i.children ?? []);
    }
  };
  walk(candidate.intents);
  kinds.push(
    ...(candidate.constraints ?? []).map(() => 'constraint'),
    ...(candidate.relations ?? []).map(() => 'relation'),
    ...(candidate.unresolved ?? []).map(() => 'unresolved'),
  );
  return kinds;
}

// ---------------------------------------------------------------------------------------------------------------------
// A JSON Schema check for the keywords the derived outputSchema uses. Spec-allowed tolerance (candidate.ts header): a
// required key whose schema admits null may be left out.

const KNOWN_KEYWORDS = new Set([
  '$schema',
  '$defs',
  '$ref',
  'id',
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'anyOf',
  'enum',
  'description',
]);

function unknownKeywords(schema: unknown): string[] {
  if (schema === null || typeof schema !== 'object') return [];
  if (Array.isArray(schema)) return schema.flatMap(unknownKeywords);
  const out: string[] = [];
  for (const [key, value] of Object.entries(schema as Obj)) {
    if (!KNOWN_KEYWORDS.has(key)) out.push(key);
    if (key === 'properties' || key === '$defs') out.push(...Object.values(value as Obj).flatMap(unknownKeywords));
    else if (key !== 'enum' && key !== 'required') out.push(...unknownKeywords(value));
  }
  return out;
}

function hasType(value: unknown, type: unknown): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return value !== null && typeof value === 'object' && !Array.isArray(value);
    default:
      return false;
  }
}

function schemaProblems(schema: Obj, value: unknown, root: Obj, path = ''): string[] {
  const ref = schema['$ref'];
  if (typeof ref === 'string') {
    const defs = root['$defs'] as Record<string, Obj>;
    const target = defs[ref.replace('#/$defs/', '')];
    return target === undefined ? [`${path}: unknown $ref ${ref}`] : schemaProblems(target, value, root, path);
  }
  const anyOf = schema['anyOf'];
  if (Array.isArray(anyOf))
    return (anyOf as Obj[]).some((branch) => schemaProblems(branch, value, root, path).length === 0)
      ? []
      : [`${path}: matches no branch of anyOf`];
  const type = schema['type'];
  if (type !== undefined) {
    const types = Array.isArray(type) ? (type as unknown[]) : [type];
    if (!types.some((t) => hasType(value, t))) return [`${path}: is not of type ${types.join(' or ')}`];
  }
  const problems: string[] = [];
  const allowed = schema['enum'];
  if (Array.isArray(allowed) && !allowed.includes(value)) problems.push(`${path}: is not one of the enum values`);
  const props = schema['properties'] as Record<string, Obj> | undefined;
  if (props !== undefined && hasType(value, 'object')) {
    const obj = value as Obj;
    for (const key of Object.keys(obj)) {
      const sub = props[key];
      if (sub === undefined) {
        if (schema['additionalProperties'] === false) problems.push(`${path}/${key}: is not allowed`);
      } else problems.push(...schemaProblems(sub, obj[key], root, `${path}/${key}`));
    }
    for (const key of (schema['required'] ?? []) as string[]) {
      const sub = props[key];
      if (!(key in obj) && (sub === undefined || schemaProblems(sub, null, root).length > 0))
        problems.push(`${path}/${key}: is required`);
    }
  }
  const items = schema['items'] as Obj | undefined;
  if (items !== undefined && Array.isArray(value))
    value.forEach((item, n) => problems.push(...schemaProblems(items, item, root, `${path}/${n}`)));
  return problems;
}

// ---------------------------------------------------------------------------------------------------------------------

describe('properties of the result model over generated candidates', () => {
  it('[S02-SCHEMAS] every generated candidate fits the derived outputSchema and the zod schema; every result parses with IntentResultSchema', () => {
    for (const instance of [NO_SCHEMA, EVERY_TYPE]) {
      const prepared = prepareRequest(instance, { input: 'x', fields: [...instance.fields.keys()] }, PREPARE_TIME);
      expect(unknownKeywords(prepared.task.outputSchema)).toEqual([]);
    }
    forEveryShape((turn) => {
      const root = turn.prepared.task.outputSchema;
      expect(schemaProblems(root, JSON.parse(turn.text), root)).toEqual([]);
      const check = validateCandidate(turn.prepared, turn.text);
      expect(check.ok ? [] : check.issues).toEqual([]);
      if (!check.ok) return;
      const result = normalizeCandidate(turn.prepared, check.candidate);
      const json = JSON.stringify(result);
      // The zod schema describes exactly what normalisation produces: parsing keeps every byte.
      expect(JSON.stringify(IntentResultSchema.parse(JSON.parse(json)))).toBe(json);
    });
  });

  it('[S02-SCHEMAS] the JSON Schema check and the zod schema both reject what the outputSchema forbids', () => {
    const prepared = prepareRequest(EVERY_TYPE, { input: 'x', fields: ['count', 'code'] }, PREPARE_TIME);
    const root = prepared.task.outputSchema;
    const fine = { turnKind: 'request', coverage: 'complete', intents: [] };
    expect(schemaProblems(root, fine, root)).toEqual([]);
    expect(validateCandidate(prepared, JSON.stringify(fine)).ok).toBe(true);
    const entry = { status: 'filled', value: 1, candidates: null, evidence: null };
    const broken: [Obj, string][] = [
      [{ ...fine, mood: 'happy' }, '/mood: is not allowed'],
      [{ turnKind: 'request', coverage: 'complete' }, '/intents: is required'],
      [{ ...fine, coverage: 'most' }, '/coverage: is not one of the enum values'],
      [
        { ...fine, fields: { count: { ...entry, value: 1.5 }, code: { ...entry, value: 'AB12' } } },
        '/fields: matches no branch of anyOf',
      ],
      [{ ...fine, fields: { count: entry } }, '/fields: matches no branch of anyOf'],
      [{ ...fine, intents: [{ action: 'a' }] }, '/intents/0/goal: is required'],
    ];
    for (const [candidate, problem] of broken) {
      expect(schemaProblems(root, candidate, root)).toContain(problem);
      expect(validateCandidate(prepared, JSON.stringify(candidate)).ok).toBe(false);
    }
  });

  it('[S02-IDS] [S02-SCOPES] [S02-CHANGES] [S02-EFFECTIVE] ids are unique and numbered in document order after the baseline’s highest; changes come in spec order and point at what they changed', () => {
    forEveryShape((turn) => {
      const candidate = accepted(turn);
      const result = normalizeCandidate(turn.prepared, candidate);
      const { effective, turn: t } = result;
      const baseline = turn.prepared.baseline;

      // Ids: unique across effective; the adds, kind by kind, continue after the baseline's highest number.
      const ids = effectiveIds(effective);
      const all = Object.values(ids).flat();
      expect(new Set(all).size, 'ids are unique').toBe(all.length);
      const next = baselineHighest(baseline);
      const expectedAdds = expectedAddKinds(candidate).map((kind) => {
        next[kind] = (next[kind] ?? 0) + 1;
        return `${kind}-${next[kind]}`;
      });
      expect(
        t.changes.filter((c) => c.operation === 'add').map((c) => c.target.id),
        'adds in spec order, numbered after the baseline',
      ).toEqual(expectedAdds);
      // New intents' depth-first order is their numbering order.
      expect(freshIntents(result, turn.prepared).map((i) => i.id)).toEqual(
        expectedAdds.filter((id) => id.startsWith('intent-')),
      );

      // Scopes.
      for (const intent of walkIntents(effective.intents))
        for (const c of intent.constraints) expect(c.scope).toEqual({ type: 'intent', intentId: intent.id });
      for (const c of effective.constraints) expect(c.scope).toEqual({ type: 'request' });

      // Effective: baseline items first (in baseline order), then this turn's.
      expect(effective.scope).toBe(baseline === undefined ? 'current_request' : 'conversation');
      const highest = baselineHighest(baseline);
      const firstThenNew = (list: readonly { id: string }[], kind: string, from: readonly { id: string }[]): void => {
        const old = list.filter((x) => numberOf(x.id) <= (highest[kind] ?? 0)).map((x) => x.id);
        expect(
          list.slice(0, old.length).map((x) => x.id),
          `baseline ${kind}s first`,
        ).toEqual(old);
        const order = from.map((x) => x.id);
        expect(
          old.map((id) => order.indexOf(id)),
          `baseline ${kind}s keep their order`,
        ).toEqual(old.map((id) => order.indexOf(id)).sort((a, b) => a - b));
      };
      firstThenNew(effective.intents, 'intent', baseline?.intents ?? []);
      firstThenNew(effective.constraints, 'constraint', baseline?.constraints ?? []);
      firstThenNew(effective.relations, 'relation', baseline?.relations ?? []);

      // Changes: adds first, then one entry per baseline change in the candidate's order.
      const adds = expectedAdds.length;
      expect(t.changes.slice(0, adds).every((c) => c.operation === 'add' && c.effect === 'applied')).toBe(true);
      expect(t.changes.slice(adds).map((c) => [c.operation, c.target])).toEqual(
        (candidate.baselineChanges ?? []).map((c) => [c.operation, c.target]),
      );
      const exists = (kind: string, id: string): boolean =>
        (ids as Record<string, string[]>)[kind]?.includes(id) === true;
      t.changes.forEach((change, n) => {
        const { kind, id } = change.target;
        if (change.effect === 'ignored') {
          expect(result.issues).toContainEqual(
            expect.objectContaining({ code: 'change_ignored', target: { kind, id } }),
          );
          return;
        }
        if (change.operation === 'remove') {
          expect(exists(kind, id), `removed ${id} is gone`).toBe(false);
          return;
        }
        // An applied update whose target a later change of the same turn removed is the one exception.
        const removedLater = t.changes.slice(n + 1).some((c) => c.operation === 'remove' && c.effect === 'applied');
        if (!removedLater) expect(exists(kind, id), `${change.operation} ${id} exists`).toBe(true);
      });
      expect(result.issues.filter((i) => i.code === 'change_ignored')).toHaveLength(
        t.changes.filter((c) => c.effect === 'ignored').length,
      );

      // turn.intentIds: added, then updated.
      expect(t.intentIds).toEqual([
        ...t.changes.filter((c) => c.operation === 'add' && c.target.kind === 'intent').map((c) => c.target.id),
        ...new Set(
          t.changes
            .filter((c) => c.operation === 'update' && c.target.kind === 'intent' && c.effect === 'applied')
            .map((c) => c.target.id),
        ),
      ]);
    });
  });

  it('[S02-KEY-ORDER] results are byte-stable: spec 02’s key order everywhere; the same bytes when normalised twice or re-validated; inputs untouched', () => {
    forEveryShape((turn) => {
      const baselineBefore = JSON.stringify(turn.prepared.baseline);
      const candidate = accepted(turn);
      const candidateBefore = JSON.stringify(candidate);
      const result = normalizeCandidate(turn.prepared, candidate);
      expect(keyOrderProblems(result)).toEqual([]);
      const first = JSON.stringify(result);
      expect(JSON.stringify(normalizeCandidate(turn.prepared, candidate))).toBe(first);
      expect(JSON.stringify(normalize(turn))).toBe(first);
      expect(JSON.stringify(JSON.parse(first))).toBe(first);
      expect(JSON.stringify(turn.prepared.baseline)).toBe(baselineBefore);
      expect(JSON.stringify(candidate)).toBe(candidateBefore);
    });
  });

  it('[S02-STATUS] [S02-FIELD-RESULTS] status follows the first matching rule; one field result per selected field, in order', () => {
    forEveryShape((turn) => {
      const result = normalize(turn);
      const fields = turn.prepared.plan.fields;
      expect(result.fieldResults.map((f) => f.field)).toEqual(fields.map((f) => f.name));
      for (const f of result.fieldResults) {
        expect(f.value !== undefined, `${f.field} has a value exactly when filled or invalid`).toBe(
          f.status === 'filled' || f.status === 'invalid',
        );
        expect(f.candidates !== undefined, `${f.field} has candidates exactly when ambiguous`).toBe(
          f.status === 'ambiguous',
        );
      }
      const required = new Set(fields.filter((f) => f.required).map((f) => f.name));
      const intents = walkIntents(result.effective.intents);
      const { unresolved } = result.effective;
      const status =
        result.effective.intents.length === 0
          ? 'no_intent'
          : unresolved.some((u) => u.kind === 'ambiguity') ||
              result.fieldResults.some((f) => f.status === 'ambiguous') ||
              intents.some((i) => i.understanding === 'ambiguous')
            ? 'ambiguous'
            : result.fieldResults.some(
                  (f) => required.has(f.field) && (f.status === 'missing' || f.status === 'invalid'),
                )
              ? 'needs_input'
              : result.effective.coverage !== 'complete' ||
                  unresolved.length > 0 ||
                  intents.some((i) => i.understanding !== 'clear')
                ? 'partial'
                : 'complete';
      expect(result.status).toBe(status);
    });
  });

  it('relations and unresolved entries of effective point at intents that effective holds', () => {
    forEveryShape((turn) => {
      const { effective } = normalize(turn);
      const intents = new Set(walkIntents(effective.intents).map((i) => i.id));
      for (const r of effective.relations) {
        expect(intents.has(r.from), `${r.id}.from ${r.from}`).toBe(true);
        expect(intents.has(r.to), `${r.id}.to ${r.to}`).toBe(true);
      }
      for (const u of effective.unresolved)
        if (u.intentId !== undefined) expect(intents.has(u.intentId), `${u.id}.intentId ${u.intentId}`).toBe(true);
    });
  });

  it('each new intent carries its candidate inputs as a record, entry for entry', () => {
    forEveryShape((turn) => {
      const candidate = accepted(turn);
      const result = normalizeCandidate(turn.prepared, candidate);
      const expected: [string, unknown][][] = [];
      const walk = (list: readonly NonNullable<IntentCandidate['intents']>[number][]): void => {
        for (const i of list) {
          expected.push((i.inputs ?? []).map((e) => [e.name, e.value]));
          walk(i.children ?? []);
        }
      };
      walk(candidate.intents);
      // A record cannot keep the entry order when a name looks like an array index: compare sorted.
      const sorted = (entries: [string, unknown][]): [string, unknown][] =>
        [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      const fresh = freshIntents(result, turn.prepared);
      expect(fresh.map((i) => sorted(Object.entries(i.inputs)))).toEqual(expected.map(sorted));
    });
  });
});
