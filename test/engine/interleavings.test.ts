/**
 * Interleavings of concurrent REAL engine calls, explored with fast-check's scheduler and compared, call by call, with a
 * small reference model of spec 03's transition table.
 *
 * How the interleaving is controlled. Every engine call issues its event synchronously (`accept` sends ACCEPT before
 * its first await, `cancel`, `close` and `clock.increment` act at once). The only thing the engine defers is the
 * validation, which it starts with `setImmediate` on a later turn of the event loop. So the whole space of interleavings
 * is: the order in which calls are *issued*, and where the event loop turns (a "drain") fall between them. Both are
 * steps here: each step is a scheduled task (a `scheduleSequence` item per concurrent caller, or a command run by
 * `scheduledModelRun`), and a drain step awaits one real `setImmediate`, which runs every validation queued before it.
 * The scheduler itself only uses microtasks, so no validation can run anywhere except inside a drain step; the model
 * therefore knows exactly when each validation happens.
 *
 * Checked on every run:
 * - each accept's reply code (and cancel reason / correction details) and each cancel's status or thrown code is the
 *   one the model predicts; `accept` never rejects; `cancel` throws only where the model says so (unknown/other-session
 *   id → HANDOFF_NOT_FOUND, closed session → SESSION_CLOSED);
 * - after every step, `engine.snapshot()` shows exactly the model's live and retained requests, states and validation
 *   counts; validations never exceed 2 there nor in the inspection stream, never decrease, and the number of entries
 *   into `validating` seen by the stream equals the model's count;
 * - every caller of one validation got the very same reply object; per request, all replies with one code are
 *   byte-identical (so every replay of a terminal reply, feedback replay, refusal... is the first reply's bytes);
 * - before each drain, replies the model considers answered have settled and joiners of a queued validation have not;
 * - at the end the session is closed and, without any further turn of the event loop, every accept promise has settled.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { SimulatedClock } from 'xstate';
import { describe, expect, it } from 'vitest';
import { Intent } from '../../src/intent.js';
import { IntentError } from '../../src/core/errors.js';
import type { HostTask } from '../../src/core/schemas.js';
import { HandoffEngine, type EngineSession, type HandoffTransition } from '../../src/engine/engine.js';
import type { HandoffReply } from '../../src/engine/replies.js';
import type { HandoffState } from '../../machines/handoff.js';

// ---------------------------------------------------------------------------------------------------------------------
// Candidates

const INPUT = '查询订单000123，不要取消订单';
const SEED = readFileSync(new URL('../fixtures/seed-candidate.json', import.meta.url), 'utf8').trim();
const SEED_OTHER = SEED.replace('"goal":"查询订单000123"', '"goal":"查询订单000123的状态"');

type Cand = 'V1' | 'V2' | 'I1' | 'I2';
const CANDIDATES: Record<Cand, string> = {
  V1: SEED,
  V2: SEED_OTHER,
  // Two different correctable format errors.
  I1: '{"turnKind":"request"}',
  I2: 'this is not JSON',
};
const isValid = (c: Cand): boolean => c === 'V1' || c === 'V2';
const WRONG_TOKEN = 'A'.repeat(43);

// ---------------------------------------------------------------------------------------------------------------------
// Operations

type CancelReasonArg = 'cancelled' | 'refusal' | 'incomplete';
type Via = 'owner' | 'wrongToken' | 'otherSession';

type Op =
  | { kind: 'accept'; req: number; cand: Cand; via: Via }
  | { kind: 'cancel'; req: number; reason: CancelReasonArg; via: 'owner' | 'otherSession' }
  | { kind: 'cancelUnknown' }
  | { kind: 'tick'; ms: number }
  | { kind: 'drain' }
  | { kind: 'close' };

function opLabel(op: Op): string {
  switch (op.kind) {
    case 'accept':
      return `accept(r${op.req}, ${op.cand}${op.via === 'owner' ? '' : `, ${op.via}`})`;
    case 'cancel':
      return `cancel(r${op.req}, ${op.reason}${op.via === 'owner' ? '' : ', otherSession'})`;
    case 'cancelUnknown':
      return 'cancel(unknown id)';
    case 'tick':
      return `tick(${op.ms}ms)`;
    case 'drain':
      return 'drain';
    case 'close':
      return 'close';
  }
}

const MAX_REQUESTS = 2;
const reqArb = fc.integer({ min: 0, max: MAX_REQUESTS - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 24,
    arbitrary: fc.record({
      kind: fc.constant('accept' as const),
      req: reqArb,
      cand: fc.constantFrom<Cand>('V1', 'V1', 'V2', 'I1', 'I1', 'I1', 'I2', 'I2'),
      via: fc.constantFrom<Via>(...Array<Via>(8).fill('owner'), 'wrongToken', 'otherSession'),
    }),
  },
  { weight: 10, arbitrary: fc.constant({ kind: 'drain' as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('cancel' as const),
      req: reqArb,
      reason: fc.constantFrom<CancelReasonArg>('cancelled', 'refusal', 'incomplete'),
      via: fc.constantFrom<'owner' | 'otherSession'>('owner', 'owner', 'owner', 'otherSession'),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.constantFrom(30, 60) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'cancelUnknown' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'close' as const }) },
);

/** Per request: no deadline, or one of 50 ms counted from prepare (ticks are 30 or 60 ms). */
const setupArb = fc.record({
  deadlines: fc.array(fc.constantFrom<number | undefined>(undefined, 50), { minLength: 1, maxLength: MAX_REQUESTS }),
  drainBeforeClose: fc.boolean(),
});
type Setup = { deadlines: (number | undefined)[]; drainBeforeClose: boolean };

// ---------------------------------------------------------------------------------------------------------------------
// The reference model: spec 03's table, nothing else.

/** What a call should get: `OK` (an IntentResult) or an error code, with the cancel reason for HANDOFF_CANCELLED. */
interface Expect {
  code: string;
  reason?: string;
}

interface ModelRun {
  readonly id: number;
  readonly cand: Cand;
  readonly waiters: AcceptCall[];
}

interface ModelRequest {
  state: HandoffState;
  validations: number;
  candidate: Cand | undefined;
  readonly deadline: number | undefined;
  run: ModelRun | undefined;
  cancelReason: string | undefined;
  /** The code an accept of the last candidate replays once completed (`OK` or `CANDIDATE_REJECTED`). */
  terminalCode: string | undefined;
}

const LIVE: readonly HandoffState[] = ['prepared', 'validating', 'correcting'];

class Model {
  readonly requests: ModelRequest[];
  closed = false;
  now = 0;
  #runs = 0;

  constructor(
    deadlines: (number | undefined)[],
    /** 2 per spec 03; the self-test sets another value to prove a disagreeing model is caught. */
    readonly budget = 2,
  ) {
    this.requests = deadlines.map((deadline) => ({
      state: 'prepared',
      validations: 0,
      candidate: undefined,
      deadline,
      run: undefined,
      cancelReason: undefined,
      terminalCode: undefined,
    }));
  }

  accept(req: number, cand: Cand, via: Via, call: AcceptCall): Expect | ModelRun {
    const r = this.requests[req]!;
    if (via === 'otherSession') return { code: 'HANDOFF_NOT_FOUND' };
    if (this.closed) return { code: 'SESSION_CLOSED' };
    if (via === 'wrongToken') return { code: 'HANDOFF_NOT_FOUND' };
    switch (r.state) {
      case 'prepared':
        return this.#startRun(r, cand, call);
      case 'validating':
        if (cand !== r.candidate) return { code: 'HANDOFF_CONFLICT' };
        r.run!.waiters.push(call);
        return r.run!;
      case 'correcting':
        if (cand === r.candidate) return { code: 'CANDIDATE_INVALID' };
        return this.#startRun(r, cand, call);
      case 'completed':
        return cand === r.candidate ? { code: r.terminalCode! } : { code: 'HANDOFF_CONFLICT' };
      case 'cancelled':
        return { code: 'HANDOFF_CANCELLED', reason: r.cancelReason! };
      case 'expired':
        return { code: 'HANDOFF_EXPIRED' };
    }
  }

  /** The status `cancel` returns, or the code it throws. */
  cancel(
    req: number | undefined,
    reason: CancelReasonArg,
    via: 'owner' | 'otherSession',
  ): { status?: string; reason?: string; throws?: string } {
    if (via === 'otherSession') return { throws: 'HANDOFF_NOT_FOUND' };
    if (this.closed) return { throws: 'SESSION_CLOSED' };
    if (req === undefined) return { throws: 'HANDOFF_NOT_FOUND' };
    const r = this.requests[req]!;
    if (LIVE.includes(r.state)) {
      this.#end(r, 'cancelled', { code: 'HANDOFF_CANCELLED', reason });
      r.cancelReason = reason;
      return { status: 'cancelled' };
    }
    if (r.state === 'expired') return { status: 'already_completed', reason: 'expired' };
    return { status: r.state === 'cancelled' ? 'already_cancelled' : 'already_completed' };
  }

  tick(ms: number): void {
    this.now += ms;
    for (const r of this.requests)
      if (LIVE.includes(r.state) && r.deadline !== undefined && r.deadline <= this.now)
        this.#end(r, 'expired', { code: 'HANDOFF_EXPIRED' });
  }

  /** One turn of the event loop: every queued validation runs. */
  drain(): void {
    for (const r of this.requests) {
      if (r.state !== 'validating') continue;
      const run = r.run!;
      r.run = undefined;
      let code: string;
      if (isValid(run.cand)) {
        r.state = 'completed';
        code = 'OK';
      } else if (r.validations < this.budget) {
        r.state = 'correcting';
        code = 'CANDIDATE_INVALID';
      } else {
        r.state = 'completed';
        code = 'CANDIDATE_REJECTED';
      }
      if (r.state === 'completed') r.terminalCode = code;
      for (const w of run.waiters) w.expect = { code };
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const r of this.requests)
      if (LIVE.includes(r.state)) {
        this.#end(r, 'cancelled', { code: 'SESSION_CLOSED' });
        r.cancelReason = 'session_closed';
      }
  }

  #startRun(r: ModelRequest, cand: Cand, call: AcceptCall): ModelRun {
    r.state = 'validating';
    r.validations += 1;
    r.candidate = cand;
    r.run = { id: ++this.#runs, cand, waiters: [call] };
    return r.run;
  }

  #end(r: ModelRequest, state: HandoffState, waiters: Expect): void {
    r.state = state;
    if (r.run !== undefined) for (const w of r.run.waiters) w.expect = { ...waiters };
    r.run = undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// The real system plus the bookkeeping that compares it with the model.

interface AcceptCall {
  readonly seq: number;
  readonly label: string;
  readonly req: number;
  /** Set when the model knows the answer (at once, or when the validation it waits on ends). */
  expect: Expect | undefined;
  run: ModelRun | undefined;
  settled: boolean;
  reply: HandoffReply | undefined;
}

const flushMicrotasks = async (): Promise<void> => {
  for (let i = 0; i < 50; i++) await Promise.resolve();
};
const nextTurn = (): Promise<void> =>
  new Promise((resolve) => {
    setImmediate(resolve);
  });

function codeOf(reply: HandoffReply): string {
  return reply.isError ? reply.error.code : 'OK';
}

/**
 * How often each kind of answer was checked: `direct:` answers come at once, `waiter:` ones from a validation (or from
 * what ended it), `joined` counts validations shared by several callers.
 */
const coverage = new Map<string, number>();
const COVERAGE_TAGS = [
  'joined',
  'waiter:OK',
  'waiter:CANDIDATE_INVALID',
  'waiter:CANDIDATE_REJECTED',
  'waiter:HANDOFF_CANCELLED',
  'waiter:HANDOFF_EXPIRED',
  'waiter:SESSION_CLOSED',
  'direct:OK',
  'direct:CANDIDATE_INVALID',
  'direct:CANDIDATE_REJECTED',
  'direct:HANDOFF_CONFLICT',
  'direct:HANDOFF_CANCELLED',
  'direct:HANDOFF_EXPIRED',
  'direct:HANDOFF_NOT_FOUND',
  'direct:SESSION_CLOSED',
] as const;

class World {
  readonly clock = new SimulatedClock();
  readonly engine = new HandoffEngine({ clock: this.clock });
  readonly transitions: HandoffTransition[] = [];
  readonly a: EngineSession;
  readonly b: EngineSession;
  readonly tasks: HostTask[];
  readonly model: Model;
  readonly calls: AcceptCall[] = [];
  readonly problems: string[] = [];
  readonly log: string[] = [];
  readonly #lastValidations = new Map<string, number>();

  constructor(setup: Setup, budget?: number) {
    this.engine.inspect((t) => {
      this.transitions.push(t);
      if (t.validations > 2) this.problem(`inspection: ${t.requestId} reports validations=${t.validations}`);
      const last = this.#lastValidations.get(t.requestId) ?? 0;
      if (t.validations < last)
        this.problem(`inspection: validations of ${t.requestId} went back from ${last} to ${t.validations}`);
      this.#lastValidations.set(t.requestId, t.validations);
    });
    this.a = this.engine.openSession('a');
    this.b = this.engine.openSession('b');
    const instance = new Intent({}).asInstance('main');
    this.tasks = setup.deadlines.map((timeoutMs) => this.a.prepare(instance, { input: INPUT }, { timeoutMs }));
    this.model = new Model(setup.deadlines, budget);
  }

  problem(text: string): void {
    this.problems.push(`${text}   [after: ${this.log.join(' → ')}]`);
  }

  /** Performs one step on the engine and the model, then compares the snapshot. */
  async perform(step: Op): Promise<void> {
    // Generated request indexes cover MAX_REQUESTS; fold them onto the requests this run prepared.
    const op = 'req' in step ? { ...step, req: step.req % this.tasks.length } : step;
    const label = opLabel(op);
    this.log.push(label);
    switch (op.kind) {
      case 'accept':
        this.#accept(op.req, op.cand, op.via, label);
        break;
      case 'cancel':
        this.#cancel(op.req, op.reason, op.via, label);
        break;
      case 'cancelUnknown':
        this.#cancel(undefined, 'cancelled', 'owner', label);
        break;
      case 'tick':
        this.model.tick(op.ms);
        this.clock.increment(op.ms);
        break;
      case 'drain':
        await this.#drain();
        break;
      case 'close':
        this.model.close();
        await this.a.close();
        break;
    }
    this.checkSnapshot(label);
  }

  #accept(req: number, cand: Cand, via: Via, label: string): void {
    const task = this.tasks[req]!;
    const call: AcceptCall = {
      seq: this.calls.length,
      label,
      req,
      expect: undefined,
      run: undefined,
      settled: false,
      reply: undefined,
    };
    this.calls.push(call);
    const predicted = this.model.accept(req, cand, via, call);
    if ('waiters' in predicted) call.run = predicted;
    else call.expect = predicted;
    const session = via === 'otherSession' ? this.b : this.a;
    const token = via === 'wrongToken' ? WRONG_TOKEN : task.submissionToken;
    let promise: Promise<HandoffReply>;
    try {
      promise = session.accept(task.requestId, token, CANDIDATES[cand]);
    } catch (error) {
      this.problem(`${label} threw synchronously: ${String(error)}`);
      call.settled = true;
      return;
    }
    promise.then(
      (reply) => {
        call.settled = true;
        call.reply = reply;
      },
      (error: unknown) => {
        call.settled = true;
        this.problem(`${label} rejected: ${String(error)}`);
      },
    );
  }

  #cancel(req: number | undefined, reason: CancelReasonArg, via: 'owner' | 'otherSession', label: string): void {
    const requestId = req === undefined ? '00000000-0000-4000-8000-000000000000' : this.tasks[req]!.requestId;
    const predicted = this.model.cancel(req, reason, via);
    const session = via === 'otherSession' ? this.b : this.a;
    let actual: { status?: string; reason?: string; throws?: string };
    try {
      const reply = session.cancel(requestId, reason);
      if (reply.requestId !== requestId) this.problem(`${label} answered for ${reply.requestId}`);
      actual = reply.reason === undefined ? { status: reply.status } : { status: reply.status, reason: reply.reason };
    } catch (error) {
      actual = { throws: error instanceof IntentError ? error.code : `non-IntentError ${String(error)}` };
    }
    if (actual.status !== predicted.status || actual.throws !== predicted.throws)
      this.problem(`${label}: expected ${JSON.stringify(predicted)}, got ${JSON.stringify(actual)}`);
  }

  async #drain(): Promise<void> {
    await flushMicrotasks();
    this.checkSettlement('before drain');
    this.model.drain();
    await nextTurn();
  }

  /** Answered calls have settled; joiners of a validation that has not run yet have not. */
  checkSettlement(where: string): void {
    for (const call of this.calls) {
      if (call.expect !== undefined && !call.settled)
        this.problem(`${where}: ${call.label} (#${call.seq}) still pending`);
      if (call.expect === undefined && call.settled)
        this.problem(`${where}: ${call.label} (#${call.seq}) answered before its validation ran`);
    }
  }

  checkSnapshot(where: string): void {
    const snap = this.engine.snapshot();
    const sessionA = snap.sessions.find((s) => s.id === this.a.id);
    const sessionB = snap.sessions.find((s) => s.id === this.b.id);
    if (sessionB === undefined || sessionB.live.length !== 0) this.problem(`${where}: session b is not empty`);
    const live: string[] = [];
    const retained: string[] = [];
    this.model.requests.forEach((r, i) => {
      if (this.model.closed) return;
      const line = `${this.tasks[i]!.requestId} ${r.state} v${r.validations}`;
      (LIVE.includes(r.state) ? live : retained).push(line);
    });
    const actualLive = (sessionA?.live ?? []).map((l) => `${l.requestId} ${l.state} v${l.validations}`);
    const actualRetained = snap.retained.map((r) => `${r.requestId} ${r.state} v${r.validations}`);
    if (this.model.closed && sessionA !== undefined) this.problem(`${where}: closed session still listed`);
    if (!this.model.closed && sessionA === undefined) this.problem(`${where}: open session missing from the snapshot`);
    if (JSON.stringify([...actualLive].sort()) !== JSON.stringify([...live].sort()))
      this.problem(`${where}: live ${JSON.stringify(actualLive)}, model ${JSON.stringify(live)}`);
    if (JSON.stringify([...actualRetained].sort()) !== JSON.stringify([...retained].sort()))
      this.problem(`${where}: retained ${JSON.stringify(actualRetained)}, model ${JSON.stringify(retained)}`);
    if (snap.store.items !== retained.length)
      this.problem(`${where}: store holds ${snap.store.items} items, model ${retained.length}`);
    for (const v of [...(sessionA?.live ?? []), ...snap.retained])
      if (v.validations > 2) this.problem(`${where}: snapshot shows validations=${v.validations}`);
  }

  /**
   * The end of every run: let validations finish, replay each request's last candidate twice (terminal replays, or new
   * validations for requests that never got one), maybe let those run, close the session, and check that every accept
   * has settled without any further turn of the event loop.
   */
  async finish(drainBeforeClose: boolean): Promise<void> {
    await this.perform({ kind: 'drain' });
    for (let req = 0; req < this.tasks.length; req++) {
      const cand = this.model.requests[req]!.candidate ?? 'V1';
      await this.perform({ kind: 'accept', req, cand, via: 'owner' });
      await this.perform({ kind: 'accept', req, cand, via: 'owner' });
    }
    if (drainBeforeClose) await this.perform({ kind: 'drain' });
    await this.perform({ kind: 'close' });
    await flushMicrotasks();
    for (const call of this.calls)
      if (!call.settled) this.problem(`after close: ${call.label} (#${call.seq}) never settled`);
    // A validation abandoned by the close must not run afterwards.
    const seen = this.transitions.length;
    await nextTurn();
    const late = this.transitions.slice(seen);
    if (late.length > 0) this.problem(`after close: late transitions ${JSON.stringify(late)}`);
    this.checkSnapshot('after close');
    this.#compareReplies();
    this.#checkStream();
  }

  #compareReplies(): void {
    for (const call of this.calls) {
      const e = call.expect;
      if (e === undefined) continue;
      const tag = `${call.run === undefined ? 'direct' : 'waiter'}:${e.code}`;
      coverage.set(tag, (coverage.get(tag) ?? 0) + 1);
    }
    const runs = new Set(this.calls.map((c) => c.run).filter((r) => r !== undefined));
    for (const run of runs) if (run.waiters.length > 1) coverage.set('joined', (coverage.get('joined') ?? 0) + 1);
    const runReplies = new Map<number, HandoffReply>();
    const textByCode = new Map<string, string>();
    for (const call of this.calls) {
      const reply = call.reply;
      if (reply === undefined) continue;
      const expected = call.expect;
      const requestId = this.tasks[call.req]!.requestId;
      const code = codeOf(reply);
      if (expected === undefined) this.problem(`${call.label} (#${call.seq}) settled but the model has no answer`);
      else if (expected.code !== code)
        this.problem(`${call.label} (#${call.seq}): expected ${expected.code}, got ${code}`);
      if (reply.isError) {
        const { error } = reply;
        if (error.requestId !== requestId) this.problem(`${call.label}: error for ${String(error.requestId)}`);
        if (expected?.reason !== undefined && error.details?.['reason'] !== expected.reason)
          this.problem(
            `${call.label}: reason ${JSON.stringify(error.details?.['reason'])}, expected ${expected.reason}`,
          );
        if (error.code === 'CANDIDATE_INVALID' || error.code === 'CANDIDATE_REJECTED') {
          const correction =
            error.code === 'CANDIDATE_INVALID' ? { allowed: true, remaining: 1 } : { allowed: false, remaining: 0 };
          if (JSON.stringify(error.details?.['correction']) !== JSON.stringify(correction))
            this.problem(`${call.label}: correction ${JSON.stringify(error.details?.['correction'])}`);
        }
        if (reply.text !== JSON.stringify({ error: error.toJSON() })) this.problem(`${call.label}: text ≠ its error`);
      } else if (reply.text !== JSON.stringify(reply.value)) this.problem(`${call.label}: text ≠ its value`);
      // Everyone served by one validation got the very same reply object.
      if (call.run !== undefined) {
        const first = runReplies.get(call.run.id);
        if (first === undefined) runReplies.set(call.run.id, reply);
        else if (first !== reply) this.problem(`${call.label}: not the same reply object as the other joiners`);
      }
      // Per request, one code has one text: every replay is byte-identical to the first reply.
      const key = `${call.req} ${code}`;
      const firstText = textByCode.get(key);
      if (firstText === undefined) textByCode.set(key, reply.text);
      else if (firstText !== reply.text) this.problem(`${call.label}: ${code} text differs from the first one`);
    }
  }

  #checkStream(): void {
    this.model.requests.forEach((r, i) => {
      const id = this.tasks[i]!.requestId;
      const mine = this.transitions.filter((t) => t.requestId === id);
      const entries = mine.filter((t) => t.to === 'validating' && t.from !== 'validating').length;
      if (entries !== r.validations)
        this.problem(`stream: r${i} entered validating ${entries}×, model ${r.validations}`);
      const last = mine.at(-1);
      if (last?.to !== r.state) this.problem(`stream: r${i} ends in ${String(last?.to)}, model ${r.state}`);
    });
  }

  verdict(): void {
    if (this.problems.length === 0) return;
    const shown = this.problems.slice(0, 6);
    if (this.problems.length > shown.length) shown.push(`... and ${this.problems.length - shown.length} more`);
    throw new Error(shown.join('\n'));
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Runners

/** Concurrent callers: each is a sequence of steps; the scheduler picks which caller's next step runs. */
async function runCallers(s: fc.Scheduler, setup: Setup, callers: Op[][], budget?: number): Promise<World> {
  const world = new World(setup, budget);
  world.checkSnapshot('after prepare');
  let failure: Error | undefined;
  const sequences = callers.map((steps, i) =>
    s.scheduleSequence(
      steps.map((op) => ({
        label: `caller${i}: ${opLabel(op)}`,
        builder: async () => {
          try {
            await world.perform(op);
          } catch (error) {
            failure ??= error instanceof Error ? error : new Error(String(error));
          }
        },
      })),
    ),
  );
  await s.waitIdle();
  if (failure !== undefined) throw failure;
  for (const seq of sequences) if (!seq.done || seq.faulty) world.problem('a caller did not run to its end');
  await world.finish(setup.drainBeforeClose);
  return world;
}

/**
 * A caller is either a random run of steps, or shaped like a host: submit, let the event loop turn, submit again
 * (a resubmission, a correction or a different candidate), let it turn; or a clock running towards the deadline; or a
 * host that submits and then cancels.
 */
const hostCallerArb: fc.Arbitrary<Op[]> = fc
  .tuple(
    reqArb,
    fc.constantFrom<Cand>('I1', 'I1', 'I2', 'V1'),
    fc.constantFrom<Cand>('I1', 'I2', 'I2', 'V1', 'V2'),
    fc.boolean(),
  )
  .map(([req, first, second, drainAtEnd]) => [
    { kind: 'accept', req, cand: first, via: 'owner' },
    { kind: 'drain' },
    { kind: 'accept', req, cand: second, via: 'owner' },
    ...(drainAtEnd ? [{ kind: 'drain' } as const] : []),
  ]);
const clockCallerArb: fc.Arbitrary<Op[]> = fc.constantFrom<Op[]>(
  [{ kind: 'tick', ms: 60 }],
  [
    { kind: 'tick', ms: 30 },
    { kind: 'tick', ms: 30 },
  ],
);
const cancellerCallerArb: fc.Arbitrary<Op[]> = fc
  .tuple(
    reqArb,
    fc.constantFrom<Cand>('V1', 'I1'),
    fc.constantFrom<CancelReasonArg>('cancelled', 'refusal', 'incomplete'),
  )
  .map(([req, cand, reason]) => [
    { kind: 'accept', req, cand, via: 'owner' },
    { kind: 'cancel', req, reason, via: 'owner' },
  ]);
const callerArb: fc.Arbitrary<Op[]> = fc.oneof(
  { weight: 4, arbitrary: fc.array(opArb, { minLength: 1, maxLength: 4 }) },
  { weight: 2, arbitrary: hostCallerArb },
  { weight: 1, arbitrary: clockCallerArb },
  { weight: 1, arbitrary: cancellerCallerArb },
);
const callersArb = fc.array(callerArb, { minLength: 1, maxLength: 4 });

interface Real {
  readonly world: World;
  readonly s: fc.Scheduler;
}

/**
 * One operation as a command. A detached command only hands its operation to the scheduler, which issues it at a point
 * of its choosing among the later commands: a caller that was slow to send its request.
 */
class OpCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly op: Op,
    readonly detached: boolean,
  ) {}
  check(): boolean {
    return true;
  }
  async run(_model: Model, { world, s }: Real): Promise<void> {
    if (!this.detached) {
      await world.perform(this.op);
      return;
    }
    s.scheduleSequence([{ label: this.toString(), builder: () => world.perform(this.op) }]);
  }
  toString(): string {
    return `${this.detached ? 'later ' : ''}${opLabel(this.op)}`;
  }
}

const commandsArb = fc.commands([fc.tuple(opArb, fc.boolean()).map(([op, detached]) => new OpCommand(op, detached))], {
  maxCommands: 16,
});

// ---------------------------------------------------------------------------------------------------------------------

describe('handoff engine: interleavings of concurrent real calls against a reference model', () => {
  it('[S03-INTERLEAVINGS] [S03-TABLE] concurrent callers in scheduler-chosen orders get the replies spec 03 predicts', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), setupArb, callersArb, async (s, setup, callers) => {
        runs++;
        const world = await runCallers(s, setup, callers);
        world.verdict();
      }),
      { numRuns: 100 },
    );
    expect(runs).toBeGreaterThanOrEqual(100);
  });

  it('[S03-INTERLEAVINGS] the generated interleavings reach every row of the table (fixed seed)', async () => {
    coverage.clear();
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), setupArb, callersArb, async (s, setup, callers) => {
        (await runCallers(s, setup, callers)).verdict();
      }),
      // Pinned, not the shared FC_SEED: the assertion is about what this particular sample covers.
      { numRuns: 100, seed: 20261103 },
    );
    expect([...coverage.keys()].sort()).toEqual([...COVERAGE_TAGS].sort());
    for (const tag of COVERAGE_TAGS) expect(coverage.get(tag), tag).toBeGreaterThanOrEqual(2);
  });

  it('[S03-INTERLEAVINGS] [S03-TABLE] command sequences run by scheduledModelRun agree with the model', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), setupArb, commandsArb, async (s, setup, cmds) => {
        const world = new World(setup);
        world.checkSnapshot('after prepare');
        await fc.scheduledModelRun(s, () => ({ model: world.model, real: { world, s } }), cmds);
        if (s.count() !== 0) world.problem('a detached command was never issued');
        await world.finish(setup.drainBeforeClose);
        world.verdict();
      }),
      { numRuns: 100 },
    );
  });

  it('[S03-INTERLEAVINGS] [S03-TABLE] a fixed interleaving: joiners share one validation, conflict, feedback replay, budget, replay', async () => {
    const world = new World({ deadlines: [undefined], drainBeforeClose: true });
    const steps: Op[] = [
      { kind: 'accept', req: 0, cand: 'I1', via: 'owner' },
      { kind: 'accept', req: 0, cand: 'I1', via: 'owner' },
      { kind: 'accept', req: 0, cand: 'V2', via: 'owner' },
      { kind: 'drain' },
      { kind: 'accept', req: 0, cand: 'I1', via: 'owner' },
      { kind: 'accept', req: 0, cand: 'I2', via: 'owner' },
      { kind: 'accept', req: 0, cand: 'I2', via: 'owner' },
      { kind: 'drain' },
      { kind: 'accept', req: 0, cand: 'I2', via: 'owner' },
      { kind: 'cancel', req: 0, reason: 'refusal', via: 'owner' },
    ];
    for (const op of steps) await world.perform(op);
    await world.finish(true);
    world.verdict();
    const codes = world.calls.map((c) => (c.reply === undefined ? 'pending' : codeOf(c.reply)));
    expect(codes).toEqual([
      'CANDIDATE_INVALID', // first accept of I1: validation 1
      'CANDIDATE_INVALID', // identical concurrent accept: joined
      'HANDOFF_CONFLICT', // a different candidate while validating
      'CANDIDATE_INVALID', // correcting(I1) + I1: feedback replay
      'CANDIDATE_REJECTED', // correcting(I1) + I2: validation 2, budget spent
      'CANDIDATE_REJECTED', // identical concurrent accept: joined
      'CANDIDATE_REJECTED', // replay of the terminal reply
      'CANDIDATE_REJECTED', // finish(): two more replays
      'CANDIDATE_REJECTED',
    ]);
    const replies = world.calls.map((c) => c.reply!);
    expect(replies[1]).toBe(replies[0]);
    expect(replies[5]).toBe(replies[4]);
    expect(replies[3]!.text).toBe(replies[0]!.text);
    expect(new Set(replies.slice(4).map((r) => r.text)).size).toBe(1);
    expect(world.model.requests[0]!.validations).toBe(2);
    expect(world.transitions.filter((t) => t.to === 'validating' && t.from !== 'validating')).toHaveLength(2);
  });

  it('[S03-INTERLEAVINGS] [S03-TABLE] cancel, deadline and close overtake a queued validation; every waiter hears it at once', async () => {
    const world = new World({ deadlines: [100, undefined, undefined], drainBeforeClose: false });
    const steps: Op[] = [
      { kind: 'accept', req: 0, cand: 'V1', via: 'owner' },
      { kind: 'accept', req: 0, cand: 'V1', via: 'owner' },
      { kind: 'accept', req: 1, cand: 'V1', via: 'owner' },
      { kind: 'tick', ms: 100 },
      { kind: 'cancel', req: 1, reason: 'incomplete', via: 'owner' },
      { kind: 'drain' },
      { kind: 'accept', req: 0, cand: 'V1', via: 'owner' },
      { kind: 'accept', req: 1, cand: 'V2', via: 'owner' },
      { kind: 'cancel', req: 0, reason: 'cancelled', via: 'owner' },
      { kind: 'cancel', req: 1, reason: 'cancelled', via: 'owner' },
      { kind: 'accept', req: 2, cand: 'I1', via: 'owner' },
      { kind: 'accept', req: 2, cand: 'I1', via: 'owner' },
      { kind: 'close' },
    ];
    for (const op of steps) await world.perform(op);
    await flushMicrotasks();
    // Settled by the close itself, before any further turn of the event loop.
    expect(world.calls.map((c) => c.settled)).toEqual(Array<boolean>(7).fill(true));
    let thrown: unknown;
    try {
      world.a.cancel(world.tasks[2]!.requestId, 'cancelled');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(IntentError);
    expect((thrown as IntentError).code).toBe('SESSION_CLOSED');
    await world.finish(false);
    world.verdict();
    const summary = world.calls.map((c) => {
      const reply = c.reply!;
      if (!reply.isError) return 'OK';
      const reason = reply.error.details?.['reason'];
      return typeof reason === 'string' ? `${reply.error.code}:${reason}` : reply.error.code;
    });
    expect(summary).toEqual([
      'HANDOFF_EXPIRED', // the deadline overtook the queued validation: both waiters
      'HANDOFF_EXPIRED',
      'HANDOFF_CANCELLED:incomplete', // the cancel overtook it
      'HANDOFF_EXPIRED', // later accepts: the refusals, byte-identical
      'HANDOFF_CANCELLED:incomplete',
      'SESSION_CLOSED', // the close overtook a joined validation
      'SESSION_CLOSED',
      'SESSION_CLOSED', // finish(): every later accept on the closed session
      'SESSION_CLOSED',
      'SESSION_CLOSED',
      'SESSION_CLOSED',
      'SESSION_CLOSED',
      'SESSION_CLOSED',
    ]);
    expect(world.calls[5]!.reply).toBe(world.calls[6]!.reply);
    expect(world.calls[3]!.reply!.text).toBe(world.calls[0]!.reply!.text);
  });

  it('[S03-INTERLEAVINGS] the harness catches a model that disagrees with spec 03 (a budget of 3)', async () => {
    const result = await fc.check(
      fc.asyncProperty(fc.scheduler(), setupArb, callersArb, async (s, setup, callers) => {
        const world = await runCallers(s, setup, callers, 3);
        world.verdict();
      }),
      // Pinned, not the shared FC_SEED: the assertion is about this sample's counterexample and its shrinking.
      { numRuns: 300, seed: 42 },
    );
    expect(result.failed).toBe(true);
    // The model wants a third chance (`correcting` after the second validation), the engine ends the request.
    expect(String(result.errorInstance)).toMatch(/model \["[0-9a-f-]+ correcting v2"\]/);
    // ... and the counterexample shrank to a handful of steps.
    const callers = result.counterexample?.[2] ?? [];
    expect(callers.flat().length).toBeGreaterThan(0);
    expect(callers.flat().length).toBeLessThanOrEqual(5);
  });
});
