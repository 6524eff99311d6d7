/**
 * Building the SDK server instance that serves one connection: an `McpServer` with the adapter's tools mounted. The
 * adapter session is opened lazily on the first tool call, from the negotiated revision, and closed with the
 * connection (see `mountIntentMcpTools`), so a probe instance that never gets a call leaks nothing.
 */
import { McpServer } from '@modelcontextprotocol/server';
import { PROTOCOL_VERSIONS, type IntentMcpAdapter } from '../mcp/adapter.js';
import { VERSION } from '../version.js';
import { mountIntentMcpTools } from '../mcp/mount.js';
import { attachBundledSkill } from './skill.js';

/** Revisions from this year on are the modern era (`MCP-Protocol-Version` compares as text). */
export const MODERN_ERA_FROM = '2026';
/** The 2025 revisions of spec 05, newest first (the SDK offers the first): served on stdio and HTTP. */
export const LEGACY_VERSIONS: string[] = PROTOCOL_VERSIONS.filter((version) => version < MODERN_ERA_FROM)
  .sort()
  .reverse();
/** The modern-era revisions (2026-07-28): served on stdio only. */
export const MODERN_VERSIONS: string[] = PROTOCOL_VERSIONS.filter((version) => version >= MODERN_ERA_FROM);

export const SERVER_INFO = { name: 'intent-mcp', version: VERSION } as const;

/** One connection's SDK server and the means to end its adapter session without closing the server. */
export interface MountedServer {
  readonly server: McpServer;
  /**
   * Starts a graceful close of this connection (spec 04/05): closes its adapter session, so every waiter is answered
   * `SESSION_CLOSED` through the still-open SDK server, and answers every later tool call of the connection with
   * `SESSION_CLOSED` too. The SDK server and its transport stay open; the caller closes them once the replies are out.
   */
  drain(): Promise<void>;
}

export async function createMountedServer(
  adapter: IntentMcpAdapter,
  era: 'legacy' | 'modern',
  label?: string,
): Promise<MountedServer> {
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: {} },
    // The 2025 side speaks exactly the two revisions of spec 05; the modern side is 2026-07-28.
    ...(era === 'legacy' ? { supportedProtocolVersions: LEGACY_VERSIONS } : {}),
  });
  // `mount.close()` answers the connection's waiters and every later call of our tools SESSION_CLOSED (mount.ts).
  const mount = await mountIntentMcpTools(adapter, server, label === undefined ? {} : { label });
  // The Skill that tells a host model how to run a handoff, discoverable over MCP (issue 13; skill.ts).
  await attachBundledSkill(server);
  return { server, drain: () => mount.close() };
}
