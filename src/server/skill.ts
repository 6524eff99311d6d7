/**
 * The bundled Skill over MCP (spec 04, "The bundled Skill"; issue 13): the standalone server serves
 * `skills/intent-host/SKILL.md` through the SDK's Skills extension (`io.modelcontextprotocol/skills`: `skills/list`,
 * `skills/get`, `skill://intent-host/SKILL.md`) and, for clients that surface prompts rather than skills, as the MCP
 * prompt `intent-host`. Neither adds a tool name. `mountIntentMcpTools` does not add them: an application decides what
 * its own server offers (README, "Mounting").
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { McpServer } from '@modelcontextprotocol/server';
import type { SkillCatalog } from '@modelcontextprotocol/server/ext/skills';

/** The Skill's name: its folder, its front-matter `name`, its prompt name. */
export const SKILL_NAME = 'intent-host';
/** Where a client reads it (the Skills extension's URI: the last path segment before SKILL.md is the name). */
export const SKILL_URI = `skill://${SKILL_NAME}/SKILL.md`;

/**
 * The package's `skills/` folder: two levels above this module in the sources (src/server), three in the build
 * (dist/src/server). Both layouts ship it next to `package.json`.
 */
export function skillsRoot(): string {
  const fromSources = new URL('../../skills/', import.meta.url);
  return fileURLToPath(existsSync(fromSources) ? fromSources : new URL('../../../skills/', import.meta.url));
}

interface LoadedSkill {
  catalog: SkillCatalog;
  description: string;
  /** SKILL.md without its front matter: the prompt's text. */
  body: string;
}

let loaded: Promise<LoadedSkill> | undefined;

async function load(): Promise<LoadedSkill> {
  // Imported here, once, so a server that never builds a connection (check-config, --help) never loads it.
  const { loadSkills } = await import('@modelcontextprotocol/server/ext/skills/node');
  const root = skillsRoot();
  const [catalog, text] = await Promise.all([
    loadSkills(root, { strict: true }),
    readFile(`${root}/${SKILL_NAME}/SKILL.md`, 'utf8'),
  ]);
  const entry = catalog.entries.find((skill) => skill.uri === SKILL_URI);
  const match = /^---\r?\n[\s\S]*?\r?\n---\r?\n([\s\S]*)$/.exec(text);
  const description = typeof entry?.frontmatter.description === 'string' ? entry.frontmatter.description : '';
  return { catalog, description, body: (match?.[1] ?? text).trim() };
}

/** The bundled Skill, read once per process (a failed read is retried by the next caller). */
function bundledSkill(): Promise<LoadedSkill> {
  loaded ??= load().catch((error: unknown) => {
    loaded = undefined;
    throw error;
  });
  return loaded;
}

/** Serves the bundled Skill on `server` (before `connect()`): the Skills extension and the `intent-host` prompt. */
export async function attachBundledSkill(server: McpServer): Promise<void> {
  const skill = await bundledSkill();
  skill.catalog.attach(server);
  server.registerPrompt(
    SKILL_NAME,
    {
      title: 'Run an intent-mcp host handoff',
      description: skill.description,
    },
    () => ({
      description: skill.description,
      messages: [{ role: 'user', content: { type: 'text', text: skill.body } }],
    }),
  );
}
