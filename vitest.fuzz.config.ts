import { defineConfig } from 'vitest/config';

/**
 * The bounded fuzz suite (`npm run fuzz`, run by .ci/run after `npm test`): fast-check properties with fixed seeds in
 * test/fuzz/*.fuzz.ts. Kept out of `npm test` (whose include is test/**\/*.test.ts) so the unit suite stays quick.
 */
export default defineConfig({
  test: {
    include: ['test/fuzz/**/*.fuzz.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
