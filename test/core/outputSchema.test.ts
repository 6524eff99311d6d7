import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildCandidateSchema, IntentCandidateSchema, toOutputSchema } from '../../src/core/candidate.js';
import { resolveInstance } from '../../src/core/instance.js';
import { prepareRequest, type PreparedRequest } from '../../src/core/request.js';
import { EffectiveStateSchema, type EffectiveState, type FieldType } from '../../src/core/schemas.js';
import { validateCandidate } from '../../src/core/validate.js';

// ---------------------------------------------------------------------------------------------------------------------
// A checker for OpenAI strict structured outputs (the subset of JSON Schema `strict: true` accepts)

type Schema = Record<string, unknown>;

const ALLOWED_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'anyOf',
  '$ref',
  '$defs',
  'description',
  'const',
  '$schema',
  // string and number keywords strict mode supports
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
]);
const JSON_TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean', 'null']);
const MAX_OBJECT_DEPTH = 10;

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

function resolveRef(root: Schema, ref: string): Schema | undefined {
  if (ref === '#') return root;
  const m = /^#\/\$defs\/([^/]+)$/.exec(ref);
  if (m === null) return undefined;
  const defs = root['$defs'];
  const target = isObject(defs) ? defs[m[1] ?? ''] : undefined;
  return isObject(target) ? target : undefined;
}

function typesOf(node: Schema): string[] {
  const t = node['type'];
  if (typeof t === 'string') return [t];
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === 'string');
  return [];
}

/** Every reason OpenAI strict mode would refuse `root`; empty when it is accepted. */
function strictProblems(root: unknown): string[] {
  const problems: string[] = [];
  if (!isObject(root)) return ['the root is not a JSON object'];
  if (root['type'] !== 'object') problems.push('#: the root must have type "object"');
  if ('anyOf' in root) problems.push('#: the root must not be an anyOf');

  const visit = (node: unknown, at: string, depth: number): void => {
    if (!isObject(node)) {
      problems.push(`${at}: not a schema object`);
      return;
    }
    for (const key of Object.keys(node))
      if (!ALLOWED_KEYWORDS.has(key)) problems.push(`${at}: unsupported keyword "${key}"`);
    if (at !== '#' && '$schema' in node) problems.push(`${at}: $schema below the root`);
    if (at !== '#' && '$defs' in node) problems.push(`${at}: $defs below the root`);

    if ('$ref' in node) {
      const ref = node['$ref'];
      if (typeof ref !== 'string' || resolveRef(root, ref) === undefined) problems.push(`${at}: $ref does not resolve`);
      return;
    }
    const type = node['type'];
    const types = typesOf(node);
    if (type !== undefined) {
      if (types.length === 0 || (Array.isArray(type) && types.length !== type.length))
        problems.push(`${at}: type must be a type name or a list of them`);
      for (const t of types) if (!JSON_TYPES.has(t)) problems.push(`${at}: unknown type "${t}"`);
    }
    if ('anyOf' in node) {
      const branches = node['anyOf'];
      if (!Array.isArray(branches) || branches.length === 0) problems.push(`${at}: anyOf must be a non-empty list`);
      else
        branches.forEach((b, i) => {
          visit(b, `${at}/anyOf/${i}`, depth);
        });
    }
    if ('enum' in node) {
      const values = node['enum'];
      if (!Array.isArray(values) || values.length === 0) problems.push(`${at}: enum must be a non-empty list`);
      else if (values.some((v) => v !== null && typeof v === 'object')) problems.push(`${at}: enum of non-scalars`);
    }
    if (type === undefined && !('anyOf' in node) && !('enum' in node) && !('const' in node))
      problems.push(`${at}: says nothing about the value (no type, anyOf, enum, const or $ref)`);

    const objectish = 'properties' in node || 'required' in node || 'additionalProperties' in node;
    if (types.includes('object')) {
      if (depth > MAX_OBJECT_DEPTH) problems.push(`${at}: objects nested deeper than ${MAX_OBJECT_DEPTH}`);
      const props = node['properties'];
      if (!isObject(props)) problems.push(`${at}: an object schema needs "properties"`);
      if (node['additionalProperties'] !== false) problems.push(`${at}: additionalProperties must be false`);
      const keys = isObject(props) ? Object.keys(props) : [];
      const required = node['required'];
      if (!Array.isArray(required)) problems.push(`${at}: "required" must list every property`);
      else {
        const missing = keys.filter((k) => !required.includes(k));
        const extra = required.filter((k) => typeof k !== 'string' || !keys.includes(k));
        if (missing.length > 0) problems.push(`${at}: properties not required: ${missing.join(', ')}`);
        if (extra.length > 0) problems.push(`${at}: required names no property: ${extra.join(', ')}`);
        if (new Set(required).size !== required.length) problems.push(`${at}: "required" repeats a name`);
      }
      if (isObject(props))
        for (const [name, sub] of Object.entries(props)) visit(sub, `${at}/properties/${name}`, depth + 1);
    } else if (objectish) problems.push(`${at}: object keywords on a schema that is not an object`);
    if (types.includes('array')) {
      if (!('items' in node)) problems.push(`${at}: an array schema needs "items"`);
      else visit(node['items'], `${at}/items`, depth);
    } else if ('items' in node) problems.push(`${at}: items on a schema that is not an array`);
  };

  visit(root, '#', 1);
  const defs = root['$defs'];
  if (defs !== undefined) {
    if (!isObject(defs)) problems.push('#: $defs must be an object');
    else for (const [name, def] of Object.entries(defs)) visit(def, `#/$defs/${name}`, 2);
  }
  return problems;
}

/** JSON Schema semantics of the same subset: does `value` validate against `node`? */
function accepts(root: Schema, node: Schema, value: unknown): boolean {
  if (typeof node['$ref'] === 'string') {
    const target = resolveRef(root, node['$ref']);
    return target !== undefined && accepts(root, target, value);
  }
  const anyOf = node['anyOf'];
  if (Array.isArray(anyOf) && !anyOf.some((b) => isObject(b) && accepts(root, b, value))) return false;
  if ('const' in node && JSON.stringify(node['const']) !== JSON.stringify(value)) return false;
  const values = node['enum'];
  if (Array.isArray(values) && !values.includes(value)) return false;
  const types = typesOf(node);
  if (types.length > 0 && !types.some((t) => hasType(t, value))) return false;
  if (typeof value === 'string' && typeof node['pattern'] === 'string' && !new RegExp(node['pattern'], 'u').test(value))
    return false;
  if (typeof value === 'number') {
    if (typeof node['minimum'] === 'number' && value < node['minimum']) return false;
    if (typeof node['maximum'] === 'number' && value > node['maximum']) return false;
  }
  if (isObject(value) && types.includes('object')) {
    const props = isObject(node['properties']) ? node['properties'] : {};
    const required = Array.isArray(node['required']) ? (node['required'] as string[]) : [];
    if (!required.every((k) => k in value)) return false;
    for (const [key, v] of Object.entries(value)) {
      const sub = props[key];
      if (isObject(sub)) {
        if (!accepts(root, sub, v)) return false;
      } else if (node['additionalProperties'] === false) return false;
    }
  }
  if (Array.isArray(value) && types.includes('array') && isObject(node['items'])) {
    const items = node['items'];
    if (!value.every((v) => accepts(root, items, v))) return false;
  }
  return true;
}

function hasType(type: string, value: unknown): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'boolean':
      return typeof value === 'boolean';
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return Number.isInteger(value);
    case 'object':
      return isObject(value);
    case 'array':
      return Array.isArray(value);
    default:
      return false;
  }
}

const outputAccepts = (schema: Schema, value: unknown): boolean => accepts(schema, schema, value);

/** The simplest value the schema admits, taking the first or the null branch of every choice; arrays stay empty. */
function sample(root: Schema, node: Schema, preferNull: boolean): unknown {
  if (typeof node['$ref'] === 'string') return sample(root, resolveRef(root, node['$ref']) ?? {}, preferNull);
  const anyOf = node['anyOf'];
  if (Array.isArray(anyOf)) {
    const branches = anyOf.filter(isObject);
    const nullBranch = branches.find((b) => b['type'] === 'null');
    return sample(root, (preferNull ? nullBranch : undefined) ?? branches[0] ?? {}, preferNull);
  }
  const values = node['enum'];
  if (Array.isArray(values)) return values[0];
  const types = typesOf(node);
  const type = preferNull && types.includes('null') ? 'null' : types[0];
  switch (type) {
    case 'object': {
      const props = isObject(node['properties']) ? node['properties'] : {};
      return Object.fromEntries(
        Object.entries(props).map(([k, v]) => [k, isObject(v) ? sample(root, v, preferNull) : null]),
      );
    }
    case 'array':
      return [];
    case 'string':
      return 'x';
    case 'integer':
      return 3;
    case 'number':
      return 2.5;
    case 'boolean':
      return true;
    default:
      return null;
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Tasks to check

const NOW = new Date('2026-03-04T05:06:07.000Z');
const ALL_TYPES: Record<string, { type: FieldType; [k: string]: unknown }> = {
  orderId: { type: 'string', description: 'the order number', pattern: '^[0-9]+$', required: true },
  quantity: { type: 'integer', minimum: 1, maximum: 99, default: 1 },
  price: { type: 'number', minimum: 0 },
  express: { type: 'boolean' },
  deliveryDate: { type: 'date' },
  pickupAt: { type: 'datetime' },
  color: { type: 'enum', enum: ['red', 'blue'] },
};
const JSON_TYPE_OF: Record<FieldType, string> = {
  string: 'string',
  integer: 'integer',
  number: 'number',
  boolean: 'boolean',
  date: 'string',
  datetime: 'string',
  enum: 'string',
};

const noSchema = resolveInstance({});
const typed = resolveInstance({ schema: { fields: ALL_TYPES } });
const baseline: EffectiveState = EffectiveStateSchema.parse(
  (
    JSON.parse(readFileSync(new URL('../fixtures/seed-executor-reply.json', import.meta.url), 'utf8')) as {
      structuredContent: { effective: unknown };
    }
  ).structuredContent.effective,
);

const tasks: [string, PreparedRequest][] = [
  ['no schema', prepareRequest(noSchema, { input: 'check order 123' }, NOW)],
  ['a schema but no selected field', prepareRequest(typed, { input: 'check order 123' }, NOW)],
  [
    'fields of every type',
    prepareRequest(typed, { input: 'check order 123', fields: Object.keys(ALL_TYPES).reverse() }, NOW),
  ],
  ['one selected field', prepareRequest(typed, { input: 'check order 123', fields: ['quantity'] }, NOW)],
  ['a baseline and no schema', prepareRequest(noSchema, { input: 'cancel it too', baseline }, NOW)],
  [
    'a baseline and selected fields',
    prepareRequest(typed, { input: 'cancel it too', baseline, fields: ['color', 'orderId'] }, NOW),
  ],
];

const propertiesOf = (schema: Schema): Schema => schema['properties'] as Schema;
/** The object branch of the nullable `fields` property. */
function fieldsObject(schema: Schema): Schema {
  const fields = propertiesOf(schema)['fields'] as Schema;
  const branch = (fields['anyOf'] as Schema[]).find((b) => b['type'] === 'object');
  expect(branch).toBeDefined();
  return branch!;
}

describe('the strict-mode checker itself', () => {
  const good = tasks[2]![1].task.outputSchema;

  it.each<[string, (s: Schema) => void]>([
    ['oneOf', (s) => (s['oneOf'] = [{ type: 'string' }])],
    ['allOf', (s) => (propertiesOf(s)['turnKind'] = { allOf: [{ type: 'string' }] })],
    ['not', (s) => (propertiesOf(s)['coverage'] = { type: 'string', not: { const: 'none' } })],
    ['if', (s) => (s['if'] = { properties: {} })],
    ['patternProperties', (s) => (s['patternProperties'] = { '^x': { type: 'string' } })],
    ['minItems', (s) => (propertiesOf(s)['intents'] = { type: 'array', items: { type: 'string' }, minItems: 1 })],
    ['default', (s) => (propertiesOf(s)['turnKind'] = { type: 'string', default: 'request' })],
    ['a property left out of required', (s) => (s['required'] = (s['required'] as string[]).slice(1))],
    ['additionalProperties missing', (s) => delete s['additionalProperties']],
    ['additionalProperties true', (s) => (s['additionalProperties'] = true)],
    ['a dangling $ref', (s) => (propertiesOf(s)['intents'] = { type: 'array', items: { $ref: '#/$defs/Nope' } })],
    ['a root that is not an object', (s) => (s['type'] = 'array')],
    ['an array without items', (s) => (propertiesOf(s)['intents'] = { type: 'array' })],
    ['an unknown type', (s) => (propertiesOf(s)['coverage'] = { type: 'text' })],
  ])('catches %s', (_what, mutate) => {
    expect(strictProblems(good)).toEqual([]);
    const mutant = structuredClone(good);
    mutate(mutant);
    expect(strictProblems(mutant).length).toBeGreaterThan(0);
  });

  it('catches a free-form map (a record) as zod renders it', () => {
    const record = toOutputSchemaOf(z.object({ m: z.record(z.string(), z.string()) }).strict());
    expect(strictProblems(record).length).toBeGreaterThan(0);
  });

  it('accepts and refuses values like a JSON Schema validator', () => {
    const schema = toOutputSchemaOf(
      z.object({ a: z.int().nullable(), b: z.array(z.enum(['x', 'y'])), c: z.string().nullish() }).strict(),
    );
    expect(outputAccepts(schema, { a: 1, b: ['x'], c: null })).toBe(true);
    expect(outputAccepts(schema, { a: null, b: [], c: 'z' })).toBe(true);
    expect(outputAccepts(schema, { a: 1.5, b: [], c: null })).toBe(false);
    expect(outputAccepts(schema, { a: 1, b: ['z'], c: null })).toBe(false);
    expect(outputAccepts(schema, { a: 1, b: [] })).toBe(false);
    expect(outputAccepts(schema, { a: 1, b: [], c: null, d: 0 })).toBe(false);
  });
});

function toOutputSchemaOf(schema: z.ZodType): Schema {
  return toOutputSchema(schema);
}

describe('outputSchema', () => {
  it.each(tasks)('[S02-STRICT] is accepted by OpenAI strict structured outputs: %s', (_what, prepared) => {
    const schema = prepared.task.outputSchema;
    expect(strictProblems(schema)).toEqual([]);
    expect(schema['$schema']).toBe('https://json-schema.org/draft/2020-12/schema');
    // Strict mode fails on a schema it cannot serialise: the whole thing must be plain JSON.
    expect(JSON.parse(JSON.stringify(schema))).toEqual(schema);
  });

  it('the general candidate schema is strict-compatible except for its free-form fields map', () => {
    const problems = strictProblems(toOutputSchema(IntentCandidateSchema));
    expect(problems.length).toBeGreaterThan(0);
    for (const p of problems) expect(p).toMatch(/properties\/fields/);
  });

  it('[S02-OUTPUTSCHEMA] lists exactly the selected fields, in request order, with their JSON types', () => {
    const order = Object.keys(ALL_TYPES).reverse();
    const schema = tasks[2]![1].task.outputSchema;
    const fields = fieldsObject(schema);
    expect(Object.keys(fields['properties'] as Schema)).toEqual(order);
    expect(fields['required']).toEqual(order);
    for (const name of order) {
      const jsonType = JSON_TYPE_OF[ALL_TYPES[name]!.type];
      const entry = (fields['properties'] as Schema)[name] as Schema;
      const props = entry['properties'] as Schema;
      expect(props['value'], name).toMatchObject({ type: [jsonType, 'null'] });
      const candidates = (props['candidates'] as Schema)['anyOf'] as Schema[];
      expect(candidates[0], name).toEqual({ type: 'array', items: { type: jsonType } });
      expect((props['status'] as Schema)['enum']).toEqual(['filled', 'missing', 'ambiguous']);
    }
  });

  it('[S02-OUTPUTSCHEMA] keeps content rules (pattern, enum, range) out of the schema and carries field descriptions', () => {
    const fields = fieldsObject(tasks[2]![1].task.outputSchema);
    const text = JSON.stringify(fields);
    expect(text).not.toContain('"pattern"');
    expect(text).not.toContain('"minimum"');
    expect(text).not.toContain('"maximum"');
    expect(text).not.toContain('"blue"');
    expect(((fields['properties'] as Schema)['orderId'] as Schema)['description']).toBe('the order number');
  });

  it('[S02-OUTPUTSCHEMA] lists no field when none is selected', () => {
    for (const [, prepared] of [tasks[0]!, tasks[1]!, tasks[4]!]) {
      const fields = fieldsObject(prepared.task.outputSchema);
      expect(fields['properties']).toEqual({});
      expect(fields['required']).toEqual([]);
    }
    expect(fieldsObject(tasks[3]![1].task.outputSchema)['required']).toEqual(['quantity']);
  });

  it('[S02-OUTPUTSCHEMA] has baselineChanges only when a baseline was given', () => {
    const top = ['turnKind', 'coverage', 'intents', 'constraints', 'relations', 'unresolved', 'fields'];
    for (const [what, prepared] of tasks) {
      const schema = prepared.task.outputSchema;
      const expected = prepared.baseline === undefined ? top : [...top, 'baselineChanges'];
      expect(Object.keys(propertiesOf(schema)), what).toEqual(expected);
      expect(schema['required'], what).toEqual(expected);
    }
    expect(tasks.filter(([, p]) => p.baseline !== undefined)).toHaveLength(2);
  });

  it('[S02-SCHEMAS] is derived from the zod candidate schema: built from it, and admitting exactly what it admits', () => {
    for (const [what, prepared] of tasks) {
      const fields = prepared.plan.fields.map((f) => ({ name: f.name, type: f.type, description: f.spec.description }));
      const zodSchema = buildCandidateSchema(fields, prepared.baseline !== undefined);
      const schema = prepared.task.outputSchema;
      // The task carries the JSON Schema of the zod schema the core validates with, not one of its own.
      expect(schema, what).toEqual(toOutputSchema(zodSchema));
      // ... and the rendering loses or adds no rule: on a full candidate, the simplest samples and candidates one defect
      // away (extra key, bad enum, missing key, mistyped field), the JSON Schema and the zod schema agree every time.
      const values = [
        fullCandidate(prepared),
        sample(schema, schema, true),
        sample(schema, schema, false),
        ...brokenCandidates(prepared),
        ...mistypedFields(prepared),
      ];
      for (const value of values)
        expect(outputAccepts(schema, value), `${what}: ${JSON.stringify(value)}`).toBe(
          zodSchema.safeParse(value).success,
        );
      expect(values.filter((v) => !zodSchema.safeParse(v).success).length, what).toBeGreaterThanOrEqual(5);
    }
  });

  it('[S02-SCHEMAS] reuses one outputSchema per request shape', () => {
    const again = prepareRequest(typed, { input: 'another order', fields: ['quantity'] }, NOW);
    expect(again.task.outputSchema).toBe(tasks[3]![1].task.outputSchema);
    const other = prepareRequest(typed, { input: 'another order', fields: ['price'] }, NOW);
    expect(other.task.outputSchema).not.toEqual(tasks[3]![1].task.outputSchema);
  });
});

/** A candidate using every part of the schema, with every key present. */
function fullCandidate(prepared: PreparedRequest): Record<string, unknown> {
  const withFields = prepared.plan.fields.length > 0;
  const value: Record<string, unknown> = {
    turnKind: 'request',
    coverage: 'partial',
    intents: [
      {
        ref: 'look',
        domain: 'orders',
        action: 'query',
        target: 'order 123',
        goal: 'Look up order 123.',
        understanding: 'clear',
        constraints: [{ kind: 'prohibition', text: 'do not cancel' }],
        inputs: [{ name: 'orderId', value: '123' }],
        references: [{ kind: 'input', id: null, text: 'order 123' }],
        children: [
          {
            ref: 'notify',
            domain: null,
            action: 'notify',
            target: null,
            goal: 'Tell the user.',
            understanding: 'partial',
            constraints: null,
            inputs: null,
            references: null,
            children: null,
          },
        ],
      },
    ],
    constraints: [{ kind: 'deadline', text: 'by Friday' }],
    relations: [{ kind: 'sequence', from: 'look', to: 'notify', text: null }],
    unresolved: [{ kind: 'ambiguity', text: 'Which shop?', intentRef: 'look', options: ['north', 'south'] }],
    fields: withFields
      ? Object.fromEntries(
          prepared.plan.fields.map((f) => [
            f.name,
            { status: 'filled', value: typedValue(f.type), candidates: null, evidence: 'order 123' },
          ]),
        )
      : null,
  };
  if (prepared.baseline !== undefined)
    value['baselineChanges'] = [
      {
        operation: 'update',
        target: { kind: 'intent', id: 'intent-1' },
        set: {
          domain: null,
          action: null,
          target: null,
          goal: 'Cancel order 123.',
          understanding: null,
          kind: null,
          text: null,
        },
        text: 'cancel it too',
      },
    ];
  return value;
}

/** Candidates one defect away from {@link fullCandidate}: each must be refused. */
function brokenCandidates(prepared: PreparedRequest): Record<string, unknown>[] {
  const base = fullCandidate(prepared);
  const broken: Record<string, unknown>[] = [
    { ...base, extra: 1 },
    { ...base, coverage: 'most' },
    { ...base, intents: [{ ...(base['intents'] as object[])[0], understanding: 'sure' }] },
    { ...base, constraints: [{ kind: 'deadline' }] },
    { ...base, baselineChanges: [] },
  ];
  if (prepared.baseline !== undefined) broken.pop();
  if (prepared.plan.fields.length > 0) {
    const [first] = prepared.plan.fields;
    broken.push({
      ...base,
      fields: { ...(base['fields'] as object), [first!.name]: { status: 'filled', value: [] } },
    });
  } else broken.push({ ...base, fields: { orderId: { status: 'missing' } } });
  return broken;
}

/** {@link fullCandidate} with one selected field's value of another JSON type, for each selected field. */
function mistypedFields(prepared: PreparedRequest): Record<string, unknown>[] {
  const base = fullCandidate(prepared);
  const wrong: Record<FieldType, unknown> = {
    string: 123,
    integer: 2.5,
    number: '9.5',
    boolean: 'false',
    date: 20260305,
    datetime: true,
    enum: ['blue'],
  };
  return prepared.plan.fields.map((f) => ({
    ...base,
    fields: {
      ...(base['fields'] as object),
      [f.name]: { status: 'filled', value: wrong[f.type], candidates: null, evidence: 'order 123' },
    },
  }));
}

describe('what the outputSchema accepts, validateCandidate accepts', () => {
  it.each(tasks)('[S02-STRICT] a full candidate and the simplest samples: %s', (_what, prepared) => {
    const schema = prepared.task.outputSchema;
    const values = [fullCandidate(prepared), sample(schema, schema, true), sample(schema, schema, false)];
    for (const value of values) {
      expect(outputAccepts(schema, value)).toBe(true);
      expect(validateCandidate(prepared, JSON.stringify(value))).toMatchObject({ ok: true });
    }
  });

  it.each(tasks)('[S02-STRICT] what the outputSchema refuses, validateCandidate refuses: %s', (_what, prepared) => {
    const schema = prepared.task.outputSchema;
    const broken = brokenCandidates(prepared);
    for (const value of broken) {
      expect(outputAccepts(schema, value)).toBe(false);
      expect(validateCandidate(prepared, JSON.stringify(value)).ok).toBe(false);
    }
  });
});

function typedValue(type: FieldType): string | number | boolean {
  switch (type) {
    case 'integer':
      return 2;
    case 'number':
      return 9.5;
    case 'boolean':
      return false;
    case 'date':
      return '2026-03-05';
    case 'datetime':
      return '2026-03-05T09:00:00+08:00';
    case 'enum':
      return 'blue';
    case 'string':
      return '123';
  }
}
