import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requirements } from './requirements.js';

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    return name.endsWith('.test.ts') && name !== 'requirements.test.ts' ? [path] : [];
  });
}

/**
 * The titles of the tests and suites that run: the first string argument of `it`, `test` and `describe` (also after
 * `.each(...)`, and after `.skipIf(...)` / `.runIf(...)`, which skip only where a system package is missing and never
 * under .ci/run), never comments, and never `.skip` / `.todo`.
 */
const TITLE =
  /(?:\b(?:it|test|describe)(?:\.(?:only|concurrent|sequential))?\(|\.(?:skipIf|runIf)\([^()]*\)\(|\.each(?:<[^>]*>)?\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\()\s*(['"`])((?:(?!\1)[^\\]|\\.)*)\1/g;
function titlesOf(source: string): string[] {
  return [...source.matchAll(TITLE)].map((m) => m[2] ?? '');
}

const titles = testFiles(new URL('.', import.meta.url).pathname).flatMap((f) => titlesOf(readFileSync(f, 'utf8')));
const claimed = (id: string): boolean => titles.some((t) => t.includes(`[${id}]`));

describe('requirements', () => {
  it('counts claims in test titles only, not in comments or skipped tests', () => {
    const source = [
      '// [IN-COMMENT]',
      "it.skip('[SKIPPED] x', () => {});",
      "it('[TITLE] x', () => {});",
      "describe.skipIf(missing)('[CONDITIONAL] z', () => {});",
      "describe('[SUITE] y', () => {});",
      "it.each([[1, 2]])('[EACH] %s', () => {});",
      "it.each<[string, unknown]>([['a', 1]])('[EACH-TYPED] %s', () => {});",
      "it.each(ROWS.map((r) => ({ row: r })))('[EACH-NESTED] $label', () => {});",
      "const text = '[IN-STRING]';",
    ].join('\n');
    const found = titlesOf(source).join(' ');
    for (const id of ['TITLE', 'SUITE', 'CONDITIONAL', 'EACH', 'EACH-TYPED', 'EACH-NESTED'])
      expect(found).toContain(`[${id}]`);
    for (const id of ['IN-COMMENT', 'SKIPPED', 'IN-STRING']) expect(found).not.toContain(`[${id}]`);
  });

  it('has unique ids', () => {
    const ids = requirements.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('every requirement that is not pending is claimed by a test', () => {
    const missing = requirements.filter((r) => r.pending === undefined && !claimed(r.id)).map((r) => r.id);
    expect(missing).toEqual([]);
  });

  it('no pending requirement is already claimed (drop its pending mark)', () => {
    const stale = requirements.filter((r) => r.pending !== undefined && claimed(r.id)).map((r) => r.id);
    expect(stale).toEqual([]);
  });

  it('lists what is still pending, by issue', () => {
    const pending = requirements.filter((r) => r.pending !== undefined);
    for (const r of pending) expect(r.pending).toMatch(/^issue \d+$/);
    if (pending.length > 0)
      process.stderr.write(`pending requirements: ${pending.map((r) => `${r.id} (${r.pending ?? ''})`).join(', ')}\n`);
  });
});
