/**
 * The one build check of the tests that run the built command (`ensureBuilt` in serverProcess.ts): when it finds
 * `dist/` stale, and that no other test file builds on its own.
 */
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, REPO_ROOT, buildIsStale } from './serverProcess.js';

const BUILT_AT = new Date('2026-01-01T00:00:00Z');
const BEFORE = new Date('2025-12-31T00:00:00Z');
const AFTER = new Date('2026-01-02T00:00:00Z');

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function touch(path: string, at: Date): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, '');
  utimesSync(path, at, at);
}

/** A repository in a temp dir: sources and directories all from BEFORE, the command built at BUILT_AT. */
function repo(): string {
  const root = mkdtempSync(join(tmpdir(), 'intent-mcp-build-check-'));
  roots.push(root);
  const sources = ['src/cli.ts', 'src/server/http.ts', 'machines/handoff.ts', 'tsconfig.json', 'tsconfig.build.json'];
  for (const file of sources) touch(join(root, file), BEFORE);
  for (const dir of ['src/server', 'src', 'machines']) utimesSync(join(root, dir), BEFORE, BEFORE);
  touch(join(root, CLI), BUILT_AT);
  return root;
}

describe('ensureBuilt: when dist/ is stale', () => {
  it('a command built after every source is fresh', () => {
    expect(buildIsStale(repo())).toBe(false);
  });

  it('a missing command is stale', () => {
    const root = repo();
    rmSync(join(root, CLI));
    expect(buildIsStale(root)).toBe(true);
  });

  it.each(['machines/handoff.ts', 'src/server/http.ts', 'src/cli.ts', 'tsconfig.build.json'])(
    'a change to %s alone makes it stale',
    (file) => {
      const root = repo();
      utimesSync(join(root, file), AFTER, AFTER);
      expect(buildIsStale(root)).toBe(true);
    },
  );

  it('a source file deleted since the build makes it stale (its directory changed)', () => {
    const root = repo();
    rmSync(join(root, 'machines/handoff.ts'));
    utimesSync(join(root, 'machines'), AFTER, AFTER);
    expect(buildIsStale(root)).toBe(true);
  });
});

describe('ensureBuilt is the only build', () => {
  function files(dir: string): string[] {
    return readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? files(path) : name.endsWith('.ts') ? [path] : [];
    });
  }

  it('no test file other than serverProcess.ts runs tsc or defines its own ensureBuilt', () => {
    const testDir = join(REPO_ROOT, 'test');
    const builders = files(testDir)
      .filter((path) => !path.endsWith(join('support', 'serverProcess.ts')) && path !== import.meta.filename)
      .filter((path) =>
        /tsconfig\.build\.json|typescript\/bin\/tsc|function ensureBuilt/.test(readFileSync(path, 'utf8')),
      )
      .map((path) => relative(REPO_ROOT, path));
    expect(builders).toEqual([]);
  });
});
