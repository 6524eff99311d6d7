/**
 * The nesting bound (issue 8, item 5): candidates and request arguments are scanned iteratively for their depth before
 * zod or any recursive walk sees them. Too deep is a correctable format error for a candidate and `INPUT_INVALID` for a
 * request: deterministic answers, never a stack overflow.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MAX_POINTER_CHARS } from '../../src/core/feedback.js';
import { resolveInstance } from '../../src/core/instance.js';
import { findShapeProblem } from '../../src/core/nesting.js';
import { normalizeCandidate } from '../../src/core/normalize.js';
import { prepareRequest } from '../../src/core/request.js';
import { LimitsSchema, MAX_NESTING_DEPTH, REQUEST_EXTRA_DEPTH } from '../../src/core/schemas.js';
import { validateCandidate } from '../../src/core/validate.js';
import { deepCandidate, deepCandidateText, deepRequest, nestedArray, nestedArrayText, nestedObject } from './deep.js';
import { thrownBy } from '../support/intentErrors.js';

const NOW = new Date('2026-03-04T05:06:07.000Z');
const instance = resolveInstance({});
const DEFAULT_DEPTH = LimitsSchema.parse({}).maxNestingDepth;

const thrown = thrownBy;

describe('findShapeProblem', () => {
  it('counts arrays and objects, the root as 1, scalars as nothing', () => {
    expect(findShapeProblem('x'.repeat(10), 1)).toBeUndefined();
    expect(findShapeProblem({}, 1)).toBeUndefined();
    expect(findShapeProblem({ a: 1, b: 'x', c: null }, 1)).toBeUndefined();
    expect(findShapeProblem({ a: [] }, 1)).toEqual({ kind: 'too_deep', pointer: '/a' });
    expect(findShapeProblem(nestedArray(10), 10)).toBeUndefined();
    expect(findShapeProblem(nestedArray(11), 10)).toEqual({ kind: 'too_deep', pointer: '/0/0/0/0/0/0/0/0/0/0' });
  });

  it('reports the first place in document order', () => {
    const value = { a: [1, 'x', { b: 2 }], c: { d: { e: {} } }, f: [[[]]] };
    expect(findShapeProblem(value, 3)).toEqual({ kind: 'too_deep', pointer: '/c/d/e' });
    expect(findShapeProblem(value, 2)).toEqual({ kind: 'too_deep', pointer: '/a/2' });
    expect(findShapeProblem({ x: [[[]]], ...value }, 2)).toEqual({ kind: 'too_deep', pointer: '/x/0' });
  });

  it('handles a million levels and a cycle without recursion', () => {
    expect(findShapeProblem(nestedArray(1_000_000), 64)?.pointer.startsWith('/0/0/0')).toBe(true);
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(findShapeProblem(cyclic, 5)).toEqual({ kind: 'too_deep', pointer: '/self/self/self/self/self' });
  });

  it('refuses values JSON cannot hold, wherever they are', () => {
    expect(findShapeProblem({ a: [1, { b: 10n }] }, 64)).toEqual({ kind: 'not_json', pointer: '/a/1/b' });
    expect(findShapeProblem([() => 1], 64)).toEqual({ kind: 'not_json', pointer: '/0' });
    expect(findShapeProblem(Symbol('s'), 64)).toEqual({ kind: 'not_json', pointer: '' });
    expect(findShapeProblem({ a: undefined, b: null, c: Number.NaN, d: 'x', e: true }, 64)).toBeUndefined();
  });

  it('bounds the pointer, however long the keys are', () => {
    const key = 'k'.repeat(100_000);
    const found = findShapeProblem(nestedObject(200, key), 100);
    expect(found).toBeDefined();
    expect(found?.pointer.length).toBeLessThanOrEqual(MAX_POINTER_CHARS);
    expect(found?.pointer.startsWith('/' + 'k'.repeat(64) + '…/')).toBe(true);
  });
});

describe('validateCandidate: nesting depth [H08-NESTING]', () => {
  const prepared = prepareRequest(instance, { input: 'book a flight' }, NOW);

  it(`accepts a candidate exactly ${DEFAULT_DEPTH} levels deep, odd or even`, () => {
    for (const depth of [DEFAULT_DEPTH, DEFAULT_DEPTH - 1]) {
      const value = deepCandidate(depth);
      expect(findShapeProblem(value, depth)).toBeUndefined();
      expect(findShapeProblem(value, depth - 1)).toBeDefined();
      const check = validateCandidate(prepared, JSON.stringify(value));
      expect(check.ok).toBe(true);
      if (check.ok) expect(JSON.stringify(normalizeCandidate(prepared, check.candidate)).length).toBeGreaterThan(0);
    }
  });

  it.each([
    ['one level too deep', JSON.stringify(deepCandidate(DEFAULT_DEPTH + 1))],
    ['intents 750 levels deep', deepCandidateText(750)],
    ['intents 50,000 levels deep', deepCandidateText(50_000)],
  ])(
    'answers a candidate with %s with one correctable issue that says to flatten it, the same every time',
    (_what, text) => {
      const first = validateCandidate(prepared, text);
      expect(first.ok).toBe(false);
      if (first.ok) return;
      expect(first.issues).toHaveLength(1);
      expect(first.issues[0]?.message).toContain(`deeper than ${DEFAULT_DEPTH} levels`);
      expect(first.issues[0]?.message).toContain('flatten');
      expect(first.issues[0]?.path).toMatch(/^\/intents\/0(\/children\/0)+/);
      expect(first.issues[0]?.path.length).toBeLessThanOrEqual(MAX_POINTER_CHARS);
      expect(validateCandidate(prepared, text)).toEqual(first);
    },
  );

  it('counts any container: unknown deep keys are refused for depth before zod names them', () => {
    const text = `{"turnKind":"request","coverage":"complete","intents":[],"junk":${nestedArrayText(5_000)}}`;
    const check = validateCandidate(prepared, text);
    expect(check).toEqual({
      ok: false,
      issues: [
        { path: '/junk' + '/0'.repeat(DEFAULT_DEPTH - 1), message: expect.stringContaining('flatten') as unknown },
      ],
    });
  });

  it('follows limits.maxNestingDepth', () => {
    const shallow = resolveInstance({ limits: { maxNestingDepth: 16 } });
    const p = prepareRequest(shallow, { input: 'book a flight' }, NOW);
    expect(validateCandidate(p, JSON.stringify(deepCandidate(16))).ok).toBe(true);
    expect(validateCandidate(p, JSON.stringify(deepCandidate(17))).ok).toBe(false);
  });

  it.each([0, 15, 129, 1.5, Number.NaN])('refuses limits.maxNestingDepth %s with CONFIG_INVALID naming it', (bad) => {
    const error = thrown(() => resolveInstance({ limits: { maxNestingDepth: bad } }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('limits/maxNestingDepth');
  });
});

describe('prepareRequest: nesting depth [H08-NESTING]', () => {
  const bound = DEFAULT_DEPTH + REQUEST_EXTRA_DEPTH;

  it('accepts a request at the bound, and its task serialises', () => {
    const request = deepRequest(bound, 20);
    expect(findShapeProblem(request, bound)).toBeUndefined();
    expect(findShapeProblem(request, bound - 1)).toBeDefined();
    const prepared = prepareRequest(instance, request, NOW);
    expect(JSON.stringify(prepared.task)).toContain('intent-20');
  });

  it.each([bound + 1, 6_000])('refuses a baseline whose extensions nest %i deep with INPUT_INVALID', (depth) => {
    const error = thrown(() => prepareRequest(instance, deepRequest(depth, 2), NOW));
    expect(error.code).toBe('INPUT_INVALID');
    expect(error.message).toContain(`deeper than ${bound} levels`);
    const issues = error.details?.['issues'] as { path: string }[];
    expect(issues[0]?.path).toMatch(/^\/baseline\/intents\/0\/children\/0\/extensions(\/a)+$/);
    expect(JSON.stringify(error.toJSON()).length).toBeLessThan(2_000);
  });

  it('refuses deep nesting anywhere in the arguments, known key or not', () => {
    for (const request of [
      { input: 'x', context: nestedArray(10_000) },
      { input: 'x', output: nestedObject(10_000) },
      { input: 'x', whatever: nestedObject(10_000) },
    ])
      expect(thrown(() => prepareRequest(instance, request, NOW)).code).toBe('INPUT_INVALID');
  });

  it('refuses a baseline whose extensions hold a bigint (JSON.stringify of the task would throw)', () => {
    const request = deepRequest(12, 2) as { baseline: { intents: { extensions: Record<string, unknown> }[] } };
    const first = request.baseline.intents[0];
    if (first !== undefined) first.extensions = { n: 10n };
    const error = thrown(() => prepareRequest(instance, request, NOW));
    expect(error.code).toBe('INPUT_INVALID');
    expect(error.details).toEqual({
      issues: [{ path: '/baseline/intents/0/extensions/n', message: expect.any(String) as unknown }],
    });
  });

  it('a result passed back as the next baseline still fits the request bound', () => {
    const first = prepareRequest(instance, { input: 'book a flight' }, NOW);
    const check = validateCandidate(first, JSON.stringify(deepCandidate(DEFAULT_DEPTH)));
    if (!check.ok) throw new Error('expected a valid candidate');
    const result = normalizeCandidate(first, check.candidate);
    const next = prepareRequest(instance, { input: 'and a hotel', baseline: result.effective }, NOW);
    expect(next.baseline?.intents).toHaveLength(1);
  });
});

describe('every recursive step is safe at the largest allowed depth on a small stack [H08-NESTING]', () => {
  const script = fileURLToPath(new URL('./deepStack.script.ts', import.meta.url));
  const run = (depth: number): Record<string, unknown> =>
    JSON.parse(
      execFileSync(process.execPath, ['--stack-size=200', '--import', 'tsx', script, String(depth)], {
        encoding: 'utf8',
        cwd: fileURLToPath(new URL('../..', import.meta.url)),
      }),
    ) as Record<string, unknown>;

  it.each([DEFAULT_DEPTH, MAX_NESTING_DEPTH])(
    'maxNestingDepth %i under --stack-size=200',
    (depth) => {
      const out = run(depth);
      expect(out['requestAtBound']).toEqual({ task: true, result: true });
      expect(out['requestOverBound']).toEqual({
        threw: expect.stringContaining(
          `IntentError: The request nests deeper than ${depth + REQUEST_EXTRA_DEPTH}`,
        ) as unknown,
      });
      const invalid = out['candidateInvalidAtBound'] as { path: string; message: string }[];
      expect(invalid.length).toBeGreaterThan(0);
      expect(invalid.every((i) => i.path.startsWith('/intents/0/children/0'))).toBe(true);
      const over = out['candidateOverBound'] as { message: string }[];
      expect(over).toHaveLength(1);
      expect(over[0]?.message).toContain('flatten');
    },
    30_000,
  );
});
