/**
 * The result model (spec 02, "The result"): the golden sample, then worked cases whose whole `IntentResult` is compared
 * with a literal written from the spec, value and bytes.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { resolveInstance } from '../../src/core/instance.js';
import { normalizeCandidate } from '../../src/core/normalize.js';
import { prepareRequest } from '../../src/core/request.js';
import {
  IntentResultSchema,
  SCHEMA_VERSION,
  type Change,
  type Constraint,
  type FieldResult,
  type Inference,
  type IntentConfig,
  type IntentNode,
  type IntentResult,
  type Issue,
  type Language,
  type SourceRef,
  type Unresolved,
} from '../../src/core/schemas.js';
import { validateCandidate } from '../../src/core/validate.js';
import { Intent } from '../../src/intent.js';
import { expectExactly, keyOrderProblems, prepare, recognizeWith, run } from './support.js';

const fixture = (name: string): string => readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8');

interface SeedReply {
  content: [{ type: 'text'; text: string }];
  structuredContent: unknown;
}

const IN: SourceRef = { root: 'input', pointer: '' };
const ADDED: Record<Language, string> = { en: "Added from this turn's explicit request", 'zh-CN': '新增本轮明确请求' };

function add(kind: Change['target']['kind'], id: string, language: Language = 'en'): Change {
  return { operation: 'add', target: { kind, id }, description: ADDED[language], sourceRefs: [IN], effect: 'applied' };
}

/** Candidate text for `Intent.parse`; counts the executor's calls (a second call would be a correction). */
function scripted(candidate: unknown): { executor: () => Promise<string>; calls: () => number } {
  let calls = 0;
  const text = typeof candidate === 'string' ? candidate : JSON.stringify(candidate);
  return {
    executor: () => {
      calls++;
      return Promise.resolve(text);
    },
    calls: () => calls,
  };
}

// ---------------------------------------------------------------------------------------------------------------------

describe('the golden sample', () => {
  const request = JSON.parse(fixture('seed-executor-request.json')) as { params: { arguments: unknown } };
  const args = request.params.arguments;
  const candidateText = fixture('seed-candidate.json');
  const reply = JSON.parse(fixture('seed-executor-reply.json')) as SeedReply;

  it('[SEED-GOLDEN] [S02-KEY-ORDER] the pure core reproduces the seed reply byte for byte', () => {
    const instance = resolveInstance({});
    const prepared = prepareRequest(instance, args, new Date());
    const check = validateCandidate(prepared, candidateText);
    expect(check.ok).toBe(true);
    if (!check.ok) return;
    const result = normalizeCandidate(prepared, check.candidate);
    expect(JSON.stringify(result)).toBe(reply.content[0].text);
    expect(result).toEqual(reply.structuredContent);
    expect(keyOrderProblems(result)).toEqual([]);
  });

  it('[SEED-GOLDEN] [SEED-ONE-CORE] Intent.parse with a scripted executor gives the same bytes as the pure core', async () => {
    const script = scripted(candidateText);
    const intent = new Intent({ executor: script.executor });
    const result = await intent.parse(args);
    expect(JSON.stringify(result)).toBe(reply.content[0].text);
    expect(result).toEqual(reply.structuredContent);
    expect(script.calls()).toBe(1);
    expect(JSON.stringify(run({}, args, candidateText))).toBe(JSON.stringify(result));
  });

  it('the key-order check notices a moved key, a missing key and an unknown key', () => {
    const good = reply.structuredContent as IntentResult;
    const { status, ...rest } = good;
    expect(keyOrderProblems({ status, ...rest })).toEqual([
      '(root) (result): status, schemaVersion, input, turn, effective, fieldResults, issues, inferences',
    ]);
    const [intent] = good.effective.intents;
    const withoutExtensions: Partial<IntentNode> = { ...intent! };
    delete withoutExtensions.extensions;
    expect(keyOrderProblems({ ...good, effective: { ...good.effective, intents: [withoutExtensions] } })).toHaveLength(
      1,
    );
    expect(keyOrderProblems({ ...good, turn: { ...good.turn, facts: { when: 'now' } } })).toEqual([
      '/turn/facts (facts): when',
    ]);
  });

  it('[S02-KEY-ORDER] the seed result parses with IntentResultSchema and keeps its bytes', () => {
    const parsed = IntentResultSchema.parse(reply.structuredContent);
    expect(JSON.stringify(parsed)).toBe(reply.content[0].text);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// (a) a schema with required and optional fields

const SHOP = {
  description: 'Orders of a web shop',
  schema: {
    fields: {
      orderId: { type: 'string', description: 'the order number', required: true, pattern: '^[0-9]{6}$' },
      quantity: { type: 'integer', minimum: 1, maximum: 10 },
      priority: { type: 'enum', enum: ['low', 'normal', 'high'], default: 'normal' },
      deliveryDate: { type: 'date' },
      giftWrap: { type: 'boolean' },
    },
  },
} satisfies IntentConfig;

const SHIP = {
  domain: 'orders',
  action: 'ship',
  target: 'order 000123',
  goal: 'Ship order 000123',
  understanding: 'clear',
};

/** The shipping intent as the result holds it. */
function shipIntent(inputs: IntentNode['inputs'] = {}): IntentNode {
  return {
    id: 'intent-1',
    domain: 'orders',
    action: 'ship',
    target: 'order 000123',
    goal: 'Ship order 000123',
    understanding: 'clear',
    constraints: [],
    inputs,
    references: [],
    children: [],
    extensions: {},
  };
}

/** A one-intent English result; everything not given is what a plain first turn has. */
function single(o: {
  input: string;
  status: IntentResult['status'];
  intent?: IntentNode;
  normalizedInput?: string;
  facts?: IntentResult['turn']['facts'];
  coverage?: IntentResult['effective']['coverage'];
  kind?: IntentResult['turn']['kind'];
  unresolved?: Unresolved[];
  fieldResults?: FieldResult[];
  issues?: Issue[];
  inferences?: Inference[];
  language?: Language;
}): IntentResult {
  const language = o.language ?? 'en';
  const unresolved = o.unresolved ?? [];
  return {
    schemaVersion: SCHEMA_VERSION,
    input: o.input,
    status: o.status,
    turn: {
      kind: o.kind ?? 'request',
      normalizedInput: o.normalizedInput ?? o.input,
      intentIds: ['intent-1'],
      changes: [add('intent', 'intent-1', language), ...unresolved.map((u) => add('unresolved', u.id, language))],
      facts: o.facts ?? {},
    },
    effective: {
      schemaVersion: SCHEMA_VERSION,
      coverage: o.coverage ?? 'complete',
      scope: 'current_request',
      intents: [o.intent ?? shipIntent()],
      constraints: [],
      relations: [],
      unresolved,
    },
    fieldResults: o.fieldResults ?? [],
    issues: o.issues ?? [],
    inferences: o.inferences ?? [],
  };
}

describe('(a) field results against an instance schema', () => {
  it('[S02-FIELD-RESULTS] [S02-STATUS] filled fields come back in request order, with the evidence located in the input', () => {
    const input = 'Ship 2 units of order 000123 with high priority';
    const result = run(
      SHOP,
      { input, fields: ['priority', 'orderId', 'quantity'] },
      {
        turnKind: 'request',
        coverage: 'complete',
        intents: [{ ...SHIP, inputs: [{ name: 'quantity', value: 2 }] }],
        fields: {
          orderId: { status: 'filled', value: '000123', evidence: '000123' },
          quantity: { status: 'filled', value: 2, evidence: '2 units' },
          priority: { status: 'filled', value: 'high', evidence: 'high priority' },
        },
      },
    );
    expectExactly(
      result,
      single({
        input,
        status: 'complete',
        intent: shipIntent({ quantity: 2 }),
        fieldResults: [
          { field: 'priority', status: 'filled', value: 'high', sourceRefs: [IN] },
          { field: 'orderId', status: 'filled', value: '000123', sourceRefs: [IN] },
          { field: 'quantity', status: 'filled', value: 2, sourceRefs: [IN] },
        ],
      }),
    );
  });

  it('[S02-FIELD-RESULTS] [S02-STATUS] a required field marked missing gives needs_input and a field_missing issue', () => {
    const input = 'Ship 2 units please';
    const result = run(
      SHOP,
      { input, fields: ['orderId', 'quantity'] },
      {
        turnKind: 'request',
        coverage: 'complete',
        intents: [SHIP],
        fields: {
          orderId: { status: 'missing', value: null, candidates: null, evidence: null },
          quantity: { status: 'filled', value: 2, evidence: 'two units' },
        },
      },
    );
    expectExactly(
      result,
      single({
        input,
        status: 'needs_input',
        fieldResults: [
          { field: 'orderId', status: 'missing', sourceRefs: [] },
          // The evidence does not occur in the input, so it points nowhere.
          { field: 'quantity', status: 'filled', value: 2, sourceRefs: [] },
        ],
        issues: [
          {
            code: 'field_missing',
            severity: 'warning',
            message: 'The required field orderId is missing; ask the user for it.',
            target: { kind: 'field', id: 'orderId' },
          },
        ],
      }),
    );
  });

  it('[S02-FIELD-RESULTS] [S02-STATUS] an ambiguous field keeps its candidates and makes the result ambiguous', () => {
    const input = 'Ship two or three units of order 000123';
    const result = run(
      SHOP,
      { input, fields: ['quantity'] },
      {
        turnKind: 'request',
        coverage: 'complete',
        intents: [SHIP],
        fields: { quantity: { status: 'ambiguous', value: null, candidates: [2, 3], evidence: 'two or three units' } },
      },
    );
    expectExactly(
      result,
      single({
        input,
        status: 'ambiguous',
        fieldResults: [{ field: 'quantity', status: 'ambiguous', candidates: [2, 3], sourceRefs: [IN] }],
      }),
    );
  });

  it('[S02-FIELD-RESULTS] [S02-NOT-FORMAT] a string breaking its pattern is invalid with a field_invalid error, without a correction', async () => {
    const input = 'Ship order 12AB';
    const candidate = {
      turnKind: 'request',
      coverage: 'complete',
      intents: [SHIP],
      fields: { orderId: { status: 'filled', value: '12AB', evidence: '12AB' } },
    };
    const expected = single({
      input,
      status: 'needs_input',
      fieldResults: [{ field: 'orderId', status: 'invalid', value: '12AB', sourceRefs: [IN] }],
      issues: [
        {
          code: 'field_invalid',
          severity: 'error',
          message: 'The value of field orderId is not acceptable: it does not match the required pattern.',
          target: { kind: 'field', id: 'orderId' },
        },
      ],
    });
    expectExactly(run(SHOP, { input, fields: ['orderId'] }, candidate), expected);

    const script = scripted(candidate);
    const result = await new Intent({ ...SHOP, executor: script.executor }).parse({ input, fields: ['orderId'] });
    expectExactly(result, expected);
    expect(script.calls()).toBe(1);
  });

  it('[S02-FIELD-RESULTS] an optional field with a schema default that the candidate marks missing is filled by inference', () => {
    const input = 'Ship order 000123';
    const result = run(
      SHOP,
      { input, fields: ['priority'] },
      { turnKind: 'request', coverage: 'complete', intents: [SHIP], fields: { priority: { status: 'missing' } } },
    );
    expectExactly(
      result,
      single({
        input,
        status: 'complete',
        fieldResults: [{ field: 'priority', status: 'filled', value: 'normal', sourceRefs: [] }],
        inferences: [
          { kind: 'default', target: { kind: 'field', id: 'priority' }, value: 'normal', basis: 'schema default' },
        ],
      }),
    );
  });

  it('[S02-FIELD-RESULTS] [S02-TURN] a date resolved from "tomorrow" carries a time inference; facts hold the referenceTime', () => {
    const input = 'Deliver order 000123 tomorrow';
    const referenceTime = '2026-03-01T09:00:00+08:00';
    const result = run(
      SHOP,
      { input, fields: ['deliveryDate'], referenceTime },
      {
        turnKind: 'request',
        coverage: 'complete',
        intents: [SHIP],
        fields: { deliveryDate: { status: 'filled', value: '2026-03-02', evidence: 'tomorrow' } },
      },
    );
    expectExactly(
      result,
      single({
        input,
        status: 'complete',
        facts: { referenceTime },
        fieldResults: [{ field: 'deliveryDate', status: 'filled', value: '2026-03-02', sourceRefs: [IN] }],
        inferences: [
          {
            kind: 'time',
            target: { kind: 'field', id: 'deliveryDate' },
            value: '2026-03-02',
            basis: 'resolved against the reference time 2026-03-01T09:00:00+08:00',
          },
        ],
      }),
    );
  });

  it('[S02-FIELD-RESULTS] a date stated literally in the input is not an inference', () => {
    const input = 'Deliver order 000123 on 2026-03-05';
    const result = run(
      SHOP,
      { input, fields: ['deliveryDate'] },
      {
        turnKind: 'request',
        coverage: 'complete',
        intents: [SHIP],
        fields: { deliveryDate: { status: 'filled', value: '2026-03-05', evidence: 'on 2026-03-05' } },
      },
    );
    expectExactly(
      result,
      single({
        input,
        status: 'complete',
        fieldResults: [{ field: 'deliveryDate', status: 'filled', value: '2026-03-05', sourceRefs: [IN] }],
      }),
    );
  });

  it('[S02-FIELD-RESULTS] an enum or range break on an optional field is invalid but leaves the status alone', () => {
    const input = 'Ship 12 units of order 000123, urgently';
    const result = run(
      SHOP,
      { input, fields: ['quantity', 'priority', 'giftWrap'] },
      {
        turnKind: 'request',
        coverage: 'complete',
        intents: [SHIP],
        fields: {
          quantity: { status: 'filled', value: 12, evidence: '12 units' },
          priority: { status: 'filled', value: 'urgent', evidence: 'urgently' },
          giftWrap: { status: 'missing' },
        },
      },
    );
    expectExactly(
      result,
      single({
        input,
        status: 'complete',
        fieldResults: [
          { field: 'quantity', status: 'invalid', value: 12, sourceRefs: [IN] },
          { field: 'priority', status: 'invalid', value: 'urgent', sourceRefs: [IN] },
          { field: 'giftWrap', status: 'missing', sourceRefs: [] },
        ],
        issues: [
          {
            code: 'field_invalid',
            severity: 'error',
            message: 'The value of field quantity is not acceptable: it must not be greater than 10.',
            target: { kind: 'field', id: 'quantity' },
          },
          {
            code: 'field_invalid',
            severity: 'error',
            message: 'The value of field priority is not acceptable: it must be one of: low, normal, high.',
            target: { kind: 'field', id: 'priority' },
          },
        ],
      }),
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// (b) a compound request and (c) a follow-up turn on its effective state

const TRIP_INPUT =
  'Book a flight to Paris in economy, then a hotel near the Louvre with a free airport transfer. Keep the total under 2000 EUR.';

const TRIP_CANDIDATE = {
  turnKind: 'request',
  coverage: 'complete',
  intents: [
    {
      ref: 'flight',
      domain: 'travel',
      action: 'book',
      target: 'flight to Paris',
      goal: 'Fly to Paris',
      understanding: 'clear',
      constraints: [{ kind: 'requirement', text: 'in economy' }],
      inputs: [
        { name: 'destination', value: 'Paris' },
        { name: 'passengers', value: null },
      ],
      references: null,
      children: null,
    },
    {
      ref: 'hotel',
      domain: 'travel',
      action: 'book',
      target: 'hotel near the Louvre',
      goal: 'Stay near the Louvre',
      understanding: 'clear',
      constraints: [{ kind: 'preference', text: 'near the Louvre' }],
      references: [{ kind: 'input', id: null, text: 'a hotel near the Louvre' }],
      children: [
        {
          ref: 'transfer',
          domain: 'travel',
          action: 'arrange',
          target: 'airport transfer',
          goal: 'Get from the airport to the hotel',
          understanding: 'clear',
          constraints: [{ kind: 'limit', text: 'free' }],
        },
      ],
    },
  ],
  constraints: [{ kind: 'limit', text: 'Keep the total under 2000 EUR' }],
  relations: [{ kind: 'sequence', from: 'flight', to: 'hotel', text: 'then' }],
  unresolved: [{ kind: 'missing_information', text: 'On which dates?', intentRef: 'flight', options: null }],
};

const intentScope = (intentId: string): Constraint['scope'] => ({ type: 'intent', intentId });

function tripIntents(): IntentNode[] {
  return [
    {
      id: 'intent-1',
      domain: 'travel',
      action: 'book',
      target: 'flight to Paris',
      goal: 'Fly to Paris',
      understanding: 'clear',
      constraints: [{ id: 'constraint-1', kind: 'requirement', text: 'in economy', scope: intentScope('intent-1') }],
      inputs: { destination: 'Paris', passengers: null },
      references: [],
      children: [],
      extensions: {},
    },
    {
      id: 'intent-2',
      domain: 'travel',
      action: 'book',
      target: 'hotel near the Louvre',
      goal: 'Stay near the Louvre',
      understanding: 'clear',
      constraints: [
        { id: 'constraint-2', kind: 'preference', text: 'near the Louvre', scope: intentScope('intent-2') },
      ],
      inputs: {},
      references: [{ kind: 'input', text: 'a hotel near the Louvre' }],
      children: [
        {
          id: 'intent-3',
          domain: 'travel',
          action: 'arrange',
          target: 'airport transfer',
          goal: 'Get from the airport to the hotel',
          understanding: 'clear',
          constraints: [{ id: 'constraint-3', kind: 'limit', text: 'free', scope: intentScope('intent-3') }],
          inputs: {},
          references: [],
          children: [],
          extensions: {},
        },
      ],
      extensions: {},
    },
  ];
}

const tripTurn = (): IntentResult => run({}, { input: TRIP_INPUT }, TRIP_CANDIDATE);

describe('(b) a compound request', () => {
  it('[S02-IDS] [S02-SCOPES] [S02-CHANGES] [S02-TURN] [S02-EFFECTIVE] numbers ids depth-first, scopes constraints and orders changes', () => {
    const expected: IntentResult = {
      schemaVersion: SCHEMA_VERSION,
      input: TRIP_INPUT,
      // An unresolved missing_information entry makes it partial.
      status: 'partial',
      turn: {
        kind: 'request',
        normalizedInput: TRIP_INPUT,
        intentIds: ['intent-1', 'intent-2', 'intent-3'],
        changes: [
          add('intent', 'intent-1'),
          add('constraint', 'constraint-1'),
          add('intent', 'intent-2'),
          add('constraint', 'constraint-2'),
          add('intent', 'intent-3'),
          add('constraint', 'constraint-3'),
          add('constraint', 'constraint-4'),
          add('relation', 'relation-1'),
          add('unresolved', 'unresolved-1'),
        ],
        facts: {},
      },
      effective: {
        schemaVersion: SCHEMA_VERSION,
        coverage: 'complete',
        scope: 'current_request',
        intents: tripIntents(),
        constraints: [
          { id: 'constraint-4', kind: 'limit', text: 'Keep the total under 2000 EUR', scope: { type: 'request' } },
        ],
        relations: [{ id: 'relation-1', kind: 'sequence', from: 'intent-1', to: 'intent-2', text: 'then' }],
        unresolved: [
          { id: 'unresolved-1', kind: 'missing_information', text: 'On which dates?', intentId: 'intent-1' },
        ],
      },
      fieldResults: [],
      issues: [],
      inferences: [],
    };
    const result = tripTurn();
    expectExactly(result, expected);
    expect(keyOrderProblems(result)).toEqual([]);
  });
});

describe('(c) a follow-up turn with a baseline', () => {
  const input = 'Make the hotel near the Eiffel Tower instead, forget the budget, and rent a small car.';
  const UPDATED = "Updated by this turn's request";

  it('[S02-IDS] [S02-CHANGES] [S02-TURN] [S02-EFFECTIVE] applies baseline changes, ignores what cannot apply, continues the ids', () => {
    const baseline = tripTurn().effective;
    const before = structuredClone(baseline);
    const candidate = {
      turnKind: 'followup',
      coverage: 'complete',
      intents: [
        {
          ref: 'car',
          domain: 'travel',
          action: 'rent',
          target: 'car',
          goal: 'Have a car in Paris',
          understanding: 'clear',
          constraints: [{ kind: 'preference', text: 'small car' }],
        },
      ],
      // A baseline intent id works as a ref.
      relations: [{ kind: 'sequence', from: 'intent-1', to: 'car' }],
      unresolved: [{ kind: 'missing_information', text: 'For which days?', intentRef: 'car', options: ['1', '2'] }],
      baselineChanges: [
        {
          operation: 'update',
          target: { kind: 'intent', id: 'intent-2' },
          set: {
            domain: null,
            action: null,
            target: 'hotel near the Eiffel Tower',
            goal: 'Stay near the Eiffel Tower',
            understanding: null,
            kind: null,
            text: null,
          },
          text: 'hotel near the Eiffel Tower instead',
        },
        {
          operation: 'remove',
          target: { kind: 'constraint', id: 'constraint-4' },
          set: null,
          text: 'forget the budget',
        },
        // Removed a moment ago in this same turn.
        { operation: 'update', target: { kind: 'constraint', id: 'constraint-4' }, set: { text: 'under 2500 EUR' } },
        // Sets nothing.
        { operation: 'update', target: { kind: 'intent', id: 'intent-1' }, set: { domain: null, action: null } },
        {
          operation: 'update',
          target: { kind: 'constraint', id: 'constraint-2' },
          set: { text: 'near the Eiffel Tower' },
        },
      ],
    };
    const result = run({}, { input, baseline }, candidate);

    const [flight, hotel] = tripIntents();
    const expected: IntentResult = {
      schemaVersion: SCHEMA_VERSION,
      input,
      status: 'partial',
      turn: {
        kind: 'followup',
        normalizedInput: input,
        intentIds: ['intent-4', 'intent-2'],
        changes: [
          add('intent', 'intent-4'),
          add('constraint', 'constraint-5'),
          add('relation', 'relation-2'),
          add('unresolved', 'unresolved-2'),
          {
            operation: 'update',
            target: { kind: 'intent', id: 'intent-2' },
            description: 'hotel near the Eiffel Tower instead',
            sourceRefs: [IN, { root: 'baseline', pointer: '/intents/1' }],
            effect: 'applied',
          },
          {
            operation: 'remove',
            target: { kind: 'constraint', id: 'constraint-4' },
            description: 'forget the budget',
            sourceRefs: [IN, { root: 'baseline', pointer: '/constraints/0' }],
            effect: 'applied',
          },
          {
            operation: 'update',
            target: { kind: 'constraint', id: 'constraint-4' },
            description: UPDATED,
            sourceRefs: [IN, { root: 'baseline', pointer: '/constraints/0' }],
            effect: 'ignored',
          },
          {
            operation: 'update',
            target: { kind: 'intent', id: 'intent-1' },
            description: UPDATED,
            sourceRefs: [IN, { root: 'baseline', pointer: '/intents/0' }],
            effect: 'ignored',
          },
          {
            operation: 'update',
            target: { kind: 'constraint', id: 'constraint-2' },
            description: UPDATED,
            sourceRefs: [IN, { root: 'baseline', pointer: '/intents/1/constraints/0' }],
            effect: 'applied',
          },
        ],
        facts: {},
      },
      effective: {
        schemaVersion: SCHEMA_VERSION,
        coverage: 'complete',
        scope: 'conversation',
        intents: [
          flight!,
          {
            ...hotel!,
            target: 'hotel near the Eiffel Tower',
            goal: 'Stay near the Eiffel Tower',
            constraints: [
              { id: 'constraint-2', kind: 'preference', text: 'near the Eiffel Tower', scope: intentScope('intent-2') },
            ],
          },
          {
            id: 'intent-4',
            domain: 'travel',
            action: 'rent',
            target: 'car',
            goal: 'Have a car in Paris',
            understanding: 'clear',
            constraints: [
              { id: 'constraint-5', kind: 'preference', text: 'small car', scope: intentScope('intent-4') },
            ],
            inputs: {},
            references: [],
            children: [],
            extensions: {},
          },
        ],
        constraints: [],
        relations: [
          { id: 'relation-1', kind: 'sequence', from: 'intent-1', to: 'intent-2', text: 'then' },
          { id: 'relation-2', kind: 'sequence', from: 'intent-1', to: 'intent-4' },
        ],
        unresolved: [
          {
            id: 'unresolved-2',
            kind: 'missing_information',
            text: 'For which days?',
            intentId: 'intent-4',
            options: ['1', '2'],
          },
        ],
      },
      fieldResults: [],
      issues: [
        {
          code: 'change_ignored',
          severity: 'warning',
          message: 'The change to constraint-4 was not applied: that item was already removed in this turn.',
          target: { kind: 'constraint', id: 'constraint-4' },
        },
        {
          code: 'change_ignored',
          severity: 'warning',
          message: 'The update of intent-1 was not applied: it gives no new value.',
          target: { kind: 'intent', id: 'intent-1' },
        },
      ],
      inferences: [],
    };
    expectExactly(result, expected);
    expect(keyOrderProblems(result)).toEqual([]);
    // The baseline the caller passed in is not touched.
    expect(baseline).toEqual(before);
  });

  it('[S02-CHANGES] [S02-EFFECTIVE] removing a baseline intent removes its children and constraints and drops its relations', () => {
    const baseline = tripTurn().effective;
    const result = run(
      {},
      { input: 'Skip the hotel.', baseline },
      {
        turnKind: 'correction',
        coverage: 'complete',
        intents: [],
        baselineChanges: [
          { operation: 'remove', target: { kind: 'intent', id: 'intent-2' } },
          // Went with its parent.
          { operation: 'remove', target: { kind: 'intent', id: 'intent-3' }, text: 'no transfer either' },
          // Keys that belong to constraints, not intents.
          { operation: 'update', target: { kind: 'intent', id: 'intent-1' }, set: { kind: 'limit' } },
        ],
      },
    );
    const [flight] = tripIntents();
    expectExactly(result, {
      schemaVersion: SCHEMA_VERSION,
      input: 'Skip the hotel.',
      // Intents from the baseline count: there are some, so not no_intent.
      status: 'complete',
      turn: {
        kind: 'correction',
        normalizedInput: 'Skip the hotel.',
        intentIds: [],
        changes: [
          {
            operation: 'remove',
            target: { kind: 'intent', id: 'intent-2' },
            description: "Removed by this turn's request",
            sourceRefs: [IN, { root: 'baseline', pointer: '/intents/1' }],
            effect: 'applied',
          },
          {
            operation: 'remove',
            target: { kind: 'intent', id: 'intent-3' },
            description: 'no transfer either',
            sourceRefs: [IN, { root: 'baseline', pointer: '/intents/1/children/0' }],
            effect: 'ignored',
          },
          {
            operation: 'update',
            target: { kind: 'intent', id: 'intent-1' },
            description: UPDATED,
            sourceRefs: [IN, { root: 'baseline', pointer: '/intents/0' }],
            effect: 'ignored',
          },
        ],
        facts: {},
      },
      effective: {
        schemaVersion: SCHEMA_VERSION,
        coverage: 'complete',
        scope: 'conversation',
        intents: [flight!],
        constraints: [
          { id: 'constraint-4', kind: 'limit', text: 'Keep the total under 2000 EUR', scope: { type: 'request' } },
        ],
        relations: [],
        unresolved: [],
      },
      fieldResults: [],
      issues: [
        {
          code: 'change_ignored',
          severity: 'warning',
          message: 'The change to intent-3 was not applied: that item was already removed in this turn.',
          target: { kind: 'intent', id: 'intent-3' },
        },
        {
          code: 'change_ignored',
          severity: 'warning',
          message: 'The update of intent-1 was not applied: kind do not apply to that kind of item.',
          target: { kind: 'intent', id: 'intent-1' },
        },
      ],
      inferences: [],
    } satisfies IntentResult);
  });

  it('[S02-IDS] new ids continue after the highest number the baseline holds, not after its item count', () => {
    const first = tripTurn();
    // Turn 2 removes intent-2 (with intent-3, constraint-2 and constraint-3): the baseline of turn 3 holds intent-1,
    // constraint-1 and constraint-4. Spec 02 counts from the highest number *in the baseline*, so intent numbers
    // restart after intent-1 while constraint numbers continue after constraint-4.
    const second = run(
      {},
      { input: 'Skip the hotel.', baseline: first.effective },
      {
        turnKind: 'correction',
        coverage: 'complete',
        intents: [],
        baselineChanges: [{ operation: 'remove', target: { kind: 'intent', id: 'intent-2' } }],
      },
    );
    const third = run(
      {},
      { input: 'And a museum pass.', baseline: second.effective },
      {
        turnKind: 'followup',
        coverage: 'complete',
        intents: [
          {
            domain: 'travel',
            action: 'buy',
            target: 'museum pass',
            goal: 'Visit museums',
            understanding: 'clear',
            constraints: [{ kind: 'preference', text: 'museum' }],
          },
        ],
        constraints: [{ kind: 'limit', text: 'cheap' }],
      },
    );
    expect(second.effective.intents.map((i) => i.id)).toEqual(['intent-1']);
    expect(third.turn.intentIds).toEqual(['intent-2']);
    expect(third.effective.intents.map((i) => i.id)).toEqual(['intent-1', 'intent-2']);
    expect(third.effective.intents[1]?.constraints.map((c) => c.id)).toEqual(['constraint-5']);
    expect(third.effective.constraints.map((c) => c.id)).toEqual(['constraint-4', 'constraint-6']);
    expect(third.turn.changes.map((c) => `${c.operation} ${c.target.id}`)).toEqual([
      'add intent-2',
      'add constraint-5',
      'add constraint-6',
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// (d) language

const NO_ORDER_ID = {
  turnKind: 'request',
  coverage: 'complete',
  intents: [SHIP],
  fields: { orderId: { status: 'missing' } },
};

function missingOrderId(input: string, language: Language): IntentResult {
  return single({
    input,
    status: 'needs_input',
    language,
    fieldResults: [{ field: 'orderId', status: 'missing', sourceRefs: [] }],
    issues: [
      {
        code: 'field_missing',
        severity: 'warning',
        message:
          language === 'en'
            ? 'The required field orderId is missing; ask the user for it.'
            : '缺少必填字段 orderId，请向用户询问。',
        target: { kind: 'field', id: 'orderId' },
      },
    ],
  });
}

describe('(d) language of descriptions and messages', () => {
  const en = 'Ship my order please';
  const zh = '请发货我的订单';

  it('[S02-LANGUAGE] English input gives English descriptions and messages', () => {
    expectExactly(run(SHOP, { input: en, fields: ['orderId'] }, NO_ORDER_ID), missingOrderId(en, 'en'));
  });

  it('[S02-LANGUAGE] input with CJK characters gives zh-CN descriptions and messages', () => {
    expectExactly(run(SHOP, { input: zh, fields: ['orderId'] }, NO_ORDER_ID), missingOrderId(zh, 'zh-CN'));
    // One ideograph is enough.
    const mixed = 'Ship order 000123 快';
    expect(run(SHOP, { input: mixed, fields: ['orderId'] }, NO_ORDER_ID)).toEqual(missingOrderId(mixed, 'zh-CN'));
  });

  it('[S02-LANGUAGE] output.language overrides the detection and the instance language', () => {
    expectExactly(
      run(SHOP, { input: en, fields: ['orderId'], output: { language: 'zh-CN' } }, NO_ORDER_ID),
      missingOrderId(en, 'zh-CN'),
    );
    expectExactly(
      run({ ...SHOP, language: 'zh-CN' }, { input: zh, fields: ['orderId'], output: { language: 'en' } }, NO_ORDER_ID),
      missingOrderId(zh, 'en'),
    );
  });

  it('[S02-LANGUAGE] the instance language overrides auto', () => {
    expectExactly(
      run({ ...SHOP, language: 'zh-CN' }, { input: en, fields: ['orderId'] }, NO_ORDER_ID),
      missingOrderId(en, 'zh-CN'),
    );
    expectExactly(
      run({ ...SHOP, language: 'en' }, { input: zh, fields: ['orderId'] }, NO_ORDER_ID),
      missingOrderId(zh, 'en'),
    );
  });

  it('[S02-LANGUAGE] zh-CN inference bases and ignored-change messages', () => {
    const baseline = tripTurn().effective;
    const result = run(
      SHOP,
      { input: '照常发货', fields: ['priority'], baseline },
      {
        turnKind: 'followup',
        coverage: 'complete',
        intents: [SHIP],
        fields: { priority: { status: 'missing' } },
        baselineChanges: [{ operation: 'update', target: { kind: 'intent', id: 'intent-1' }, set: null }],
      },
    );
    expect(result.inferences).toEqual([
      { kind: 'default', target: { kind: 'field', id: 'priority' }, value: 'normal', basis: '字段默认值' },
    ]);
    expect(result.issues).toEqual([
      {
        code: 'change_ignored',
        severity: 'warning',
        message: '对 intent-1 的更新未执行：没有给出任何新值。',
        target: { kind: 'intent', id: 'intent-1' },
      },
    ]);
    expect(result.turn.changes.map((c) => c.description)).toEqual(['新增本轮明确请求', '按本轮请求更新']);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// (e) status, first matching rule wins

describe('(e) status rules', () => {
  const input = 'Ship order 000123';
  const shipWith = (understanding: string): object => ({ ...SHIP, understanding });
  const intentWith = (understanding: IntentNode['understanding']): IntentNode => ({
    ...shipIntent(),
    understanding,
  });
  const question = (kind: Unresolved['kind'], id = 'unresolved-1'): Unresolved => ({
    id,
    kind,
    text: 'Which order?',
    intentId: 'intent-1',
  });
  const candidateQuestion = (kind: Unresolved['kind']): object => ({ kind, text: 'Which order?', intentRef: 'o' });

  it('[S02-STATUS] no intents → no_intent, even with an ambiguity open and a required field missing', () => {
    const result = run(
      SHOP,
      { input: 'hello there', fields: ['orderId'] },
      {
        turnKind: 'smalltalk',
        coverage: 'none',
        intents: [],
        unresolved: [{ kind: 'ambiguity', text: 'Is this about an order?' }],
        fields: { orderId: { status: 'missing' } },
      },
    );
    expectExactly(result, {
      schemaVersion: SCHEMA_VERSION,
      input: 'hello there',
      status: 'no_intent',
      turn: {
        kind: 'smalltalk',
        normalizedInput: 'hello there',
        intentIds: [],
        changes: [add('unresolved', 'unresolved-1')],
        facts: {},
      },
      effective: {
        schemaVersion: SCHEMA_VERSION,
        coverage: 'none',
        scope: 'current_request',
        intents: [],
        constraints: [],
        relations: [],
        unresolved: [{ id: 'unresolved-1', kind: 'ambiguity', text: 'Is this about an order?' }],
      },
      fieldResults: [{ field: 'orderId', status: 'missing', sourceRefs: [] }],
      issues: [
        {
          code: 'field_missing',
          severity: 'warning',
          message: 'The required field orderId is missing; ask the user for it.',
          target: { kind: 'field', id: 'orderId' },
        },
      ],
      inferences: [],
    } satisfies IntentResult);
  });

  it('[S02-STATUS] an unresolved ambiguity → ambiguous, before a missing required field', () => {
    const result = run(
      SHOP,
      { input, fields: ['orderId'] },
      {
        turnKind: 'request',
        coverage: 'partial',
        intents: [{ ...SHIP, ref: 'o' }],
        unresolved: [candidateQuestion('ambiguity')],
        fields: { orderId: { status: 'missing' } },
      },
    );
    expectExactly(
      result,
      single({
        input,
        status: 'ambiguous',
        coverage: 'partial',
        unresolved: [question('ambiguity')],
        fieldResults: [{ field: 'orderId', status: 'missing', sourceRefs: [] }],
        issues: [
          {
            code: 'field_missing',
            severity: 'warning',
            message: 'The required field orderId is missing; ask the user for it.',
            target: { kind: 'field', id: 'orderId' },
          },
        ],
      }),
    );
  });

  it('[S02-STATUS] an intent understood as ambiguous → ambiguous, also in a child', () => {
    expectExactly(
      run({}, { input }, { turnKind: 'request', coverage: 'complete', intents: [shipWith('ambiguous')] }),
      single({ input, status: 'ambiguous', intent: intentWith('ambiguous') }),
    );
    const nested = run(
      {},
      { input },
      {
        turnKind: 'request',
        coverage: 'complete',
        intents: [{ ...SHIP, children: [{ ...SHIP, understanding: 'ambiguous' }] }],
      },
    );
    expect(nested.status).toBe('ambiguous');
    expect(nested.turn.intentIds).toEqual(['intent-1', 'intent-2']);
  });

  it('[S02-STATUS] a required field missing → needs_input, before partial coverage', () => {
    const result = run(
      SHOP,
      { input, fields: ['orderId'] },
      { turnKind: 'request', coverage: 'partial', intents: [SHIP], fields: { orderId: { status: 'missing' } } },
    );
    expectExactly(
      result,
      single({
        input,
        status: 'needs_input',
        coverage: 'partial',
        fieldResults: [{ field: 'orderId', status: 'missing', sourceRefs: [] }],
        issues: [
          {
            code: 'field_missing',
            severity: 'warning',
            message: 'The required field orderId is missing; ask the user for it.',
            target: { kind: 'field', id: 'orderId' },
          },
        ],
      }),
    );
  });

  it('[S02-STATUS] coverage partial → partial', () => {
    expectExactly(
      run({}, { input }, { turnKind: 'request', coverage: 'partial', intents: [SHIP] }),
      single({ input, status: 'partial', coverage: 'partial' }),
    );
  });

  it('[S02-STATUS] coverage none with intents counts like partial (normalize.ts choice)', () => {
    expectExactly(
      run({}, { input }, { turnKind: 'request', coverage: 'none', intents: [SHIP] }),
      single({ input, status: 'partial', coverage: 'none' }),
    );
  });

  it('[S02-STATUS] an unresolved missing_information or unknown_reference entry → partial', () => {
    for (const kind of ['missing_information', 'unknown_reference'] as const)
      expectExactly(
        run(
          {},
          { input },
          {
            turnKind: 'request',
            coverage: 'complete',
            intents: [{ ...SHIP, ref: 'o' }],
            unresolved: [candidateQuestion(kind)],
          },
        ),
        single({ input, status: 'partial', unresolved: [question(kind)] }),
      );
  });

  it('[S02-STATUS] an intent understood partially or not at all → partial', () => {
    for (const understanding of ['partial', 'unclear'] as const)
      expectExactly(
        run({}, { input }, { turnKind: 'request', coverage: 'complete', intents: [shipWith(understanding)] }),
        single({ input, status: 'partial', intent: intentWith(understanding) }),
      );
  });

  it('[S02-STATUS] otherwise complete', () => {
    expectExactly(
      run({}, { input }, { turnKind: 'request', coverage: 'complete', intents: [SHIP] }),
      single({ input, status: 'complete' }),
    );
  });

  it('[S02-NOT-FORMAT] missing and ambiguous fields, unresolved entries and partial coverage are results, never corrections', async () => {
    const candidates: [unknown, IntentResult['status']][] = [
      [
        { turnKind: 'request', coverage: 'complete', intents: [SHIP], fields: { orderId: { status: 'missing' } } },
        'needs_input',
      ],
      [
        {
          turnKind: 'request',
          coverage: 'complete',
          intents: [SHIP],
          fields: { orderId: { status: 'ambiguous', candidates: ['000123', '000124'] } },
        },
        'ambiguous',
      ],
      [
        {
          turnKind: 'request',
          coverage: 'complete',
          intents: [SHIP],
          unresolved: [{ kind: 'missing_information', text: 'Which address?' }],
          fields: { orderId: { status: 'filled', value: '000123' } },
        },
        'partial',
      ],
      [
        {
          turnKind: 'request',
          coverage: 'partial',
          intents: [SHIP],
          fields: { orderId: { status: 'filled', value: '000123' } },
        },
        'partial',
      ],
      [
        {
          turnKind: 'request',
          coverage: 'complete',
          intents: [SHIP],
          fields: { orderId: { status: 'filled', value: 'nope' } },
        },
        'needs_input',
      ],
    ];
    for (const [candidate, status] of candidates) {
      const script = scripted(candidate);
      const result = await new Intent({ ...SHOP, executor: script.executor }).parse({ input, fields: ['orderId'] });
      expect(result.status).toBe(status);
      expect(script.calls()).toBe(1);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// (f) normalizedInput and (g) facts

describe('(f) normalizedInput', () => {
  it('[S02-NORMALIZED-INPUT] NFC, trimmed, whitespace folded, full-width characters kept (no NFKC)', () => {
    const input = '\u3000 Cafe\u0301  ０００１２３，\t\n请查询！ ';
    const normalizedInput = 'Caf\u00e9 ０００１２３， 请查询！';
    const result = run({}, { input }, { turnKind: 'request', coverage: 'complete', intents: [SHIP] });
    expectExactly(result, single({ input, normalizedInput, status: 'complete', language: 'zh-CN' }));
    expect(normalizedInput).not.toBe(normalizedInput.normalize('NFKC'));
  });
});

describe('(g) facts', () => {
  const input = 'Ship order 000123 tomorrow';
  const candidate = { turnKind: 'request', coverage: 'complete', intents: [SHIP] };

  it('[S02-TURN] facts are {} when the request gives no referenceTime, whatever the time of prepare', () => {
    const prepared = prepare({}, { input }, new Date('2030-01-01T00:00:00Z'));
    expect(prepared.task.input.referenceTime).toBe('2030-01-01T00:00:00.000Z');
    expectExactly(recognizeWith(prepared, candidate), single({ input, status: 'complete' }));
  });

  it('[S02-TURN] facts hold the referenceTime exactly as the request gave it', () => {
    const referenceTime = '2026-03-01T09:00:00.5-05:30';
    expectExactly(
      run({}, { input, referenceTime }, candidate),
      single({ input, status: 'complete', facts: { referenceTime } }),
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// (h) edges the property tests found

describe('(h) edges', () => {
  it('[S02-FORMAT-ERRORS] a relation or question about a baseline intent removed in the same turn is a correctable format error', () => {
    // The candidate would leave references dangling in effective: it points at an intent it removes itself.
    const baseline = tripTurn().effective;
    const prepared = prepare({}, { input: 'Drop the hotel; the flight comes before it.', baseline });
    const check = validateCandidate(
      prepared,
      JSON.stringify({
        turnKind: 'correction',
        coverage: 'complete',
        intents: [],
        relations: [{ kind: 'sequence', from: 'intent-1', to: 'intent-2' }],
        unresolved: [{ kind: 'missing_information', text: 'Which hotel?', intentRef: 'intent-2' }],
        baselineChanges: [{ operation: 'remove', target: { kind: 'intent', id: 'intent-2' } }],
      }),
    );
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.issues.map((i) => i.path)).toEqual(['/relations/0/to', '/unresolved/0/intentRef']);
  });

  it('an intent input named __proto__ is never dropped silently', () => {
    // A record cannot hold "__proto__" as an entry (assigning it sets the prototype; zod's record schema drops it), so
    // the candidate must either be refused as a correctable format error or the result must say what it left out.
    const prepared = prepare({}, { input: 'Set __proto__ to x and constructor to 1' });
    const candidate = {
      turnKind: 'request',
      coverage: 'complete',
      intents: [
        {
          ...SHIP,
          inputs: [
            { name: '__proto__', value: 'x' },
            { name: 'constructor', value: 1 },
            { name: 'toString', value: null },
          ],
        },
      ],
    };
    const check = validateCandidate(prepared, JSON.stringify(candidate));
    if (!check.ok) {
      expect(check.issues.map((i) => i.path)).toContain('/intents/0/inputs/0/name');
      return;
    }
    const result = normalizeCandidate(prepared, check.candidate);
    const inputs = result.effective.intents[0]?.inputs;
    expect(Object.getPrototypeOf(inputs)).toBe(Object.prototype);
    expect(JSON.stringify(inputs)).toBe('{"constructor":1,"toString":null}');
    expect(result.issues.map((i) => i.message).join(' ')).toContain('__proto__');
  });
});
