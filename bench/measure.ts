/**
 * Timing and heap helpers for a shared, noisy machine.
 *
 * Time is CPU time of the whole process (`process.cpuUsage`, user + system: GC and compiler threads count), never wall
 * time. A comparison runs its cases in short chunks (about `chunkMicros` of CPU each), one chunk of every case per
 * round, the order rotating from round to round, for many rounds. Whatever load the machine carries at a given moment
 * then weighs on every case alike, and a ratio is taken chunk by chunk within a round (paired) before its median is
 * reported. Each case also gets its median, best and mean chunk.
 */

/** Keeps results observable so the optimiser cannot drop the measured work. */
export let sink: unknown;

export function cpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

export function wallMicros(): number {
  return Number(process.hrtime.bigint()) / 1000;
}

export interface Case {
  fn: () => unknown;
  /** `fn` returns a promise that each iteration awaits. */
  async?: boolean;
}

export interface Stat {
  /** µs per operation: the median chunk. */
  median: number;
  /** µs per operation: the best chunk. */
  best: number;
  /** µs per operation over every chunk together (GC pauses and all). */
  mean: number;
  /** µs per operation of every chunk, in round order. */
  chunks: number[];
  iterationsPerChunk: number;
}

export interface Ratio {
  /** Median over the rounds of (a's chunk / b's chunk of the same round). */
  median: number;
  /** a's mean over b's mean: every chunk, GC included. */
  totals: number;
}

export function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function stat(chunks: number[], iterationsPerChunk: number, totalMicros?: number, totalOps?: number): Stat {
  return {
    median: median(chunks),
    best: Math.min(...chunks),
    mean:
      totalMicros !== undefined && totalOps !== undefined
        ? totalMicros / totalOps
        : chunks.reduce((s, v) => s + v, 0) / chunks.length,
    chunks,
    iterationsPerChunk,
  };
}

export function ratio(a: Stat, b: Stat): Ratio {
  const n = Math.min(a.chunks.length, b.chunks.length);
  const paired: number[] = [];
  for (let i = 0; i < n; i++) paired.push(a.chunks[i]! / b.chunks[i]!);
  return { median: median(paired), totals: a.mean / b.mean };
}

async function runChunk(c: Case, iterations: number): Promise<number> {
  const t0 = cpuMicros();
  if (c.async === true) for (let i = 0; i < iterations; i++) sink = await c.fn();
  else for (let i = 0; i < iterations; i++) sink = c.fn();
  return cpuMicros() - t0;
}

export interface CompareOptions {
  rounds: number;
  /** CPU per chunk. */
  chunkMicros: number;
  /** CPU each case runs before it is sized and measured, so optimised code is what gets measured. */
  warmupMicros: number;
}

/**
 * Warms every case up, sizes its chunk from the cheapest warm-up chunks, then runs `rounds` rounds of one chunk per
 * case, rotating the order.
 */
export async function compare<K extends string>(
  cases: Record<K, Case>,
  options: CompareOptions,
): Promise<Record<K, Stat>> {
  const keys = Object.keys(cases) as K[];
  const size = {} as Record<K, number>;
  for (const k of keys) {
    let iterations = 1;
    let spent = 0;
    const perOp: number[] = [];
    while (spent < options.warmupMicros || perOp.length < 5) {
      const dt = await runChunk(cases[k], iterations);
      spent += dt;
      perOp.push(dt / iterations);
      if (dt < options.chunkMicros / 2) iterations *= 2;
    }
    const cheap = [...perOp].sort((a, b) => a - b).slice(0, 3);
    size[k] = Math.max(1, Math.round(options.chunkMicros / median(cheap)));
  }
  const chunks = Object.fromEntries(keys.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  const totals = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (let r = 0; r < options.rounds; r++) {
    for (let j = 0; j < keys.length; j++) {
      const k = keys[(r + j) % keys.length]!;
      const dt = await runChunk(cases[k], size[k]);
      totals[k] += dt;
      chunks[k].push(dt / size[k]);
    }
  }
  return Object.fromEntries(
    keys.map((k) => [k, stat(chunks[k], size[k], totals[k], size[k] * options.rounds)]),
  ) as Record<K, Stat>;
}

/** Full garbage collection (twice, so weakly held and finalised objects go too); needs `--expose-gc`. */
export function fullGc(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc');
  gc();
  gc();
}

export function heapUsed(): number {
  fullGc();
  return process.memoryUsage().heapUsed;
}

export function round(n: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
