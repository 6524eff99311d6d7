/**
 * Issue 8, items 6 and 14: every spelling of "all interfaces" needs a public origin — judged on the address actually
 * bound, not on the text of `--host` — and `--public-origin` is checked as typed, before URL parsing could clean it.
 */
import { describe, expect, it } from 'vitest';
import { IntentError } from '../../src/core/errors.js';
import { isUnspecifiedAddress, parsePublicOrigin } from '../../src/server/config.js';
import { serveHttp } from '../../src/server/http.js';
import { runBuiltCommand } from '../support/httpChild.js';
import { hostAdapter, serveOptions, startInProcess } from '../support/httpHelpers.js';

/** Spellings of 0.0.0.0 and :: that the resolver behind `listen` turns into "every interface". */
const UNSPECIFIED_SPELLINGS = [
  '0.0.0.0',
  '::',
  '0',
  '::0',
  '0:0:0:0:0:0:0:0',
  '0.0',
  '0.0.0',
  '000.000.000.000',
  '0x0',
  '0x00000000',
  '00',
  '::ffff:0.0.0.0',
  '::ffff:0:0',
  '0000::',
  '::0.0.0.0',
];

function configError(run: () => unknown): IntentError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(IntentError);
  expect((caught as IntentError).code).toBe('CONFIG_INVALID');
  return caught as IntentError;
}

describe('wildcard binds [H08-BIND-ADDRESS]', () => {
  it('recognises every spelling of the unspecified address, and nothing else', () => {
    for (const host of UNSPECIFIED_SPELLINGS) expect(isUnspecifiedAddress(host), host).toBe(true);
    for (const host of ['127.0.0.1', '127.1', '::1', 'localhost', '10.0.0.1', '::ffff:127.0.0.1', '0.0.0.1', 'x'])
      expect(isUnspecifiedAddress(host), host).toBe(false);
  });

  it.each(UNSPECIFIED_SPELLINGS)(
    '[S05-WILDCARD-BIND] the built command refuses --host %s without --public-origin: exit 2, one stderr line',
    async (host) => {
      const run = await runBuiltCommand(['serve', '--transport', 'http', '--host', host, '--port', '0']);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/every interface.*--public-origin/);
    },
    30_000,
  );

  it.each(['0', '0x0', '::0', '0:0:0:0:0:0:0:0', '::ffff:0.0.0.0', '000.000.000.000'])(
    'serveHttp itself checks the address it bound (%s): the listener is closed and CONFIG_INVALID thrown',
    async (host) => {
      let caught: unknown;
      try {
        const running = await serveHttp(hostAdapter(), serveOptions({ host }));
        await running.close();
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(IntentError);
      expect((caught as IntentError).code).toBe('CONFIG_INVALID');
      expect((caught as IntentError).message).toMatch(/every interface/);
    },
  );

  it('with a public origin an unspecified bind serves', async () => {
    const running = await serveHttp(
      hostAdapter(),
      serveOptions({ host: '0', publicOrigin: parsePublicOrigin('https://mcp.example.com') }),
    );
    expect(running.port).toBeGreaterThan(0);
    await running.close();
  });
});

describe('listen failures are refusals too', () => {
  it('a port in use or an unknown host: exit 2 with one line, no stack trace', async () => {
    const blocker = await startInProcess();
    try {
      const busy = await runBuiltCommand(['serve', '--transport', 'http', '--port', String(blocker.port)]);
      expect(busy.code).toBe(2);
      expect(busy.stderr.trim().split('\n')).toHaveLength(1);
      expect(busy.stderr).toMatch(/Cannot listen .*EADDRINUSE/);
      const unknown = await runBuiltCommand(['serve', '--transport', 'http', '--host', 'no-such-host.invalid']);
      expect(unknown.code).toBe(2);
      expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
      expect(unknown.stderr).toMatch(/Cannot listen/);
    } finally {
      await blocker.close();
    }
  }, 30_000);

  it('a bracketed IPv6 host is listened on bare', async () => {
    const running = await startInProcess({ host: '[::1]' });
    try {
      expect(running.url).toBe(`http://[::1]:${running.port}/mcp`);
    } finally {
      await running.close();
    }
  });
});

describe('--public-origin as typed [H08-ORIGIN-AS-TYPED]', () => {
  const refused: [string, RegExp][] = [
    ['https://mcp.example.com/..', /dot segments/],
    ['https://mcp.example.com/.', /dot segments/],
    ['https://mcp.example.com/./', /dot segments/],
    ['https://mcp.example.com/a/../', /dot segments/],
    ['https://@mcp.example.com', /user name or password/],
    ['https://:@mcp.example.com', /user name or password/],
    ['https://user:secret@mcp.example.com', /user name or password/],
    ['https://a@secret@mcp.example.com', /user name or password/],
    ['https:user:secret@mcp.example.com', /absolute http: or https: URL/],
    ['https:\\\\user:secret@mcp.example.com', /absolute http: or https: URL/],
    ['user:secret@mcp.example.com', /scheme|absolute/],
    ['https://mcp.example.com\\', /backslash/],
    ['https:\\\\mcp.example.com', /absolute http: or https: URL/],
    ['https://mcp.example.com\\@evil.com', /backslash/],
    ['https://mcp.ex%61mple.com', /percent-encoded/],
    ['https://mcp.example.com:', /port/],
    ['https://mcp.example.com:0', /port/],
    ['https://mcp.example.com:0443', /port/],
    ['https://mcp.example.com:65536', /port/],
    ['https://mcp.example.com:44x', /port/],
    ['https://mcp.example.com:8443:1', /port/],
    ['https://mcp.example.com//', /path/],
    ['https://mcp.example.com/%2e%2e', /path/],
    ['https://mcp.example.com/mcp', /path/],
    ['https://mcp.example.com/?', /query/],
    ['https://mcp.example.com/#', /fragment/],
    [' https://mcp.example.com', /absolute http: or https: URL/],
    ['https://mcp.example.com ', /printable ASCII/],
    ['https://mcp.exa\tmple.com', /printable ASCII/],
    ['https://mcp.example.com\n', /printable ASCII/],
    ['https://mcp.exämple.com', /printable ASCII/],
    ['https://mcp_example.com', /DNS name/],
    ['https://mcp..example.com', /DNS name/],
    ['https://[::1', /DNS name|bracketed/],
    ['https://127.1', /as browsers send it/],
    ['https://0x7f.0.0.1', /as browsers send it/],
    ['https://[0:0::1]', /as browsers send it/],
    ['https:///mcp.example.com', /name a host/],
    ['https:/mcp.example.com', /absolute http: or https: URL/],
    ['https:mcp.example.com', /absolute http: or https: URL/],
    ['javascript://mcp.example.com', /scheme/],
    ['https://*.example.com', /wildcard/],
    ['https://' + 'a'.repeat(1_000_000), /at most 512 characters/],
    ['https://' + 'a.'.repeat(500_000) + 'com', /at most 512 characters/],
    ['https://' + 'a.'.repeat(150) + 'com', /DNS name \(at most 253 characters\)/],
  ];

  // Titles quote a short prefix: one case is a 1 MB host.
  const cases = refused.map(
    ([value, rule]) => [value.length > 60 ? `${value.slice(0, 40)}…` : value, value, rule] as const,
  );
  it.each(cases)('refuses %j naming the rule, in one line, without credentials', (_title, value, rule) => {
    const error = configError(() => parsePublicOrigin(value));
    expect(error.message).toMatch(rule);
    expect(error.message).toContain('--public-origin');
    expect(error.message).not.toContain('\n');
    expect(error.message).not.toContain('secret');
    expect(error.message.length).toBeLessThan(400);
  });

  it.each([
    ['https://mcp.example.com', 'https://mcp.example.com', 'mcp.example.com'],
    ['https://mcp.example.com/', 'https://mcp.example.com', 'mcp.example.com'],
    ['HTTPS://MCP.Example.COM', 'https://mcp.example.com', 'mcp.example.com'],
    ['https://mcp.example.com:443', 'https://mcp.example.com', 'mcp.example.com'],
    ['https://mcp.example.com:8443/', 'https://mcp.example.com:8443', 'mcp.example.com:8443'],
    ['http://127.0.0.1:9000', 'http://127.0.0.1:9000', '127.0.0.1:9000'],
    ['http://[::1]:8080', 'http://[::1]:8080', '[::1]:8080'],
    ['https://xn--bcher-kva.example', 'https://xn--bcher-kva.example', 'xn--bcher-kva.example'],
    ['https://localhost:3443', 'https://localhost:3443', 'localhost:3443'],
  ])('accepts %s as origin %s, Host %s', (value, origin, host) => {
    expect(parsePublicOrigin(value)).toEqual({ origin, host });
  });

  it('the built command refuses a dot segment and an empty user info: exit 2, one line naming the rule', async () => {
    for (const [origin, rule] of [
      ['https://mcp.example.com/..', /dot segments/],
      ['https://:@mcp.example.com', /user name or password/],
    ] as const) {
      const run = await runBuiltCommand(['serve', '--transport', 'http', '--port', '0', '--public-origin', origin]);
      expect(run.code).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(rule);
    }
  }, 30_000);
});
