/**
 * Building the SDK server instance that serves one connection: an `McpServer` with the adapter's tools mounted. The
 * adapter session is opened lazily on the first tool call, from the negotiated revision, and closed with the
 * connection (see `mountIntentMcpTools`), so a probe instance that never gets a call leaks nothing.
 */
import { McpServer } from '@modelcontextprotocol/server';
import { callerPrefix } from '../core/errors.js';
import { storedRequestHandler } from '../mcp/sdkInternals.js';
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
  boundSdkErrors(server);
  return { server, drain: () => mount.close() };
}

/**
 * Methods the SDK answers itself for the Skill and the prompt, whose errors quote the caller's text whole: "Prompt
 * <name> not found", "Resource not found: <uri>" with the URI again in `data` (a 100 KB URI made a 200 KB error).
 */
const ECHOING_METHODS = ['prompts/get', 'resources/read', 'completion/complete'] as const;
/** Longest error message those methods answer with; longer ones are cut like every caller quote. */
const SDK_ERROR_MESSAGE_CHARS = 256;
/** Largest `data` (as JSON) those errors keep; a larger one (it carries the caller's URI) is dropped. */
const SDK_ERROR_DATA_CHARS = 1024;

/** Whether `value` serialises to JSON of at most `max` characters (a value that cannot be serialised does not fit). */
function fitsAsJson(value: unknown, max: number): boolean {
  try {
    const text = JSON.stringify(value) as string | undefined;
    return text !== undefined && text.length <= max;
  } catch {
    return false;
  }
}

/**
 * Bounds what the SDK's own handlers echo back in an error (the standard: an error quotes at most a short prefix of
 * the caller's text): each handler of {@link ECHOING_METHODS} is wrapped, and an error it throws leaves with its
 * message cut and an oversized `data` dropped; code and kind are kept.
 */
function boundSdkErrors(server: McpServer): void {
  const protocol = server.server;
  for (const method of ECHOING_METHODS) {
    const original = storedRequestHandler(protocol, 'v2', method);
    if (original === undefined) continue;
    (protocol as unknown as { setRequestHandler(m: string, h: typeof original): void }).setRequestHandler(
      method,
      async (request, ctx) => {
        try {
          return await original(request, ctx);
        } catch (error) {
          if (error instanceof Error) {
            if (error.message.length > SDK_ERROR_MESSAGE_CHARS)
              error.message = callerPrefix(error.message, SDK_ERROR_MESSAGE_CHARS);
            const holder = error as Error & { data?: unknown };
            if (holder.data !== undefined && !fitsAsJson(holder.data, SDK_ERROR_DATA_CHARS)) holder.data = undefined;
          }
          throw error;
        }
      },
    );
  }
}
