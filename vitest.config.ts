import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Property tests run on one fixed seed (FC_SEED overrides it locally).
    setupFiles: ['test/support/fastCheckSeed.ts'],
    testTimeout: 30_000,
  },
});
