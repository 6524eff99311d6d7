import { defineConfig } from 'vitest/config';

/**
 * The short soak (`npm run soak`, run by .ci/run after the fuzz suite): test/soak/*.test.ts, kept out of `npm test`
 * (vitest.config.ts excludes test/soak) so the unit suite stays quick. `--expose-gc` for the heap-after-GC check; the
 * worker is a child process so the flag reaches it.
 */
export default defineConfig({
  test: {
    include: ['test/soak/**/*.test.ts'],
    pool: 'forks',
    execArgv: ['--expose-gc'],
    testTimeout: 300_000,
  },
});
