import { describe, expect, it } from 'vitest';
import { Intent } from '../../src/intent.js';
import { createIntentMcpAdapter } from '../../src/mcp/adapter.js';
import { buildAdapter, resolveServe } from '../../src/server/app.js';
import { parseServerConfig } from '../../src/server/config.js';

function errorCode(result: { isError: boolean; content: [{ text: string }] } | undefined): string | undefined {
  if (result === undefined || !result.isError) return undefined;
  return (JSON.parse(result.content[0].text) as { error: { code: string } }).error.code;
}

describe('adapter limits on requests', () => {
  it('maxInputChars and maxContextItems of the adapter cap requests on top of the instance limits', async () => {
    const adapter = createIntentMcpAdapter({
      mode: 'host',
      instances: { main: new Intent({ limits: { maxInputChars: 100 } }) },
      limits: { maxInputChars: 10, maxContextItems: 1 },
    });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    expect(errorCode(await session.callTool('intent_prepare', { input: 'x'.repeat(11) }))).toBe('INPUT_INVALID');
    expect(errorCode(await session.callTool('intent_prepare', { input: 'x'.repeat(10) }))).toBeUndefined();
    const context = [
      { role: 'user', text: 'a' },
      { role: 'assistant', text: 'b' },
    ];
    expect(errorCode(await session.callTool('intent_prepare', { input: 'hello', context }))).toBe('INPUT_INVALID');
    await adapter.close();
  });

  it('the lower of instance and adapter limits applies', async () => {
    const adapter = createIntentMcpAdapter({
      mode: 'host',
      instances: { main: new Intent({ limits: { maxInputChars: 5 } }) },
      limits: { maxInputChars: 50 },
    });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    expect(errorCode(await session.callTool('intent_prepare', { input: 'abcdef' }))).toBe('INPUT_INVALID');
    expect(errorCode(await session.callTool('intent_prepare', { input: 'abcde' }))).toBeUndefined();
    await adapter.close();
  });
});

describe('server config limits', () => {
  it('top-level limits are every instance’s defaults; an instance’s own limits override them', async () => {
    const config = parseServerConfig(
      {
        mode: 'host',
        instances: { a: {}, b: { limits: { maxInputChars: 8 } } },
        limits: { maxInputChars: 4 },
      },
      'test',
    );
    const resolved = { ...resolveServe({}), config };
    const adapter = buildAdapter(resolved, {});
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    expect(errorCode(await session.callTool('intent_prepare', { instance: 'a', input: 'abcde' }))).toBe(
      'INPUT_INVALID',
    );
    expect(errorCode(await session.callTool('intent_prepare', { instance: 'a', input: 'abcd' }))).toBeUndefined();
    expect(errorCode(await session.callTool('intent_prepare', { instance: 'b', input: 'abcdefgh' }))).toBeUndefined();
    await adapter.close();
  });
});
