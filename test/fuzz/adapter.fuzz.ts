/**
 * Fuzz layer a (in process): random tool calls with hostile arguments and candidate texts against one host-mode
 * adapter with several sessions, next to a control session holding a prepared seed request.
 *
 * Properties (issue 8, "Must show"):
 * - `callTool` never rejects; every answer is a well-formed envelope (spec 04): JSON text, `{error}` with a spec-06
 *   error on failure, structuredContent equal to the parsed text on success; never `INTERNAL`; no error text over
 *   {@link MAX_ERROR_TEXT_BYTES}.
 * - No leaked live request: every live request a session holds was handed out to it by a successful prepare; after a
 *   session closes it holds none; once every session is closed nothing is live.
 * - Isolation: the control session's prepared request still accepts the golden candidate with the golden reply.
 * - Determinism: the same candidate text on two separate requests (cold, then warm) gives the same code and issues.
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter, type IntentMcpAdapter, type IntentMcpSession } from '../../src/mcp/adapter.js';
import { INSTANCE_OPTIONS } from '../../bench/fixture.js';
import { PROTOCOL_REVISIONS, SEED_ARGS, SEED_CANDIDATE, SEED_RESULT_TEXT } from '../support/mcpFixtures.js';
import { candidateText, nastyKey, nastyString, nastyValue, requestArgs } from './support/arbitraries.js';
import {
  MAX_ERROR_TEXT_BYTES,
  SHAPE_ONLY,
  checkEnvelope,
  clip,
  fail,
  jsonEqual,
  outcomeOf,
  type Answer,
  type AnswerChecks,
} from './support/checks.js';
import { fuzzParams } from './support/config.js';

const TOOLS = ['intent_prepare', 'intent_accept', 'intent_cancel'] as const;
const FUZZ_SESSIONS = 3;
/** Runs of each command-sequence property (each run: up to 14 calls over 3 sessions, plus the control's two). */
const RUNS_PER_PROPERTY = 150;

/** Which request an accept / cancel aims at, and with which token. */
interface Target {
  /** Index into every task handed out so far (modulo their number); none handed out → a made-up id. */
  pick: number;
  id: 'task' | 'random';
  token: 'task' | 'random' | 'other-task';
  randomId: string;
  randomToken: string;
}

type Command =
  | { kind: 'prepare'; s: number; args: unknown }
  | { kind: 'accept'; s: number; target: Target; text: string }
  | { kind: 'cancel'; s: number; target: Target; reason: unknown }
  | { kind: 'replay'; s: number }
  | { kind: 'raw'; s: number; tool: string; args: unknown }
  | { kind: 'close'; s: number };

const session = fc.integer({ min: 0, max: FUZZ_SESSIONS - 1 });
const target: fc.Arbitrary<Target> = fc.record({
  pick: fc.nat(),
  id: fc.constantFrom('task', 'task', 'task', 'random'),
  token: fc.constantFrom('task', 'task', 'task', 'random', 'other-task'),
  randomId: fc.oneof(fc.uuid(), nastyString),
  randomToken: nastyString,
});

const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('prepare'), s: session, args: requestArgs }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('accept'), s: session, target, text: candidateText }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('cancel'),
      s: session,
      target,
      reason: fc.oneof(fc.constantFrom(undefined, 'cancelled', 'refusal', 'incomplete'), nastyValue),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('replay'), s: session }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('raw'),
      s: session,
      tool: fc.oneof(fc.constantFrom(...TOOLS), nastyKey),
      args: fc.oneof(
        nastyValue,
        fc.array(fc.tuple(nastyKey, nastyValue), { maxLength: 6 }).map((e) => Object.fromEntries(e)),
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('close'), s: session }) },
);

function newAdapter(): IntentMcpAdapter {
  const clock = new SimulatedClock();
  clock.set(Date.parse('2026-11-30T09:00:00Z'));
  return createIntentMcpAdapter({
    mode: 'host',
    instances: { main: new Intent({ clock }), travel: new Intent({ ...INSTANCE_OPTIONS, clock }) },
    clock,
  });
}

/** Calls a tool and checks the envelope; a rejection is a failure of its own. */
async function call(
  s: IntentMcpSession,
  tool: string,
  args: unknown,
  where: string,
  checks: AnswerChecks = SHAPE_ONLY,
): Promise<Answer | undefined> {
  let result: unknown;
  try {
    result = await s.callTool(tool, args);
  } catch (error) {
    return fail(`${where}: callTool rejected: ${clip(String(error))}`);
  }
  if (result === undefined) {
    if ((TOOLS as readonly string[]).includes(tool)) fail(`${where}: ${tool} answered undefined`);
    return undefined;
  }
  if (!(TOOLS as readonly string[]).includes(tool)) fail(`${where}: the unknown tool ${clip(tool)} answered`);
  return checkEnvelope(result, where, jsonEqual, checks);
}

interface Task {
  requestId: string;
  submissionToken: string;
  session: number;
}

/** Live request ids of a session in the adapter's snapshot ([] when the session is gone). */
function liveOf(adapter: IntentMcpAdapter, sessionId: string): string[] {
  const view = adapter.snapshot().sessions.find((v) => v.id === sessionId);
  return view === undefined ? [] : view.live.map((l) => l.requestId);
}

/** The property a run of {@link runCommands} enforces (every run checks envelope shapes). */
type Focus = 'answers' | 'size' | 'leaks' | 'isolation';

async function runCommands(commands: readonly Command[], revisions: readonly number[], focus: Focus): Promise<void> {
  const checks: AnswerChecks = { internal: focus === 'answers', size: focus === 'size' };
  const checkLeaks = focus === 'leaks';
  const checkIsolation = focus === 'isolation';
  const adapter = newAdapter();
  try {
    const control = adapter.connect({ protocolVersion: '2025-11-25', label: 'control' });
    const controlAnswer = await call(control, 'intent_prepare', { instance: 'main', ...SEED_ARGS }, 'control prepare');
    if (controlAnswer?.isError !== false) return fail('control prepare failed');
    const { requestId, submissionToken } = controlAnswer.value as { requestId: string; submissionToken: string };
    const controlTask = { requestId, submissionToken };

    const sessions = Array.from({ length: FUZZ_SESSIONS }, (_, i) =>
      adapter.connect({ protocolVersion: PROTOCOL_REVISIONS[revisions[i]! % PROTOCOL_REVISIONS.length]! }),
    );
    const closed = new Set<number>();
    const tasks: Task[] = [];
    const handedOut = sessions.map(() => new Set<string>());
    const lastAccept = new Map<number, unknown>();

    const resolveTarget = (t: Target): { requestId: unknown; submissionToken: unknown } => {
      const task = tasks.length === 0 ? undefined : tasks[t.pick % tasks.length];
      const other = tasks.length === 0 ? undefined : tasks[(t.pick + 1) % tasks.length];
      return {
        requestId: t.id === 'task' && task !== undefined ? task.requestId : t.randomId,
        submissionToken:
          t.token === 'task' && task !== undefined
            ? task.submissionToken
            : t.token === 'other-task' && other !== undefined
              ? other.submissionToken
              : t.randomToken,
      };
    };

    for (const [i, c] of commands.entries()) {
      const where = `#${i} ${c.kind} on session ${c.s}`;
      const s = sessions[c.s]!;
      let answer: Answer | undefined;
      switch (c.kind) {
        case 'prepare':
          answer = await call(s, 'intent_prepare', c.args, where, checks);
          if (answer?.isError === false) {
            const task = answer.value as { requestId: string; submissionToken: string };
            tasks.push({ requestId: task.requestId, submissionToken: task.submissionToken, session: c.s });
            handedOut[c.s]!.add(task.requestId);
          }
          break;
        case 'accept': {
          const args = { ...resolveTarget(c.target), candidateText: c.text };
          lastAccept.set(c.s, args);
          answer = await call(s, 'intent_accept', args, where, checks);
          break;
        }
        case 'cancel': {
          const { requestId } = resolveTarget(c.target);
          answer = await call(
            s,
            'intent_cancel',
            c.reason === undefined ? { requestId } : { requestId, reason: c.reason },
            where,
            checks,
          );
          break;
        }
        case 'replay': {
          const args = lastAccept.get(c.s);
          if (args !== undefined) answer = await call(s, 'intent_accept', args, where, checks);
          break;
        }
        case 'raw':
          answer = await call(s, c.tool, c.args, where, checks);
          break;
        case 'close':
          await s.close();
          closed.add(c.s);
          if (checkLeaks && liveOf(adapter, s.id).length > 0)
            fail(`${where}: the closed session still holds live requests`);
          break;
      }
      if (closed.has(c.s) && c.kind !== 'close' && answer !== undefined) {
        if (!answer.isError || answer.error.code !== 'SESSION_CLOSED')
          fail(`${where}: a closed session answered ${answer.isError ? answer.error.code : 'a success'}`);
      }
      // No leaked live request: whatever a session holds live, it was handed out to it.
      if (checkLeaks)
        for (const [k, fuzzed] of sessions.entries()) {
          for (const id of liveOf(adapter, fuzzed.id))
            if (!handedOut[k]!.has(id)) fail(`${where}: session ${k} holds a live request ${id} nobody was given`);
        }
      const controlLive = liveOf(adapter, control.id);
      if (checkIsolation && (controlLive.length !== 1 || controlLive[0] !== controlTask.requestId))
        fail(`${where}: the control session's live requests changed: ${JSON.stringify(controlLive)}`);
    }

    for (const [k, s] of sessions.entries()) {
      await s.close();
      if (checkLeaks && liveOf(adapter, s.id).length > 0) fail(`session ${k} still holds live requests after close()`);
    }
    const golden = await call(
      control,
      'intent_accept',
      { ...controlTask, candidateText: SEED_CANDIDATE },
      'control accept',
    );
    if (checkIsolation && (golden?.isError !== false || golden.text !== SEED_RESULT_TEXT))
      fail(`the control session's golden accept answered ${clip(golden?.text ?? 'undefined')}`);
    await control.close();
    const leaked = adapter.snapshot().sessions.flatMap((v) => v.live.map((l) => `${v.id}/${l.requestId}`));
    if (checkLeaks && leaked.length > 0) fail(`live requests after every session closed: ${leaked.join(', ')}`);
  } finally {
    await adapter.close();
  }
}

const commands = fc.array(command, { minLength: 1, maxLength: 14 });
const revisions = fc.array(fc.nat({ max: 2 }), { minLength: FUZZ_SESSIONS, maxLength: FUZZ_SESSIONS });

describe('fuzz a: the in-process adapter under hostile tool calls', () => {
  it.each<[Focus, string, number]>([
    ['answers', 'every answer is a well-formed envelope with a spec-06 error, never INTERNAL', 0xa1],
    ['size', `no error text exceeds ${MAX_ERROR_TEXT_BYTES} bytes`, 0xa2],
    ['leaks', 'no live request is leaked: sessions hold only what they were handed, nothing once closed', 0xa3],
    [
      'isolation',
      "the control session's prepared request still answers the golden candidate with the golden reply",
      0xa4,
    ],
  ])('[%s] %s', async (focus, _title, seed) => {
    await fc.assert(
      fc.asyncProperty(commands, revisions, (c, r) => runCommands(c, r, focus)),
      fuzzParams(seed, RUNS_PER_PROPERTY),
    );
  });

  it('answers the same candidate text the same way on two separate requests, cold then warm', async () => {
    await fc.assert(
      fc.asyncProperty(candidateText, async (text) => {
        const adapter = newAdapter();
        try {
          const s = adapter.connect({ protocolVersion: '2025-11-25' });
          const outcomes: unknown[] = [];
          for (const attempt of ['cold', 'warm']) {
            const prepared = await call(s, 'intent_prepare', { instance: 'main', ...SEED_ARGS }, `${attempt} prepare`);
            if (prepared?.isError !== false) return fail(`${attempt} prepare failed`);
            const { requestId, submissionToken } = prepared.value as { requestId: string; submissionToken: string };
            const args = { requestId, submissionToken, candidateText: text };
            const answer = await call(s, 'intent_accept', args, `${attempt} accept`);
            outcomes.push(outcomeOf(answer!));
          }
          if (!jsonEqual(outcomes[0], outcomes[1]))
            fail(
              `cold and warm answers differ: ${clip(JSON.stringify(outcomes[0]))} / ${clip(JSON.stringify(outcomes[1]))}`,
            );
        } finally {
          await adapter.close();
        }
      }),
      fuzzParams(0xa5, 400),
    );
  });

  it('keeps the one correction owed after a refused first candidate: the golden candidate then completes', async () => {
    await fc.assert(
      fc.asyncProperty(candidateText, async (text) => {
        const adapter = newAdapter();
        try {
          const s = adapter.connect({ protocolVersion: '2025-11-25' });
          const prepared = await call(s, 'intent_prepare', { instance: 'main', ...SEED_ARGS }, 'prepare');
          if (prepared?.isError !== false) return fail('prepare failed');
          const { requestId, submissionToken } = prepared.value as { requestId: string; submissionToken: string };
          const first = await call(s, 'intent_accept', { requestId, submissionToken, candidateText: text }, 'first');
          if (first?.isError !== true) return; // accepted: nothing is owed
          // A candidate refused for its format (or its size) leaves the request open for its one correction.
          const golden = await call(
            s,
            'intent_accept',
            { requestId, submissionToken, candidateText: SEED_CANDIDATE },
            'golden',
          );
          if (golden?.isError !== false || golden.text !== SEED_RESULT_TEXT)
            fail(`after a first answer ${first.error.code}, the golden candidate answered ${clip(golden?.text ?? '')}`);
        } finally {
          await adapter.close();
        }
      }),
      fuzzParams(0xa6, 300),
    );
  });
});
