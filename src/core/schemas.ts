/**
 * The zod schemas of every public shape (spec 02 and 06). They are the single source of truth: TypeScript types are
 * inferred from them and every JSON Schema (tool input/output schemas, the model's `outputSchema`) is derived from them.
 */
import { compilePattern } from './pattern.js';
import { z } from 'zod';

export const SCHEMA_VERSION = '2.0-draft.6' as const;

/** The longest delay a Node timer takes (2^31 − 1 ms, about 24.8 days): the ceiling of every millisecond option. */
export const MAX_TIMER_MS = 2_147_483_647;

/** Names of instances, fields and the tool prefix: 1–64 of `[A-Za-z0-9_.-]`, never a prototype key. */
export const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
export const RESERVED_NAMES: ReadonlySet<string> = new Set(['__proto__', 'prototype', 'constructor']);
export const PREFIX_PATTERN = /^[A-Za-z0-9_.-]{0,64}$/;

export function isValidName(name: string): boolean {
  return NAME_PATTERN.test(name) && !RESERVED_NAMES.has(name);
}

export const NameSchema = z
  .string()
  .regex(NAME_PATTERN, 'use 1–64 characters from A–Z, a–z, 0–9, "_", "." and "-"')
  .refine((n) => !RESERVED_NAMES.has(n), 'the names __proto__, prototype and constructor are reserved');

export const LanguageSchema = z.enum(['zh-CN', 'en']);
export type Language = z.infer<typeof LanguageSchema>;
export const LanguageOptionSchema = z.enum(['auto', 'zh-CN', 'en']);
export type LanguageOption = z.infer<typeof LanguageOptionSchema>;

// ---------------------------------------------------------------------------------------------------------------------
// Limits and instance configuration

/** Bounds of `limits.maxNestingDepth`: the candidate shape needs the minimum; the maximum is stack-safe (tested). */
export const MIN_NESTING_DEPTH = 16;
export const MAX_NESTING_DEPTH = 128;
/** How many more levels a request may nest than a candidate (see `limits.maxNestingDepth`). */
export const REQUEST_EXTRA_DEPTH = 2;

/** Resource limits. Every key has a default; `IntentConfig.limits` and adapter `limits` override some of them. */
export const LimitsSchema = z
  .object({
    /** Longest `input` after trimming, in characters. */
    maxInputChars: z.int().min(1).max(10_000_000).default(20_000),
    /** Most `context` items in one request. */
    maxContextItems: z.int().min(0).max(10_000).default(50),
    /** Largest `candidateText`, in UTF-8 bytes. */
    maxCandidateBytes: z
      .int()
      .min(1)
      .max(64 * 1024 * 1024)
      .default(1024 * 1024),
    /** Most live (non-terminal) host requests per session; the next prepare gets `CAPACITY_EXCEEDED`. */
    maxPendingPerSession: z.int().min(1).max(1_000_000).default(64),
    /** Longest `text` of one `context` item, in characters; a longer one is `INPUT_INVALID` naming its index. */
    maxContextItemChars: z.int().min(1).max(10_000_000).default(20_000),
    /**
     * Deepest nesting of arrays and objects in a candidate (the root is 1); deeper is a correctable format error. The
     * request's arguments may nest two levels more, so that a result's `effective` passed back as `baseline` always
     * fits. The maximum keeps every recursive step after the check (zod, the walks, `JSON.stringify`) far from the
     * stack's end.
     */
    maxNestingDepth: z.int().min(MIN_NESTING_DEPTH).max(MAX_NESTING_DEPTH).default(64),
    /**
     * Longest string a field's `pattern` runs on, in characters: the pattern is configuration but the value is caller
     * text, so a longer value is `invalid` without running the pattern (any pattern stays polynomial in this bound).
     */
    maxPatternValueChars: z.int().min(1).max(100_000).default(1_000),
  })
  .strict();
export type Limits = z.infer<typeof LimitsSchema>;
/** Every limit's default: the one place the numbers live (the schema above), read once. */
export const LIMIT_DEFAULTS: Readonly<Limits> = Object.freeze(LimitsSchema.parse({}));
export const LimitsOverrideSchema = LimitsSchema.partial();
export type LimitsOverride = z.input<typeof LimitsOverrideSchema>;

export const FIELD_TYPES = ['string', 'integer', 'number', 'boolean', 'date', 'datetime', 'enum'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** A scalar a field (or an intent input) can hold. */
export const ScalarSchema = z.union([z.string(), z.number(), z.boolean()]);
export type Scalar = z.infer<typeof ScalarSchema>;

export const FieldSpecSchema = z
  .object({
    type: z.enum(FIELD_TYPES),
    description: z.string().max(2000).optional(),
    required: z.boolean().optional(),
    enum: z.array(z.string()).min(1).optional(),
    pattern: z.string().optional(),
    minimum: z.number().optional(),
    maximum: z.number().optional(),
    default: ScalarSchema.optional(),
  })
  .strict()
  .superRefine((spec, ctx) => {
    if (spec.type === 'enum' && spec.enum === undefined)
      ctx.addIssue({ code: 'custom', path: ['enum'], message: 'a field of type enum needs a non-empty "enum" list' });
    if (spec.enum !== undefined && spec.type !== 'enum')
      ctx.addIssue({ code: 'custom', path: ['enum'], message: '"enum" is only allowed on fields of type enum' });
    if (spec.enum !== undefined && new Set(spec.enum).size !== spec.enum.length)
      ctx.addIssue({ code: 'custom', path: ['enum'], message: '"enum" values must be unique' });
    if (spec.pattern !== undefined) {
      if (spec.type !== 'string')
        ctx.addIssue({
          code: 'custom',
          path: ['pattern'],
          message: '"pattern" is only allowed on fields of type string',
        });
      else {
        const compiled = compilePattern(spec.pattern);
        if (!compiled.ok)
          ctx.addIssue({
            code: 'custom',
            path: ['pattern'],
            message:
              compiled.why === 'syntax'
                ? '"pattern" is not a valid regular expression'
                : '"pattern" nests quantifiers (it can backtrack for minutes on a short value) and uses a backreference or lookaround, which the linear engine cannot run; remove the nested quantifier',
          });
      }
    }
    const numeric = spec.type === 'integer' || spec.type === 'number';
    for (const key of ['minimum', 'maximum'] as const) {
      if (spec[key] !== undefined && !numeric)
        ctx.addIssue({ code: 'custom', path: [key], message: `"${key}" is only allowed on integer and number fields` });
    }
    if (spec.minimum !== undefined && spec.maximum !== undefined && spec.minimum > spec.maximum)
      ctx.addIssue({ code: 'custom', path: ['minimum'], message: '"minimum" must not exceed "maximum"' });
  });
export type FieldSpec = z.infer<typeof FieldSpecSchema>;

export const InstanceSchemaSchema = z
  .object({
    fields: z.record(z.string(), FieldSpecSchema).superRefine((fields, ctx) => {
      for (const name of Object.keys(fields)) {
        if (!isValidName(name))
          ctx.addIssue({
            code: 'custom',
            path: [name],
            message: 'field names use 1–64 characters from A–Z, a–z, 0–9, "_", "." and "-" and are not reserved',
          });
      }
    }),
  })
  .strict();
export type InstanceSchema = z.infer<typeof InstanceSchemaSchema>;

/** How the standalone command calls a model in executor mode (spec 05). Secrets come only from `apiKeyEnv`. */
export const ExecutorConfigSchema = z
  .object({
    kind: z.literal('openai-compatible'),
    baseUrl: z.url({ protocol: /^https?$/ }),
    model: z.string().min(1),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .optional(),
    temperature: z.number().min(0).max(2).optional(),
    responseFormat: z.enum(['json_schema', 'json_object', 'text']).default('json_schema'),
    // The budget of one whole recognition through this executor (both calls, every retry): the default answers ahead
    // of the official MCP client's 60 s request timeout, which would otherwise give up first.
    timeoutMs: z.int().min(1).max(MAX_TIMER_MS).default(50_000),
    maxRetries: z.int().min(0).max(10).default(2),
    // Sent as `max_tokens`: a looping model stops here instead of generating until the deadline. A candidate is a
    // small JSON document; 4096 tokens leave room for large schemas and many intents.
    maxTokens: z.int().min(1).max(1_000_000).default(4096),
  })
  .strict();
export type ExecutorConfig = z.infer<typeof ExecutorConfigSchema>;

/** Fields shared by `IntentConfig` and the Native `IntentOptions` (everything but `executor`). */
export const IntentConfigBaseSchema = z
  .object({
    description: z.string().max(10_000).optional(),
    instructions: z.string().max(50_000).optional(),
    domains: z.array(z.string().min(1).max(200)).max(500).optional(),
    schema: InstanceSchemaSchema.optional(),
    timeoutMs: z.int().min(1).max(MAX_TIMER_MS).optional(),
    language: LanguageOptionSchema.default('auto'),
    limits: LimitsOverrideSchema.optional(),
  })
  .strict();

/** Serialisable instance configuration, as held in the standalone server's config file (spec 02). */
export const IntentConfigSchema = IntentConfigBaseSchema.extend({ executor: ExecutorConfigSchema.optional() }).strict();
export type IntentConfig = z.input<typeof IntentConfigSchema>;

// ---------------------------------------------------------------------------------------------------------------------
// The result model

export const SourceRefSchema = z
  .object({ root: z.enum(['input', 'context', 'baseline']), pointer: z.string() })
  .strict();
export type SourceRef = z.infer<typeof SourceRefSchema>;

/**
 * Ids number from 1 with at most 15 digits: the numbers stay exact in a JavaScript number (the next id is the highest
 * plus one; past 2^53 a baseline could make normalisation hand out an id it already holds), and an id is short.
 */
const idOf = (kind: string) =>
  z.string().regex(new RegExp(`^${kind}-[1-9][0-9]{0,14}$`), `must look like "${kind}-N" with N of at most 15 digits`);
export const IntentIdSchema = idOf('intent');
export const ConstraintIdSchema = idOf('constraint');
export const RelationIdSchema = idOf('relation');
export const UnresolvedIdSchema = idOf('unresolved');

export const CONSTRAINT_KINDS = ['prohibition', 'requirement', 'preference', 'condition', 'deadline', 'limit'] as const;
export const UNDERSTANDINGS = ['clear', 'partial', 'ambiguous', 'unclear'] as const;
export const RELATION_KINDS = ['sequence', 'condition', 'alternative', 'dependency'] as const;
export const UNRESOLVED_KINDS = ['ambiguity', 'missing_information', 'unknown_reference'] as const;
export const TURN_KINDS = ['request', 'followup', 'correction', 'cancellation', 'smalltalk'] as const;
export const COVERAGES = ['complete', 'partial', 'none'] as const;
export const REFERENCE_KINDS = ['baseline', 'context', 'input'] as const;

export const ConstraintScopeSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('intent'), intentId: IntentIdSchema }).strict(),
  z.object({ type: z.literal('request') }).strict(),
]);
export const ConstraintSchema = z
  .object({ id: ConstraintIdSchema, kind: z.enum(CONSTRAINT_KINDS), text: z.string(), scope: ConstraintScopeSchema })
  .strict();
export type Constraint = z.infer<typeof ConstraintSchema>;

export const ReferenceSchema = z
  .object({ kind: z.enum(REFERENCE_KINDS), id: z.string().optional(), text: z.string() })
  .strict();
export type Reference = z.infer<typeof ReferenceSchema>;

export const IntentInputsSchema = z.record(z.string(), z.union([ScalarSchema, z.null()]));

export interface IntentNode {
  id: string;
  domain: string | null;
  action: string;
  target: string | null;
  goal: string;
  understanding: (typeof UNDERSTANDINGS)[number];
  constraints: Constraint[];
  inputs: Record<string, Scalar | null>;
  references: Reference[];
  children: IntentNode[];
  extensions: Record<string, unknown>;
}
export const IntentSchema: z.ZodType<IntentNode> = z
  .object({
    id: IntentIdSchema,
    domain: z.string().nullable(),
    action: z.string(),
    target: z.string().nullable(),
    goal: z.string(),
    understanding: z.enum(UNDERSTANDINGS),
    constraints: z.array(ConstraintSchema),
    inputs: IntentInputsSchema,
    references: z.array(ReferenceSchema),
    get children() {
      return z.array(IntentSchema);
    },
    extensions: z.record(z.string(), z.unknown()),
  })
  .strict()
  .meta({ id: 'Intent' });

export const RelationSchema = z
  .object({
    id: RelationIdSchema,
    kind: z.enum(RELATION_KINDS),
    from: IntentIdSchema,
    to: IntentIdSchema,
    text: z.string().optional(),
  })
  .strict();
export type Relation = z.infer<typeof RelationSchema>;

export const UnresolvedSchema = z
  .object({
    id: UnresolvedIdSchema,
    kind: z.enum(UNRESOLVED_KINDS),
    text: z.string(),
    intentId: IntentIdSchema.optional(),
    options: z.array(z.string()).optional(),
  })
  .strict();
export type Unresolved = z.infer<typeof UnresolvedSchema>;

/** `effective`: the accumulated state after this turn; a later turn passes it back as `baseline`. */
export const EffectiveStateSchema = z
  .object({
    schemaVersion: z.literal(SCHEMA_VERSION),
    coverage: z.enum(COVERAGES),
    scope: z.enum(['current_request', 'conversation']),
    intents: z.array(IntentSchema),
    constraints: z.array(ConstraintSchema),
    relations: z.array(RelationSchema),
    unresolved: z.array(UnresolvedSchema),
  })
  .strict();
export type EffectiveState = z.infer<typeof EffectiveStateSchema>;

export const ItemKindSchema = z.enum(['intent', 'constraint', 'relation', 'unresolved']);
export type ItemKind = z.infer<typeof ItemKindSchema>;

export const ChangeSchema = z
  .object({
    operation: z.enum(['add', 'update', 'remove']),
    target: z.object({ kind: ItemKindSchema, id: z.string() }).strict(),
    description: z.string(),
    sourceRefs: z.array(SourceRefSchema),
    effect: z.enum(['applied', 'ignored']),
  })
  .strict();
export type Change = z.infer<typeof ChangeSchema>;

export const FieldResultSchema = z
  .object({
    field: z.string(),
    status: z.enum(['filled', 'missing', 'ambiguous', 'invalid']),
    value: ScalarSchema.optional(),
    candidates: z.array(ScalarSchema).optional(),
    sourceRefs: z.array(SourceRefSchema),
  })
  .strict();
export type FieldResult = z.infer<typeof FieldResultSchema>;

export const IssueTargetSchema = z
  .object({ kind: z.enum(['intent', 'constraint', 'relation', 'unresolved', 'field', 'change']), id: z.string() })
  .strict();
export const IssueSchema = z
  .object({
    code: z.string(),
    severity: z.enum(['info', 'warning', 'error']),
    message: z.string(),
    target: IssueTargetSchema.optional(),
  })
  .strict();
export type Issue = z.infer<typeof IssueSchema>;

export const InferenceSchema = z
  .object({
    kind: z.enum(['default', 'time']),
    target: z.object({ kind: z.enum(['field', 'request']), id: z.string() }).strict(),
    value: ScalarSchema,
    basis: z.string(),
  })
  .strict();
export type Inference = z.infer<typeof InferenceSchema>;

export const RESULT_STATUSES = ['complete', 'partial', 'needs_input', 'ambiguous', 'no_intent'] as const;

export const IsoDateTimeSchema = z.iso.datetime({ offset: true, local: false });

export const IntentResultSchema = z
  .object({
    schemaVersion: z.literal(SCHEMA_VERSION),
    input: z.string(),
    status: z.enum(RESULT_STATUSES),
    turn: z
      .object({
        kind: z.enum(TURN_KINDS),
        normalizedInput: z.string(),
        intentIds: z.array(IntentIdSchema),
        changes: z.array(ChangeSchema),
        facts: z.object({ referenceTime: IsoDateTimeSchema.optional() }).strict(),
      })
      .strict(),
    effective: EffectiveStateSchema,
    fieldResults: z.array(FieldResultSchema),
    issues: z.array(IssueSchema),
    inferences: z.array(InferenceSchema),
  })
  .strict();
export type IntentResult = z.infer<typeof IntentResultSchema>;
export type ResultStatus = IntentResult['status'];

// ---------------------------------------------------------------------------------------------------------------------
// The request

export const ContextItemSchema = z.object({ role: z.enum(['user', 'assistant', 'system']), text: z.string() }).strict();
export type ContextItem = z.infer<typeof ContextItemSchema>;

/**
 * The Native request (spec 02). Strict: any other key — `schema`, `executor`, `apiKey`, `signal`, `configPath`, `mode`
 * — is `INPUT_INVALID`. Length limits that depend on the instance are checked by `parseRequest`.
 */
export const NativeRequestSchema = z
  .object({
    input: z.string(),
    fields: z.array(z.string()).optional(),
    context: z.array(ContextItemSchema).optional(),
    baseline: EffectiveStateSchema.optional(),
    referenceTime: IsoDateTimeSchema.optional(),
    output: z.object({ language: LanguageOptionSchema.optional() }).strict().optional(),
  })
  .strict();
export type NativeRequest = z.infer<typeof NativeRequestSchema>;

// ---------------------------------------------------------------------------------------------------------------------
// The task

export const TaskFieldSchema = z
  .object({
    name: z.string(),
    type: z.enum(FIELD_TYPES),
    description: z.string(),
    required: z.boolean(),
    enum: z.array(z.string()).optional(),
    pattern: z.string().optional(),
    minimum: z.number().optional(),
    maximum: z.number().optional(),
    default: ScalarSchema.optional(),
  })
  .strict();
export type TaskField = z.infer<typeof TaskFieldSchema>;

/** The material a model works from: no secrets, no executor settings. */
export const TaskMaterialSchema = z
  .object({
    input: z.string(),
    fields: z.array(TaskFieldSchema),
    context: z.array(ContextItemSchema),
    baseline: EffectiveStateSchema.optional(),
    referenceTime: IsoDateTimeSchema,
    language: LanguageSchema,
  })
  .strict();
export type TaskMaterial = z.infer<typeof TaskMaterialSchema>;

export const JsonSchemaObjectSchema = z.record(z.string(), z.unknown());
export type JsonSchemaObject = Record<string, unknown>;

export const ModelTaskSchema = z
  .object({ instructions: z.string(), input: TaskMaterialSchema, outputSchema: JsonSchemaObjectSchema })
  .strict();
export type ModelTask = z.infer<typeof ModelTaskSchema>;

export const HostTaskSchema = z
  .object({
    kind: z.literal('model_task'),
    requestId: z.uuid(),
    submissionToken: z.string(),
    instructions: z.string(),
    input: TaskMaterialSchema,
    outputSchema: JsonSchemaObjectSchema,
    expiresAt: IsoDateTimeSchema.optional(),
  })
  .strict();
export type HostTask = z.infer<typeof HostTaskSchema>;

/** The reasons a host gives `intent_cancel` (spec 03); the machine adds its own (`CancelReason` in machines/). */
export const HostCancelReasonSchema = z.enum(['cancelled', 'refusal', 'incomplete']);
export type HostCancelReason = z.infer<typeof HostCancelReasonSchema>;

export const HostCancelReplySchema = z
  .object({
    requestId: z.string(),
    status: z.enum(['cancelled', 'already_cancelled', 'already_completed']),
    /** Present when the request had ended by passing its deadline (status `already_completed`). */
    reason: z.literal('expired').optional(),
  })
  .strict();
export type HostCancelReply = z.infer<typeof HostCancelReplySchema>;

export { SerializedIntentErrorSchema, FeedbackItemSchema } from './errors.js';
export type { SerializedIntentError, FeedbackItem } from './errors.js';

/** What an executor gets on its second call: its own previous candidate and what to fix in it. */
export const CandidateFeedbackSchema = z
  .object({
    candidateText: z.string(),
    issues: z.array(z.object({ path: z.string(), message: z.string() }).strict()),
  })
  .strict();
export type CandidateFeedback = z.infer<typeof CandidateFeedbackSchema>;
