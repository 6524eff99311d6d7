/**
 * Cold start and size (issue 13, item 10): the stdio server in host mode loads no executor code, and `tools/list` stays
 * small because `intent_prepare` describes the baseline instead of embedding the result schema.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createIntentMcpAdapter } from '../../src/mcp/adapter.js';
import { compactSchema } from '../../src/mcp/tools.js';
import { Intent } from '../../src/intent.js';
import { IntentResultSchema } from '../../src/core/schemas.js';
import { z } from 'zod';
import { SEED_ARGS, SEED_RESULT_TEXT } from '../support/mcpFixtures.js';
import {
  CLI,
  REPO_ROOT,
  childEnv,
  configDir,
  ensureBuilt,
  executorBlock,
  writeConfig,
} from '../support/serverProcess.js';

/**
 * An ESM loader hook, registered with --import, that appends to a file the URL of every module a plain stdio start must
 * not load: `openai` (executor mode only), the inspector and Graphviz (`--inspect` only; its flag checks live in
 * `inspector/errors.js`), the trace checker and report (their commands only).
 */
const TRACE_HOOK = `data:text/javascript,${encodeURIComponent(
  `import { register } from 'node:module';
register('data:text/javascript,' + encodeURIComponent(
  'import { appendFileSync } from "node:fs";' +
  'export async function load(url, context, next) {' +
  '  const lazy = url.includes("/node_modules/openai/") || url.includes("/@hpcc-js/") ||' +
  '    (url.includes("/dist/src/inspector/") && !url.endsWith("/errors.js")) ||' +
  '    url.includes("/dist/src/trace/check") || url.includes("/dist/src/trace/report");' +
  '  if (lazy) appendFileSync(process.env.INTENT_MCP_TRACE_FILE, url + "\\\\n");' +
  '  return next(url, context);' +
  '}'));`,
)}`;

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'cold-start-test', version: '1' } },
};

/** Runs the built command over stdio with the trace hook: initialize, tools/list, then stdin ends. */
async function serveTraced(args: string[], env: Record<string, string> = {}) {
  await ensureBuilt();
  const trace = join(configDir(), 'openai-modules.txt');
  const child = spawn(process.execPath, ['--import', TRACE_HOOK, CLI, ...args], {
    cwd: REPO_ROOT,
    env: childEnv({ ...env, INTENT_MCP_TRACE_FILE: trace }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  const lines = (): string[] => stdout.split('\n').filter((line) => line.endsWith('}'));
  child.stdin.write(`${JSON.stringify(INITIALIZE)}\n`);
  await expect.poll(() => lines().length, { timeout: 15_000 }).toBe(1);
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`);
  await expect.poll(() => lines().length, { timeout: 15_000 }).toBe(2);
  child.stdin.end();
  await new Promise((resolve) => child.once('close', resolve));
  const loaded = existsSync(trace) ? readFileSync(trace, 'utf8').trim().split('\n') : [];
  const toolsLine = lines()[1] ?? '';
  return { loaded, toolsListBytes: Buffer.byteLength(toolsLine), toolsList: JSON.parse(toolsLine) as unknown };
}

describe('cold start and size', () => {
  it('[I13-LAZY-EXECUTOR] the stdio server in host mode loads neither openai nor the inspector nor the trace checker; executor mode and --inspect do', async () => {
    const host = await serveTraced([]);
    expect(host.loaded).toEqual([]);
    const file = writeConfig(configDir(), 'executor.json', {
      mode: 'executor',
      instances: { main: { executor: executorBlock('http://127.0.0.1:9/v1') } },
    });
    const executor = await serveTraced(['--config', file], { TEST_KEY: 'k' });
    // The positive control: the hook does see openai when it is loaded.
    expect(executor.loaded.some((url) => url.includes('/node_modules/openai/'))).toBe(true);
    // And the inspector when --inspect asks for it.
    const inspected = await serveTraced(['--inspect', '0']);
    expect(inspected.loaded.some((url) => url.includes('/dist/src/inspector/server.js'))).toBe(true);
  }, 40_000);

  it('[I13-TOOLS-LIST-SIZE] tools/list over stdio is at most 8 KB, and the listed intent_prepare embeds no result schema', async () => {
    const { toolsListBytes, toolsList } = await serveTraced([]);
    expect(toolsListBytes).toBeLessThanOrEqual(8 * 1024);
    const tools = (toolsList as { result: { tools: { name: string; inputSchema: Record<string, unknown> }[] } }).result
      .tools;
    const prepare = tools.find((tool) => tool.name === 'intent_prepare');
    expect(prepare?.inputSchema['$defs']).toBeUndefined();
    expect(prepare?.inputSchema['properties']).toMatchObject({ baseline: { type: 'object' } });
    expect(JSON.stringify(prepare?.inputSchema)).not.toContain('constraint-');
  }, 40_000);

  it('[I13-TOOLS-LIST-SIZE] the server still validates a baseline in full', async () => {
    const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) } });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const result = await session.callTool('intent_prepare', {
      ...SEED_ARGS,
      baseline: { schemaVersion: '2.0-draft.6', coverage: 'complete', scope: 'conversation', intents: [{}] },
    });
    expect(result?.isError).toBe(true);
    expect(JSON.stringify(result?.content)).toContain('INPUT_INVALID');
    expect(JSON.stringify(result?.content)).toContain('/baseline');
    await adapter.close();
  });

  it('[I13-TOOLS-LIST-SIZE] the compact output schema accepts every result the full one does (it only drops constraints)', () => {
    const full = z.toJSONSchema(IntentResultSchema, { target: 'draft-2020-12', io: 'output' });
    const compact = compactSchema(full, 1);
    expect(JSON.stringify(compact).length).toBeLessThan(JSON.stringify(full).length / 4);
    expect(JSON.stringify(compact)).not.toContain('"pattern"');
    expect(JSON.stringify(compact)).not.toContain('$ref');
    // The seed result validates against the compact schema (checked with zod's own JSON Schema reader).
    const reader = z.fromJSONSchema(compact);
    expect(reader.safeParse(JSON.parse(SEED_RESULT_TEXT)).success).toBe(true);
  });
});
