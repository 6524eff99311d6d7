/**
 * Validating a Native request against an instance and turning it into a task (spec 02, "The request", "The task").
 */
import { IntentError, type FeedbackItem } from './errors.js';
import { toPointer, zodIssuesToFeedback } from './feedback.js';
import type { CandidatePlan, InstanceModel, ResolvedField } from './instance.js';
import { chooseLanguage, normalizeText } from './language.js';
import {
  NativeRequestSchema,
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
  return new IntentError('INPUT_INVALID', message, { details: { issues: items } });
}

function firstProblem(items: FeedbackItem[]): string {
  const first = items[0];
  if (first === undefined) return 'The request is invalid; check it against the tool input schema.';
  const unknown = /^Remove the key "(.*)"/.exec(first.message);
  if (unknown !== null && first.path.split('/').length === 2)
    return `The request has an unknown key "${unknown[1] ?? ''}"; remove it (allowed keys: ${REQUEST_KEYS.join(', ')}).`;
  return `The request is invalid at ${first.path === '' ? 'the top level' : `"${first.path}"`}: ${first.message}`;
}

/**
 * Validates `raw` as a Native request for `instance` and builds its task. `now` is the time of prepare, used as the
 * reference time when the request gives none. Throws `INPUT_INVALID` naming the offending key or field.
 */
/** Caps a caller (an adapter, say) puts on requests on top of the instance's own limits; the lower one applies. */
export type RequestCaps = Partial<Pick<Limits, 'maxInputChars' | 'maxContextItems'>>;

export function prepareRequest(
  instance: InstanceModel,
  raw: unknown,
  now: Date,
  caps: RequestCaps = {},
): PreparedRequest {
  const parsed = NativeRequestSchema.safeParse(raw);
  if (!parsed.success) {
    const items = zodIssuesToFeedback(parsed.error.issues, raw);
    throw inputInvalid(items, firstProblem(items));
  }
  const request = parsed.data;
  const limits = {
    maxInputChars: Math.min(instance.limits.maxInputChars, caps.maxInputChars ?? Infinity),
    maxContextItems: Math.min(instance.limits.maxContextItems, caps.maxContextItems ?? Infinity),
  };

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
        [{ path, message: `The field "${name}" is selected twice.` }],
        `The request selects the field "${name}" twice in "fields"; list each field once.`,
      );
    seen.add(name);
    const field = instance.fields.get(name);
    if (field === undefined) {
      const known = [...instance.fields.keys()];
      throw inputInvalid(
        [{ path, message: `Unknown field "${name}".` }],
        known.length === 0
          ? `The request selects the unknown field "${name}" in "fields"; this instance has no schema, so no field can be selected.`
          : `The request selects the unknown field "${name}" in "fields"; known fields: ${known.join(', ')}.`,
      );
    }
    out.push(field);
  });
  return out;
}

function checkBaselineIds(baseline: EffectiveState): void {
  const seen = new Set<string>();
  const visit = (id: string, path: string): void => {
    if (seen.has(id))
      throw inputInvalid(
        [{ path, message: `The id "${id}" appears twice in the baseline.` }],
        `The request "baseline" uses the id "${id}" twice; pass back the "effective" of an earlier result unchanged.`,
      );
    seen.add(id);
  };
  const walk = (intents: readonly IntentNode[], path: string): void => {
    intents.forEach((intent, i) => {
      const at = `${path}/${i}`;
      visit(intent.id, `${at}/id`);
      intent.constraints.forEach((c, j) => {
        visit(c.id, `${at}/constraints/${j}/id`);
      });
      walk(intent.children, `${at}/children`);
    });
  };
  walk(baseline.intents, '/baseline/intents');
  baseline.constraints.forEach((c, j) => {
    visit(c.id, `/baseline/constraints/${j}/id`);
  });
  baseline.relations.forEach((r, j) => {
    visit(r.id, `/baseline/relations/${j}/id`);
  });
  baseline.unresolved.forEach((u, j) => {
    visit(u.id, `/baseline/unresolved/${j}/id`);
  });
}
