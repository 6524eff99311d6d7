/**
 * Helpers shared by the result-model tests (result.test.ts, properties.test.ts): running a candidate through the pure
 * core, and spec 02's key order of every object in an `IntentResult`.
 */
import { expect } from 'vitest';
import type { IntentCandidate } from '../../src/core/candidate.js';
import { resolveInstance, type InstanceModel } from '../../src/core/instance.js';
import { normalizeCandidate } from '../../src/core/normalize.js';
import { prepareRequest, type PreparedRequest } from '../../src/core/request.js';
import type { IntentResult } from '../../src/core/schemas.js';
import { validateCandidate } from '../../src/core/validate.js';

/** The time of prepare used when a test does not care (never the wall clock: results must be reproducible). */
export const PREPARE_TIME = new Date('2026-11-02T08:00:00.000Z');

export function prepare(instance: InstanceModel | object, request: unknown, now = PREPARE_TIME): PreparedRequest {
  const model = isInstanceModel(instance) ? instance : resolveInstance(instance);
  return prepareRequest(model, request, now);
}

function isInstanceModel(value: object): value is InstanceModel {
  return typeof (value as Partial<InstanceModel>).plan === 'function';
}

/** Validates candidate text for a prepared request; fails the test (showing the feedback) when it is rejected. */
export function accept(prepared: PreparedRequest, text: string): IntentCandidate {
  const check = validateCandidate(prepared, text);
  if (!check.ok) expect.fail(`candidate rejected: ${JSON.stringify(check.issues)}`);
  return check.candidate;
}

/** The pure core end to end: validate the candidate's JSON text, then normalise it. */
export function recognizeWith(prepared: PreparedRequest, candidate: unknown): IntentResult {
  const text = typeof candidate === 'string' ? candidate : JSON.stringify(candidate);
  return normalizeCandidate(prepared, accept(prepared, text));
}

/** `instance` (config or model) + request + candidate → result, through the pure functions. */
export function run(instance: InstanceModel | object, request: unknown, candidate: unknown): IntentResult {
  return recognizeWith(prepare(instance, request), candidate);
}

/** Same value and same bytes: `toEqual` ignores key order, the JSON text does not. */
export function expectExactly(actual: unknown, expected: unknown): void {
  expect(actual).toEqual(expected);
  expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
}

// ---------------------------------------------------------------------------------------------------------------------
// Spec 02's key order ("keys in exactly this order"); optional keys are listed where spec 02 places them.

const ORDER = {
  result: ['schemaVersion', 'input', 'status', 'turn', 'effective', 'fieldResults', 'issues', 'inferences'],
  turn: ['kind', 'normalizedInput', 'intentIds', 'changes', 'facts'],
  facts: ['referenceTime'],
  effective: ['schemaVersion', 'coverage', 'scope', 'intents', 'constraints', 'relations', 'unresolved'],
  intent: [
    'id',
    'domain',
    'action',
    'target',
    'goal',
    'understanding',
    'constraints',
    'inputs',
    'references',
    'children',
    'extensions',
  ],
  constraint: ['id', 'kind', 'text', 'scope'],
  intentScope: ['type', 'intentId'],
  requestScope: ['type'],
  reference: ['kind', 'id', 'text'],
  relation: ['id', 'kind', 'from', 'to', 'text'],
  unresolved: ['id', 'kind', 'text', 'intentId', 'options'],
  change: ['operation', 'target', 'description', 'sourceRefs', 'effect'],
  target: ['kind', 'id'],
  sourceRef: ['root', 'pointer'],
  fieldResult: ['field', 'status', 'value', 'candidates', 'sourceRefs'],
  issue: ['code', 'severity', 'message', 'target'],
  inference: ['kind', 'target', 'value', 'basis'],
} as const satisfies Record<string, readonly string[]>;

const REQUIRED: Partial<Record<keyof typeof ORDER, readonly string[]>> = {
  facts: [],
  reference: ['kind', 'text'],
  relation: ['id', 'kind', 'from', 'to'],
  unresolved: ['id', 'kind', 'text'],
  fieldResult: ['field', 'status', 'sourceRefs'],
  issue: ['code', 'severity', 'message'],
};

type Obj = Record<string, unknown>;

/**
 * Every object of `result` whose keys differ from spec 02's order (or miss a required key, or carry an unknown one),
 * as `path: actual keys` lines. Empty when the whole result follows spec 02.
 */
export function keyOrderProblems(result: unknown): string[] {
  const problems: string[] = [];
  const check = (value: unknown, shape: keyof typeof ORDER, path: string): Obj => {
    const obj = (value ?? {}) as Obj;
    const keys = Object.keys(obj);
    const order: readonly string[] = ORDER[shape];
    const required = REQUIRED[shape] ?? order;
    const expected = order.filter((k) => keys.includes(k));
    if (keys.join() !== expected.join() || required.some((k) => !keys.includes(k)))
      problems.push(`${path === '' ? '(root)' : path} (${shape}): ${keys.join(', ')}`);
    return obj;
  };
  const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
  const constraint = (c: unknown, path: string): void => {
    const o = check(c, 'constraint', path);
    const scope = o['scope'] as Obj | undefined;
    check(scope, scope?.['type'] === 'intent' ? 'intentScope' : 'requestScope', `${path}/scope`);
  };
  const intent = (i: unknown, path: string): void => {
    const o = check(i, 'intent', path);
    list(o['constraints']).forEach((c, n) => {
      constraint(c, `${path}/constraints/${n}`);
    });
    list(o['references']).forEach((r, n) => check(r, 'reference', `${path}/references/${n}`));
    list(o['children']).forEach((c, n) => {
      intent(c, `${path}/children/${n}`);
    });
  };
  const top = check(result, 'result', '');
  const turn = check(top['turn'], 'turn', '/turn');
  check(turn['facts'], 'facts', '/turn/facts');
  list(turn['changes']).forEach((c, n) => {
    const o = check(c, 'change', `/turn/changes/${n}`);
    check(o['target'], 'target', `/turn/changes/${n}/target`);
    list(o['sourceRefs']).forEach((s, k) => check(s, 'sourceRef', `/turn/changes/${n}/sourceRefs/${k}`));
  });
  const eff = check(top['effective'], 'effective', '/effective');
  list(eff['intents']).forEach((i, n) => {
    intent(i, `/effective/intents/${n}`);
  });
  list(eff['constraints']).forEach((c, n) => {
    constraint(c, `/effective/constraints/${n}`);
  });
  list(eff['relations']).forEach((r, n) => check(r, 'relation', `/effective/relations/${n}`));
  list(eff['unresolved']).forEach((u, n) => check(u, 'unresolved', `/effective/unresolved/${n}`));
  list(top['fieldResults']).forEach((f, n) => {
    const o = check(f, 'fieldResult', `/fieldResults/${n}`);
    list(o['sourceRefs']).forEach((s, k) => check(s, 'sourceRef', `/fieldResults/${n}/sourceRefs/${k}`));
  });
  list(top['issues']).forEach((i, n) => {
    const o = check(i, 'issue', `/issues/${n}`);
    if (o['target'] !== undefined) check(o['target'], 'target', `/issues/${n}/target`);
  });
  list(top['inferences']).forEach((i, n) => {
    const o = check(i, 'inference', `/inferences/${n}`);
    check(o['target'], 'target', `/inferences/${n}/target`);
  });
  return problems;
}
