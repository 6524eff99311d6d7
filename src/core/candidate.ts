/**
 * The candidate a model writes (spec 02, "The candidate"), its request-narrowed zod schema and the `outputSchema`
 * derived from it.
 *
 * Two deliberate choices, both forced by OpenAI strict structured outputs (every object closed, every property
 * required, no free-form maps), so that `responseFormat: "json_schema"` works with the `outputSchema` as is:
 * - Optional keys (those spec 02 writes with `?`) are `null` unions in the `outputSchema` and listed as required. The
 *   validator is tolerant in one direction only: an optional key may also be left out (absent means null). This is
 *   what lets the seed's own candidate, which omits every optional key, validate. A required key whose value may be
 *   null (`CandidateIntent.domain` and `target`: `string|null`, no `?`) must be present: `null` says "none applies",
 *   which a missing key does not say.
 * - `CandidateIntent.inputs` is a list of `{ name, value }` entries rather than a map; the result turns it back into
 *   the `inputs` record of spec 02. `baselineChanges[].set` is one closed object whose keys are all nullable
 *   (null = leave unchanged).
 */
import { z } from 'zod';
import {
  CONSTRAINT_KINDS,
  COVERAGES,
  REFERENCE_KINDS,
  RELATION_KINDS,
  TURN_KINDS,
  UNDERSTANDINGS,
  UNRESOLVED_KINDS,
  type FieldType,
  type JsonSchemaObject,
} from './schemas.js';

export const CandidateConstraintSchema = z
  .object({
    kind: z.enum(CONSTRAINT_KINDS).describe('prohibition, requirement, preference, condition, deadline or limit'),
    text: z.string().describe('the constraint in the user’s own words'),
  })
  .strict();

export const CandidateInputEntrySchema = z
  .object({
    name: z.string().describe('name of a parameter the user gave for this intent'),
    value: z.union([z.string(), z.number(), z.boolean(), z.null()]),
  })
  .strict();

export const CandidateReferenceSchema = z
  .object({
    kind: z.enum(REFERENCE_KINDS),
    id: z.string().nullish().describe('id of the baseline item referred to, or null'),
    text: z.string(),
  })
  .strict();

export interface CandidateIntentShape {
  ref?: string | null | undefined;
  domain: string | null;
  action: string;
  target: string | null;
  goal: string;
  understanding: (typeof UNDERSTANDINGS)[number];
  constraints?: z.infer<typeof CandidateConstraintSchema>[] | null | undefined;
  inputs?: z.infer<typeof CandidateInputEntrySchema>[] | null | undefined;
  references?: z.infer<typeof CandidateReferenceSchema>[] | null | undefined;
  children?: CandidateIntentShape[] | null | undefined;
}

export const CandidateIntentSchema: z.ZodType<CandidateIntentShape> = z
  .object({
    ref: z.string().nullish().describe('a label of your choice, used by relations and unresolved; or null'),
    domain: z.string().nullable().describe('the business domain, or null when none applies'),
    action: z.string().describe('the verb: what the user wants done'),
    target: z.string().nullable().describe('what the action applies to, or null'),
    goal: z.string().describe('one sentence: the outcome the user wants'),
    understanding: z.enum(UNDERSTANDINGS),
    constraints: z.array(CandidateConstraintSchema).nullish().describe('constraints that belong to this intent'),
    inputs: z.array(CandidateInputEntrySchema).nullish().describe('parameters the user stated for this intent'),
    references: z.array(CandidateReferenceSchema).nullish(),
    get children() {
      return z.array(CandidateIntentSchema).nullish().describe('sub-intents of this intent');
    },
  })
  .strict()
  .meta({ id: 'CandidateIntent' });

export const CandidateRelationSchema = z
  .object({
    kind: z.enum(RELATION_KINDS),
    from: z.string().describe('the ref of an intent in this candidate, or a baseline intent id'),
    to: z.string().describe('the ref of an intent in this candidate, or a baseline intent id'),
    text: z.string().nullish(),
  })
  .strict();

export const CandidateUnresolvedSchema = z
  .object({
    kind: z.enum(UNRESOLVED_KINDS),
    text: z.string().describe('what is unclear or missing, as a question to the user'),
    intentRef: z.string().nullish().describe('the ref of the intent this concerns, or null'),
    options: z.array(z.string()).nullish().describe('the possible readings, when there are some'),
  })
  .strict();

export const BaselineChangeSchema = z
  .object({
    operation: z.enum(['update', 'remove']),
    target: z
      .object({ kind: z.enum(['intent', 'constraint']), id: z.string().describe('an id from the baseline') })
      .strict(),
    set: z
      .object({
        domain: z.string().nullish(),
        action: z.string().nullish(),
        target: z.string().nullish(),
        goal: z.string().nullish(),
        understanding: z.enum(UNDERSTANDINGS).nullish(),
        kind: z.enum(CONSTRAINT_KINDS).nullish(),
        text: z.string().nullish(),
      })
      .strict()
      .nullish()
      .describe(
        'for update: the new values; null keys stay unchanged. Intents take domain/action/target/goal/understanding, constraints take kind/text',
      ),
    text: z.string().nullish().describe('why, in the user’s words'),
  })
  .strict();
export type BaselineChange = z.infer<typeof BaselineChangeSchema>;

/** The JSON value type a field of each `FieldSpec.type` holds in a candidate (range/pattern/enum are content checks). */
export function fieldValueSchema(type: FieldType): z.ZodType<string | number | boolean> {
  switch (type) {
    case 'integer':
      return z.number().int();
    case 'number':
      return z.number();
    case 'boolean':
      return z.boolean();
    case 'string':
    case 'date':
    case 'datetime':
    case 'enum':
      return z.string();
  }
}

export function candidateFieldSchema(valueSchema: z.ZodType<string | number | boolean>, description?: string) {
  return z
    .object({
      status: z.enum(['filled', 'missing', 'ambiguous']),
      value: valueSchema.nullish().describe('the value when filled, else null'),
      candidates: z.array(valueSchema).nullish().describe('the possible values when ambiguous, else null'),
      evidence: z.string().nullish().describe('the exact words of the input the value comes from, or null'),
    })
    .strict()
    .describe(description ?? 'a selected field');
}

const candidateBase = {
  turnKind: z.enum(TURN_KINDS),
  coverage: z.enum(COVERAGES),
  intents: z.array(CandidateIntentSchema),
  constraints: z
    .array(CandidateConstraintSchema)
    .nullish()
    .describe('request-level constraints, not tied to one intent'),
  relations: z.array(CandidateRelationSchema).nullish(),
  unresolved: z.array(CandidateUnresolvedSchema).nullish(),
};

/** The general candidate shape (any field names). Per request, {@link buildCandidateSchema} narrows it. */
export const IntentCandidateSchema = z
  .object({
    ...candidateBase,
    fields: z.record(z.string(), candidateFieldSchema(z.union([z.string(), z.number(), z.boolean()]))).nullish(),
    baselineChanges: z.array(BaselineChangeSchema).nullish(),
  })
  .strict();
export type IntentCandidate = z.infer<typeof IntentCandidateSchema>;
export type CandidateIntent = CandidateIntentShape;

export interface CandidateSchemaField {
  readonly name: string;
  readonly type: FieldType;
  readonly description?: string | undefined;
}

/**
 * The candidate schema narrowed to one request: `fields` lists exactly the selected fields with their JSON types;
 * `baselineChanges` exists only when a baseline was given.
 */
export function buildCandidateSchema(fields: readonly CandidateSchemaField[], withBaseline: boolean) {
  const fieldShape: Record<string, z.ZodType> = {};
  for (const f of fields) fieldShape[f.name] = candidateFieldSchema(fieldValueSchema(f.type), f.description);
  const shape: Record<string, z.ZodType> = {
    ...candidateBase,
    fields: z.object(fieldShape).strict().nullish().describe('one entry per selected field'),
  };
  if (withBaseline) shape['baselineChanges'] = z.array(BaselineChangeSchema).nullish();
  return z.object(shape).strict() as unknown as z.ZodType<IntentCandidate>;
}

/**
 * The JSON Schema (draft 2020-12) a model is given. Derived from the zod schema; then every object lists all of its
 * properties as required (they already admit null where optional), as OpenAI strict structured outputs demand.
 */
export function toOutputSchema(schema: z.ZodType): JsonSchemaObject {
  return z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io: 'output',
    unrepresentable: 'throw',
    override: ({ jsonSchema }) => {
      const props = jsonSchema.properties;
      if (jsonSchema.type === 'object' && props !== undefined) {
        jsonSchema.required = Object.keys(props);
        jsonSchema.additionalProperties = false;
      }
      // z.number().int() carries the safe-integer range; it adds nothing for a model and strict mode need not see it.
      if (jsonSchema.type === 'integer') {
        delete jsonSchema.minimum;
        delete jsonSchema.maximum;
      }
    },
  });
}
