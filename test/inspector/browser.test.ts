/**
 * The inspector page in a real headless Chromium (Debian `chromium`, driven by npm `playwright-core`; never a downloaded
 * browser build), against the BUILT command started with `--inspect`, over stdio and over HTTP. The official client
 * drives one handoff prepared → validating → correcting → validating → completed while the page is open; the page must
 * follow it live (SSE, no reload): the timeline, the current state highlighted on the diagram, the path emphasised, the
 * edge counts and the store usage. A screenshot is saved to `artifacts/inspector.png` (a CI artifact).
 *
 * Without Chromium the file skips with a one-line notice; under `.ci/run` (`INTENT_MCP_REQUIRE_SYSTEM_PACKAGES=1`,
 * which installs it) a missing Chromium fails it instead.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { START_EDGE, edgeOf } from '../../machines/diagram.js';
import { launchChromium, skipWithoutChromium } from '../support/browser.js';
import { connectClient, pollUntil } from '../support/httpHelpers.js';
import { startBuiltServer, type ChildServer } from '../support/httpChild.js';
import { INVALID_CANDIDATE, SEED_ARGS, SEED_CANDIDATE, textOf } from '../support/mcpFixtures.js';
import { REPO_ROOT, connectCli, ensureBuilt } from '../support/serverProcess.js';

export const SCREENSHOT = join(REPO_ROOT, 'artifacts', 'inspector.png');

const TEST = 'the inspector browser test';
const skipped = skipWithoutChromium(TEST);

let browser: Browser | undefined;
beforeAll(async () => {
  if (skipped) return;
  await ensureBuilt();
  browser = await launchChromium(TEST);
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

type Call = (
  name: string,
  args: Record<string, unknown>,
) => Promise<{ isError?: unknown; structuredContent?: unknown; content?: unknown }>;

const PATH_EDGES = [
  { from: null, event: 'prepare', to: 'prepared', answer: 'none' },
  { from: 'prepared', event: 'ACCEPT', to: 'validating', answer: 'validate' },
  { from: 'validating', event: 'VALIDATED', to: 'correcting', answer: 'invalid' },
  { from: 'correcting', event: 'ACCEPT', to: 'validating', answer: 'validate' },
  { from: 'validating', event: 'VALIDATED', to: 'completed', answer: 'result' },
].map((step) => edgeOf(step) ?? '?');

/** The fill of a state's shape on the page's diagram. */
function stateFill(page: Page, state: string): Promise<string | null> {
  return page.locator(`#diagram g#state-${state} path, #diagram g#state-${state} polygon`).first().getAttribute('fill');
}

async function timelineRows(page: Page): Promise<string[]> {
  const rows = await page.locator('#timeline-body tr').all();
  return Promise.all(
    rows.map(async (row) => (await row.locator('td').allTextContents()).map((t) => t.trim()).join(' | ')),
  );
}

/** Drives the handoff through `call` with the page open, asserting what the page shows at each stage. */
async function watchHandoff(inspectorUrl: string, call: Call, screenshot?: string): Promise<void> {
  if (browser === undefined) throw new Error('no browser');
  const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
  const external: string[] = [];
  page.on('request', (req) => {
    if (!req.url().startsWith(inspectorUrl)) external.push(req.url());
  });
  try {
    const prepared = await call('intent_prepare', SEED_ARGS);
    expect(prepared.isError).toBe(false);
    const task = prepared.structuredContent as { requestId: string; submissionToken: string };
    await page.goto(`${inspectorUrl}?request=${task.requestId}`);
    await page.locator('#live-status', { hasText: 'live (SSE)' }).waitFor();
    expect(await page.locator('#selected-state').textContent()).toBe('prepared');
    expect(await stateFill(page, 'prepared')).toBe('#ffd54f');
    expect(await page.locator(`#live-${task.requestId} .state`).textContent()).toBe('prepared');

    const invalid = await call('intent_accept', {
      requestId: task.requestId,
      submissionToken: task.submissionToken,
      candidateText: INVALID_CANDIDATE,
    });
    expect(textOf(invalid)).toContain('CANDIDATE_INVALID');
    // Applied from the SSE stream, without a reload: the timeline, the selected state, the highlight on the diagram.
    await page.locator('#selected-state', { hasText: 'correcting' }).waitFor();
    await pollUntil('correcting highlighted', async () => (await stateFill(page, 'correcting')) === '#ffd54f', 10_000);
    expect(await stateFill(page, 'prepared')).not.toBe('#ffd54f');
    expect(await page.locator(`#live-${task.requestId} .validations`).textContent()).toBe('1 of 2');

    const done = await call('intent_accept', {
      requestId: task.requestId,
      submissionToken: task.submissionToken,
      candidateText: SEED_CANDIDATE,
    });
    expect(done.isError).toBe(false);
    await page.locator('#selected-state', { hasText: 'completed' }).waitFor();
    await pollUntil('completed highlighted', async () => (await stateFill(page, 'completed')) === '#ffd54f', 10_000);
    expect(await stateFill(page, 'correcting')).not.toBe('#ffd54f');
    const rows = await timelineRows(page);
    // time | event | from → to | answer | validations used | detail
    expect(rows.map((r) => r.split(' | ').slice(1, 5).join(' | '))).toEqual([
      'prepare | — → prepared | none | 0 of 2',
      'ACCEPT | prepared → validating | validate | 1 of 2',
      'VALIDATED | validating → correcting | invalid | 1 of 2',
      'ACCEPT | correcting → validating | validate | 2 of 2',
      'VALIDATED | validating → completed | result | 2 of 2',
    ]);
    // Edge counts, in the table and on the diagram (the path the request took is emphasised there).
    await pollUntil(
      'the path drawn',
      async () => (await page.locator(`#diagram g[id="edge-${PATH_EDGES[4] ?? ''}"].taken`).count()) === 1,
      10_000,
    );
    for (const id of PATH_EDGES) {
      expect(await page.locator(`[id="count-edge-${id}"]`).textContent(), id).toBe('1');
      const edge = page.locator(`#diagram g[id="edge-${id}"]`);
      // The start arrow is emphasised by its pen only (the diagram gives it no class).
      if (id !== START_EDGE) expect(await edge.getAttribute('class'), id).toContain('taken');
      expect(await edge.locator('text').allTextContents(), id).toContainEqual(expect.stringContaining('×1'));
    }
    expect(await page.locator('#transitions-total').textContent()).toBe('5');
    // The store usage: the completed request's reply is retained.
    expect(await page.locator('#store-items').textContent()).toBe('1');
    expect(await page.locator('#store').textContent()).toMatch(
      /items 1 of 32 · bytes [\d.]+ (B|KiB) of 8 MiB · evictions 0/,
    );
    // The terminal request appears in the recent list after a reload (server-rendered), coloured as completed.
    await page.reload();
    expect(await page.locator('#recent tbody tr').first().textContent()).toContain('completed');
    expect(await page.locator('#recent .kind-completed').count()).toBeGreaterThan(0);
    if (screenshot !== undefined) {
      mkdirSync(join(REPO_ROOT, 'artifacts'), { recursive: true });
      await page.screenshot({ path: screenshot, fullPage: true });
    }
    expect(external).toEqual([]);
  } finally {
    await page.close();
  }
}

describe.skipIf(skipped)('[S05-INSPECT-BROWSER] the inspector page in headless Chromium', () => {
  let server: ChildServer | undefined;
  afterAll(async () => {
    await server?.stop();
  });

  it('follows a handoff live over HTTP: path, highlighted state, edge counts, store usage (screenshot)', async () => {
    server = await startBuiltServer(['--inspect', '0']);
    const inspectorUrl = /inspector listening url=(\S+)/.exec(server.stderr())?.[1] ?? '';
    expect(inspectorUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const client = await connectClient(server.url, '2025-11-25');
    try {
      await watchHandoff(inspectorUrl, client.callTool, SCREENSHOT);
    } finally {
      await client.end();
    }
  }, 60_000);

  it('works with JavaScript disabled: server-rendered, refreshing itself, filters by GET form', async () => {
    if (browser === undefined || server === undefined) throw new Error('the HTTP test must run first');
    const inspectorUrl = /inspector listening url=(\S+)/.exec(server.stderr())?.[1] ?? '';
    const context = await browser.newContext({ javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      await page.goto(inspectorUrl);
      expect(await page.locator('#live-status').textContent()).toBe('refreshing every 3 s');
      expect(await page.locator('#diagram svg').count()).toBe(1);
      expect(await page.locator('#recent .kind-completed').count()).toBeGreaterThan(0);
      await page.locator('#filters select[name="state"]').selectOption('completed');
      await page.locator('#filters button[type="submit"]').click();
      await page.waitForURL(/[?&]state=completed/);
      expect(await page.locator('#recent tbody tr').count()).toBeGreaterThan(0);
      const link = page.locator('#recent tbody tr a').first();
      await link.click();
      await page.waitForURL(/request=/);
      expect(await page.locator('#timeline-body tr').count()).toBe(5);
      expect(await page.locator('#selected-state').textContent()).toBe('completed');
    } finally {
      await context.close();
    }
  }, 60_000);

  it('follows a handoff live over stdio', async () => {
    const cli = await connectCli('2025-11-25', ['--inspect', '0']);
    try {
      await pollUntil(
        'the inspector URL',
        () => Promise.resolve(/inspector listening url=/.test(cli.stderr())),
        10_000,
      );
      const inspectorUrl = /inspector listening url=(\S+)/.exec(cli.stderr())?.[1] ?? '';
      await watchHandoff(inspectorUrl, (name, args) => cli.client.callTool({ name, arguments: args }));
    } finally {
      await cli.close();
    }
  }, 60_000);
});
