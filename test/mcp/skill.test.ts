/**
 * The bundled Skill (spec 04, "The bundled Skill"): skills/intent-host/SKILL.md in the Agent Skills format, telling a
 * host model how to run a handoff, shipped in the package and served over MCP by the standalone server (issue 13):
 * through the SDK's Skills extension and as an MCP prompt, on every revision the command serves on stdio.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../support/serverProcess.js';

const SKILLS_DIR = new URL('../../skills/', import.meta.url);
const skill = readFileSync(new URL('intent-host/SKILL.md', SKILLS_DIR), 'utf8');

/** Splits YAML front matter (`---` … `---`) from the body and reads its top-level `key: value` lines. */
function frontMatter(text: string): { fields: Map<string, string>; body: string } {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n([\s\S]*)$/.exec(text);
  if (match === null) return expect.fail('SKILL.md must start with YAML front matter between --- lines');
  const fields = new Map<string, string>();
  for (const line of (match[1] ?? '').split(/\r?\n/)) {
    const kv = /^([A-Za-z][\w-]*):\s*(.*)$/.exec(line);
    if (kv !== null) fields.set(kv[1] ?? '', (kv[2] ?? '').replace(/^(["'])(.*)\1$/, '$2').trim());
  }
  return { fields, body: match[2] ?? '' };
}

const { fields, body } = frontMatter(skill);
/** The body without Markdown emphasis (`**`) or code marks, so sentences read as plain text. */
const plain = body.replace(/\*\*|`/g, '');
/** Paragraphs and list items of the body, one entry each, in plain text. */
const blocks = plain
  .split(/\n\s*\n|\n(?=\s*[-*] |\s*\d+\. |#)/)
  .map((b) => b.replace(/\s+/g, ' ').trim())
  .filter((b) => b.length > 0);

function blocksMentioning(word: string): string[] {
  const found = blocks.filter((b) => b.includes(word));
  expect(found, `no paragraph mentions ${word}`).not.toEqual([]);
  return found;
}

describe('skills/intent-host/SKILL.md [SEED-SKILL]', () => {
  it('[SEED-SKILL] has Agent Skills front matter: name intent-host and a description', () => {
    expect(fields.get('name')).toBe('intent-host');
    const description = fields.get('description') ?? '';
    expect(description.length).toBeGreaterThan(20);
    expect(description.length).toBeLessThanOrEqual(1024);
    expect(description).toMatch(/intent_prepare/);
    expect(body.trim().length).toBeGreaterThan(0);
  });

  it('[SEED-SKILL] every skill under skills/ is named like its folder, as Agent Skills requires; intent-host is one', () => {
    const folders = readdirSync(SKILLS_DIR, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(folders).toContain('intent-host');
    for (const folder of folders) {
      const file = new URL(`${folder}/SKILL.md`, SKILLS_DIR);
      expect(existsSync(file), `skills/${folder} has no SKILL.md`).toBe(true);
      const name = frontMatter(readFileSync(file, 'utf8')).fields.get('name');
      expect(name, `skills/${folder}/SKILL.md`).toBe(folder);
      expect(name).toMatch(/^(?=.{1,64}$)[a-z0-9]+(?:-[a-z0-9]+)*$/);
    }
  });

  it('[SEED-SKILL] walks through intent_prepare, intent_accept and intent_cancel', () => {
    for (const tool of ['intent_prepare', 'intent_accept', 'intent_cancel']) expect(plain).toContain(tool);
    expect(plain.indexOf('intent_prepare')).toBeLessThan(plain.indexOf('intent_accept'));
  });

  it('[SEED-SKILL] writes the candidate from the task instructions, input and outputSchema', () => {
    const writing = blocks.filter((b) => b.includes('outputSchema') && b.includes('instructions'));
    expect(writing.length).toBeGreaterThan(0);
    expect(writing.join(' ')).toMatch(/input/);
  });

  it('[SEED-SKILL] submits the whole candidate as candidateText, a string', () => {
    const submit = blocksMentioning('candidateText').join(' ');
    expect(submit).toMatch(/string/i);
    expect(submit).toMatch(/complete|whole/i);
    expect(submit).toMatch(/not an object/i);
  });

  it('[SEED-SKILL] on CANDIDATE_INVALID corrects exactly the listed issues, once', () => {
    const correcting = blocksMentioning('CANDIDATE_INVALID').join(' ');
    expect(correcting).toMatch(/\bonce\b/i);
    expect(correcting).toMatch(/exactly/i);
  });

  it('[SEED-SKILL] never invents missing information to "correct" a candidate', () => {
    expect(plain).toMatch(/never (?:"?fix"? a problem by )?invent/i);
    const missing = blocks.filter((b) => /missing/i.test(b) && /invent/i.test(b));
    expect(missing.length).toBeGreaterThan(0);
  });

  it('[SEED-SKILL] cancels with refusal when it will not answer and incomplete when its output was cut off', () => {
    const refusal = blocksMentioning('refusal').join(' ');
    expect(refusal).toMatch(/will not|won't|decline|refuse to/i);
    const incomplete = blocksMentioning('incomplete').join(' ');
    expect(incomplete).toMatch(/truncat|cut off/i);
    const cancelSection = plain.slice(plain.lastIndexOf('intent_cancel'));
    expect(cancelSection).toContain('refusal');
    expect(cancelSection).toContain('incomplete');
  });

  it('[SEED-SKILL] never resubmits after CANDIDATE_REJECTED, HANDOFF_EXPIRED or HANDOFF_NOT_FOUND: prepare again', () => {
    const stop = blocksMentioning('CANDIDATE_REJECTED').filter(
      (b) => b.includes('HANDOFF_EXPIRED') && b.includes('HANDOFF_NOT_FOUND'),
    );
    expect(stop.length).toBeGreaterThan(0);
    const sentence = stop.join(' ');
    expect(sentence).toMatch(/(?:do not|don't|never) resubmit/i);
    expect(sentence).toMatch(/intent_prepare again|prepare again/i);
  });
});

describe('packaging [SEED-SKILL]', () => {
  it('[SEED-SKILL] the package ships skills/intent-host/SKILL.md (as npm pack lists it)', () => {
    const packed = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: fileURLToPath(new URL('../../', import.meta.url)),
      encoding: 'utf8',
      timeout: 60_000,
    });
    const [listing] = JSON.parse(packed) as [{ files: { path: string }[] }];
    expect(listing.files.map((f) => f.path)).toContain('skills/intent-host/SKILL.md');
  });
});

describe('the Skill over MCP, from the built command on stdio [I13-SKILL-MCP]', () => {
  const clients = new Map<string, Client>();
  const revisions = ['2025-06-18', '2025-11-25', '2026-07-28'] as const;

  beforeAll(async () => {
    await ensureBuilt();
    await Promise.all(
      revisions.map(async (revision) => {
        const info = { name: 'skill-test', version: '1.0.0' };
        const client =
          revision === '2026-07-28'
            ? new Client(info, { versionNegotiation: { mode: { pin: revision } } })
            : new Client(info, { supportedProtocolVersions: [revision] });
        await client.connect(
          new StdioClientTransport({
            command: process.execPath,
            args: ['dist/src/cli.js'],
            cwd: fileURLToPath(new URL('../../', import.meta.url)),
            stderr: 'pipe',
          }),
        );
        clients.set(revision, client);
      }),
    );
  }, 60_000);
  afterAll(async () => {
    for (const client of clients.values()) await client.close();
  });

  it.each(revisions)(
    '[I13-SKILL-MCP] %s: skills/list and skills/get name skill://intent-host/SKILL.md; reading it gives the packaged file, verified',
    async (revision) => {
      const client = clients.get(revision)!;
      const skills = new SkillsClient(client);
      expect(skills.supported).toBe(true);
      const listing = await skills.list();
      expect(listing.invalid).toEqual([]);
      expect(listing.skills.map((s) => s.frontmatter.name)).toEqual(['intent-host']);
      const entry = listing.skills[0]!;
      expect(entry.uri).toBe('skill://intent-host/SKILL.md');
      expect(entry.frontmatter.description).toBe(fields.get('description'));
      const got = await skills.get(entry.uri);
      expect(got.skill.uri).toBe(entry.uri);
      const file = await skills.read(entry);
      expect(file.verified).toBe(true);
      expect(file.text).toBe(skill);
      // Served next to the tools, adding none.
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual([
        'intent_prepare',
        'intent_accept',
        'intent_cancel',
      ]);
    },
  );

  it.each(revisions)(
    '[I13-SKILL-MCP] %s: the same text is the MCP prompt intent-host, for clients that surface prompts',
    async (revision) => {
      const client = clients.get(revision)!;
      const prompts = (await client.listPrompts()).prompts;
      expect(prompts.map((p) => p.name)).toEqual(['intent-host']);
      expect(prompts[0]?.description).toBe(fields.get('description'));
      const prompt = await client.getPrompt({ name: 'intent-host' });
      expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: body.trim() } }]);
    },
  );

  it.each(revisions)(
    '[I13-SKILL-MCP] [H08-ERROR-BOUND] %s: a 100 KB resource URI or prompt name gets a short error, not its echo',
    async (revision) => {
      const client = clients.get(revision)!;
      const refusal = async (call: Promise<unknown>): Promise<string> => {
        try {
          await call;
        } catch (error) {
          return JSON.stringify({ message: (error as Error).message, data: (error as { data?: unknown }).data });
        }
        throw new Error('answered');
      };
      const read = await refusal(client.readResource({ uri: `skill://${'x'.repeat(100_000)}` }));
      expect(read).toMatch(/Resource not found: skill:\/\/x+…/);
      expect(read.length).toBeLessThan(600);
      // The Skills extension's own method too ("No skill is served at <uri>").
      const skill = await refusal(new SkillsClient(client).get(`skill://${'s'.repeat(100_000)}`));
      expect(skill).toMatch(/No skill is served at skill:\/\/s+…/);
      expect(skill.length).toBeLessThan(600);
      const prompt = await refusal(client.getPrompt({ name: 'p'.repeat(100_000) }));
      expect(prompt).toMatch(/Prompt p+…/);
      expect(prompt.length).toBeLessThan(600);
      // A short unknown name is still quoted whole, and the connection goes on.
      expect(await refusal(client.getPrompt({ name: 'nosuch' }))).toMatch(/Prompt nosuch not found/);
      expect((await client.getPrompt({ name: 'intent-host' })).messages).toHaveLength(1);
    },
  );
});
