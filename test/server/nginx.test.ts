/**
 * Behind a TLS proxy (spec 05 "Host and Origin": the proxy terminates TLS and forwards Host unchanged; the server listens
 * on loopback with --public-origin). A real nginx with a self-signed certificate for `localhost` in front of the built
 * command started with `--public-origin https://localhost:<nginx port>`: the official client, verifying the certificate,
 * completes the seed handoff through nginx; and the same server refuses a direct request carrying the public Host with
 * another Origin. Without nginx or openssl the file skips with a one-line notice on stderr; under `.ci/run`
 * (`INTENT_MCP_REQUIRE_SYSTEM_PACKAGES=1`, which installs both) a missing one fails it instead.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startBuiltServer, type ChildServer } from '../support/httpChild.js';
import {
  HTTP_REVISIONS,
  MCP_ACCEPT,
  acceptSeed,
  connectClient,
  expectGolden,
  healthSessions,
  initializeBody,
  jsonRpcErrorOf,
  messageOf,
  postInitialize,
  prepareSeed,
  rawRequest,
  type RawResponse,
} from '../support/httpHelpers.js';
import {
  SYSTEM_PACKAGES_REQUIRED,
  httpsFetchWithCa,
  missingSystemPackages,
  requireNginx,
  selfSignedCert,
  startNginx,
  type RunningNginx,
} from '../support/nginxProxy.js';

let dir = '';
let server: ChildServer | undefined;
let nginx: RunningNginx | undefined;
let ca = '';
let nginxPort = 0;
let publicOrigin = '';
let httpsFetch: ReturnType<typeof httpsFetchWithCa> | undefined;

const missing = missingSystemPackages();
const skipped = missing.length > 0 && !SYSTEM_PACKAGES_REQUIRED;
if (skipped)
  process.stderr.write(
    `skipped: the TLS proxy test needs ${missing.join(' and ')} (apt-get install nginx-light openssl; .ci/run installs them)\n`,
  );

beforeAll(async () => {
  if (skipped) return;
  requireNginx(); // fails the file with a clear message when nginx is missing under .ci/run
  dir = mkdtempSync(join(tmpdir(), 'intent-mcp-nginx-'));
  const cert = await selfSignedCert(dir);
  ca = cert.pem;
  httpsFetch = httpsFetchWithCa(ca);
  nginxPort = await freePort();
  publicOrigin = `https://localhost:${nginxPort}`;
  server = await startBuiltServer(['--public-origin', publicOrigin]);
  nginx = await startNginx({ dir, listenPort: nginxPort, upstreamPort: server.port, cert: cert.cert, key: cert.key });
}, 120_000);

afterAll(async () => {
  httpsFetch?.agent.destroy();
  await nginx?.stop();
  await server?.stop();
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

/** One request through nginx over TLS (verified against the test CA), with exact extra headers. */
function viaProxy(method: string, headers: Record<string, string>, body?: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${publicOrigin}/mcp`, { method, headers, ca, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe.skipIf(skipped)(
  '[S05-TLS-PROXY] the command behind nginx (TLS proxy) [SEED-HTTP] [SEED-PUBLIC-ORIGIN]',
  () => {
    it('the server printed its loopback URL and nginx proxies /healthz to it', async () => {
      expect(server?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        httpsRequest(`${publicOrigin}/healthz`, { ca, agent: false }, (r) => {
          let text = '';
          r.on('data', (c: Buffer) => (text += c.toString()));
          r.on('end', () => {
            resolve({ status: r.statusCode ?? 0, text });
          });
        })
          .on('error', reject)
          .end();
      });
      expect(res).toEqual({ status: 200, text: '{"status":"ok","sessions":0}' });
    });

    it('TLS is really verified: without the certificate as CA the connection is refused', async () => {
      await expect(fetch(`${publicOrigin}/healthz`)).rejects.toThrow();
    });

    it.each(HTTP_REVISIONS)(
      '%s: the official client through nginx completes the seed handoff (golden text byte for byte)',
      async (revision) => {
        const c = await connectClient(`${publicOrigin}/mcp`, revision, { fetch: httpsFetch! });
        try {
          expect(c.client.getNegotiatedProtocolVersion()).toBe(revision);
          expect(c.transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
          expect(await healthSessions(server!.base)).toBe(1);
          const task = await prepareSeed((n, a) => c.callTool(n, a));
          expectGolden(await acceptSeed((n, a) => c.callTool(n, a), task));
          const calls = c.requests.filter((r) => r.rpc.includes('tools/call'));
          expect(calls).toHaveLength(2);
          expect(new Set(calls.map((r) => r.session))).toEqual(new Set([c.transport.sessionId]));
          // DELETE through the proxy ends the session.
          await c.transport.terminateSession();
          expect(await healthSessions(server!.base)).toBe(0);
        } finally {
          await c.client.close();
        }
        // nginx really carried the traffic.
        expect(nginx!.accessLog()).toMatch(/"POST \/mcp HTTP\/1\.1" 200/);
      },
    );

    it('a stream dropped between nginx and the client is not a close: accept in the same session still works', async () => {
      const cuts: AbortController[] = [];
      const cutting = (u: string | URL, init?: RequestInit) => {
        if (init?.method !== 'GET') return httpsFetch!(u, init);
        const cut = new AbortController();
        cuts.push(cut);
        return httpsFetch!(u, {
          ...init,
          signal: init.signal ? AbortSignal.any([init.signal, cut.signal]) : cut.signal,
        });
      };
      const c = await connectClient(`${publicOrigin}/mcp`, '2025-11-25', { fetch: cutting });
      try {
        const task = await prepareSeed((n, a) => c.callTool(n, a));
        const deadline = Date.now() + 5000;
        while (cuts.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        expect(cuts.length, 'the client never opened its GET stream through nginx').toBeGreaterThan(0);
        for (const cut of cuts) cut.abort();
        expectGolden(await acceptSeed((n, a) => c.callTool(n, a), task));
        expect(await healthSessions(server!.base)).toBe(1);
      } finally {
        await c.transport.terminateSession();
        await c.client.close();
      }
      expect(await healthSessions(server!.base)).toBe(0);
    });

    it('through nginx, Origin must be the public origin exactly', async () => {
      const headers = { 'content-type': 'application/json', accept: MCP_ACCEPT };
      const good = await viaProxy('POST', { ...headers, origin: publicOrigin }, initializeBody('2025-11-25'));
      expect(good.status, good.text).toBe(200);
      const id = String(good.headers['mcp-session-id']);
      expect((messageOf(good).result as { protocolVersion: string }).protocolVersion).toBe('2025-11-25');
      const del = await viaProxy('DELETE', { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' });
      expect(del.status).toBe(200);

      for (const origin of [
        'https://evil.example',
        `http://localhost:${nginxPort}`,
        `https://127.0.0.1:${nginxPort}`,
      ]) {
        const bad = await viaProxy('POST', { ...headers, origin }, initializeBody('2025-11-25'));
        expect(bad.status, origin).toBe(403);
        jsonRpcErrorOf(bad);
      }
      expect(await healthSessions(server!.base)).toBe(0);
    });

    it('the same server refuses a direct request with the public Host but another Origin', async () => {
      const publicHost = `localhost:${nginxPort}`;
      for (const origin of [
        'https://evil.example',
        `http://${publicHost}`,
        `https://localhost:${server!.port}`,
        `${publicOrigin}.evil.example`,
      ]) {
        const res = await postInitialize(server!.url, { host: publicHost, origin });
        expect(res.status, `Origin ${origin}: ${res.text}`).toBe(403);
        expect(jsonRpcErrorOf(res).message).toMatch(/Origin/);
        expect(res.headers['mcp-session-id']).toBeUndefined();
      }
      // Forwarding headers do not help a bad Host either.
      const forwarded = await postInitialize(server!.url, {
        host: 'evil.example',
        'x-forwarded-host': publicHost,
        'x-forwarded-proto': 'https',
        forwarded: `host=${publicHost};proto=https`,
      });
      expect(forwarded.status).toBe(403);
      expect(await healthSessions(server!.base)).toBe(0);

      // The control: the public Host with the public Origin, sent directly, is served.
      const ok = await postInitialize(server!.url, { host: publicHost, origin: publicOrigin });
      expect(ok.status, ok.text).toBe(200);
      const del = await rawRequest(server!.url, {
        method: 'DELETE',
        headers: {
          host: publicHost,
          'mcp-session-id': String(ok.headers['mcp-session-id']),
          'mcp-protocol-version': '2025-11-25',
        },
      });
      expect(del.status).toBe(200);
      expect(await healthSessions(server!.base)).toBe(0);
    });
  },
);
