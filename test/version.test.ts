import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SERVER_INFO } from '../src/server/mcpServer.js';
import { VERSION } from '../src/version.js';

describe('version', () => {
  it('VERSION (reported by --version and in serverInfo) is the package.json version', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(VERSION).toBe(pkg.version);
    expect(SERVER_INFO.version).toBe(pkg.version);
  });
});
