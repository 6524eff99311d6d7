/**
 * Host and Origin (spec 05 "Host and Origin", spec 01 "Protocol and remote use"): tables of allowed and denied
 * (Host, Origin) pairs, each sent as a real `initialize` to a listener. Allowed pairs get a session (then DELETEd);
 * denied ones get 403 before any MCP processing, so no session is ever created (/healthz stays at 0). Forwarding
 * headers never widen the lists. Unit level: `parsePublicOrigin` refuses every bad form naming its rule, and a wildcard
 * bind needs a public origin.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IntentError } from '../../src/core/errors.js';
import { resolveServe } from '../../src/server/app.js';
import { allowedHostsAndOrigins, parsePublicOrigin } from '../../src/server/config.js';
import { runBuiltCommand } from '../support/httpChild.js';
import {
  MCP_ACCEPT,
  healthSessions,
  initializeBody,
  jsonRpcErrorOf,
  messageOf,
  postInitialize,
  rawRequest,
  rawSocketRequest,
  startInProcess,
  type InProcessServer,
} from '../support/httpHelpers.js';

interface Case {
  host: string | undefined;
  origin?: string;
  extra?: Record<string, string>;
}

function label(c: Case): string {
  const parts = [`Host ${c.host === undefined ? '(none)' : JSON.stringify(c.host)}`];
  if (c.origin !== undefined) parts.push(`Origin ${JSON.stringify(c.origin)}`);
  for (const [k, v] of Object.entries(c.extra ?? {})) parts.push(`${k} ${JSON.stringify(v)}`);
  return parts.join(', ');
}

function headersOf(c: Case): Record<string, string> {
  return {
    ...(c.host === undefined ? {} : { host: c.host }),
    ...(c.origin === undefined ? {} : { origin: c.origin }),
    ...c.extra,
  };
}

/** An allowed pair: initialize succeeds with a session, which is then deleted with the same headers. */
async function expectAllowed(s: InProcessServer, c: Case): Promise<void> {
  const headers = headersOf(c);
  const res = await postInitialize(s.url, headers);
  expect(res.status, `${label(c)}: ${res.text}`).toBe(200);
  const id = res.headers['mcp-session-id'];
  expect(typeof id, label(c)).toBe('string');
  expect((messageOf(res).result as { protocolVersion: string }).protocolVersion).toBe('2025-11-25');
  const del = await rawRequest(s.url, {
    method: 'DELETE',
    headers: { ...headers, 'mcp-session-id': String(id), 'mcp-protocol-version': '2025-11-25' },
  });
  expect(del.status, label(c)).toBe(200);
  expect(await healthSessions(s.base)).toBe(0);
}

/** A denied pair: 403 with a JSON-RPC error, no session id, nothing created. */
async function expectDenied(s: InProcessServer, c: Case): Promise<void> {
  const res = await postInitialize(s.url, headersOf(c), '2025-11-25', c.host !== undefined);
  expect(res.status, `${label(c)}: ${res.text}`).toBe(403);
  expect(jsonRpcErrorOf(res).message).toMatch(/Forbidden/);
  expect(res.headers['mcp-session-id'], label(c)).toBeUndefined();
  expect(await healthSessions(s.base), label(c)).toBe(0);
}

describe('Host and Origin checks against a real listener [SEED-PUBLIC-ORIGIN]', () => {
  describe('(a) loopback default, no public origin', () => {
    let s: InProcessServer;
    let P: number;
    beforeAll(async () => {
      s = await startInProcess();
      P = s.port;
    });
    afterAll(async () => {
      await s.close();
    });

    it('[S05-HOST-ORIGIN] allows 127.0.0.1:PORT, localhost:PORT and [::1]:PORT, without Origin and with a matching one', async () => {
      const hosts = [`127.0.0.1:${P}`, `localhost:${P}`, `[::1]:${P}`];
      const cases: Case[] = hosts.flatMap((host) => [{ host }, { host, origin: `http://${host}` }]);
      // The Origin is checked against the diagnostic origins, whichever of them the Host names.
      cases.push({ host: `127.0.0.1:${P}`, origin: `http://localhost:${P}` });
      expect(cases).toHaveLength(7);
      for (const c of cases) await expectAllowed(s, c);
    });

    it('[S05-HOST-ORIGIN-403] denies other hosts, other ports, bare hostnames, evil.com and wrong Origins with 403 before any MCP processing', async () => {
      const cases: Case[] = [
        { host: 'evil.com' },
        { host: `evil.com:${P}` },
        { host: `127.0.0.1:${P + 1}` },
        { host: `localhost:${P === 65535 ? P - 1 : P + 1}` },
        { host: `[::1]:${P + 1}` },
        { host: '127.0.0.1' },
        { host: 'localhost' },
        { host: '[::1]' },
        { host: `10.0.0.1:${P}` },
        { host: `0.0.0.0:${P}` },
        { host: `127.0.0.2:${P}` },
        { host: `localhost.evil.com:${P}` },
        { host: `localhost:${P}.evil.com` },
        { host: `localhost:${P}`, origin: 'http://evil.com' },
        { host: `localhost:${P}`, origin: `https://localhost:${P}` },
        { host: `localhost:${P}`, origin: `http://localhost:${P + 1}` },
        { host: `localhost:${P}`, origin: 'http://localhost' },
        { host: `localhost:${P}`, origin: `http://localhost:${P}/` },
        { host: `127.0.0.1:${P}`, origin: 'null' },
        { host: `127.0.0.1:${P}`, origin: `http://127.0.0.1:${P}.evil.com` },
        { host: `[::1]:${P}`, origin: `http://evil.com:${P}` },
      ];
      for (const c of cases) await expectDenied(s, c);
    });

    it('denies a request with no Host at all (HTTP/1.0 → 403; HTTP/1.1 is already refused by the HTTP layer)', async () => {
      const body = initializeBody('2025-11-25');
      const head =
        'POST /mcp HTTP/1.0\ncontent-type: application/json\n' +
        `accept: ${MCP_ACCEPT}\ncontent-length: ${Buffer.byteLength(body)}\n`;
      const v10 = await rawSocketRequest(P, head, body);
      expect(v10.status, v10.text).toBe(403);
      expect(v10.text).toMatch(/Forbidden/);
      // An empty Host value (sent byte for byte: node:http would fill in its own).
      for (const version of ['1.0', '1.1']) {
        const empty = await rawSocketRequest(
          P,
          head.replace('HTTP/1.0', `HTTP/${version}`) + 'host: \nconnection: close\n',
          body,
        );
        expect([400, 403], `HTTP/${version} with an empty Host`).toContain(empty.status);
      }
      // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400; either way it never reaches MCP.
      const v11 = await postInitialize(s.url, {}, '2025-11-25', false);
      expect([400, 403]).toContain(v11.status);
      expect(v11.headers['mcp-session-id']).toBeUndefined();
      expect(await healthSessions(s.base)).toBe(0);
    });

    it('[S05-HOST-ORIGIN-403] checks GET and DELETE too, and a denied request with a live session id does not touch it', async () => {
      const init = await postInitialize(s.url, { host: `localhost:${P}` });
      const id = String(init.headers['mcp-session-id']);
      const session = { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' };
      for (const method of ['GET', 'DELETE', 'POST']) {
        const res = await rawRequest(s.url, {
          method,
          headers: { ...session, host: 'evil.com', accept: MCP_ACCEPT, 'content-type': 'application/json' },
          ...(method === 'POST' ? { body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) } : {}),
        });
        expect(res.status, method).toBe(403);
      }
      expect(await healthSessions(s.base)).toBe(1);
      const ok = await rawRequest(s.url, {
        method: 'DELETE',
        headers: { ...session, host: `localhost:${P}` },
      });
      expect(ok.status).toBe(200);
      expect(await healthSessions(s.base)).toBe(0);
    });

    it('/healthz is outside the MCP checks and answers whatever the Host', async () => {
      expect(await healthSessions(s.base, { host: 'evil.com' })).toBe(0);
    });
  });

  describe('(b) public origin on the default port: https://mcp.example.com', () => {
    let s: InProcessServer;
    beforeAll(async () => {
      s = await startInProcess({ publicOrigin: parsePublicOrigin('https://mcp.example.com') });
    });
    afterAll(async () => {
      await s.close();
    });

    it('[S05-HOST-ORIGIN] allows Host mcp.example.com with no Origin or Origin https://mcp.example.com; the loopback stays allowed', async () => {
      for (const c of [
        { host: 'mcp.example.com' },
        { host: 'mcp.example.com', origin: 'https://mcp.example.com' },
        { host: `127.0.0.1:${s.port}` },
        { host: `localhost:${s.port}`, origin: `http://localhost:${s.port}` },
      ])
        await expectAllowed(s, c);
    });

    it('[S05-HOST-ORIGIN-403] denies mcp.example.com:443, other hosts, and any other Origin', async () => {
      for (const c of [
        { host: 'mcp.example.com:443' },
        { host: 'mcp.example.com:80' },
        { host: `mcp.example.com:${s.port}` },
        { host: 'www.mcp.example.com' },
        { host: 'example.com' },
        { host: 'evil.com' },
        { host: 'mcp.example.com', origin: 'http://mcp.example.com' },
        { host: 'mcp.example.com', origin: 'https://mcp.example.com:443' },
        { host: 'mcp.example.com', origin: 'https://evil.com' },
        { host: 'mcp.example.com', origin: 'https://mcp.example.com.evil.com' },
        { host: 'mcp.example.com', origin: 'https://mcp.example.com/' },
        { host: 'mcp.example.com', origin: 'null' },
      ])
        await expectDenied(s, c);
    });
  });

  describe('(b2) ambiguous requests, public origin https://mcp.example.com', () => {
    let s: InProcessServer;
    beforeAll(async () => {
      s = await startInProcess({ publicOrigin: parsePublicOrigin('https://mcp.example.com') });
    });
    afterAll(async () => {
      await s.close();
    });
    const init = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    const head = (lines: string[]) =>
      [
        ...lines,
        'Content-Type: application/json',
        'Accept: application/json, text/event-stream',
        `Content-Length: ${Buffer.byteLength(init)}`,
        'Connection: close',
        '',
      ].join('\n');

    it('[S05-HOST-ORIGIN-403] two Host headers (an allowed one first), two Origins, or an absolute-form target are refused with 403', async () => {
      for (const lines of [
        ['POST /mcp HTTP/1.1', 'Host: mcp.example.com', 'Host: evil.com'],
        ['POST /mcp HTTP/1.1', 'Host: mcp.example.com', 'Origin: https://mcp.example.com', 'Origin: https://evil.com'],
        ['POST http://evil.com/mcp HTTP/1.1', 'Host: mcp.example.com'],
      ]) {
        const res = await rawSocketRequest(s.port, head(lines), init);
        expect(res.status, lines.join(' | ')).toBe(403);
      }
      // The same request with one Host header is served.
      const ok = await rawSocketRequest(s.port, head(['POST /mcp HTTP/1.1', 'Host: mcp.example.com']), init);
      expect(ok.status).toBe(200);
    });
  });

  describe('(c) public origin on a non-default port: https://mcp.example.com:8443', () => {
    let s: InProcessServer;
    beforeAll(async () => {
      s = await startInProcess({ publicOrigin: parsePublicOrigin('https://mcp.example.com:8443') });
    });
    afterAll(async () => {
      await s.close();
    });

    it('[S05-HOST-ORIGIN] allows Host mcp.example.com:8443 with Origin https://mcp.example.com:8443 or none', async () => {
      for (const c of [
        { host: 'mcp.example.com:8443' },
        { host: 'mcp.example.com:8443', origin: 'https://mcp.example.com:8443' },
      ])
        await expectAllowed(s, c);
    });

    it('[S05-HOST-ORIGIN-403] denies mcp.example.com without the port, with another port, and other Origins', async () => {
      for (const c of [
        { host: 'mcp.example.com' },
        { host: 'mcp.example.com:443' },
        { host: 'mcp.example.com:8444' },
        { host: 'mcp.example.com:8443', origin: 'https://mcp.example.com' },
        { host: 'mcp.example.com:8443', origin: 'http://mcp.example.com:8443' },
        { host: 'mcp.example.com:8443', origin: 'https://mcp.example.com:8444' },
      ])
        await expectDenied(s, c);
    });
  });

  describe('(d) forwarding headers never widen the lists', () => {
    let s: InProcessServer;
    beforeAll(async () => {
      s = await startInProcess({ publicOrigin: parsePublicOrigin('https://mcp.example.com') });
    });
    afterAll(async () => {
      await s.close();
    });

    it('[S05-FORWARDED-IGNORED] a bad Host stays 403 whatever X-Forwarded-* or Forwarded say', async () => {
      const forwarded: Record<string, string>[] = [
        { 'x-forwarded-host': 'mcp.example.com' },
        { 'x-forwarded-host': 'mcp.example.com', 'x-forwarded-proto': 'https', 'x-forwarded-port': '443' },
        { forwarded: 'host=mcp.example.com' },
        { forwarded: 'for=127.0.0.1;host=mcp.example.com;proto=https' },
        { 'x-forwarded-host': `127.0.0.1:${s.port}`, 'x-forwarded-for': '127.0.0.1' },
        { 'x-original-host': 'mcp.example.com', 'x-forwarded-server': 'mcp.example.com' },
      ];
      for (const extra of forwarded) {
        await expectDenied(s, { host: 'evil.com', extra });
        await expectDenied(s, { host: 'evil.com', origin: 'https://mcp.example.com', extra });
      }
    });

    it('[S05-FORWARDED-IGNORED] a bad Origin stays 403 whatever X-Forwarded-* or Forwarded say', async () => {
      for (const extra of [
        { 'x-forwarded-host': 'evil.com', 'x-forwarded-proto': 'http' },
        { forwarded: 'host=evil.com;proto=http' },
      ])
        await expectDenied(s, { host: 'mcp.example.com', origin: 'http://evil.com', extra });
    });
  });

  it('[S05-HOST-ORIGIN] the lists hold exactly the public host and origin plus the diagnostic ones', () => {
    const lists = allowedHostsAndOrigins(4000, parsePublicOrigin('https://mcp.example.com'));
    expect([...lists.hosts].sort()).toEqual(
      ['127.0.0.1:4000', '[::1]:4000', 'localhost:4000', 'mcp.example.com'].sort(),
    );
    expect([...lists.origins].sort()).toEqual(
      ['http://127.0.0.1:4000', 'http://[::1]:4000', 'http://localhost:4000', 'https://mcp.example.com'].sort(),
    );
    const loopback = allowedHostsAndOrigins(4000, undefined);
    expect(loopback.hosts.size).toBe(3);
    expect(loopback.origins.size).toBe(3);
  });
});

describe('parsePublicOrigin [SEED-PUBLIC-ORIGIN]', () => {
  const refused: [string, string, RegExp][] = [
    ['credentials', 'https://user:secret@mcp.example.com', /user name or password/],
    ['a user without password', 'https://user@mcp.example.com', /user name or password/],
    ['a wildcard host', 'https://*.example.com', /wildcard/],
    ['a wildcard anywhere', 'https://mcp.example.com/*', /wildcard/],
    ['a bare wildcard', '*', /wildcard/],
    ['a path', 'https://mcp.example.com/mcp', /path/],
    ['a deeper path', 'https://mcp.example.com/a/b/', /path/],
    ['a query', 'https://mcp.example.com/?a=1', /query/],
    ['an empty query', 'https://mcp.example.com?', /query/],
    ['a fragment', 'https://mcp.example.com#top', /fragment/],
    ['an empty fragment', 'https://mcp.example.com/#', /fragment/],
    ['an ftp: scheme', 'ftp://mcp.example.com', /scheme/],
    ['a ws: scheme', 'ws://mcp.example.com', /scheme/],
    ['a file: URL', 'file:///etc/passwd', /scheme/],
    ['a host without scheme', 'mcp.example.com', /absolute http: or https: URL/],
    ['an empty string', '', /absolute http: or https: URL/],
    ['a scheme without host', 'https://', /absolute http: or https: URL/],
    ['plain words', 'not a url', /absolute http: or https: URL/],
  ];

  it.each(refused)(
    '[S05-PUBLIC-ORIGIN-RULES] refuses %s (%s) with CONFIG_INVALID naming the rule',
    (_what, value, rule) => {
      let caught: unknown;
      try {
        parsePublicOrigin(value);
      } catch (error) {
        caught = error;
      }
      expect(caught, `${value} was accepted`).toBeInstanceOf(IntentError);
      const error = caught as IntentError;
      expect(error.code).toBe('CONFIG_INVALID');
      expect(error.message).toMatch(rule);
      expect(error.message).toContain('--public-origin');
      // One line, and never the password of a credentialed origin (spec 06: nothing secret in an error).
      expect(error.message).not.toContain('\n');
      expect(error.message).not.toContain('secret');
    },
  );

  it.each([
    ['https://x.example', 'https://x.example', 'x.example'],
    ['https://x.example/', 'https://x.example', 'x.example'],
    ['http://127.0.0.1:9000', 'http://127.0.0.1:9000', '127.0.0.1:9000'],
    ['http://127.0.0.1:9000/', 'http://127.0.0.1:9000', '127.0.0.1:9000'],
    ['https://mcp.example.com:443', 'https://mcp.example.com', 'mcp.example.com'],
    ['http://mcp.example.com:80/', 'http://mcp.example.com', 'mcp.example.com'],
    ['https://mcp.example.com:8443', 'https://mcp.example.com:8443', 'mcp.example.com:8443'],
    ['http://[::1]:8080', 'http://[::1]:8080', '[::1]:8080'],
    ['HTTPS://MCP.Example.COM', 'https://mcp.example.com', 'mcp.example.com'],
  ])('accepts %s as origin %s, Host %s', (value, origin, host) => {
    expect(parsePublicOrigin(value)).toEqual({ origin, host });
  });

  it('[S05-WILDCARD-BIND] a wildcard bind needs --public-origin; with one it resolves', () => {
    for (const host of ['0.0.0.0', '::']) {
      expect(() => resolveServe({ transport: 'http', host })).toThrow(/--public-origin/);
      const resolved = resolveServe({ transport: 'http', host, publicOrigin: 'https://mcp.example.com' });
      expect(resolved.publicOrigin).toEqual({ origin: 'https://mcp.example.com', host: 'mcp.example.com' });
    }
    expect(resolveServe({ transport: 'http' }).publicOrigin).toBeUndefined();
  });

  it('[S05-PUBLIC-ORIGIN-RULES] the command refuses to start with a bad --public-origin: exit 2, one line naming the rule', async () => {
    const run = await runBuiltCommand([
      'serve',
      '--transport',
      'http',
      '--port',
      '0',
      '--public-origin',
      'https://mcp.example.com/mcp',
    ]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/public-origin.*path/);
    const wildcard = await runBuiltCommand(['serve', '--transport', 'http', '--host', '0.0.0.0', '--port', '0']);
    expect(wildcard.code).toBe(2);
    expect(wildcard.stderr).toMatch(/--public-origin/);
  }, 60_000);
});
