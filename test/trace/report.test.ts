/**
 * `trace report` (issue 11): the report of the scripted session's trace, written by the BUILT command, opens in headless
 * Chromium and shows every request with how it ended; the browser requests nothing but the file itself. Neither the
 * report nor the trace holds a token or candidate text. A large trace is summarised, and says so.
 *
 * Chromium comes from Debian (`/usr/bin/chromium`), driven by `playwright-core` (which never downloads a browser). Without
 * it the browser test skips with a one-line notice; under `.ci/run` (`INTENT_MCP_REQUIRE_SYSTEM_PACKAGES=1`) it fails.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectReport, renderReport } from '../../src/trace/report.js';
import { launchChromium, skipWithoutChromium } from '../support/browser.js';
import { ensureBuilt, runCli } from '../support/serverProcess.js';
import { CANDIDATE_MARKER, SEED_MARKER, scriptedSession, tempDir, tracedSession, type ScriptedRun } from './support.js';
import { createLogger } from '../../src/server/logger.js';
import { TraceWriter } from '../../src/trace/writer.js';

const skipBrowser = skipWithoutChromium('the trace report browser test');

let dir = '';
let tracePath = '';
let reportPath = '';
let run: ScriptedRun & { text: string };

beforeAll(async () => {
  await ensureBuilt();
  dir = tempDir();
  tracePath = join(dir, 'trace.jsonl');
  reportPath = join(dir, 'report.html');
  run = await tracedSession(tracePath);
  const made = await runCli(['trace', 'report', tracePath, '-o', reportPath]);
  expect(made.code, made.stderr).toBe(0);
}, 120_000);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('trace report', () => {
  it('[I11-TRACE-MARKERS] is one file without script or external reference, and holds no token or candidate text', () => {
    const html = readFileSync(reportPath, 'utf8');
    expect(html).toMatch(/^<!DOCTYPE html>/);
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"`);
    expect(html).not.toMatch(/<script|<link|<iframe|<img|@import|url\(/i);
    // Only the SVG namespace and in-page anchors: nothing a browser would fetch.
    for (const ref of html.match(/(?:href|src)="[^"]*"/g) ?? []) expect(ref).toMatch(/^href="#/);
    for (const secret of [...run.tokens, CANDIDATE_MARKER, SEED_MARKER]) expect(html).not.toContain(secret);
    // The diagram carries this trace's counts: eight requests entered `prepared`.
    expect(html).toMatch(/id="state-prepared"[^]*?>8</);
  });

  it.skipIf(skipBrowser)(
    '[I11-TRACE-REPORT] opens in headless Chromium, shows every request with its end, and loads nothing from outside the file',
    async () => {
      const browser = await launchChromium('the trace report browser test');
      try {
        const page = await browser.newPage();
        const url = pathToFileURL(reportPath).href;
        const requested: string[] = [];
        page.on('request', (request) => requested.push(request.url()));
        await page.route('**/*', (route) => (route.request().url() === url ? route.continue() : route.abort()));
        await page.goto(url);
        expect(requested).toEqual([url]);
        const rows: { id: string; end: string; visible: boolean }[] = [];
        for (const tr of await page.locator('tr.request').all())
          rows.push({
            id: (await tr.getAttribute('data-request')) ?? '',
            end: (await tr.locator('td.end').textContent()) ?? '',
            visible: await tr.isVisible(),
          });
        expect(rows).toHaveLength(run.ends.size);
        for (const row of rows) {
          expect(row.visible).toBe(true);
          expect(row.end.startsWith(`${run.ends.get(row.id) ?? 'unknown'} · `), `${row.id}: ${row.end}`).toBe(true);
        }
        // The diagram rendered as SVG, with its states.
        expect(await page.locator('.diagram svg #state-completed').count()).toBe(1);
        // Each request's timeline is there too.
        expect(await page.locator('details[id^="t-"]').count()).toBe(run.ends.size);
        expect(requested).toEqual([url]);
      } finally {
        await browser.close();
      }
    },
    60_000,
  );

  it('summarises a large trace: aggregates over all, details for the first and last requests, and says so', async () => {
    const path = join(dir, 'large.jsonl');
    const writer = new TraceWriter(path, { logger: createLogger('silent') });
    const ends = new Map<string, string>();
    for (let i = 0; i < 4; i++) {
      const one = await scriptedSession((adapter) => adapter.inspect(writer.record));
      for (const [id, end] of one.ends) ends.set(id, end);
    }
    await writer.close();
    const data = await collectReport([path], { detail: 5 });
    expect(data.requests).toBe(ends.size);
    expect(data.first).toHaveLength(5);
    expect(data.last).toHaveLength(5);
    expect([...data.ends.values()].reduce((a, b) => a + b, 0)).toBe(ends.size);
    for (const r of [...data.first, ...data.last]) expect(r.end?.split(' · ')[0]).toBe(ends.get(r.requestId));
    const html = await renderReport(data);
    expect(html).toContain(`rows and timelines are kept for the first 5 and the last 5 finished requests`);
    expect(html.match(/<tr class="request"/g)).toHaveLength(10);
    // Bounded for hostile traces too: live requests followed and their timeline steps held are capped.
    const capped = await collectReport([path], { detail: 5, maxLive: 1, maxLiveSteps: 2 });
    expect(capped.untracked).toBeGreaterThan(0);
    expect(capped.requests).toBe(ends.size);
    // While live, a request held at most 2 steps: the rest of its life before its end was counted, not kept.
    const shown = [...capped.first, ...capped.last];
    expect(shown.some((r) => r.stepsDropped > 0)).toBe(true);
    for (const r of shown)
      expect(r.steps.findIndex((st) => !['prepared', 'validating', 'correcting'].includes(st.to))).toBeLessThan(3);
  });
});
