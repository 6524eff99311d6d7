/**
 * Seeds, run counts and failure reports of the fuzz suite. Every property has a FIXED seed so CI is reproducible;
 * `FUZZ_SEED` replaces every seed (exploration: `FUZZ_SEED=$RANDOM npm run fuzz`), `FUZZ_RUNS` multiplies every run
 * count, and `FUZZ_PATH` (with the seed of a report) replays one shrunk counterexample.
 */
import fc from 'fast-check';

function envNumber(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got ${raw}`);
  return n;
}

/** A generated value printed for a report: long strings, long arrays, wide and deep structures summarised. */
export function summarize(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') {
    if (value.length <= 160) return value;
    const unit = value.slice(0, 8);
    const repeated = unit.length > 0 && value === unit.repeat(value.length / unit.length);
    return repeated
      ? `<${JSON.stringify(value.slice(0, 1))} ×${value.length}>`
      : `${value.slice(0, 120)}…<${value.length} chars>…${value.slice(-24)}`;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return `<${String(value)}>`;
  if (value === undefined) return '<undefined>';
  if (value === null || typeof value !== 'object') return value;
  if (depth >= 7 && Object.keys(value).length > 0)
    return `<${Array.isArray(value) ? 'array' : 'object'} of ${Object.keys(value).length} entries, ${nestingOf(value)} levels deep>`;
  if (Array.isArray(value)) {
    const shown = value.slice(0, 8).map((v) => summarize(v, depth + 1));
    return value.length > 8 ? [...shown, `<… ${value.length} items>`] : shown;
  }
  const keys = Object.keys(value);
  const out: Record<string, unknown> = {};
  for (const k of keys.slice(0, 12))
    Object.defineProperty(out, String(summarize(k)), {
      value: summarize((value as Record<string, unknown>)[k], depth + 1),
      enumerable: true,
    });
  if (keys.length > 12) out['<…>'] = `${keys.length} keys`;
  return out;
}

/** The nesting depth of a value (iterative: generated values nest 100,000 deep). */
function nestingOf(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  let visited = 0;
  while (stack.length > 0 && visited++ < 1_000_000) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    deepest = Math.max(deepest, d);
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return deepest;
}

/** Reports a failure with the seed and path to replay it and a summarised counterexample (the raw one can be 1 MiB). */
function report(details: fc.RunDetails<unknown>): void {
  if (!details.failed) return;
  const error = details.errorInstance;
  // A FuzzFailure's message says everything; anything else thrown is shown with where it came from.
  const cause =
    error instanceof Error
      ? error.name === 'FuzzFailure'
        ? `${error.name}: ${error.message}`
        : (error.stack ?? '').split('\n').slice(0, 8).join('\n')
      : String(error);
  throw new Error(
    [
      `Property failed after ${details.numRuns} run(s), shrunk ${details.numShrinks} time(s)`,
      `replay (this property alone, vitest -t): FUZZ_SEED=${details.seed} FUZZ_PATH=${details.counterexamplePath ?? ''}`,
      `counterexample: ${JSON.stringify(summarize(details.counterexample))}`,
      `failure: ${cause}`,
    ].join('\n'),
  );
}

/** fast-check parameters of one property: its own seed and run count, unless the environment overrides them. */
export function fuzzParams<T>(seed: number, numRuns: number, budgetMs?: number): fc.Parameters<T> {
  const override = envNumber('FUZZ_SEED');
  const factor = envNumber('FUZZ_RUNS') ?? 1;
  const path = process.env['FUZZ_PATH'];
  return {
    seed: override ?? seed,
    numRuns: Math.max(1, Math.round(numRuns * factor)),
    ...(path === undefined || path === '' ? {} : { path }),
    // FUZZ_NO_SHRINK=1 reports the first failing case as generated (fast triage of the slow process layers).
    ...(process.env['FUZZ_NO_SHRINK'] === '1' ? { endOnFailure: true } : {}),
    plugins: [
      // A hang guard of the harness, not a timing assertion: a property whose runs (and shrinking) outlive its budget
      // stops and reports the best counterexample so far, or fails as interrupted when it found none.
      ...(budgetMs === undefined ? [] : [fc.interruptAfterTimeLimit(budgetMs, { failOnInterrupt: true })]),
      () => ({
        onAllRunsComplete: (details) => {
          report(details as fc.RunDetails<unknown>);
        },
      }),
    ],
  };
}
