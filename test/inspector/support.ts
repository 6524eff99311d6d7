/**
 * Shared material for the inspector tests: an in-process adapter (the embedded default) with an inspector on a free
 * loopback port, requests with exact headers, and an SSE reader that collects events until a condition holds.
 */
import { request as httpRequest } from 'node:http';
import type { IntentMcpAdapter, IntentMcpSession } from '../../src/mcp/adapter.js';
import { startInspector } from '../../src/inspector/index.js';
import { hostAdapter, silentLogger } from '../support/httpHelpers.js';
import { SEED_ARGS, SEED_CANDIDATE, successOf } from '../support/mcpFixtures.js';

export interface TestInspector {
  adapter: IntentMcpAdapter;
  inspector: Awaited<ReturnType<typeof startInspector>>;
  base: string;
  close(): Promise<void>;
}

export async function startTestInspector(
  options: { adapter?: IntentMcpAdapter; maxRequests?: number; maxSteps?: number; maxRecent?: number } = {},
): Promise<TestInspector> {
  const { adapter = hostAdapter(), ...modelOptions } = options;
  const inspector = await startInspector(adapter, { port: 0, logger: silentLogger, ...modelOptions });
  return {
    adapter,
    inspector,
    base: `http://127.0.0.1:${inspector.port}`,
    close: async () => {
      await inspector.close();
      await adapter.close();
    },
  };
}

/** An invalid candidate (no coverage, no intents) carrying a recognisable marker. */
export const CANDIDATE_MARKER = 'CANDIDATE-MARKER-q7Zx';
export const MARKED_INVALID_CANDIDATE = `{"turnKind":"request","marker":"${CANDIDATE_MARKER}"}`;

export interface Task {
  requestId: string;
  submissionToken: string;
}

export async function prepare(session: IntentMcpSession, args: object = SEED_ARGS): Promise<Task> {
  return successOf(await session.callTool('intent_prepare', args), '2025-11-25') as unknown as Task;
}

export function accept(session: IntentMcpSession, task: Task, candidateText: string) {
  return session.callTool('intent_accept', {
    requestId: task.requestId,
    submissionToken: task.submissionToken,
    candidateText,
  });
}

/** prepared → validating → correcting → validating → completed, with a marked invalid candidate first. */
export async function correctedHandoff(session: IntentMcpSession): Promise<Task> {
  const task = await prepare(session);
  await accept(session, task, MARKED_INVALID_CANDIDATE);
  await accept(session, task, SEED_CANDIDATE);
  return task;
}

/** One request with exact headers (`Host` as given, or the target's), the whole body read. */
export { rawRequest as get } from '../support/httpHelpers.js';

export interface SseEvent {
  event: string;
  data: string;
}

/** A live SSE reader: every event so far, and a bounded wait for one that matches. */
export interface SseReader {
  status: number;
  events: SseEvent[];
  raw(): string;
  waitFor(match: (events: SseEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): void;
}

export function readSse(url: string): Promise<SseReader> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    let raw = '';
    const events: SseEvent[] = [];
    const waiters = new Set<() => void>();
    const req = httpRequest(
      { host: target.hostname, port: target.port, path: target.pathname + target.search, agent: false },
      (res) => {
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk: string) => {
          raw += chunk;
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            let event = 'message';
            const data: string[] = [];
            for (const line of block.split('\n')) {
              if (line.startsWith('event: ')) event = line.slice(7);
              else if (line.startsWith('data: ')) data.push(line.slice(6));
            }
            if (data.length > 0) events.push({ event, data: data.join('\n') });
          }
          for (const w of [...waiters]) w();
        });
        res.on('error', () => undefined);
        resolve({
          status: res.statusCode ?? 0,
          events,
          raw: () => raw,
          waitFor: (match, timeoutMs = 5000) =>
            new Promise<void>((done, fail) => {
              const check = (): void => {
                if (!match(events)) return;
                clearTimeout(timer);
                waiters.delete(check);
                done();
              };
              const timer = setTimeout(() => {
                waiters.delete(check);
                fail(
                  new Error(
                    `SSE: no matching event within ${timeoutMs} ms; got ${events.map((e) => e.event).join(',')}`,
                  ),
                );
              }, timeoutMs);
              waiters.add(check);
              check();
            }),
          close: () => req.destroy(),
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
