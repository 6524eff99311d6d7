/**
 * Command-line and output helpers shared by the bench scripts (the timing itself is `bench/measure.ts`): `--name value`
 * arguments, the re-run with `--expose-gc`, and plain-text lines and tables on stdout.
 */
import { spawnSync } from 'node:child_process';

/** The value after `--name` on the command line, if the flag is there. */
export function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
}

/**
 * `--name N` as a positive integer, `fallback` without the flag. Anything else ends the process with exit code 2 and a
 * one-line message on stderr, prefixed by `who` (the script's name in its messages).
 */
export function positiveIntArg(name: string, fallback: number, who = 'bench'): number {
  if (!process.argv.includes(`--${name}`)) return fallback;
  const value = Number(argValue(name));
  if (!Number.isInteger(value) || value <= 0) {
    process.stderr.write(`${who}: --${name} needs a positive integer\n`);
    process.exit(2);
  }
  return value;
}

/**
 * Runs this script again under `node --expose-gc` (same node flags, same arguments) when `global.gc` is missing, and
 * exits with the child's status; returns at once when the flag is already there. Lets `node dist/bench/x.js` work
 * without the caller knowing the flag (package.json stays as it is). A child that still lacks `gc` exits 1 instead of
 * spawning again.
 */
export function rerunWithExposeGc(who = 'bench'): void {
  if (typeof (globalThis as { gc?: unknown }).gc === 'function') return;
  if (process.env['INTENT_MCP_BENCH_CHILD'] === '1') {
    process.stderr.write(`${who}: global.gc is still missing after re-spawning with --expose-gc\n`);
    process.exit(1);
  }
  const child = spawnSync(
    process.execPath,
    ['--expose-gc', ...process.execArgv, process.argv[1]!, ...process.argv.slice(2)],
    { stdio: 'inherit', env: { ...process.env, INTENT_MCP_BENCH_CHILD: '1' } },
  );
  process.exit(child.status ?? 1);
}

/** One line on stdout (the bench's report channel). */
export function log(line = ''): void {
  process.stdout.write(`${line}\n`);
}

/**
 * A plain-text table on stdout: a header, a rule, the rows, then an empty line. The first `leftColumns` columns are
 * aligned left (labels), the others right (figures).
 */
export function table(header: string[], rows: string[][], leftColumns = 1): void {
  const cells = [header, ...rows];
  const widths = header.map((_, c) => Math.max(...cells.map((r) => (r[c] ?? '').length)));
  const line = (r: string[]): string =>
    r
      .map((cell, c) => (c < leftColumns ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
      .join('  ')
      .trimEnd();
  log(line(header));
  log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) log(line(r));
  log();
}
