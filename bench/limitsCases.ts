/**
 * The inputs of the limits bench (`bench/limits.ts`, issue 8 "Performance"): one accept at the limits of what a caller
 * controls. Each case builds, for a size, the `intent_prepare` arguments and the candidate text of one handoff.
 * Everything is built by repetition, so building costs nothing next to what is measured.
 */
import { INSTANCE_OPTIONS, SEED_CANDIDATE, SEED_INPUT } from './fixture.js';

export const MIB = 1024 * 1024;

/** What one measurement runs: an instance, the prepare arguments and the candidate. */
export interface Workload {
  /** `main` (no schema) or `travel` (the fixture's schema, for field evidence). */
  instance: 'main' | 'travel';
  args: Record<string, unknown>;
  candidate: string;
  /** The bytes the case is normalised by ("per MiB" of this). */
  bytes: number;
  /** What `bytes` counts, for the table. */
  unit: string;
}

export interface LimitsCase {
  name: string;
  /** What the row measures. */
  what: string;
  /** The sizes (or depths) it runs at, smallest first. */
  sizes: number[];
  /** How a size is shown. */
  label: (size: number) => string;
  build: (size: number) => Workload;
}

/** A size for the tables; sizes just under a limit (1 MiB − 8 bytes, say) are shown rounded. */
const kib = (n: number): string =>
  n >= MIB - 64 * 1024 ? `${(n / MIB).toFixed(2)} MiB` : `${Math.round(n / 1024)} KiB`;

/** A compact baseline intent (`effective` of an earlier result), about 170 bytes. */
function baselineIntent(i: number): string {
  return `{"id":"intent-${i}","domain":null,"action":"query","target":null,"goal":"goal ${i}","understanding":"clear","constraints":[],"inputs":{},"references":[],"children":[],"extensions":{}}`;
}

/** A baseline of `n` intents, as a parsed value (the tool arguments are objects in process). */
export function baselineOf(n: number): Record<string, unknown> {
  const intents = Array.from({ length: n }, (_, i) => baselineIntent(i + 1)).join(',');
  return JSON.parse(
    `{"schemaVersion":"2.0-draft.6","coverage":"complete","scope":"conversation","intents":[${intents}],"constraints":[],"relations":[],"unresolved":[]}`,
  ) as Record<string, unknown>;
}

/** One candidate intent with two constraints and two inputs, about 330 bytes. */
function candidateIntent(i: number): string {
  return `{"ref":"r${i}","domain":"orders","action":"query","target":"order ${i}","goal":"look up order ${i} and keep it","understanding":"clear","constraints":[{"kind":"prohibition","text":"do not cancel order ${i}"},{"kind":"deadline","text":"by Friday"}],"inputs":[{"name":"order","value":"${i}"},{"name":"count","value":${i}}]}`;
}

/** A valid candidate of about `bytes` bytes (never more): as many intents as fit. */
export function candidateOfSize(bytes: number): string {
  const head = '{"turnKind":"request","coverage":"complete","intents":[';
  const parts: string[] = [];
  let size = head.length + 2;
  for (let i = 1; ; i++) {
    const next = candidateIntent(i);
    if (size + next.length + 1 > bytes) break;
    parts.push(next);
    size += next.length + 1;
  }
  return `${head}${parts.join(',')}]}`;
}

/** A candidate whose one intent nests `depth` levels of `children`. */
export function deepCandidate(depth: number): string {
  const open = '{"domain":null,"action":"a","target":null,"goal":"g","understanding":"clear","children":[';
  return (
    '{"turnKind":"request","coverage":"complete","intents":[' +
    open.repeat(depth) +
    '{"domain":null,"action":"a","target":null,"goal":"g","understanding":"clear"}' +
    ']}'.repeat(depth) +
    ']}'
  );
}

/** The limits bench's cases. `depthBound` is the nesting bound of the fixed code (a parameter: its value is open). */
export function limitsCases(depthBound: number): LimitsCase[] {
  return [
    {
      name: 'candidate',
      what: 'a valid candidate of N bytes (intents with constraints and inputs), validated and normalised',
      sizes: [256 * 1024, 512 * 1024, MIB],
      label: kib,
      build: (size) => ({
        instance: 'main',
        args: { input: SEED_INPUT },
        candidate: candidateOfSize(size),
        bytes: size,
        unit: 'candidate bytes',
      }),
    },
    {
      name: 'baseline',
      what: 'a baseline of N bytes (compact intents) with the seed candidate; prepare + accept',
      sizes: [MIB, 2 * MIB, 4 * MIB - 64 * 1024],
      label: kib,
      build: (size) => {
        const n = Math.floor(size / (baselineIntent(10_000).length + 1));
        const baseline = baselineOf(n);
        return {
          instance: 'main',
          args: { input: SEED_INPUT, baseline },
          candidate: SEED_CANDIDATE.replace('"request"', '"followup"'),
          bytes: JSON.stringify(baseline).length,
          unit: 'baseline bytes',
        };
      },
    },
    {
      name: 'fence',
      what: 'a pathological fence: "```\\n" + N spaces + "x" (no closing fence)',
      sizes: [64 * 1024, 128 * 1024, 256 * 1024, MIB - 8],
      label: kib,
      build: (size) => ({
        instance: 'main',
        args: { input: SEED_INPUT },
        candidate: '```\n' + ' '.repeat(size) + 'x',
        bytes: size,
        unit: 'candidate bytes',
      }),
    },
    {
      name: 'fence-closed',
      what: 'the seed candidate in a fence padded with N spaces before the closing fence',
      sizes: [64 * 1024, 256 * 1024, MIB - 1024],
      label: kib,
      build: (size) => ({
        instance: 'main',
        args: { input: SEED_INPUT },
        candidate: '```json\n' + SEED_CANDIDATE + ' '.repeat(size) + '\n```',
        bytes: size,
        unit: 'candidate bytes',
      }),
    },
    {
      name: 'depth',
      what: `a candidate whose intent nests N levels of children (bound under test: ${depthBound})`,
      sizes: [...new Set([Math.max(1, depthBound - 1), depthBound, depthBound + 1, 4 * depthBound, 16 * depthBound])],
      label: (d) => `depth ${d}`,
      build: (depth) => {
        const candidate = deepCandidate(depth);
        return {
          instance: 'main',
          args: { input: SEED_INPUT },
          candidate,
          bytes: candidate.length,
          unit: 'candidate bytes',
        };
      },
    },
    {
      name: 'deep-mib',
      what: 'a candidate that is nothing but nesting: "[" × N/2 + "]" × N/2',
      sizes: [256 * 1024, 512 * 1024, MIB],
      label: kib,
      build: (size) => ({
        instance: 'main',
        args: { input: SEED_INPUT },
        candidate: '['.repeat(size / 2) + ']'.repeat(size / 2),
        bytes: size,
        unit: 'candidate bytes',
      }),
    },
    {
      name: 'evidence',
      what: 'context items of 20,000 chars ("a"…, the default maxContextItemChars) up to N chars in all, and a field evidence of 10,000 chars ("a"…"b"…"a") found nowhere',
      sizes: [240_000, 500_000, 1_000_000],
      label: (n) => `${n / 20_000} items × 20k + 10k chars`,
      build: (size) => {
        // A mismatch in the middle of the pattern defeats the skip tables of a naive substring search: O(n·m) there.
        const evidence = 'a'.repeat(5_000) + 'b' + 'a'.repeat(4_999);
        const candidate = JSON.stringify({
          turnKind: 'request',
          coverage: 'complete',
          intents: [{ domain: 'travel', action: 'book', target: 'flight', goal: 'fly', understanding: 'clear' }],
          fields: { origin: { status: 'filled', value: 'Berlin', evidence } },
        });
        const items = size / 20_000;
        return {
          instance: 'travel',
          args: {
            input: 'Book a flight from Berlin to Lisbon.',
            fields: ['origin'],
            context: Array.from({ length: items }, () => ({ role: 'user', text: 'a'.repeat(20_000) })),
          },
          candidate,
          bytes: size + evidence.length,
          unit: 'context + evidence chars',
        };
      },
    },
    {
      name: 'updates',
      what: 'a baseline of N intents and a candidate of N/2 updates (one goal each)',
      sizes: [5_500, 11_000, 22_000],
      label: (n) => `${n} intents, ${n / 2} updates`,
      build: (n) => {
        const baseline = baselineOf(n);
        const updates = Array.from(
          { length: n / 2 },
          (_, i) =>
            `{"operation":"update","target":{"kind":"intent","id":"intent-${2 * i + 1}"},"set":{"goal":"g${i}"}}`,
        ).join(',');
        const candidate = `{"turnKind":"followup","coverage":"complete","intents":[],"baselineChanges":[${updates}]}`;
        return {
          instance: 'main',
          args: { input: SEED_INPUT, baseline },
          candidate,
          bytes: JSON.stringify(baseline).length + candidate.length,
          unit: 'baseline + candidate bytes',
        };
      },
    },
  ];
}

export { INSTANCE_OPTIONS };
