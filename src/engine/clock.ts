/**
 * The time source of the engine. It is XState's `Clock` plus `now()`, so an XState `SimulatedClock` drives the engine
 * and its actors in tests without sleeping.
 */
export interface HandoffClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
}

/** Wall-clock time; timers are unref'd so a pending deadline never keeps the process alive. */
export const systemClock: HandoffClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (id) => {
    clearTimeout(id as NodeJS.Timeout);
  },
};
