/**
 * The trace writer (issue 11): a header line first, records buffered (never a synchronous write per record), options
 * checked at construction.
 */
import { existsSync, lstatSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
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

  it('never rotates a character device: as root, rotating --trace /dev/null would rename the device', async () => {
    // Through a link in the temp dir: should rotation come back, it renames the link, never /dev/null itself.
    const link = join(dir, 'null-link');
    symlinkSync('/dev/null', link);
    const device = new TraceWriter(link, { logger: createLogger('silent'), maxBytes: 65536 });
    for (let i = 0; i < 1000; i++) device.record({ ...step, requestId: `r${i}` });
    await device.close();
    expect(device.stats).toMatchObject({ records: 1000, rotations: 0, writeErrors: 0, dropped: 0 });
    expect(existsSync(`${link}.1`)).toBe(false);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });
});
