/**
 * A resolved, immutable instance model: validated configuration plus the per-request-shape caches the hot path uses
 * (compiled candidate schema, derived `outputSchema`, instructions).
 */
import { compilePattern } from './pattern.js';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { IntentError } from './errors.js';
import { toPointer, zodIssuesToFeedback } from './feedback.js';
import { buildCandidateSchema, toOutputSchema, type IntentCandidate } from './candidate.js';
import {
  IntentConfigBaseSchema,
  LimitsSchema,
  isValidName,
  type FieldSpec,
  type FieldType,
  type JsonSchemaObject,
  type Language,
  type LanguageOption,
  type Limits,
  type Scalar,
  type TaskField,
} from './schemas.js';
import { buildInstructions } from './instructions.js';

export interface ResolvedField {
  readonly name: string;
  readonly type: FieldType;
  readonly spec: FieldSpec;
  readonly required: boolean;
  readonly pattern: RegExp | undefined;
  /** `limits.maxPatternValueChars`: a longer string value is `pattern`-invalid without running the pattern. */
  readonly maxPatternValueChars: number;
  readonly task: TaskField;
}

/** What a request shape (selected fields + baseline or not) needs: built once, reused by every request of that shape. */
export interface CandidatePlan {
  readonly schema: z.ZodType<IntentCandidate>;
  readonly outputSchema: JsonSchemaObject;
  readonly fields: readonly ResolvedField[];
  readonly withBaseline: boolean;
  readonly instructions: Readonly<Record<Language, string>>;
}

export interface InstanceModel {
  readonly description: string | undefined;
  readonly instructions: string | undefined;
  readonly domains: readonly string[];
  readonly language: LanguageOption;
  readonly timeoutMs: number | undefined;
  readonly limits: Limits;
  /** Null-prototype map: field names come from configuration, never index a plain object with them. */
  readonly fields: ReadonlyMap<string, ResolvedField>;
  plan(fields: readonly ResolvedField[], withBaseline: boolean): CandidatePlan;
}

/** Plans are keyed by request shape; a bound keeps a caller that selects ever-new field combinations from growing it. */
const MAX_PLANS = 256;

/** Validates the serialisable part of an instance's options and resolves it. Throws `CONFIG_INVALID` naming the path. */
export function resolveInstance(options: unknown, at = 'options'): InstanceModel {
  checkRawFieldNames(options, at);
  const parsed = IntentConfigBaseSchema.safeParse(options);
  if (!parsed.success) {
    const items = zodIssuesToFeedback(parsed.error.issues, options);
    const first = items[0] ?? { path: '', message: 'invalid' };
    throw configInvalid(
      at + first.path,
      first.message,
      items.map((i) => ({ path: at + i.path, message: i.message })),
    );
  }
  const cfg = parsed.data;
  const limits = LimitsSchema.parse(cfg.limits ?? {});
  const fields = new Map<string, ResolvedField>();
  for (const [name, spec] of Object.entries(cfg.schema?.fields ?? {})) {
    const task: TaskField = {
      name,
      type: spec.type,
      description: spec.description ?? '',
      required: spec.required ?? false,
    };
    if (spec.enum !== undefined) task.enum = spec.enum;
    if (spec.pattern !== undefined) task.pattern = spec.pattern;
    if (spec.minimum !== undefined) task.minimum = spec.minimum;
    if (spec.maximum !== undefined) task.maximum = spec.maximum;
    if (spec.default !== undefined) task.default = spec.default;
    const resolved: ResolvedField = {
      name,
      type: spec.type,
      spec,
      required: spec.required ?? false,
      pattern: spec.pattern === undefined ? undefined : patternOf(spec.pattern),
      maxPatternValueChars: limits.maxPatternValueChars,
      task,
    };
    if (spec.default !== undefined) {
      const problem = checkFieldValue(resolved, spec.default);
      if (problem !== undefined) {
        const path = `${at}/schema/fields/${name}/default`;
        const why = `The default ${DEFAULT_PROBLEMS[problem]}.`;
        throw configInvalid(path, why, [{ path, message: why }]);
      }
    }
    fields.set(name, resolved);
  }

  // Plans per request shape (selected fields, with or without a baseline): the shapes a caller can ask for are many,
  // so they are kept in an LRU, not a map that grows with them.
  const plans = new LRUCache<string, CandidatePlan>({ max: MAX_PLANS });
  const model: InstanceModel = {
    description: cfg.description,
    instructions: cfg.instructions,
    domains: cfg.domains ?? [],
    language: cfg.language,
    timeoutMs: cfg.timeoutMs,
    limits,
    fields,
    plan(selected, withBaseline) {
      const key = (withBaseline ? 'b|' : 'n|') + selected.map((f) => f.name).join('\u0000');
      let plan = plans.get(key);
      if (plan === undefined) {
        const schema = z.compile(
          buildCandidateSchema(
            selected.map((f) => ({ name: f.name, type: f.type, description: f.spec.description })),
            withBaseline,
          ),
        );
        const shape = { withBaseline, hasFields: selected.length > 0 };
        plan = {
          schema,
          outputSchema: toOutputSchema(schema),
          fields: selected,
          withBaseline,
          instructions: {
            'zh-CN': buildInstructions(model, 'zh-CN', shape),
            en: buildInstructions(model, 'en', shape),
          },
        };
        plans.set(key, plan);
      }
      return plan;
    },
  };
  return model;
}

/** The compiled field pattern; the schema already refused one that does not compile. */
function patternOf(pattern: string): RegExp {
  const compiled = compilePattern(pattern);
  if (!compiled.ok) throw new Error(`pattern refused after validation: ${compiled.why}`);
  return compiled.regexp;
}

const DEFAULT_PROBLEMS: Readonly<Record<FieldProblem, string>> = {
  type: "has the wrong JSON type for the field's type",
  pattern: "does not match the field's pattern",
  enum: "is not one of the field's enum values",
  minimum: "is below the field's minimum",
  maximum: "is above the field's maximum",
  date: 'is not a valid YYYY-MM-DD date',
  datetime: 'is not a valid ISO 8601 date-time with an offset',
};

/** One sentence: where, what, and what to do next (spec 06). */
function configInvalid(path: string, problem: string, issues: { path: string; message: string }[]): IntentError {
  const what = problem.replace(/\.$/, '');
  const lowered = what.charAt(0).toLowerCase() + what.slice(1);
  return new IntentError(
    'CONFIG_INVALID',
    `Invalid instance configuration at ${path}: ${lowered}; fix it and create the instance again.`,
    { details: { issues } },
  );
}

/**
 * Field names are checked on the raw object: zod's record parsing treats a `__proto__` key as a prototype, not as a
 * name, so a schema validation alone would silently drop it.
 */
function checkRawFieldNames(options: unknown, at: string): void {
  const schema = (options as { schema?: unknown } | null)?.schema;
  const fields = (schema as { fields?: unknown } | null | undefined)?.fields;
  if (fields === null || typeof fields !== 'object') return;
  for (const name of Object.keys(fields)) {
    if (!isValidName(name)) {
      const path = `${at}/schema/fields${toPointer([name])}`;
      const why =
        'Field names use 1–64 characters from A–Z, a–z, 0–9, "_", "." and "-" and are not __proto__, prototype or constructor.';
      throw configInvalid(path, why, [{ path, message: why }]);
    }
  }
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

function validDate(y: number, m: number, d: number): boolean {
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
}

export type FieldProblem = 'pattern' | 'enum' | 'minimum' | 'maximum' | 'date' | 'datetime' | 'type';

/**
 * Content checks of a field value whose JSON type is already right: pattern, enum, range and date formats. A value that
 * breaks them is not a format error (spec 02): the field becomes `invalid` with an issue.
 */
export function checkFieldValue(field: ResolvedField, value: Scalar): FieldProblem | undefined {
  const spec = field.spec;
  switch (field.type) {
    case 'string':
      if (typeof value !== 'string') return 'type';
      // The pattern is trusted configuration but the value is caller text: bound what it runs on.
      if (field.pattern !== undefined && (value.length > field.maxPatternValueChars || !field.pattern.test(value)))
        return 'pattern';
      return undefined;
    case 'enum':
      if (typeof value !== 'string') return 'type';
      return spec.enum?.includes(value) === true ? undefined : 'enum';
    case 'integer':
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return 'type';
      if (field.type === 'integer' && !Number.isInteger(value)) return 'type';
      if (spec.minimum !== undefined && value < spec.minimum) return 'minimum';
      if (spec.maximum !== undefined && value > spec.maximum) return 'maximum';
      return undefined;
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'type';
    case 'date': {
      if (typeof value !== 'string') return 'type';
      const m = DATE.exec(value);
      return m !== null && validDate(Number(m[1]), Number(m[2]), Number(m[3])) ? undefined : 'date';
    }
    case 'datetime': {
      if (typeof value !== 'string') return 'type';
      if (!DATETIME.test(value)) return 'datetime';
      const d = value.slice(0, 10).split('-').map(Number);
      return validDate(d[0] ?? 0, d[1] ?? 0, d[2] ?? 0) && !Number.isNaN(Date.parse(value)) ? undefined : 'datetime';
    }
  }
}
