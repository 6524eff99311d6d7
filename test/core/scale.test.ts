/**
 * Normalisation and evidence search at the sizes of issue 8 (items 3 and 4). Before, one accept with a 22,000-intent
 * baseline and 11,000 updates took 21–26 s (a tree walk per change), and a 100 KB evidence searched in a 400k-character
 * context took 5 s (`includes` is O(n·m) at worst). The per-test timeouts are guards; the assertions are on results.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IntentError } from '../../src/core/errors.js';
import { resolveInstance } from '../../src/core/instance.js';
import { normalizeCandidate } from '../../src/core/normalize.js';
import { prepareRequest } from '../../src/core/request.js';
import { SCHEMA_VERSION, type IntentNode } from '../../src/core/schemas.js';
import { substringSearch } from '../../src/core/search.js';
import { validateCandidate } from '../../src/core/validate.js';

const NOW = new Date('2026-03-04T05:06:07.000Z');

function node(n: number, children: IntentNode[] = []): IntentNode {
  return {
    id: `intent-${n}`,
    domain: null,
    action: 'query',
    target: null,
    goal: `goal ${n}`,
    understanding: 'clear',
    constraints: [
      { id: `constraint-${n}`, kind: 'requirement', text: `c${n}`, scope: { type: 'intent', intentId: `intent-${n}` } },
    ],
    inputs: {},
    references: [],
    children,
    extensions: {},
  };
}

describe('normalizeCandidate: baseline changes are linear in the baseline and the changes [H08-BASELINE-LINEAR]', () => {
  // 2,000 roots with 10 children each: 22,000 intents and 22,000 constraints.
  const ROOTS = 2_000;
  const PER_ROOT = 10;
  const intents: IntentNode[] = [];
  let next = 0;
  for (let r = 0; r < ROOTS; r++) {
    const root = ++next;
    const children: IntentNode[] = [];
    for (let c = 0; c < PER_ROOT; c++) children.push(node(++next));
    intents.push(node(root, children));
  }
  const total = next;
  const baseline = {
    schemaVersion: SCHEMA_VERSION,
    coverage: 'complete',
    scope: 'conversation',
    intents,
    constraints: [],
    relations: [],
    unresolved: [],
  };
  const instance = resolveInstance({});

  it(
    'applies 11,000 updates, then removes of children, constraints and whole subtrees, in order',
    { timeout: 8_000 },
    () => {
      const prepared = prepareRequest(instance, { input: 'change all of them', baseline }, NOW);
      const changes: unknown[] = [];
      // Updates of every other intent, the last one first (a lookup of the deepest-last id is the old worst case).
      for (let n = total; n >= 1; n -= 2)
        changes.push({ operation: 'update', target: { kind: 'intent', id: `intent-${n}` }, set: { goal: `new ${n}` } });
      // Root 1 (intent-1) loses its child intent-2, then is removed itself, then intent-3 (gone with it) is ignored.
      changes.push({ operation: 'remove', target: { kind: 'intent', id: 'intent-2' } });
      changes.push({ operation: 'remove', target: { kind: 'intent', id: 'intent-1' } });
      changes.push({ operation: 'remove', target: { kind: 'intent', id: 'intent-3' } });
      // Every constraint of root 2's children (intent-13 … intent-22) is removed, then one again (ignored).
      for (let n = 13; n <= 22; n++)
        changes.push({ operation: 'remove', target: { kind: 'constraint', id: `constraint-${n}` } });
      changes.push({ operation: 'remove', target: { kind: 'constraint', id: 'constraint-13' } });
      const check = validateCandidate(
        prepared,
        JSON.stringify({ turnKind: 'correction', coverage: 'complete', intents: [], baselineChanges: changes }),
      );
      if (!check.ok) throw new Error(JSON.stringify(check.issues.slice(0, 2)));
      const result = normalizeCandidate(prepared, check.candidate);

      const updates = Math.ceil(total / 2);
      expect(updates).toBe(11_000);
      expect(result.turn.changes).toHaveLength(updates + 3 + 11);
      expect(result.turn.intentIds).toHaveLength(updates);
      expect(result.turn.intentIds[0]).toBe(`intent-${total}`);
      expect(result.effective.intents).toHaveLength(ROOTS - 1);
      const root2 = result.effective.intents[0];
      expect(root2?.id).toBe('intent-12');
      expect(root2?.goal).toBe('new 12');
      expect(root2?.children.map((c) => c.constraints.length)).toEqual(Array(PER_ROOT).fill(0));
      expect(root2?.children[1]?.goal).toBe('new 14');
      expect(result.effective.intents.at(-1)?.children.at(-1)?.goal).toBe(`new ${total}`);

      const effects = result.turn.changes.slice(updates).map((c) => `${c.operation} ${c.target.id} ${c.effect}`);
      expect(effects.slice(0, 3)).toEqual([
        'remove intent-2 applied',
        'remove intent-1 applied',
        'remove intent-3 ignored',
      ]);
      expect(effects.at(-1)).toBe('remove constraint-13 ignored');
      // Pointers name the baseline positions: intent-22000 is root 1999's last child.
      expect(result.turn.changes[0]?.sourceRefs).toEqual([
        { root: 'input', pointer: '' },
        { root: 'baseline', pointer: `/intents/${ROOTS - 1}/children/${PER_ROOT - 1}` },
      ]);
      expect(result.turn.changes.find((c) => c.target.id === 'constraint-22')?.sourceRefs[1]).toEqual({
        root: 'baseline',
        pointer: '/intents/1/children/9/constraints/0',
      });
    },
  );
});

/**
 * Counts every element visit of the arrays it is copied into: `map` and `filter` keep the subclass (species), so the
 * clones normalisation makes of a baseline's intent lists count too.
 */
class CountingArray<T> extends Array<T> {
  static visits = 0;
  override [Symbol.iterator](): ArrayIterator<T> {
    const inner = super[Symbol.iterator]();
    const counted = {
      next: () => {
        const step = inner.next();
        if (step.done !== true) CountingArray.visits++;
        return step;
      },
      [Symbol.iterator]: () => counted,
    };
    return counted;
  }
}
for (const method of ['forEach', 'map', 'filter', 'some', 'every', 'find', 'findIndex'] as const) {
  const original = Reflect.get(Array.prototype, method) as (
    this: unknown[],
    fn: (...a: unknown[]) => unknown,
  ) => unknown;
  Object.defineProperty(CountingArray.prototype, method, {
    value(this: unknown[], fn: (...a: unknown[]) => unknown) {
      return original.call(this, (...args: unknown[]) => {
        CountingArray.visits++;
        return fn(...args);
      });
    },
  });
}

function counted(list: readonly IntentNode[]): IntentNode[] {
  const out = new CountingArray<IntentNode>();
  for (const i of Array.from(list)) out.push({ ...i, children: counted(i.children) });
  return out;
}

describe('normalizeCandidate: operation count [H08-BASELINE-LINEAR]', () => {
  it('visits intents a bounded number of times per baseline intent and per change', () => {
    const roots: IntentNode[] = [];
    let n = 0;
    for (let r = 0; r < 200; r++) {
      const root = ++n;
      const children: IntentNode[] = [];
      for (let c = 0; c < 9; c++) children.push(node(++n));
      roots.push(node(root, children));
    }
    const baseline = {
      schemaVersion: SCHEMA_VERSION,
      coverage: 'complete',
      scope: 'conversation',
      intents: roots,
      constraints: [],
      relations: [],
      unresolved: [],
    };
    const prepared = prepareRequest(resolveInstance({}), { input: 'change them', baseline }, NOW);
    const changes: unknown[] = [];
    for (let k = n; k > 0; k -= 2)
      changes.push({ operation: 'update', target: { kind: 'intent', id: `intent-${k}` }, set: { goal: 'g' } });
    for (let k = 2; k <= n; k += 20)
      changes.push({ operation: 'remove', target: { kind: 'constraint', id: `constraint-${k}` } });
    for (let k = 1; k <= n; k += 50)
      changes.push({ operation: 'remove', target: { kind: 'intent', id: `intent-${k}` } });
    const check = validateCandidate(
      prepared,
      JSON.stringify({ turnKind: 'correction', coverage: 'complete', intents: [], baselineChanges: changes }),
    );
    if (!check.ok) throw new Error(JSON.stringify(check.issues.slice(0, 2)));
    const plain = normalizeCandidate(prepared, check.candidate);
    if (prepared.baseline === undefined) throw new Error('expected a baseline');

    CountingArray.visits = 0;
    const withCounting = {
      ...prepared,
      baseline: { ...prepared.baseline, intents: counted(prepared.baseline.intents) },
    };
    CountingArray.visits = 0;
    const result = normalizeCandidate(withCounting, check.candidate);
    expect(JSON.stringify(result)).toBe(JSON.stringify(plain));
    // Before: every change walked the whole tree (≈ 1,000 changes × 2,000 intents ≈ 2,000,000 visits).
    expect(CountingArray.visits).toBeGreaterThan(0);
    expect(CountingArray.visits).toBeLessThanOrEqual(20 * (n + changes.length));
  });
});

describe('substringSearch', () => {
  it('agrees with includes (fixed seed)', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', 'ab', '\ud83d', '\ude00'), maxLength: 30 });
    fc.assert(
      fc.property(text, text, (needle, haystack) => {
        expect(substringSearch(needle)(haystack)).toBe(haystack.includes(needle));
      }),
      { numRuns: 20_000 },
    );
  });
});

describe('evidence and dates are looked up in input and context in linear time [H08-SEARCH-LINEAR]', () => {
  const instance = resolveInstance({
    schema: { fields: { ref: { type: 'string' }, day: { type: 'date' }, at: { type: 'datetime' } } },
    limits: { maxContextItemChars: 500_000, maxInputChars: 500_000 },
  });
  // The shape that takes `includes` seconds: a needle matching long runs on both sides of one odd character.
  const haystack = 'a'.repeat(400_000);
  const evidence = 'a'.repeat(50_000) + 'b' + 'a'.repeat(50_000);

  const MISSING = { ref: { status: 'missing' }, day: { status: 'missing' }, at: { status: 'missing' } };

  function resultFor(context: string[], fields: Record<string, unknown>) {
    const prepared = prepareRequest(
      instance,
      {
        input: 'a'.repeat(300_000),
        fields: ['ref', 'day', 'at'],
        context: context.map((text) => ({ role: 'user', text })),
      },
      NOW,
    );
    const check = validateCandidate(
      prepared,
      JSON.stringify({ turnKind: 'request', coverage: 'complete', intents: [], fields: { ...MISSING, ...fields } }),
    );
    if (!check.ok) throw new Error(JSON.stringify(check.issues));
    return normalizeCandidate(prepared, check.candidate);
  }

  it('a 100 KB evidence against 400k-character context items', { timeout: 15_000 }, () => {
    const result = resultFor([haystack, haystack, haystack + 'b' + 'a'.repeat(50_000)], {
      ref: { status: 'filled', value: 'x', evidence },
      day: { status: 'ambiguous', candidates: ['2026-01-01'], evidence: evidence + 'b' },
    });
    expect(result.fieldResults.map((f) => f.sourceRefs)).toEqual([[{ root: 'context', pointer: '/2/text' }], [], []]);
  });

  it('a 100 KB date-time value (a long fraction) is searched the same way', { timeout: 15_000 }, () => {
    const stamp = '2026-01-01T00:00:00.';
    const value = stamp + '0'.repeat(50_000) + '1' + '0'.repeat(50_000) + 'Z';
    const padding = stamp + '0'.repeat(400_000);
    const notStated = resultFor([padding, padding], { at: { status: 'filled', value } });
    expect(notStated.inferences.map((i) => i.kind)).toEqual(['time']);
    const stated = resultFor([padding, `at ${value}.`], { at: { status: 'filled', value } });
    expect(stated.inferences).toEqual([]);
  });
});

describe('limits.maxContextItemChars [H08-SEARCH-LINEAR]', () => {
  const instance = resolveInstance({ limits: { maxContextItemChars: 1_000 } });
  const context = (...lengths: number[]) => lengths.map((n) => ({ role: 'user', text: 's'.repeat(n) }));

  it('accepts items up to the limit', () => {
    expect(prepareRequest(instance, { input: 'x', context: context(1_000, 5) }, NOW).request.context).toHaveLength(2);
  });

  it('refuses a longer item with INPUT_INVALID naming its index, never quoting it', () => {
    let error: unknown;
    try {
      prepareRequest(instance, { input: 'x', context: context(3, 1_001, 2_000) }, NOW);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(IntentError);
    const e = error as IntentError;
    expect(e.code).toBe('INPUT_INVALID');
    expect(e.message).toContain('item 1 ');
    expect(e.message).toContain('1000 characters');
    expect(e.details).toEqual({ issues: [{ path: '/context/1/text', message: expect.any(String) as unknown }] });
    expect(JSON.stringify(e.toJSON())).not.toContain('sss');
  });

  it('defaults to 20,000 characters', () => {
    expect(() => prepareRequest(resolveInstance({}), { input: 'x', context: context(20_001) }, NOW)).toThrow(
      /item 0 is longer than 20000/,
    );
  });

  it.each([0, -1, 1.5, Number.NaN, 10_000_001])('refuses %s with CONFIG_INVALID naming it', (bad) => {
    expect(() => resolveInstance({ limits: { maxContextItemChars: bad } })).toThrow(/limits\/maxContextItemChars/);
  });
});

describe('baseline ids stay exact numbers', () => {
  const withIntent = (id: string) => ({
    input: 'and another one',
    baseline: {
      schemaVersion: SCHEMA_VERSION,
      coverage: 'complete',
      scope: 'conversation',
      intents: [{ ...node(1), id, constraints: [] }],
      constraints: [],
      relations: [],
      unresolved: [],
    },
  });

  it('numbers the next intent after a 15-digit id', () => {
    const prepared = prepareRequest(resolveInstance({}), withIntent('intent-999999999999998'), NOW);
    const check = validateCandidate(
      prepared,
      JSON.stringify({
        turnKind: 'followup',
        coverage: 'complete',
        intents: [{ domain: null, action: 'a', target: null, goal: 'g', understanding: 'clear' }],
      }),
    );
    if (!check.ok) throw new Error(JSON.stringify(check.issues));
    expect(normalizeCandidate(prepared, check.candidate).turn.intentIds).toEqual(['intent-999999999999999']);
  });

  it.each(['intent-9007199254740993', `intent-1${'0'.repeat(400)}`])(
    'refuses a longer id (%s would make the next id a duplicate or "intent-Infinity")',
    (id) => {
      expect(() => prepareRequest(resolveInstance({}), withIntent(id), NOW)).toThrow(/at most 15 digits/);
    },
  );
});
