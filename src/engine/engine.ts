/**
 * The host-handoff engine (spec 03): prepare / accept / cancel over one XState actor per prepared request, a per-session
 * registry of live requests, and the terminal store. Every lifecycle decision is the machine's (`machines/handoff.ts`);
 * the engine sends events, reads `context.answer` and the state, and turns them into replies.
 */
import { randomUUID } from 'node:crypto';
import { createActor, type Actor, type InspectionEvent, type SnapshotFrom } from 'xstate';
import { z } from 'zod';
import { IntentError, toIntentError } from '../core/errors.js';
import type { InstanceModel } from '../core/instance.js';
import { normalizeCandidate } from '../core/normalize.js';
import { prepareRequest, type PreparedRequest, type RequestCaps } from '../core/request.js';
import type { CancelReason as HostCancelReason, HostCancelReply, HostTask, IntentResult } from '../core/schemas.js';
import { validateCandidate } from '../core/validate.js';
import {
  handoffMachine,
  stateOf,
  type CancelReason,
  type HandoffEvent,
  type HandoffMachine,
  type HandoffState,
  type ValidationOutcome,
} from '../../machines/handoff.js';
import { systemClock, type HandoffClock } from './clock.js';
import { candidateIdentity, newCredentials, shortHash, tokenMatches } from './identity.js';
import { errorReply, handoffErrors, replyFromText, successReply, type HandoffReply } from './replies.js';
import {
  STORE_MAX_BYTES,
  STORE_MAX_ITEMS,
  TerminalStore,
  recordBytes,
  type TerminalRecord,
  type TerminalStoreOptions,
  type TerminalStoreUsage,
} from './terminalStore.js';

/** What the engine needs of an instance: its resolved model, a name for observability, and whether it was disposed. */
export interface HandoffInstance {
  readonly name: string;
  readonly model: InstanceModel;
  readonly disposed: boolean;
}

export interface HandoffEngineOptions {
  /** Time source for `referenceTime`, deadlines and inspection stamps. Default: the system clock. */
  clock?: HandoffClock;
  /** Live requests per session before `CAPACITY_EXCEEDED`: a positive safe integer. Default 64 (`limits.maxPendingPerSession`). */
  maxPendingPerSession?: number;
  /** Keep terminal replies for replay. Default true; executor-only engines turn it off (spec 03, "Executor mode"). */
  retain?: boolean;
  /**
   * Store bounds: integers from 1 up to the defaults, 32 items / 8 MiB (spec 03); lower them only in tests. Every option
   * is checked here: a bad one throws `CONFIG_INVALID` naming it.
   */
  store?: TerminalStoreOptions;
}

export interface PrepareOptions {
  /** Deadline in ms counted from prepare; overrides the instance's `timeoutMs`. */
  timeoutMs?: number | undefined;
  /** Request caps on top of the instance's limits (the adapter's `limits`); the lower one applies. */
  caps?: RequestCaps | undefined;
}

export interface AcceptOptions {
  /** Stops only this caller's wait (`ABORTED`); a validation shared with others keeps running for them (spec 03). */
  signal?: AbortSignal | undefined;
}

/** One transition of one request, as the inspection stream reports it. No token, no candidate text. */
export interface HandoffTransition {
  at: string;
  sessionId: string;
  requestId: string;
  instance: string;
  from: HandoffState | null;
  event: string;
  to: HandoffState;
  validations: number;
}

export interface LiveRequestView {
  requestId: string;
  instance: string;
  state: HandoffState;
  validations: number;
  preparedAt: string;
  expiresAt?: string;
  candidate?: { bytes: number; hash: string };
}

export interface RetainedRequestView {
  requestId: string;
  sessionId: string;
  instance: string;
  state: HandoffState;
  validations: number;
  bytes: number;
  finishedAt: string;
}

export interface SessionView {
  id: string;
  label?: string;
  closed: boolean;
  live: LiveRequestView[];
}

export interface EngineSnapshot {
  at: string;
  sessions: SessionView[];
  retained: RetainedRequestView[];
  store: TerminalStoreUsage;
}

type HandoffActor = Actor<HandoffMachine>;
type HandoffSnapshot = SnapshotFrom<HandoffMachine>;

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

interface LiveRecord {
  readonly requestId: string;
  readonly session: EngineSession;
  readonly instance: HandoffInstance;
  readonly prepared: PreparedRequest;
  readonly tokenHash: Buffer;
  readonly preparedAt: number;
  readonly expiresAt: number | undefined;
  actor: HandoffActor;
  timer: unknown;
  /** The running validation; `aborted` is set when `validating` is left before it ran. */
  job: { aborted: boolean } | undefined;
  /** The reply every caller waiting on the current validation gets: one object for all joiners. */
  pending: Deferred<HandoffReply> | undefined;
  /** The `CANDIDATE_INVALID` reply of the last validation, replayed in `correcting`. */
  feedbackReply: HandoffReply | undefined;
  settled: Deferred<HandoffState>;
}

const DEFAULT_MAX_PENDING = 64;

const count = (max: number) => z.number().int().min(1).max(max);

/** Checked at construction, like lru-cache does: a 0, NaN or fraction never silently removes a bound. */
const EngineOptionsSchema = z
  .object({
    clock: z
      .custom<HandoffClock>(
        (c) =>
          c !== null &&
          typeof c === 'object' &&
          typeof (c as HandoffClock).now === 'function' &&
          typeof (c as HandoffClock).setTimeout === 'function' &&
          typeof (c as HandoffClock).clearTimeout === 'function',
        'must be a clock with now, setTimeout and clearTimeout',
      )
      .optional(),
    maxPendingPerSession: count(Number.MAX_SAFE_INTEGER).optional(),
    retain: z.boolean().optional(),
    store: z
      .object({ maxItems: count(STORE_MAX_ITEMS).optional(), maxBytes: count(STORE_MAX_BYTES).optional() })
      .strict()
      .optional(),
  })
  .strict();

function checkEngineOptions(options: unknown): void {
  const parsed = EngineOptionsSchema.safeParse(options);
  if (parsed.success) return;
  const issue = parsed.error.issues[0];
  const path = (issue?.path ?? []).map(String).join('.');
  const detail =
    issue?.code === 'unrecognized_keys'
      ? `has an unknown option ${issue.keys.map((k) => `"${k.slice(0, 40)}"`).join(', ')}`
      : `"${path}" ${issue?.code === 'custom' ? issue.message : 'must be a positive integer within its bound (see HandoffEngineOptions)'}`;
  throw new IntentError('CONFIG_INVALID', `HandoffEngine options ${detail}; fix the option.`, {
    details: { issues: [{ path: '/' + (issue?.path ?? []).map(String).join('/'), message: issue?.message ?? '' }] },
  });
}

export class HandoffEngine {
  readonly clock: HandoffClock;
  readonly store: TerminalStore;
  readonly maxPendingPerSession: number;
  readonly retain: boolean;
  readonly machine: HandoffMachine;
  readonly #live = new Map<string, LiveRecord>();
  readonly #sessions = new Set<EngineSession>();
  readonly #listeners = new Set<(t: HandoffTransition) => void>();
  #closed = false;

  constructor(options: HandoffEngineOptions = {}) {
    checkEngineOptions(options);
    this.clock = options.clock ?? systemClock;
    this.store = new TerminalStore(options.store);
    this.maxPendingPerSession = options.maxPendingPerSession ?? DEFAULT_MAX_PENDING;
    this.retain = options.retain ?? true;
    this.machine = handoffMachine.provide({
      actions: {
        startValidation: ({ context }) => {
          this.#startValidation(context.requestId);
        },
        abandonValidation: ({ context }) => {
          const record = this.#live.get(context.requestId);
          if (record?.job !== undefined) record.job.aborted = true;
        },
      },
    });
  }

  /** Opens an independent session: its own live requests, its own pending cap, its own retained replies. */
  openSession(label?: string): EngineSession {
    if (this.#closed) throw new IntentError('SESSION_CLOSED', 'The engine was closed; create a new one.');
    const session = new EngineSession(this, label);
    this.#sessions.add(session);
    return session;
  }

  /** Subscribes to the transition stream. Requests prepared while nobody listens are not instrumented (it costs). */
  inspect(listener: (t: HandoffTransition) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Live requests per session and store usage. Sizes and short hashes only: never a token or a candidate. */
  snapshot(): EngineSnapshot {
    const iso = (ms: number) => new Date(ms).toISOString();
    const sessions: SessionView[] = [...this.#sessions].map((s) => {
      const view: SessionView = { id: s.id, closed: s.closed, live: [] };
      if (s.label !== undefined) view.label = s.label;
      for (const r of s.records()) {
        const snap = r.actor.getSnapshot();
        const live: LiveRequestView = {
          requestId: r.requestId,
          instance: r.instance.name,
          state: stateOf(snap.value),
          validations: snap.context.validations,
          preparedAt: iso(r.preparedAt),
        };
        if (r.expiresAt !== undefined) live.expiresAt = iso(r.expiresAt);
        const c = snap.context.candidate;
        if (c !== undefined) live.candidate = { bytes: Buffer.byteLength(c.text, 'utf8'), hash: shortHash(c.hash) };
        view.live.push(live);
      }
      return view;
    });
    const retained = this.store.records().map((r) => ({
      requestId: r.requestId,
      sessionId: r.sessionId,
      instance: r.instance,
      state: r.state,
      validations: r.context.validations,
      bytes: r.bytes,
      finishedAt: iso(r.finishedAt),
    }));
    return { at: iso(this.clock.now()), sessions, retained, store: this.store.usage() };
  }

  /** Closes every session (their live requests are cancelled) and refuses new ones. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const s of [...this.#sessions]) await s.close();
  }

  get closed(): boolean {
    return this.#closed;
  }

  // -------------------------------------------------------------------------------------------------------------------
  // internals used by EngineSession

  /** @internal */
  forgetSession(session: EngineSession): void {
    this.#sessions.delete(session);
    this.store.dropSession(session.id);
  }

  /**
   * Builds a request completely (validated request, credentials, HostTask and its JSON text) and only then registers
   * it, so a prepare that fails for any reason leaves nothing behind: no live request, no slot, no timer.
   * @internal
   */
  prepare(
    session: EngineSession,
    instance: HandoffInstance,
    request: unknown,
    options: PrepareOptions,
  ): { record: LiveRecord; task: HostTask; text: string } {
    if (instance.disposed) throw handoffErrors.disposed(instance.name);
    if (session.size >= this.maxPendingPerSession) throw handoffErrors.capacity(this.maxPendingPerSession);
    const now = this.clock.now();
    const prepared = prepareRequest(instance.model, request, new Date(now), options.caps);
    const deadlineMs = options.timeoutMs ?? instance.model.timeoutMs;
    const expiresAt = deadlineMs === undefined ? undefined : now + deadlineMs;
    const { requestId, token, tokenHash } = newCredentials();
    const task = hostTask(requestId, token, prepared, expiresAt);
    const text = JSON.stringify(task);
    const record: LiveRecord = {
      requestId,
      session,
      instance,
      prepared,
      tokenHash,
      preparedAt: now,
      expiresAt,
      actor: this.#createActor(
        { requestId, sessionId: session.id, instance: instance.name },
        { input: { requestId, expiresAt } },
      ),
      timer: undefined,
      job: undefined,
      pending: undefined,
      feedbackReply: undefined,
      settled: deferred<HandoffState>(),
    };
    this.#live.set(requestId, record);
    session.add(record);
    record.actor.start();
    if (deadlineMs !== undefined)
      record.timer = this.clock.setTimeout(() => {
        this.#deadline(record);
      }, deadlineMs);
    return { record, task, text };
  }

  /** @internal */
  async accept(
    session: EngineSession,
    requestId: string,
    token: string,
    candidateText: string,
    options: AcceptOptions,
  ): Promise<HandoffReply> {
    if (options.signal?.aborted === true) return errorReply(handoffErrors.aborted(requestId));
    const live = session.get(requestId);
    if (live !== undefined) {
      if (!tokenMatches(token, live.tokenHash)) return errorReply(handoffErrors.notFound(requestId));
      const limit = live.instance.model.limits.maxCandidateBytes;
      const identity = candidateIdentity(candidateText);
      if (identity.bytes > limit) return errorReply(handoffErrors.candidateTooLarge(requestId, limit));
      const snap = this.#send(live, {
        type: 'ACCEPT',
        candidate: { hash: identity.hash, text: identity.text },
        at: this.clock.now(),
      });
      switch (snap.context.answer) {
        case 'validate':
        case 'join':
          // `pending` was created by the `startValidation` entry action (validate) or by the first caller (join).
          return live.pending === undefined
            ? internalReply(requestId)
            : waitFor(live.pending.promise, options.signal, requestId);
        case 'replay':
          return live.feedbackReply ?? internalReply(requestId);
        case 'conflict':
          return errorReply(handoffErrors.conflict(requestId));
        case 'refused':
          // The accept arrived after the deadline: the machine expired the request on it.
          return errorReply(this.#refusal(requestId, stateOf(snap.value), snap.context.cancelReason));
        default:
          return internalReply(requestId);
      }
    }
    const stored = this.store.get(requestId, session.id);
    if (stored === undefined || !tokenMatches(token, stored.tokenHash))
      return errorReply(handoffErrors.notFound(requestId));
    const identity = candidateIdentity(candidateText);
    const answer = this.#ask(stored, {
      type: 'ACCEPT',
      candidate: { hash: identity.hash, text: identity.text },
      at: this.clock.now(),
    });
    switch (answer) {
      case 'replay':
        return stored.reply === undefined
          ? internalReply(requestId)
          : replyFromText(stored.reply.isError, stored.reply.text);
      case 'conflict':
        return errorReply(handoffErrors.conflict(requestId));
      case 'refused':
        return errorReply(this.#refusal(requestId, stored.state, stored.context.cancelReason));
      default:
        return internalReply(requestId);
    }
  }

  /** @internal */
  cancel(session: EngineSession, requestId: string, reason: HostCancelReason | 'aborted'): HostCancelReply {
    const live = session.get(requestId);
    if (live !== undefined) {
      const snap = this.#send(live, { type: 'CANCEL', reason, at: this.clock.now() });
      const answer = snap.context.answer;
      if (answer === 'cancelled') return { requestId, status: 'cancelled' };
      if (answer === 'already_completed' || answer === 'already_cancelled') return { requestId, status: answer };
      throw toIntentError(new Error(`unexpected answer ${snap.context.answer}`), requestId);
    }
    const stored = this.store.get(requestId, session.id);
    if (stored === undefined) throw handoffErrors.notFound(requestId);
    const answer = this.#ask(stored, { type: 'CANCEL', reason, at: this.clock.now() });
    if (answer === 'already_cancelled' || answer === 'already_completed') return { requestId, status: answer };
    throw toIntentError(new Error(`unexpected answer ${answer}`), requestId);
  }

  /** @internal */
  closeRecord(record: LiveRecord): void {
    this.#send(record, { type: 'CLOSE', at: this.clock.now() });
  }

  // -------------------------------------------------------------------------------------------------------------------

  #createActor(who: { requestId: string; sessionId: string; instance: string }, options: object): HandoffActor {
    if (this.#listeners.size === 0) return createActor(this.machine, options as never);
    let from: HandoffState | null = null;
    const seed = (options as { snapshot?: HandoffSnapshot }).snapshot;
    if (seed !== undefined) from = stateOf(seed.value);
    const inspect = (ev: InspectionEvent): void => {
      if (ev.type !== '@xstate.snapshot') return;
      const snap = ev.snapshot as HandoffSnapshot;
      const to = stateOf(snap.value);
      const transition: HandoffTransition = {
        at: new Date(this.clock.now()).toISOString(),
        sessionId: who.sessionId,
        requestId: who.requestId,
        instance: who.instance,
        from,
        event: ev.event.type,
        to,
        validations: snap.context.validations,
      };
      from = to;
      for (const listener of this.#listeners) {
        try {
          listener(transition);
        } catch {
          // A listener's failure must never disturb a request.
        }
      }
    };
    return createActor(this.machine, { ...options, inspect } as never);
  }

  /** Sends an event to a live request and settles it if the event made it terminal. */
  #send(record: LiveRecord, event: HandoffEvent): HandoffSnapshot {
    record.actor.send(event);
    const snap = record.actor.getSnapshot();
    const state = stateOf(snap.value);
    if (snap.hasTag('terminal')) this.#settle(record, state, snap);
    return snap;
  }

  /** Answers an event for a retained request through the machine itself: revive, send, read the answer, stop. */
  #ask(stored: TerminalRecord, event: HandoffEvent): string {
    const snapshot = this.machine.resolveState({ value: stored.state, context: stored.context });
    const actor = this.#createActor(
      { requestId: stored.requestId, sessionId: stored.sessionId, instance: stored.instance },
      { snapshot, input: { requestId: stored.requestId } },
    );
    actor.start();
    actor.send(event);
    const answer = actor.getSnapshot().context.answer;
    actor.stop();
    return answer;
  }

  #refusal(requestId: string, state: HandoffState, reason: CancelReason | undefined): IntentError {
    return state === 'expired'
      ? handoffErrors.expired(requestId)
      : handoffErrors.cancelled(requestId, reason ?? 'cancelled');
  }

  #startValidation(requestId: string): void {
    const record = this.#live.get(requestId);
    if (record === undefined) return;
    const job = { aborted: false };
    record.job = job;
    record.pending = deferred<HandoffReply>();
    // Deferred to a later turn of the event loop so that identical concurrent submissions join this validation and a
    // cancel, a deadline or a session close can still overtake it.
    setImmediate(() => {
      if (!job.aborted) this.#runValidation(record);
    });
  }

  #runValidation(record: LiveRecord): void {
    const pending = record.pending;
    const candidate = record.actor.getSnapshot().context.candidate;
    if (pending === undefined || candidate === undefined) return;
    let outcome: ValidationOutcome;
    let result: IntentResult | undefined;
    try {
      const check = validateCandidate(record.prepared, candidate.text);
      if (check.ok) {
        result = normalizeCandidate(record.prepared, check.candidate);
        outcome = { ok: true, text: JSON.stringify(result) };
      } else outcome = { ok: false, issues: check.issues };
    } catch (error) {
      // A bug in validation: every waiter learns it, and the request ends rather than hanging in `validating`.
      pending.resolve(errorReply(toIntentError(error, record.requestId)));
      this.#send(record, { type: 'CANCEL', reason: 'incomplete', at: this.clock.now() });
      return;
    }
    const snap = this.#send(record, { type: 'VALIDATED', ...outcome, at: this.clock.now() });
    const state = stateOf(snap.value);
    let reply: HandoffReply;
    if (outcome.ok && result !== undefined) reply = successReply(result, outcome.text);
    else if (!outcome.ok && state === 'correcting') {
      reply = errorReply(handoffErrors.candidateInvalid(record.requestId, outcome.issues));
      record.feedbackReply = reply;
    } else if (!outcome.ok) reply = errorReply(handoffErrors.candidateRejected(record.requestId, outcome.issues));
    else reply = internalReply(record.requestId);
    record.pending = undefined;
    pending.resolve(reply);
    if (state === 'completed') this.#retain(record, snap, reply);
  }

  #deadline(record: LiveRecord): void {
    record.timer = undefined;
    if (this.#live.get(record.requestId) === record) this.#send(record, { type: 'DEADLINE' });
  }

  /** A request became terminal: wake its waiters, stop its actor, drop it from the live registry. */
  #settle(record: LiveRecord, state: HandoffState, snap: HandoffSnapshot): void {
    if (this.#live.get(record.requestId) !== record) return;
    this.#live.delete(record.requestId);
    record.session.remove(record);
    if (record.timer !== undefined) this.clock.clearTimeout(record.timer);
    record.timer = undefined;
    const pending = record.pending;
    record.pending = undefined;
    if (pending !== undefined && state !== 'completed') {
      const reason = snap.context.cancelReason;
      pending.resolve(
        errorReply(
          reason === 'session_closed'
            ? handoffErrors.sessionClosed(record.requestId)
            : this.#refusal(record.requestId, state, reason),
        ),
      );
    }
    record.actor.stop();
    if (state !== 'completed' && snap.context.cancelReason !== 'session_closed') this.#retain(record, snap, undefined);
    record.settled.resolve(state);
  }

  #retain(record: LiveRecord, snap: HandoffSnapshot, reply: HandoffReply | undefined): void {
    if (!this.retain || record.session.closed) return;
    // The outcome's text is the reply itself; keep it once.
    const context = { ...snap.context, outcome: undefined, answer: 'none' as const };
    this.store.put({
      requestId: record.requestId,
      sessionId: record.session.id,
      instance: record.instance.name,
      tokenHash: record.tokenHash,
      state: stateOf(snap.value),
      context,
      reply: reply === undefined ? undefined : { isError: reply.isError, text: reply.text },
      bytes: recordBytes(context, reply?.text),
      finishedAt: this.clock.now(),
    });
  }
}

/** The token lives only in the HostTask that hands it out; the engine keeps its hash. */
function hostTask(
  requestId: string,
  token: string,
  prepared: PreparedRequest,
  expiresAt: number | undefined,
): HostTask {
  const { task } = prepared;
  const out: HostTask = {
    kind: 'model_task',
    requestId,
    submissionToken: token,
    instructions: task.instructions,
    input: task.input,
    outputSchema: task.outputSchema,
  };
  if (expiresAt !== undefined) out.expiresAt = new Date(expiresAt).toISOString();
  return out;
}

function internalReply(requestId: string): HandoffReply {
  return errorReply(toIntentError(new Error('unexpected handoff answer'), requestId));
}

function waitFor(
  promise: Promise<HandoffReply>,
  signal: AbortSignal | undefined,
  requestId: string,
): Promise<HandoffReply> {
  if (signal === undefined) return promise;
  return new Promise<HandoffReply>((resolve) => {
    const onAbort = (): void => {
      resolve(errorReply(handoffErrors.aborted(requestId)));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then((reply) => {
      signal.removeEventListener('abort', onAbort);
      resolve(reply);
    });
  });
}

/**
 * One logical connection's view of the engine (spec 04: one adapter session per MCP connection, never per call).
 */
export class EngineSession {
  readonly id: string;
  readonly label: string | undefined;
  readonly #engine: HandoffEngine;
  readonly #records = new Map<string, LiveRecord>();
  #closed = false;

  constructor(engine: HandoffEngine, label?: string) {
    this.#engine = engine;
    this.id = randomUUID();
    this.label = label;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get size(): number {
    return this.#records.size;
  }

  /** Prepares a request and returns its HostTask. Throws `IntentError` (`INPUT_INVALID`, `CAPACITY_EXCEEDED`, ...). */
  prepare(instance: HandoffInstance, request: unknown, options: PrepareOptions = {}): HostTask {
    if (this.#closed) throw handoffErrors.sessionClosed();
    return this.#engine.prepare(this, instance, request, options).task;
  }

  /**
   * Prepares a request and returns the `intent_prepare` reply, serialised once (the same JSON the HostTask is).
   * @internal
   */
  prepareReply(instance: HandoffInstance, request: unknown, options: PrepareOptions = {}): HandoffReply {
    if (this.#closed) throw handoffErrors.sessionClosed();
    const { task, text } = this.#engine.prepare(this, instance, request, options);
    return successReply(task, text);
  }

  /**
   * Prepares a request for the executor loop: the task plus a promise of the terminal state it eventually reaches.
   * @internal
   */
  prepareTracked(
    instance: HandoffInstance,
    request: unknown,
    options: PrepareOptions = {},
  ): { task: HostTask; settled: Promise<HandoffState>; prepared: PreparedRequest } {
    if (this.#closed) throw handoffErrors.sessionClosed();
    const { record, task } = this.#engine.prepare(this, instance, request, options);
    return { task, settled: record.settled.promise, prepared: record.prepared };
  }

  /** Submits a candidate. Never throws: every outcome is a reply. */
  async accept(
    requestId: string,
    token: string,
    candidateText: string,
    options: AcceptOptions = {},
  ): Promise<HandoffReply> {
    if (this.#closed) return errorReply(handoffErrors.sessionClosed(requestId));
    return this.#engine.accept(this, requestId, token, candidateText, options);
  }

  /** Cancels a request. Throws `HANDOFF_NOT_FOUND` for a request this session does not know. */
  cancel(requestId: string, reason: HostCancelReason | 'aborted' = 'cancelled'): HostCancelReply {
    if (this.#closed) throw handoffErrors.sessionClosed(requestId);
    return this.#engine.cancel(this, requestId, reason);
  }

  /** Cancels the live requests (waiters get `SESSION_CLOSED`) and drops retained replies. Idempotent. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    for (const record of [...this.#records.values()]) this.#engine.closeRecord(record);
    this.#engine.forgetSession(this);
    return Promise.resolve();
  }

  /** @internal */
  get(requestId: string): LiveRecord | undefined {
    return this.#records.get(requestId);
  }

  /** @internal */
  add(record: LiveRecord): void {
    this.#records.set(record.requestId, record);
  }

  /** @internal */
  remove(record: LiveRecord): void {
    this.#records.delete(record.requestId);
  }

  /** @internal */
  records(): IterableIterator<LiveRecord> {
    return this.#records.values();
  }
}
