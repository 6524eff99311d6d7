/**
 * Helpers of the MCP-level benchmarks (bench/mcp.ts): spawning intent-mcp and the bare SDK server as child processes,
 * reading a child's CPU time from /proc, official v2 clients over stdio and HTTP, and one handoff through a client.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { CANDIDATE_TEXT, INSTANCE_OPTIONS, REQUEST } from './fixture.js';

/** The repository root (this file runs from dist/bench/). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = join(ROOT, 'dist/src/cli.js');
export const BARE = join(ROOT, 'dist/bench/bareServer.js');

export type Side = 'ours' | 'bare';

/** A config file serving the bench fixture's instance as `main` in host mode (the same tools the bare server lists). */
export function benchConfigFile(): string {
  const dir = mkdtempSync(join(os.tmpdir(), 'intent-mcp-bench-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ mode: 'host', instances: { main: INSTANCE_OPTIONS } }));
  return file;
}

const CLK_TCK = 100;

/** User + system CPU of a process in µs from /proc/PID/stat (clock ticks of 10 ms). */
export function statCpuMicros(pid: number): number {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // After the command name: state is field 3, utime 14 and stime 15 (1-based over the whole line).
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK;
}

/**
 * CPU of every thread of a process in µs from /proc/PID/task/TID/schedstat (nanoseconds on the CPU): the same quantity
 * as /proc/PID/stat at a finer grain, for short chunks. Node's threads live as long as the process.
 */
export function schedCpuMicros(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns / 1000;
}

/**
 * With `--baseline-cli <path>`, the baseline side is another build of the command instead of the bare SDK server (a
 * before/after comparison of an optimisation: copy `dist/src` and `dist/machines` to `dist/before/` first).
 */
let baselineCli: string | undefined;
export function useBaselineCli(path: string | undefined): void {
  baselineCli = path;
}

export function serverCommand(side: Side, transport: 'stdio' | 'http', config: string, nodeArgs: string[] = []) {
  const cli = side === 'ours' ? CLI : baselineCli;
  const args =
    cli !== undefined
      ? [...nodeArgs, cli, 'serve', '--config', config, '--transport', transport, '--log-level', 'error']
      : [...nodeArgs, BARE, transport];
  if (cli !== undefined && transport === 'http')
    args.push('--host', '127.0.0.1', '--port', '0', '--max-sessions', '1000', '--log-level', 'info');
  return { command: process.execPath, args };
}

export interface StdioServer {
  side: Side;
  client: Client;
  pid: number;
  close(): Promise<void>;
}

/** Spawns a server over stdio and connects the official v2 client (default negotiation) to it. */
export async function stdioServer(side: Side, config: string, nodeArgs: string[] = []): Promise<StdioServer> {
  const { command, args } = serverCommand(side, 'stdio', config, nodeArgs);
  const transport = new StdioClientTransport({ command, args, cwd: ROOT, stderr: 'inherit' });
  const client = new Client({ name: 'intent-mcp-bench', version: '1.0.0' });
  await client.connect(transport);
  const pid = transport.pid;
  if (pid === null) throw new Error('no child pid');
  return { side, client, pid, close: () => client.close() };
}

export interface HttpServer {
  side: Side;
  url: string;
  pid: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Spawns a server over HTTP on 127.0.0.1 and a free port, and waits for its `serving over HTTP url=` line. */
export async function httpServer(side: Side, config: string): Promise<HttpServer> {
  const { command, args } = serverCommand(side, 'http', config);
  const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`no URL from ${side}: ${err}`));
    }, 20_000);
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      err = (err + s).slice(-4000);
      const m = /serving over HTTP url=(http:\/\/\S+)/.exec(err);
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      resolve();
    }),
  );
  return {
    side,
    url,
    pid: child.pid!,
    child,
    stop: async () => {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** An official v2 client over Streamable HTTP, initialized (one MCP session). */
export async function httpClient(url: string): Promise<Client> {
  const client = new Client({ name: 'intent-mcp-bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/**
 * Calls retried after a reused keep-alive connection was closed by the server at the moment it was reused (undici's
 * "other side closed"; a server closes idle connections after 5 s, which the side not being measured sits through).
 */
export const retried = { count: 0 };

async function call(client: Client, name: string, args: Record<string, unknown>) {
  try {
    return await client.callTool({ name, arguments: args });
  } catch (error) {
    if (!(error instanceof TypeError) || error.message !== 'fetch failed') throw error;
    retried.count++;
    return client.callTool({ name, arguments: args });
  }
}

/** One handoff through a client: intent_prepare, then intent_accept of the fixture candidate. Throws on an error. */
export async function clientHandoff(client: Client): Promise<void> {
  const prepared = await call(client, 'intent_prepare', { ...REQUEST });
  if (prepared.isError === true) throw new Error(`prepare failed: ${JSON.stringify(prepared.content).slice(0, 300)}`);
  const task = prepared.structuredContent as { requestId: string; submissionToken: string };
  const accepted = await call(client, 'intent_accept', {
    requestId: task.requestId,
    submissionToken: task.submissionToken,
    candidateText: CANDIDATE_TEXT,
  });
  if (accepted.isError === true) throw new Error(`accept failed: ${JSON.stringify(accepted.content).slice(0, 300)}`);
}

/** The value at quantile `q` (0–1) of `xs` (nearest rank). */
export function quantile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
}
