/**
 * The Host / Origin guard of the HTTP listener (spec 05, "Host and Origin"): checked before any MCP processing, against
 * the public origin and the local diagnostic addresses of the port actually bound.
 */
import type { IncomingMessage } from 'node:http';
import { allowedHostsAndOrigins, type PublicOrigin } from './config.js';

/** The header that made a request refused. */
export type RefusedHeader = 'Host' | 'Origin';

export class HostOriginGuard {
  readonly #publicOrigin: PublicOrigin | undefined;
  #allowed: ReturnType<typeof allowedHostsAndOrigins>;

  constructor(port: number, publicOrigin: PublicOrigin | undefined) {
    this.#publicOrigin = publicOrigin;
    this.#allowed = allowedHostsAndOrigins(port, publicOrigin);
  }

  /** Allows the local addresses of the port actually bound (the asked one may have been 0). */
  bindTo(port: number): void {
    this.#allowed = allowedHostsAndOrigins(port, this.#publicOrigin);
  }

  /** The header that is not allowed, or `undefined` when the request may go on. */
  refusedHeader(req: IncomingMessage): RefusedHeader | undefined {
    // Only the Host header itself counts: X-Forwarded-Host / Forwarded never widen the list (spec 05). Node keeps the
    // first of several Host (and Origin) headers; a request that sends two is ambiguous (RFC 9112 says 400) and is
    // refused, and so is an absolute-form target (`POST http://other/mcp`), which names a host of its own.
    if (countHeader(req, 'host') !== 1 || !(req.url ?? '').startsWith('/')) return 'Host';
    const host = req.headers.host?.toLowerCase();
    if (host === undefined || !this.#allowed.hosts.has(host)) return 'Host';
    if (countHeader(req, 'origin') > 1) return 'Origin';
    const origin = req.headers.origin;
    if (origin !== undefined && !this.#allowed.origins.has(origin.toLowerCase())) return 'Origin';
    return undefined;
  }
}

/** How many times a header appears in the request as sent (`rawHeaders` alternates names and values). */
function countHeader(req: IncomingMessage, name: string): number {
  let count = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]?.toLowerCase() === name) count += 1;
  return count;
}
