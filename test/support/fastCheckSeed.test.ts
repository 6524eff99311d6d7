/** The shared property-test seed (test/support/fastCheckSeed.ts, a vitest setup file). */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FC_SEED, propertySeed } from './fastCheckSeed.js';

describe('property tests run on one fixed seed', () => {
  it('the setup file has set the seed for this file, from FC_SEED or the default', () => {
    expect(fc.readConfigureGlobal().seed).toBe(propertySeed());
  });

  it('FC_SEED chooses the seed; unset or empty means the default; anything but an integer is refused', () => {
    expect(propertySeed({})).toBe(DEFAULT_FC_SEED);
    expect(propertySeed({ FC_SEED: '' })).toBe(DEFAULT_FC_SEED);
    expect(propertySeed({ FC_SEED: '-17' })).toBe(-17);
    for (const bad of ['x', '1.5', '1e3', '99999999999999999999'])
      expect(() => propertySeed({ FC_SEED: bad })).toThrow(/FC_SEED/);
  });

  it('two runs of one property see the same cases', () => {
    const run = (): number[] => {
      const seen: number[] = [];
      fc.assert(
        fc.property(fc.integer(), (n) => {
          seen.push(n);
        }),
        { numRuns: 20 },
      );
      return seen;
    };
    expect(run()).toEqual(run());
  });

  it('every fc.assert / fc.check under test/ uses the shared seed, or pins one and says why', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const path = join(dir, name);
        return statSync(path).isDirectory() ? files(path) : name.endsWith('.test.ts') ? [path] : [];
      });
    const unexplained: string[] = [];
    for (const file of files(new URL('..', import.meta.url).pathname)) {
      const lines = readFileSync(file, 'utf8').split('\n');
      lines.forEach((line, i) => {
        if (/\bseed:\s*[-\d]/.test(line) && !/Pinned/.test(lines[i - 1] ?? '')) unexplained.push(`${file}:${i + 1}`);
      });
    }
    expect(unexplained).toEqual([]);
  });
});
