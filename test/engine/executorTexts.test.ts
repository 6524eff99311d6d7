/**
 * Error texts per mode (issue 13, item 8): executor-mode callers (`intent_parse`, `Intent.parse`) have no
 * intent_prepare / intent_accept / intent_cancel and never see a submissionToken, so no message they get names them;
 * host-mode messages keep pointing at the host tools.
 */
import { describe, expect, it } from 'vitest';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter } from '../../src/mcp/adapter.js';
import {
  INVALID_CANDIDATE,
  OTHER_INVALID_CANDIDATE,
  SEED_ARGS,
  hangingExecutor,
  scriptedExecutor,
  textOf,
} from '../support/mcpFixtures.js';
import { rejectionOf } from '../support/intentErrors.js';

const HOST_WORDS = /intent_prepare|intent_accept|intent_cancel|submissionToken/;

function errorIn(result: { content?: unknown } | undefined): { code: string; message: string } {
  return (JSON.parse(textOf(result)) as { error: { code: string; message: string } }).error;
}

describe('error texts name only tools that exist in their context', () => {
  it('[I13-ERROR-TEXTS] CANDIDATE_REJECTED from Intent.parse and from intent_parse says to retry, never intent_prepare', async () => {
    const native = new Intent({ executor: scriptedExecutor(INVALID_CANDIDATE, OTHER_INVALID_CANDIDATE).executor });
    const thrown = await rejectionOf(native.parse(SEED_ARGS));
    expect(thrown.code).toBe('CANDIDATE_REJECTED');
    expect(thrown.message).not.toMatch(HOST_WORDS);
    expect(thrown.message).toMatch(/retry the call/);
    expect(thrown.details?.['correction']).toEqual({ allowed: false, remaining: 0 });

    const adapter = createIntentMcpAdapter({
      mode: 'executor',
      instances: {
        main: new Intent({ executor: scriptedExecutor(INVALID_CANDIDATE, OTHER_INVALID_CANDIDATE).executor }),
      },
    });
    const result = await adapter.connect({ protocolVersion: '2025-11-25' }).callTool('intent_parse', SEED_ARGS);
    expect(errorIn(result).code).toBe('CANDIDATE_REJECTED');
    expect(errorIn(result).message).not.toMatch(HOST_WORDS);
    await adapter.close();
  });

  it('[I13-ERROR-TEXTS] SESSION_CLOSED and CAPACITY_EXCEEDED from intent_parse name no host tool', async () => {
    const hanging = hangingExecutor();
    const adapter = createIntentMcpAdapter({
      mode: 'executor',
      instances: { main: new Intent({ executor: hanging.executor }) },
      limits: { maxPendingPerSession: 1 },
    });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const first = session.callTool('intent_parse', SEED_ARGS);
    await hanging.called;
    const full = errorIn(await session.callTool('intent_parse', SEED_ARGS));
    expect(full.code).toBe('CAPACITY_EXCEEDED');
    expect(full.message).not.toMatch(HOST_WORDS);
    await session.close();
    const closed = errorIn(await first);
    expect(closed.code).toBe('SESSION_CLOSED');
    expect(closed.message).not.toMatch(HOST_WORDS);
    await adapter.close();
  });

  it('[I13-ERROR-TEXTS] host mode keeps pointing at the host tools', async () => {
    const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) } });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const task = JSON.parse(textOf(await session.callTool('intent_prepare', SEED_ARGS))) as {
      requestId: string;
      submissionToken: string;
    };
    const accept = (candidateText: string) =>
      session.callTool('intent_accept', {
        requestId: task.requestId,
        submissionToken: task.submissionToken,
        candidateText,
      });
    await accept(INVALID_CANDIDATE);
    const rejected = errorIn(await accept(OTHER_INVALID_CANDIDATE));
    expect(rejected.code).toBe('CANDIDATE_REJECTED');
    expect(rejected.message).toContain('intent_prepare');
    await adapter.close();
  });
});

describe('error texts under a toolPrefix', () => {
  it('[I13-ERROR-TEXTS] messages and descriptions name the tools as listed (x_intent_prepare), never the base names', async () => {
    const adapter = createIntentMcpAdapter({ mode: 'host', toolPrefix: 'x_', instances: { main: new Intent({}) } });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    const notFound = errorIn(
      await session.callTool('x_intent_accept', { requestId: 'r', submissionToken: 't', candidateText: '{}' }),
    );
    expect(notFound.code).toBe('HANDOFF_NOT_FOUND');
    expect(notFound.message).toContain('call x_intent_prepare again');
    const cancel = errorIn(await session.callTool('x_intent_cancel', { requestId: 'r' }));
    expect(cancel.message).not.toMatch(/(?<!x_)intent_(prepare|accept|cancel)/);
    // Argument errors already named the listed tool; it is not prefixed twice.
    const bad = errorIn(await session.callTool('x_intent_accept', { requestId: 1 }));
    expect(bad.message).toContain('x_intent_accept');
    expect(bad.message).not.toContain('x_x_');
    for (const tool of adapter.tools) expect(tool.description).not.toMatch(/(?<!x_)intent_(prepare|accept|cancel)/);
    await adapter.close();
  });
});
