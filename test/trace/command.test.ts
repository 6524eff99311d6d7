/**
 * `--trace`, `trace check` and `--log-level debug` through the BUILT command (issue 11): a stdio session traced to a
 * file, the file checked clean by `intent-mcp trace check` and an altered copy refused with exit 1; an unwritable path
 * refuses to start; a full disk (`/dev/full`: every write fails with ENOSPC) degrades to a warning while requests are
 * still answered; the debug log has one line per tool call and per transition, and no token or candidate text.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLI,
  REPO_ROOT,
  ensureBuilt,
  runCli,
  startCli,
  stopAllChildren,
  type ServingChild,
} from '../support/serverProcess.js';
import { SEED_ARGS, SEED_CANDIDATE } from '../support/mcpFixtures.js';
import { CANDIDATE_MARKER, MARKED_INVALID, SEED_MARKER, tempDir, tracedSession } from './support.js';

let dir = '';

beforeAll(async () => {
  await ensureBuilt();
  dir = tempDir();
}, 120_000);

afterEach(() => stopAllChildren());

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A stdio JSON-RPC client over the child's pipes: one call at a time, answers matched by id. */
function rpc(child: ServingChild) {
  let id = 0;
  return async (method: string, params: unknown): Promise<Record<string, unknown>> => {
    id++;
    child.send({ jsonrpc: '2.0', id, method, params });
    const match = await child.waitForStdout(new RegExp(`^.*"id":${id}[,}].*$`, 'm'));
    return JSON.parse(match[0]) as Record<string, unknown>;
  };
}

interface Tool {
  structuredContent?: { requestId: string; submissionToken: string };
  content: { text: string }[];
  isError?: boolean;
}

async function session(child: ServingChild): Promise<(name: string, args: unknown) => Promise<Tool>> {
  const call = rpc(child);
  await call('initialize', {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'trace-test', version: '1.0.0' },
  });
  child.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return async (name, args) => (await call('tools/call', { name, arguments: args }))['result'] as Tool;
}

describe('--trace through the built command', () => {
  it('[I11-TRACE-CHECK] [I11-TRACE-MARKERS] [I11-DEBUG-LOG] a traced stdio session checks clean; an altered copy exits 1 naming request and line; the debug log has every call and transition and no secret', async () => {
    const path = join(dir, 'served.jsonl');
    const child = startCli(['--trace', path, '--log-level', 'debug']);
    const tool = await session(child);
    const tokens: string[] = [];
    const prepare = async (): Promise<{ requestId: string; submissionToken: string }> => {
      const task = (await tool('intent_prepare', SEED_ARGS)).structuredContent;
      if (task === undefined) throw new Error('prepare failed');
      tokens.push(task.submissionToken);
      return task;
    };
    const a = await prepare();
    const accept = (t: typeof a, candidateText: string) =>
      tool('intent_accept', { requestId: t.requestId, submissionToken: t.submissionToken, candidateText });
    expect((await accept(a, MARKED_INVALID)).isError).toBe(true);
    expect((await accept(a, SEED_CANDIDATE)).isError).toBe(false);
    expect((await accept(a, SEED_CANDIDATE)).isError).toBe(false); // replay
    const b = await prepare();
    expect((await tool('intent_cancel', { requestId: b.requestId })).isError).toBe(false);
    await prepare(); // left live: the shutdown closes its session
    child.child.kill('SIGTERM');
    expect(await child.waitForExit(10_000)).toMatchObject({ code: 0, timedOut: false });

    const text = readFileSync(path, 'utf8');
    const records = text
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => JSON.parse(l) as { event: string; answer: string });
    expect(records.map((r) => `${r.event}:${r.answer}`)).toEqual(
      expect.arrayContaining([
        'VALIDATED:invalid',
        'VALIDATED:result',
        'replay:replay',
        'CANCEL:withdrawn',
        'CLOSE:closed',
      ]),
    );
    const log = child.stderr();
    for (const secret of [...tokens, CANDIDATE_MARKER, SEED_MARKER]) {
      expect(text).not.toContain(secret);
      expect(log).not.toContain(secret);
    }
    // One debug line per tool call (7) and per transition record.
    const lines = log
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const calls = lines.filter((l) => l['message'] === 'tool call');
    expect(calls).toHaveLength(7);
    expect(calls[1]).toMatchObject({ tool: 'intent_accept', requestId: a.requestId, outcome: 'CANDIDATE_INVALID' });
    expect(typeof calls[1]?.['durationMs']).toBe('number');
    expect(calls[0]).toMatchObject({ tool: 'intent_prepare', requestId: a.requestId, outcome: 'ok' });
    const transitions = lines.filter((l) => l['message'] === 'transition');
    expect(transitions).toHaveLength(records.length);
    expect(transitions[0]).toMatchObject({ request: a.requestId, event: 'prepare', to: 'prepared', answer: 'none' });

    const clean = await runCli(['trace', 'check', path]);
    expect(clean.stdout).toMatch(/^clean: 3 requests/m);
    expect(clean.code, clean.stdout).toBe(0);

    // The replay claims another answer: named by file, line and request, exit 1.
    const altered = text.split('\n');
    const index = altered.findIndex((l) => l.includes('"event":"replay"'));
    altered[index] = (altered[index] ?? '').replace('"answer":"replay"', '"answer":"conflict"');
    const alteredPath = join(dir, 'altered.jsonl');
    writeFileSync(alteredPath, altered.join('\n'));
    const refused = await runCli(['trace', 'check', alteredPath]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(
      `${alteredPath}:${index + 1}: error: request "${a.requestId}": replay in completed`,
    );
  }, 60_000);

  it('trace check and trace report refuse what they cannot read or write with one line and exit 2; report writes to stdout', async () => {
    for (const args of [
      ['trace', 'check', join(dir, 'absent.jsonl')],
      ['trace', 'check', dir],
      ['trace', 'report', join(dir, 'absent.jsonl')],
      ['trace', 'check'],
    ]) {
      const run = await runCli(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stdout).toBe('');
    }
    const path = join(dir, 'tiny.jsonl');
    await tracedSession(path);
    const refused = await runCli(['trace', 'report', path, '-o', join(dir, 'missing', 'r.html')]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^intent-mcp: cannot write the report to ".*": ENOENT\n$/);
    const html = await runCli(['trace', 'report', path]);
    expect(html.code).toBe(0);
    expect(html.stdout).toMatch(/^<!DOCTYPE html>[^]*<\/html>\n$/);
  });

  it('a reader that closes the pipe early (| head) ends trace check quietly with its exit code; --detail is bounded', async () => {
    // 3,000 lines of a record with an unknown reason: 1,000 printed problems (~100 KB, more than a pipe holds).
    const path = join(dir, 'many-problems.jsonl');
    const bad = JSON.stringify({
      sessionId: 's',
      requestId: 'r',
      instance: 'main',
      validations: 0,
      at: '2026-11-02T09:30:00.000Z',
      from: 'prepared',
      event: 'CANCEL',
      to: 'cancelled',
      answer: 'withdrawn',
      reason: 'not-a-reason',
    });
    writeFileSync(path, `${bad}\n`.repeat(3_000));
    const child = spawn(process.execPath, [CLI, 'trace', 'check', path], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    // Read one chunk, then close our end, as `head -1` does.
    await new Promise<void>((resolve) => {
      child.stdout.once('data', () => {
        resolve();
      });
    });
    child.stdout.destroy();
    const code = await new Promise<number | null>((resolve) => {
      child.once('exit', (c) => {
        resolve(c);
      });
    });
    expect(stderr).toBe('');
    expect(code).toBe(1);
    const detail = await runCli(['trace', 'report', path, '--detail', '2001']);
    expect(detail.code).toBe(2);
    expect(detail.stderr).toMatch(/--detail.*2000/);
  });

  it('--max-live bounds the requests followed at once (beyond it: reported, not followed); raised, the same trace checks', async () => {
    const path = join(dir, 'two-live.jsonl');
    await tracedSession(path);
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    const prepares = lines.filter((line) => line.includes('"event":"prepare"'));
    expect(prepares.length).toBeGreaterThanOrEqual(2);
    const tight = await runCli(['trace', 'check', path, '--max-live', '1']);
    expect(tight.stdout).toMatch(/not followed: 1 requests are live at once already/);
    const roomy = await runCli(['trace', 'check', path, '--max-live', '1000']);
    expect(roomy.stdout).not.toMatch(/not followed/);
    const bad = await runCli(['trace', 'check', path, '--max-live', '0']);
    expect(bad.code).toBe(2);
  });

  it('[I11-TRACE-UNWRITABLE] a trace path that cannot be written refuses to start: one line, exit 2', async () => {
    for (const path of [join(dir, 'missing', 'trace.jsonl'), dir]) {
      const run = await runCli(['--trace', path]);
      expect(run.code).toBe(2);
      const lines = run.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^intent-mcp: Cannot write the trace file .* choose a writable --trace path\.$/);
      expect(run.stdout).toBe('');
    }
    expect(existsSync(join(dir, 'missing'))).toBe(false);
  });

  it('[I11-TRACE-UNWRITABLE] a FIFO as trace path refuses at once (one line, exit 2) instead of blocking in open', async () => {
    const fifo = join(dir, 'trace.fifo');
    execFileSync('mkfifo', [fifo]);
    // No reader: a blocking open would wait forever (runCli kills it, and the test fails on timedOut).
    const run = await runCli(['--trace', fifo]);
    expect(run).toMatchObject({ code: 2, timedOut: false, stdout: '' });
    expect(run.stderr).toMatch(/^intent-mcp: Cannot write the trace file ".*trace\.fifo" \(ENXIO\)[^\n]*\n$/);
  });

  it('[I11-TRACE-FULL-DISK] a full disk degrades to one rate-limited warning: requests are still answered, no crash', async () => {
    if (!existsSync('/dev/full')) return expect.fail('/dev/full is missing on this machine');
    const child = startCli(['--trace', '/dev/full']);
    const tool = await session(child);
    for (let i = 0; i < 3; i++) expect((await tool('intent_prepare', SEED_ARGS)).structuredContent).toBeDefined();
    await child.waitForStderr(/trace write failed[^\n]*ENOSPC/, 5_000);
    // The writer lives on after the failure: more requests are answered, their records dropped too.
    for (let i = 0; i < 3; i++) expect((await tool('intent_prepare', SEED_ARGS)).structuredContent).toBeDefined();
    child.child.kill('SIGTERM');
    expect(await child.waitForExit(10_000)).toMatchObject({ code: 0, timedOut: false });
    const stderr = child.stderr();
    expect(stderr.split('\n').filter((l) => l.includes('trace write failed'))).toHaveLength(1);
    // Six prepares and six session-close transitions, plus the header: all dropped, all counted.
    expect(stderr).toMatch(/trace file closed with records dropped .*records=12 dropped=13/);
  }, 30_000);
});
