/**
 * The time source of the engine. It is XState's `Clock` plus `now()`, so an XState `SimulatedClock` drives the engine
 * and its actors in tests without sleeping.
 */
export interface HandoffClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
}

/** Whether `value` is a {@link HandoffClock}: an object with `now`, `setTimeout` and `clearTimeout` functions. */
export function isHandoffClock(value: unknown): value is HandoffClock {
  return (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as HandoffClock).now === 'function' &&
    typeof (value as HandoffClock).setTimeout === 'function' &&
    typeof (value as HandoffClock).clearTimeout === 'function'
  );
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
