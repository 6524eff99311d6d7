/**
 * The built command's surface (spec 05 "Invocation", "Config file", "Host and Origin"): `--help`, `--version`, one-line
 * refusals with exit code 2 for bad flags, bad config files, wildcard binds without a public origin and every bad
 * `--public-origin` form; flags over the config file; `check-config`; graceful shutdown on SIGTERM/SIGINT for stdio and
 * HTTP children; and the executor key never appearing in any output.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  childEnv,
  configDir,
  connectCli,
  ensureBuilt,
  executorBlock,
  runCli,
  startCli,
  stopAllChildren,
  writeConfig,
  type CliConnection,
  type CliRun,
  type ServingChild,
} from '../support/serverProcess.js';
import { SEED_ARGS } from '../support/mcpFixtures.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const HOST_TOOLS = ['intent_prepare', 'intent_accept', 'intent_cancel'];
/** The API key given through `TEST_KEY`; it must never show up in any output. */
const KEY = 'sk-cli-test-51d0c3-do-not-echo';
/** A loopback URL nothing is asked of: these tests never call the executor. */
const UNUSED_BASE_URL = 'http://127.0.0.1:9/v1';
/** Spec 05: exit 0 within 5 s of SIGINT/SIGTERM. */
const SHUTDOWN_BOUND_MS = 5000;
const SPAWN_TIMEOUT = 30_000;

/** Exit code 2, nothing on stdout, exactly one line on stderr starting `intent-mcp:`; returns that line. */
function expectRefusal(run: CliRun): string {
  expect(run.timedOut, `the command did not exit; stderr: ${run.stderr}`).toBe(false);
  expect(run.code, `stdout: ${run.stdout}\nstderr: ${run.stderr}`).toBe(2);
  expect(run.stdout).toBe('');
  expect(run.stderr).toMatch(/^intent-mcp: [^\n]+\n$/);
  return run.stderr.trimEnd();
}

function expectNoKey(...outputs: string[]): void {
  for (const text of outputs) {
    expect(text).not.toContain(KEY);
    expect(text).not.toContain('do-not-echo');
  }
}

beforeAll(() => ensureBuilt(), 180_000);

afterEach(async () => {
  await stopAllChildren();
});

// ---------------------------------------------------------------------------------------------------------------------

describe('--help and --version', () => {
  it('[S05-HELP-VERSION] --help exits 0 and lists serve, check-config and diagram', async () => {
    const run = await runCli(['--help']);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    for (const command of ['serve', 'check-config', 'diagram'])
      expect(run.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, 'm'));
  });

  it('[S05-HELP-VERSION] --version prints the package.json version and exits 0', async () => {
    const run = await runCli(['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(pkg.version);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// One-shot refusals run side by side: each is a separate process that exits on its own.

describe.concurrent(
  '[S05-BAD-INVOCATION] bad flags: exit 2, one line on stderr naming the problem, nothing on stdout',
  () => {
    it.each([
      { args: ['--bogus'], names: /--bogus/ },
      { args: ['--mode', 'foo'], names: /--mode/ },
      { args: ['--port', '99999'], names: /--port/ },
      { args: ['--transport', 'foo'], names: /--transport/ },
      { args: ['--log-level', 'loud'], names: /--log-level/ },
      { args: ['check-config'], names: /file/ },
    ])('$args', async ({ args, names }) => {
      const line = expectRefusal(await runCli(args));
      expect(line).toMatch(names);
    });
  },
);

describe.concurrent('[S05-BAD-INVOCATION] bad config files: exit 2 with one line naming the problem', () => {
  const dir = configDir();
  it.each([
    { what: 'a missing file', config: undefined, names: /does-not-exist\.json/ },
    { what: 'invalid JSON', config: '{"mode": "host",', names: /JSON/ },
    { what: 'an unknown key', config: { mood: 'host' }, names: /mood/ },
    { what: 'a bad instance name', config: { instances: { 'bad name!': {} } }, names: /instance name.*bad name!/ },
    {
      what: 'executor mode without an executor',
      config: { mode: 'executor', instances: { main: {} } },
      names: /executor.*"main"|"main".*executor/,
    },
    { what: 'empty instances', config: { instances: {} }, names: /instances.*empty|empty.*instances/ },
    {
      what: 'an executor whose apiKeyEnv variable is not set',
      config: {
        mode: 'executor',
        instances: { main: { executor: executorBlock(UNUSED_BASE_URL, 'INTENT_MCP_TEST_UNSET_KEY') } },
      },
      names: /INTENT_MCP_TEST_UNSET_KEY/,
    },
  ])('serve --config with $what', async ({ what, config, names }) => {
    const path =
      config === undefined
        ? `${dir}/does-not-exist.json`
        : writeConfig(dir, `${what.replace(/\W+/g, '-')}.json`, config);
    expect(expectRefusal(await runCli(['--config', path]))).toMatch(names);
  });

  it('[S05-CHECK-CONFIG] [S05-BAD-INVOCATION] check-config FILE exits 2 for a bad file, with the same one line', async () => {
    const path = writeConfig(dir, 'check-unknown-key.json', { http: { listen: 1 } });
    expect(expectRefusal(await runCli(['check-config', path]))).toMatch(/listen/);
  });

  it('[S05-SECRETS-FROM-ENV] a literal apiKey in an executor is refused: the message says to use apiKeyEnv and never echoes the key', async () => {
    const path = writeConfig(dir, 'literal-key.json', {
      mode: 'executor',
      instances: { main: { executor: { ...executorBlock(UNUSED_BASE_URL), apiKey: KEY } } },
    });
    const run = await runCli(['--config', path], { env: childEnv({ TEST_KEY: KEY }) });
    const line = expectRefusal(run);
    expect(line).toContain('apiKeyEnv');
    expect(line).toMatch(/\bapiKey\b(?!Env)/);
    expectNoKey(run.stdout, run.stderr);
  });
});

// ---------------------------------------------------------------------------------------------------------------------

describe.concurrent('[SEED-PUBLIC-ORIGIN] binds and public origins', () => {
  it.each([['0.0.0.0'], ['::']])(
    '[S05-WILDCARD-BIND] [SEED-PUBLIC-ORIGIN] --transport http --host %s without a public origin refuses to start',
    async (host) => {
      const line = expectRefusal(await runCli(['--transport', 'http', '--host', host, '--port', '0']));
      expect(line).toContain('--public-origin');
    },
  );

  it.each([
    { form: 'credentials', origin: 'https://user:pw@mcp.example.com', rule: /user name or password|credential/i },
    { form: 'a "*" wildcard host', origin: 'https://*.example.com', rule: /wildcard/i },
    { form: 'a path', origin: 'https://mcp.example.com/mcp', rule: /\bpath\b/i },
    { form: 'a query', origin: 'https://mcp.example.com?x=1', rule: /query/i },
    { form: 'a fragment', origin: 'https://mcp.example.com/#top', rule: /fragment/i },
    { form: 'a non-http scheme', origin: 'ftp://mcp.example.com', rule: /http:? or https/i },
    { form: 'not a URL', origin: 'mcp.example.com', rule: /absolute|URL/ },
  ])(
    '[S05-PUBLIC-ORIGIN-RULES] [SEED-PUBLIC-ORIGIN] --public-origin with $form is refused naming the rule',
    async ({ origin, rule }) => {
      const run = await runCli(['--transport', 'http', '--host', '0.0.0.0', '--port', '0', '--public-origin', origin]);
      const line = expectRefusal(run);
      expect(line).toMatch(/public-origin/);
      expect(line).toMatch(rule);
    },
  );

  it('[SEED-PUBLIC-ORIGIN] a bad http.publicOrigin in the config file is refused naming the rule', async () => {
    const path = writeConfig(configDir(), 'origin.json', {
      http: { host: '0.0.0.0', publicOrigin: 'https://mcp.example.com/?q' },
    });
    expect(expectRefusal(await runCli(['--config', path, '--transport', 'http', '--port', '0']))).toMatch(/query/);
  });
});

describe('a valid public origin', () => {
  it('[SEED-PUBLIC-ORIGIN] a wildcard bind with a valid public origin starts, with the origin normalised', async () => {
    const child = startCli([
      '--transport',
      'http',
      '--host',
      '0.0.0.0',
      '--port',
      '0',
      '--public-origin',
      'https://MCP.example.com:443/',
    ]);
    const [, origin] = (await child.waitForStderr(/serving over HTTP .*publicOrigin=(\S+)/)) as unknown as [
      string,
      string,
    ];
    expect(origin).toBe('https://mcp.example.com');
  });
});

// ---------------------------------------------------------------------------------------------------------------------

describe('[S05-FLAGS-OVERRIDE] flags override the config file', () => {
  let connection: CliConnection | undefined;

  afterEach(async () => {
    await connection?.close();
    connection = undefined;
  });

  it(
    'config mode executor + --mode host serves the host tools (no executor is built, so no key is needed)',
    async () => {
      const path = writeConfig(configDir(), 'executor.json', {
        mode: 'executor',
        instances: { main: { executor: executorBlock(UNUSED_BASE_URL) } },
      });
      connection = await connectCli('2025-11-25', ['--config', path, '--mode', 'host']);
      expect((await connection.client.listTools()).tools.map((t) => t.name)).toEqual(HOST_TOOLS);
      const prepared = await connection.client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS });
      expect(prepared.isError).toBe(false);
    },
    SPAWN_TIMEOUT,
  );

  it(
    'config mode host + --mode executor serves intent_parse only',
    async () => {
      const path = writeConfig(configDir(), 'host.json', {
        mode: 'host',
        instances: { main: { executor: executorBlock(UNUSED_BASE_URL) } },
      });
      connection = await connectCli(
        '2025-06-18',
        ['--config', path, '--mode', 'executor'],
        childEnv({ TEST_KEY: KEY }),
      );
      expect((await connection.client.listTools()).tools.map((t) => t.name)).toEqual(['intent_parse']);
      expectNoKey(connection.stderr());
    },
    SPAWN_TIMEOUT,
  );

  it('--port and --transport override http.port in the config file', async () => {
    const path = writeConfig(configDir(), 'http.json', { http: { port: 1, path: '/from-config' } });
    const child = startCli(['--config', path, '--transport', 'http', '--port', '0']);
    const [, url] = (await child.waitForStderr(/serving over HTTP url=(\S+)/)) as unknown as [string, string];
    const listening = new URL(url);
    expect(listening.port).not.toBe('1');
    expect(Number(listening.port)).toBeGreaterThan(0);
    expect(listening.pathname).toBe('/from-config');
    const health = await fetch(new URL('/healthz', listening));
    expect(health.status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------------------------------

describe('check-config FILE', () => {
  it('[S05-CHECK-CONFIG] prints what would be served (mode, tools, instances, http) as JSON on stdout and exits 0, without the key', async () => {
    const path = writeConfig(configDir(), 'served.json', {
      mode: 'executor',
      toolPrefix: 'acme_',
      instances: {
        orders: { executor: executorBlock(UNUSED_BASE_URL) },
        tickets: { executor: executorBlock(UNUSED_BASE_URL) },
      },
      http: { port: 4321, path: '/intents', publicOrigin: 'https://mcp.example.com', maxSessions: 7 },
    });
    const run = await runCli(['check-config', path], { env: childEnv({ TEST_KEY: KEY }) });
    expect(run.code, run.stderr).toBe(0);
    expectNoKey(run.stdout, run.stderr);
    const shown = JSON.parse(run.stdout) as {
      mode: string;
      tools: string[];
      instances: { name: string; executor: Record<string, unknown> | null }[];
      http: Record<string, unknown>;
    };
    expect(shown.mode).toBe('executor');
    expect(shown.tools).toEqual(['acme_intent_parse']);
    expect(shown.instances.map((i) => i.name)).toEqual(['orders', 'tickets']);
    expect(shown.instances[0]?.executor).toMatchObject({ kind: 'openai-compatible', model: 'm' });
    expect(shown.http).toMatchObject({
      host: '127.0.0.1',
      port: 4321,
      path: '/intents',
      publicOrigin: 'https://mcp.example.com',
      maxSessions: 7,
    });
  });

  it('a host-mode config lists the host tools', async () => {
    const path = writeConfig(configDir(), 'host.json', { mode: 'host', instances: { main: {} } });
    const run = await runCli(['check-config', path]);
    expect(run.code, run.stderr).toBe(0);
    const shown = JSON.parse(run.stdout) as { mode: string; tools: string[]; instances: { name: string }[] };
    expect(shown.mode).toBe('host');
    expect(shown.tools).toEqual(HOST_TOOLS);
    expect(shown.instances.map((i) => i.name)).toEqual(['main']);
  });

  it('[S05-CHECK-CONFIG] a config that names no instances lists the embedded default main it would serve', async () => {
    const path = writeConfig(configDir(), 'no-instances.json', { http: { port: 4321 } });
    const run = await runCli(['check-config', path]);
    expect(run.code, run.stderr).toBe(0);
    const shown = JSON.parse(run.stdout) as { instances: { name: string; fields: string[] }[] };
    expect(shown.instances).toEqual([{ name: 'main', fields: [], executor: null }]);
  });
});

// ---------------------------------------------------------------------------------------------------------------------

describe('SIGINT and SIGTERM: exit 0 within 5 s', () => {
  async function expectGracefulExit(child: ServingChild, signal: NodeJS.Signals): Promise<void> {
    const sent = Date.now();
    child.child.kill(signal);
    const exit = await child.waitForExit(SHUTDOWN_BOUND_MS + 1000);
    const took = Date.now() - sent;
    expect(exit.timedOut, `no exit within ${SHUTDOWN_BOUND_MS + 1000} ms`).toBe(false);
    expect(exit, child.stderr()).toMatchObject({ code: 0, signal: null });
    expect(took).toBeLessThan(SHUTDOWN_BOUND_MS);
  }

  it.each(['SIGTERM', 'SIGINT'] as const)(
    '[S05-SIGNALS] %s to a stdio child with an initialised session and a live request',
    async (signal) => {
      const child = startCli([]);
      child.send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'sig', version: '1.0.0' } },
      });
      await child.waitForStdout(/"id":1[,}]/);
      child.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      child.send({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'intent_prepare', arguments: SEED_ARGS },
      });
      await child.waitForStdout(/"id":2[,}]/);
      expect(child.stdout()).toContain('model_task');
      await expectGracefulExit(child, signal);
    },
    SPAWN_TIMEOUT,
  );

  it.each(['SIGTERM', 'SIGINT'] as const)(
    '[S05-SIGNALS] %s to an HTTP child (--transport http --port 0) with an open session and SSE stream',
    async (signal) => {
      const child = startCli(['--transport', 'http', '--port', '0']);
      const [, url] = (await child.waitForStderr(/serving over HTTP url=(\S+)/)) as unknown as [string, string];
      const headers = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      const init = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'sig', version: '1.0.0' } },
        }),
      });
      expect(init.status).toBe(200);
      const session = init.headers.get('mcp-session-id');
      expect(session).toBeTruthy();
      await init.text();
      const sessionHeaders = { ...headers, 'mcp-session-id': session ?? '', 'mcp-protocol-version': '2025-06-18' };
      await fetch(url, {
        method: 'POST',
        headers: sessionHeaders,
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      }).then((r) => r.text());
      // An SSE stream left open: shutdown must not wait for the client to drop it.
      const stream = new AbortController();
      const sse = await fetch(url, {
        method: 'GET',
        headers: { accept: 'text/event-stream', 'mcp-session-id': session ?? '', 'mcp-protocol-version': '2025-06-18' },
        signal: stream.signal,
      });
      expect(sse.status).toBe(200);
      try {
        await expectGracefulExit(child, signal);
      } finally {
        stream.abort();
      }
    },
    SPAWN_TIMEOUT,
  );
});
