/**
 * The scripted session of issue 11's tests: one adapter on a simulated clock, traced through the same writer the command
 * uses, going through a correction, a success, a replay, conflicts, a cancel, an expiry and a session close. Every
 * candidate carries a marker, so the tests can show that no trace, report or log holds candidate text or tokens.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { SimulatedClock } from 'xstate';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter, type IntentMcpSession } from '../../src/mcp/adapter.js';
import { createLogger } from '../../src/server/logger.js';
import { TraceWriter } from '../../src/trace/writer.js';
import { SEED_ARGS, SEED_CANDIDATE } from '../support/mcpFixtures.js';

/** Text that appears only inside submitted candidates. */
export const CANDIDATE_MARKER = 'CANDIDATE_MARKER_q7Zk2';
/** A correctable candidate carrying the marker. */
export const MARKED_INVALID = `{"turnKind":"request","note":"${CANDIDATE_MARKER}"}`;
/** Another correctable one (a conflict against the first). */
export const MARKED_OTHER = `{"turnKind":"request","coverage":"complete","note":"${CANDIDATE_MARKER}-2"}`;
/** A piece of the valid seed candidate that the request input does not contain. */
export const SEED_MARKER = '"understanding":"clear"';

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'intent-mcp-trace-'));
}

const REVISION = '2025-11-25';

interface Prepared {
  requestId: string;
  token: string;
}

async function prepare(session: IntentMcpSession, timeoutMs?: number): Promise<Prepared> {
  const result = await session.callTool(
    'intent_prepare',
    SEED_ARGS,
    timeoutMs === undefined ? undefined : { timeoutMs },
  );
  const task = result?.structuredContent as { requestId: string; submissionToken: string } | undefined;
  if (task === undefined) throw new Error(`prepare failed: ${result?.content[0].text ?? 'undefined'}`);
  return { requestId: task.requestId, token: task.submissionToken };
}

function accept(session: IntentMcpSession, p: Prepared, candidateText: string) {
  return session.callTool('intent_accept', { requestId: p.requestId, submissionToken: p.token, candidateText });
}

function codeOf(result: { isError: boolean; content: [{ text: string }] } | undefined): string {
  if (result === undefined) return 'undefined';
  if (!result.isError) return 'ok';
  return (JSON.parse(result.content[0].text) as { error: { code: string } }).error.code;
}

export interface ScriptedRun {
  /** Every submission token handed out. */
  tokens: string[];
  /** requestId → how the script expects it to end. */
  ends: Map<string, string>;
}

/**
 * Runs the scripted session on an adapter whose transitions go to `listener` (subscribed before the first request).
 * Asserts the replies on the way, so a broken engine cannot produce a "clean" trace by accident.
 */
export async function scriptedSession(
  listen: (adapter: ReturnType<typeof createIntentMcpAdapter>) => void,
): Promise<ScriptedRun> {
  const clock = new SimulatedClock();
  clock.set(Date.parse('2026-11-02T09:30:00.000Z'));
  const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) }, clock });
  listen(adapter);
  const session = adapter.connect({ protocolVersion: REVISION });
  const tokens: string[] = [];
  const ends = new Map<string, string>();
  const track = (p: Prepared, end: string): Prepared => {
    tokens.push(p.token);
    ends.set(p.requestId, end);
    return p;
  };

  // A correction, then a success, then a replay of it, then a different candidate (conflict on a finished request).
  const a = track(await prepare(session), 'completed');
  expect(codeOf(await accept(session, a, MARKED_INVALID))).toBe('CANDIDATE_INVALID');
  clock.increment(10);
  expect(codeOf(await accept(session, a, MARKED_INVALID))).toBe('CANDIDATE_INVALID'); // same bad one: feedback
  expect(codeOf(await accept(session, a, SEED_CANDIDATE))).toBe('ok');
  expect(codeOf(await accept(session, a, SEED_CANDIDATE))).toBe('ok'); // replay
  expect(codeOf(await accept(session, a, MARKED_OTHER))).toBe('HANDOFF_CONFLICT');

  // A conflict while validating: two different candidates at once.
  const b = track(await prepare(session), 'completed');
  const first = accept(session, b, SEED_CANDIDATE);
  const joined = accept(session, b, SEED_CANDIDATE);
  const other = accept(session, b, MARKED_OTHER);
  expect(codeOf(await other)).toBe('HANDOFF_CONFLICT');
  expect(codeOf(await first)).toBe('ok');
  expect(codeOf(await joined)).toBe('ok');

  // Two corrections: the budget is spent, the candidate rejected.
  const r = track(await prepare(session), 'completed');
  expect(codeOf(await accept(session, r, MARKED_INVALID))).toBe('CANDIDATE_INVALID');
  expect(codeOf(await accept(session, r, MARKED_OTHER))).toBe('CANDIDATE_REJECTED');

  // A cancel, then a late submission and a second cancel.
  const c = track(await prepare(session), 'cancelled');
  expect(codeOf(await session.callTool('intent_cancel', { requestId: c.requestId, reason: 'refusal' }))).toBe('ok');
  expect(codeOf(await accept(session, c, SEED_CANDIDATE))).toBe('HANDOFF_CANCELLED');
  expect(codeOf(await session.callTool('intent_cancel', { requestId: c.requestId }))).toBe('ok');

  // An expiry by the timer, then a late submission; and one judged late by the clock on arrival.
  const d = track(await prepare(session, 5_000), 'expired');
  clock.increment(5_000);
  expect(codeOf(await accept(session, d, SEED_CANDIDATE))).toBe('HANDOFF_EXPIRED');
  const e = track(await prepare(session, 1_000), 'expired');
  expect(codeOf(await accept(session, e, MARKED_INVALID))).toBe('CANDIDATE_INVALID');
  clock.increment(1_000);
  expect(codeOf(await accept(session, e, SEED_CANDIDATE))).toBe('HANDOFF_EXPIRED');

  // A session close with two live requests (one prepared, one correcting).
  track(await prepare(session), 'cancelled');
  const g = track(await prepare(session), 'cancelled');
  expect(codeOf(await accept(session, g, MARKED_INVALID))).toBe('CANDIDATE_INVALID');
  await session.close();
  await adapter.close();
  return { tokens, ends };
}

/** Runs the scripted session traced to `path` through the command's writer; returns the run and the trace text. */
export async function tracedSession(path: string, maxBytes?: number): Promise<ScriptedRun & { text: string }> {
  const logger = createLogger('silent');
  const writer = new TraceWriter(path, { logger, ...(maxBytes === undefined ? {} : { maxBytes }) });
  const run = await scriptedSession((adapter) => adapter.inspect(writer.record));
  await writer.close();
  return { ...run, text: readFileSync(path, 'utf8') };
}
