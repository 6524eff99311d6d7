/**
 * fast-check arbitraries of hostile caller input for the fuzz suite (test/fuzz/*.fuzz.ts): strings (huge, lone
 * surrogates, prototype keys, NaN-ish numbers, fence runs), keys, JSON values nested far beyond any sane depth, tool
 * arguments built around the seed request, and candidate texts built around the seed candidate.
 *
 * Large values are built by repetition (`'x'.repeat(n)`), never character by character, so a 1 MiB case costs what the
 * code under test spends on it and not what fast-check spends building it. Deep values are built iteratively, never by
 * recursion, for the same reason.
 */
import fc from 'fast-check';
import { SEED_ARGS, SEED_CANDIDATE } from '../../support/mcpFixtures.js';

/** 1 MiB, the adapter's default `maxCandidateBytes`. */
export const MIB = 1024 * 1024;

/** Keys that reach `Object.prototype` when a caller's string indexes a plain object. */
export const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', 'valueOf'] as const;

/** Strings a sloppy number parser mistakes for numbers. */
export const NANISH = [
  'NaN',
  '-NaN',
  'Infinity',
  '-Infinity',
  '1e309',
  '-0',
  '0x10',
  '1_000',
  ' 1 ',
  '',
  '.',
  '1e-400',
];

/** Lone surrogates and other code units that break UTF-8 round trips or naive length checks. */
export const LONE_SURROGATES = ['\uD800', '\uDBFF', '\uDC00', '\uDFFF', 'a\uD83D', '\uDE00b', '\uFFFE', '\u0000'];

/**
 * Sizes of the large tier: show the shape (1 MiB) in a handful of cases, stay fast in the rest. Every range starts low
 * so that shrinking can walk a failing size down to the threshold where it starts to fail.
 */
const largeSize = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 70_000 }) },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 300_000 }) },
  { weight: 1, arbitrary: fc.constantFrom(MIB - 1, MIB, MIB + 1) },
);

/** A string of `size` UTF-16 units built by repeating a short unit. */
export const hugeString = fc
  .tuple(fc.constantFrom('a', ' ', '`', '\n', '"', '\\', 'é', '订', '😀', '\uD800', '{', '['), largeSize)
  .map(([unit, size]) => unit.repeat(Math.max(1, Math.floor(size / unit.length))));

/**
 * Pathological code-fence runs: an opening fence, a long run of spaces / tabs / backticks with no closing fence, the
 * shape that makes a backtracking fence regex quadratic. Sizes stop at 48k here; the bench prices 1 MiB.
 */
export const fenceText = fc
  .tuple(
    fc.constantFrom('```\n', '```json\n', '```', '  ```\r\n', '````\n'),
    fc.constantFrom(' ', '\t', ' \n', '`', '``', ' `'),
    fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 0, max: 2_000 }) }, fc.integer({ min: 0, max: 48_000 })),
    fc.constantFrom('x', '', '```', '\n```', '`', SEED_CANDIDATE),
  )
  .map(([open, unit, n, tail]) => open + unit.repeat(n) + tail);

/** Strings a caller might send anywhere a string goes. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.constantFrom(...PROTO_KEYS, ...NANISH, ...LONE_SURROGATES) },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.constantFrom(...LONE_SURROGATES, 'a', '😀'), { minLength: 1, maxLength: 20 })
      .map((a) => a.join('')),
  },
  { weight: 1, arbitrary: hugeString },
  { weight: 1, arbitrary: fenceText },
);

/** Object keys: prototype keys, unknown keys, huge keys, JSON Pointer metacharacters. */
export const nastyKey: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...PROTO_KEYS) },
  { weight: 3, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom('a/b', '~0~1', '', ' ', '\u0000', '\uD800', 'input ', 'INPUT') },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 200_000 }).map((n) => 'k'.repeat(n)) },
);

/** An object with own keys exactly as JSON.parse creates them (an own `__proto__` included). */
export function ownObject(entries: readonly (readonly [string, unknown])[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true });
  return out;
}

/** `value` wrapped `depth` times in arrays or single-key objects, built iteratively. */
export function nest(depth: number, shape: 'array' | 'object' | 'mixed', leaf: unknown = 1): unknown {
  let v = leaf;
  for (let i = 0; i < depth; i++) {
    const asArray = shape === 'array' || (shape === 'mixed' && i % 2 === 0);
    v = asArray ? [v] : { a: v };
  }
  return v;
}

/** JSON text nested `depth` deep without building the value. */
export function nestedText(depth: number, shape: 'array' | 'object'): string {
  return shape === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

/**
 * Nesting depths: shallow, around typical recursion limits, and far beyond them. Every range starts at 1 so that a
 * failing depth shrinks to the smallest depth that fails.
 */
export const depth = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 64 }) },
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 3_000 }) },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 12_000 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 100_000 }) },
);

export const deepValue = fc
  .tuple(depth, fc.constantFrom<'array' | 'object' | 'mixed'>('array', 'object', 'mixed'))
  .map(([d, shape]) => nest(d, shape));

/** Any JSON-ish value a caller could send, from wrong scalar types to deep and wide structures. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(null, undefined, true, false, 0, -1, 1.5, NaN, Infinity, 2 ** 53, -0) },
  { weight: 3, arbitrary: nastyString },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: deepValue },
  {
    weight: 1,
    arbitrary: fc.array(fc.tuple(nastyKey, fc.jsonValue({ maxDepth: 2 })), { maxLength: 8 }).map(ownObject),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 50_000 }).map((n) => Object.fromEntries(range(n).map((i) => [`k${i}`, i]))),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 100_000 }).map((n) => new Array<number>(n).fill(0)) },
);

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

// ---------------------------------------------------------------------------------------------------------------------
// Tool arguments

/** A baseline (`effective` of an earlier result) with one intent; its extensions / children nest `d` deep. */
export function baselineWith(d: number, where: 'extensions' | 'children' | 'inputs'): Record<string, unknown> {
  const intent = (id: number, children: unknown[] = [], extensions: unknown = {}): Record<string, unknown> => ({
    id: `intent-${id}`,
    domain: null,
    action: 'query',
    target: null,
    goal: 'g',
    understanding: 'clear',
    constraints: [],
    inputs: {},
    references: [],
    children,
    extensions,
  });
  let root: Record<string, unknown>;
  if (where === 'children') {
    let node = intent(d + 1);
    for (let i = d; i >= 1; i--) node = intent(i, [node]);
    root = node;
  } else if (where === 'extensions') root = intent(1, [], { deep: nest(d, 'mixed') });
  else root = { ...intent(1), inputs: { deep: nest(d, 'array') } };
  return {
    schemaVersion: '2.0-draft.6',
    coverage: 'complete',
    scope: 'current_request',
    intents: [root],
    constraints: [],
    relations: [],
    unresolved: [],
  };
}

/** Request-tool arguments (`intent_prepare` / `intent_parse`): mutations of the seed request. */
export const requestArgs: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ instance: 'main', ...SEED_ARGS }) },
  { weight: 1, arbitrary: fc.constant(SEED_ARGS) },
  { weight: 2, arbitrary: nastyString.map((input) => ({ instance: 'main', input })) },
  { weight: 1, arbitrary: nastyValue },
  {
    weight: 2,
    arbitrary: fc.record({ key: nastyKey, value: nastyValue }).map(({ key, value }) =>
      ownObject([
        ['instance', 'main'],
        ['input', SEED_ARGS.input],
        [key, value],
      ]),
    ),
  },
  { weight: 1, arbitrary: fc.record({ instance: nastyValue, input: fc.constant(SEED_ARGS.input) }) },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.oneof(nastyString, nastyValue), { maxLength: 6 })
      .map((fields) => ({ instance: 'travel', input: 'from Berlin to Lisbon', fields })),
  },
  {
    weight: 2,
    arbitrary: fc
      .array(
        fc.oneof(
          fc.record({ role: fc.constantFrom('user', 'assistant', 'system'), text: nastyString }),
          nastyValue.map((v) => ({ role: 'user', text: v })),
          nastyValue,
        ),
        { maxLength: 8 },
      )
      .map((context) => ({ instance: 'main', input: SEED_ARGS.input, context })),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(depth, fc.constantFrom('extensions', 'children', 'inputs') as fc.Arbitrary<'extensions' | 'children'>)
      .map(([d, where]) => ({ instance: 'main', input: SEED_ARGS.input, baseline: baselineWith(d, where) })),
  },
  { weight: 1, arbitrary: nastyValue.map((baseline) => ({ instance: 'main', input: SEED_ARGS.input, baseline })) },
  {
    weight: 1,
    arbitrary: fc
      .record({ referenceTime: nastyValue, output: nastyValue })
      .map((r) => ({ instance: 'main', input: SEED_ARGS.input, ...r })),
  },
);

// ---------------------------------------------------------------------------------------------------------------------
// Candidate texts

/** A candidate whose single intent nests `d` levels of `children`. */
export function deepChildrenCandidate(d: number): string {
  const open = '{"domain":null,"action":"a","target":null,"goal":"g","understanding":"clear","children":[';
  return (
    '{"turnKind":"request","coverage":"complete","intents":[' +
    open.repeat(d) +
    '{"domain":null,"action":"a","target":null,"goal":"g","understanding":"clear"}' +
    ']}'.repeat(d) +
    ']}'
  );
}

/** The seed candidate with one extra key (unknown to the schema) on its top level or its first intent. */
function withKey(key: string, value: unknown, onIntent: boolean): string {
  const seed = JSON.parse(SEED_CANDIDATE) as { intents: Record<string, unknown>[] } & Record<string, unknown>;
  const target = onIntent ? seed.intents[0]! : seed;
  Object.defineProperty(target, key, { value: PLACEHOLDER, enumerable: true, writable: true });
  return JSON.stringify(seed).replace(JSON.stringify(PLACEHOLDER), () => jsonText(value));
}

const PLACEHOLDER = '\u0000value\u0000';

/** JSON text of a generated value; values too deep for `JSON.stringify` are written out directly. */
export function jsonText(value: unknown): string {
  try {
    // undefined stringifies to undefined (typed as string), which JSON writes as null in an array.
    return value === undefined ? 'null' : JSON.stringify(value);
  } catch {
    // Too deep for JSON.stringify: the same top-level shape, nested just as far.
    return nestedText(100_000, Array.isArray(value) ? 'array' : 'object');
  }
}

/** Candidate texts: the golden one, fenced, deep, huge, broken, with prototype or huge keys, random. */
export const candidateText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(SEED_CANDIDATE) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom('```json\n', '```\n', '  ```\r\n', '```JSON \n')
      .map((open) => `${open}${SEED_CANDIDATE}\n\`\`\``),
  },
  { weight: 2, arbitrary: fenceText },
  { weight: 2, arbitrary: depth.map(deepChildrenCandidate) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(depth, fc.constantFrom<'array' | 'object'>('array', 'object'))
      .map(([d, s]) => nestedText(d, s)),
  },
  { weight: 2, arbitrary: fc.tuple(nastyKey, nastyValue, fc.boolean()).map(([k, v, i]) => withKey(k, v, i)) },
  { weight: 2, arbitrary: nastyString },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 5 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: hugeString.map((s) => JSON.stringify({ turnKind: 'request', coverage: s, intents: [] })) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 0, max: SEED_CANDIDATE.length - 1 })
      .map((cut) => SEED_CANDIDATE.slice(0, cut) + SEED_CANDIDATE.slice(cut + 1)),
  },
);
