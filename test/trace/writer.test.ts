/**
 * The trace writer (issue 11): a header line first, records buffered (never a synchronous write per record), options
 * checked at construction.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { HandoffTransition } from '../../src/engine/inspection.js';
import { createLogger } from '../../src/server/logger.js';
import { machineHash } from '../../src/trace/format.js';
import { TraceWriter } from '../../src/trace/writer.js';
import { thrownBy } from '../support/intentErrors.js';
import { tempDir } from './support.js';

const dir = tempDir();
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const step: HandoffTransition = {
  at: '2026-11-02T09:30:00.000Z',
  sessionId: 's',
  requestId: 'r',
  instance: 'main',
  from: null,
  event: 'prepare',
  to: 'prepared',
  answer: 'none',
  validations: 0,
  mode: 'host',
};

describe('trace writer', () => {
  it('writes the header, buffers records and writes them on flush, appending after an earlier run', async () => {
    const path = join(dir, 'buffered.jsonl');
    const first = new TraceWriter(path, { logger: createLogger('silent') });
    first.record(step);
    // Nothing reached the file synchronously: the request path pays a stringify and a push.
    expect(statSync(path).size).toBe(0);
    await first.flush();
    const header = JSON.stringify({ format: 'intent-mcp-trace', version: 1, machine: machineHash() });
    expect(readFileSync(path, 'utf8')).toBe(`${header}\n${JSON.stringify(step)}\n`);
    await first.close();
    first.record(step); // after close: ignored
    const second = new TraceWriter(path, { logger: createLogger('silent') });
    second.record({ ...step, requestId: 'r2' });
    await second.close();
    const lines = readFileSync(path, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[2]).toBe(header); // a restart is marked by a header
    expect(second.stats).toMatchObject({ records: 1, dropped: 0, rotations: 0, writeErrors: 0 });
  });

  it('checks its options at construction', () => {
    for (const maxBytes of [0, 1000, 1.5, Number.NaN])
      expect(
        thrownBy(() => new TraceWriter(join(dir, 'x.jsonl'), { logger: createLogger('silent'), maxBytes })).code,
      ).toBe('CONFIG_INVALID');
    expect(thrownBy(() => new TraceWriter('', { logger: createLogger('silent') })).message).toMatch(/--trace/);
  });

  it('refuses a path that is not a regular file: a FIFO without a reader at once (never blocks in open), a device', () => {
    const fifo = join(dir, 'trace.fifo');
    execFileSync('mkfifo', [fifo]);
    const refused = thrownBy(() => new TraceWriter(fifo, { logger: createLogger('silent') }));
    expect(refused.code).toBe('CONFIG_INVALID');
    expect(refused.message).toMatch(/ENXIO/);
    // Rotation renames FILE: a device (run as root, /dev/null) must never be taken for a trace file.
    const device = thrownBy(() => new TraceWriter('/dev/null', { logger: createLogger('silent') }));
    expect(device.code).toBe('CONFIG_INVALID');
    expect(device.message).toMatch(/not a regular file/);
    expect(statSync('/dev/null').isCharacterDevice()).toBe(true);
  });
});
