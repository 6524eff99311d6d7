/**
 * The built command as a child process: `node dist/src/cli.js serve --transport http ...`, its URL parsed from the
 * `serving over HTTP` info line on stderr, stopped with SIGTERM (SIGKILL after a bound). Both entry points build first
 * through serverProcess.ts's `ensureBuilt`, the one build check of every test that runs the command.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { CLI as CLI_PATH, REPO_ROOT, ensureBuilt } from './serverProcess.js';

const ROOT = REPO_ROOT;
const CLI = join(ROOT, CLI_PATH);

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
