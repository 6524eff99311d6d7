/**
 * `trace check` (issue 11): the trace of a scripted session checks clean against the machine; the same trace with one
 * line altered is reported with the request and the line number.
 */
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTrace, formatProblem, type TraceProblem } from '../../src/trace/check.js';
import { createLogger } from '../../src/server/logger.js';
import { machineHash } from '../../src/trace/format.js';
import { TraceWriter } from '../../src/trace/writer.js';
import { CANDIDATE_MARKER, SEED_MARKER, scriptedSession, tempDir, tracedSession, type ScriptedRun } from './support.js';

let dir = '';
let tracePath = '';
let run: ScriptedRun & { text: string };

beforeAll(async () => {
  dir = tempDir();
  tracePath = join(dir, 'trace.jsonl');
  run = await tracedSession(tracePath);
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function check(text: string): Promise<{ problems: TraceProblem[]; errors: number }> {
  const path = join(dir, `altered-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(path, text);
  const problems: TraceProblem[] = [];
  const summary = await checkTrace([path], { onProblem: (p) => problems.push(p) });
  // The memoised replay and the machine run on every concrete step judge alike (src/trace/replay.ts).
  const exact: TraceProblem[] = [];
  await checkTrace([path], { onProblem: (p) => exact.push(p), exact: true });
  expect(exact).toEqual(problems);
  return { problems, errors: summary.errors };
}

interface Line {
  requestId: string;
  event: string;
  from: string | null;
  to: string;
  answer: string;
}

const linesOf = (text: string): string[] => text.split('\n').filter((l) => l !== '');

describe('trace check', () => {
  it('[I11-TRACE-CHECK] a cancel after the deadline (answer already_expired, as the engine records it) checks clean', async () => {
    // The parser's list of answers lacked already_expired: a real late cancel was reported as a malformed line.
    const base = { sessionId: 's', requestId: 'late', instance: 'main', validations: 0 };
    const lines = [
      { format: 'intent-mcp-trace', version: 1, machine: machineHash() },
      {
        ...base,
        at: '2026-11-02T09:30:00.000Z',
        from: null,
        event: 'prepare',
        to: 'prepared',
        answer: 'none',
        mode: 'host',
        expiresAt: '2026-11-02T09:30:01.000Z',
      },
      {
        ...base,
        at: '2026-11-02T09:30:01.000Z',
        from: 'prepared',
        event: 'DEADLINE',
        to: 'expired',
        answer: 'too_late',
      },
      {
        ...base,
        at: '2026-11-02T09:30:01.500Z',
        from: 'expired',
        event: 'CANCEL',
        to: 'expired',
        answer: 'already_expired',
        reason: 'cancelled',
      },
    ];
    const { problems, errors } = await check(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    expect(problems).toEqual([]);
    expect(errors).toBe(0);
  });

  it('[I11-TRACE-CHECK] the trace of a scripted session checks clean against the machine', async () => {
    const lines = linesOf(run.text);
    expect(JSON.parse(lines[0] ?? '')).toEqual({ format: 'intent-mcp-trace', version: 1, machine: machineHash() });
    const records = lines.slice(1).map((l) => JSON.parse(l) as Line);
    const events = new Set(records.map((r) => `${r.event}:${r.answer}`));
    // The script went everywhere it says it did.
    for (const step of [
      'prepare:none',
      'ACCEPT:validate',
      'VALIDATED:invalid',
      'ACCEPT:feedback',
      'VALIDATED:result',
      'replay:replay',
      'ACCEPT:conflict',
      'ACCEPT:join',
      'VALIDATED:rejected',
      'CANCEL:withdrawn',
      'ACCEPT:withdrawn_earlier',
      'CANCEL:already_cancelled',
      'DEADLINE:too_late',
      'ACCEPT:too_late',
      'CLOSE:closed',
    ])
      expect(events, step).toContain(step);
    const ends = new Map(records.map((r) => [r.requestId, r.to]));
    for (const [id, end] of run.ends) expect(ends.get(id), id).toBe(end);
    const { problems } = await check(run.text);
    expect(problems.map(formatProblem)).toEqual([]);
  });

  it('[I11-TRACE-CHECK] an impossible transition is reported with its request and line number', async () => {
    const lines = linesOf(run.text);
    // The first successful validation: the machine goes validating → completed; claim it went to correcting.
    const index = lines.findIndex((l) => l.includes('"event":"VALIDATED"') && l.includes('"answer":"result"'));
    const record = JSON.parse(lines[index] ?? '') as Line;
    lines[index] = JSON.stringify({ ...record, to: 'correcting' });
    const { problems, errors } = await check(lines.join('\n') + '\n');
    expect(errors).toBeGreaterThan(0);
    const found = problems.find((p) => p.kind === 'transition');
    expect(found).toMatchObject({ line: index + 1, requestId: record.requestId });
    expect(formatProblem(found as TraceProblem)).toContain(`:${index + 1}: error: request "${record.requestId}"`);
  });

  it('[I11-TRACE-CHECK] a wrong answer is reported with its request and line number', async () => {
    const lines = linesOf(run.text);
    const index = lines.findIndex((l) => l.includes('"event":"CANCEL"') && l.includes('"answer":"withdrawn"'));
    const record = JSON.parse(lines[index] ?? '') as Line;
    lines[index] = JSON.stringify({ ...record, answer: 'already_completed' });
    const { problems } = await check(lines.join('\n') + '\n');
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ kind: 'answer', line: index + 1, requestId: record.requestId });
  });

  it('[I11-TRACE-CHECK] a dropped terminal line leaves the request live: reported with its request and last line', async () => {
    const lines = linesOf(run.text);
    // The last CLOSE of the session: its request never ends in the altered trace.
    const index = lines.findLastIndex((l) => l.includes('"event":"CLOSE"'));
    const record = JSON.parse(lines[index] ?? '') as Line;
    const before = lines.slice(0, index).findLastIndex((l) => l.includes(record.requestId));
    lines.splice(index, 1);
    const { problems } = await check(lines.join('\n') + '\n');
    expect(problems).toEqual([
      expect.objectContaining({ kind: 'live', requestId: record.requestId, line: before + 1 }),
    ]);
  });

  it('[I11-TRACE-CHECK] a dropped terminal line followed by later events of the request is reported at the later line', async () => {
    const lines = linesOf(run.text);
    const index = lines.findIndex((l) => l.includes('"event":"DEADLINE"'));
    const record = JSON.parse(lines[index] ?? '') as Line;
    lines.splice(index, 1);
    const next = lines.findIndex((l, i) => i >= index && l.includes(record.requestId));
    const { problems } = await check(lines.join('\n') + '\n');
    expect(problems[0]).toMatchObject({ requestId: record.requestId, line: next + 1 });
  });

  it('reports malformed, oversized and unprepared lines and a header of another machine, and goes on', async () => {
    const lines = linesOf(run.text);
    const header = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    lines[0] = JSON.stringify({ ...header, machine: 'ffffffffffffffff' });
    lines.splice(
      3,
      0,
      '{"requestId": [',
      'x'.repeat(200_000),
      JSON.stringify({ ...JSON.parse(lines[2] ?? ''), requestId: 'ghost', event: 'ACCEPT' }),
    );
    const { problems } = await check(lines.join('\n') + '\n');
    expect(problems.map((p) => [p.kind, p.line, p.severity])).toEqual([
      ['machine', 1, 'warning'],
      ['malformed', 4, 'error'],
      ['oversized', 5, 'error'],
      ['unprepared', 6, 'error'],
    ]);
  });

  it('[I11-TRACE-MARKERS] the trace holds no token and no candidate text', () => {
    expect(run.tokens.length).toBe(run.ends.size);
    for (const secret of [...run.tokens, CANDIDATE_MARKER, SEED_MARKER]) expect(run.text).not.toContain(secret);
  });

  it('hostile input: a 4 MiB line without an end, deep nesting, 1 MiB of newlines and binary junk are each reported and skipped', async () => {
    const lines = linesOf(run.text);
    const junk = [
      lines[0] ?? '',
      '['.repeat(60_000) + ']'.repeat(4000),
      Buffer.from(Array.from({ length: 30_000 }, (_, i) => (i * 7919) % 256))
        .toString('latin1')
        .replaceAll('\n', ' '),
      ...lines.slice(1),
    ].join('\n');
    const path = join(dir, 'hostile.jsonl');
    writeFileSync(path, junk + '\n' + '\n'.repeat(1024 * 1024) + '{"requestId":"' + 'x'.repeat(4 * 1024 * 1024));
    const problems: TraceProblem[] = [];
    const summary = await checkTrace([path], { onProblem: (p) => problems.push(p) });
    expect(problems.map((p) => [p.kind, p.line])).toEqual([
      ['malformed', 2],
      ['malformed', 3],
      ['oversized', lines.length + 2 + 1024 * 1024 + 1],
    ]);
    expect(summary.requests).toBe(run.ends.size);
  });

  it('follows at most maxLive requests at once: a prepare beyond is reported, its later records not judged', async () => {
    const path = join(dir, 'capped.jsonl');
    writeFileSync(path, run.text);
    const problems: TraceProblem[] = [];
    await checkTrace([path], { onProblem: (p) => problems.push(p), maxLive: 1 });
    const capped = problems.filter((p) => p.kind === 'capacity');
    // The session close leaves two requests live at once: the second is not followed, and nothing else is reported.
    expect(capped).toHaveLength(1);
    expect(problems).toEqual(capped);
  });

  it('[I11-TRACE-ROTATE] checks a rotated pair FILE.1 FILE as one stream, and FILE alone from its own header', async () => {
    const path = join(dir, 'rotated.jsonl');
    const writer = new TraceWriter(path, { logger: createLogger('silent'), maxBytes: 64 * 1024 });
    for (let i = 0; i < 8; i++) await scriptedSession((adapter) => adapter.inspect(writer.record));
    await writer.close();
    expect(writer.stats.rotations).toBeGreaterThan(0);
    for (const file of [path, path + '.1']) {
      expect(statSync(file).size).toBeLessThanOrEqual(64 * 1024);
      expect(JSON.parse(readFileSync(file, 'utf8').split('\n')[0] ?? '')).toMatchObject({ format: 'intent-mcp-trace' });
    }
    const problems: TraceProblem[] = [];
    await checkTrace([path + '.1', path], { onProblem: (p) => problems.push(p) });
    expect(problems.map(formatProblem)).toEqual([]);
    // Alone, FILE begins in the middle of requests: those are named, not crashed on.
    const alone: TraceProblem[] = [];
    await checkTrace([path], { onProblem: (p) => alone.push(p) });
    expect(alone.every((p) => p.kind === 'unprepared')).toBe(true);
  });
});
