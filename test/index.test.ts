/**
 * The public surface is what the README documents: the package entry exports exactly these names, and its published
 * declarations reach none of the internals (the engine, the recognition core's steps, the server).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as api from '../src/index.js';
import { REPO_ROOT, ensureBuilt } from './support/serverProcess.js';

/** Runtime names, as the README documents them. Types are checked through the declarations below. */
const DOCUMENTED = [
  // The Native API
  'Intent',
  'createOpenAICompatibleExecutor',
  // Errors
  'IntentError',
  'isIntentError',
  'ERROR_CODES',
  'ERROR_CATEGORIES',
  'MAX_ERROR_TEXT_CHARS',
  'QUOTE_MAX_CHARS',
  // The public shapes (zod schemas)
  'SCHEMA_VERSION',
  'LimitsSchema',
  'FieldSpecSchema',
  'IntentConfigSchema',
  'ExecutorConfigSchema',
  'NativeRequestSchema',
  'EffectiveStateSchema',
  'IntentResultSchema',
  'HostTaskSchema',
  'HostCancelReplySchema',
  'ModelTaskSchema',
  'IntentCandidateSchema',
  // The MCP adapter
  'createIntentMcpAdapter',
  'PROTOCOL_VERSIONS',
  'mountIntentMcpTools',
  // The handoff lifecycle and seeing request state
  'handoffMachine',
  'HANDOFF_STATES',
  'LIVE_STATES',
  'TERMINAL_STATES',
  'VALIDATION_BUDGET',
  'STORE_MAX_ITEMS',
  'STORE_MAX_BYTES',
  'systemClock',
  'toMermaid',
  'toDot',
  'edgeOf',
  'START_EDGE',
  'renderSvg',
  // OpenTelemetry
  'instrumentOpenTelemetry',
  'HANDOFF_SPAN_NAME',
  'RETAINED_SPAN_NAME',
  'OTEL_ATTRIBUTES',
];

describe('the package entry', () => {
  it('[PUBLIC-SURFACE] exports exactly the documented names', () => {
    expect(Object.keys(api).sort()).toEqual([...DOCUMENTED].sort());
  });

  it('every documented name appears in the README', () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const missing = DOCUMENTED.filter((name) => !readme.includes(name));
    expect(missing).toEqual([]);
  });

  it('the published declarations of the entry reach no internal module', async () => {
    await ensureBuilt();
    const dts = readFileSync(join(REPO_ROOT, 'dist/src/index.d.ts'), 'utf8');
    for (const internal of ['HandoffEngine', 'EngineSession', 'prepareRequest', 'recognize', 'validateCandidate'])
      expect(dts).not.toContain(internal);
    const modules = [...dts.matchAll(/from '([^']+)'/g)].map((m) => m[1]);
    expect(modules.filter((m) => m?.includes('engine/engine') === true)).toEqual([]);
    // What the engine module still declares for the library's own use is stripped of its @internal members.
    const engineDts = readFileSync(join(REPO_ROOT, 'dist/src/engine/engine.d.ts'), 'utf8');
    for (const internal of ['closeRecord', 'prepareForExecutor', 'forgetSession', 'LiveRecord'])
      expect(engineDts).not.toContain(internal);
  });

  it('[PUBLIC-SURFACE] an adapter and its sessions expose only their documented members, nothing a caller could bypass', async () => {
    const adapter = api.createIntentMcpAdapter({ mode: 'host', instances: { main: new api.Intent({}) } });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const members = (object: object): string[] => {
      const names = new Set<string>();
      for (
        let o: object | null = object;
        o !== null && o !== Object.prototype;
        o = Object.getPrototypeOf(o) as object | null
      )
        for (const name of Object.getOwnPropertyNames(o)) if (name !== 'constructor') names.add(name);
      return [...names].sort();
    };
    expect(members(adapter)).toEqual([
      'close',
      'closed',
      'connect',
      'inspect',
      'mode',
      'observeToolCalls',
      'snapshot',
      'tools',
    ]);
    expect(members(session)).toEqual(['callTool', 'close', 'id', 'protocolVersion']);
    await adapter.close();
  });
});
