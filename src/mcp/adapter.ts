/**
 * The MCP adapter (spec 04): transport-free, it turns `(toolName, args, options)` into an MCP tool result. The SDK owns
 * JSON-RPC, negotiation, discovery and transports; `mountIntentMcpTools` (mount.ts) wires an adapter into an SDK server.
 */
import { z } from 'zod';
import { readCallerOptions, toIntentError } from '../core/errors.js';
import { mcpErrors } from './errors.js';
import type { RequestCaps } from '../core/request.js';
import { zodIssuesToFeedback } from '../core/feedback.js';
import {
  LIMIT_DEFAULTS,
  LimitsOverrideSchema,
  PREFIX_PATTERN,
  isValidName,
  type LimitsOverride,
} from '../core/schemas.js';
import { isHandoffClock, type HandoffClock } from '../engine/clock.js';
import {
  HandoffEngine,
  type EngineSession,
  type EngineSnapshot,
  type HandoffInstance,
  type HandoffTransition,
} from '../engine/engine.js';
import { checkRecognizeOptions, recognize } from '../engine/recognize.js';
import { errorReply, handoffErrors, replyWithToolPrefix, successReply, type HandoffReply } from '../engine/replies.js';
import { Intent, type IntentParseOptions } from '../intent.js';
import { envelopeFromReply, errorEnvelope, type IntentMcpToolResult } from './envelopes.js';
import {
  BASE_TOOL_NAMES,
  TOOL_KINDS_BY_MODE,
  buildToolDefinitions,
  parseAcceptArgs,
  parseArgs,
  CancelArgsSchema,
  type IntentMcpMode,
  type IntentMcpToolDefinition,
  type ToolKind,
} from './tools.js';

/** The protocol revisions the adapter speaks (spec 04). */
export const PROTOCOL_VERSIONS = ['2025-06-18', '2025-11-25', '2026-07-28'] as const;
export type ProtocolVersion = (typeof PROTOCOL_VERSIONS)[number];

export interface IntentMcpAdapterConfig {
  /** `'executor'` (default) exposes `intent_parse`; `'host'` exposes `intent_prepare` / `intent_accept` / `intent_cancel`. */
  mode?: IntentMcpMode;
  /** Caller-created `Intent`s by name (1–64 of `[A-Za-z0-9_.-]`, not a prototype key). Never disposed by the adapter. */
  instances: Record<string, Intent>;
  /** Prepended to every tool name (same character set, may be empty). Default `''`. */
  toolPrefix?: string;
  /**
   * Limits of this adapter's sessions: `maxPendingPerSession` (default 64) and `maxCandidateBytes` (default 1 MiB) are
   * the adapter's own; `maxInputChars`, `maxContextItems` and `maxContextItemChars` cap every request on top of its
   * instance's limits (the lower one applies). The other keys (`maxNestingDepth`, `maxPatternValueChars`) are the
   * instances' own.
   */
  limits?: LimitsOverride;
  /** Time source (tests pass an XState `SimulatedClock`). Default: the system clock. */
  clock?: HandoffClock;
}

export interface IntentMcpConnectOptions {
  /** The revision the SDK negotiated for this connection; never taken from tool input. */
  protocolVersion: ProtocolVersion;
  /** Shown by the inspector only. */
  label?: string;
}

export interface IntentMcpSession {
  readonly id: string;
  readonly protocolVersion: ProtocolVersion;
  /** Never throws. Resolves to exactly `undefined` for a name that is not one of this adapter's tools. */
  callTool(name: string, args: unknown, options?: IntentParseOptions): Promise<IntentMcpToolResult | undefined>;
  /** Cancels this session's live requests (waiters get `SESSION_CLOSED`) and drops its retained replies. Idempotent. */
  close(): Promise<void>;
}

export interface IntentMcpAdapter {
  readonly mode: IntentMcpMode;
  readonly tools: readonly IntentMcpToolDefinition[];
  connect(options: IntentMcpConnectOptions): IntentMcpSession;
  /** Closes every session this adapter created and refuses new ones. Never disposes an `Intent`. Idempotent. */
  close(): Promise<void>;
  /** True once `close()` was called. */
  readonly closed: boolean;
  /** Transition stream of every request of this adapter (no tokens, no candidate text). */
  inspect(listener: (t: HandoffTransition) => void): () => void;
  /** Live requests per session and terminal store usage. */
  snapshot(): EngineSnapshot;
  /**
   * Observes every tool call this adapter answers (the command's `--log-level debug` line per call). Nothing is timed
   * while nobody observes. Returns the unsubscribe function. Optional so that wrappers of an adapter need not forward
   * it; the adapters `createIntentMcpAdapter` makes always have it.
   */
  observeToolCalls?(listener: (call: ToolCallRecord) => void): () => void;
}

/** One answered tool call, as observability shows it: no arguments, no token, no candidate text. */
export interface ToolCallRecord {
  sessionId: string;
  tool: string;
  /** The request the call was about: the one prepared, or the `requestId` argument (a caller string, as sent). */
  requestId: string | undefined;
  /** Wall time from the call to its answer, in milliseconds. */
  durationMs: number;
  /** `ok`, or the error code of the answer (`CANDIDATE_INVALID`, `HANDOFF_NOT_FOUND`, ...). */
  outcome: string;
}

const ConfigShapeSchema = z
  .object({
    mode: z.enum(['executor', 'host']).optional(),
    instances: z.unknown(),
    toolPrefix: z
      .string()
      .regex(PREFIX_PATTERN, 'use up to 64 characters from A–Z, a–z, 0–9, "_", "." and "-"')
      .optional(),
    limits: LimitsOverrideSchema.optional(),
    clock: z.custom<HandoffClock>(isHandoffClock, 'must be a clock with now/setTimeout/clearTimeout').optional(),
  })
  .strict();

const ConnectOptionsSchema = z
  .object({
    protocolVersion: z.enum(PROTOCOL_VERSIONS),
    label: z.string().max(200).optional(),
  })
  .strict();

/**
 * Creates an adapter over caller-created `Intent`s. Validates everything up front and throws `IntentError`
 * `CONFIG_INVALID` (category `config`) for an invalid configuration.
 */
export function createIntentMcpAdapter(config: IntentMcpAdapterConfig): IntentMcpAdapter {
  const { mode, toolPrefix, limits, clock, instances } = readCallerOptions('adapter configuration', () => {
    const parsed = ConfigShapeSchema.safeParse(config);
    if (!parsed.success) {
      throw mcpErrors.configAt(zodIssuesToFeedback(parsed.error.issues, config)[0] ?? { path: '', message: 'invalid' });
    }
    const { mode = 'executor', toolPrefix = '', limits = {}, clock } = parsed.data;
    const raw = parsed.data.instances;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw mcpErrors.noInstances();
    const instances = new Map<string, Intent>();
    for (const name of Object.keys(raw)) {
      if (!isValidName(name)) throw mcpErrors.badInstanceName(name);
      const value = (raw as Record<string, unknown>)[name];
      if (!(value instanceof Intent)) throw mcpErrors.notAnIntent(name);
      if (mode === 'executor' && value.executor === undefined) throw mcpErrors.noExecutor(name);
      instances.set(name, value);
    }
    // A plain copy of the limits: nothing is read from the caller's objects after this.
    return { mode, toolPrefix, limits: { ...limits }, clock, instances };
  });
  if (instances.size === 0) throw mcpErrors.emptyInstances();
  return new Adapter(mode, toolPrefix, instances, limits, clock);
}

class Adapter implements IntentMcpAdapter {
  readonly mode: IntentMcpMode;
  readonly tools: readonly IntentMcpToolDefinition[];
  readonly #engine: HandoffEngine;
  readonly #instances: ReadonlyMap<string, HandoffInstance>;
  readonly #executors: ReadonlyMap<string, Intent['executor']>;
  /** Null-prototype map from a full tool name to its kind: a caller's string never indexes a plain object. */
  readonly #byName = new Map<string, ToolKind>();
  readonly #maxCandidateBytes: number;
  readonly #caps: RequestCaps;
  readonly #sessions = new Set<AdapterSession>();
  readonly #callObservers = new Set<(call: ToolCallRecord) => void>();
  readonly #prefix: string;
  #closed = false;

  constructor(
    mode: IntentMcpMode,
    prefix: string,
    instances: Map<string, Intent>,
    limits: LimitsOverride,
    clock: HandoffClock | undefined,
  ) {
    this.mode = mode;
    this.#prefix = prefix;
    const names = [...instances.keys()];
    this.tools = Object.freeze(buildToolDefinitions(mode, prefix, names));
    for (const kind of TOOL_KINDS_BY_MODE[mode]) this.#byName.set(prefix + BASE_TOOL_NAMES[kind], kind);
    this.#instances = new Map([...instances].map(([name, intent]) => [name, intent.asInstance(name)]));
    this.#executors = new Map([...instances].map(([name, intent]) => [name, intent.executor]));
    this.#maxCandidateBytes = limits.maxCandidateBytes ?? LIMIT_DEFAULTS.maxCandidateBytes;
    this.#caps = {
      ...(limits.maxInputChars === undefined ? {} : { maxInputChars: limits.maxInputChars }),
      ...(limits.maxContextItems === undefined ? {} : { maxContextItems: limits.maxContextItems }),
      ...(limits.maxContextItemChars === undefined ? {} : { maxContextItemChars: limits.maxContextItemChars }),
    };
    this.#engine = new HandoffEngine({
      // Executor-mode records need not be retained (spec 03).
      retain: mode === 'host',
      ...(limits.maxPendingPerSession === undefined ? {} : { maxPendingPerSession: limits.maxPendingPerSession }),
      ...(clock === undefined ? {} : { clock }),
    });
  }

  connect(options: IntentMcpConnectOptions): IntentMcpSession {
    const parsed = readCallerOptions('connect options', () => {
      const result = ConnectOptionsSchema.safeParse(options);
      if (!result.success) {
        const first = zodIssuesToFeedback(result.error.issues, options)[0] ?? { path: '', message: 'invalid' };
        throw mcpErrors.connectOptions(first, PROTOCOL_VERSIONS);
      }
      return result;
    });
    if (this.#closed) throw mcpErrors.adapterClosed();
    const session = new AdapterSession(
      this.#toolRunner,
      this.#engine.openSession(parsed.data.label),
      parsed.data.protocolVersion,
    );
    this.#sessions.add(session);
    return session;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const session of [...this.#sessions]) await session.close();
  }

  get closed(): boolean {
    return this.#closed;
  }

  inspect(listener: (t: HandoffTransition) => void): () => void {
    return this.#engine.inspect(listener);
  }

  snapshot(): EngineSnapshot {
    return this.#engine.snapshot();
  }

  observeToolCalls(listener: (call: ToolCallRecord) => void): () => void {
    this.#callObservers.add(listener);
    return () => {
      this.#callObservers.delete(listener);
    };
  }

  /** What a session of this adapter may call; kept off the adapter object, so no caller reaches it. */
  readonly #toolRunner: ToolRunner = {
    kindOf: (name) => this.#kindOf(name),
    // Messages name the tools as this adapter lists them: under a toolPrefix, "call intent_prepare" would name nothing.
    run: async (kind, name, engineSession, args, options) => {
      let reply: HandoffReply;
      try {
        reply = await this.#run(kind, name, engineSession, args, options);
      } catch (error) {
        reply = errorReply(toIntentError(error));
      }
      return replyWithToolPrefix(reply, this.#prefix);
    },
    forget: (session) => {
      this.#forget(session);
    },
    observed: () => this.#callObservers.size > 0,
    observe: (call) => {
      for (const listener of this.#callObservers) {
        try {
          listener(call);
        } catch {
          // An observer's failure must never change an answer.
        }
      }
    },
  };

  #forget(session: AdapterSession): void {
    this.#sessions.delete(session);
  }

  #kindOf(name: string): ToolKind | undefined {
    return this.#byName.get(name);
  }

  async #run(
    kind: ToolKind,
    name: string,
    engineSession: EngineSession,
    args: unknown,
    options: IntentParseOptions,
  ): Promise<HandoffReply> {
    switch (kind) {
      case 'parse': {
        const { instance, request } = this.#splitRequest(args, name);
        const executor = this.#executors.get(instance.name);
        if (executor === undefined) throw mcpErrors.bug('An executor-mode instance lost its executor');
        return recognize(engineSession, instance, executor, request, options, this.#caps);
      }
      case 'prepare': {
        const { instance, request } = this.#splitRequest(args, name);
        return engineSession.prepareReply(instance, request, { timeoutMs: options.timeoutMs, caps: this.#caps });
      }
      case 'accept': {
        const a = parseAcceptArgs(args, name);
        const bytes = Buffer.byteLength(a.candidateText, 'utf8');
        if (bytes > this.#maxCandidateBytes)
          throw handoffErrors.candidateTooLarge(a.requestId, this.#maxCandidateBytes);
        return engineSession.accept(a.requestId, a.submissionToken, a.candidateText, { signal: options.signal });
      }
      case 'cancel': {
        const a = parseArgs(CancelArgsSchema, args, name);
        return successReply(engineSession.cancel(a.requestId, a.reason ?? 'cancelled'));
      }
    }
  }

  /** Separates `instance` from the Native request; the request itself is validated by the core (one pass). */
  #splitRequest(args: unknown, tool: string): { instance: HandoffInstance; request: unknown } {
    if (args === null || typeof args !== 'object' || Array.isArray(args)) throw mcpErrors.argumentsNotObject(tool);
    const { instance: name, ...request } = args as Record<string, unknown>;
    if (name === undefined) {
      if (this.#instances.size > 1) throw mcpErrors.instanceRequired(this.#instances.keys());
      const only = this.#instances.values().next().value;
      if (only === undefined) throw mcpErrors.bug('The adapter has no instance');
      return { instance: only, request };
    }
    if (typeof name !== 'string') throw mcpErrors.instanceNotString(tool);
    const instance = this.#instances.get(name);
    if (instance === undefined) throw mcpErrors.instanceNotFound(name, this.#instances.keys());
    return { instance, request };
  }
}

/** What an adapter session needs of its adapter. */
interface ToolRunner {
  kindOf(name: string): ToolKind | undefined;
  run(
    kind: ToolKind,
    name: string,
    engineSession: EngineSession,
    args: unknown,
    options: IntentParseOptions,
  ): Promise<HandoffReply>;
  forget(session: AdapterSession): void;
  /** Whether anyone observes tool calls (when not, calls are not timed). */
  observed(): boolean;
  observe(call: ToolCallRecord): void;
}

class AdapterSession implements IntentMcpSession {
  readonly id: string;
  readonly protocolVersion: ProtocolVersion;
  readonly #adapter: ToolRunner;
  readonly #engineSession: EngineSession;
  #closed = false;

  constructor(runner: ToolRunner, engineSession: EngineSession, protocolVersion: ProtocolVersion) {
    this.#adapter = runner;
    this.#engineSession = engineSession;
    this.id = engineSession.id;
    this.protocolVersion = protocolVersion;
  }

  async callTool(
    name: string,
    args: unknown,
    options?: IntentParseOptions | null,
  ): Promise<IntentMcpToolResult | undefined> {
    const kind = typeof name === 'string' ? this.#adapter.kindOf(name) : undefined;
    if (kind === undefined) return undefined;
    const version = this.protocolVersion;
    if (this.#closed) return errorEnvelope(handoffErrors.sessionClosed(), version);
    const started = this.#adapter.observed() ? performance.now() : undefined;
    let reply: HandoffReply;
    try {
      const checked = checkRecognizeOptions(options);
      reply = await this.#adapter.run(kind, name, this.#engineSession, args, checked);
    } catch (error) {
      reply = errorReply(toIntentError(error));
    }
    if (started !== undefined) this.#observe(name, args, reply, started);
    return envelopeFromReply(reply, version);
  }

  #observe(tool: string, args: unknown, reply: HandoffReply, started: number): void {
    const argId = args !== null && typeof args === 'object' ? (args as { requestId?: unknown }).requestId : undefined;
    const preparedId = reply.isError ? undefined : (reply.value as { requestId?: unknown }).requestId;
    const requestId = typeof argId === 'string' ? argId : typeof preparedId === 'string' ? preparedId : undefined;
    this.#adapter.observe({
      sessionId: this.id,
      tool,
      requestId,
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      outcome: reply.isError ? reply.error.code : 'ok',
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#engineSession.close();
    this.#adapter.forget(this);
  }
}

/** `callTool`'s options come from the caller's code, not from tool JSON; bad ones are `INPUT_INVALID` envelopes. */
