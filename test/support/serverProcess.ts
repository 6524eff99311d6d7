/**
 * Runs the BUILT command (`node dist/src/cli.js ...`) as a child process for the server tests (test/server/*): a
 * freshness check that rebuilds `dist/` when it is older than the sources ({@link ensureBuilt}, the only one), one-shot runs with a bounded wait, long-lived
 * children with bounded readiness waits, config files in a temp dir, and official v2 MCP clients over stdio.
 * One-shot runs end within their bound; long-lived children are tracked: call {@link stopAllChildren} in `afterEach`.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
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
// Build freshness: the one `ensureBuilt` of every test that runs the built command

/** What the build compiles from: a change to any of these makes `dist/` stale. */
const BUILD_INPUTS = ['src', 'machines', 'tsconfig.json', 'tsconfig.build.json'];
/** How long one build may take, and how long a lock may stand before it is taken to be a dead build's. */
const BUILD_TIMEOUT_MS = 150_000;

function newestMtime(path: string): number {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)));
  return newest;
}

/**
 * True when `root`'s built command is missing or older than anything under `src/` or `machines/` (or a tsconfig).
 * Directories count by their own mtime too, so deleting or renaming a source file also makes the build stale.
 */
export function buildIsStale(root: string = REPO_ROOT): boolean {
  let built: number;
  try {
    built = statSync(join(root, CLI)).mtimeMs;
  } catch {
    return true;
  }
  // The build is incremental: a build that changed other files leaves cli.js as it was but rewrites its build info.
  try {
    built = Math.max(built, statSync(join(root, 'dist/.tsbuildinfo')).mtimeMs);
  } catch {
    // No build info (built by hand without it): cli.js alone says.
  }
  return BUILD_INPUTS.some((input) => newestMtime(join(root, input)) > built);
}

function runTsc(): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
      { cwd: REPO_ROOT, timeout: BUILD_TIMEOUT_MS },
      (error, stdout, stderr) => {
        resolve({ ok: error === null, output: stdout + stderr });
      },
    );
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Takes the build lock (a directory, so taking it is atomic across the test workers); false when another holds it. */
function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    return true;
  } catch {
    try {
      if (Date.now() - statSync(lock).mtimeMs > BUILD_TIMEOUT_MS) rmSync(lock, { recursive: true, force: true });
    } catch {
      // The lock went away between the two calls: the next round takes it.
    }
    return false;
  }
}

async function build(): Promise<void> {
  const lock = join(REPO_ROOT, 'dist', '.test-build.lock');
  const deadline = Date.now() + 2 * BUILD_TIMEOUT_MS;
  while (buildIsStale()) {
    mkdirSync(join(REPO_ROOT, 'dist'), { recursive: true });
    if (tryLock(lock)) {
      try {
        // Another worker may have built while this one waited for the lock.
        if (!buildIsStale()) return;
        const { ok, output } = await runTsc();
        // An incremental build rewrites only what changed (a touched but unchanged source emits nothing): mark the
        // build as current, as `scripts/build-if-stale.mjs` does.
        const now = new Date();
        try {
          utimesSync(join(REPO_ROOT, 'dist/.tsbuildinfo'), now, now);
        } catch {
          // No build info: cli.js's own mtime decides.
        }
        // tsc emits despite a type error elsewhere; the tests only need a fresh command.
        if (buildIsStale()) throw new Error(`building the command failed (tsc -p tsconfig.build.json):\n${output}`);
        if (!ok) process.stderr.write(`tsc reported errors but emitted a fresh dist/:\n${output}\n`);
        return;
      } finally {
        rmSync(lock, { recursive: true, force: true });
      }
    }
    if (Date.now() > deadline) throw new Error(`gave up waiting for another build; remove ${lock} if no build runs`);
    await sleep(200);
  }
}

let building: Promise<void> | undefined;

/**
 * Builds `dist/` (`tsc -p tsconfig.build.json`) when the built command is missing or older than `src/`, `machines/`
 * or a tsconfig, so a test file also works standalone (`npm test` builds first). Every test that spawns the command
 * awaits this one function: one lock directory keeps the vitest workers from building at the same time, and within a
 * worker the first call's promise is shared.
 */
export function ensureBuilt(): Promise<void> {
  building ??= build();
  return building;
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

/** Builds when stale, then runs the command to completion (stdin closed), killing it when it outlives `timeoutMs`. */
export async function runCli(args: readonly string[], options: RunOptions = {}): Promise<CliRun> {
  await ensureBuilt();
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

/**
 * Starts a long-lived child with all three streams piped (stdin stays open, as an MCP client keeps it). Synchronous,
 * so it cannot build: await {@link ensureBuilt} first (in `beforeAll`).
 */
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

/** Builds when stale, then spawns `node dist/src/cli.js ...args` through the SDK's stdio transport and connects a pinned client. */
export async function connectCli(
  revision: Revision,
  args: readonly string[] = [],
  env: Record<string, string> = childEnv(),
): Promise<CliConnection> {
  await ensureBuilt();
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
