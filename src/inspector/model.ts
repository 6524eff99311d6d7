/**
 * What the debug inspector knows (spec 05, "Debug inspector"; issue 10): fed by the adapter's inspection stream, it keeps
 * a timeline per live request, a ring of recent terminal requests, the transitions taken along each edge and the number
 * of live requests in each state since start. Everything is bounded: a flood of requests costs the inspector at most
 * `maxRequests` timelines of `maxSteps` steps plus `maxRecent` finished ones, whatever the traffic.
 *
 * It holds transition records only (`HandoffTransition`: sizes and short hashes, never a token or a candidate text).
 */
import {
  HANDOFF_STATES,
  LIVE_STATES,
  endingOf,
  kindOfEnding,
  kindOfState,
  type HandoffEnding,
  type HandoffKind,
  type HandoffState,
} from '../../machines/handoff.js';
import { IntentError } from '../core/errors.js';
import type { EngineSnapshot, HandoffTransition } from '../engine/inspection.js';
import { edgeKeyOf } from './diagram.js';

/** What the inspector reads: the adapter (or the engine) it watches. */
export interface InspectionSource {
  inspect(listener: (t: HandoffTransition) => void): () => void;
  snapshot(): EngineSnapshot;
}

export interface InspectorModelOptions {
  /** Live requests whose timeline is kept; beyond it the oldest timeline is dropped (counts stay exact). Default 2,000. */
  maxRequests?: number;
  /** Steps kept per timeline: the first (prepare) and the latest ones. Default 64. */
  maxSteps?: number;
  /** Recent terminal requests kept, newest first. Default 200. */
  maxRecent?: number;
}

export const INSPECTOR_MODEL_DEFAULTS = { maxRequests: 2000, maxSteps: 64, maxRecent: 200 } as const;

/** How a request ended: the machine's classification (`machines/handoff.ts`), which the page shows. */
export type Ending = HandoffEnding;

/** The colour class of a state or an ending: the machine's kind (still going, ended well, ended without a result). */
export type Kind = HandoffKind;

export { endingOf, kindOfEnding, kindOfState };

/** One request as the inspector tracks it. */
export interface TrackedRequest {
  requestId: string;
  sessionId: string;
  instance: string;
  state: HandoffState;
  validations: number;
  /** When the request was prepared (its first step), when the inspector saw it. */
  preparedAt: string | undefined;
  expiresAt: string | undefined;
  /** The first step and the latest ones, at most `maxSteps`. */
  steps: HandoffTransition[];
  /** Steps dropped from the middle of the timeline to keep it bounded. */
  omittedSteps: number;
  /** Set once the request reached a terminal state. */
  ended?: { as: Ending; at: string; reason?: string };
}

/** Live requests and transitions per state / edge since start. */
export interface InspectorCounts {
  /** Live requests now in each live state (0 for terminal states), and terminal arrivals per terminal state. */
  states: Record<HandoffState, number>;
  /** Transitions taken along each diagram edge (keyed by {@link edgeKeyOf}). */
  edges: Record<string, number>;
  transitions: number;
}

function positiveInteger(name: keyof InspectorModelOptions, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1)
    throw new IntentError(
      'CONFIG_INVALID',
      `Inspector option ${name} must be an integer of at least 1 (got ${String(value).slice(0, 40)}).`,
    );
  return value;
}

const zeroStates = (): Record<HandoffState, number> =>
  Object.fromEntries(HANDOFF_STATES.map((s) => [s, 0])) as Record<HandoffState, number>;

/**
 * The inspector's memory. Subscribes on construction; a request prepared before that shows up from its next step, so
 * the command creates it before it serves. `close()` unsubscribes.
 */
export class InspectorModel {
  readonly maxRequests: number;
  readonly maxSteps: number;
  readonly maxRecent: number;
  readonly startedAt: string;
  readonly #source: InspectionSource;
  readonly #unsubscribe: () => void;
  /** Live requests by id, oldest first (a Map keeps insertion order, so the first key is the one to drop). */
  readonly #live = new Map<string, TrackedRequest>();
  /** Finished requests by id, oldest first, at most `maxRecent`. */
  readonly #recent = new Map<string, TrackedRequest>();
  readonly #states = zeroStates();
  readonly #edges = new Map<string, number>();
  #transitions = 0;
  /** Timelines dropped because `maxRequests` live requests were tracked already. */
  #untracked = 0;
  readonly #listeners = new Set<(t: HandoffTransition) => void>();

  constructor(source: InspectionSource, options: InspectorModelOptions = {}) {
    this.maxRequests = positiveInteger('maxRequests', options.maxRequests, INSPECTOR_MODEL_DEFAULTS.maxRequests);
    this.maxSteps = Math.max(2, positiveInteger('maxSteps', options.maxSteps, INSPECTOR_MODEL_DEFAULTS.maxSteps));
    this.maxRecent = positiveInteger('maxRecent', options.maxRecent, INSPECTOR_MODEL_DEFAULTS.maxRecent);
    this.startedAt = new Date().toISOString();
    this.#source = source;
    this.#unsubscribe = source.inspect((t) => {
      this.#record(t);
    });
  }

  /** Live requests and store usage, straight from the engine. */
  snapshot(): EngineSnapshot {
    return this.#source.snapshot();
  }

  /** Called with every transition after the model has recorded it (the SSE stream listens here). */
  onTransition(listener: (t: HandoffTransition) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  counts(): InspectorCounts {
    return { states: { ...this.#states }, edges: Object.fromEntries(this.#edges), transitions: this.#transitions };
  }

  /** A tracked request, live or recently finished. */
  request(requestId: string): TrackedRequest | undefined {
    return this.#live.get(requestId) ?? this.#recent.get(requestId);
  }

  /** Recently finished requests, newest first. */
  recent(): TrackedRequest[] {
    return [...this.#recent.values()].reverse();
  }

  /** How much the model holds now, to show that it stays bounded. */
  usage(): { liveTimelines: number; recent: number; untracked: number; edges: number } {
    return {
      liveTimelines: this.#live.size,
      recent: this.#recent.size,
      untracked: this.#untracked,
      edges: this.#edges.size,
    };
  }

  close(): void {
    this.#unsubscribe();
    this.#listeners.clear();
  }

  #record(t: HandoffTransition): void {
    this.#transitions += 1;
    const edge = edgeKeyOf(t);
    if (edge !== undefined) this.#edges.set(edge, (this.#edges.get(edge) ?? 0) + 1);
    // Live requests per live state; a terminal state counts the requests that reached it.
    if (t.from !== t.to) {
      // A request prepared before the model subscribed was never counted in: never below zero.
      if (t.from !== null && LIVE_STATES.includes(t.from)) this.#states[t.from] = Math.max(0, this.#states[t.from] - 1);
      this.#states[t.to] += 1;
    }
    this.#track(t);
    for (const listener of this.#listeners) {
      try {
        listener(t);
      } catch {
        // A listener (an SSE client) must never disturb the others or the request.
      }
    }
  }

  #track(t: HandoffTransition): void {
    let tracked = this.#live.get(t.requestId) ?? this.#recent.get(t.requestId);
    if (tracked === undefined) {
      // Only a prepare opens a timeline: a step of a request whose timeline was dropped stays dropped.
      if (t.event !== 'prepare') return;
      tracked = {
        requestId: t.requestId,
        sessionId: t.sessionId,
        instance: t.instance,
        state: t.to,
        validations: t.validations,
        preparedAt: t.at,
        expiresAt: t.expiresAt,
        steps: [],
        omittedSteps: 0,
      };
      this.#live.set(t.requestId, tracked);
      if (this.#live.size > this.maxRequests) {
        const oldest = this.#live.keys().next().value;
        if (oldest !== undefined) this.#live.delete(oldest);
        this.#untracked += 1;
      }
    }
    tracked.state = t.to;
    tracked.validations = t.validations;
    if (tracked.steps.length >= this.maxSteps) {
      // Keep the prepare and the latest steps: drop the oldest step after the first.
      tracked.steps.splice(1, 1);
      tracked.omittedSteps += 1;
    }
    tracked.steps.push(t);
    const ending = endingOf(t);
    if (ending !== undefined && tracked.ended === undefined) {
      tracked.ended = { as: ending, at: t.at, ...(t.reason === undefined ? {} : { reason: t.reason }) };
      this.#live.delete(t.requestId);
      this.#recent.set(t.requestId, tracked);
      if (this.#recent.size > this.maxRecent) {
        const oldest = this.#recent.keys().next().value;
        if (oldest !== undefined) this.#recent.delete(oldest);
      }
    }
  }
}
