/**
 * Fuzz layer b (stdio): the built command (`node dist/src/cli.js`, stdio transport) gets random lines written raw to
 * its stdin — valid requests with hostile tool arguments, junk, invalid UTF-8, lines of 1–12 MiB, deep JSON, batches,
 * notifications, malformed messages — interleaved with a well-behaved client's session (initialize, prepare, accept).
 *
 * Properties: the process never crashes or goes deaf (it answers a final `ping` with its id); every well-formed
 * request with an id gets exactly one answer with that id (a line over 1 MiB may instead get one protocol error
 * without id); no answer carries an id nobody sent or answers an id twice; stdout carries only JSON-RPC lines; the
 * well-behaved client's handoff completes with the golden reply.
 */
import fc from 'fast-check';
import { beforeAll, describe, it } from 'vitest';
import { ensureBuilt } from '../support/serverProcess.js';
import { SEED_ARGS, SEED_CANDIDATE, SEED_RESULT_TEXT } from '../support/mcpFixtures.js';
import { startStdioChild } from './support/child.js';
import { SHAPE_ONLY, checkEnvelope, clip, fail, jsonEqual } from './support/checks.js';
import { fuzzParams } from './support/config.js';
import { item, renderItem, type Item, type Rendered } from './support/lines.js';

const NL = Buffer.from('\n');
/** Runs of each property (each run spawns the command). */
const RUNS = 25;
/** Hang guard of the whole property, shrinking included. */
const BUDGET_MS = 80_000;

interface Owed {
  oversized: boolean;
  tool: string | undefined;
}

interface Message {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  result?: { content?: unknown; structuredContent?: unknown; isError?: unknown } & Record<string, unknown>;
  error?: { code?: unknown; message?: unknown };
}

const keyOf = (id: unknown): string => (id === undefined ? 'undefined' : JSON.stringify(id));

function clientLine(id: string, method: string, params?: unknown): Rendered {
  const body = params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params };
  return { bytes: Buffer.from(JSON.stringify(body)), owed: [id], present: [id], oversized: false };
}

/** Parses stdout; fails on anything that is not a JSON-RPC message. */
function parseLines(lines: readonly string[]): Message[] {
  return lines.map((line, i) => {
    let m: unknown;
    try {
      m = JSON.parse(line);
    } catch {
      return fail(`stdout line ${i} is not JSON: ${clip(line)}`);
    }
    if (m === null || typeof m !== 'object' || Array.isArray(m) || (m as Message).jsonrpc !== '2.0')
      fail(`stdout line ${i} is not a JSON-RPC message: ${clip(line)}`);
    const msg = m as Message;
    const isResponse = 'id' in msg && ('result' in msg || 'error' in msg);
    if (!isResponse && typeof msg.method !== 'string') fail(`stdout line ${i} is neither request nor response`);
    if (msg.error !== undefined && (typeof msg.error.code !== 'number' || typeof msg.error.message !== 'string'))
      fail(`stdout line ${i} has a malformed error: ${clip(line)}`);
    return msg;
  });
}

function responsesFor(messages: readonly Message[], id: string): Message[] {
  return messages.filter((m) => 'id' in m && keyOf(m.id) === keyOf(id) && !('method' in m));
}

/**
 * What a run enforces: `liveness` (no crash, the final ping, the client's golden handoff, stdout only JSON-RPC) or
 * `answers` (every request answered exactly once, no foreign ids, well-formed tool results). Two properties, so that a
 * request left unanswered does not hide a process that goes deaf, or the other way round.
 */
type Focus = 'liveness' | 'answers';

async function runStdio(items: readonly Item[], cuts: readonly [number, number], focus: Focus): Promise<void> {
  const child = startStdioChild();
  try {
    let n = 0;
    const next = (): number => n++;
    const owed = new Map<string, Owed>();
    const present = new Set<string>();
    const send = async (r: Rendered, tool?: string): Promise<void> => {
      for (const id of r.owed) owed.set(keyOf(id), { oversized: r.oversized, tool });
      for (const id of r.present) present.add(keyOf(id));
      await child.write(Buffer.concat([r.bytes, NL]));
    };
    const sendItems = async (from: number, to: number): Promise<void> => {
      for (const it of items.slice(from, to)) {
        const tool =
          it.kind === 'request' && it.method === 'tools/call'
            ? ((it.params as { name?: unknown } | null)?.name as string | undefined)
            : undefined;
        await send(renderItem(it, next), typeof tool === 'string' ? tool : undefined);
      }
    };
    const answered = (id: string) => (lines: string[]) =>
      lines.some((l) => l.includes(JSON.stringify(id)) && responsesFor(parseLines([l]), id).length > 0);
    const [a, b] = [Math.min(...cuts), Math.max(...cuts)];

    await send(
      clientLine('c-init', 'initialize', {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'fuzz', version: '1.0.0' },
      }),
    );
    if (!(await child.until(answered('c-init')))) fail('the well-behaved client got no answer to initialize');
    await child.write(Buffer.from('{"jsonrpc":"2.0","method":"notifications/initialized"}\n'));
    await sendItems(0, a);
    await send(
      clientLine('c-prepare', 'tools/call', { name: 'intent_prepare', arguments: SEED_ARGS }),
      'intent_prepare',
    );
    await sendItems(a, b);
    if (!(await child.until(answered('c-prepare')))) fail('the well-behaved client got no answer to intent_prepare');
    const prepared = responsesFor(parseLines(child.lines()), 'c-prepare')[0]?.result?.structuredContent as
      { requestId?: string; submissionToken?: string } | undefined;
    if (prepared?.requestId === undefined) fail('the well-behaved prepare failed');
    const acceptArgs = {
      requestId: prepared.requestId,
      submissionToken: prepared.submissionToken,
      candidateText: SEED_CANDIDATE,
    };
    await send(clientLine('c-accept', 'tools/call', { name: 'intent_accept', arguments: acceptArgs }), 'intent_accept');
    await sendItems(b, items.length);
    await send(clientLine('c-ping', 'ping'));

    // Wait for the final ping, the client's accept and (for `answers`) every owed answer, within the harness guard,
    // and for the last line to end: answers may come in any order, so a line begun after the ping's answer (a large
    // `tools/list` result, say) can still be arriving. Only a line that stays unterminated until the guard fails.
    await child.until((lines) => {
      if (child.partial() !== '') return false;
      const messages = parseLines(lines);
      const ids = new Set(messages.filter((m) => !('method' in m)).map((m) => keyOf(m.id)));
      const client = ids.has(keyOf('c-ping')) && ids.has(keyOf('c-accept'));
      return client && (focus === 'liveness' || [...owed].every(([id, o]) => ids.has(id) || o.oversized));
    });

    const exit = child.exited();
    if (exit !== undefined)
      fail(`the process exited (code ${exit.code}, signal ${exit.signal}); stderr: ${clip(child.stderr(), 400)}`);
    const messages = parseLines(child.lines());
    const ping = responsesFor(messages, 'c-ping');
    if (ping.length !== 1 || !jsonEqual(ping[0]!.result, {}))
      fail(`the final ping got ${ping.length} answers: ${clip(JSON.stringify(ping))}`);

    const accept = responsesFor(messages, 'c-accept')[0]?.result;
    const text = (accept?.content as { text?: string }[] | undefined)?.[0]?.text;
    if (text !== SEED_RESULT_TEXT) fail(`the well-behaved accept answered ${clip(JSON.stringify(accept ?? null))}`);
    if (child.partial() !== '') fail(`stdout ends with an unterminated line: ${clip(child.partial())}`);
    if (focus === 'liveness') return;

    const responses = messages.filter((m) => !('method' in m));
    const counts = new Map<string, number>();
    for (const r of responses) counts.set(keyOf(r.id), (counts.get(keyOf(r.id)) ?? 0) + 1);
    const idless = responses.filter((r) => r.id === null && r.error !== undefined).length;
    for (const [id, count] of counts) {
      if (id === 'null') continue;
      if (!present.has(id)) fail(`an answer carries the id ${clip(id)}, which nobody sent`);
      if (count > 1) fail(`the id ${clip(id)} was answered ${count} times`);
    }
    for (const [id, o] of owed) {
      const count = counts.get(id) ?? 0;
      if (count === 0 && !(o.oversized && idless > 0))
        fail(`the request ${clip(id, 80)} got no answer${o.oversized ? ' (and no protocol error without id)' : ''}`);
    }
    for (const r of responses) {
      const o = owed.get(keyOf(r.id));
      if (r.result !== undefined && o?.tool !== undefined && /^intent_(prepare|accept|cancel)$/.test(o.tool))
        checkEnvelope(r.result, `answer to ${clip(keyOf(r.id), 60)}`, jsonEqual, SHAPE_ONLY);
    }
  } catch (error) {
    // FUZZ_DEBUG=1 shows what the process wrote when a replayed case fails.
    if (process.env['FUZZ_DEBUG'] === '1')
      process.stderr.write(
        `stdout:\n${child
          .lines()
          .map((l) => clip(l, 300))
          .join('\n')}\nstderr:\n${clip(child.stderr(), 2000)}\n`,
      );
    throw error;
  } finally {
    await child.kill();
  }
}

describe('fuzz b: the built command over stdio under raw hostile lines', () => {
  beforeAll(async () => {
    await ensureBuilt();
  });

  it.each<[Focus, string, number]>([
    ['liveness', 'never crashes or goes deaf, writes only JSON-RPC, completes the client handoff', 0xb1],
    ['answers', 'answers every request with an id exactly once, and only ids that were sent', 0xb2],
  ])('[%s] %s', async (focus, _title, seed) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(item, { minLength: 1, maxLength: 10 }),
        fc.tuple(fc.nat({ max: 10 }), fc.nat({ max: 10 })),
        (items, cuts) => runStdio(items, cuts, focus),
      ),
      fuzzParams(seed, RUNS, BUDGET_MS),
    );
  });
});
