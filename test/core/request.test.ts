import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { resolveInstance, type InstanceModel } from '../../src/core/instance.js';
import { prepareRequest } from '../../src/core/request.js';
import {
  EffectiveStateSchema,
  FeedbackItemSchema,
  ModelTaskSchema,
  TaskMaterialSchema,
  type EffectiveState,
} from '../../src/core/schemas.js';
import { thrownBy } from '../support/intentErrors.js';

const NOW = new Date('2026-03-04T05:06:07.000Z');
/** RFC 6901: '' or a sequence of '/'-prefixed tokens where '~' only appears as '~0' or '~1'. */
const JSON_POINTER = /^(\/([^~/]|~[01])*)*$/;

const withSchema = resolveInstance({
  schema: {
    fields: {
      orderId: { type: 'string', description: 'the order number', required: true, pattern: '^[0-9]+$' },
      count: { type: 'integer', minimum: 1, maximum: 9 },
      color: { type: 'enum', enum: ['red', 'blue'], default: 'red' },
    },
  },
});
const noSchema = resolveInstance({});
const tiny = resolveInstance({ limits: { maxInputChars: 10, maxContextItems: 2 } });

/** The `effective` of the seed's golden reply: a real earlier result, as a caller would pass it back. */
const seedReply = JSON.parse(
  readFileSync(new URL('../fixtures/seed-executor-reply.json', import.meta.url), 'utf8'),
) as {
  structuredContent: { effective: unknown };
};
const seedEffective: EffectiveState = EffectiveStateSchema.parse(seedReply.structuredContent.effective);

function intentNode(id: string, constraintIds: string[] = []) {
  return {
    id,
    domain: null,
    action: 'query',
    target: 'order',
    goal: 'query the order',
    understanding: 'clear',
    constraints: constraintIds.map((c) => ({
      id: c,
      kind: 'prohibition',
      text: 'do not cancel',
      scope: { type: 'intent', intentId: id },
    })),
    inputs: {},
    references: [],
    children: [],
    extensions: {},
  };
}

function effective(intents: unknown[], constraints: unknown[] = []) {
  return {
    schemaVersion: '2.0-draft.6',
    coverage: 'complete',
    scope: 'current_request',
    intents,
    constraints,
    relations: [],
    unresolved: [],
  };
}

interface BadCase {
  /** What is wrong, for the test title. */
  what: string;
  instance?: InstanceModel;
  request: unknown;
  /** A word the message must contain: the key or field it names. */
  names: string;
  /** The JSON Pointer one of `details.issues` must carry. */
  pointer: string;
}

const FORBIDDEN_KEYS: Record<string, unknown> = {
  schema: { fields: { apiKey: { type: 'string' } } },
  executor: { kind: 'openai-compatible', baseUrl: 'https://example.invalid', model: 'm' },
  apiKey: 'sk-test-0000',
  signal: new AbortController().signal,
  configPath: './intent.config.json',
  mode: 'host',
};

const badRequests: BadCase[] = [
  ...Object.entries(FORBIDDEN_KEYS).map(([key, value]) => ({
    what: `[SEED-FORBIDDEN-KEYS] [S02-REQ-UNKNOWN-KEY] the forbidden key "${key}"`,
    request: { input: 'check order 123', [key]: value },
    names: `"${key}"`,
    pointer: `/${key}`,
  })),
  {
    what: '[S02-REQ-UNKNOWN-KEY] an unknown key',
    request: { input: 'hi', instanceName: 'main' },
    names: '"instanceName"',
    pointer: '/instanceName',
  },
  // input
  { what: '[S02-REQ-INPUT] a missing input', request: {}, names: 'input', pointer: '/input' },
  { what: '[S02-REQ-INPUT] an input that is not a string', request: { input: 42 }, names: 'input', pointer: '/input' },
  { what: '[S02-REQ-INPUT] an empty input', request: { input: '' }, names: 'input', pointer: '/input' },
  {
    what: '[S02-REQ-INPUT] a whitespace-only input',
    request: { input: ' \t\n\u3000 ' },
    names: 'input',
    pointer: '/input',
  },
  {
    what: '[S02-REQ-INPUT] an input over the default 20,000 characters',
    request: { input: 'x'.repeat(20_001) },
    names: 'input',
    pointer: '/input',
  },
  {
    what: '[S02-REQ-INPUT] an input over limits.maxInputChars after trimming',
    instance: tiny,
    request: { input: `  ${'y'.repeat(11)}  ` },
    names: 'input',
    pointer: '/input',
  },
  // fields
  {
    what: '[S02-REQ-FIELDS] fields that is not an array',
    instance: withSchema,
    request: { input: 'hi', fields: 'orderId' },
    names: 'fields',
    pointer: '/fields',
  },
  {
    what: '[S02-REQ-FIELDS] a field name that is not a string',
    instance: withSchema,
    request: { input: 'hi', fields: [7] },
    names: 'fields',
    pointer: '/fields/0',
  },
  {
    what: '[S02-REQ-FIELDS] an unknown field',
    instance: withSchema,
    request: { input: 'hi', fields: ['orderId', 'zipCode'] },
    names: '"zipCode"',
    pointer: '/fields/1',
  },
  {
    what: '[S02-REQ-FIELDS] a duplicate field',
    instance: withSchema,
    request: { input: 'hi', fields: ['count', 'orderId', 'count'] },
    names: '"count"',
    pointer: '/fields/2',
  },
  {
    what: '[S02-REQ-FIELDS] a field on an instance with no schema',
    instance: noSchema,
    request: { input: 'hi', fields: ['orderId'] },
    names: '"orderId"',
    pointer: '/fields/0',
  },
  // context
  {
    what: '[S02-REQ-CONTEXT] context over the default 50 items',
    request: { input: 'hi', context: Array.from({ length: 51 }, () => ({ role: 'user', text: 'a' })) },
    names: 'context',
    pointer: '/context',
  },
  {
    what: '[S02-REQ-CONTEXT] context over limits.maxContextItems',
    instance: tiny,
    request: {
      input: 'hi',
      context: [
        { role: 'user', text: 'a' },
        { role: 'assistant', text: 'b' },
        { role: 'system', text: 'c' },
      ],
    },
    names: 'context',
    pointer: '/context',
  },
  {
    what: '[S02-REQ-CONTEXT] context that is not an array',
    request: { input: 'hi', context: 'earlier' },
    names: 'context',
    pointer: '/context',
  },
  {
    what: '[S02-REQ-CONTEXT] a context item with a bad role',
    request: {
      input: 'hi',
      context: [
        { role: 'user', text: 'a' },
        { role: 'bot', text: 'b' },
      ],
    },
    names: '/context/1/role',
    pointer: '/context/1/role',
  },
  {
    what: '[S02-REQ-CONTEXT] a context item without text',
    request: { input: 'hi', context: [{ role: 'user' }] },
    names: '/context/0/text',
    pointer: '/context/0/text',
  },
  {
    what: '[S02-REQ-CONTEXT] a context item with an extra key',
    request: { input: 'hi', context: [{ role: 'user', text: 'a', name: 'bob' }] },
    names: 'name',
    pointer: '/context/0/name',
  },
  // baseline
  {
    what: '[S02-REQ-BASELINE] a baseline that is not an effective state',
    request: { input: 'hi', baseline: { intents: [] } },
    names: '/baseline',
    pointer: '/baseline/schemaVersion',
  },
  {
    what: '[S02-REQ-BASELINE] a baseline intent with a bad id',
    request: { input: 'hi', baseline: effective([intentNode('order-1')]) },
    names: '/baseline/intents/0/id',
    pointer: '/baseline/intents/0/id',
  },
  {
    what: '[S02-REQ-BASELINE] a baseline with a duplicate intent id',
    request: { input: 'hi', baseline: effective([intentNode('intent-1'), intentNode('intent-1')]) },
    names: 'baseline',
    pointer: '/baseline/intents/1/id',
  },
  {
    what: '[S02-REQ-BASELINE] a baseline with a duplicate constraint id',
    request: {
      input: 'hi',
      baseline: effective(
        [intentNode('intent-1', ['constraint-1'])],
        [{ id: 'constraint-1', kind: 'limit', text: 'at most 2', scope: { type: 'request' } }],
      ),
    },
    names: 'baseline',
    pointer: '/baseline/constraints/0/id',
  },
  // referenceTime
  {
    what: '[S02-REQ-REFTIME] a referenceTime without an offset',
    request: { input: 'hi', referenceTime: '2026-03-04T05:06:07' },
    names: 'referenceTime',
    pointer: '/referenceTime',
  },
  {
    what: '[S02-REQ-REFTIME] a referenceTime that is not a date',
    request: { input: 'hi', referenceTime: 'tomorrow morning' },
    names: 'referenceTime',
    pointer: '/referenceTime',
  },
  {
    what: '[S02-REQ-REFTIME] a date-only referenceTime',
    request: { input: 'hi', referenceTime: '2026-03-04' },
    names: 'referenceTime',
    pointer: '/referenceTime',
  },
  // output
  {
    what: 'an unknown output.language',
    request: { input: 'hi', output: { language: 'fr' } },
    names: '/output/language',
    pointer: '/output/language',
  },
  {
    what: '[S02-REQ-UNKNOWN-KEY] an unknown key in output',
    request: { input: 'hi', output: { format: 'json' } },
    names: 'format',
    pointer: '/output/format',
  },
  // the request itself
  { what: 'a request that is a string', request: 'check order 123', names: 'top level', pointer: '' },
  { what: 'a request that is null', request: null, names: 'top level', pointer: '' },
  { what: 'a request that is an array', request: [{ input: 'hi' }], names: 'top level', pointer: '' },
];

describe('prepareRequest refuses bad requests', () => {
  it.each(badRequests)(
    '[S02-REQ-UNKNOWN-KEY] [SEED-FORBIDDEN-KEYS] $what → INPUT_INVALID naming it',
    ({ instance, request, names, pointer }) => {
      const error = thrownBy(() => prepareRequest(instance ?? withSchema, request, NOW));
      expect(error.code).toBe('INPUT_INVALID');
      expect(error.category).toBe('input');
      expect(error.retryable).toBe(false);
      expect(error.message).toContain(names);
      const issues = FeedbackItemSchema.array().min(1).parse(error.details?.['issues']);
      for (const issue of issues) expect(issue.path).toMatch(JSON_POINTER);
      expect(issues.map((i) => i.path)).toContain(pointer);
    },
  );

  it('[SEED-SIGNAL] refuses an AbortSignal passed inside the request: cancellation is never part of the request JSON', () => {
    const error = thrownBy(() => prepareRequest(noSchema, { input: 'hi', signal: AbortSignal.abort() }, NOW));
    expect(error.code).toBe('INPUT_INVALID');
    expect(error.details?.['issues']).toEqual([
      { path: '/signal', message: expect.stringContaining('"signal"') as unknown },
    ]);
  });

  it('[SEED-FORBIDDEN-KEYS] lists the allowed keys when it refuses one, and never echoes the forbidden value', () => {
    const error = thrownBy(() => prepareRequest(noSchema, { input: 'hi', apiKey: 'sk-live-DO-NOT-ECHO' }, NOW));
    expect(error.message).toContain('input, fields, context, baseline, referenceTime, output');
    expect(JSON.stringify(error.toJSON())).not.toContain('sk-live-DO-NOT-ECHO');
  });
});

describe('prepareRequest accepts good requests', () => {
  it('[S02-REQ-INPUT] accepts an input of exactly maxInputChars characters after trimming', () => {
    const prepared = prepareRequest(tiny, { input: `   ${'y'.repeat(10)}\n` }, NOW);
    expect(prepared.normalizedInput).toBe('y'.repeat(10));
    // The material keeps the input as given; only the count is taken after trimming.
    expect(prepared.task.input.input).toBe(`   ${'y'.repeat(10)}\n`);
  });

  it('[S02-REQ-CONTEXT] accepts exactly maxContextItems context items of every role', () => {
    const context = [
      { role: 'user', text: 'a' },
      { role: 'system', text: 'b' },
    ];
    expect(prepareRequest(tiny, { input: 'hi', context }, NOW).task.input.context).toEqual(context);
    const fifty = Array.from({ length: 50 }, (_, i) => ({ role: 'assistant', text: `t${i}` }));
    expect(prepareRequest(noSchema, { input: 'hi', context: fifty }, NOW).task.input.context).toHaveLength(50);
  });

  it('[SEED-PARSE-INPUT] [S02-REQ-BASELINE] accepts all six request keys, with the effective of an earlier result as baseline', () => {
    const request = {
      input: '把颜色改成蓝色',
      fields: ['color', 'orderId'],
      context: [{ role: 'assistant', text: 'Which order?' }],
      baseline: seedEffective,
      referenceTime: '2026-01-01T09:00:00+08:00',
      output: { language: 'en' },
    };
    const prepared = prepareRequest(withSchema, request, NOW);
    expect(prepared.baseline).toEqual(seedEffective);
    expect(prepared.language).toBe('en');
    expect(prepared.referenceTime).toBe('2026-01-01T09:00:00+08:00');
    expect(prepared.explicitReferenceTime).toBe(true);
    expect(prepared.task.input.fields.map((f) => f.name)).toEqual(['color', 'orderId']);
    expect(prepared.task.input.baseline).toEqual(seedEffective);
  });

  it('[S02-REQ-FIELDS] treats fields as optional and an empty list as no selection', () => {
    expect(prepareRequest(withSchema, { input: 'hi' }, NOW).task.input.fields).toEqual([]);
    expect(prepareRequest(withSchema, { input: 'hi', fields: [] }, NOW).task.input.fields).toEqual([]);
    expect(prepareRequest(noSchema, { input: 'hi', fields: [] }, NOW).task.input.fields).toEqual([]);
  });

  it('[S02-REQ-REFTIME] defaults referenceTime to the time of prepare and marks it implicit', () => {
    const prepared = prepareRequest(noSchema, { input: 'tomorrow at 9' }, NOW);
    expect(prepared.referenceTime).toBe('2026-03-04T05:06:07.000Z');
    expect(prepared.task.input.referenceTime).toBe('2026-03-04T05:06:07.000Z');
    expect(prepared.explicitReferenceTime).toBe(false);
    const later = prepareRequest(noSchema, { input: 'tomorrow at 9' }, new Date('2027-12-31T23:59:59.500Z'));
    expect(later.task.input.referenceTime).toBe('2027-12-31T23:59:59.500Z');
  });

  it('[S02-REQ-REFTIME] keeps an explicit referenceTime with a Z or numeric offset as given', () => {
    for (const referenceTime of ['2026-01-01T00:00:00Z', '2026-01-01T08:30:00.250-05:30']) {
      const prepared = prepareRequest(noSchema, { input: 'hi', referenceTime }, NOW);
      expect(prepared.task.input.referenceTime).toBe(referenceTime);
      expect(prepared.explicitReferenceTime).toBe(true);
    }
  });

  it('[S02-TASK] builds a ModelTask of instructions, material and outputSchema, with no secrets in the material', () => {
    const secretInstance = resolveInstance({
      description: 'Order desk recognizer',
      instructions: 'Orders have numeric ids.',
      domains: ['orders'],
      schema: withSchemaFields(),
    });
    const prepared = prepareRequest(
      secretInstance,
      { input: 'Check order 123', fields: ['orderId', 'count'], context: [{ role: 'user', text: 'hello' }] },
      NOW,
    );
    const { task } = prepared;
    expect(Object.keys(task)).toEqual(['instructions', 'input', 'outputSchema']);
    expect(ModelTaskSchema.parse(task)).toEqual(task);
    expect(Object.keys(task.input)).toEqual(['input', 'fields', 'context', 'referenceTime', 'language']);
    expect(TaskMaterialSchema.parse(task.input)).toEqual(task.input);
    expect(task.input).toEqual({
      input: 'Check order 123',
      fields: [
        { name: 'orderId', type: 'string', description: 'the order number', required: true, pattern: '^[0-9]+$' },
        { name: 'count', type: 'integer', description: '', required: false, minimum: 1, maximum: 9 },
      ],
      context: [{ role: 'user', text: 'hello' }],
      referenceTime: '2026-03-04T05:06:07.000Z',
      language: 'en',
    });
    expect(typeof task.instructions).toBe('string');
    expect(task.instructions.length).toBeGreaterThan(200);
    expect(task.outputSchema['type']).toBe('object');
    // Only material: nothing about executors, keys, timeouts or limits reaches the model.
    const text = JSON.stringify(task.input);
    for (const word of ['executor', 'apiKey', 'baseUrl', 'timeoutMs', 'limits', 'maxInputChars', 'submissionToken'])
      expect(text).not.toContain(word);
  });

  it('[S02-TASK] puts the baseline into the material, between context and referenceTime, only when given', () => {
    const prepared = prepareRequest(noSchema, { input: 'also cancel it', baseline: seedEffective }, NOW);
    expect(Object.keys(prepared.task.input)).toEqual([
      'input',
      'fields',
      'context',
      'baseline',
      'referenceTime',
      'language',
    ]);
    expect(TaskMaterialSchema.parse(prepared.task.input).baseline).toEqual(seedEffective);
    expect('baseline' in prepareRequest(noSchema, { input: 'hi' }, NOW).task.input).toBe(false);
  });

  it('[S02-TASK] carries enum and default of a selected field into the material', () => {
    const prepared = prepareRequest(withSchema, { input: 'hi', fields: ['color'] }, NOW);
    expect(prepared.task.input.fields).toEqual([
      { name: 'color', type: 'enum', description: '', required: false, enum: ['red', 'blue'], default: 'red' },
    ]);
  });

  it('[S02-TASK] chooses the material language from output.language, else the instance, else the input', () => {
    expect(prepareRequest(noSchema, { input: '查询订单' }, NOW).task.input.language).toBe('zh-CN');
    expect(prepareRequest(noSchema, { input: 'check order' }, NOW).task.input.language).toBe('en');
    expect(prepareRequest(noSchema, { input: '查询订单', output: { language: 'en' } }, NOW).task.input.language).toBe(
      'en',
    );
    const zhInstance = resolveInstance({ language: 'zh-CN' });
    expect(prepareRequest(zhInstance, { input: 'check order' }, NOW).task.input.language).toBe('zh-CN');
  });
});

function withSchemaFields() {
  return {
    fields: {
      orderId: { type: 'string' as const, description: 'the order number', required: true, pattern: '^[0-9]+$' },
      count: { type: 'integer' as const, minimum: 1, maximum: 9 },
    },
  };
}
