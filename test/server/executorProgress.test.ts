/**
 * `intent_parse` in the built command reports progress while it waits for its model, when the caller asked for it:
 * the official client's `onprogress` sees it before the result (issue 13).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SEED_ARGS, SEED_CANDIDATE } from '../support/mcpFixtures.js';
import { startFakeOpenAI, stopFakeOpenAI, type FakeOpenAI } from '../support/fakeOpenAI.js';
import {
  childEnv,
  configDir,
  connectCli,
  executorBlock,
  stopAllChildren,
  writeConfig,
} from '../support/serverProcess.js';

let fake: FakeOpenAI;
beforeEach(async () => {
  fake = await startFakeOpenAI();
});
afterEach(async () => {
  await stopAllChildren();
  await stopFakeOpenAI(fake);
});

describe('intent_parse progress over stdio', () => {
  it('[I13-PARSE-PROGRESS] a call with a progress token gets notifications/progress before its result; one without gets none', async () => {
    const file = writeConfig(configDir(), 'executor.json', {
      mode: 'executor',
      instances: { main: { executor: executorBlock(fake.baseUrl) } },
    });
    fake.reply({ content: SEED_CANDIDATE }, { content: SEED_CANDIDATE });
    const connection = await connectCli('2025-11-25', ['--config', file], childEnv({ TEST_KEY: 'k' }));
    try {
      const progress: { progress: number; message?: string | undefined }[] = [];
      const result = await connection.client.callTool(
        { name: 'intent_parse', arguments: SEED_ARGS },
        {
          onprogress: (p) => {
            progress.push(p);
          },
          resetTimeoutOnProgress: true,
        },
      );
      expect(result.isError).not.toBe(true);
      expect(progress.length).toBeGreaterThanOrEqual(1);
      expect(progress[0]).toMatchObject({ progress: 1, message: 'waiting for the model' });
      // Progress only grows, and never carries the request or candidate text.
      for (let i = 1; i < progress.length; i++)
        expect(progress[i]!.progress).toBeGreaterThan(progress[i - 1]!.progress);
      expect(JSON.stringify(progress)).not.toContain(SEED_ARGS.input.slice(0, 20));

      const quiet: unknown[] = [];
      connection.client.setNotificationHandler('notifications/progress', (n) => {
        quiet.push(n);
      });
      const plain = await connection.client.callTool({ name: 'intent_parse', arguments: SEED_ARGS });
      expect(plain.isError).not.toBe(true);
      expect(quiet).toEqual([]);
    } finally {
      await connection.close();
    }
  }, 30_000);
});
