/**
 * Where the time of a handoff goes, measured in place: the V8 sampling profiler (through `node:inspector`) runs while
 * handoffs run, and every sample is put in one bucket by the functions on its stack. Pricing the parts alone misses what
 * only happens when they run together (the GC of the whole allocation volume, colder caches), so this is the breakdown
 * BENCHMARKS.md relies on; the isolated prices are printed next to it.
 */
import { Session } from 'node:inspector/promises';

interface Frame {
  readonly fn: string;
  readonly url: string;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

/** Component buckets, in the order they are tried: the first whose test matches the stack (leaf first) wins. */
const COMPONENTS: readonly [string, (stack: readonly Frame[]) => boolean][] = [
  ['GC', (s) => s[0]?.fn === '(garbage collector)'],
  ['validate: JSON.parse', (s) => s[0]?.fn === 'validateCandidate' || s[0]?.fn === 'stripCodeFence'],
  ['validate: zod schema', (s) => has(s, 'validateCandidate') && s.some((f) => f.url.includes('/zod/'))],
  ['validate: reference checks', (s) => has(s, 'validateCandidate')],
  ['normalizeCandidate', (s) => has(s, 'normalizeCandidate')],
  ['JSON.stringify(result)', (s) => s[0]?.fn === '#runValidation'],
  ['prepareRequest', (s) => has(s, 'prepareRequest')],
  [
    'crypto: ids, token, hashes',
    (s) => s.some((f) => ['newCredentials', 'tokenMatches', 'candidateIdentity', 'hashToken'].includes(f.fn)),
  ],
  ['terminal store', (s) => s.some((f) => f.url.includes('lru-cache') || f.url.endsWith('terminalStore.js'))],
  ['XState (actor create/start/send/stop)', (s) => s.some((f) => f.url.includes('/xstate/'))],
  ['engine bookkeeping', (s) => s[0] !== undefined && /\/dist\/(src|machines)\//.test(s[0].url)],
  ['idle / program', (s) => s[0]?.fn === '(idle)' || s[0]?.fn === '(program)'],
  ['node: timers, promises, other', () => true],
];

/** Phases: which engine entry point a sample is under. */
const PHASES: readonly [string, (stack: readonly Frame[]) => boolean][] = [
  ['GC', (s) => s[0]?.fn === '(garbage collector)'],
  ['validation job (after the event-loop turn)', (s) => has(s, '#runValidation')],
  ['prepare', (s) => s.some((f) => f.fn === 'prepare' && f.url.endsWith('engine.js'))],
  ['accept (until the job is scheduled)', (s) => s.some((f) => f.fn === 'accept' && f.url.endsWith('engine.js'))],
  ['event loop, promises, idle', () => true],
];

function has(stack: readonly Frame[], fn: string): boolean {
  return stack.some((f) => f.fn === fn);
}

export interface Breakdown {
  samples: number;
  components: Record<string, number>;
  phases: Record<string, number>;
}

/** Profiles `work` and returns the share (0–1) of the samples per component and per phase. */
export async function profileBreakdown(work: () => Promise<void>, intervalMicros = 100): Promise<Breakdown> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: intervalMicros });
  await session.post('Profiler.start');
  await work();
  const { profile } = await session.post('Profiler.stop');
  await session.post('Profiler.disable');
  session.disconnect();

  const nodes = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes as ProfileNode[]) {
    nodes.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const stackOf = (id: number): Frame[] => {
    const out: Frame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = nodes.get(at)?.callFrame;
      if (frame !== undefined) out.push({ fn: frame.functionName, url: frame.url });
    }
    return out;
  };
  const stacks = new Map<number, Frame[]>();
  const components: Record<string, number> = Object.fromEntries(COMPONENTS.map(([name]) => [name, 0]));
  const phases: Record<string, number> = Object.fromEntries(PHASES.map(([name]) => [name, 0]));
  const samples = profile.samples ?? [];
  for (const id of samples) {
    let stack = stacks.get(id);
    if (stack === undefined) {
      stack = stackOf(id);
      stacks.set(id, stack);
    }
    const component = COMPONENTS.find(([, test]) => test(stack))![0];
    const phase = PHASES.find(([, test]) => test(stack))![0];
    components[component]! += 1;
    phases[phase]! += 1;
  }
  const n = Math.max(1, samples.length);
  for (const k of Object.keys(components)) components[k]! /= n;
  for (const k of Object.keys(phases)) phases[k]! /= n;
  return { samples: samples.length, components, phases };
}
