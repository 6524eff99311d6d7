/**
 * The built command as a child process: `node dist/src/cli.js serve --transport http ...`, its URL parsed from the
 * `serving over HTTP` info line on stderr, stopped with SIGTERM (SIGKILL after a bound). `ensureBuilt()` runs
 * `tsc -p tsconfig.build.json` when dist/src/cli.js is missing or older than any file under src/.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

export const ROOT = new URL('../../', import.meta.url).pathname;
export const CLI = join(ROOT, 'dist/src/cli.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = statSync(path);
    newest = Math.max(newest, stat.isDirectory() ? newestMtime(path) : stat.mtimeMs);
  }
  return newest;
}

function builtMtime(): number {
  try {
    return statSync(CLI).mtimeMs;
  } catch {
    return -1;
  }
}

let building: Promise<void> | undefined;

/** A directory used as a lock between test files (each vitest worker would otherwise run its own tsc). */
const LOCK = join(ROOT, 'dist/.test-build-lock');

function srcIsNewer(): boolean {
  return builtMtime() < newestMtime(join(ROOT, 'src'));
}

async function runTsc(): Promise<string> {
  return new Promise<string>((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
      { cwd: ROOT, timeout: 120_000 },
      (_error, stdout, stderr) => {
        resolve(stdout + stderr);
      },
    );
  });
}

/** Builds the command when dist is missing or stale (one build at a time across test files). */
export function ensureBuilt(): Promise<void> {
  building ??= (async () => {
    const deadline = Date.now() + 150_000;
    while (srcIsNewer()) {
      mkdirSync(join(ROOT, 'dist'), { recursive: true });
      let locked = false;
      try {
        mkdirSync(LOCK);
        locked = true;
      } catch {
        // another test file is building: wait for it, then look again
      }
      if (locked) {
        try {
          if (!srcIsNewer()) return;
          const output = await runTsc();
          // tsc emits even when a file elsewhere in the build has a type error; only a stale command is fatal.
          if (srcIsNewer()) throw new Error(`building the command failed (npx tsc -p tsconfig.build.json):\n${output}`);
          return;
        } finally {
          rmSync(LOCK, { recursive: true, force: true });
        }
      }
      if (Date.now() > deadline) throw new Error(`gave up waiting for another build (remove ${LOCK} if stale)`);
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  return building;
}

/** A free TCP port on 127.0.0.1 (listen on 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => {
        resolve(port);
      });
    });
  });
}

export interface ChildServer {
  readonly child: ChildProcess;
  /** The MCP endpoint, e.g. `http://127.0.0.1:PORT/mcp`. */
  readonly url: string;
  readonly port: number;
  /** `http://127.0.0.1:PORT` */
  readonly base: string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** SIGTERM, then SIGKILL if it has not exited within 6 s; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `intent-mcp serve --transport http --host 127.0.0.1 --port 0 <extra>` and waits for its URL (bounded). */
export async function startBuiltServer(extra: string[] = [], timeoutMs = 15_000): Promise<ChildServer> {
  await ensureBuilt();
  const child = spawn(
    process.execPath,
    [CLI, 'serve', '--transport', 'http', '--host', '127.0.0.1', '--port', '0', ...extra],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      resolve(code);
    });
  });
  const stop = async (): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 6000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`the command printed no URL within ${timeoutMs} ms; stderr:\n${stderr}`));
    }, timeoutMs);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      const match = /serving over HTTP url=(http:\/\/\S+)/.exec(stderr);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the command exited (${String(code)}) before serving; stderr:\n${stderr}`));
    });
  }).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  const port = Number(new URL(url).port);
  return { child, url, port, base: `http://127.0.0.1:${port}`, stderr: () => stderr, stop };
}

/** Runs the built command to completion (bounded); resolves with its exit code and output. */
export async function runBuiltCommand(
  args: string[],
  timeoutMs = 15_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  await ensureBuilt();
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, timeout: timeoutMs }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}
