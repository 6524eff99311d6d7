/**
 * Model checking of the handoff machine (spec 03, "Model checking"): enumerate every reachable (state, context) over
 * the full event alphabet with `xstate/graph`, and check the spec's transition table and invariants on every state and
 * every edge. The table below is written from spec 03, not from the machine, and a set of broken machines (mutants)
 * shows that the same check catches each kind of mistake.
 */
import { describe, expect, it } from 'vitest';
import { transition, type SnapshotFrom } from 'xstate';
import { getAdjacencyMap, getShortestPaths, type AdjacencyValue } from 'xstate/graph';
import {
  HANDOFF_STATES,
  LIVE_STATES,
  TERMINAL_STATES,
  VALIDATION_BUDGET,
  handoffMachine,
  stateOf,
  type CandidateIdentity,
  type HandoffContext,
  type HandoffEvent,
  type HandoffMachine,
  type HandoffMode,
  type HandoffState,
} from '../../machines/handoff.js';
import { editedHandoffMachine } from './support.js';

type Snapshot = SnapshotFrom<HandoffMachine>;
type Vertex = AdjacencyValue<Snapshot, HandoffEvent>;
/** The reachable states, each with the outcome of every event of the alphabet. */
type Graph = Vertex[];

/** Spec 03: "budget = 2 validations per request (the first plus one correction)". Deliberately not the machine's constant. */
const SPEC_BUDGET = 2;
const REQUEST_ID = '7f6c1c1e-2f4a-4c39-9a39-6c1e0c1d8b11';

// Two fixed candidates. "Same" is always relative to the candidate the context holds, so ACCEPT(A) is a join in
// validating(A) and a conflict in validating(B). A third candidate shares A's hash but not its bytes: spec 03 compares
// by exact bytes ("compare the text itself on a hash match"), so it must behave as a different candidate.
const A: CandidateIdentity = { hash: 'sha256:5f1c9a', text: '{"intents":[{"text":"book a table"}]}' };
const B: CandidateIdentity = { hash: 'sha256:0b77de', text: '{"intents":[{"text":"book a taxi"}]}' };
const A_COLLIDING: CandidateIdentity = { hash: A.hash, text: '{"intents":[{"text":"book a table "}]}' };
const RESULT_TEXT = '{"version":"1","status":"complete"}';

/** The deadline of the explorations that have one, and the two arrival times: well before it, and exactly at it. */
const EXPIRES_AT = 1000;
const EARLY = 0;
const LATE = EXPIRES_AT;

/** Every event a sender brings, once before the deadline and once at it (spec 03: "at or after expiresAt"). */
const SENT: readonly ((at: number) => HandoffEvent)[] = [
  (at) => ({ type: 'ACCEPT', candidate: A, at }),
  (at) => ({ type: 'ACCEPT', candidate: B, at }),
  (at) => ({ type: 'ACCEPT', candidate: A_COLLIDING, at }),
  (at) => ({ type: 'VALIDATED', ok: true, text: RESULT_TEXT, at }),
  (at) => ({ type: 'VALIDATED', ok: false, issues: [{ path: '/intents/0/text', message: 'expected a string' }], at }),
  (at) => ({ type: 'VALIDATED', ok: false, crashed: true, at }),
  (at) => ({ type: 'CANCEL', reason: 'cancelled', at }),
  (at) => ({ type: 'CANCEL', reason: 'refusal', at }),
  (at) => ({ type: 'CANCEL', reason: 'incomplete', at }),
  (at) => ({ type: 'CLOSE', at }),
];

const ALPHABET: readonly HandoffEvent[] = [
  ...SENT.map((make) => make(EARLY)),
  ...SENT.map((make) => make(LATE)),
  { type: 'DEADLINE' },
];

/** The explorations: with and without a deadline, in host mode and in executor mode (spec 03, "Executor mode"). */
const SETTINGS: readonly { name: string; expiresAt: number | undefined; mode: HandoffMode }[] = [
  { name: 'host mode without a deadline', expiresAt: undefined, mode: 'host' },
  { name: 'host mode with a deadline', expiresAt: EXPIRES_AT, mode: 'host' },
  { name: 'executor mode without a deadline', expiresAt: undefined, mode: 'executor' },
  { name: 'executor mode with a deadline', expiresAt: EXPIRES_AT, mode: 'executor' },
];

// ---------------------------------------------------------------------------------------------------------------------
// Exploration

const serialize = (s: Snapshot): string => JSON.stringify({ value: s.value, context: s.context });

function explore(machine: HandoffMachine, expiresAt: number | undefined, mode: HandoffMode = 'host'): Graph {
  // xstate/graph's typing knows no machine with emitted events; it explores the same logic.
  const adjacency = getAdjacencyMap as unknown as (logic: HandoffMachine, options: object) => Record<string, Vertex>;
  const map = adjacency(machine, {
    input: { requestId: REQUEST_ID, expiresAt, mode },
    events: ALPHABET,
    serializeState: serialize,
    // A broken machine may spend budget without end; stop exploring past the first state that already breaks it.
    stopWhen: (s: Snapshot) => s.context.validations > SPEC_BUDGET,
    limit: 20_000,
  });
  return Object.values(map);
}

interface Edge {
  from: Snapshot;
  event: HandoffEvent;
  to: Snapshot;
}

function edgesOf(graph: Graph): Edge[] {
  return graph.flatMap(({ state, transitions }) =>
    (Object.values(transitions) as { event: HandoffEvent; state: Snapshot }[]).map(({ event, state: to }) => ({
      from: state,
      event,
      to,
    })),
  );
}

const cache = new Map<string, Graph>();
function graphOf(expiresAt: number | undefined, mode: HandoffMode = 'host'): Graph {
  const key = `${expiresAt ?? '-'}/${mode}`;
  let g = cache.get(key);
  if (g === undefined) {
    g = explore(handoffMachine, expiresAt, mode);
    cache.set(key, g);
  }
  return g;
}
let edgeCache: Edge[] | undefined;
const allEdges = (): Edge[] => (edgeCache ??= SETTINGS.flatMap((d) => edgesOf(graphOf(d.expiresAt, d.mode))));
const allStates = (): Snapshot[] => SETTINGS.flatMap((d) => graphOf(d.expiresAt, d.mode).map((v) => v.state));

// ---------------------------------------------------------------------------------------------------------------------
// Naming, for readable violations

function candidateName(c: CandidateIdentity | undefined): string {
  if (c === undefined) return '-';
  if (c.text === A.text) return 'A';
  if (c.text === B.text) return 'B';
  if (c.text === A_COLLIDING.text) return 'A#';
  return '?';
}

function eventName(e: HandoffEvent): string {
  const when = e.type === 'DEADLINE' || e.at === EARLY ? '' : `@${e.at}`;
  switch (e.type) {
    case 'ACCEPT':
      return `ACCEPT(${candidateName(e.candidate)})${when}`;
    case 'VALIDATED':
      return (e.ok ? 'VALIDATED(valid)' : 'crashed' in e ? 'VALIDATED(crashed)' : 'VALIDATED(invalid)') + when;
    case 'CANCEL':
      return `CANCEL(${e.reason})${when}`;
    default:
      return e.type + when;
  }
}

function snapshotName(s: Snapshot): string {
  const c = s.context;
  const outcome = c.outcome === undefined ? '-' : c.outcome.ok ? 'ok' : 'crashed' in c.outcome ? 'crashed' : 'invalid';
  return (
    `${JSON.stringify(s.value)}(v=${c.validations}, cand=${candidateName(c.candidate)}, outcome=${outcome}, ` +
    `reason=${c.cancelReason ?? '-'}, answer=${c.answer}, retain=${String(c.retain)}, expiresAt=${c.expiresAt ?? '-'}, ` +
    `${c.mode})`
  );
}

const edgeName = (e: Edge): string => `${snapshotName(e.from)} --${eventName(e.event)}--> ${snapshotName(e.to)}`;

// ---------------------------------------------------------------------------------------------------------------------
// The transition table of spec 03, as data

/** A step the table prescribes: the next state and the fields of the context that change. */
type Expectation = 'ignored' | { state: HandoffState; set: Partial<HandoffContext> };

interface Row {
  /** The row, in the words of spec 03. */
  label: string;
  states: readonly HandoffState[];
  applies: (ctx: HandoffContext, event: HandoffEvent) => boolean;
  expect: (ctx: HandoffContext, event: HandoffEvent) => Expectation;
}

/** Exact bytes, as spec 03 asks; the hash is only a shortcut. */
const sameBytes = (ctx: HandoffContext, e: HandoffEvent): boolean =>
  e.type === 'ACCEPT' && ctx.candidate !== undefined && ctx.candidate.text === e.candidate.text;
const isAccept = (e: HandoffEvent): e is Extract<HandoffEvent, { type: 'ACCEPT' }> => e.type === 'ACCEPT';
const is = (type: HandoffEvent['type']) => (_: HandoffContext, e: HandoffEvent) => e.type === type;
/** Spec 03: an event that arrives at or after `expiresAt` finds the request expired, whatever the timer has done. */
const isLate = (c: HandoffContext, e: HandoffEvent): boolean =>
  c.expiresAt !== undefined && e.type !== 'DEADLINE' && e.at >= c.expiresAt;
const onTime = (type: HandoffEvent['type']) => (c: HandoffContext, e: HandoffEvent) => e.type === type && !isLate(c, e);
const outcomeOf = (e: HandoffEvent): HandoffContext['outcome'] => {
  if (e.type !== 'VALIDATED') return undefined;
  if (e.ok) return { ok: true, text: e.text };
  return 'crashed' in e ? { ok: false, crashed: true } : { ok: false, issues: e.issues };
};
const crashed = (e: HandoffEvent): boolean => e.type === 'VALIDATED' && 'crashed' in e;

const ROWS: readonly Row[] = [
  {
    label: 'any live | ACCEPT at or after expiresAt → expired; HANDOFF_EXPIRED (judged by the clock, not the timer)',
    states: LIVE_STATES,
    applies: (c, e) => e.type === 'ACCEPT' && isLate(c, e),
    expect: () => ({ state: 'expired', set: { answer: 'too_late' } }),
  },
  {
    label: 'any live | CANCEL at or after expiresAt → expired; already_expired',
    states: LIVE_STATES,
    applies: (c, e) => e.type === 'CANCEL' && isLate(c, e),
    expect: () => ({ state: 'expired', set: { answer: 'already_expired' } }),
  },
  {
    label: 'validating | a validation that ends at or after expiresAt is abandoned → expired',
    states: ['validating'],
    applies: (c, e) => e.type === 'VALIDATED' && isLate(c, e),
    expect: () => ({ state: 'expired', set: { answer: 'too_late' } }),
  },
  {
    label: 'any live | session closes at or after expiresAt → expired; nothing of the session is retained',
    states: LIVE_STATES,
    applies: (c, e) => e.type === 'CLOSE' && isLate(c, e),
    expect: () => ({ state: 'expired', set: { answer: 'too_late', retain: false } }),
  },
  {
    label: 'prepared | ACCEPT(X) → validating(X), validations = 1',
    states: ['prepared'],
    applies: onTime('ACCEPT'),
    expect: (_, e) => ({
      state: 'validating',
      set: { candidate: isAccept(e) ? e.candidate : undefined, validations: 1, answer: 'validate' },
    }),
  },
  {
    label: 'validating(A) | ACCEPT(A) → joins the running validation',
    states: ['validating'],
    applies: (c, e) => sameBytes(c, e) && !isLate(c, e),
    expect: () => ({ state: 'validating', set: { answer: 'join' } }),
  },
  {
    label: 'validating(A) | ACCEPT(B≠A) → stays; HANDOFF_CONFLICT',
    states: ['validating'],
    applies: (c, e) => isAccept(e) && !sameBytes(c, e) && !isLate(c, e),
    expect: () => ({ state: 'validating', set: { answer: 'conflict' } }),
  },
  {
    label: 'validating | valid → completed with the IntentResult',
    states: ['validating'],
    applies: (c, e) => e.type === 'VALIDATED' && e.ok && !isLate(c, e),
    expect: (_, e) => ({ state: 'completed', set: { outcome: outcomeOf(e), answer: 'result' } }),
  },
  {
    label: 'validating | the validation itself crashed → cancelled (reason internal_error, never the host’s); INTERNAL',
    states: ['validating'],
    applies: (c, e) => crashed(e) && !isLate(c, e),
    expect: (_, e) => ({
      state: 'cancelled',
      set: { outcome: outcomeOf(e), cancelReason: 'internal_error', answer: 'failed' },
    }),
  },
  {
    label: 'validating | correctable error, validations < budget → correcting (CANDIDATE_INVALID, remaining 1)',
    states: ['validating'],
    applies: (c, e) => e.type === 'VALIDATED' && !e.ok && !crashed(e) && c.validations < SPEC_BUDGET && !isLate(c, e),
    expect: (_, e) => ({ state: 'correcting', set: { outcome: outcomeOf(e), answer: 'invalid' } }),
  },
  {
    label: 'validating | correctable error, budget spent → completed with terminal CANDIDATE_REJECTED',
    states: ['validating'],
    applies: (c, e) => e.type === 'VALIDATED' && !e.ok && !crashed(e) && c.validations >= SPEC_BUDGET && !isLate(c, e),
    expect: (_, e) => ({ state: 'completed', set: { outcome: outcomeOf(e), answer: 'rejected' } }),
  },
  {
    label: 'correcting(A) | ACCEPT(A) → replays CANDIDATE_INVALID; costs no budget',
    states: ['correcting'],
    applies: (c, e) => sameBytes(c, e) && !isLate(c, e) && c.mode === 'host',
    expect: () => ({ state: 'correcting', set: { answer: 'feedback' } }),
  },
  {
    label:
      'executor mode: correcting(A) | ACCEPT(A) → completed with CANDIDATE_REJECTED (the executor spent its correction)',
    states: ['correcting'],
    applies: (c, e) => sameBytes(c, e) && !isLate(c, e) && c.mode === 'executor',
    expect: () => ({ state: 'completed', set: { validations: SPEC_BUDGET, answer: 'rejected' } }),
  },
  {
    label: 'correcting(A) | ACCEPT(B≠A) → validating(B), validations = 2',
    states: ['correcting'],
    applies: (c, e) => isAccept(e) && !sameBytes(c, e) && !isLate(c, e),
    expect: (_, e) => ({
      state: 'validating',
      set: { candidate: isAccept(e) ? e.candidate : undefined, validations: 2, answer: 'validate' },
    }),
  },
  {
    label: 'any live | CANCEL(reason) → cancelled; { status: cancelled }',
    states: LIVE_STATES,
    applies: onTime('CANCEL'),
    expect: (_, e) => ({
      state: 'cancelled',
      set: { cancelReason: e.type === 'CANCEL' ? e.reason : undefined, answer: 'withdrawn' },
    }),
  },
  {
    label: 'any live | deadline passes (explicit deadline) → expired',
    states: LIVE_STATES,
    applies: (c, e) => e.type === 'DEADLINE' && c.expiresAt !== undefined,
    expect: () => ({ state: 'expired', set: { answer: 'too_late' } }),
  },
  {
    label: 'any live | session closes → cancelled (reason session_closed); nothing of the session is retained',
    states: LIVE_STATES,
    applies: onTime('CLOSE'),
    expect: () => ({ state: 'cancelled', set: { cancelReason: 'session_closed', answer: 'closed', retain: false } }),
  },
  {
    label: 'completed | ACCEPT(same last candidate) → replays the stored terminal reply',
    states: ['completed'],
    applies: sameBytes,
    expect: () => ({ state: 'completed', set: { answer: 'replay' } }),
  },
  {
    label: 'completed | ACCEPT(other) → HANDOFF_CONFLICT',
    states: ['completed'],
    applies: (c, e) => isAccept(e) && !sameBytes(c, e),
    expect: () => ({ state: 'completed', set: { answer: 'conflict' } }),
  },
  {
    label: 'completed | CANCEL → already_completed',
    states: ['completed'],
    applies: is('CANCEL'),
    expect: () => ({ state: 'completed', set: { answer: 'already_completed' } }),
  },
  {
    label: 'expired | CANCEL → already_expired',
    states: ['expired'],
    applies: is('CANCEL'),
    expect: () => ({ state: 'expired', set: { answer: 'already_expired' } }),
  },
  {
    label: 'cancelled | CANCEL → already_cancelled',
    states: ['cancelled'],
    applies: is('CANCEL'),
    expect: () => ({ state: 'cancelled', set: { answer: 'already_cancelled' } }),
  },
  {
    label: 'cancelled | ACCEPT → HANDOFF_CANCELLED (with the reason)',
    states: ['cancelled'],
    applies: is('ACCEPT'),
    expect: () => ({ state: 'cancelled', set: { answer: 'withdrawn_earlier' } }),
  },
  {
    label: 'expired | ACCEPT → HANDOFF_EXPIRED',
    states: ['expired'],
    applies: is('ACCEPT'),
    expect: () => ({ state: 'expired', set: { answer: 'too_late' } }),
  },
  // What the table leaves out, stated exactly: these events change nothing at all (not even the answer).
  {
    label: '(allowed) any live | DEADLINE without a deadline → ignored',
    states: LIVE_STATES,
    applies: (c, e) => e.type === 'DEADLINE' && c.expiresAt === undefined,
    expect: () => 'ignored',
  },
  {
    label: '(allowed) prepared / correcting | a stale VALIDATED → ignored',
    states: ['prepared', 'correcting'],
    applies: is('VALIDATED'),
    expect: () => 'ignored',
  },
  {
    label: '(allowed) terminal | VALIDATED / DEADLINE / CLOSE → absorbed, nothing changes',
    states: TERMINAL_STATES,
    applies: (_, e) => e.type === 'VALIDATED' || e.type === 'DEADLINE' || e.type === 'CLOSE',
    expect: () => 'ignored',
  },
];

function rowFor(state: string, ctx: HandoffContext, event: HandoffEvent): Row | undefined {
  return ROWS.find((r) => (r.states as readonly string[]).includes(state) && r.applies(ctx, event));
}

// ---------------------------------------------------------------------------------------------------------------------
// The check: a list of violations, empty for a correct machine

type Rule =
  | 'states'
  | 'context'
  | 'table'
  | 'terminal-absorbs'
  | 'budget'
  | 'budget-monotone'
  | 'live-answers'
  | 'completed-needs-validation'
  | 'completed-from-validating'
  | 'deadline'
  | 'cancel'
  | 'close'
  | 'replay-free'
  | 'correction'
  | 'validation-job'
  | 'waiters';

interface Violation {
  rule: Rule;
  at: string;
  detail: string;
}

const STATE_VALUES = new Map<string, HandoffState>([
  [JSON.stringify({ live: 'prepared' }), 'prepared'],
  [JSON.stringify({ live: 'validating' }), 'validating'],
  [JSON.stringify({ live: 'correcting' }), 'correcting'],
  [JSON.stringify('completed'), 'completed'],
  [JSON.stringify('cancelled'), 'cancelled'],
  [JSON.stringify('expired'), 'expired'],
]);

const isLive = (s: string): boolean => (LIVE_STATES as readonly string[]).includes(s);
const isTerminal = (s: string): boolean => (TERMINAL_STATES as readonly string[]).includes(s);
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

function checkState(s: Snapshot): Violation[] {
  const out: Violation[] = [];
  const at = snapshotName(s);
  const v = (rule: Rule, detail: string) => out.push({ rule, at, detail });
  const name = STATE_VALUES.get(JSON.stringify(s.value));
  const c = s.context;
  if (name === undefined) {
    v('states', `state value ${JSON.stringify(s.value)} is not one of the six states`);
    return out;
  }
  if (isLive(name) && !(s.hasTag('live') && !s.hasTag('terminal')))
    v('states', 'a live state must be tagged live only');
  if (isTerminal(name) && !(s.hasTag('terminal') && !s.hasTag('live')))
    v('states', 'a final state must be tagged terminal');
  if (c.validations < 0 || c.validations > SPEC_BUDGET) v('budget', `validations = ${c.validations}`);
  if (c.requestId !== REQUEST_ID) v('context', 'requestId changed');
  if (name === 'prepared' && (c.validations !== 0 || c.candidate !== undefined))
    v('context', 'prepared holds a candidate or spent budget');
  if ((name === 'validating' || name === 'correcting') && (c.candidate === undefined || c.validations < 1))
    v('context', `${name} without a candidate under validation`);
  if (name === 'correcting' && c.outcome?.ok !== false)
    v('context', 'correcting without the invalid outcome to replay');
  if (name === 'completed' && (c.validations < 1 || c.outcome === undefined || c.candidate === undefined))
    v('completed-needs-validation', 'completed without a validated candidate and its outcome');
  if (name === 'cancelled' && c.cancelReason === undefined) v('context', 'cancelled without a reason');
  if (name !== 'cancelled' && c.cancelReason !== undefined) v('context', `${name} carries a cancel reason`);
  if (name === 'expired' && c.expiresAt === undefined) v('deadline', 'expired without a deadline');
  return out;
}

function checkEdge(edge: Edge): Violation[] {
  const out: Violation[] = [];
  const at = edgeName(edge);
  const v = (rule: Rule, detail: string) => out.push({ rule, at, detail });
  const { from, event, to } = edge;
  const fromName = STATE_VALUES.get(JSON.stringify(from.value));
  const toName = STATE_VALUES.get(JSON.stringify(to.value));
  if (fromName === undefined || toName === undefined) return out; // reported by checkState
  const f = from.context;
  const t = to.context;
  const unchanged = same(from.value, to.value) && same(f, t);

  // The table, row by row.
  const row = rowFor(fromName, f, event);
  if (row === undefined) {
    v('table', `no row of the table covers ${fromName} + ${eventName(event)}`);
  } else {
    const exp = row.expect(f, event);
    if (exp === 'ignored') {
      if (!unchanged) v('table', `"${row.label}": expected no change at all`);
    } else {
      const expected = { ...f, ...exp.set };
      if (toName !== exp.state) v('table', `"${row.label}": expected ${exp.state}, got ${toName}`);
      if (!same(t, expected)) v('table', `"${row.label}": expected context ${JSON.stringify(expected)}`);
    }
  }

  // Invariants, each stated on its own so a broken machine is named by what it broke.
  if (t.validations < f.validations) v('budget-monotone', 'validations went down');
  if (isTerminal(fromName)) {
    const kept =
      toName === fromName &&
      t.validations === f.validations &&
      same(t.candidate, f.candidate) &&
      same(t.outcome, f.outcome) &&
      t.cancelReason === f.cancelReason &&
      t.retain === f.retain &&
      t.mode === f.mode &&
      t.expiresAt === f.expiresAt;
    if (!kept) v('terminal-absorbs', 'a final state changed something other than the answer');
  }
  if (isLive(fromName)) {
    const allowedDrop =
      (event.type === 'VALIDATED' && fromName !== 'validating') ||
      (event.type === 'DEADLINE' && f.expiresAt === undefined);
    if (!allowedDrop && !from.can(event)) v('live-answers', `${fromName} drops ${eventName(event)} silently`);
    if (allowedDrop && !unchanged) v('live-answers', `${eventName(event)} must change nothing in ${fromName}`);
  }
  const executorRepeat = fromName === 'correcting' && f.mode === 'executor' && sameBytes(f, event);
  if (
    toName === 'completed' &&
    fromName !== 'completed' &&
    !(fromName === 'validating' && event.type === 'VALIDATED') &&
    !executorRepeat
  )
    v('completed-from-validating', `completed entered from ${fromName} by ${eventName(event)}`);
  if (event.type === 'DEADLINE') {
    if (f.expiresAt === undefined && !unchanged) v('deadline', 'DEADLINE without a deadline moved the machine');
    if (f.expiresAt !== undefined && isLive(fromName) && toName !== 'expired')
      v('deadline', 'live state did not expire');
  }
  const stale = event.type === 'VALIDATED' && fromName !== 'validating';
  if (isLive(fromName) && isLate(f, event) && !stale && toName !== 'expired')
    v('deadline', `${eventName(event)} arrived at or after the deadline but ${fromName} did not expire`);
  if (!isLate(f, event) && isLive(fromName) && toName === 'expired' && event.type !== 'DEADLINE')
    v('deadline', `${eventName(event)} arrived before the deadline but expired the request`);
  const late = isLate(f, event);
  if (
    isLive(fromName) &&
    event.type === 'CANCEL' &&
    !late &&
    (toName !== 'cancelled' || t.cancelReason !== event.reason)
  )
    v('cancel', `CANCEL(${event.reason}) did not cancel with that reason`);
  if (
    isLive(fromName) &&
    event.type === 'CLOSE' &&
    !late &&
    (toName !== 'cancelled' || t.cancelReason !== 'session_closed')
  )
    v('close', 'CLOSE did not cancel with session_closed');
  if (
    fromName === 'correcting' &&
    f.mode === 'host' &&
    sameBytes(f, event) &&
    !late &&
    !(toName === 'correcting' && same(t.validations, f.validations))
  )
    v('replay-free', 'resubmitting the same candidate in correcting spent budget or moved');
  if (fromName === 'validating' && event.type === 'VALIDATED' && !event.ok && !crashed(event) && !late) {
    if (f.validations < SPEC_BUDGET && toName !== 'correcting') v('correction', 'budget left but no correction');
    if (f.validations >= SPEC_BUDGET && !(toName === 'completed' && t.outcome?.ok === false))
      v('correction', 'budget spent but not completed with outcome ok:false');
  }
  return out;
}

/** What the waiters of a validation (and, when the request ends, everyone who asks how) must be told, from spec 03. */
function expectedWaiterAnswer(toName: HandoffState, t: HandoffContext): string | undefined {
  switch (toName) {
    case 'correcting':
      return 'invalid';
    case 'completed':
      return t.outcome?.ok === true ? 'result' : 'rejected';
    case 'expired':
      return 'too_late';
    case 'cancelled':
      return t.cancelReason === 'session_closed'
        ? 'closed'
        : t.cancelReason === 'internal_error'
          ? 'failed'
          : 'withdrawn';
    default:
      return undefined;
  }
}

/**
 * What the machine emits on an edge, through the pure `transition`: a validation starts exactly when `validating` is
 * entered and is abandoned exactly when it is left; the waiters are told exactly once when a validation ends or the
 * request ends, with the answer spec 03 gives them; a terminal request emits nothing.
 */
function checkEmits(machine: HandoffMachine, edge: Edge): Violation[] {
  const out: Violation[] = [];
  const at = edgeName(edge);
  const v = (rule: Rule, detail: string) => out.push({ rule, at, detail });
  const fromName = STATE_VALUES.get(JSON.stringify(edge.from.value));
  const toName = STATE_VALUES.get(JSON.stringify(edge.to.value));
  if (fromName === undefined || toName === undefined) return out;
  const [, actions] = transition(machine, edge.from, edge.event);
  const emitted = (actions as { type: string; params?: unknown }[])
    .filter((a) => a.type === 'xstate.emit')
    .map((a) => (a.params as { event: { type: string; answer?: string } }).event);
  const count = (type: string) => emitted.filter((e) => e.type === type).length;
  const moved = fromName !== toName;
  const entersValidating = toName === 'validating' && moved;
  const leavesValidating = fromName === 'validating' && moved;
  if (count('validate') !== (entersValidating ? 1 : 0))
    v(
      'validation-job',
      `validate emitted ${count('validate')} times (entering validating: ${String(entersValidating)})`,
    );
  if (count('abandon') !== (leavesValidating ? 1 : 0))
    v('validation-job', `abandon emitted ${count('abandon')} times (leaving validating: ${String(leavesValidating)})`);
  const ends = isLive(fromName) && isTerminal(toName);
  const waiters = emitted.filter((e) => e.type === 'waiters');
  if (leavesValidating || ends) {
    const expected = expectedWaiterAnswer(toName, edge.to.context);
    if (waiters.length !== 1 || waiters[0]?.answer !== expected)
      v('waiters', `waiters told ${JSON.stringify(waiters.map((w) => w.answer))}, expected ["${String(expected)}"]`);
  } else if (waiters.length > 0 && !(fromName === 'prepared' || fromName === 'correcting'))
    v('waiters', `waiters told ${JSON.stringify(waiters.map((w) => w.answer))} on an edge that ends nothing`);
  if (isTerminal(fromName) && emitted.length > 0) v('waiters', 'a terminal request emitted something');
  return out;
}

/** Every violation of spec 03 over the reachable state space of `machine`, in every setting. */
function checkHandoff(machine: HandoffMachine): Violation[] {
  return SETTINGS.flatMap(({ expiresAt, mode }) => {
    const graph = machine === handoffMachine ? graphOf(expiresAt, mode) : explore(machine, expiresAt, mode);
    return [
      ...graph.flatMap((v) => checkState(v.state)),
      ...edgesOf(graph).flatMap((e) => [...checkEdge(e), ...checkEmits(machine, e)]),
    ];
  });
}

// ---------------------------------------------------------------------------------------------------------------------
// Mutants

interface NodeConfig {
  id?: string;
  initial?: string;
  on?: Record<string, unknown>;
  states?: Record<string, NodeConfig>;
  [key: string]: unknown;
}

/** A machine built from an edited copy of the handoff config, with the same guard and action implementations. */
const mutate = (edit: (root: NodeConfig) => void): HandoffMachine => editedHandoffMachine(edit);

const live = (root: NodeConfig): Record<string, NodeConfig> => root.states!.live!.states!;

const MUTANTS: { name: string; machine: HandoffMachine; rules: Rule[] }[] = [
  {
    name: 'budget of 3 validations',
    machine: handoffMachine.provide({ guards: { hasBudget: ({ context }) => context.validations < 3 } }),
    rules: ['budget', 'table', 'correction'],
  },
  {
    name: 'completed accepts a new candidate',
    machine: mutate((root) => {
      root.states!.completed!.on!.ACCEPT = { target: '#validating', actions: 'takeCandidate' };
    }),
    rules: ['terminal-absorbs', 'table'],
  },
  {
    name: 'correcting ignores CANCEL',
    machine: mutate((root) => {
      live(root).correcting!.on!.CANCEL = { actions: [] };
    }),
    rules: ['live-answers', 'cancel', 'table'],
  },
  {
    name: 'resubmitting the same candidate in correcting validates again',
    machine: mutate((root) => {
      live(root).correcting!.on!.ACCEPT = { target: 'validating', actions: 'takeCandidate' };
    }),
    rules: ['replay-free', 'table'],
  },
  {
    name: 'DEADLINE expires a request that has no deadline',
    machine: handoffMachine.provide({ guards: { hasDeadline: () => true } }),
    rules: ['deadline', 'table'],
  },
  {
    name: 'ACCEPT in prepared completes without validating',
    machine: mutate((root) => {
      live(root).prepared!.on!.ACCEPT = { target: '#completed', actions: 'takeCandidate' };
    }),
    rules: ['completed-needs-validation', 'completed-from-validating', 'table'],
  },
  {
    name: 'the deadline is judged only by the timer (a late ACCEPT is validated)',
    machine: handoffMachine.provide({ guards: { isPastDeadline: () => false } }),
    rules: ['deadline', 'table'],
  },
  {
    name: 'an event before the deadline expires the request',
    machine: handoffMachine.provide({
      guards: { isPastDeadline: ({ context }) => context.expiresAt !== undefined },
    }),
    rules: ['deadline', 'table'],
  },
  {
    name: 'a late accept in correcting replays instead of expiring',
    machine: mutate((root) => {
      const on = live(root).correcting!.on!;
      on.ACCEPT = (on.ACCEPT as unknown[]).slice(1);
    }),
    rules: ['deadline', 'table'],
  },
  {
    name: 'abandoning the validation does nothing (the dead-mechanism mutant)',
    machine: handoffMachine.provide({ actions: { abandonValidation: () => undefined } }),
    rules: ['validation-job'],
  },
  {
    name: 'VALIDATED answers nothing (no answer for the sender, nothing for the waiters)',
    machine: mutate((root) => {
      const on = live(root).validating!.on!;
      on.VALIDATED = (on.VALIDATED as { guard?: string; target?: string }[]).map(({ guard, target }) => ({
        ...(guard === undefined ? {} : { guard }),
        ...(target === undefined ? {} : { target }),
        actions: ['keepOutcome'],
      }));
    }),
    rules: ['table', 'waiters'],
  },
  {
    name: 'executor mode replays feedback forever instead of spending the correction',
    machine: handoffMachine.provide({ guards: { isExecutorRepeat: () => false } }),
    rules: ['table'],
  },
  {
    name: 'a terminal CANCEL overwrites the cancel reason',
    machine: mutate((root) => {
      root.states!.cancelled!.on!.CANCEL = { actions: 'keepCancelReason' };
    }),
    rules: ['terminal-absorbs', 'table'],
  },
];

// ---------------------------------------------------------------------------------------------------------------------

const reachable = (expiresAt: number | undefined, mode: HandoffMode = 'host'): Set<HandoffState> =>
  new Set(graphOf(expiresAt, mode).map((v) => stateOf(v.state.value)));

describe('handoff machine: reachable state space', () => {
  it('[S03-STATES] reaches exactly the six states of spec 03, and nothing else is defined', () => {
    const leaves = (node: (typeof handoffMachine.root)['states'][string]): string[] =>
      Object.keys(node.states).length === 0 ? [node.key] : Object.values(node.states).flatMap(leaves);
    expect(Object.values(handoffMachine.root.states).flatMap(leaves).sort()).toEqual([...HANDOFF_STATES].sort());
    expect([...HANDOFF_STATES].sort()).toEqual(
      ['prepared', 'validating', 'correcting', 'completed', 'cancelled', 'expired'].sort(),
    );

    const values = new Set(allStates().map((s) => JSON.stringify(s.value)));
    expect([...values].sort()).toEqual([...STATE_VALUES.keys()].sort());
    expect(
      allStates()
        .flatMap(checkState)
        .filter((v) => v.rule === 'states'),
    ).toEqual([]);
  });

  it('[S03-STATES] without a deadline, expired is unreachable; with one, every state is reachable', () => {
    expect([...reachable(undefined)].sort()).toEqual([
      'cancelled',
      'completed',
      'correcting',
      'prepared',
      'validating',
    ]);
    expect([...reachable(EXPIRES_AT)].sort()).toEqual([...HANDOFF_STATES].sort());
  });

  it('uses the budget of spec 03', () => {
    expect(VALIDATION_BUDGET).toBe(SPEC_BUDGET);
  });

  it.each(SETTINGS)('[S03-MODEL-CHECK] every invariant holds on every state and edge, $name', ({ expiresAt, mode }) => {
    const graph = graphOf(expiresAt, mode);
    const edges = edgesOf(graph);
    // Every state was tried with every event of the alphabet.
    expect(edges.length).toBe(graph.length * ALPHABET.length);
    const violations = [
      ...graph.flatMap((v) => checkState(v.state)),
      ...edges.flatMap((e) => [...checkEdge(e), ...checkEmits(handoffMachine, e)]),
    ];
    expect(violations).toEqual([]);
  });
});

describe('handoff machine: the transition table of spec 03', () => {
  it.each(ROWS.map((r) => ({ label: r.label, row: r })))('[S03-TABLE] $label', ({ row }) => {
    const covered = allEdges().filter((e) => rowFor(stateOf(e.from.value), e.from.context, e.event) === row);
    expect(covered.length, 'the row is exercised by the exploration').toBeGreaterThan(0);
    expect(covered.flatMap(checkEdge).filter((v) => v.rule === 'table')).toEqual([]);
  });

  it('[S03-TABLE] every reachable (state, event) falls under exactly one row', () => {
    const ambiguous = allEdges().filter(
      (e) =>
        ROWS.filter((r) => r.states.includes(stateOf(e.from.value)) && r.applies(e.from.context, e.event)).length !== 1,
    );
    expect(ambiguous.map(edgeName)).toEqual([]);
  });

  it('[S03-TABLE] ACCEPT is judged against the current candidate, by bytes, not by hash', () => {
    const edges = allEdges().filter((e) => stateOf(e.from.value) === 'validating' && e.event.type === 'ACCEPT');
    const answer = (held: string, sent: string) =>
      new Set(
        edges
          .filter((e) => candidateName(e.from.context.candidate) === held && eventName(e.event) === `ACCEPT(${sent})`)
          .map((e) => e.to.context.answer),
      );
    expect(answer('A', 'A')).toEqual(new Set(['join']));
    expect(answer('A', 'B')).toEqual(new Set(['conflict']));
    expect(answer('A', 'A#')).toEqual(new Set(['conflict']));
    expect(answer('B', 'B')).toEqual(new Set(['join']));
    expect(answer('B', 'A')).toEqual(new Set(['conflict']));
  });
});

describe('handoff machine: paths', () => {
  const paths = (expiresAt: number | undefined) =>
    getShortestPaths(handoffMachine, {
      input: { requestId: REQUEST_ID, expiresAt },
      events: ALPHABET,
      serializeState: serialize,
    });

  it('[S03-MODEL-CHECK] the shortest way to a terminal CANDIDATE_REJECTED spends exactly the two validations', () => {
    const rejected = paths(undefined).filter(
      (p) => stateOf(p.state.value) === 'completed' && p.state.context.outcome?.ok === false,
    );
    expect(rejected.length).toBeGreaterThan(0);
    const shortest = Math.min(...rejected.map((p) => p.steps.length));
    const witness = rejected.find((p) => p.steps.length === shortest)!;
    // The first step of a path is XState's own init event, which reaches the initial state.
    expect(witness.steps.slice(1).map((s) => eventName(s.event))).toEqual([
      'ACCEPT(A)',
      'VALIDATED(invalid)',
      'ACCEPT(B)',
      'VALIDATED(invalid)',
    ]);
    expect(witness.state.context.validations).toBe(2);
  });

  it('[S03-MODEL-CHECK] every path into completed passes a VALIDATED in validating', () => {
    for (const p of paths(EXPIRES_AT).filter((x) => stateOf(x.state.value) === 'completed')) {
      const firstCompleted = p.steps.findIndex((s) => stateOf(s.state.value) === 'completed');
      const before = p.steps[firstCompleted - 1];
      expect(
        before === undefined ? 'prepared' : stateOf(before.state.value),
        eventName(p.steps[firstCompleted]!.event),
      ).toBe('validating');
      expect(p.steps[firstCompleted]!.event.type).toBe('VALIDATED');
    }
    // The edge-wise check is what makes this hold for every path, not just the shortest ones.
    expect(
      allEdges()
        .flatMap(checkEdge)
        .filter((v) => v.rule === 'completed-from-validating'),
    ).toEqual([]);
  });

  it('[S03-MODEL-CHECK] with a deadline, every live state expires; without one, DEADLINE never moves the machine', () => {
    const liveEdges = (expiresAt: number | undefined) =>
      edgesOf(graphOf(expiresAt)).filter((e) => isLive(stateOf(e.from.value)) && e.event.type === 'DEADLINE');
    const withDeadline = liveEdges(EXPIRES_AT);
    expect(new Set(withDeadline.map((e) => stateOf(e.from.value)))).toEqual(new Set(LIVE_STATES));
    expect(new Set(withDeadline.map((e) => stateOf(e.to.value)))).toEqual(new Set(['expired']));
    const without = edgesOf(graphOf(undefined)).filter((e) => e.event.type === 'DEADLINE');
    expect(without.length).toBeGreaterThan(0);
    expect(without.filter((e) => serialize(e.from) !== serialize(e.to)).map(edgeName)).toEqual([]);
  });

  it('[S03-DEADLINE] an event that arrives at or after expiresAt finds every live state expired, whatever the timer did', () => {
    const late = edgesOf(graphOf(EXPIRES_AT)).filter(
      (e) =>
        isLive(stateOf(e.from.value)) &&
        isLate(e.from.context, e.event) &&
        !(e.event.type === 'VALIDATED' && stateOf(e.from.value) !== 'validating'),
    );
    expect(new Set(late.map((e) => stateOf(e.from.value)))).toEqual(new Set(LIVE_STATES));
    expect(new Set(late.map((e) => e.event.type))).toEqual(new Set(['ACCEPT', 'VALIDATED', 'CANCEL', 'CLOSE']));
    for (const e of late) {
      expect(stateOf(e.to.value), edgeName(e)).toBe('expired');
      expect(e.to.context.validations, edgeName(e)).toBe(e.from.context.validations);
    }
    const answers = (type: HandoffEvent['type']) =>
      new Set(late.filter((e) => e.event.type === type).map((e) => e.to.context.answer));
    expect(answers('ACCEPT')).toEqual(new Set(['too_late']));
    expect(answers('VALIDATED')).toEqual(new Set(['too_late']));
    expect(answers('CANCEL')).toEqual(new Set(['already_expired']));
    // Without a deadline, the same arrival times never expire anything.
    const none = edgesOf(graphOf(undefined)).filter((e) => stateOf(e.to.value) === 'expired');
    expect(none).toEqual([]);
  });

  it('[S03-MODEL-CHECK] CLOSE cancels every live state with reason session_closed', () => {
    const close = allEdges().filter(
      (e) => isLive(stateOf(e.from.value)) && e.event.type === 'CLOSE' && !isLate(e.from.context, e.event),
    );
    expect(new Set(close.map((e) => stateOf(e.from.value)))).toEqual(new Set(LIVE_STATES));
    for (const e of close) {
      expect(stateOf(e.to.value)).toBe('cancelled');
      expect(e.to.context.cancelReason).toBe('session_closed');
    }
  });

  it('[S03-MODEL-CHECK] a replay in correcting costs no budget and a final state keeps its reply for every event', () => {
    const replays = allEdges().filter(
      (e) =>
        stateOf(e.from.value) === 'correcting' &&
        e.from.context.mode === 'host' &&
        sameBytes(e.from.context, e.event) &&
        !isLate(e.from.context, e.event),
    );
    expect(replays.length).toBeGreaterThan(0);
    for (const e of replays) {
      expect(e.to.value).toEqual(e.from.value);
      expect(e.to.context).toEqual({ ...e.from.context, answer: 'feedback' });
    }
    const terminal = allEdges().filter((e) => isTerminal(stateOf(e.from.value)));
    expect(new Set(terminal.map((e) => stateOf(e.from.value)))).toEqual(new Set(TERMINAL_STATES));
    for (const e of terminal) expect({ ...e.to.context, answer: '' }).toEqual({ ...e.from.context, answer: '' });
  });
});

describe('handoff machine: the check catches broken machines', () => {
  it('[S03-MODEL-CHECK] the real machine has no violation', () => {
    expect(checkHandoff(handoffMachine)).toEqual([]);
  });

  it('[S03-MODEL-CHECK] an unedited copy of the config checks clean, so the mutants are caught for their edits', () => {
    expect(checkHandoff(mutate(() => undefined))).toEqual([]);
  });

  it.each(MUTANTS)('[S03-MODEL-CHECK] catches a mutant: $name', ({ machine, rules }) => {
    const violations = checkHandoff(machine);
    expect(violations.length).toBeGreaterThan(0);
    const found = new Set(violations.map((v) => v.rule));
    for (const rule of rules) expect(found, `rule ${rule}`).toContain(rule);
  });
});
