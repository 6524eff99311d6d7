/**
 * The command as a new user meets it (issue 13, item 6): startup errors in one line, the serve flags in the top-level
 * help, a suggestion for a mistyped command, JSON syntax errors with their position, and check-config without secrets.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonErrorPosition } from '../../src/server/config.js';
import { REPO_ROOT, childEnv, configDir, runCli, writeConfig } from '../support/serverProcess.js';

function oneLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0] ?? '';
}

describe('startup errors', () => {
  it('[I13-STARTUP-ERRORS] a port in use, an address of no interface here and an unresolvable host: one line each, exit 2', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const cases: [string[], RegExp][] = [
        [['--port', String(port)], /^intent-mcp: Cannot listen on "127\.0\.0\.1" port \d+ \(EADDRINUSE\)/],
        // TEST-NET-1: a valid address that is no interface of this machine.
        [['--host', '192.0.2.1', '--port', '0'], /^intent-mcp: Cannot listen on "192\.0\.2\.1".*\(EADDRNOTAVAIL\)/],
        [['--host', 'no-such-host.invalid', '--port', '0'], /^intent-mcp: Cannot listen on "no-such-host\.invalid"/],
      ];
      const runs = await Promise.all(cases.map(([args]) => runCli(['--transport', 'http', ...args])));
      runs.forEach((run, i) => {
        expect(run.code).toBe(2);
        expect(oneLine(run.stderr)).toMatch(cases[i]![1]);
        expect(run.stderr).not.toMatch(/\n\s+at /);
      });
    } finally {
      blocker.close();
    }
  }, 30_000);
});

describe('help and command names', () => {
  it('[I13-HELP-SERVE-FLAGS] the top-level --help lists the serve flags as well as the commands', async () => {
    const run = await runCli(['--help']);
    expect(run.code).toBe(0);
    for (const flag of ['--config', '--transport', '--port', '--public-origin', '--timeout-ms', '--log-level'])
      expect(run.stdout).toContain(flag);
    expect(run.stdout).toMatch(/check-config/);
  });

  it('[I13-COMMAND-SUGGESTION] "serv" is an unknown command with a suggestion of serve, exit 2', async () => {
    const run = await runCli(['serv']);
    expect(run.code).toBe(2);
    expect(oneLine(run.stderr)).toBe("intent-mcp: unknown command 'serv' (Did you mean serve?)");
    const other = await runCli(['check-confg', 'x.json']);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('unknown command');
    expect(other.stderr).toContain('check-config');
  });

  it('[I13-COMMAND-SUGGESTION] a long unknown command, option or flag value is quoted by a short prefix in its one line', async () => {
    const long = 'z'.repeat(100_000);
    for (const args of [[long], [`--${long}`], ['--port', `9${long}`]]) {
      const run = await runCli(args);
      expect(run.code).toBe(2);
      expect(oneLine(run.stderr)).toMatch(/'[^']{64}…'/);
      expect(run.stderr.length).toBeLessThan(300);
    }
  });
});

describe('config files', () => {
  it('[I13-CONFIG-JSON-POSITION] invalid JSON is reported with its line and column', async () => {
    const dir = configDir();
    const file = writeConfig(dir, 'broken.json', '{\n  "mode": "host",\n  "instances": { "main": {} },,\n}\n');
    const run = await runCli(['check-config', file]);
    expect(run.code).toBe(2);
    expect(oneLine(run.stderr)).toContain('is not valid JSON at line 3, column 31');
    const cut = await runCli(['check-config', writeConfig(dir, 'cut.json', '{\n  "mode": "host"')]);
    expect(oneLine(cut.stderr)).toContain('is not valid JSON at line 2, column 17');
    // A hostile instance name is quoted by a short prefix, not echoed whole (it was: 64 KiB on one line).
    const long = await runCli([
      'check-config',
      writeConfig(dir, 'long.json', { instances: { ['n'.repeat(100_000)]: {} } }),
    ]);
    expect(long.code).toBe(2);
    expect(oneLine(long.stderr)).toMatch(/the instance name "n{1,64}…" is invalid/);
    expect(long.stderr.length).toBeLessThan(400);
    // A byte order mark, as some editors write, is not an error.
    const bom = await runCli(['check-config', writeConfig(dir, 'bom.json', '\uFEFF{"mode":"host"}')]);
    expect(bom.code).toBe(0);
  });

  it('[I13-CONFIG-JSON-POSITION] the position is computed in linear time on a large adversarial text', () => {
    const text = '\n'.repeat(1 << 20) + 'x';
    const at = jsonErrorPosition(text, new SyntaxError(`Unexpected token in JSON at position ${text.length - 1}`));
    expect(at).toEqual({ line: (1 << 20) + 1, column: 1 });
    expect(jsonErrorPosition('{', new SyntaxError('Unexpected end of JSON input'))).toEqual({ line: 1, column: 2 });
    expect(jsonErrorPosition('{', new SyntaxError('something else'))).toBeUndefined();
  });

  it('[I13-CONFIG-JSON-POSITION] places the errors V8 reports without a position ("Unexpected token \'x\', … is not valid JSON")', () => {
    const positionOf = (text: string) => {
      try {
        JSON.parse(text);
      } catch (error) {
        return jsonErrorPosition(text, error);
      }
      throw new Error('parsed');
    };
    expect(positionOf('abc')).toEqual({ line: 1, column: 1 });
    expect(positionOf('[1,\n\n  x]')).toEqual({ line: 3, column: 3 });
    // V8 refuses the line break that cuts "tru" short: just after it.
    expect(positionOf('{\n"mode": tru\n}')).toEqual({ line: 2, column: 12 });
    // A large file with the bad token near its end: found by bisection (about 25 parses), not by a scan per offset.
    const big = `{"instances": {${Array.from({ length: 20_000 }, (_, i) => `"i${i}": {}`).join(',\n')},\n"x": ?}}`;
    expect(positionOf(big)).toEqual({ line: 20_001, column: 6 });
  });

  it('[I13-CONFIG-JSON-POSITION] a directory, a device or a file over 16 MiB is refused before it is read', async () => {
    const dir = configDir();
    const big = join(dir, 'big.json');
    writeFileSync(big, '');
    truncateSync(big, 16 * 1024 * 1024 + 1);
    mkdirSync(join(dir, 'folder.json'));
    // A FIFO with no writer: a blocking open would wait forever (runCli kills it; timedOut fails the test).
    execFileSync('mkfifo', [join(dir, 'fifo.json')]);
    const [tooBig, folder, device, fifo] = await Promise.all([
      runCli(['check-config', big]),
      runCli(['check-config', join(dir, 'folder.json')]),
      runCli(['check-config', '/dev/zero']),
      runCli(['check-config', join(dir, 'fifo.json')]),
    ]);
    expect(fifo).toMatchObject({ code: 2, timedOut: false });
    expect(oneLine(fifo.stderr)).toMatch(/not a regular file/);
    expect(tooBig.code).toBe(2);
    expect(oneLine(tooBig.stderr)).toMatch(/larger than 16777216 bytes/);
    expect(oneLine(folder.stderr)).toMatch(/not a regular file/);
    expect(oneLine(device.stderr)).toMatch(/not a regular file/);
  });

  it("[I13-CHECK-CONFIG-NO-SECRET] check-config passes on the README's executor example without its key; serving still needs the key", async () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### Executor mode'));
    const example = /```json\n([\s\S]*?)\n```/.exec(section)?.[1] ?? '';
    const config = JSON.parse(example) as { instances: { main: { executor: { apiKeyEnv: string } } } };
    const keyEnv = config.instances.main.executor.apiKeyEnv;
    expect(keyEnv).toBe('OPENAI_API_KEY');
    const file = writeConfig(configDir(), 'readme-executor.json', example);
    const env = Object.fromEntries(Object.entries(childEnv()).filter(([name]) => name !== keyEnv));
    const checked = await runCli(['check-config', file], { env });
    expect(checked.stderr).toBe('');
    expect(checked.code).toBe(0);
    const printed = JSON.parse(checked.stdout) as { ok: boolean; tools: string[]; instances: { executor: unknown }[] };
    expect(printed).toMatchObject({ ok: true, tools: ['intent_parse'] });
    expect(printed.instances[0]?.executor).toMatchObject({ apiKeyEnv: keyEnv, apiKeySet: false });
    const served = await runCli(['--config', file], { env });
    expect(served.code).toBe(2);
    expect(oneLine(served.stderr)).toContain(keyEnv);
    // With the key set, check-config says so and never prints it.
    const withKey = await runCli(['check-config', file], { env: { ...env, [keyEnv]: 'sk-secret-Q7f9' } });
    expect(withKey.code).toBe(0);
    expect(withKey.stdout).toContain('"apiKeySet": true');
    expect(withKey.stdout + withKey.stderr).not.toContain('sk-secret-Q7f9');
  }, 30_000);
});
