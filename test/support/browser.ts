/**
 * Headless Chromium for the browser tests (the inspector page, the trace report): Debian's `chromium` driven by npm
 * `playwright-core`, which never downloads a browser build. The flags are those of stack-facts.md ("Browser tests").
 *
 * Without Chromium a test that needs it skips with a one-line notice (`skipWithoutChromium`); under `.ci/run`
 * (`INTENT_MCP_REQUIRE_SYSTEM_PACKAGES=1`, which installs it) it runs and fails instead (`launchChromium` throws
 * saying how to install it).
 */
import { accessSync, constants } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { SYSTEM_PACKAGES_REQUIRED } from './nginxProxy.js';

const CHROMIUM_CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/lib/chromium/chromium'];
/** The flags of stack-facts.md ("Browser tests"); playwright adds its own headless switches. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

function findChromium(): string | undefined {
  for (const path of CHROMIUM_CANDIDATES) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // keep looking
    }
  }
  return undefined;
}

/** The Chromium binary of this machine, if any. */
export const CHROMIUM_PATH = findChromium();

/**
 * Whether `test` (e.g. "the inspector browser test") skips here: Chromium is missing and the system packages are not
 * required. When it skips, says so in one line on stderr.
 */
export function skipWithoutChromium(test: string): boolean {
  const skip = CHROMIUM_PATH === undefined && !SYSTEM_PACKAGES_REQUIRED;
  if (skip) process.stderr.write(`skipped: ${test} needs Chromium (apt-get install chromium; .ci/run installs it)\n`);
  return skip;
}

/** Launches headless Chromium for `test`, or throws saying how to install it. */
export function launchChromium(test: string): Promise<Browser> {
  if (CHROMIUM_PATH === undefined)
    throw new Error(
      `Chromium is not installed, so ${test} cannot run; install it (Debian: apt-get install chromium, as .ci/run does) and run the tests again.`,
    );
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
}
