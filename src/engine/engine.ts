/**
 * The host-handoff engine (spec 03): prepare / accept / cancel over one XState actor per prepared request, a per-session
 * registry of live requests, and the terminal store. Every lifecycle decision is the machine's (`machines/handoff.ts`):
 * the engine sends events stamped with their arrival time, turns the machine's answers into replies through one table
 * (`#reply`), runs the validation job the machine starts and abandons, and moves a request the machine tagged
 * `terminal` into the store when the machine says to retain it. It never looks at a state name.
 */
import { randomUUID } from 'node:crypto';
import { createActor, transition, type Actor, type SnapshotFrom } from 'xstate';
import { z } from 'zod';
import { toIntentError } from '../core/errors.js';
import type { InstanceModel } from '../core/instance.js';
import { normalizeCandidate } from '../core/normalize.js';
import { prepareRequest, type PreparedRequest, type RequestCaps } from '../core/request.js';
import {
  LIMIT_DEFAULTS,
  type HostCancelReason,
  type HostCancelReply,
  type HostTask,
  type IntentResult,
} from '../core/schemas.js';
import { validateCandidate } from '../core/validate.js';
import {
  handoffMachine,
  stateOf,
  type HandoffAnswer,
  type HandoffEmitted,
  type HandoffEvent,
  type HandoffMachine,
  type HandoffMode,
  type HandoffState,
  type ValidationOutcome,
  type WaiterAnswer,
} from '../../machines/handoff.js';
import { isHandoffClock, systemClock, type HandoffClock } from './clock.js';
import type { EngineSnapshot, HandoffTransition, LiveRequestView, SessionView, TransitionEvent } from './inspection.js';
import { candidateIdentity, newCredentials, shortHash, tokenMatches } from './identity.js';
import { errorReply, handoffErrors, replyFromText, successReply, type HandoffReply } from './replies.js';
import {
  STORE_MAX_BYTES,
  STORE_MAX_ITEMS,
  TerminalStore,
  recordBytes,
  type TerminalRecord,
  type TerminalStoreOptions,
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

export type {
  HandoffTransition,
  LiveRequestView,
  RetainedRequestView,
  SessionView,
  EngineSnapshot,
} from './inspection.js';

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

/**
 * The one validation a live request runs at a time. The machine starts it (`validate`) and stops it (`abandon`, on
 * leaving `validating`); `reply` is the one object every caller waiting on it gets.
 */
interface ValidationRun {
  /**
   * Set by the machine's `abandon`: the job, if it has not run yet, never does. A plain flag: an AbortController would
   * build a DOMException with a stack trace for every validation the machine leaves.
   */
  abandoned: boolean;
  readonly reply: Deferred<HandoffReply>;
  /** The normalised result of a valid candidate, kept between the validation and the machine's answer. */
  result: IntentResult | undefined;
}

/** A live request: its actor and what the engine needs to serve it. Nothing here repeats the machine's state. */
interface LiveRecord {
  readonly requestId: string;
  readonly session: EngineSession;
  readonly instance: HandoffInstance;
  readonly prepared: PreparedRequest;
  readonly tokenHash: Buffer;
  readonly preparedAt: number;
  readonly expiresAt: number | undefined;
  readonly actor: HandoffActor;
  timer: unknown;
  run: ValidationRun | undefined;
  /** Told the machine's answer to the waiters when the request ends, whichever way (the executor loop listens). */
  readonly onEnded: ((answer: WaiterAnswer) => void) | undefined;
  /** What the machine emitted during the event being processed (handled once the event is done). */
  emitted: HandoffEmitted[];
}

const count = (max: number) => z.number().int().min(1).max(max);

/** Checked at construction, like lru-cache does: a 0, NaN or fraction never silently removes a bound. */
const EngineOptionsSchema = z
  .object({
    clock: z.custom<HandoffClock>(isHandoffClock, 'must be a clock with now, setTimeout and clearTimeout').optional(),
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
  throw handoffErrors.engineOption(detail, '/' + (issue?.path ?? []).map(String).join('/'), issue?.message ?? '');
}

export class HandoffEngine {
  readonly clock: HandoffClock;
  readonly store: TerminalStore;
  readonly maxPendingPerSession: number;
  readonly retain: boolean;
  readonly machine: HandoffMachine = handoffMachine;
  readonly #sessions = new Set<EngineSession>();
  readonly #listeners = new Set<(t: HandoffTransition) => void>();
  #closed = false;

  constructor(options: HandoffEngineOptions = {}) {
    checkEngineOptions(options);
    this.clock = options.clock ?? systemClock;
    this.store = new TerminalStore({
      ...options.store,
      onEvict: (record) => {
        if (this.#listeners.size > 0)
          this.#announce(this.#step(record, 'evict', record.state, record.state, record.context, undefined));
      },
    });
    this.maxPendingPerSession = options.maxPendingPerSession ?? LIMIT_DEFAULTS.maxPendingPerSession;
    this.retain = options.retain ?? true;
  }

  /** Opens an independent session: its own live requests, its own pending cap, its own retained replies. */
  openSession(label?: string): EngineSession {
    if (this.#closed) throw handoffErrors.engineClosed();
    const session = new EngineSession(this, label);
    this.#sessions.add(session);
    return session;
  }

  /**
   * Subscribes to the transition stream: every step of every request from now on, including requests prepared before
   * (their first step then names the state they were in). Nothing is built for the stream while nobody listens.
   */
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
      ended: r.ended,
      ...(r.context.cancelReason === undefined ? {} : { reason: r.context.cancelReason }),
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
  // What EngineSession calls

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
    executor?: { onEnded: (answer: WaiterAnswer) => void },
  ): { record: LiveRecord; task: HostTask; text: string } {
    if (instance.disposed) throw handoffErrors.disposed(instance.name);
    if (session.size >= this.maxPendingPerSession) throw handoffErrors.capacity(this.maxPendingPerSession);
    const now = this.clock.now();
    const prepared = prepareRequest(instance.model, request, new Date(now), options.caps);
    const deadlineMs = options.timeoutMs ?? instance.model.timeoutMs;
    const expiresAt = deadlineMs === undefined ? undefined : now + deadlineMs;
    const { requestId, token, tokenHash } = newCredentials();
    const mode: HandoffMode = executor === undefined ? 'host' : 'executor';
    const task = hostTask(requestId, token, prepared, expiresAt);
    const text = serialiseTask(task);
    const record: LiveRecord = {
      requestId,
      session,
      instance,
      prepared,
      tokenHash,
      preparedAt: now,
      expiresAt,
      actor: createActor(this.machine, { input: { requestId, expiresAt, mode } }),
      timer: undefined,
      run: undefined,
      onEnded: executor?.onEnded,
      emitted: [],
    };
    record.actor.on('*', (emitted) => {
      record.emitted.push(emitted);
    });
    session.add(record);
    record.actor.start();
    if (this.#listeners.size > 0) {
      const step = this.#step(
        whoOf(record),
        'prepare',
        null,
        stateOf(record.actor.getSnapshot().value),
        record.actor.getSnapshot().context,
        undefined,
      );
      step.mode = mode;
      if (expiresAt !== undefined) step.expiresAt = new Date(expiresAt).toISOString();
      this.#announce(step);
    }
    if (deadlineMs !== undefined)
      record.timer = this.clock.setTimeout(() => {
        record.timer = undefined;
        if (session.get(requestId) === record) this.#send(record, { type: 'DEADLINE' });
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
      const run = live.run;
      const snap = this.#send(live, {
        type: 'ACCEPT',
        candidate: { hash: identity.hash, text: identity.text },
        at: this.clock.now(),
      });
      const answer = snap.context.answer;
      // The caller waits on the validation it started or joined: one reply object for all of them.
      const waitOn = answer === 'validate' ? live.run : answer === 'join' ? run : undefined;
      if (waitOn !== undefined) return waitFor(waitOn.reply.promise, options.signal, requestId);
      return this.#reply(requestId, answer, snap.context, undefined);
    }
    const stored = this.store.get(requestId, session.id);
    if (stored === undefined || !tokenMatches(token, stored.tokenHash))
      return errorReply(handoffErrors.notFound(requestId));
    const identity = candidateIdentity(candidateText);
    const next = this.#ask(stored, {
      type: 'ACCEPT',
      candidate: { hash: identity.hash, text: identity.text },
      at: this.clock.now(),
    });
    return next.context.answer === 'replay' && stored.reply !== undefined
      ? replyFromText(stored.reply.isError, stored.reply.text)
      : this.#reply(requestId, next.context.answer, next.context, undefined);
  }

  /** @internal */
  cancel(session: EngineSession, requestId: string, reason: HostCancelReason | 'aborted'): HostCancelReply {
    const live = session.get(requestId);
    const answer =
      live !== undefined
        ? this.#send(live, { type: 'CANCEL', reason, at: this.clock.now() }).context.answer
        : this.#askStored(session, requestId, { type: 'CANCEL', reason, at: this.clock.now() });
    switch (answer) {
      case 'withdrawn':
        return { requestId, status: 'cancelled' };
      case 'already_cancelled':
      case 'already_completed':
        return { requestId, status: answer };
      case 'already_expired':
        // Spec 03's status for an expired request, with why: the deadline ended it, not a result.
        return { requestId, status: 'already_completed', reason: 'expired' };
      default:
        throw toIntentError(new Error(`unexpected answer ${answer} to CANCEL`), requestId);
    }
  }

  /** @internal */
  closeRecord(record: LiveRecord): void {
    this.#send(record, { type: 'CLOSE', at: this.clock.now() });
  }

  // -------------------------------------------------------------------------------------------------------------------

  #askStored(session: EngineSession, requestId: string, event: HandoffEvent): HandoffAnswer {
    const stored = this.store.get(requestId, session.id);
    if (stored === undefined) throw handoffErrors.notFound(requestId);
    return this.#ask(stored, event).context.answer;
  }

  /**
   * The reply for an answer of the machine, for the event's sender or for the waiters of a validation. The one place
   * where answers become replies; `result` is the normalised result behind a `result` answer.
   */
  #reply(
    requestId: string,
    answer: HandoffAnswer,
    context: HandoffSnapshot['context'],
    result: IntentResult | undefined,
  ): HandoffReply {
    const outcome = context.outcome;
    const issues = outcome !== undefined && !outcome.ok && 'issues' in outcome ? outcome.issues : [];
    switch (answer) {
      case 'result':
        return result !== undefined && outcome?.ok === true
          ? successReply(result, outcome.text)
          : internalReply(requestId);
      case 'invalid':
      case 'feedback':
        return errorReply(handoffErrors.candidateInvalid(requestId, issues));
      case 'rejected':
        return errorReply(handoffErrors.candidateRejected(requestId, issues));
      case 'conflict':
        return errorReply(handoffErrors.conflict(requestId));
      case 'too_late':
        return errorReply(handoffErrors.expired(requestId));
      case 'withdrawn':
      case 'withdrawn_earlier':
        return errorReply(handoffErrors.cancelled(requestId, context.cancelReason ?? 'cancelled'));
      case 'closed':
        return errorReply(handoffErrors.sessionClosed(requestId));
      case 'failed':
        return errorReply(handoffErrors.validationFailed(requestId));
      default:
        return internalReply(requestId);
    }
  }

  /**
   * The transition record of one step (`inspection.ts`): what the event brought — its arrival time, a candidate's size
   * and short hash, a validation's outcome, a cancel's reason — so that the machine can replay it.
   */
  #step(
    who: { requestId: string; sessionId: string; instance: string },
    name: TransitionEvent,
    from: HandoffState | null,
    to: HandoffState,
    context: HandoffSnapshot['context'],
    event: HandoffEvent | undefined,
  ): HandoffTransition {
    const step: HandoffTransition = {
      at: new Date(event !== undefined && 'at' in event ? event.at : this.clock.now()).toISOString(),
      sessionId: who.sessionId,
      requestId: who.requestId,
      instance: who.instance,
      from,
      event: name,
      to,
      answer: context.answer,
      validations: context.validations,
    };
    if (event?.type === 'ACCEPT')
      step.candidate = {
        bytes: Buffer.byteLength(event.candidate.text, 'utf8'),
        hash: shortHash(event.candidate.hash),
      };
    else if (event?.type === 'VALIDATED')
      step.outcome = event.ok ? 'valid' : 'crashed' in event ? 'crashed' : 'invalid';
    if (event?.type === 'CANCEL') step.reason = event.reason;
    // Entering the cancelled state by another event (a session closing, a crashed validation): the machine's reason.
    // Only that state carries one, and nothing leaves it, so a change of state with a reason is that entry.
    else if (from !== to && context.cancelReason !== undefined) step.reason = context.cancelReason;
    return step;
  }

  #announce(step: HandoffTransition): void {
    for (const listener of this.#listeners) {
      try {
        listener(step);
      } catch {
        // A listener's failure must never disturb a request.
      }
    }
  }

  /**
   * Sends an event to a live request, then carries out what the machine emitted (start or abandon the validation,
   * answer its waiters) and, when the machine tagged the request terminal, retires it.
   */
  #send(record: LiveRecord, event: HandoffEvent): HandoffSnapshot {
    // The transition record is built here, from the snapshots before and after the event, and announced before
    // anything the event caused (a retired request's store eviction comes after it). XState's own `inspect` would
    // do the same at ~10-20% of a handoff's cost (it builds an inspection event per event, snapshot, microstep and
    // action; BENCHMARKS.md, issue 11): this costs one object per event, and only while someone listens.
    const from = this.#listeners.size > 0 ? stateOf(record.actor.getSnapshot().value) : undefined;
    record.actor.send(event);
    const snap = record.actor.getSnapshot();
    if (from !== undefined && this.#listeners.size > 0)
      this.#announce(this.#step(whoOf(record), event.type, from, stateOf(snap.value), snap.context, event));
    const emitted = record.emitted;
    record.emitted = [];
    let told: { answer: WaiterAnswer; reply: HandoffReply } | undefined;
    for (const e of emitted) told = this.#carryOut(record, e, snap) ?? told;
    if (snap.hasTag('terminal')) this.#retire(record, snap, told);
    return snap;
  }

  /** Carries out one thing the machine emitted; for `waiters`, returns the reply they got. */
  #carryOut(
    record: LiveRecord,
    emitted: HandoffEmitted,
    snap: HandoffSnapshot,
  ): { answer: WaiterAnswer; reply: HandoffReply } | undefined {
    switch (emitted.type) {
      case 'validate':
        this.#startValidation(record);
        return undefined;
      case 'abandon':
        if (record.run !== undefined) record.run.abandoned = true;
        return undefined;
      case 'waiters': {
        const run = record.run;
        record.run = undefined;
        const reply = this.#reply(record.requestId, emitted.answer, snap.context, run?.result);
        run?.reply.resolve(reply);
        return { answer: emitted.answer, reply };
      }
    }
  }

  /** Answers an event for a retained request through the machine itself, as a pure transition of its snapshot. */
  #ask(stored: TerminalRecord, event: HandoffEvent): HandoffSnapshot {
    const snapshot = this.machine.resolveState({ value: stored.state, context: stored.context });
    const [next] = transition(this.machine, snapshot, event);
    if (this.#listeners.size > 0)
      this.#announce(
        this.#step(
          stored,
          // A retained reply handed out again is a `replay` step; any other late event keeps its own name.
          next.context.answer === 'replay' ? 'replay' : event.type,
          stored.state,
          stateOf(next.value),
          next.context,
          event,
        ),
      );
    return next;
  }

  #startValidation(record: LiveRecord): void {
    const run: ValidationRun = {
      abandoned: false,
      reply: deferred<HandoffReply>(),
      result: undefined,
    };
    record.run = run;
    // Deferred to a later turn of the event loop so that identical concurrent submissions join this validation and a
    // cancel, a deadline or a session close can still overtake it (the machine then abandons it).
    setImmediate(() => {
      if (!run.abandoned) this.#runValidation(record, run);
    });
  }

  #runValidation(record: LiveRecord, run: ValidationRun): void {
    const candidate = record.actor.getSnapshot().context.candidate;
    let outcome: ValidationOutcome;
    try {
      if (candidate === undefined) throw new Error('validating without a candidate');
      const check = validateCandidate(record.prepared, candidate.text);
      if (check.ok) {
        run.result = normalizeCandidate(record.prepared, check.candidate);
        outcome = { ok: true, text: JSON.stringify(run.result) };
      } else outcome = { ok: false, issues: check.issues };
    } catch {
      // A bug in validation: the machine ends the request with its own answer, and every waiter learns it.
      outcome = { ok: false, crashed: true };
    }
    this.#send(record, { type: 'VALIDATED', ...outcome, at: this.clock.now() });
  }

  /** The machine tagged the request terminal: stop its actor, drop it from its session, retain it if the machine says so. */
  #retire(
    record: LiveRecord,
    snap: HandoffSnapshot,
    told: { answer: WaiterAnswer; reply: HandoffReply } | undefined,
  ): void {
    if (record.session.get(record.requestId) !== record) return;
    record.session.remove(record);
    if (record.timer !== undefined) this.clock.clearTimeout(record.timer);
    record.timer = undefined;
    record.actor.stop();
    // Every transition into a terminal state tells the waiters how the request ended (machines/handoff.ts).
    record.onEnded?.(told?.answer ?? 'failed');
    if (this.retain && snap.context.retain) {
      // The terminal reply, byte for byte, is what a replay of the last candidate gets (spec 03, "Retention").
      const reply = told?.reply;
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
        ended: told?.answer ?? 'failed',
      });
    }
  }
}

/**
 * The HostTask's JSON. The request passed every bound it has, but its strings (a baseline's, say) can still add up to
 * more than one JavaScript string holds: that is the caller's request being too large, not a bug.
 */
/**
 * The JSON of a plan's `outputSchema` and of its last `instructions`, made once per schema object. Every prepare of the
 * same instance and fields hands out the same two (about 11 KB of the fixture's 12.6 KB task), so serialising them per
 * request was most of `JSON.stringify(task)` (issue 12: ~35 of ~42 µs per prepare).
 */
const planJson = new WeakMap<object, { instructions: string; instructionsJson: string; schemaJson: string }>();

/** `JSON.stringify(task)`, byte for byte (same keys, same order), with the per-plan parts serialised once. */
function serialiseTask(task: HostTask): string {
  try {
    let plan = planJson.get(task.outputSchema);
    if (plan === undefined) {
      plan = { instructions: '', instructionsJson: '""', schemaJson: JSON.stringify(task.outputSchema) };
      planJson.set(task.outputSchema, plan);
    }
    if (plan.instructions !== task.instructions) {
      plan.instructions = task.instructions;
      plan.instructionsJson = JSON.stringify(task.instructions);
    }
    const expiresAt = task.expiresAt === undefined ? '' : `,"expiresAt":${JSON.stringify(task.expiresAt)}`;
    return (
      `{"kind":${JSON.stringify(task.kind)},"requestId":${JSON.stringify(task.requestId)},` +
      `"submissionToken":${JSON.stringify(task.submissionToken)},"instructions":${plan.instructionsJson},` +
      `"input":${JSON.stringify(task.input)},"outputSchema":${plan.schemaJson}${expiresAt}}`
    );
  } catch (error) {
    if (error instanceof RangeError) throw handoffErrors.taskTooLarge();
    throw error;
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

/** Who a live request is, as a transition record names it. */
function whoOf(record: LiveRecord): { requestId: string; sessionId: string; instance: string } {
  return { requestId: record.requestId, sessionId: record.session.id, instance: record.instance.name };
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
   * Prepares an executor-mode request for the executor loop (spec 03, "Executor mode"). `onEnded` is told, at once, the
   * machine's answer to the waiters when the request ends, so the loop can stop its executor when a deadline, an abort
   * or a session close ends the request first.
   * @internal
   */
  prepareForExecutor(
    instance: HandoffInstance,
    request: unknown,
    options: PrepareOptions,
    onEnded: (answer: WaiterAnswer) => void,
  ): HostTask {
    if (this.#closed) throw handoffErrors.sessionClosed();
    return this.#engine.prepare(this, instance, request, options, { onEnded }).task;
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
