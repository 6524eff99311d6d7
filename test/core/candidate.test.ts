import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { resolveInstance } from '../../src/core/instance.js';
import { prepareRequest } from '../../src/core/request.js';
import { EffectiveStateSchema, FeedbackItemSchema, type EffectiveState } from '../../src/core/schemas.js';
import { stripCodeFence, validateCandidate, type CandidateCheck } from '../../src/core/validate.js';

const NOW = new Date('2026-03-04T05:06:07.000Z');
const JSON_POINTER = /^(\/([^~/]|~[01])*)*$/;

const fixture = (name: string): string => readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8');

const instance = resolveInstance({
  schema: {
    fields: {
      n: { type: 'integer', minimum: 1, maximum: 9 },
      s: { type: 'string', pattern: '^[0-9]+$', required: true },
      e: { type: 'enum', enum: ['red', 'blue'] },
      b: { type: 'boolean' },
      r: { type: 'number', maximum: 10 },
      d: { type: 'date' },
      t: { type: 'datetime' },
    },
  },
});

const baseline: EffectiveState = EffectiveStateSchema.parse(
  (JSON.parse(fixture('seed-executor-reply.json')) as { structuredContent: { effective: unknown } }).structuredContent
    .effective,
);

/** Selects n and s (not e): `fields` must hold exactly n and s. */
const prepared = prepareRequest(instance, { input: 'order 123, two of them', fields: ['n', 's'] }, NOW);
const preparedAll = prepareRequest(instance, { input: 'order 123', fields: ['n', 's', 'e', 'b', 'r', 'd', 't'] }, NOW);
const preparedBaseline = prepareRequest(instance, { input: 'also cancel it', baseline }, NOW);
const preparedSeed = prepareRequest(
  resolveInstance({}),
  (JSON.parse(fixture('seed-executor-request.json')) as { params: { arguments: unknown } }).params.arguments,
  NOW,
);

type Json = Record<string, unknown>;

function intent(extra: Json = {}): Json {
  return {
    domain: 'orders',
    action: 'query',
    target: 'order 123',
    goal: 'Look up order 123.',
    understanding: 'clear',
    ...extra,
  };
}

function candidate(extra: Json = {}): Json {
  return {
    turnKind: 'request',
    coverage: 'complete',
    intents: [intent()],
    fields: { n: { status: 'filled', value: 2 }, s: { status: 'filled', value: '123', evidence: '123' } },
    ...extra,
  };
}

function issuesOf(check: CandidateCheck) {
  expect(check.ok).toBe(false);
  if (check.ok) return expect.fail('expected format issues');
  const issues = FeedbackItemSchema.array().min(1).max(20).parse(check.issues);
  for (const issue of issues) {
    expect(issue.path).toMatch(JSON_POINTER);
    expect(issue.message.length).toBeGreaterThan(5);
  }
  return issues;
}

interface Malformed {
  what: string;
  text: string;
  /** Defaults to `prepared` (fields n and s, no baseline). */
  on?: typeof prepared;
  pointer: string;
}

const malformed: Malformed[] = [
  { what: 'prose instead of JSON', text: 'The user wants to look up order 123.', pointer: '' },
  { what: 'truncated JSON', text: JSON.stringify(candidate()).slice(0, 40), pointer: '' },
  { what: 'two JSON documents', text: JSON.stringify(candidate()) + '\n' + JSON.stringify(candidate()), pointer: '' },
  { what: 'a JSON array', text: JSON.stringify([candidate()]), pointer: '' },
  { what: 'a JSON number', text: '42', pointer: '' },
  { what: 'a JSON string', text: '"request"', pointer: '' },
  { what: 'JSON null', text: 'null', pointer: '' },
  { what: 'an empty text', text: '', pointer: '' },
  { what: 'a missing required key', text: JSON.stringify({ ...candidate(), intents: undefined }), pointer: '/intents' },
  {
    what: 'a missing required key inside an intent',
    text: JSON.stringify(candidate({ intents: [{ ...intent(), action: undefined }] })),
    pointer: '/intents/0/action',
  },
  { what: 'a wrong type at the top', text: JSON.stringify(candidate({ intents: 'query order' })), pointer: '/intents' },
  {
    what: 'a wrong type inside an intent',
    text: JSON.stringify(candidate({ intents: [intent({ goal: 7 })] })),
    pointer: '/intents/0/goal',
  },
  { what: 'an unknown top-level key', text: JSON.stringify(candidate({ confidence: 0.9 })), pointer: '/confidence' },
  {
    what: 'an unknown key in an intent',
    text: JSON.stringify(candidate({ intents: [intent({ priority: 'high' })] })),
    pointer: '/intents/0/priority',
  },
  {
    what: 'an unknown key in a child intent',
    text: JSON.stringify(candidate({ intents: [intent({ children: [intent({ id: 'intent-9' })] })] })),
    pointer: '/intents/0/children/0/id',
  },
  {
    what: 'an unknown key in a field entry',
    text: JSON.stringify(candidate({ fields: { n: { status: 'missing', note: 'x' }, s: { status: 'missing' } } })),
    pointer: '/fields/n/note',
  },
  {
    what: 'a turnKind outside its enum',
    text: JSON.stringify(candidate({ turnKind: 'question' })),
    pointer: '/turnKind',
  },
  {
    what: 'an understanding outside its enum',
    text: JSON.stringify(candidate({ intents: [intent({ understanding: 'certain' })] })),
    pointer: '/intents/0/understanding',
  },
  {
    what: 'a constraint kind outside its enum',
    text: JSON.stringify(candidate({ constraints: [{ kind: 'wish', text: 'fast' }] })),
    pointer: '/constraints/0/kind',
  },
  {
    what: 'a field status outside its enum (invalid is the core’s, not the model’s)',
    text: JSON.stringify(candidate({ fields: { n: { status: 'invalid', value: 2 }, s: { status: 'missing' } } })),
    pointer: '/fields/n/status',
  },
  {
    what: 'a relation whose to points nowhere',
    text: JSON.stringify(
      candidate({
        intents: [intent({ ref: 'a' }), intent({ ref: 'b' })],
        relations: [{ kind: 'sequence', from: 'a', to: 'c' }],
      }),
    ),
    pointer: '/relations/0/to',
  },
  {
    what: 'a relation whose from points nowhere',
    text: JSON.stringify(
      candidate({ intents: [intent({ ref: 'a' })], relations: [{ kind: 'dependency', from: 'intent-1', to: 'a' }] }),
    ),
    pointer: '/relations/0/from',
  },
  {
    what: 'an unresolved intentRef that points nowhere',
    text: JSON.stringify(
      candidate({ unresolved: [{ kind: 'ambiguity', text: 'Which order?', intentRef: 'x', options: ['1', '2'] }] }),
    ),
    pointer: '/unresolved/0/intentRef',
  },
  {
    what: 'a duplicate ref (also among children)',
    text: JSON.stringify(candidate({ intents: [intent({ ref: 'a', children: [intent({ ref: 'a' })] })] })),
    pointer: '/intents/0/children/0/ref',
  },
  {
    what: 'a baseline change naming an id the baseline does not have',
    on: preparedBaseline,
    text: JSON.stringify({
      ...candidate({ fields: null }),
      baselineChanges: [{ operation: 'remove', target: { kind: 'intent', id: 'intent-7' } }],
    }),
    pointer: '/baselineChanges/0/target/id',
  },
  {
    what: 'a baseline change naming an intent id as a constraint',
    on: preparedBaseline,
    text: JSON.stringify({
      ...candidate({ fields: null }),
      baselineChanges: [{ operation: 'update', target: { kind: 'constraint', id: 'intent-1' }, set: { text: 'x' } }],
    }),
    pointer: '/baselineChanges/0/target/id',
  },
  {
    what: 'baselineChanges without a baseline (an unknown key)',
    text: JSON.stringify(
      candidate({ baselineChanges: [{ operation: 'remove', target: { kind: 'intent', id: 'intent-1' } }] }),
    ),
    pointer: '/baselineChanges',
  },
  {
    what: 'baselineChanges: null without a baseline (still an unknown key)',
    text: JSON.stringify(candidate({ baselineChanges: null })),
    pointer: '/baselineChanges',
  },
  {
    what: 'an integer field given 1.5',
    text: JSON.stringify(candidate({ fields: { n: { status: 'filled', value: 1.5 }, s: { status: 'missing' } } })),
    pointer: '/fields/n/value',
  },
  {
    what: 'an integer field given "3"',
    text: JSON.stringify(candidate({ fields: { n: { status: 'filled', value: '3' }, s: { status: 'missing' } } })),
    pointer: '/fields/n/value',
  },
  {
    what: 'a string field given a number',
    text: JSON.stringify(candidate({ fields: { n: { status: 'missing' }, s: { status: 'filled', value: 123 } } })),
    pointer: '/fields/s/value',
  },
  {
    what: 'an ambiguous integer field with a string candidate',
    text: JSON.stringify(
      candidate({ fields: { n: { status: 'ambiguous', candidates: [2, 'three'] }, s: { status: 'missing' } } }),
    ),
    pointer: '/fields/n/candidates/1',
  },
  {
    what: 'a boolean field given "yes"',
    on: preparedAll,
    text: JSON.stringify(candidate({ fields: allFields({ b: { status: 'filled', value: 'yes' } }) })),
    pointer: '/fields/b/value',
  },
  {
    what: 'a filled field with a null value',
    text: JSON.stringify(candidate({ fields: { n: { status: 'filled', value: null }, s: { status: 'missing' } } })),
    pointer: '/fields/n/value',
  },
  {
    what: 'a filled field with no value',
    text: JSON.stringify(candidate({ fields: { n: { status: 'missing' }, s: { status: 'filled', evidence: '123' } } })),
    pointer: '/fields/s/value',
  },
  {
    what: 'an unselected field in fields',
    text: JSON.stringify(
      candidate({ fields: { n: { status: 'missing' }, s: { status: 'missing' }, e: { status: 'missing' } } }),
    ),
    pointer: '/fields/e',
  },
  {
    what: 'fields leaving out a selected field',
    text: JSON.stringify(candidate({ fields: { n: { status: 'missing' } } })),
    pointer: '/fields/s',
  },
  {
    what: 'fields on a request that selected none',
    on: preparedBaseline,
    text: JSON.stringify(candidate({ fields: { n: { status: 'missing' } } })),
    pointer: '/fields/n',
  },
];

function allFields(overrides: Json = {}): Json {
  const out: Json = {};
  for (const name of ['n', 's', 'e', 'b', 'r', 'd', 't']) out[name] = { status: 'missing', value: null };
  return { ...out, ...overrides };
}

describe('validateCandidate: format errors', () => {
  it.each(malformed)(
    '[S02-FORMAT-ERRORS] $what → ok: false with feedback at its JSON Pointer',
    ({ text, on, pointer }) => {
      const issues = issuesOf(validateCandidate(on ?? prepared, text));
      expect(issues.map((i) => i.path)).toContain(pointer);
    },
  );

  it('[S02-FORMAT-ERRORS] is deterministic: the same text gives the same feedback', () => {
    const text = JSON.stringify(candidate({ turnKind: 'chat', confidence: 1 }));
    expect(validateCandidate(prepared, text)).toEqual(validateCandidate(prepared, text));
  });

  it('[S02-FEEDBACK] caps schema feedback at 20 items when the candidate has 30 problems', () => {
    const intents = Array.from({ length: 30 }, (_, i) => intent({ [`extra${i}`]: true }));
    const issues = issuesOf(validateCandidate(prepared, JSON.stringify(candidate({ intents }))));
    expect(issues).toHaveLength(20);
    expect(issues[0]).toEqual({ path: '/intents/0/extra0', message: expect.stringContaining('extra0') as unknown });
  });

  it('[S02-FEEDBACK] caps reference feedback at 20 items when 30 relation ends dangle', () => {
    const relations = Array.from({ length: 15 }, (_, i) => ({ kind: 'sequence', from: `f${i}`, to: `t${i}` }));
    const issues = issuesOf(validateCandidate(prepared, JSON.stringify(candidate({ relations }))));
    expect(issues).toHaveLength(20);
    expect(issues.map((i) => i.path).slice(0, 2)).toEqual(['/relations/0/from', '/relations/0/to']);
  });

  it('[S02-FEEDBACK] words messages for a model to act on: expected types and allowed values', () => {
    const [typeIssue] = issuesOf(validateCandidate(prepared, JSON.stringify(candidate({ coverage: 3 }))));
    expect(typeIssue?.message).toMatch(/complete|partial|none|string/);
    const [enumIssue] = issuesOf(validateCandidate(prepared, JSON.stringify(candidate({ turnKind: 'chat' }))));
    expect(enumIssue?.message).toContain('"request"');
    expect(enumIssue?.message).toContain('"smalltalk"');
    const [keyIssue] = issuesOf(validateCandidate(prepared, JSON.stringify(candidate({ confidence: 1 }))));
    expect(keyIssue?.message).toMatch(/remove/i);
  });

  const SECRET = 'sk-live-7f3a9c2e-DO-NOT-LEAK';

  it('[S02-FEEDBACK] [S06-NO-LEAK] never quotes the candidate’s free text or mistyped values in feedback', () => {
    const text = JSON.stringify({
      turnKind: SECRET,
      coverage: SECRET,
      intents: [
        intent({ goal: SECRET, action: SECRET, understanding: SECRET, domain: 42 }),
        intent({ inputs: [{ name: 'token', value: SECRET }], references: [{ kind: SECRET, text: SECRET }] }),
      ],
      constraints: [{ kind: SECRET, text: SECRET }],
      unresolved: [{ kind: 'ambiguity', text: SECRET, options: [SECRET, 5] }],
      fields: {
        n: { status: 'filled', value: SECRET, evidence: SECRET },
        s: { status: SECRET, value: SECRET, candidates: [SECRET, 7] },
      },
      extra: SECRET,
    });
    const issues = issuesOf(validateCandidate(prepared, text));
    expect(issues.length).toBeGreaterThanOrEqual(8);
    for (const issue of issues) expect(issue.message).not.toContain('sk-live');
    // A JSON syntax error quotes nothing of the text either (V8's own message does).
    const broken = issuesOf(validateCandidate(prepared, `{"goal": "${SECRET}" "oops"}`));
    for (const issue of broken) expect(issue.message).not.toContain('sk-live');
  });

  it('[S06-NO-LEAK] never quotes the candidate’s ref, intentRef, input names or baseline ids in feedback', () => {
    const text = JSON.stringify({
      ...candidate({ fields: null }),
      intents: [
        intent({
          ref: SECRET,
          inputs: [
            { name: SECRET, value: 1 },
            { name: SECRET, value: 2 },
          ],
        }),
        intent({ ref: SECRET }),
      ],
      relations: [{ kind: 'sequence', from: `${SECRET}-from`, to: SECRET }],
      unresolved: [{ kind: 'missing_information', text: 'Which one?', intentRef: `${SECRET}-ref` }],
      baselineChanges: [{ operation: 'remove', target: { kind: 'intent', id: `${SECRET}-id` } }],
    });
    const issues = issuesOf(validateCandidate(preparedBaseline, text));
    expect(issues.map((i) => i.path)).toEqual([
      '/intents/0/inputs/1/name',
      '/intents/1/ref',
      '/relations/0/from',
      '/unresolved/0/intentRef',
      '/baselineChanges/0/target/id',
    ]);
    expect(issues.filter((i) => i.message.includes('sk-live'))).toEqual([]);
  });
});

describe('validateCandidate: code fences', () => {
  const body = JSON.stringify(candidate(), null, 2);
  const plain = validateCandidate(prepared, body);

  it('[S02-FENCE] strips one surrounding ```json fence without an error', () => {
    expect(plain.ok).toBe(true);
    expect(validateCandidate(prepared, '```json\n' + body + '\n```')).toEqual(plain);
    expect(validateCandidate(prepared, '\n  ```json\r\n' + body + '\r\n```  \n')).toEqual(plain);
  });

  it('[S02-FENCE] strips one bare ``` fence without an error', () => {
    expect(validateCandidate(prepared, '```\n' + body + '\n```')).toEqual(plain);
    expect(stripCodeFence('```\n{"a":1}\n```')).toBe('{"a":1}');
    expect(stripCodeFence('```json\n{"a":1}\n```')).toBe('{"a":1}');
  });

  it('[S02-FENCE] leaves unfenced text alone', () => {
    expect(stripCodeFence(body)).toBe(body);
  });

  it.each([
    ['two fenced documents', '```json\n' + body + '\n```\n```json\n' + body + '\n```'],
    ['prose before the fence', 'Here is the candidate:\n```json\n' + body + '\n```'],
    ['prose after the fence', '```json\n' + body + '\n```\nLet me know if you need more.'],
    ['an unclosed fence', '```json\n' + body],
    ['a fence inside a fence', '```\n```json\n' + body + '\n```\n```'],
  ])('[S02-FENCE] refuses %s as not one JSON document', (_what, text) => {
    const issues = issuesOf(validateCandidate(prepared, text));
    expect(issues).toEqual([{ path: '', message: expect.stringContaining('JSON') as unknown }]);
  });
});

describe('validateCandidate: content problems are not format errors', () => {
  const okCases: [string, Json, typeof prepared?][] = [
    [
      'a required field marked missing',
      candidate({ fields: { n: { status: 'missing', value: null }, s: { status: 'missing', value: null } } }),
    ],
    [
      'an ambiguous field with candidates',
      candidate({ fields: { n: { status: 'ambiguous', candidates: [1, 2] }, s: { status: 'ambiguous' } } }),
    ],
    [
      'an unresolved entry pointing at a ref',
      candidate({
        coverage: 'partial',
        intents: [intent({ ref: 'q', understanding: 'partial' })],
        unresolved: [{ kind: 'missing_information', text: 'Which order?', intentRef: 'q', options: null }],
      }),
    ],
    ['partial coverage', candidate({ coverage: 'partial' })],
    ['no intents at all', candidate({ coverage: 'none', turnKind: 'smalltalk', intents: [] })],
    ['an unclear intent', candidate({ intents: [intent({ understanding: 'unclear', domain: null, target: null })] })],
    [
      'a string value breaking its pattern',
      candidate({ fields: { n: { status: 'missing' }, s: { status: 'filled', value: 'ABC' } } }),
    ],
    [
      'an integer below its minimum',
      candidate({ fields: { n: { status: 'filled', value: 0 }, s: { status: 'missing' } } }),
    ],
    [
      'an integer above its maximum',
      candidate({ fields: { n: { status: 'filled', value: 99 }, s: { status: 'missing' } } }),
    ],
    [
      'an enum value outside the field enum',
      candidate({ fields: allFields({ e: { status: 'filled', value: 'green' } }) }),
      preparedAll,
    ],
    [
      'a number above its maximum',
      candidate({ fields: allFields({ r: { status: 'filled', value: 10.5 } }) }),
      preparedAll,
    ],
    [
      'an impossible date',
      candidate({ fields: allFields({ d: { status: 'filled', value: '2026-02-30' } }) }),
      preparedAll,
    ],
    [
      'a datetime in words',
      candidate({ fields: allFields({ t: { status: 'filled', value: 'tomorrow 9am' } }) }),
      preparedAll,
    ],
    [
      'a relation to a baseline intent id',
      {
        ...candidate({ fields: null, intents: [intent({ ref: 'new' })] }),
        relations: [{ kind: 'sequence', from: 'intent-1', to: 'new', text: null }],
      },
      preparedBaseline,
    ],
    [
      'a baseline change naming existing ids',
      {
        ...candidate({ fields: null, intents: [] }),
        baselineChanges: [
          { operation: 'update', target: { kind: 'intent', id: 'intent-1' }, set: { goal: 'Cancel it.' }, text: null },
          { operation: 'remove', target: { kind: 'constraint', id: 'constraint-1' }, set: null },
        ],
      },
      preparedBaseline,
    ],
  ];

  it.each(okCases)('[S02-NOT-FORMAT] %s → ok: true', (_what, value, on) => {
    const check = validateCandidate(on ?? prepared, JSON.stringify(value));
    expect(check).toEqual({ ok: true, candidate: expect.objectContaining({ turnKind: value['turnKind'] }) as unknown });
  });
});

describe('validateCandidate: absent optional keys', () => {
  it('[S02-NOT-FORMAT] accepts the seed candidate, which omits every optional key (absent = null)', () => {
    const check = validateCandidate(preparedSeed, fixture('seed-candidate.json'));
    expect(check.ok).toBe(true);
    if (check.ok)
      expect(check.candidate.intents[0]?.constraints).toEqual([{ kind: 'prohibition', text: '不要取消订单' }]);
  });

  it('accepts the same candidate with every optional key written as null', () => {
    const value = {
      turnKind: 'request',
      coverage: 'complete',
      intents: [intent({ ref: null, constraints: null, inputs: null, references: null, children: null })],
      constraints: null,
      relations: null,
      unresolved: null,
      fields: {
        n: { status: 'missing', value: null, candidates: null, evidence: null },
        s: { status: 'missing', value: null, candidates: null, evidence: null },
      },
    };
    expect(validateCandidate(prepared, JSON.stringify(value)).ok).toBe(true);
  });

  it('accepts a candidate without fields even when fields were selected (absent = null)', () => {
    const value = candidate();
    delete value['fields'];
    expect(validateCandidate(prepared, JSON.stringify(value)).ok).toBe(true);
    expect(validateCandidate(prepared, JSON.stringify({ ...value, fields: null })).ok).toBe(true);
  });

  it('refuses null for a key that is not optional', () => {
    const issues = issuesOf(validateCandidate(prepared, JSON.stringify(candidate({ intents: null }))));
    expect(issues.map((i) => i.path)).toEqual(['/intents']);
  });
});
