import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The soak has its own command (npm run soak, vitest.soak.config.ts).
    exclude: [...configDefaults.exclude, 'test/soak/**'],
    // Property tests run on one fixed seed (FC_SEED overrides it locally).
    setupFiles: ['test/support/fastCheckSeed.ts'],
    testTimeout: 30_000,
  },
});
