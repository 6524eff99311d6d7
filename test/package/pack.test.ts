/**
 * The package as its users get it (issue 13, items 2 and 3): `npm pack` yields a tarball that carries `dist`, and
 * installing it into a project that has its own copy of the MCP server SDK — a release in our declared peer range other
 * than the one in our lockfile, when one exists — leaves that project with ONE SDK copy (`npm ls`), mounts our tools on
 * the project's own `McpServer`, completes a handoff with the official client, and runs the packed command.
 *
 * The one `npm install` reads the registry (`--prefer-offline`, so a warm cache serves most of it). When the registry
 * cannot be reached the file skips with a one-line notice; under `.ci/run` (INTENT_MCP_REQUIRE_SYSTEM_PACKAGES=1) it
 * fails instead.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEED_ARGS, SEED_CANDIDATE, SEED_RESULT_TEXT, textOf } from '../support/mcpFixtures.js';
import { SYSTEM_PACKAGES_REQUIRED } from '../support/nginxProxy.js';
import { ensureBuilt } from '../support/serverProcess.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SDK = '@modelcontextprotocol/server';

interface Manifest {
  name: string;
  version: string;
  scripts: Record<string, string>;
  files: string[];
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version: string }>;
};
const lockedVersion = (name: string): string => lock.packages[`node_modules/${name}`]?.version ?? '';

/** `x.y.z` inside a caret range `^a.b.c` (no prereleases), as npm reads it for a major version ≥ 1. */
function inCaretRange(version: string, range: string): boolean {
  const parse = (v: string) => /^(\d+)\.(\d+)\.(\d+)$/.exec(v)?.slice(1).map(Number);
  const floor = parse(range.replace(/^\^/, ''));
  const candidate = parse(version);
  if (!range.startsWith('^') || floor === undefined || candidate === undefined) return false;
  const [major, minor, patch] = candidate as [number, number, number];
  const [fMajor, fMinor, fPatch] = floor as [number, number, number];
  if (major !== fMajor) return false;
  return minor > fMinor || (minor === fMinor && patch >= fPatch);
}

/** The SDK releases on the registry, or undefined when it cannot be reached. */
function publishedVersions(): string[] | undefined {
  const view = spawnSync('npm', ['view', SDK, 'versions', '--json'], { encoding: 'utf8', timeout: 30_000 });
  if (view.status !== 0) return undefined;
  try {
    const parsed = JSON.parse(view.stdout) as string[] | string;
    return Array.isArray(parsed) ? parsed : [parsed];
  } catch {
    return undefined;
  }
}

const published = publishedVersions();
const skipped = published === undefined && !SYSTEM_PACKAGES_REQUIRED;
if (skipped) process.stderr.write('skipped: the packaging test needs the npm registry, which cannot be reached\n');

/** The newest release in our peer range other than the lockfile's; the lockfile's when there is no other. */
function chooseSdkVersion(): string {
  const range = manifest.peerDependencies[SDK] ?? '';
  const others = (published ?? [])
    .filter((v) => inCaretRange(v, range) && v !== lockedVersion(SDK))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  return others.at(-1) ?? lockedVersion(SDK);
}

let project = '';
let sdkVersion = '';
const run = (command: string, args: string[]) =>
  execFileSync(command, args, { cwd: project, encoding: 'utf8', timeout: 120_000, stdio: ['ignore', 'pipe', 'pipe'] });

/** The application of the temporary project: its own McpServer with one tool, our tools mounted, served on stdio. */
const APP = `import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { Intent, createIntentMcpAdapter, mountIntentMcpTools } from 'intent-mcp';

const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) } });
serveStdio(async (ctx) => {
  const server = new McpServer(
    { name: 'app', version: '1.0.0' },
    ctx.era === 'legacy' ? { supportedProtocolVersions: ['2025-11-25', '2025-06-18'] } : {},
  );
  server.registerTool('echo', { description: 'Echo.', inputSchema: z.object({ x: z.string() }) }, ({ x }) => ({
    content: [{ type: 'text', text: 'echo:' + x }],
  }));
  await mountIntentMcpTools(adapter, server);
  return server;
});
`;

describe.skipIf(skipped)('the packed package in a project with its own SDK copy [I13-PACK]', () => {
  beforeAll(async () => {
    if (published === undefined)
      throw new Error(
        'the npm registry cannot be reached, and INTENT_MCP_REQUIRE_SYSTEM_PACKAGES=1 requires this test',
      );
    await ensureBuilt();
    project = mkdtempSync(join(tmpdir(), 'intent-mcp-pack-'));
    sdkVersion = chooseSdkVersion();
    // dist/ is fresh (ensureBuilt); the tarball is what `npm pack` makes of it. `prepare` builds on a fresh clone.
    const packed = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', project], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60_000,
    });
    const [{ filename }] = JSON.parse(packed) as [{ filename: string }];
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({
        name: 'intent-mcp-pack-test',
        private: true,
        type: 'module',
        dependencies: { [SDK]: sdkVersion, zod: lockedVersion('zod'), 'intent-mcp': `file:./${filename}` },
      }),
    );
    writeFileSync(join(project, 'app.mjs'), APP);
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error']);
  }, 180_000);

  afterAll(() => {
    if (project !== '') rmSync(project, { recursive: true, force: true });
  });

  it('[I13-PACK] the manifest: peer ranges for what an application shares, the v1 SDK optional, a prepare build, dist in files', () => {
    for (const name of [SDK, 'zod', '@modelcontextprotocol/sdk'])
      expect(manifest.peerDependencies[name], name).toMatch(/^\^\d+\.\d+\.\d+$/);
    expect(manifest.peerDependenciesMeta?.['@modelcontextprotocol/sdk']?.optional).toBe(true);
    expect(manifest.dependencies[SDK]).toBeUndefined();
    expect(manifest.dependencies['zod']).toBeUndefined();
    expect(manifest.scripts['prepare']).toMatch(/npm run build/);
    expect(manifest.files).toEqual(expect.arrayContaining(['dist/src', 'skills']));
  });

  it('[I13-PACK] the project ends up with one copy of the SDK: its own release, shared with intent-mcp', () => {
    const copies = run('npm', ['ls', SDK, '--all', '--parseable'])
      .split('\n')
      .filter((line) => line.trim() !== '');
    expect(copies).toEqual([join(project, 'node_modules', SDK)]);
    const installed = JSON.parse(readFileSync(join(project, 'node_modules', SDK, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(installed.version).toBe(sdkVersion);
    // intent-mcp resolved the peer to that copy: no nested SDK under it.
    expect(run('npm', ['ls', SDK, '--all'])).toContain(`intent-mcp@${manifest.version}`);
  });

  it('[I13-PACK] the packed command runs: intent-mcp --version', () => {
    expect(run(join(project, 'node_modules', '.bin', 'intent-mcp'), ['--version']).trim()).toBe(manifest.version);
  });

  it("[I13-PACK] the tools mount on the project's McpServer and the official client completes a handoff", async () => {
    const client = new Client({ name: 'pack-test', version: '1.0.0' }, { supportedProtocolVersions: ['2025-11-25'] });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: ['app.mjs'], cwd: project, stderr: 'pipe' }),
    );
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual([
        'echo',
        'intent_prepare',
        'intent_accept',
        'intent_cancel',
      ]);
      expect(await client.callTool({ name: 'echo', arguments: { x: 'hi' } })).toMatchObject({
        content: [{ type: 'text', text: 'echo:hi' }],
      });
      const prepared = await client.callTool({ name: 'intent_prepare', arguments: SEED_ARGS });
      const task = JSON.parse(textOf(prepared)) as { requestId: string; submissionToken: string };
      const accepted = await client.callTool({
        name: 'intent_accept',
        arguments: { requestId: task.requestId, submissionToken: task.submissionToken, candidateText: SEED_CANDIDATE },
      });
      expect(textOf(accepted)).toBe(SEED_RESULT_TEXT);
    } finally {
      await client.close();
    }
  }, 30_000);
});

describe('the caret-range check used to choose the SDK release [I13-PACK]', () => {
  it('[I13-PACK] reads ^a.b.c as npm does for a major version of 1 or more', () => {
    expect(inCaretRange('2.4.0', '^2.4.0')).toBe(true);
    expect(inCaretRange('2.4.1', '^2.4.0')).toBe(true);
    expect(inCaretRange('2.10.0', '^2.4.0')).toBe(true);
    expect(inCaretRange('2.3.1', '^2.4.0')).toBe(false);
    expect(inCaretRange('3.0.0', '^2.4.0')).toBe(false);
    expect(inCaretRange('2.5.0-beta.1', '^2.4.0')).toBe(false);
    expect(inCaretRange('2.5.0', '2.4.0')).toBe(false);
  });
});
