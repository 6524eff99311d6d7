/**
 * "The machine decides, the engine executes": a lifecycle rule lives in `machines/handoff.ts`, and no other file of the
 * library branches on a state name. Read off the sources, so a comparison added anywhere under `src/` fails here.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { HANDOFF_STATES } from '../../machines/handoff.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

const names = HANDOFF_STATES.join('|');
/** `x === 'completed'`, `'expired' !== x`, `case 'validating':`, `.has('prepared')`, `.includes('cancelled')`. */
const BRANCH = new RegExp(
  `(?:[!=]==\\s*'(?:${names})')|(?:'(?:${names})'\\s*[!=]==)|(?:case\\s+'(?:${names})'\\s*:)|(?:\\.(?:has|includes)\\(\\s*'(?:${names})'\\s*\\))`,
);

describe('the machine decides [S03-MACHINE-DECIDES]', () => {
  it('no file under src/ compares a state with a state name: only machines/ does', () => {
    const found = sources(join(ROOT, 'src')).flatMap((path) =>
      readFileSync(path, 'utf8')
        .split('\n')
        .map((line, i) => ({ line: line.trim(), where: `${relative(ROOT, path)}:${i + 1}` }))
        .filter(({ line }) => !line.startsWith('//') && !line.startsWith('*') && BRANCH.test(line)),
    );
    expect(found).toEqual([]);
  });

  it('the check itself finds such a branch', () => {
    for (const line of [
      "if (to === 'cancelled') x();",
      "case 'validating':",
      "return 'expired' !== state;",
      "LIVE.has('prepared')",
    ])
      expect(BRANCH.test(line), line).toBe(true);
    // Reply statuses and reasons that share a word with a state are not branches on a state.
    expect(BRANCH.test("return { requestId, status: 'cancelled' };")).toBe(false);
  });
});
