/**
 * Validating a Native request against an instance and turning it into a task (spec 02, "The request", "The task").
 */
import type { z } from 'zod';
import { IntentError, quoteCaller, type FeedbackItem } from './errors.js';
import { boundFeedback, toPointer, unknownTopLevelKey, zodIssuesToFeedback } from './feedback.js';
import type { CandidatePlan, InstanceModel, ResolvedField } from './instance.js';
import { chooseLanguage, normalizeText } from './language.js';
import { findShapeProblem } from './nesting.js';
import {
  NativeRequestSchema,
  REQUEST_EXTRA_DEPTH,
  type EffectiveState,
  type Limits,
  type IntentNode,
  type Language,
  type ModelTask,
  type NativeRequest,
  type TaskMaterial,
} from './schemas.js';

/** A validated request with everything later steps need. Immutable; shared by validation and normalisation. */
export interface PreparedRequest {
  readonly instance: InstanceModel;
  readonly request: NativeRequest;
  readonly normalizedInput: string;
  readonly language: Language;
  /** The request's `referenceTime`, or the time of prepare. */
  readonly referenceTime: string;
  readonly explicitReferenceTime: boolean;
  readonly baseline: EffectiveState | undefined;
  readonly plan: CandidatePlan;
  readonly task: ModelTask;
}

const REQUEST_KEYS = Object.keys(NativeRequestSchema.shape);

function inputInvalid(items: FeedbackItem[], message: string): IntentError {
  return new IntentError('INPUT_INVALID', message, { details: { issues: boundFeedback(items) } });
}

function schemaProblem(issues: readonly z.core.$ZodIssue[], raw: unknown): IntentError {
  const items = zodIssuesToFeedback(issues, raw);
  const first = items[0];
  const unknown = unknownTopLevelKey(issues);
  let message: string;
  if (first === undefined) message = 'The request is invalid; check it against the tool input schema.';
  else if (unknown !== undefined)
    message = `The request has an unknown key ${quoteCaller(unknown)}; remove it (allowed keys: ${REQUEST_KEYS.join(', ')}).`;
  else
    message = `The request is invalid at ${first.path === '' ? 'the top level' : `"${first.path}"`}: ${first.message}`;
  return inputInvalid(items, message);
}

/** Most configured field names an error lists; the rest are counted. */
const MAX_LISTED_FIELDS = 20;

function listFields(names: readonly string[]): string {
  const shown = names.slice(0, MAX_LISTED_FIELDS).join(', ');
  return names.length > MAX_LISTED_FIELDS ? `${shown} and ${names.length - MAX_LISTED_FIELDS} more` : shown;
}

/** Caps a caller (an adapter, say) puts on requests on top of the instance's own limits; the lower one applies. */
export type RequestCaps = Partial<Pick<Limits, 'maxInputChars' | 'maxContextItems' | 'maxContextItemChars'>>;

/**
 * Validates `raw` as a Native request for `instance` and builds its task. `now` is the time of prepare, used as the
 * reference time when the request gives none. Throws `INPUT_INVALID` naming the offending key or field. The nesting
 * depth of `raw` is checked first, iteratively (`limits.maxNestingDepth` + 2), so no later step can overflow the stack.
 */
export function prepareRequest(
  instance: InstanceModel,
  raw: unknown,
  now: Date,
  caps: RequestCaps = {},
): PreparedRequest {
  const limits = {
    maxInputChars: Math.min(instance.limits.maxInputChars, caps.maxInputChars ?? Infinity),
    maxContextItems: Math.min(instance.limits.maxContextItems, caps.maxContextItems ?? Infinity),
    maxContextItemChars: Math.min(instance.limits.maxContextItemChars, caps.maxContextItemChars ?? Infinity),
  };
  // Before zod: the baseline (its `extensions` above all) is free-form, and everything after this point — the zod
  // parse, the task's serialisation, normalisation — recurses over it.
  const maxDepth = instance.limits.maxNestingDepth + REQUEST_EXTRA_DEPTH;
  const shape = findShapeProblem(raw, maxDepth);
  if (shape?.kind === 'too_deep')
    throw inputInvalid(
      [{ path: shape.pointer, message: `The request nests deeper than ${maxDepth} levels of arrays and objects.` }],
      `The request nests deeper than ${maxDepth} levels of arrays and objects at "${shape.pointer}"; flatten it (a "baseline" is the "effective" of an earlier result, unchanged).`,
    );
  if (shape?.kind === 'not_json')
    throw inputInvalid(
      [{ path: shape.pointer, message: 'Expected a JSON value (no bigint, function or symbol).' }],
      `The request holds a value JSON cannot carry at "${shape.pointer}"; send only strings, numbers, booleans, null, arrays and objects.`,
    );
  const parsed = NativeRequestSchema.safeParse(raw);
  if (!parsed.success) throw schemaProblem(parsed.error.issues, raw);
  const request = parsed.data;

  const trimmed = request.input.trim();
  if (trimmed.length === 0)
    throw inputInvalid(
      [{ path: '/input', message: 'The input is empty.' }],
      'The request "input" is empty; send the user\'s message as a non-empty string.',
    );
  if (trimmed.length > limits.maxInputChars)
    throw inputInvalid(
      [{ path: '/input', message: `The input is longer than ${limits.maxInputChars} characters.` }],
      `The request "input" is longer than ${limits.maxInputChars} characters after trimming; shorten it.`,
    );

  const context = request.context ?? [];
  if (context.length > limits.maxContextItems)
    throw inputInvalid(
      [{ path: '/context', message: `At most ${limits.maxContextItems} context items are allowed.` }],
      `The request "context" has ${context.length} items, more than the limit of ${limits.maxContextItems}; send only the most recent ones.`,
    );

  const longItem = context.findIndex((item) => item.text.length > limits.maxContextItemChars);
  if (longItem >= 0)
    throw inputInvalid(
      [
        {
          path: `/context/${longItem}/text`,
          message: `The text is longer than ${limits.maxContextItemChars} characters.`,
        },
      ],
      `The request "context" item ${longItem} is longer than ${limits.maxContextItemChars} characters; shorten its text or leave the item out.`,
    );

  const selected = selectFields(instance, request.fields ?? []);
  const baseline = request.baseline;
  if (baseline !== undefined) checkBaselineIds(baseline);

  const language = chooseLanguage(request.input, request.output?.language, instance.language);
  const explicitReferenceTime = request.referenceTime !== undefined;
  const referenceTime = request.referenceTime ?? now.toISOString();
  const plan = instance.plan(selected, baseline !== undefined);

  const material: TaskMaterial = {
    input: request.input,
    fields: selected.map((f) => f.task),
    context,
  } as TaskMaterial;
  if (baseline !== undefined) material.baseline = baseline;
  material.referenceTime = referenceTime;
  material.language = language;

  return {
    instance,
    request,
    normalizedInput: normalizeText(request.input),
    language,
    referenceTime,
    explicitReferenceTime,
    baseline,
    plan,
    task: { instructions: plan.instructions[language], input: material, outputSchema: plan.outputSchema },
  };
}

function selectFields(instance: InstanceModel, names: readonly string[]): ResolvedField[] {
  const seen = new Set<string>();
  const out: ResolvedField[] = [];
  names.forEach((name, index) => {
    const path = toPointer(['fields', index]);
    if (seen.has(name))
      throw inputInvalid(
        [{ path, message: `The field ${quoteCaller(name)} is selected twice.` }],
        `The request selects the field ${quoteCaller(name)} twice in "fields"; list each field once.`,
      );
    seen.add(name);
    const field = instance.fields.get(name);
    if (field === undefined) {
      const known = [...instance.fields.keys()];
      throw inputInvalid(
        [{ path, message: `Unknown field ${quoteCaller(name)}.` }],
        known.length === 0
          ? `The request selects the unknown field ${quoteCaller(name)} in "fields"; this instance has no schema, so no field can be selected.`
          : `The request selects the unknown field ${quoteCaller(name)} in "fields"; known fields: ${listFields(known)}.`,
      );
    }
    out.push(field);
  });
  return out;
}

function checkBaselineIds(baseline: EffectiveState): void {
  const seen = new Set<string>();
  // One path, pushed and popped: the pointer is built only for the duplicate, so the walk stays linear.
  const at: (string | number)[] = ['baseline'];
  const visit = (id: string, ...tail: (string | number)[]): void => {
    if (seen.has(id)) {
      const path = toPointer([...at, ...tail]);
      throw inputInvalid(
        [{ path, message: `The id ${quoteCaller(id)} appears twice in the baseline.` }],
        `The request "baseline" uses the id ${quoteCaller(id)} twice; pass back the "effective" of an earlier result unchanged.`,
      );
    }
    seen.add(id);
  };
  const walk = (intents: readonly IntentNode[]): void => {
    intents.forEach((intent, i) => {
      at.push(i);
      visit(intent.id, 'id');
      intent.constraints.forEach((c, j) => {
        visit(c.id, 'constraints', j, 'id');
      });
      at.push('children');
      walk(intent.children);
      at.length -= 2;
    });
  };
  at.push('intents');
  walk(baseline.intents);
  at.length = 1;
  baseline.constraints.forEach((c, j) => {
    visit(c.id, 'constraints', j, 'id');
  });
  baseline.relations.forEach((r, j) => {
    visit(r.id, 'relations', j, 'id');
  });
  baseline.unresolved.forEach((u, j) => {
    visit(u.id, 'unresolved', j, 'id');
  });
}
