/**
 * `intent-mcp serve --inspect [PORT]` on the built command: off by default, the default ports (listen port + 1 over
 * HTTP, 3002 over stdio), and a refusal (one stderr line, exit 2) for a non-loopback inspector address, a bad port or a
 * port already taken.
 */
import { get } from 'node:http';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { INSPECT_STDIO_PORT, resolveServe } from '../../src/server/app.js';
import { ensureBuilt, runCli, startCli, stopAllChildren } from '../support/serverProcess.js';

let blocker: Server | undefined;
afterEach(async () => {
  await stopAllChildren();
  const server = blocker;
  if (server !== undefined)
    await new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
  blocker = undefined;
});

describe('[S05-INSPECT-SECURITY] --inspect on the command', () => {
  it('is off by default, and defaults to the HTTP port + 1 or 3002 over stdio', () => {
    expect(resolveServe({}).inspect).toBeUndefined();
    expect(resolveServe({ inspect: true }).inspect).toEqual({ host: '127.0.0.1', port: INSPECT_STDIO_PORT });
    expect(INSPECT_STDIO_PORT).toBe(3002);
    expect(resolveServe({ transport: 'http', port: 4000, inspect: true }).inspect?.port).toBe(4001);
    expect(resolveServe({ transport: 'http', port: 4000, inspect: 5000 }).inspect?.port).toBe(5000);
    expect(resolveServe({ transport: 'http', port: 0, inspect: true }).inspect?.port).toBe(0);
    expect(resolveServe({ inspect: true, inspectHost: '::1' }).inspect?.host).toBe('::1');
  });

  it.each([['0.0.0.0'], ['::'], ['192.168.1.10'], ['example.com']])(
    'refuses a non-loopback inspector address %s: one line, exit 2',
    async (host) => {
      const run = await runCli(['serve', '--inspect', '0', '--inspect-host', host]);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/^intent-mcp: The inspector only listens on loopback; .* is not a loopback address/);
    },
  );

  it('refuses --inspect-host without --inspect instead of ignoring it: one line, exit 2', async () => {
    expect(() => resolveServe({ inspectHost: '127.0.0.1' })).toThrow(/--inspect-host needs --inspect/);
    const run = await runCli(['serve', '--inspect-host', '::1']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^intent-mcp: --inspect-host needs --inspect/);
  });

  it('over stdio the command still ends when its client closes stdin, with a page watching the inspector', async () => {
    await ensureBuilt();
    const served = startCli(['serve', '--inspect', '0']);
    const [, url = ''] = await served.waitForStderr(/inspector listening url=(\S+)/);
    // A page's event stream stays open on the inspector (it kept the process alive before).
    const stream = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      get(`${url}api/events`, resolve).on('error', reject);
    });
    expect(stream.statusCode).toBe(200);
    served.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    await served.waitForStdout(/"id":1/);
    served.child.stdin?.end();
    const exit = await served.waitForExit(15_000);
    expect(exit.timedOut).toBe(false);
    expect(exit.code).toBe(0);
    stream.destroy();
  });

  it('refuses a bad port, and a port already taken: one line, exit 2', async () => {
    const bad = await runCli(['serve', '--inspect', '70000']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/--inspect/);
    const server = createServer();
    blocker = server;
    const port = await new Promise<number>((resolve) => {
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        resolve(typeof address === 'object' && address !== null ? address.port : 0);
      });
    });
    const taken = await runCli(['serve', '--inspect', String(port)]);
    expect(taken.code).toBe(2);
    expect(taken.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(taken.stderr).toMatch(/inspector cannot listen on "127\.0\.0\.1" port \d+ \(EADDRINUSE\)/);
  });
});
