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

const sources = testFiles(new URL('.', import.meta.url).pathname).map((f) => readFileSync(f, 'utf8'));
const claimed = (id: string): boolean => sources.some((s) => s.includes(`[${id}]`));

describe('requirements', () => {
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
