#!/usr/bin/env node
/**
 * `npm start`'s build step: skips the compiler when nothing under the build's inputs changed since the last build, and
 * otherwise compiles incrementally (tsconfig.build.json keeps dist/.tsbuildinfo), so a changed file recompiles alone.
 * Prints nothing when up to date (stdout is the MCP channel `npm start` serves on); progress goes to stderr.
 */
import { execFileSync } from 'node:child_process';
import process from 'node:process';
import { readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const INPUTS = ['src', 'machines', 'bench', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];
const BUILD_INFO = join(root, 'dist/.tsbuildinfo');
const OUTPUT = join(root, 'dist/src/cli.js');

/** Newest mtime under `path`, directories included (a deleted or renamed file changes its directory's mtime). */
function newest(path) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const name of readdirSync(path)) latest = Math.max(latest, newest(join(path, name)));
  return latest;
}

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

const built = mtime(BUILD_INFO);
const output = mtime(OUTPUT);
const changed = Math.max(...INPUTS.map((input) => newest(join(root, input))));
if (built !== undefined && output !== undefined && changed <= built) process.exit(0);
// An incremental build trusts its build info: without the output it would emit nothing, so start that one afresh.
if (output === undefined) rmSync(BUILD_INFO, { force: true });
process.stderr.write('intent-mcp: compiling what changed since the last build...\n');
try {
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: ['ignore', process.stderr, process.stderr],
  });
} catch {
  process.exit(1);
}
// tsc rewrites only what changed (a touched but unchanged file emits nothing): mark this build as current.
const now = new Date();
utimesSync(BUILD_INFO, now, now);
