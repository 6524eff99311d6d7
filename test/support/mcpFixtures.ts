/**
 * Shared material for the MCP tests (test/mcp/*): the seed fixtures, candidates, scripted executors, envelope
 * assertions for results returned by `session.callTool`, and the command that runs the mounted stdio server.
 */
import { readFileSync } from 'node:fs';
import { expect, vi } from 'vitest';
import { ERROR_CATEGORIES, ERROR_CODES, type IntentErrorCode, type SerializedIntentError } from '../../src/index.js';
import type { ExecutorContext, IntentExecutor } from '../../src/core/executor.js';
import type { ModelTask } from '../../src/core/schemas.js';
import type { IntentMcpToolResult } from '../../src/mcp/envelopes.js';

export const fixture = (name: string): string => readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8');

/** The seed `tools/call` request for `intent_parse` (spec 01). */
export const SEED_CALL = JSON.parse(fixture('seed-executor-request.json')) as {
  params: { name: string; arguments: { input: string } };
};
/** The seed tool arguments: `{ input }`. */
export const SEED_ARGS: { input: string } = SEED_CALL.params.arguments;
/** The seed candidate, byte for byte. */
export const SEED_CANDIDATE = fixture('seed-candidate.json');
/** The seed reply file, byte for byte (pretty-printed with two spaces, no trailing newline). */
export const SEED_REPLY_FILE = fixture('seed-executor-reply.json');
/** The seed reply as an object. */
export const SEED_REPLY = JSON.parse(SEED_REPLY_FILE) as {
  content: [{ type: 'text'; text: string }];
  structuredContent: Record<string, unknown>;
  isError: false;
};
/** `content[0].text` of the seed reply. */
export const SEED_RESULT_TEXT = SEED_REPLY.content[0].text;

/** A correctable format error: `coverage` and `intents` are missing. */
export const INVALID_CANDIDATE = '{"turnKind":"request"}';
/** A second correctable format error with different bytes. */
export const OTHER_INVALID_CANDIDATE = '{"turnKind":"request","coverage":"complete"}';

export const PROTOCOL_REVISIONS = ['2025-06-18', '2025-11-25', '2026-07-28'] as const;
export type Revision = (typeof PROTOCOL_REVISIONS)[number];

/** How to run test/support/mountedStdioServer.ts (an McpServer with `echo` and the host tools, on stdio). */
export const MOUNTED_STDIO_SERVER = {
  command: process.execPath,
  args: ['--import', 'tsx', 'test/support/mountedStdioServer.ts'],
};

export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** An executor answering from a script, one text per call; it records every task and context it is given. */
export function scriptedExecutor(...texts: string[]) {
  const calls: { task: ModelTask; ctx: ExecutorContext }[] = [];
  const executor = vi.fn<IntentExecutor>((task, ctx) => {
    calls.push({ task, ctx });
    const text = texts[calls.length - 1];
    return text === undefined ? Promise.reject(new Error('script exhausted')) : Promise.resolve(text);
  });
  return { executor, calls };
}

/** An executor that never answers on its own: it resolves `called` and rejects once its signal aborts. */
export function hangingExecutor() {
  const called = deferred<AbortSignal>();
  const aborted = deferred<AbortSignal>();
  const executor = vi.fn<IntentExecutor>(
    (_task, ctx) =>
      new Promise<string>((_resolve, reject) => {
        ctx.signal.addEventListener(
          'abort',
          () => {
            aborted.resolve(ctx.signal);
            reject(new Error('aborted by the caller'));
          },
          { once: true },
        );
        called.resolve(ctx.signal);
      }),
  );
  return { executor, called: called.promise, aborted: aborted.promise };
}

/** An executor that fails the test if anything calls it (host mode must never reach a model). */
export function forbiddenExecutor() {
  return vi.fn<IntentExecutor>(() => Promise.reject(new Error('host mode called the executor')));
}

/** The keys an adapter envelope must have, in order, for a revision. */
function envelopeKeys(kind: 'success' | 'error', revision: Revision): string[] {
  const keys = kind === 'success' ? ['content', 'structuredContent', 'isError'] : ['content', 'isError'];
  return revision === '2026-07-28' ? [...keys, 'resultType'] : keys;
}

/** Asserts a success envelope as spec 04 draws it and returns its `structuredContent`. */
export function successOf(result: IntentMcpToolResult | undefined, revision: Revision): Record<string, unknown> {
  expect(result, 'callTool resolved to undefined').toBeDefined();
  if (result === undefined) throw new Error('unreachable');
  expect(result.isError, result.content[0].text).toBe(false);
  expect(Object.keys(result)).toEqual(envelopeKeys('success', revision));
  expect(result.content).toHaveLength(1);
  expect(result.content[0].type).toBe('text');
  expect(JSON.parse(result.content[0].text)).toEqual(result.structuredContent);
  if (revision === '2026-07-28') expect(result.resultType).toBe('complete');
  return result.structuredContent ?? {};
}

/**
 * Asserts a technical-failure envelope (no `structuredContent`, text = `{"error": ...}` and nothing else) with `code`,
 * and returns the serialised error.
 */
export function errorOf(
  result: IntentMcpToolResult | undefined,
  code: IntentErrorCode,
  revision: Revision = '2025-11-25',
): SerializedIntentError {
  expect(result, 'callTool resolved to undefined').toBeDefined();
  if (result === undefined) throw new Error('unreachable');
  expect(result.isError).toBe(true);
  expect(Object.keys(result)).toEqual(envelopeKeys('error', revision));
  expect(result).not.toHaveProperty('structuredContent');
  expect(result.content).toHaveLength(1);
  expect(result.content[0].type).toBe('text');
  const wire = JSON.parse(result.content[0].text) as { error: SerializedIntentError };
  expect(Object.keys(wire)).toEqual(['error']);
  expectSerializedError(wire.error);
  expect(wire.error.code, result.content[0].text).toBe(code);
  return wire.error;
}

/** A well-formed `SerializedIntentError` (spec 06): known code and category, a message, no stack trace. */
export function expectSerializedError(error: SerializedIntentError): void {
  expect(ERROR_CODES).toContain(error.code);
  expect(ERROR_CATEGORIES).toContain(error.category);
  expect(typeof error.message).toBe('string');
  expect(error.message.length).toBeGreaterThan(0);
  expect(typeof error.retryable).toBe('boolean');
  expect(JSON.stringify(error)).not.toMatch(/\n\s+at /);
}

/** The text of the only content item of a tool result (adapter or client shape). */
export function textOf(result: { content?: unknown } | undefined): string {
  const content = result?.content as { type: string; text: string }[] | undefined;
  expect(content).toHaveLength(1);
  const first = content?.[0];
  expect(first?.type).toBe('text');
  return first?.text ?? '';
}
