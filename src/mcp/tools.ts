/**
 * The MCP tools (spec 04, "Tools"): names per mode, input/output JSON Schemas derived from the zod schemas, descriptions
 * a model can act on, truthful annotations, and the argument parsers built from the same zod schemas.
 */
import { z } from 'zod';
import { quoteCaller } from '../core/errors.js';
import { mcpErrors } from './errors.js';
import { withToolPrefix } from '../engine/replies.js';
import { unknownTopLevelKey, zodIssuesToFeedback } from '../core/feedback.js';
import {
  HostCancelReasonSchema,
  HostCancelReplySchema,
  HostTaskSchema,
  IntentResultSchema,
  NativeRequestSchema,
  type JsonSchemaObject,
} from '../core/schemas.js';

export type IntentMcpMode = 'executor' | 'host';
export type ToolKind = 'parse' | 'prepare' | 'accept' | 'cancel';

export const TOOL_KINDS_BY_MODE: Readonly<Record<IntentMcpMode, readonly ToolKind[]>> = {
  executor: ['parse'],
  host: ['prepare', 'accept', 'cancel'],
};

export const BASE_TOOL_NAMES: Readonly<Record<ToolKind, string>> = {
  parse: 'intent_parse',
  prepare: 'intent_prepare',
  accept: 'intent_accept',
  cancel: 'intent_cancel',
};

/** Tool annotations (MCP `ToolAnnotations`), set truthfully per tool. */
export interface IntentMcpToolAnnotations {
  title?: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface IntentMcpToolDefinition {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: JsonSchemaObject;
  readonly outputSchema: JsonSchemaObject;
  readonly annotations: IntentMcpToolAnnotations;
}

const toJson = (schema: z.ZodType, io: 'input' | 'output'): JsonSchemaObject =>
  z.toJSONSchema(schema, { target: 'draft-2020-12', io });

/**
 * Longest `requestId` / `submissionToken` accepted (ours are 36 and 43 characters): a longer one cannot name a request,
 * and bounding it here keeps every later reply that carries the requestId small.
 */
export const MAX_HANDLE_CHARS = 256;

/** `intent_accept` arguments. `candidateText` must be the candidate as one string (spec 04). */
export const AcceptArgsSchema = z
  .object({
    requestId: z.string().max(MAX_HANDLE_CHARS).describe('the requestId from intent_prepare'),
    submissionToken: z.string().max(MAX_HANDLE_CHARS).describe('the submissionToken from intent_prepare'),
    candidateText: z
      .string()
      .describe('the complete candidate: one JSON document following the task outputSchema, sent as a string'),
  })
  .strict();

/** `intent_cancel` arguments. */
export const CancelArgsSchema = z
  .object({
    requestId: z.string().max(MAX_HANDLE_CHARS).describe('the requestId from intent_prepare'),
    reason: HostCancelReasonSchema.optional().describe(
      '"cancelled" (default), "refusal" when you will not write the candidate, "incomplete" when your output was cut off',
    ),
  })
  .strict();

/** The request tools' arguments: the Native request plus `instance` (an enum of the configured names). */
export function requestArgsSchema(instanceNames: readonly string[]) {
  const names = z.enum(instanceNames as [string, ...string[]]).describe('which configured recognizer to use');
  return NativeRequestSchema.extend({
    instance: instanceNames.length === 1 ? names.optional() : names,
  }).strict();
}

const DESCRIPTIONS: Readonly<Record<ToolKind, string>> = {
  parse:
    'Recognise the intents in a natural-language request and return a structured IntentResult (intents, constraints, relations, open questions, selected fields). Pass the user message as "input"; optionally earlier turns as "context", the previous result\'s "effective" as "baseline" for a follow-up turn, and "fields" to extract fields of the instance schema. The server calls its configured model itself.',
  prepare:
    'Start a recognition that YOU (the calling model) complete: returns a model_task with "instructions", "input" material and an "outputSchema". Write exactly one JSON document following outputSchema from that material (never guess the final result shape, never invent values), then submit it with intent_accept using the returned requestId and submissionToken. If you cannot or will not write it, call intent_cancel.',
  accept:
    'Submit your candidate for a prepared request: "candidateText" is the whole JSON document as a string. Returns the IntentResult. On a CANDIDATE_INVALID error fix exactly the listed issues once and resubmit the whole document; never invent missing information to "fix" it. Do not resubmit after CANDIDATE_REJECTED, HANDOFF_EXPIRED or HANDOFF_NOT_FOUND: prepare again instead. Resubmitting the same candidate replays the same reply.',
  cancel:
    'End a prepared request you will not complete. reason: "refusal" if you decline the task, "incomplete" if your output was truncated, otherwise "cancelled". Returns the request status (cancelled, already_cancelled or already_completed, with reason "expired" when its deadline had passed).',
};

const TITLES: Readonly<Record<ToolKind, string>> = {
  parse: 'Recognise intents',
  prepare: 'Prepare an intent recognition task',
  accept: 'Submit an intent candidate',
  cancel: 'Cancel an intent recognition',
};

const ANNOTATIONS: Readonly<Record<ToolKind, IntentMcpToolAnnotations>> = {
  // Calls the instance's model: nothing in the caller's world changes, but an external model is reached and its
  // output is not deterministic.
  parse: { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  // Creates a live request on the server each call.
  prepare: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  // Moves the request forward; the same candidate again replays the same reply.
  accept: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  // Ends the request for good; cancelling again answers already_cancelled.
  cancel: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
};

/**
 * What `tools/list` says of a request's `baseline`: its role, not the whole result schema (which every host model would
 * read on every listing). The server validates a baseline against that whole schema all the same.
 */
const BASELINE_SUMMARY: JsonSchemaObject = {
  type: 'object',
  description:
    'for a follow-up turn: the previous IntentResult\'s "effective" object, passed back unchanged (validated in full by the server)',
};

/** How many levels of an output schema `tools/list` spells out; deeper parts say only their JSON type. */
const OUTPUT_SCHEMA_DEPTH = 1;

/**
 * A looser, shorter form of a JSON Schema for `tools/list`: the first `depth` levels of properties as they are, deeper
 * subschemas (and `$ref`s) reduced to their JSON type, `pattern`s dropped, `oneOf` read as `anyOf`. It only ever
 * drops constraints, so everything the full schema accepts it accepts too: a client validating structured content
 * against it never refuses a reply the server sends. The replies themselves are built and checked with the full zod
 * schemas.
 */
export function compactSchema(schema: JsonSchemaObject, depth: number): JsonSchemaObject {
  const defs = (schema['$defs'] ?? {}) as Record<string, JsonSchemaObject>;
  const typeOnly = (node: JsonSchemaObject): JsonSchemaObject => {
    const target = typeof node['$ref'] === 'string' ? defs[node['$ref'].replace('#/$defs/', '')] : node;
    const type = target?.['type'];
    return type === undefined ? {} : { type };
  };
  const walk = (node: unknown, level: number): unknown => {
    if (Array.isArray(node)) return node.map((item) => walk(item, level));
    if (node === null || typeof node !== 'object') return node;
    const object = node as JsonSchemaObject;
    if (typeof object['$ref'] === 'string') return typeOnly(object);
    const out: JsonSchemaObject = {};
    for (const [key, value] of Object.entries(object)) {
      if (key === '$defs' || key === 'pattern') continue;
      if (key === 'properties' && value !== null && typeof value === 'object') {
        out[key] = Object.fromEntries(
          Object.entries(value as Record<string, JsonSchemaObject>).map(([name, sub]) => [
            name,
            level >= depth ? typeOnly(sub) : walk(sub, level + 1),
          ]),
        );
      } else if (key === 'items' || key === 'additionalProperties' || key === 'propertyNames') {
        out[key] =
          typeof value === 'object' && value !== null && level >= depth
            ? typeOnly(value as JsonSchemaObject)
            : walk(value, level);
      } else if (key === 'oneOf' || key === 'anyOf' || key === 'allOf') {
        // Loosened branches may overlap, which oneOf would refuse.
        out[key === 'oneOf' ? 'anyOf' : key] = walk(value, level);
      } else out[key] = value;
    }
    return out;
  };
  return walk(schema, 0) as JsonSchemaObject;
}

/** The request tools' input schema as listed: the whole request schema, with the baseline described, not embedded. */
function listedRequestSchema(instanceNames: readonly string[]): JsonSchemaObject {
  const full = toJson(requestArgsSchema(instanceNames), 'input');
  const properties = { ...(full['properties'] as Record<string, JsonSchemaObject>), baseline: BASELINE_SUMMARY };
  const listed: JsonSchemaObject = { ...full, properties };
  // The result schema's definitions were only there for the baseline.
  if (!JSON.stringify(properties).includes('"$ref"')) delete listed['$defs'];
  return listed;
}

/** Builds the tool definitions of a mode. JSON Schemas come from the zod schemas, never written by hand. */
export function buildToolDefinitions(
  mode: IntentMcpMode,
  prefix: string,
  instanceNames: readonly string[],
): IntentMcpToolDefinition[] {
  const requestInput = listedRequestSchema(instanceNames);
  const output = (schema: z.ZodType): JsonSchemaObject => compactSchema(toJson(schema, 'output'), OUTPUT_SCHEMA_DEPTH);
  const result = output(IntentResultSchema);
  const schemas: Record<ToolKind, { input: JsonSchemaObject; output: JsonSchemaObject }> = {
    parse: { input: requestInput, output: result },
    prepare: { input: requestInput, output: output(HostTaskSchema) },
    accept: { input: toJson(AcceptArgsSchema, 'input'), output: result },
    cancel: { input: toJson(CancelArgsSchema, 'input'), output: output(HostCancelReplySchema) },
  };
  return TOOL_KINDS_BY_MODE[mode].map((kind) => ({
    name: prefix + BASE_TOOL_NAMES[kind],
    title: TITLES[kind],
    // The descriptions name the other tools; under a prefix they are listed as prefix + name.
    description: withToolPrefix(DESCRIPTIONS[kind], prefix),
    inputSchema: schemas[kind].input,
    outputSchema: schemas[kind].output,
    annotations: { ...ANNOTATIONS[kind] },
  }));
}

/** Parses tool arguments with a zod schema; failures are `INPUT_INVALID` naming the first offending key. */
export function parseArgs<T>(schema: z.ZodType<T>, args: unknown, tool: string): T {
  const parsed = schema.safeParse(args);
  if (parsed.success) return parsed.data;
  const items = zodIssuesToFeedback(parsed.error.issues, args);
  const first = items[0];
  const unknown = unknownTopLevelKey(parsed.error.issues);
  let message = `The arguments of ${tool} are invalid; check them against the tool's inputSchema.`;
  if (args === null || typeof args !== 'object' || Array.isArray(args))
    message = `The arguments of ${tool} must be a JSON object; check them against the tool's inputSchema.`;
  else if (unknown !== undefined)
    message = `The arguments of ${tool} have an unknown key ${quoteCaller(unknown)}; remove it.`;
  else if (first !== undefined) message = `The arguments of ${tool} are invalid at "${first.path}": ${first.message}`;
  return rejectInput(message, items);
}

function rejectInput(message: string, issues: { path: string; message: string }[]): never {
  throw mcpErrors.arguments(message, issues);
}

/** `intent_accept` arguments, with the spec's own message for a candidate sent as an object instead of a string. */
export function parseAcceptArgs(args: unknown, tool: string) {
  if (args !== null && typeof args === 'object' && !Array.isArray(args)) {
    const text = (args as Record<string, unknown>)['candidateText'];
    if (text !== undefined && typeof text !== 'string')
      rejectInput(
        `The candidateText of ${tool} must be a string: send the complete candidate as one JSON string, not as an object.`,
        [{ path: '/candidateText', message: 'Send the complete candidate as a JSON string.' }],
      );
  }
  return parseArgs(AcceptArgsSchema, args, tool);
}
