/**
 * A field's `pattern` is trusted configuration, but it runs on caller values: `limits.maxPatternValueChars` bounds what
 * it runs on, so that even a super-linear pattern costs at most a polynomial in the bound, never in the candidate size.
 */
import { describe, expect, it } from 'vitest';
import { resolveInstance } from '../../src/core/instance.js';
import { normalizeCandidate } from '../../src/core/normalize.js';
import { prepareRequest } from '../../src/core/request.js';
import { validateCandidate } from '../../src/core/validate.js';

const NOW = new Date('2026-03-04T05:06:07.000Z');

function statusOf(limit: number | undefined, value: string, pattern = '^a*$'): string | undefined {
  const instance = resolveInstance({
    schema: { fields: { code: { type: 'string', pattern } } },
    ...(limit === undefined ? {} : { limits: { maxPatternValueChars: limit } }),
  });
  const prepared = prepareRequest(instance, { input: 'the code', fields: ['code'] }, NOW);
  const check = validateCandidate(
    prepared,
    JSON.stringify({
      turnKind: 'request',
      coverage: 'complete',
      intents: [],
      fields: { code: { status: 'filled', value } },
    }),
  );
  if (!check.ok) throw new Error(JSON.stringify(check.issues));
  return normalizeCandidate(prepared, check.candidate).fieldResults[0]?.status;
}

describe('limits.maxPatternValueChars', () => {
  it('runs the pattern on values up to the limit (default 1,000)', () => {
    expect(statusOf(undefined, 'a'.repeat(1_000))).toBe('filled');
    expect(statusOf(undefined, 'b')).toBe('invalid');
    expect(statusOf(10, 'a'.repeat(10))).toBe('filled');
  });

  it('marks a longer value invalid without running the pattern', () => {
    expect(statusOf(undefined, 'a'.repeat(1_001))).toBe('invalid');
    expect(statusOf(10, 'a'.repeat(11))).toBe('invalid');
    expect(statusOf(undefined, 'a'.repeat(1024 * 1024))).toBe('invalid');
  });

  it.each([0, 1.5, Number.NaN, 100_001])('refuses %s with CONFIG_INVALID naming it', (bad) => {
    expect(() => resolveInstance({ limits: { maxPatternValueChars: bad } })).toThrow(/limits\/maxPatternValueChars/);
  });
});

describe('patterns that can backtrack catastrophically [H08-PATTERN-LINEAR]', () => {
  it('a nested-quantifier pattern runs in linear time: a value that took seconds is answered at once, correctly', () => {
    // On the backtracking engine `^(\d+)+$` against 32 digits and an "x" took ~10 s of CPU (hostile test).
    expect(statusOf(undefined, '1'.repeat(999) + 'x', '^(\\d+)+$')).toBe('invalid');
    expect(statusOf(undefined, '1'.repeat(999), '^(\\d+)+$')).toBe('filled');
    expect(statusOf(undefined, 'a.'.repeat(499) + '1', '^([a-z]+\\.)*[a-z]+$')).toBe('invalid');
    expect(statusOf(undefined, 'ab.cd.ef', '^([a-z]+\\.)*[a-z]+$')).toBe('filled');
  });

  it('ordinary patterns keep their unicode semantics', () => {
    expect(statusOf(undefined, '😀ab', '^.{3}$')).toBe('filled');
  });

  it('a nested-quantifier pattern the linear engine cannot run (a backreference, a lookaround) is CONFIG_INVALID', () => {
    for (const pattern of ['^((a)\\2+)+$', '^(?=x)(\\d+)+$']) {
      let code = '';
      let message = '';
      try {
        resolveInstance({ schema: { fields: { code: { type: 'string', pattern } } } });
      } catch (error) {
        code = (error as { code?: string }).code ?? '';
        message = (error as Error).message;
      }
      expect(code).toBe('CONFIG_INVALID');
      expect(message).toMatch(/pattern/);
    }
  });
});
