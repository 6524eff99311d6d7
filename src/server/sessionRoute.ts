/**
 * Session ids that route back to the process that made them, behind nginx's consistent hash (issue 12, "Scale out").
 *
 * Behind `hash $http_mcp_session_id consistent;` every request of a session goes to the upstream server the hash of
 * its `Mcp-Session-Id` picks, but `initialize` has no session id yet and lands anywhere (nginx balances an empty key
 * round-robin). The process that answers it creates the session, so the id it hands out must hash to that very
 * process. Told the upstream list exactly as nginx's `server` lines name them, and which one it is, the process builds
 * the same ring nginx builds (the ketama-compatible ring of `ngx_http_upstream_hash_module`: 160 points per server,
 * point `j` = CRC-32 of `HOST \0 PORT` followed by point `j-1` as four little-endian bytes; a key goes to the first
 * point at or after its own CRC-32, wrapping round) and draws random UUIDs until one lands on itself: N tries on
 * average for N equal servers, a CRC-32 of 36 bytes each.
 *
 * Weights other than 1, `backup` servers and hostnames that resolve to several addresses are not modelled: list each
 * upstream as `host:port` (or `unix:/path`) with the default weight, in any order.
 */
import { randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { serverErrors } from './errors.js';

/** Points per server of weight 1 on nginx's ring. */
const POINTS_PER_SERVER = 160;
/** Draws before giving up on a self-routed id (a share this small means the configuration is not what nginx runs). */
const MAX_DRAWS_PER_SERVER = 1000;

export interface SessionRouteOptions {
  /** The upstream servers exactly as the nginx `server` lines spell them, e.g. `127.0.0.1:3001`. */
  upstreams: readonly string[];
  /** Which of them this process is. */
  self: string;
}

/** nginx's `hash ... consistent` ring over `upstreams` (weight 1 each). */
export class NginxHashRing {
  readonly #hashes: Uint32Array;
  readonly #servers: string[];

  constructor(upstreams: readonly string[]) {
    const points: { hash: number; server: string }[] = [];
    for (const server of upstreams) {
      const base = Buffer.from(ringKey(server), 'latin1');
      const prev = Buffer.alloc(4);
      for (let j = 0; j < POINTS_PER_SERVER; j++) {
        const hash = crc32(prev, crc32(base));
        points.push({ hash, server });
        prev.writeUInt32LE(hash, 0);
      }
    }
    points.sort((a, b) => a.hash - b.hash);
    // nginx keeps one point per distinct hash.
    const kept = points.filter((p, i) => i === 0 || p.hash !== points[i - 1]?.hash);
    this.#hashes = Uint32Array.from(kept.map((p) => p.hash));
    this.#servers = kept.map((p) => p.server);
  }

  /** The upstream nginx picks for `key` while every server is up. */
  pick(key: string): string {
    const hash = crc32(key);
    let low = 0;
    let high = this.#hashes.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.#hashes[mid] ?? 0) < hash) low = mid + 1;
      else high = mid;
    }
    return this.#servers[low % this.#servers.length] ?? '';
  }
}

/** Host and port of a `server` name the way nginx splits it: after the last `:` when only digits follow. */
function splitServer(server: string): { host: string; port: string } {
  if (server.slice(0, 5).toLowerCase() === 'unix:') return { host: server.slice(5), port: '' };
  const match = /^(.*):(\d*)$/.exec(server);
  return match === null ? { host: server, port: '' } : { host: match[1] ?? '', port: match[2] ?? '' };
}

/** The bytes nginx hashes for a server name: two names with the same key share their ring points. */
function ringKey(server: string): string {
  const { host, port } = splitServer(server);
  return `${host}\0${port}`;
}

/**
 * A session id generator whose ids nginx routes to `self`. Throws `CONFIG_INVALID` at construction when `self` is not
 * one of `upstreams` or a name repeats.
 */
export function routedSessionIds(options: SessionRouteOptions): () => string {
  const { upstreams, self } = options;
  if (new Set(upstreams).size !== upstreams.length) throw serverErrors.routeUpstreamRepeated();
  // nginx hashes host and port, not the spelling: `x` and `x:` (or `unix:a` and `a`) are one point set, whose points
  // the first keeps. A self shadowed that way is never picked: every initialize would spend all its draws (800 ms at
  // 1,024 upstreams) and still hand out an id nginx routes elsewhere.
  const keys = new Set(upstreams.map((server) => ringKey(server)));
  if (keys.size !== upstreams.length) throw serverErrors.routeUpstreamRepeated();
  if (!upstreams.includes(self)) throw serverErrors.routeSelfMissing(self);
  if (upstreams.length === 1) return randomUUID;
  const ring = new NginxHashRing(upstreams);
  const draws = MAX_DRAWS_PER_SERVER * upstreams.length;
  return () => {
    let id = randomUUID();
    for (let i = 1; i < draws && ring.pick(id) !== self; i++) id = randomUUID();
    return id;
  };
}
