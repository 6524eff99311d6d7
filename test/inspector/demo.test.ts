/**
 * `npm run demo` (issue 10): the scripted host against the built command with `--inspect` runs to completion and its
 * output shows every step, every call with its reply, and every transition the inspector streamed, in order.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, ensureBuilt } from '../support/serverProcess.js';

function runDemo(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(REPO_ROOT, 'scripts', 'demo.mjs'), ...args],
      { cwd: REPO_ROOT, timeout: 60_000 },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
      },
    );
  });
}

describe('[S05-DEMO] npm run demo', () => {
  it('plays every step and prints every call, reply and transition', async () => {
    await ensureBuilt();
    // --step without a terminal does not pause (CI has no TTY).
    const run = await runDemo(['--inspect-port', '0', '--timeout-ms', '1500', '--step']);
    expect(run.code, run.stderr).toBe(0);
    const out = run.stdout;
    expect(out).toMatch(/^Inspector page: http:\/\/127\.0\.0\.1:\d+\/ /m);
    for (const title of [
      'prepare a request',
      'submit a candidate with a format error',
      'read the feedback',
      'submit the corrected candidate',
      'the result',
      'a replay of the retained result',
      'a conflict',
      'prepare another request and cancel it',
      'let its 1500 ms deadline pass',
    ])
      expect(out).toContain(title);
    expect(out.match(/^▶ step \d\/9: /gm)).toHaveLength(9);
    expect(out).toMatch(/✎ {3}\/coverage: /);
    expect(out).toContain('HANDOFF_CONFLICT');
    expect(out).toContain('HANDOFF_EXPIRED');
    // Every transition, in order (request ids aside).
    const transitions = [...out.matchAll(/◆ transition \S+ (\w+): (\S+) → (\w+) \(answer (\w+)/g)].map(
      (m) => `${m[1]} ${m[2]}→${m[3]} ${m[4]}`,
    );
    expect(transitions).toEqual([
      'prepare —→prepared none',
      'ACCEPT prepared→validating validate',
      'VALIDATED validating→correcting invalid',
      'ACCEPT correcting→validating validate',
      'VALIDATED validating→completed result',
      'replay completed→completed replay',
      'ACCEPT completed→completed conflict',
      'prepare —→prepared none',
      'CANCEL prepared→cancelled withdrawn',
      'prepare —→prepared none',
      'DEADLINE prepared→expired too_late',
      'ACCEPT expired→expired too_late',
    ]);
    expect(out).toContain('Done: 12 transitions.');
    // Calls and replies are printed; the token only as a 6-character prefix.
    expect(out.match(/→ call intent_/g)?.length).toBe(9);
    expect(out.match(/← reply/g)?.length).toBe(9);
    expect(out).not.toMatch(/"submissionToken":"[^"…]{7,}"/);
  }, 90_000);
});
