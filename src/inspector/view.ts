/**
 * The inspector's one view of the data, built per request from the model and the engine snapshot: the page renders it
 * as HTML, `/api/snapshot` sends it as JSON, so both always carry the same data. Filters and pagination are parsed
 * here from a bounded query string.
 */
import { HANDOFF_STATES, VALIDATION_BUDGET, type HandoffState } from '../../machines/handoff.js';
import { IntentError, quoteCaller } from '../core/errors.js';
import type { CandidateView, EngineSnapshot, HandoffTransition } from '../engine/inspection.js';
import type { TerminalStoreUsage } from '../engine/terminalStore.js';
import {
  kindOfEnding,
  kindOfState,
  type Ending,
  type InspectorCounts,
  type InspectorModel,
  type Kind,
} from './model.js';

/** Rows of live requests per page: with 1,000 live requests the first paint stays far below 200 KB (BENCHMARKS.md). */
export const PAGE_SIZE = 50;
/** Recent terminal requests shown. */
export const RECENT_SHOWN = 50;
/** Sessions listed (the stdio command has one, HTTP at most `--max-sessions`). */
export const SESSIONS_SHOWN = 100;
/** Longest accepted query value: ids are UUIDs, instance names at most 64 characters. */
export const MAX_QUERY_VALUE_CHARS = 128;
/** Most query parameters read; more is a malformed request. */
export const MAX_QUERY_PARAMS = 16;
const MAX_PAGE = 100_000;

/** The filters and the selection a page or snapshot request asks for. */
export interface InspectorQuery {
  session?: string;
  instance?: string;
  state?: HandoffState;
  request?: string;
  page: number;
}

/** Whether a request of `sessionId` and `instance`, now in `state`, passes the query's filters (live and recent alike). */
function passesFilters(query: InspectorQuery, sessionId: string, instance: string, state: HandoffState): boolean {
  return (
    (query.session === undefined || sessionId === query.session) &&
    (query.instance === undefined || instance === query.instance) &&
    (query.state === undefined || state === query.state)
  );
}

/** A malformed query: the inspector answers 400 with this (a short prefix of the value at most). */
export function queryInvalid(message: string): IntentError {
  return new IntentError('INPUT_INVALID', message);
}

/** Reads the filters from a raw query string (without "?"); throws `INPUT_INVALID` on anything out of bounds. */
export function parseQuery(search: string): InspectorQuery {
  const params = new URLSearchParams(search);
  let count = 0;
  const seen: Record<string, string> = {};
  for (const [name, value] of params) {
    count += 1;
    if (count > MAX_QUERY_PARAMS) throw queryInvalid(`At most ${MAX_QUERY_PARAMS} query parameters are accepted.`);
    if (value.length > MAX_QUERY_VALUE_CHARS)
      throw queryInvalid(
        `Query parameter ${quoteCaller(name)} is longer than ${MAX_QUERY_VALUE_CHARS} characters (${quoteCaller(value)}).`,
      );
    // The first value counts; an empty one (a form's blank field) means "any".
    if (!(name in seen)) seen[name] = value;
  }
  const query: InspectorQuery = { page: 1 };
  const text = (name: string): string | undefined => {
    const value = Object.hasOwn(seen, name) ? seen[name]?.trim() : undefined;
    return value === undefined || value === '' ? undefined : value;
  };
  const session = text('session');
  if (session !== undefined) query.session = session;
  const instance = text('instance');
  if (instance !== undefined) query.instance = instance;
  const request = text('request');
  if (request !== undefined) query.request = request;
  const state = text('state');
  if (state !== undefined) {
    if (!(HANDOFF_STATES as readonly string[]).includes(state))
      throw queryInvalid(`Unknown state ${quoteCaller(state)}; use one of ${HANDOFF_STATES.join(', ')}.`);
    query.state = state as HandoffState;
  }
  const page = text('page');
  if (page !== undefined) {
    const n = /^[0-9]{1,6}$/.test(page) ? Number(page) : NaN;
    if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE)
      throw queryInvalid(`Query parameter page must be an integer from 1 to ${MAX_PAGE} (got ${quoteCaller(page)}).`);
    query.page = n;
  }
  return query;
}

/** The query string of a query (for links), with `change` applied; empty values dropped. */
export function queryString(
  query: InspectorQuery,
  change: Partial<Record<keyof InspectorQuery, string | number | undefined>> = {},
): string {
  const merged: Record<string, string | number | undefined> = { ...query, ...change };
  const params = new URLSearchParams();
  for (const name of ['session', 'instance', 'state', 'request', 'page'] as const) {
    const value = merged[name];
    if (value === undefined || value === '' || (name === 'page' && value === 1)) continue;
    params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

export interface LiveRow {
  requestId: string;
  sessionId: string;
  instance: string;
  state: HandoffState;
  kind: Kind;
  validations: number;
  budget: number;
  preparedAt: string;
  ageMs: number;
  expiresAt?: string;
  /** Time to the deadline (negative once passed), when the request has one. */
  deadlineInMs?: number;
  candidate?: CandidateView;
}

export interface RecentRow {
  requestId: string;
  sessionId: string;
  instance: string;
  state: HandoffState;
  ended: Ending;
  kind: Kind;
  reason?: string;
  validations: number;
  at: string;
}

export interface SelectedRequest {
  requestId: string;
  sessionId: string;
  instance: string;
  state: HandoffState;
  kind: Kind;
  ended?: Ending;
  reason?: string;
  validations: number;
  budget: number;
  steps: HandoffTransition[];
  omittedSteps: number;
}

export interface InspectorView {
  at: string;
  startedAt: string;
  query: InspectorQuery;
  counts: InspectorCounts;
  store: TerminalStoreUsage;
  sessions: { id: string; label?: string; closed: boolean; live: number }[];
  sessionsTotal: number;
  instances: string[];
  live: { total: number; matching: number; page: number; pages: number; pageSize: number; rows: LiveRow[] };
  recent: RecentRow[];
  /** The request asked for with `?request=`, when the inspector still knows it (`null` when it does not). */
  selected: SelectedRequest | null;
  /** How much the inspector itself holds (it is bounded). */
  inspector: ReturnType<InspectorModel['usage']> & { maxRequests: number; maxSteps: number; maxRecent: number };
}

/** A live request as the list shows it, before the clock of one page request is applied. */
interface LiveEntry {
  requestId: string;
  sessionId: string;
  instance: string;
  state: HandoffState;
  validations: number;
  preparedAt: string;
  preparedMs: number;
  expiresAt?: string;
  expiresMs?: number;
  candidate?: CandidateView;
}

/** Every live request of the engine, oldest first, with what the view needs of the engine snapshot around them. */
interface LiveIndex {
  snapshot: EngineSnapshot;
  entries: LiveEntry[];
  instances: string[];
  /** When it was built and how long that took (`performance.now()`, ms). */
  builtAt: number;
  costMs: number;
}

/**
 * How stale the live index may get, as a multiple of what building it cost: with thousands of live requests a build
 * takes tens of milliseconds on the MCP server's event loop, so a caller polling `/api/snapshot` (any web page can make
 * a browser send such a GET) gets at most one build per ten build-times, about a tenth of the loop; with a few requests
 * a build takes microseconds and every request sees a fresh one.
 */
const LIVE_INDEX_COST_FACTOR = 10;
const liveIndexes = new WeakMap<InspectorModel, LiveIndex>();

function liveIndex(model: InspectorModel): LiveIndex {
  const started = performance.now();
  const cached = liveIndexes.get(model);
  if (cached !== undefined && started - cached.builtAt < LIVE_INDEX_COST_FACTOR * cached.costMs) return cached;
  const snapshot = model.snapshot();
  const entries: LiveEntry[] = [];
  const instances = new Set<string>();
  for (const session of snapshot.sessions) {
    for (const live of session.live) {
      instances.add(live.instance);
      const entry: LiveEntry = {
        requestId: live.requestId,
        sessionId: session.id,
        instance: live.instance,
        state: live.state,
        validations: live.validations,
        preparedAt: live.preparedAt,
        preparedMs: Date.parse(live.preparedAt),
      };
      if (live.expiresAt !== undefined) {
        entry.expiresAt = live.expiresAt;
        entry.expiresMs = Date.parse(live.expiresAt);
      }
      if (live.candidate !== undefined) entry.candidate = live.candidate;
      entries.push(entry);
    }
  }
  // Oldest first: the request that has waited longest is the one a person debugging looks for.
  entries.sort((a, b) => a.preparedMs - b.preparedMs);
  const built: LiveIndex = {
    snapshot,
    entries,
    instances: [...instances].sort(),
    builtAt: performance.now(),
    costMs: performance.now() - started,
  };
  liveIndexes.set(model, built);
  return built;
}

/** How many requests are live and the terminal store's usage, from the same cached index (for the SSE `counts`). */
export function liveSummary(model: InspectorModel): { live: number; store: TerminalStoreUsage } {
  const { entries, snapshot } = liveIndex(model);
  return { live: entries.length, store: snapshot.store };
}

/** The row of a live request as of `now`. */
function liveRow(entry: LiveEntry, now: number): LiveRow {
  const row: LiveRow = {
    requestId: entry.requestId,
    sessionId: entry.sessionId,
    instance: entry.instance,
    state: entry.state,
    kind: kindOfState(entry.state),
    validations: entry.validations,
    budget: VALIDATION_BUDGET,
    preparedAt: entry.preparedAt,
    ageMs: Math.max(0, now - entry.preparedMs),
  };
  if (entry.expiresAt !== undefined && entry.expiresMs !== undefined) {
    row.expiresAt = entry.expiresAt;
    row.deadlineInMs = entry.expiresMs - now;
  }
  if (entry.candidate !== undefined) row.candidate = entry.candidate;
  return row;
}

/**
 * Builds the view of one page or snapshot request. `now` is the inspector's clock in ms. The live requests come from
 * a cached index of the engine snapshot ({@link LIVE_INDEX_COST_FACTOR}); per request only the filters run over it
 * and only the page's rows are built.
 */
export function buildView(model: InspectorModel, query: InspectorQuery, now: number): InspectorView {
  const { snapshot, entries, instances } = liveIndex(model);
  const matching = entries.filter((e) => passesFilters(query, e.sessionId, e.instance, e.state));
  const pages = Math.max(1, Math.ceil(matching.length / PAGE_SIZE));
  const page = Math.min(query.page, pages);
  const recent: RecentRow[] = [];
  for (const r of model.recent()) {
    if (recent.length >= RECENT_SHOWN) break;
    if (r.ended === undefined) continue;
    if (!passesFilters(query, r.sessionId, r.instance, r.state)) continue;
    const row: RecentRow = {
      requestId: r.requestId,
      sessionId: r.sessionId,
      instance: r.instance,
      state: r.state,
      ended: r.ended.as,
      kind: kindOfEnding(r.ended.as),
      validations: r.validations,
      at: r.ended.at,
    };
    if (r.ended.reason !== undefined) row.reason = r.ended.reason;
    recent.push(row);
  }
  let selected: SelectedRequest | null = null;
  if (query.request !== undefined) {
    const tracked = model.request(query.request);
    if (tracked !== undefined) {
      selected = {
        requestId: tracked.requestId,
        sessionId: tracked.sessionId,
        instance: tracked.instance,
        state: tracked.state,
        kind: tracked.ended === undefined ? kindOfState(tracked.state) : kindOfEnding(tracked.ended.as),
        validations: tracked.validations,
        budget: VALIDATION_BUDGET,
        steps: [...tracked.steps],
        omittedSteps: tracked.omittedSteps,
      };
      if (tracked.ended !== undefined) {
        selected.ended = tracked.ended.as;
        if (tracked.ended.reason !== undefined) selected.reason = tracked.ended.reason;
      }
    }
  }
  return {
    at: new Date(now).toISOString(),
    startedAt: model.startedAt,
    query: { ...query, page },
    counts: model.counts(),
    store: snapshot.store,
    sessions: snapshot.sessions.slice(0, SESSIONS_SHOWN).map((s) => ({
      id: s.id,
      ...(s.label === undefined ? {} : { label: s.label }),
      closed: s.closed,
      live: s.live.length,
    })),
    sessionsTotal: snapshot.sessions.length,
    instances,
    live: {
      total: entries.length,
      matching: matching.length,
      page,
      pages,
      pageSize: PAGE_SIZE,
      rows: matching.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE).map((entry) => liveRow(entry, now)),
    },
    recent,
    selected,
    inspector: {
      ...model.usage(),
      maxRequests: model.maxRequests,
      maxSteps: model.maxSteps,
      maxRecent: model.maxRecent,
    },
  };
}
