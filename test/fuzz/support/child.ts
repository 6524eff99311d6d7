/**
 * The built command as a child process for the fuzz suite: raw bytes in on stdin, stdout collected as lines, and a
 * bounded wait for answers. The bound is a hang guard of the harness (a run that gets no answer is reported as such,
 * with what did arrive), never a timing assertion: healthy runs end as soon as their answers are in.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { CLI, REPO_ROOT } from '../../support/serverProcess.js';

/** How long a run waits for answers that are owed before it reports them missing. */
export const ANSWER_GUARD_MS = 10_000;

export interface StdioChild {
  readonly child: ChildProcessWithoutNullStreams;
  /** Complete stdout lines so far. */
  lines(): string[];
  /** stdout written after the last newline (a line that never ended). */
  partial(): string;
  stderr(): string;
  exited(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** Writes bytes, honouring back-pressure; false when the pipe is gone. */
  write(bytes: Buffer): Promise<boolean>;
  /** Resolves once `done(lines)` holds, the child exits, or the guard passes; true when `done` held. */
  until(done: (lines: string[]) => boolean, guardMs?: number): Promise<boolean>;
  kill(): Promise<void>;
}

export function startStdioChild(args: readonly string[] = []): StdioChild {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  const complete: string[] = [];
  let partial = Buffer.alloc(0);
  let err = '';
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const l of [...listeners]) l();
  };
  child.stdout.on('data', (chunk: Buffer) => {
    let data = Buffer.concat([partial, chunk]);
    for (let nl = data.indexOf(10); nl >= 0; nl = data.indexOf(10)) {
      complete.push(data.subarray(0, nl).toString('utf8'));
      data = data.subarray(nl + 1);
    }
    partial = data;
    notify();
  });
  child.stderr.setEncoding('utf8').on('data', (s: string) => {
    // Keep the tail only: a flood of logs must not grow the harness without bound.
    err = (err + s).slice(-20_000);
  });
  child.stdin.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => {
    child.on('close', (code, signal) => {
      exit = { code, signal };
      notify();
      resolve();
    });
  });
  return {
    child,
    lines: () => complete,
    partial: () => partial.toString('utf8'),
    stderr: () => err,
    exited: () => exit,
    async write(bytes) {
      if (exit !== undefined || child.stdin.destroyed) return false;
      const ok = child.stdin.write(bytes);
      if (ok) return true;
      return new Promise<boolean>((resolve) => {
        const done = (value: boolean): void => {
          child.stdin.off('drain', onDrain);
          listeners.delete(onExit);
          resolve(value);
        };
        const onDrain = (): void => {
          done(true);
        };
        const onExit = (): void => {
          if (exit !== undefined) done(false);
        };
        child.stdin.on('drain', onDrain);
        listeners.add(onExit);
      });
    },
    until(done, guardMs = ANSWER_GUARD_MS) {
      return new Promise<boolean>((resolve) => {
        const finish = (value: boolean): void => {
          clearTimeout(timer);
          listeners.delete(check);
          resolve(value);
        };
        const check = (): void => {
          if (done(complete)) finish(true);
          else if (exit !== undefined) finish(false);
        };
        const timer = setTimeout(() => {
          finish(false);
        }, guardMs);
        listeners.add(check);
        check();
      });
    },
    async kill() {
      if (exit === undefined) child.kill('SIGKILL');
      await closed;
    },
  };
}
