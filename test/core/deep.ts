/**
 * Builders of values nested to an exact depth (arrays and objects; the root is 1), for the nesting-bound tests and the
 * low-stack script. Everything is built iteratively, so any depth can be built on any stack.
 */

/** `{ a: { a: … {} } }` with `levels` objects (0 levels: `undefined`). */
export function nestedObject(levels: number, key = 'a'): Record<string, unknown> | undefined {
  let value: Record<string, unknown> | undefined;
  for (let i = 0; i < levels; i++) value = value === undefined ? {} : { [key]: value };
  return value;
}

/** `[[ … [] … ]]` with `levels` arrays. */
export function nestedArray(levels: number): unknown[] {
  let value: unknown[] = [];
  for (let i = 1; i < levels; i++) value = [value];
  return value;
}

function candidateIntent(n: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ref: `r${n}`,
    domain: 'orders',
    action: 'query',
    target: `order ${n}`,
    goal: `Look up order ${n}.`,
    understanding: 'clear',
    ...extra,
  };
}

/**
 * A valid candidate whose deepest container lies at exactly `depth` (≥ 5): a chain of intents through `children`, each
 * with a constraint; the last one's innermost container makes up the odd level. `leaf` replaces the deepest
 * constraint (to plant an error there).
 */
export function deepCandidate(depth: number, leaf?: unknown): Record<string, unknown> {
  // candidate(1) → intents(2) → intent(3) → children(4) → intent(5) …: intent n sits at 3 + 2n, its constraint at 5 + 2n.
  const levels = Math.floor((depth - 5) / 2);
  const constraint = { kind: 'requirement', text: 'in economy' };
  const odd = (depth - 5) % 2 === 1;
  // An even depth: the last intent gets one child whose empty `children` array is the deepest container.
  let node: Record<string, unknown> = candidateIntent(levels, {
    constraints: [leaf ?? constraint],
    ...(odd ? { children: [candidateIntent(levels + 1, { children: [] })] } : {}),
  });
  for (let n = levels - 1; n >= 0; n--) node = candidateIntent(n, { constraints: [constraint], children: [node] });
  return { turnKind: 'request', coverage: 'complete', intents: [node] };
}

/**
 * A Native request whose deepest container lies at exactly `depth` (≥ 8): a baseline chain of intents through
 * `children`, each with a constraint (whose `scope` is the deepest part), and `extensions` of the last intent nested to
 * fill the rest.
 */
export function deepRequest(depth: number, intents: number): Record<string, unknown> {
  // request(1) → baseline(2) → intents(3) → intent k at 4 + 2k → constraints → constraint → scope at 7 + 2k;
  // the last intent's extensions at 5 + 2k hold objects down to `depth`.
  const last = intents - 1;
  const intentNode = (k: number, children: unknown[], extensions: unknown): Record<string, unknown> => ({
    id: `intent-${k + 1}`,
    domain: 'orders',
    action: 'query',
    target: `order ${k}`,
    goal: `Look up order ${k}.`,
    understanding: 'clear',
    constraints: [
      {
        id: `constraint-${k + 1}`,
        kind: 'requirement',
        text: 'in economy',
        scope: { type: 'intent', intentId: `intent-${k + 1}` },
      },
    ],
    inputs: {},
    references: [],
    children,
    extensions,
  });
  const extensionLevels = depth - (5 + 2 * last) + 1;
  let node = intentNode(last, [], nestedObject(extensionLevels) ?? {});
  for (let k = last - 1; k >= 0; k--) node = intentNode(k, [node], {});
  return {
    input: 'also book the hotel',
    baseline: {
      schemaVersion: '2.0-draft.6',
      coverage: 'complete',
      scope: 'conversation',
      intents: [node],
      constraints: [],
      relations: [],
      unresolved: [],
    },
  };
}

/** Candidate text with a chain of `levels` intents through `children`, built as text (`JSON.stringify` recurses). */
export function deepCandidateText(levels: number): string {
  const open = '{"domain":null,"action":"a","target":null,"goal":"g","understanding":"clear","children":[';
  return '{"turnKind":"request","coverage":"complete","intents":[' + open.repeat(levels) + ']}'.repeat(levels) + ']}';
}

/** `[[ … ]]` with `levels` arrays, as text. */
export function nestedArrayText(levels: number): string {
  return '['.repeat(levels) + ']'.repeat(levels);
}
