/**
 * The live MCP sessions of one HTTP listener (spec 05, "HTTP"): one SDK transport + server + adapter session each, kept
 * by `Mcp-Session-Id`; at most `maxSessions` of them, initialising ones included; reclaimed when idle
 * (`sessionIdleMs`) or when abandoned after their handshake (`sessionInitIdleMs`, issue 8); drained before they close
 * on DELETE and shutdown (spec 04: waiters are answered `SESSION_CLOSED` before the streams close).
 */
import type { ServerResponse } from 'node:http';
import type { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import type { RateLimitedLog } from './logger.js';
import type { MountedServer } from './mcpServer.js';

export interface HttpSession {
  readonly id: string;
  readonly transport: NodeStreamableHTTPServerTransport;
  readonly mounted: MountedServer;
  lastSeen: number;
  /** Requests in flight, including an open GET stream: a session with one is not idle. */
  requestsInFlight: number;
  /** POSTs in flight: a drain waits for their responses to end. */
  postsInFlight: number;
  /** True once the session made a request past its handshake (`initialize`, `notifications/initialized`). */
  pastHandshake: boolean;
  closing: boolean;
  /** Told whenever `postsInFlight` drops (drains waiting for the session's POSTs to end). */
  readonly postWatchers: Set<() => void>;
  /**
   * Each JSON-RPC request in flight, by its id key (`type:value`), with its id as sent, until its response leaves: a
   * second request reusing an id in flight is refused, and a request its client cancels is answered (see the router).
   */
  readonly openRequests: Map<string, { id: string | number; res: ServerResponse }>;
}

export interface HttpSessionLimits {
  /** Most live sessions, initialising ones included. */
  readonly maxSessions: number;
  /** A session with no request in flight for this long is closed. */
  readonly sessionIdleMs: number;
  /** A session that made no request past its handshake is closed after this long instead. */
  readonly sessionInitIdleMs: number;
}

export class HttpSessionRegistry {
  readonly #sessions = new Map<string, HttpSession>();
  /** `initialize` requests under way: each holds a slot until its session exists or it fails. */
  #initializing = 0;
  #accepting = true;
  readonly #limits: HttpSessionLimits;
  readonly #now: () => number;
  /** Session opened / closed lines: any client can open and drop sessions in a loop, so they are rate-limited. */
  readonly #lifecycleLog: RateLimitedLog;

  constructor(limits: HttpSessionLimits, now: () => number, lifecycleLog: RateLimitedLog) {
    this.#limits = limits;
    this.#now = now;
    this.#lifecycleLog = lifecycleLog;
  }

  /** Number of live sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /** The cap on live sessions, initialising ones included. */
  get maxSessions(): number {
    return this.#limits.maxSessions;
  }

  /** False once shutdown began: no new session is taken. */
  get accepting(): boolean {
    return this.#accepting;
  }

  find(id: string): HttpSession | undefined {
    return this.#sessions.get(id);
  }

  /**
   * Holds a session slot for an `initialize`; `undefined` when every slot is taken. The returned release may be called
   * any number of times: it gives the slot back once.
   */
  holdSlot(): (() => void) | undefined {
    if (this.#sessions.size + this.#initializing >= this.#limits.maxSessions) return undefined;
    this.#initializing++;
    let held = true;
    return () => {
      if (held) this.#initializing--;
      held = false;
    };
  }

  /** Registers the session an `initialize` created (its slot is then released by the caller). */
  add(id: string, transport: NodeStreamableHTTPServerTransport, mounted: MountedServer): HttpSession {
    const session: HttpSession = {
      id,
      transport,
      mounted,
      lastSeen: this.#now(),
      requestsInFlight: 0,
      postsInFlight: 0,
      pastHandshake: false,
      closing: false,
      postWatchers: new Set(),
      openRequests: new Map(),
    };
    this.#sessions.set(id, session);
    this.#lifecycleLog('session opened', { session: id });
    return session;
  }

  /** Counts a request of `session` as in flight until `res` closes. */
  track(session: HttpSession, res: ServerResponse, isPost: boolean): void {
    session.lastSeen = this.#now();
    session.requestsInFlight++;
    if (isPost) session.postsInFlight++;
    res.on('close', () => {
      session.requestsInFlight--;
      session.lastSeen = this.#now();
      if (isPost) {
        session.postsInFlight--;
        for (const watcher of [...session.postWatchers]) watcher();
      }
    });
  }

  async close(session: HttpSession, why: string): Promise<void> {
    if (session.closing) return;
    session.closing = true;
    this.#sessions.delete(session.id);
    this.#lifecycleLog('session closed', { session: session.id, why });
    // Closing the SDK server closes its transport and fires onclose, which closes the adapter session (mount.ts).
    await session.mounted.server.close().catch(() => undefined);
    await session.transport.close().catch(() => undefined);
  }

  /** Answers the session's waiters `SESSION_CLOSED` and waits (at most `timeoutMs`) until its POSTs have ended. */
  async drain(session: HttpSession, timeoutMs: number): Promise<void> {
    await session.mounted.drain();
    if (session.postsInFlight === 0) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        session.postWatchers.delete(watcher);
        resolve();
      };
      const watcher = (): void => {
        if (session.postsInFlight === 0) done();
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      session.postWatchers.add(watcher);
    });
  }

  /** Closes idle and abandoned sessions now; resolves how many. */
  async reclaimIdle(): Promise<number> {
    const at = this.#now();
    const isStale = (session: HttpSession): boolean =>
      session.requestsInFlight === 0 &&
      (session.lastSeen <= at - this.#limits.sessionIdleMs ||
        (!session.pastHandshake && session.lastSeen <= at - this.#limits.sessionInitIdleMs));
    const stale = [...this.#sessions.values()].filter(isStale);
    for (const session of stale)
      await this.close(session, session.pastHandshake ? 'idle' : 'abandoned after initialize');
    return stale.length;
  }

  /** Stops taking sessions, drains every live one (at most `drainMs`), then closes them. */
  async shutdown(drainMs: number): Promise<void> {
    this.#accepting = false;
    const live = [...this.#sessions.values()];
    await Promise.all(live.map((session) => this.drain(session, drainMs)));
    await Promise.all(live.map((session) => this.close(session, 'shutdown')));
  }
}
