/**
 * Errors quote at most a short prefix of caller text (issue 8, item 9): however large or hostile the input, no error
 * the core raises about it serialises to more than MAX_ERROR_TEXT_CHARS.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  IntentError,
  MAX_ERROR_TEXT_CHARS,
  QUOTE_MAX_CHARS,
  callerPrefix,
  quoteCaller,
} from '../../src/core/errors.js';
import { FEEDBACK_BUDGET_CHARS, MAX_FEEDBACK_ITEMS } from '../../src/core/feedback.js';
import { resolveInstance } from '../../src/core/instance.js';
import { prepareRequest } from '../../src/core/request.js';
import { validateCandidate } from '../../src/core/validate.js';
import { handoffErrors } from '../../src/engine/replies.js';
import {
  AcceptArgsSchema,
  CancelArgsSchema,
  parseAcceptArgs,
  parseArgs,
  requestArgsSchema,
} from '../../src/mcp/tools.js';
import { thrownBy } from '../support/intentErrors.js';

const NOW = new Date('2026-03-04T05:06:07.000Z');
const HUGE = 'k'.repeat(100_000);
const PREFIX = 'k'.repeat(QUOTE_MAX_CHARS);
const instance = resolveInstance({
  schema: { fields: { n: { type: 'integer' }, s: { type: 'string', pattern: '^[0-9]+$' } } },
});
const prepared = prepareRequest(instance, { input: 'order 123', fields: ['n', 's'] }, NOW);

const size = (error: IntentError): number => JSON.stringify(error.toJSON()).length;

const thrown = thrownBy;

/** The CANDIDATE_INVALID a caller gets for a candidate text (or undefined when it is valid). */
function candidateError(text: string): IntentError | undefined {
  const check = validateCandidate(prepared, text);
  return check.ok ? undefined : handoffErrors.candidateInvalid('00000000-0000-4000-8000-000000000000', check.issues);
}

/** JSON text of an object with these raw keys (so that `__proto__` stays an own key, as JSON.parse makes it). */
const objectText = (entries: readonly (readonly [string, string])[]): string =>
  `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;

const CANDIDATE_BASE: [string, string][] = [
  ['turnKind', '"request"'],
  ['coverage', '"complete"'],
  ['intents', '[]'],
];

describe('callerPrefix and quoteCaller', () => {
  it('keep short text whole and cut long text to a prefix with an ellipsis', () => {
    expect(callerPrefix('abc')).toBe('abc');
    expect(callerPrefix(PREFIX)).toBe(PREFIX);
    expect(callerPrefix(HUGE)).toBe(PREFIX + '…');
    expect(quoteCaller('a"b\\c\n')).toBe('"a\\"b\\\\c\\n"');
  });

  it('never split a surrogate pair and replace lone surrogates', () => {
    const emoji = '\ud83d\ude00';
    const cut = callerPrefix('x'.repeat(QUOTE_MAX_CHARS - 1) + emoji + 'tail');
    expect(cut).toBe('x'.repeat(QUOTE_MAX_CHARS - 1) + '…');
    expect(callerPrefix('a' + emoji)).toBe('a' + emoji);
    expect(callerPrefix('a\ud83db\ude00c')).toBe('a\ufffdb\ufffdc');
    expect(callerPrefix('\ud83d'.repeat(1_000))).toBe('\ufffd'.repeat(QUOTE_MAX_CHARS) + '…');
  });

  it('escape what a terminal would act on: C1, bidirectional and separator controls', () => {
    // "Trojan Source": U+202E would make a reader see the quoted id reversed; U+009B starts a CSI on some terminals.
    const quoted = quoteCaller('req\u202Edi-\u2066x\u009b31m\u2028y\u200f');
    expect(quoted).toBe('"req\\u202edi-\\u2066x\\u009b31m\\u2028y\\u200f"');
    expect(JSON.parse(quoted)).toBe('req\u202Edi-\u2066x\u009b31m\u2028y\u200f');
    expect(quoteCaller('\\\u202e')).toBe('"\\\\\\u202e"');
    expect(quoteCaller('日本語 ✓ é')).toBe('"日本語 ✓ é"');
  });

  it('always give well-formed text of bounded length (fixed seed)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => {
        const out = callerPrefix(text);
        expect(Buffer.from(out, 'utf8').toString('utf8')).toBe(out);
        expect(out.length).toBeLessThanOrEqual(QUOTE_MAX_CHARS + 1);
        expect(JSON.parse(quoteCaller(text))).toBe(out);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('caller text in errors is quoted as a short prefix [H08-ERROR-BOUND]', () => {
  it('a 100 KB unknown key in a candidate (top level and nested)', () => {
    for (const text of [
      objectText([...CANDIDATE_BASE, [HUGE, '1']]),
      objectText([
        ['turnKind', '"request"'],
        ['coverage', '"complete"'],
        ['intents', `[${objectText([[HUGE, '1']])}]`],
      ]),
    ]) {
      const error = candidateError(text);
      expect(error?.code).toBe('CANDIDATE_INVALID');
      if (error === undefined) return;
      expect(size(error)).toBeLessThanOrEqual(MAX_ERROR_TEXT_CHARS);
      const issues = error.details?.['issues'] as { path: string; message: string }[];
      const unknown = issues.find((i) => i.message.startsWith('Remove the key'));
      expect(unknown?.message).toBe(`Remove the key "${PREFIX}…": it is not allowed here.`);
      expect(unknown?.path.endsWith(`/${PREFIX}…`)).toBe(true);
    }
  });

  it('100,000 unknown keys of 1 KB each give at most 20 bounded items', () => {
    const entries: [string, string][] = [...CANDIDATE_BASE];
    for (let i = 0; i < 100_000; i++) entries.push([`${i}`.padEnd(1_000, 'x'), '0']);
    const error = candidateError(objectText(entries));
    expect(error?.code).toBe('CANDIDATE_INVALID');
    if (error === undefined) return;
    const issues = error.details?.['issues'] as unknown[];
    expect(issues.length).toBeGreaterThan(1);
    expect(issues.length).toBeLessThanOrEqual(MAX_FEEDBACK_ITEMS);
    expect(JSON.stringify(issues).length).toBeLessThanOrEqual(FEEDBACK_BUDGET_CHARS + MAX_FEEDBACK_ITEMS);
    expect(size(error)).toBeLessThanOrEqual(MAX_ERROR_TEXT_CHARS);
  });

  it.each([
    ['an unknown request key', { input: 'x', [HUGE]: 1 }],
    ['an unknown field', { input: 'x', fields: [HUGE] }],
    ['a field selected twice', { input: 'x', fields: ['n', 'n'] }],
    [
      'a duplicate baseline id',
      {
        input: 'x',
        baseline: {
          schemaVersion: '2.0-draft.6',
          coverage: 'complete',
          scope: 'conversation',
          intents: [],
          constraints: [1, 2].map(() => ({
            id: `constraint-1${'0'.repeat(100_000)}`,
            kind: 'limit',
            text: 't',
            scope: { type: 'request' },
          })),
          relations: [],
          unresolved: [],
        },
      },
    ],
    ['a deep request with 100 KB keys', { input: 'x', output: { [HUGE]: { [HUGE]: { [HUGE]: {} } } } }],
  ])('prepareRequest: %s', (_what, request) => {
    const error = thrown(() => prepareRequest(resolveInstance({ limits: { maxNestingDepth: 16 } }), request, NOW));
    expect(error.code).toBe('INPUT_INVALID');
    expect(size(error)).toBeLessThanOrEqual(MAX_ERROR_TEXT_CHARS);
    expect(JSON.stringify(error.toJSON())).not.toContain('k'.repeat(QUOTE_MAX_CHARS + 1));
    expect(JSON.stringify(error.toJSON())).not.toContain('0'.repeat(QUOTE_MAX_CHARS + 1));
  });

  it('prepareRequest: a deep request with 100 KB keys names the place within the bound', () => {
    let value: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) value = { [HUGE]: value };
    const error = thrown(() => prepareRequest(instance, { input: 'x', output: value }, NOW));
    expect(error.code).toBe('INPUT_INVALID');
    expect(size(error)).toBeLessThanOrEqual(MAX_ERROR_TEXT_CHARS);
  });

  it('prepareRequest: an unknown field lists at most 20 known ones', () => {
    const fields = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`field_${i}`, { type: 'string' }]));
    const error = thrown(() =>
      prepareRequest(resolveInstance({ schema: { fields } }), { input: 'x', fields: ['y'] }, NOW),
    );
    expect(error.message).toContain('field_19 and 480 more');
  });

  it.each([
    ['an unknown key', AcceptArgsSchema, { requestId: 'r', submissionToken: 't', candidateText: '{}', [HUGE]: 1 }],
    ['a 100 KB requestId', AcceptArgsSchema, { requestId: HUGE, submissionToken: 't', candidateText: '{}' }],
    ['a 100 KB submissionToken', AcceptArgsSchema, { requestId: 'r', submissionToken: HUGE, candidateText: '{}' }],
    ['a 100 KB requestId to cancel', CancelArgsSchema, { requestId: HUGE }],
    ['an unknown request key', requestArgsSchema(['main']), { input: 'x', [HUGE]: 1 }],
  ])('tool arguments: %s', (_what, schema, args) => {
    const error = thrown(() => parseArgs(schema as typeof AcceptArgsSchema, args, 'intent_accept'));
    expect(error.code).toBe('INPUT_INVALID');
    expect(size(error)).toBeLessThanOrEqual(MAX_ERROR_TEXT_CHARS);
    expect(JSON.stringify(error.toJSON())).not.toContain('k'.repeat(QUOTE_MAX_CHARS + 1));
  });

  it('configuration: a 100 KB invalid field name', () => {
    const error = thrown(() => resolveInstance({ schema: { fields: { [HUGE + '!']: { type: 'string' } } } }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(size(error)).toBeLessThanOrEqual(MAX_ERROR_TEXT_CHARS);
  });
});

describe('no error text exceeds MAX_ERROR_TEXT_CHARS, whatever the input [H08-ERROR-BOUND]', () => {
  const key = fc.oneof(
    fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'input', 'intents', 'fields', 'baseline', ''),
    fc.string({ unit: 'binary', maxLength: 8 }),
    fc.constantFrom(1_000, 100_000).chain((n) => fc.constantFrom('k', '\ud800', '~/', '"').map((c) => c.repeat(n))),
  );
  const leaf = fc.oneof(
    fc.constantFrom('0', '"x"', 'null', 'true', '[]', '{}', '"\\ud800"', '-1e999'),
    fc.constantFrom(1_000, 100_000).map((n) => JSON.stringify('v'.repeat(n))),
  );
  const json: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leaf,
      fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
      fc.array(fc.tuple(key, tie('value')), { maxLength: 5 }).map(objectText),
    ),
  })).value;
  const deep = fc.integer({ min: 1, max: 3_000 }).map((n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n));

  it('candidates', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(key, fc.oneof(json, deep)), { maxLength: 6 }), fc.boolean(), (extra, fence) => {
        const text = objectText([...CANDIDATE_BASE, ...extra]);
        const error = candidateError(fence ? '```json\n' + text + '\n```' : text);
        if (error !== undefined) expect(size(error)).toBeLessThanOrEqual(MAX_ERROR_TEXT_CHARS);
      }),
      { numRuns: 400 },
    );
  });

  it('requests and tool arguments', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(key, fc.oneof(json, deep)), { maxLength: 6 }), (entries) => {
        const args = JSON.parse(objectText([['input', '"x"'], ...entries])) as unknown;
        for (const attempt of [
          () => prepareRequest(instance, args, NOW),
          () => parseArgs(requestArgsSchema(['main', 'other']), args, 'intent_prepare'),
          () => parseAcceptArgs(args, 'intent_accept'),
          () => parseArgs(CancelArgsSchema, args, 'intent_cancel'),
        ]) {
          try {
            attempt();
          } catch (error) {
            expect(error).toBeInstanceOf(IntentError);
            expect(size(error as IntentError)).toBeLessThanOrEqual(MAX_ERROR_TEXT_CHARS);
          }
        }
      }),
      { numRuns: 400 },
    );
  });
});
