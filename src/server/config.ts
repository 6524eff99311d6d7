/**
 * The standalone command's configuration (spec 05): the config file, the embedded default, flags over file, and the
 * public-origin rules. Everything invalid is an `IntentError` `CONFIG_INVALID` whose message names the problem.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { IntentError } from '../core/errors.js';
import { zodIssuesToFeedback } from '../core/feedback.js';
import { IntentConfigSchema, LimitsOverrideSchema, PREFIX_PATTERN, isValidName } from '../core/schemas.js';

export const HttpConfigSchema = z
  .object({
    host: z.string().min(1).optional(),
    port: z.int().min(0).max(65535).optional(),
    path: z
      .string()
      .regex(/^\/[^\s?#]*$/, 'must start with "/" and hold no query or fragment')
      .optional(),
    publicOrigin: z.string().optional(),
    maxSessions: z.int().min(1).max(1_000_000).optional(),
    sessionIdleMs: z.int().min(1000).max(2_147_483_647).optional(),
  })
  .strict();

/** The config file (JSON). `instances` holds serialisable `IntentConfig`s; the command builds the `Intent`s itself. */
export const ServerConfigSchema = z
  .object({
    mode: z.enum(['host', 'executor']).optional(),
    toolPrefix: z.string().regex(PREFIX_PATTERN).optional(),
    instances: z.record(z.string(), IntentConfigSchema).optional(),
    http: HttpConfigSchema.optional(),
    limits: LimitsOverrideSchema.optional(),
  })
  .strict();
export type ServerConfig = z.infer<typeof ServerConfigSchema>;

/** What `npm start` serves with no config: host mode, one instance `main` without schema. No model, key or network. */
export const EMBEDDED_DEFAULT: ServerConfig = ServerConfigSchema.parse({ mode: 'host', instances: { main: {} } });

export const DEFAULTS = {
  transport: 'stdio',
  host: '127.0.0.1',
  port: 3001,
  path: '/mcp',
  maxSessions: 256,
  sessionIdleMs: 1_800_000,
  logLevel: 'info',
} as const;

function invalid(message: string): IntentError {
  return new IntentError('CONFIG_INVALID', message);
}

/** Parses and validates a config object; `source` names where it came from in messages. */
export function parseServerConfig(value: unknown, source: string): ServerConfig {
  // A literal key in a file is refused with its own message: secrets come only from the environment (spec 05).
  const instances = (value as { instances?: unknown } | null)?.instances;
  if (instances !== null && typeof instances === 'object') {
    for (const name of Object.keys(instances)) {
      if (!isValidName(name))
        throw invalid(
          `${source}: the instance name "${name}" is invalid; use 1–64 characters from A–Z, a–z, 0–9, "_", "." and "-", not __proto__, prototype or constructor.`,
        );
      const executor: unknown = (instances as Record<string, { executor?: unknown } | null>)[name]?.executor;
      if (executor !== null && typeof executor === 'object' && 'apiKey' in executor)
        throw invalid(
          `${source}: instances.${name}.executor has a literal "apiKey", which is refused; put the key in an environment variable and name it with "apiKeyEnv".`,
        );
    }
  }
  const parsed = ServerConfigSchema.safeParse(value);
  if (!parsed.success) {
    const first = zodIssuesToFeedback(parsed.error.issues, value)[0] ?? { path: '', message: 'Invalid.' };
    const where = first.path === '' ? 'the top level' : first.path.slice(1).replace(/\//g, '.');
    throw invalid(`${source}: invalid configuration at ${where}: ${first.message.replace(/\.$/, '')}.`);
  }
  if (parsed.data.instances !== undefined && Object.keys(parsed.data.instances).length === 0)
    throw invalid(`${source}: "instances" is empty; configure at least one instance.`);
  return parsed.data;
}

/** Reads a JSON config file. */
export function loadConfigFile(path: string): ServerConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw invalid(`Cannot read the config file ${path}; check the path and its permissions.`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid(`The config file ${path} is not valid JSON; fix its syntax.`);
  }
  return parseServerConfig(value, path);
}

// ---------------------------------------------------------------------------------------------------------------------
// Public origin and the Host / Origin rules (spec 05)

export interface PublicOrigin {
  /** The origin exactly as browsers send it in `Origin` (`https://host[:port]`). */
  readonly origin: string;
  /** The `Host` header value clients send: host, plus the port when it is not the scheme's default. */
  readonly host: string;
}

/** Validates `--public-origin`; throws `CONFIG_INVALID` naming the rule that failed. */
export function parsePublicOrigin(value: string): PublicOrigin {
  // Never echo credentials back, even in a refusal.
  const shown = JSON.stringify(value.replace(/\/\/[^/@]*@/, '//***@'));
  const fail = (rule: string): never => {
    throw invalid(`--public-origin ${shown} is refused: ${rule}.`);
  };
  if (value.includes('*')) fail('it must not contain a wildcard "*"');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return fail('it must be an absolute http: or https: URL such as https://mcp.example.com');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail('the scheme must be http: or https:');
  if (url.username !== '' || url.password !== '') fail('it must not contain a user name or password');
  if (url.hostname === '') fail('it must name a host');
  if (url.pathname !== '/' && url.pathname !== '') fail('it must not contain a path (only "/" is allowed)');
  if (url.search !== '' || value.includes('?')) fail('it must not contain a query');
  if (url.hash !== '' || value.includes('#')) fail('it must not contain a fragment');
  // URL drops the scheme's default port, so `host` is already "host" or "host:port" as spec 05 wants.
  return { origin: url.origin, host: url.host };
}

export function isWildcardBind(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]';
}

/** The Host and Origin values a listener accepts: the public origin's, plus the local diagnostic addresses. */
export function allowedHostsAndOrigins(
  port: number,
  publicOrigin: PublicOrigin | undefined,
): { hosts: ReadonlySet<string>; origins: ReadonlySet<string> } {
  const local = [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
  const hosts = new Set(local);
  const origins = new Set(local.map((h) => `http://${h}`));
  if (publicOrigin !== undefined) {
    hosts.add(publicOrigin.host);
    origins.add(publicOrigin.origin);
  }
  return { hosts, origins };
}
