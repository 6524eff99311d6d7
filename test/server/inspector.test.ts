/**
 * The MCP Inspector CLI (`@modelcontextprotocol/inspector`, pinned devDependency) against the built command, over
 * stdio and HTTP (issue 13, item 5). Each Inspector CLI run is one process, one connection and one call: it lists the
 * tools and runs intent_prepare, but intent_accept can never follow in another run (HANDOFF_NOT_FOUND). It never sends
 * DELETE, so over HTTP its session is reclaimed by the server's idle bound.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLI,
  REPO_ROOT,
  childEnv,
  configDir,
  ensureBuilt,
  startCli,
  stopAllChildren,
} from '../support/serverProcess.js';

const require = createRequire(import.meta.url);
const INSPECTOR = join(
  dirname(require.resolve('@modelcontextprotocol/inspector/package.json')),
  'clients/launcher/build/index.js',
);

/** Runs the Inspector CLI to completion; its catalog goes to a temp dir, never the user's home. */
function inspector(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [INSPECTOR, '--cli', ...args], {
    cwd: REPO_ROOT,
    env: childEnv({ MCP_CATALOG_PATH: join(configDir(), 'catalog.json') }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const toolNames = (stdout: string): string[] =>
  (JSON.parse(stdout) as { tools: { name: string }[] }).tools.map((tool) => tool.name);
const replyOf = (stdout: string): Record<string, unknown> =>
  JSON.parse((JSON.parse(stdout) as { content: { text: string }[] }).content[0]?.text ?? '') as Record<string, unknown>;

beforeAll(async () => {
  await ensureBuilt();
}, 120_000);
afterEach(async () => {
  await stopAllChildren();
});

describe('the MCP Inspector CLI', () => {
  it('[I13-INSPECTOR-CLI] over stdio: lists the tools and runs intent_prepare; a JSON string literal passes candidateText as a string', async () => {
    const server = ['node', CLI];
    const [list, prepare, accept] = await Promise.all([
      inspector([...server, '--method', 'tools/list']),
      inspector([
        ...server,
        '--method',
        'tools/call',
        '--tool-name',
        'intent_prepare',
        '--tool-arg',
        'input=Book a table',
      ]),
      // The CLI parses a value that is JSON into JSON: '"{...}"' is how a candidate goes as a string. In a new process
      // the request is unknown, which is the point: accept must share prepare's connection.
      inspector([
        ...server,
        ...['--method', 'tools/call', '--tool-name', 'intent_accept', '--tool-arg', 'requestId=r', 'submissionToken=t'],
        'candidateText="{\\"intents\\":[]}"',
      ]),
    ]);
    expect(list.code).toBe(0);
    expect(toolNames(list.stdout)).toEqual(['intent_prepare', 'intent_accept', 'intent_cancel']);
    expect(prepare.code).toBe(0);
    expect(replyOf(prepare.stdout)).toMatchObject({
      kind: 'model_task',
      submissionToken: expect.any(String) as unknown,
    });
    expect(replyOf(accept.stdout)).toMatchObject({ error: { code: 'HANDOFF_NOT_FOUND' } });
  }, 60_000);

  it('[I13-INSPECTOR-CLI] over HTTP: lists the tools and runs intent_prepare, and no session stays open', async () => {
    const server = startCli(['--transport', 'http', '--port', '0', '--session-idle-ms', '1000']);
    const [, url] = await server.waitForStderr(/url=(http:\/\/\S+)/);
    const health = async (): Promise<number> =>
      ((await (await fetch(new URL('/healthz', url))).json()) as { sessions: number }).sessions;
    const list = await inspector([url!, '--method', 'tools/list']);
    expect(list.code).toBe(0);
    expect(toolNames(list.stdout)).toEqual(['intent_prepare', 'intent_accept', 'intent_cancel']);
    const prepare = await inspector([
      url!,
      '--method',
      'tools/call',
      '--tool-name',
      'intent_prepare',
      '--tool-arg',
      'input=hi',
    ]);
    expect(replyOf(prepare.stdout)).toMatchObject({ kind: 'model_task' });
    // The Inspector CLI never sends DELETE: the server closes its sessions once idle, live request and all.
    await expect.poll(health, { timeout: 15_000, interval: 200 }).toBe(0);
    expect(server.stderr()).toMatch(/session closed/);
  }, 60_000);
});
