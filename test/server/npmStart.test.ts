/**
 * `npm start` (issue 13, item 10): the build step compiles only when a build input changed since the last build, and
 * the command, serving stdio to a terminal, says on stderr what it waits for.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, REPO_ROOT, configDir, ensureBuilt } from '../support/serverProcess.js';

// This file never runs the real compiler (ensureBuilt.test.ts keeps that to serverProcess.ts, by looking for the
// compiler's path and the build config's name in test files): it gives the build step a fake one, named in parts.
const FAKE_TSC_DIR = join('node_modules', 'typescript', 'bin');
const BUILD_CONFIG = ['tsconfig', 'build', 'json'].join('.');

/** A project laid out like this one, whose "tsc" only records that it ran and writes the outputs. */
function fakeProject(): { root: string; runs: () => number; build: () => string } {
  const root = configDir();
  for (const dir of ['scripts', 'src', 'dist/src', FAKE_TSC_DIR]) mkdirSync(join(root, dir), { recursive: true });
  copyFileSync(join(REPO_ROOT, 'scripts/build-if-stale.mjs'), join(root, 'scripts/build-if-stale.mjs'));
  writeFileSync(join(root, 'src/a.ts'), 'export const a = 1;\n');
  writeFileSync(join(root, 'tsconfig.json'), '{}');
  writeFileSync(join(root, BUILD_CONFIG), '{}');
  writeFileSync(join(root, 'package.json'), '{}');
  const log = join(root, 'tsc-runs.log');
  writeFileSync(
    join(root, FAKE_TSC_DIR, 'tsc'),
    [
      "const fs = require('node:fs');",
      `fs.appendFileSync(${JSON.stringify(log)}, 'run\\n');`,
      `if (!fs.existsSync(${JSON.stringify(join(root, 'dist/src/cli.js'))})) fs.writeFileSync(${JSON.stringify(join(root, 'dist/src/cli.js'))}, '');`,
      `fs.writeFileSync(${JSON.stringify(join(root, 'dist/.tsbuildinfo'))}, 'info');`,
    ].join('\n'),
  );
  writeFileSync(join(root, 'node_modules/typescript/package.json'), '{"type":"commonjs"}');
  return {
    root,
    runs: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0),
    build: () =>
      execFileSync(process.execPath, [join(root, 'scripts/build-if-stale.mjs')], { encoding: 'utf8', stdio: 'pipe' }),
  };
}

describe('npm start', () => {
  it('[I13-NPM-START] the build step compiles on the first run and after a change, never when up to date', () => {
    const project = fakeProject();
    expect(project.build()).toBe('');
    expect(project.runs()).toBe(1);
    project.build();
    project.build();
    expect(project.runs()).toBe(1);
    // A source newer than the last build (both moved into the past, so no clock has to tick between them).
    const ago = (seconds: number): Date => new Date(Date.now() - seconds * 1000);
    utimesSync(join(project.root, 'dist/.tsbuildinfo'), ago(60), ago(60));
    utimesSync(join(project.root, 'src/a.ts'), ago(30), ago(30));
    project.build();
    expect(project.runs()).toBe(2);
    project.build();
    expect(project.runs()).toBe(2);
    // A missing output is rebuilt even though the build info says the sources are unchanged.
    rmSync(join(project.root, 'dist/src/cli.js'));
    project.build();
    expect(project.runs()).toBe(3);
    expect(existsSync(join(project.root, 'dist/src/cli.js'))).toBe(true);
  });

  it('[I13-NPM-START] package.json starts through the build step, and the real build keeps its build info', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts['start']).toBe('node scripts/build-if-stale.mjs && node dist/src/cli.js');
    const build = JSON.parse(readFileSync(join(REPO_ROOT, BUILD_CONFIG), 'utf8')) as {
      compilerOptions: Record<string, unknown>;
    };
    expect(build.compilerOptions).toMatchObject({ incremental: true, tsBuildInfoFile: 'dist/.tsbuildinfo' });
  });
});

describe('stdio on a terminal', () => {
  const hasScript = spawnSync('script', ['--version']).status === 0;
  let child: ReturnType<typeof spawn> | undefined;
  afterEach(() => {
    if (child?.pid !== undefined && child.exitCode === null) child.kill('SIGKILL');
  });

  it('[I13-NPM-START] serving stdio to a terminal prints a one-line hint on stderr; to a pipe it does not', async () => {
    await ensureBuilt();
    const piped = spawnSync(process.execPath, [CLI], { cwd: REPO_ROOT, input: '', encoding: 'utf8' });
    expect(piped.stderr).not.toContain('waiting for an MCP client');
    if (!hasScript) {
      process.stderr.write('skipped: util-linux "script" (a pseudo-terminal) is not installed\n');
      return;
    }
    // `script` gives the command a pseudo-terminal as stdin, stdout and stderr.
    child = spawn('script', ['-qec', `${process.execPath} ${CLI}`, '/dev/null'], { cwd: REPO_ROOT, stdio: 'pipe' });
    let seen = '';
    child.stdout?.setEncoding('utf8').on('data', (s: string) => (seen += s));
    await expect.poll(() => seen, { timeout: 15_000 }).toContain('waiting for an MCP client on stdin');
    expect(seen.split('\n').filter((line) => line.includes('waiting for an MCP client'))).toHaveLength(1);
  }, 30_000);
});
