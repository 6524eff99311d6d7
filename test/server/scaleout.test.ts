/**
 * Scale-out (issue 12): two built server processes over HTTP behind a real nginx that routes by the `Mcp-Session-Id`
 * header with `hash $http_mcp_session_id consistent;`. `initialize` has no session id, so nginx balances it
 * round-robin; each process is told the upstream list and which one it is (`--route-upstreams`, `--route-self`) and
 * makes session ids that nginx's ring sends back to it (src/server/sessionRoute.ts).
 *
 * Which process holds a session is read from outside: each process's own `/healthz` count, and a direct request to a
 * process with the session id (its own: 200; the other's: 404). Without nginx the file skips with a one-line notice;
 * under `.ci/run` (`INTENT_MCP_REQUIRE_SYSTEM_PACKAGES=1`) a missing nginx fails it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NginxHashRing, routedSessionIds } from '../../src/server/sessionRoute.js';
import { freePort, runBuiltCommand, startBuiltServer, type ChildServer } from '../support/httpChild.js';
import {
  MCP_ACCEPT,
  acceptSeed,
  connectClient,
  expectGolden,
  healthSessions,
  prepareSeed,
  rawRequest,
  seedHandoff,
  type HttpClient,
} from '../support/httpHelpers.js';
import {
  SYSTEM_PACKAGES_REQUIRED,
  nginxConfigIn,
  requireNginx,
  runNginx,
  type RunningNginx,
} from '../support/nginxProxy.js';

const SESSIONS = 50;

let nginxMissing = false;
try {
  requireNginx();
} catch {
  nginxMissing = true;
}
const skipped = nginxMissing && !SYSTEM_PACKAGES_REQUIRED;
if (skipped)
  process.stderr.write('skipped: the scale-out test needs nginx (apt-get install nginx-light; .ci/run installs it)\n');

let dir = '';
let nginx: RunningNginx | undefined;
let nginxPort = 0;
const servers: ChildServer[] = [];
const upstreams: string[] = [];

/** The nginx.conf of the README's recipe, in a temporary prefix (foreground, logs inside it). */
function nginxConf(): string {
  return nginxConfigIn(
    dir,
    `  upstream intent_mcp {
    hash $http_mcp_session_id consistent;
${upstreams.map((u) => `    server ${u};`).join('\n')}
    keepalive 32;
  }
  server {
    listen 127.0.0.1:${nginxPort};
    location / {
      proxy_pass http://intent_mcp;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 1h;
      client_max_body_size 5m;
      proxy_next_upstream error timeout;
    }
  }`,
  );
}

const proxyUrl = (): string => `http://127.0.0.1:${nginxPort}/mcp`;

/** POSTs the JSON-RPC request `message` in session `id` (revision 2025-11-25) to `url`; returns the HTTP status. */
async function postStatus(url: string, id: string, message: Record<string, unknown>): Promise<number> {
  const res = await rawRequest(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: MCP_ACCEPT,
      'mcp-session-id': id,
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...message }),
  });
  return res.status;
}

/** A `ping` in session `id` sent straight to one process, bypassing nginx: 200 when it holds the session, else 404. */
const directStatus = (server: ChildServer, id: string): Promise<number> =>
  postStatus(server.url, id, { id: 1, method: 'ping' });

/** A `tools/call` of `intent_prepare` in session `id` through nginx (Host: nginx's address); returns the HTTP status. */
const proxiedPrepareStatus = (id: string): Promise<number> =>
  postStatus(proxyUrl(), id, {
    id: 7,
    method: 'tools/call',
    params: { name: 'intent_prepare', arguments: { input: 'hello' } },
  });

beforeAll(async () => {
  if (skipped) return;
  requireNginx();
  dir = mkdtempSync(join(tmpdir(), 'intent-mcp-scaleout-'));
  nginxPort = await freePort();
  const ports = [await freePort(), await freePort()];
  upstreams.push(...ports.map((p) => `127.0.0.1:${p}`));
  for (const port of ports)
    servers.push(
      await startBuiltServer([
        '--port',
        String(port),
        '--public-origin',
        `http://127.0.0.1:${nginxPort}`,
        '--route-upstreams',
        upstreams.join(','),
        '--route-self',
        `127.0.0.1:${port}`,
      ]),
    );
  nginx = await runNginx({ dir, listenPort: nginxPort, config: nginxConf() });
}, 120_000);

afterAll(async () => {
  await nginx?.stop();
  for (const server of servers) await server.stop();
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

describe('[I12-ROUTE-RING] session ids that route back to their process', () => {
  it('ids drawn for each upstream land on it on the ring, and the ring spreads keys over every upstream', () => {
    const names = ['127.0.0.1:3001', '127.0.0.1:3002', '127.0.0.1:3003'];
    const ring = new NginxHashRing(names);
    for (const self of names) {
      const next = routedSessionIds({ upstreams: names, self });
      for (let i = 0; i < 50; i++) {
        const id = next();
        expect(id).toMatch(/^[0-9a-f-]{36}$/);
        expect(ring.pick(id)).toBe(self);
      }
    }
    const counts = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const picked = ring.pick(`key-${i}`);
      counts.set(picked, (counts.get(picked) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(names);
    for (const n of counts.values()) expect(n).toBeGreaterThan(500);
  });

  it('a self not among the upstreams, a repeated upstream or only one of the two flags is CONFIG_INVALID (exit 2, one line)', async () => {
    expect(() => routedSessionIds({ upstreams: ['a:1'], self: 'b:2' })).toThrow(/not one of --route-upstreams/);
    expect(() => routedSessionIds({ upstreams: ['a:1', 'a:1'], self: 'a:1' })).toThrow(/twice/);
    // Spelled apart but hashed alike by nginx: the later one would own no ring point and never be routed to.
    expect(() => routedSessionIds({ upstreams: ['a:', 'b:1', 'a'], self: 'a' })).toThrow(/twice/);
    expect(() => routedSessionIds({ upstreams: ['unix:a:1', 'b:2', 'a:1:'], self: 'b:2' })).toThrow(/twice/);
    for (const flags of [
      ['--route-upstreams', '127.0.0.1:1,127.0.0.1:2', '--route-self', '127.0.0.1:3'],
      ['--route-upstreams', '127.0.0.1:1,127.0.0.1:2'],
      ['--route-self', '127.0.0.1:1'],
    ]) {
      const run = await runBuiltCommand(['serve', '--transport', 'http', '--port', '0', ...flags]);
      expect(run.code).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/route/);
    }
  });

  it('the routing flags over stdio are refused, not ignored (exit 2, one line)', async () => {
    for (const flags of [
      ['--route-upstreams', '127.0.0.1:1,127.0.0.1:2', '--route-self', '127.0.0.1:1'],
      ['--route-self', '127.0.0.1:1'],
    ]) {
      const run = await runBuiltCommand(['serve', '--transport', 'stdio', ...flags]);
      expect(run.code).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/do nothing over stdio/);
    }
  });
});

describe.skipIf(skipped)('[I12-SCALE-OUT] two processes behind nginx, routed by Mcp-Session-Id', () => {
  const clients: HttpClient[] = [];
  const owner = new Map<string, number>();

  afterAll(async () => {
    for (const c of clients) await c.client.close().catch(() => undefined);
  });

  it(`${SESSIONS} sessions through nginx spread over both processes and all complete handoffs`, async () => {
    for (let i = 0; i < SESSIONS; i++) clients.push(await connectClient(proxyUrl(), '2025-11-25'));
    await Promise.all(clients.map((c) => seedHandoff((n, a) => c.callTool(n, a))));
    const counts = [await healthSessions(servers[0]!.base), await healthSessions(servers[1]!.base)];
    expect(counts[0]! + counts[1]!).toBe(SESSIONS);
    expect(counts[0]).toBeGreaterThan(0);
    expect(counts[1]).toBeGreaterThan(0);
    // Each session lives on exactly one process: that one answers it directly, the other says 404.
    for (const c of clients) {
      const id = c.transport.sessionId!;
      const statuses = [await directStatus(servers[0]!, id), await directStatus(servers[1]!, id)];
      expect(statuses.sort()).toEqual([200, 404]);
      owner.set(id, (await directStatus(servers[0]!, id)) === 200 ? 0 : 1);
    }
    expect([...owner.values()].filter((o) => o === 0)).toHaveLength(counts[0]!);
    // A second handoff in every session still lands where the session lives.
    await Promise.all(clients.map((c) => seedHandoff((n, a) => c.callTool(n, a))));
  });

  it('DELETE through nginx reaches the process that holds the session', async () => {
    for (const process of [0, 1]) {
      const index = clients.findIndex((c) => owner.get(c.transport.sessionId!) === process);
      expect(index).toBeGreaterThanOrEqual(0);
      const [c] = clients.splice(index, 1);
      const before = [await healthSessions(servers[0]!.base), await healthSessions(servers[1]!.base)];
      const id = c!.transport.sessionId!;
      await c!.end();
      const after = [await healthSessions(servers[0]!.base), await healthSessions(servers[1]!.base)];
      expect(after[process]).toBe(before[process]! - 1);
      expect(after[1 - process]).toBe(before[1 - process]);
      expect(await directStatus(servers[process]!, id)).toBe(404);
    }
  });

  it("killing one process fails only its sessions (404, then a fresh initialize works); the others' are untouched", async () => {
    const victim = 0;
    servers[victim]!.child.kill('SIGKILL');
    await new Promise((r) => servers[victim]!.child.once('exit', r));
    const mine = clients.filter((c) => owner.get(c.transport.sessionId!) === victim);
    const others = clients.filter((c) => owner.get(c.transport.sessionId!) !== victim);
    expect(mine.length).toBeGreaterThan(0);
    expect(others.length).toBeGreaterThan(0);
    for (const c of mine) expect(await proxiedPrepareStatus(c.transport.sessionId!)).toBe(404);
    // The survivor's sessions go on as before, a prepared request of one of them included.
    const task = await prepareSeed((n, a) => others[0]!.callTool(n, a));
    await Promise.all(others.map((c) => seedHandoff((n, a) => c.callTool(n, a))));
    expectGolden(await acceptSeed((n, a) => others[0]!.callTool(n, a), task));
    // A client whose session died starts over: a fresh initialize through nginx lands on the survivor and works.
    for (let i = 0; i < 4; i++) {
      const fresh = await connectClient(proxyUrl(), '2025-11-25');
      clients.push(fresh);
      await seedHandoff((n, a) => fresh.callTool(n, a));
      expect(await directStatus(servers[1]!, fresh.transport.sessionId!)).toBe(200);
    }
    expect(await healthSessions(servers[1]!.base)).toBe(others.length + 4);
  });
});
