/**
 * Runs every recursive step after the nesting check at the largest allowed depth, on whatever stack the process was
 * started with (`node --stack-size=… --import tsx`), and prints what happened as one JSON line. See nesting.test.ts.
 */
import { resolveInstance } from '../../src/core/instance.js';
import { normalizeCandidate } from '../../src/core/normalize.js';
import { prepareRequest } from '../../src/core/request.js';
import { MAX_NESTING_DEPTH, REQUEST_EXTRA_DEPTH } from '../../src/core/schemas.js';
import { validateCandidate } from '../../src/core/validate.js';
import { deepCandidate, deepRequest } from './deep.js';

const max = Number(process.argv[2] ?? MAX_NESTING_DEPTH);
const now = new Date('2026-03-04T05:06:07.000Z');
const instance = resolveInstance({ limits: { maxNestingDepth: max } });
const out: Record<string, unknown> = {};
const attempt = (name: string, step: () => unknown): void => {
  try {
    out[name] = step();
  } catch (error) {
    out[name] = { threw: error instanceof Error ? `${error.name}: ${error.message.slice(0, 80)}` : 'non-error' };
  }
};

const atBound = deepRequest(max + REQUEST_EXTRA_DEPTH, Math.floor((max - 6) / 2));
attempt('requestAtBound', () => {
  const prepared = prepareRequest(instance, atBound, now);
  const text = deepCandidate(max);
  // The deepest baseline intent is updated: its pointer is the longest the baseline has.
  const deepest = `intent-${Math.floor((max - 6) / 2)}`;
  text['baselineChanges'] = [
    { operation: 'update', target: { kind: 'intent', id: deepest }, set: { goal: 'Look it up again.' } },
    { operation: 'remove', target: { kind: 'constraint', id: 'constraint-2' } },
  ];
  const check = validateCandidate(prepared, JSON.stringify(text));
  if (!check.ok) return { issues: check.issues };
  const result = normalizeCandidate(prepared, check.candidate);
  return { task: JSON.stringify(prepared.task).length > 0, result: JSON.stringify(result).length > 0 };
});
attempt('requestOverBound', () => {
  prepareRequest(instance, deepRequest(max + REQUEST_EXTRA_DEPTH + 1, Math.floor((max - 6) / 2)), now);
  return 'accepted';
});
attempt('candidateInvalidAtBound', () => {
  const prepared = prepareRequest(instance, { input: 'book a flight' }, now);
  const check = validateCandidate(prepared, JSON.stringify(deepCandidate(max, { kind: 'nope', text: 7, extra: 1 })));
  return check.ok ? 'accepted' : check.issues;
});
attempt('candidateOverBound', () => {
  const prepared = prepareRequest(instance, { input: 'book a flight' }, now);
  const check = validateCandidate(prepared, JSON.stringify(deepCandidate(max + 1)));
  return check.ok ? 'accepted' : check.issues;
});
process.stdout.write(JSON.stringify(out) + '\n');
