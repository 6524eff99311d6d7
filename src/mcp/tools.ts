/**
 * The MCP tools (spec 04, "Tools"): names per mode, input/output JSON Schemas derived from the zod schemas, descriptions
 * a model can act on, truthful annotations, and the argument parsers built from the same zod schemas.
 */
import { z } from 'zod';
import { quoteCaller } from '../core/errors.js';
import { mcpErrors } from './errors.js';
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
    'End a prepared request you will not complete. reason: "refusal" if you decline the task, "incomplete" if your output was truncated, otherwise "cancelled". Returns the request status (cancelled, already_cancelled or already_completed).',
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

/** Builds the tool definitions of a mode. JSON Schemas come from the zod schemas, never written by hand. */
export function buildToolDefinitions(
  mode: IntentMcpMode,
  prefix: string,
  instanceNames: readonly string[],
): IntentMcpToolDefinition[] {
  const requestInput = toJson(requestArgsSchema(instanceNames), 'input');
  const schemas: Record<ToolKind, { input: JsonSchemaObject; output: JsonSchemaObject }> = {
    parse: { input: requestInput, output: toJson(IntentResultSchema, 'output') },
    prepare: { input: requestInput, output: toJson(HostTaskSchema, 'output') },
    accept: { input: toJson(AcceptArgsSchema, 'input'), output: toJson(IntentResultSchema, 'output') },
    cancel: { input: toJson(CancelArgsSchema, 'input'), output: toJson(HostCancelReplySchema, 'output') },
  };
  return TOOL_KINDS_BY_MODE[mode].map((kind) => ({
    name: prefix + BASE_TOOL_NAMES[kind],
    title: TITLES[kind],
    description: DESCRIPTIONS[kind],
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
