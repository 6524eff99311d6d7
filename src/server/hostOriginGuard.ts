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
    // Only the Host header itself counts: X-Forwarded-Host / Forwarded never widen the list (spec 05).
    const host = req.headers.host?.toLowerCase();
    if (host === undefined || !this.#allowed.hosts.has(host)) return 'Host';
    const origin = req.headers.origin;
    if (origin !== undefined && !this.#allowed.origins.has(origin.toLowerCase())) return 'Origin';
    return undefined;
  }
}
