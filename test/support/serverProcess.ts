/**
 * Runs the BUILT command (`node dist/src/cli.js ...`) as a child process for the server tests (test/server/*): a
 * freshness check that rebuilds `dist/` when it is older than the sources, one-shot runs with a bounded wait, long-lived
 * children with bounded readiness waits, config files in a temp dir, and official v2 MCP clients over stdio.
 * One-shot runs end within their bound; long-lived children are tracked: call {@link stopAllChildren} in `afterEach`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import type { Revision } from './mcpFixtures.js';

/** The repository root: every child runs from here. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The built command, relative to {@link REPO_ROOT}. */
export const CLI = 'dist/src/cli.js';

/** How long a one-shot run (refusals, `--help`, `check-config`) may take before it is killed and reported. */
export const RUN_TIMEOUT_MS = 15_000;
/** How long a serving child may take to say it is ready. */
export const READY_TIMEOUT_MS = 15_000;

// ---------------------------------------------------------------------------------------------------------------------
// Build freshness

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

function cliIsFresh(): boolean {
  let built: number;
  try {
    built = statSync(join(REPO_ROOT, CLI)).mtimeMs;
  } catch {
    return false;
  }
  const sources = Math.max(newestMtime(join(REPO_ROOT, 'src')), newestMtime(join(REPO_ROOT, 'machines')));
  return built >= sources;
}

/**
 * Builds `dist/` with `npx tsc -p tsconfig.build.json` when `dist/src/cli.js` is missing or older than `src/` or
 * `machines/`, so a test file also works standalone (`npm test` builds first). A lock directory keeps two test files
 * from building at the same time; a lock older than two minutes is taken to be stale.
 */
export function ensureBuilt(): void {
  if (cliIsFresh()) return;
  const lock = join(REPO_ROOT, 'dist', '.server-tests-build.lock');
  mkdirSync(join(REPO_ROOT, 'dist'), { recursive: true });
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      try {
        if (Date.now() - statSync(lock).mtimeMs > 120_000) rmSync(lock, { recursive: true, force: true });
      } catch {
        // The lock went away between the two calls: try again.
      }
      if (Date.now() > deadline) throw new Error(`${lock} is held by another build; remove it if no build runs`);
      // A bounded poll for the other build; synchronous, as this runs in beforeAll before any child exists.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    if (cliIsFresh()) return;
    const built = spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: REPO_ROOT, encoding: 'utf8' });
    // tsc emits despite type errors; the tests only need a fresh dist/src/cli.js.
    if (built.status !== 0 && !cliIsFresh()) throw new Error(`the build failed:\n${built.stdout}${built.stderr}`);
  } finally {
    rmdirSync(lock);
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Environment and config files

/** The environment of a child: the SDK's safe default set (PATH, HOME, ...) plus `extra`, nothing else. */
export function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { ...getDefaultEnvironment(), ...extra };
}

/** A fresh temp dir for config files. */
export function configDir(): string {
  return mkdtempSync(join(tmpdir(), 'intent-mcp-server-test-'));
}

/** Writes `value` (JSON-serialised, or as is when a string) to `dir/name` and returns the path. */
export function writeConfig(dir: string, name: string, value: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  return path;
}

/** The executor block of a config that talks to a (fake) OpenAI-compatible endpoint. */
export function executorBlock(baseUrl: string, apiKeyEnv = 'TEST_KEY') {
  return { kind: 'openai-compatible', baseUrl, model: 'm', apiKeyEnv } as const;
}

// ---------------------------------------------------------------------------------------------------------------------
// Children

const children = new Set<ChildProcess>();

export interface CliRun {
  /** Exit code, or null when killed by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** True when the run did not end within its bound and was killed. */
  timedOut: boolean;
}

export interface RunOptions {
  env?: Record<string, string>;
  timeoutMs?: number;
}

/** Runs the command to completion (stdin closed), killing it when it outlives `timeoutMs`. */
export function runCli(args: readonly string[], options: RunOptions = {}): Promise<CliRun> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: REPO_ROOT,
    env: options.env ?? childEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Not in `children`: a one-shot run always ends (or is killed) before its promise settles, so it needs no afterEach,
  // and concurrent tests must not kill each other's runs.
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  return new Promise((resolve) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs ?? RUN_TIMEOUT_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

export interface ServingChild {
  readonly child: ChildProcess;
  /** Everything the child wrote to stdout / stderr so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves once stderr holds a match for `pattern`; rejects after `timeoutMs` or when the child exits first. */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** The same for stdout. */
  waitForStdout(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Writes one JSON-RPC message as a line on the child's stdin. */
  send(message: unknown): void;
  /** Resolves with the exit, or with `timedOut: true` after `timeoutMs` (the child is then killed). */
  waitForExit(timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; timedOut: boolean }>;
}

/** Starts a long-lived child with all three streams piped (stdin stays open, as an MCP client keeps it). */
export function startCli(args: readonly string[], options: { env?: Record<string, string> } = {}): ServingChild {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: REPO_ROOT,
    env: options.env ?? childEnv(),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const l of [...listeners]) l();
  };
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    out += s;
    notify();
  });
  child.stderr.setEncoding('utf8').on('data', (s: string) => {
    err += s;
    notify();
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
      notify();
    });
  });
  let exited = false;
  void exit.then(() => (exited = true));

  const waitFor = (
    name: string,
    text: () => string,
    pattern: RegExp,
    timeoutMs = READY_TIMEOUT_MS,
  ): Promise<RegExpMatchArray> =>
    new Promise((resolve, reject) => {
      const stop = (): void => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      const check = (): void => {
        const match = text().match(pattern);
        if (match !== null) {
          stop();
          resolve(match);
        } else if (exited) {
          stop();
          reject(new Error(`the child exited before its ${name} matched ${pattern}; stderr:\n${err}`));
        }
      };
      const timer = setTimeout(() => {
        stop();
        reject(new Error(`${name} did not match ${pattern} within ${timeoutMs} ms; stderr:\n${err}`));
      }, timeoutMs);
      listeners.add(check);
      check();
    });

  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitForStderr: (pattern, timeoutMs) => waitFor('stderr', () => err, pattern, timeoutMs),
    waitForStdout: (pattern, timeoutMs) => waitFor('stdout', () => out, pattern, timeoutMs),
    send(message) {
      child.stdin.write(JSON.stringify(message) + '\n');
    },
    async waitForExit(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => {
          resolve('timeout');
        }, timeoutMs);
      });
      const first = await Promise.race([exit, timeout]);
      clearTimeout(timer);
      if (first !== 'timeout') return { ...first, timedOut: false };
      child.kill('SIGKILL');
      return { ...(await exit), timedOut: true };
    },
  };
}

/**
 * Kills every child {@link startCli} started that is still running (SIGKILL) and waits for them to go. Call in
 * `afterEach` of tests that do not run concurrently.
 */
export async function stopAllChildren(): Promise<void> {
  const running = [...children];
  await Promise.all(
    running.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) {
            children.delete(child);
            resolve();
            return;
          }
          child.once('close', () => {
            children.delete(child);
            resolve();
          });
          child.kill('SIGKILL');
        }),
    ),
  );
}

// ---------------------------------------------------------------------------------------------------------------------
// MCP clients over stdio

/** The official v2 client pinned to one revision. */
export function pinnedClient(revision: Revision): Client {
  const info = { name: 'intent-mcp-server-test', version: '1.0.0' };
  return revision === '2026-07-28'
    ? new Client(info, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
    : new Client(info, { supportedProtocolVersions: [revision] });
}

export interface CliConnection {
  client: Client;
  transport: StdioClientTransport;
  /** Everything the child wrote to stderr so far (stderr is piped, never inherited). */
  stderr(): string;
  close(): Promise<void>;
}

/** Spawns `node dist/src/cli.js ...args` through the SDK's stdio transport and connects a pinned client. */
export async function connectCli(
  revision: Revision,
  args: readonly string[] = [],
  env: Record<string, string> = childEnv(),
): Promise<CliConnection> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, ...args],
    env,
    cwd: REPO_ROOT,
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer | string) => (err += chunk.toString()));
  const client = pinnedClient(revision);
  await client.connect(transport);
  return {
    client,
    transport,
    stderr: () => err,
    close: async () => {
      await client.close().catch(() => undefined);
    },
  };
}
