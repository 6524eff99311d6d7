/**
 * Issue 8, items 7 and 8 over stdio: a line over the read limit is answered with a JSON-RPC error and the connection
 * keeps serving (the built command, over a real pipe; and the transport in process: memory while skipping stays
 * bounded, and a line is joined once); and SIGTERM with validations in flight answers every request id.
 */
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  STDIO_MAX_MESSAGE_BYTES,
  stdioMessageLimit,
  parseServerConfig,
  type ServerConfig,
} from '../../src/server/config.js';
import { MAX_OUTPUT_BACKLOG_BYTES, StdioLineTransport } from '../../src/server/stdioTransport.js';
import { SEED_ARGS, SEED_CANDIDATE } from '../support/mcpFixtures.js';
import { ensureBuilt, startCli, stopAllChildren, type ServingChild } from '../support/serverProcess.js';

const SPAWN_TIMEOUT = 60_000;
const MiB = 1024 * 1024;

afterEach(async () => {
  await stopAllChildren();
});

interface Line {
  id?: unknown;
  result?: { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { text: string }[] };
  error?: { code: number; message: string; data?: { code?: string; limit?: number } };
}

function linesOf(child: ServingChild): Line[] {
  return child
    .stdout()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);
}

function byId(child: ServingChild, id: unknown): Line | undefined {
  return linesOf(child).find((l) => l.id === id);
}

async function initialize(child: ServingChild): Promise<void> {
  child.send({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1.0.0' } },
  });
  await child.waitForStdout(/"id":0[,}]/);
  child.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
}

function acceptLine(id: unknown, candidateText: string, idFirst = true): string {
  const params = { name: 'intent_accept', arguments: { requestId: 'r-1', submissionToken: 't-1', candidateText } };
  const message = idFirst
    ? { jsonrpc: '2.0', id, method: 'tools/call', params }
    : { jsonrpc: '2.0', method: 'tools/call', params, id };
  return JSON.stringify(message) + '\n';
}

describe('the stdio read limit [H08-STDIO-LIMIT]', () => {
  it('derives the limit from the largest accepted candidate or input: 6 × max + 1 MiB, configurable upwards only', () => {
    expect(stdioMessageLimit(parseServerConfig({}, 'test'))).toBe(7 * MiB);
    const big = parseServerConfig({ limits: { maxCandidateBytes: 64 * MiB } }, 'test');
    expect(stdioMessageLimit(big)).toBe(6 * 64 * MiB + MiB);
    // An instance's own larger limit does not pass the session gate (1 MiB by default)...
    expect(
      stdioMessageLimit(parseServerConfig({ instances: { a: { limits: { maxCandidateBytes: 8 * MiB } } } }, 't')),
    ).toBe(7 * MiB);
    // ...but a raised gate lets the largest instance through.
    const raised = parseServerConfig(
      { limits: { maxCandidateBytes: 32 * MiB }, instances: { a: { limits: { maxCandidateBytes: 8 * MiB } }, b: {} } },
      't',
    );
    expect(stdioMessageLimit(raised)).toBe(6 * 32 * MiB + MiB);
    // The request text counts too: input plus every context item at its longest.
    const wideContext = parseServerConfig(
      { instances: { a: { limits: { maxContextItems: 100, maxContextItemChars: 100_000 } } } },
      't',
    );
    expect(stdioMessageLimit(wideContext)).toBe(6 * (20_000 + 100 * 100_000) + MiB);
    // Never past the longest line that can be decoded at all (V8's longest string): limits that would need more are
    // capped, and a larger configured value is refused, so no accepted configuration lets one line crash the process.
    const huge = parseServerConfig(
      { instances: { a: { limits: { maxContextItems: 10_000, maxContextItemChars: 10_000_000 } } } },
      't',
    );
    expect(stdioMessageLimit(huge)).toBe(STDIO_MAX_MESSAGE_BYTES);
    expect(() => parseServerConfig({ stdio: { maxMessageBytes: 2 ** 30 } }, 't')).toThrow(/maxMessageBytes/);
    expect(stdioMessageLimit(parseServerConfig({ stdio: { maxMessageBytes: 100 * MiB } }, 't'))).toBe(100 * MiB);
    expect(() => stdioMessageLimit(parseServerConfig({ stdio: { maxMessageBytes: MiB } }, 't'))).toThrow(
      /stdio.maxMessageBytes .* below/,
    );
  });

  it('derives the limit for a config of very many instances (a 16 MiB file holds a million) without overflowing the stack', () => {
    // Math.max(...one argument per instance) threw RangeError past ~100,000 instances and crashed check-config.
    const instances: ServerConfig['instances'] = {};
    for (let i = 0; i < 200_000; i++) instances[`i${i}`] = { language: 'auto' };
    instances['wide'] = { language: 'auto', limits: { maxContextItems: 100, maxContextItemChars: 100_000 } };
    expect(stdioMessageLimit({ instances })).toBe(6 * (20_000 + 100 * 100_000) + MiB);
  });

  it(
    'an oversized line between two requests: both are answered, the oversized gets an error with its id, the process lives',
    async () => {
      await ensureBuilt();
      const child = startCli([]);
      await initialize(child);
      child.send({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
      // Over the SDK's own 10 MiB buffer, which closed the connection without a reply.
      child.child.stdin?.write(acceptLine(2, 'x'.repeat(12 * MiB)));
      child.send({ jsonrpc: '2.0', id: 3, method: 'ping' });
      // The id after a 12 MiB params object is found by the streaming scan.
      child.child.stdin?.write(acceptLine('late-id', 'y'.repeat(12 * MiB), false));
      // Not JSON at all: answered with id null.
      child.child.stdin?.write('{' + '"'.repeat(8 * MiB) + '\n');
      child.send({ jsonrpc: '2.0', id: 4, method: 'ping' });
      await child.waitForStdout(/"id":4[,}]/, 30_000);

      expect(byId(child, 1)?.result).toBeDefined();
      expect(byId(child, 3)?.result).toEqual({});
      expect(byId(child, 4)?.result).toEqual({});
      for (const id of [2, 'late-id', null]) {
        const error = byId(child, id)?.error;
        expect(error?.code, `id ${String(id)}`).toBe(-32600);
        expect(error?.data).toEqual({ code: 'INPUT_INVALID', limit: 7 * MiB });
        expect(error?.message.length).toBeLessThan(300);
      }
      // Every stdout line is a JSON-RPC message, and the process is still serving.
      expect(child.child.exitCode).toBeNull();
      child.send({ jsonrpc: '2.0', id: 5, method: 'ping' });
      await child.waitForStdout(/"id":5[,}]/);
      // The refusals were logged as short lines.
      expect(child.stderr()).toMatch(/stdio message refused reason=oversized message/);
      expect(child.stderr().length).toBeLessThan(4096);
    },
    SPAWN_TIMEOUT,
  );
});

describe('refusal logs when stdin ends [H08-LOG-FLOOD]', () => {
  it('the refusals over the per-minute budget are counted in one suppressed line when stdin ends, not only on a signal', async () => {
    await ensureBuilt();
    const served = startCli(['serve']);
    await served.waitForStderr(/serving over stdio/);
    served.child.stdin?.write('not json\n'.repeat(100));
    served.child.stdin?.end();
    const exit = await served.waitForExit(15_000);
    expect(exit.code).toBe(0);
    const refused = served
      .stderr()
      .split('\n')
      .filter((line) => line.includes('stdio message refused')).length;
    const suppressed = Number(/suppressed=(\d+)/.exec(served.stderr())?.[1] ?? 0);
    expect(refused).toBeGreaterThan(0);
    expect(refused + suppressed).toBe(100);
  });
});

describe('StdioLineTransport in process [H08-STDIO-LIMIT]', () => {
  function transportOver(maxMessageBytes: number) {
    const input = new PassThrough();
    const output = new PassThrough();
    let written = '';
    output.setEncoding('utf8').on('data', (s: string) => (written += s));
    const transport = new StdioLineTransport({ maxMessageBytes, input, output });
    const received: JSONRPCMessage[] = [];
    transport.onmessage = (m) => received.push(m);
    return { input, transport, received, written: () => written };
  }

  it('a client that never reads its answers stops being read: at most MAX_OUTPUT_BACKLOG_BYTES wait, then input resumes as output drains', async () => {
    const input = new PassThrough();
    // Nobody reads the output yet: what the transport writes piles up in it.
    const output = new PassThrough();
    const transport = new StdioLineTransport({ maxMessageBytes: MiB, input, output });
    let received = 0;
    const pad = 'x'.repeat(64 * 1024);
    transport.onmessage = (m) => {
      received++;
      void transport.send({ jsonrpc: '2.0', id: (m as { id: number }).id, result: { pad } }).catch(() => undefined);
    };
    await transport.start();
    const total = 1000; // 64 MB of answers, four times the backlog bound
    for (let id = 1; id <= total; id++) input.write(`{"jsonrpc":"2.0","id":${id},"method":"ping"}\n`);
    await vi.waitFor(() => {
      expect(input.isPaused()).toBe(true);
    });
    const heldBack = received;
    expect(heldBack).toBeLessThan(total);
    expect(output.writableLength).toBeLessThanOrEqual(MAX_OUTPUT_BACKLOG_BYTES + 2 * pad.length);
    // The client starts reading: everything is answered.
    let answers = 0;
    output.setEncoding('utf8').on('data', (s: string) => {
      answers += s.split('\n').length - 1;
    });
    await vi.waitFor(
      () => {
        expect(answers).toBe(total);
      },
      { timeout: 20_000 },
    );
    expect(received).toBe(total);
    await transport.close();
  });

  it('skipping a 64 MiB line holds no more than the limit in memory, and the next line is served', async () => {
    const { input, transport, received, written } = transportOver(MiB);
    await transport.start();
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    input.write('{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"');
    let most = 0;
    for (let i = 0; i < 1024; i++) {
      input.write(chunk);
      most = Math.max(most, transport.buffered);
    }
    expect(most).toBeLessThanOrEqual(MiB);
    input.write('"}}\n{"jsonrpc":"2.0","id":8,"method":"ping"}\n');
    await vi.waitFor(() => {
      expect(received).toHaveLength(1);
    });
    expect(received[0]).toMatchObject({ id: 8, method: 'ping' });
    await vi.waitFor(() => {
      expect(written()).toMatch(/"id":7,"error":\{"code":-32600/);
    });
    await transport.close();
  });

  it('a line that arrives in 4,096 pieces is joined once, not once per piece', async () => {
    const { input, transport, received } = transportOver(8 * MiB);
    await transport.start();
    const concat = vi.spyOn(Buffer, 'concat');
    try {
      const line = Buffer.from(acceptLine(9, 'z'.repeat(4 * MiB)));
      const piece = Math.ceil(line.length / 4096);
      for (let at = 0; at < line.length; at += piece) input.write(line.subarray(at, at + piece));
      await vi.waitFor(() => {
        expect(received).toHaveLength(1);
      });
      expect(concat.mock.calls.length).toBeLessThanOrEqual(1);
    } finally {
      concat.mockRestore();
      await transport.close();
    }
  });

  it('answers a line that is not JSON or not JSON-RPC with an error, and counts unanswered requests', async () => {
    const { input, transport, received, written } = transportOver(MiB);
    await transport.start();
    input.write('not json\n{"id":3,"foo":1}\n{"jsonrpc":"2.0","id":4,"method":"ping"}\n');
    await vi.waitFor(() => {
      expect(received).toHaveLength(1);
    });
    expect(written()).toMatch(/"id":null,"error":\{"code":-32700/);
    expect(written()).toMatch(/"id":3,"error":\{"code":-32600/);
    expect(transport.unanswered).toBe(1);
    await transport.send({ jsonrpc: '2.0', id: 4, result: {} });
    expect(transport.unanswered).toBe(0);
    expect(await transport.whenAnswered(10)).toBe(true);
    await transport.close();
  });
});

describe('StdioLineTransport property [H08-STDIO-LIMIT]', () => {
  type Piece =
    | { kind: 'request'; id: number }
    | { kind: 'oversized'; id: number; bytes: number; idLast: boolean }
    | { kind: 'garbage'; text: string };

  const LIMIT = 4096;
  const piece: fc.Arbitrary<Piece> = fc.oneof(
    fc.record({ kind: fc.constant('request' as const), id: fc.nat(1_000_000) }),
    fc.record({
      kind: fc.constant('oversized' as const),
      id: fc.nat(1_000_000),
      bytes: fc.integer({ min: LIMIT + 1, max: 4 * LIMIT }),
      idLast: fc.boolean(),
    }),
    fc.record({
      kind: fc.constant('garbage' as const),
      text: fc.string({ maxLength: 200 }).filter((t) => !t.includes('\n') && t.trim() !== '' && !t.startsWith('{')),
    }),
  );

  function lineOf(p: Piece): string {
    if (p.kind === 'request') return JSON.stringify({ jsonrpc: '2.0', id: p.id, method: 'ping' });
    if (p.kind === 'garbage') return p.text;
    const pad = 'p'.repeat(p.bytes);
    return p.idLast
      ? `{"jsonrpc":"2.0","method":"ping","params":{"pad":"${pad}"},"id":${p.id}}`
      : `{"jsonrpc":"2.0","id":${p.id},"method":"ping","params":{"pad":"${pad}"}}`;
  }

  it('whatever the chunking, every line gets exactly one outcome, in order, and at most the limit is held', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(piece, { minLength: 1, maxLength: 12 }),
        fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 1, maxLength: 20 }),
        async (pieces, cuts) => {
          const input = new PassThrough();
          const output = new PassThrough();
          let written = '';
          output.setEncoding('utf8').on('data', (t: string) => (written += t));
          const transport = new StdioLineTransport({ maxMessageBytes: LIMIT, input, output });
          const delivered: unknown[] = [];
          transport.onmessage = (m) => delivered.push((m as { id: unknown }).id);
          await transport.start();
          const bytes = Buffer.from(pieces.map((p) => lineOf(p) + '\n').join(''));
          let at = 0;
          let most = 0;
          for (let i = 0; at < bytes.length; i++) {
            const size = cuts[i % cuts.length] ?? 1;
            input.write(bytes.subarray(at, at + size));
            at += size;
            most = Math.max(most, transport.buffered);
          }
          await new Promise((r) => setImmediate(r));
          await transport.flushed();
          expect(most).toBeLessThanOrEqual(LIMIT);
          const errors = written
            .split('\n')
            .filter((l) => l !== '')
            .map((l) => JSON.parse(l) as { id: unknown; error: { code: number } });
          expect(delivered).toEqual(pieces.filter((p) => p.kind === 'request').map((p) => p.id));
          const expected = pieces
            .filter((p) => p.kind !== 'request')
            .map((p) => (p.kind === 'oversized' ? { id: p.id, code: -32600 } : { id: null, code: 'any' }));
          expect(errors).toHaveLength(expected.length);
          errors.forEach((e, i) => {
            const want = expected[i];
            if (want?.code === -32600) expect(e).toMatchObject({ id: want.id, error: { code: -32600 } });
            else expect([-32700, -32600]).toContain(e.error.code);
          });
          await transport.close();
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('stdin closed by the client [H08-DRAIN]', () => {
  it(
    'requests written before the end of stdin are all answered before the process exits 0',
    async () => {
      await ensureBuilt();
      const child = startCli([]);
      const lines = [
        {
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1.0.0' } },
        },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
        ...Array.from({ length: 20 }, (_, i) => ({
          jsonrpc: '2.0',
          id: 10 + i,
          method: 'tools/call',
          params: { name: 'intent_prepare', arguments: SEED_ARGS },
        })),
      ];
      child.child.stdin?.end(lines.map((l) => JSON.stringify(l) + '\n').join(''));
      const exit = await child.waitForExit(8000);
      expect(exit.timedOut).toBe(false);
      expect(exit.code).toBe(0);
      const answered = new Set(linesOf(child).map((l) => l.id));
      for (const id of [0, 1, ...Array.from({ length: 20 }, (_, i) => 10 + i)])
        expect(answered.has(id), `id ${id}`).toBe(true);
    },
    SPAWN_TIMEOUT,
  );
});

describe('SIGTERM with validations in flight [H08-DRAIN]', () => {
  it(
    'every one of 60 pipelined accepts gets a response, and the process exits 0',
    async () => {
      await ensureBuilt();
      const child = startCli([]);
      await initialize(child);
      const count = 60;
      for (let i = 0; i < count; i++)
        child.send({
          jsonrpc: '2.0',
          id: 1000 + i,
          method: 'tools/call',
          params: { name: 'intent_prepare', arguments: SEED_ARGS },
        });
      await child.waitForStdout(new RegExp(`"id":${1000 + count - 1}[,}]`));
      await new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (linesOf(child).filter((l) => typeof l.id === 'number' && l.id >= 1000).length === count) resolve();
          else if (child.child.exitCode !== null) reject(new Error('the child exited'));
          else setTimeout(check, 20);
        };
        check();
      });
      const tasks = Array.from({ length: count }, (_, i) => {
        const task = byId(child, 1000 + i)?.result?.structuredContent as { requestId: string; submissionToken: string };
        expect(typeof task.requestId).toBe('string');
        return task;
      });
      // Large candidates: validations of different requests queue up behind each other.
      const padding = ' '.repeat(200_000);
      const batch = tasks
        .map(
          (task, i) =>
            JSON.stringify({
              jsonrpc: '2.0',
              id: 2000 + i,
              method: 'tools/call',
              params: {
                name: 'intent_accept',
                arguments: {
                  requestId: task.requestId,
                  submissionToken: task.submissionToken,
                  candidateText: SEED_CANDIDATE + padding,
                },
              },
            }) + '\n',
        )
        .join('');
      child.child.stdin?.write(batch);
      child.child.kill('SIGTERM');
      const exit = await child.waitForExit(8000);
      expect(exit.timedOut).toBe(false);
      expect(exit.code).toBe(0);

      const answers = linesOf(child).filter((l) => typeof l.id === 'number' && l.id >= 2000);
      const ids = new Set(answers.map((l) => l.id));
      expect(ids.size, `answered ${ids.size} of ${count}`).toBe(count);
      const codes = new Map<string, number>();
      for (const answer of answers) {
        expect(answer.error, JSON.stringify(answer.error)).toBeUndefined();
        const code =
          answer.result?.isError === true
            ? (JSON.parse(answer.result.content?.[0]?.text ?? '{}') as { error: { code: string } }).error.code
            : 'completed';
        codes.set(code, (codes.get(code) ?? 0) + 1);
      }
      // Completed before the signal, or SESSION_CLOSED: nothing else, nothing dropped.
      expect(
        [...codes.keys()].every((c) => c === 'completed' || c === 'SESSION_CLOSED'),
        JSON.stringify([...codes]),
      ).toBe(true);
    },
    SPAWN_TIMEOUT,
  );
});
