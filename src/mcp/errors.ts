/**
 * The errors of the MCP layer (adapter, tools, mounting), gathered in one place like `handoffErrors` for the engine.
 * Messages are one sentence that says what to do next, and quote at most a short prefix of anything a caller sent.
 */
import { IntentError, quoteCaller, type FeedbackItem } from '../core/errors.js';

function configInvalid(message: string, path: string): IntentError {
  return new IntentError('CONFIG_INVALID', message, { details: { issues: [{ path, message }] } });
}

function inputInvalid(message: string, issues: FeedbackItem[]): IntentError {
  return new IntentError('INPUT_INVALID', message, { details: { issues } });
}

const listed = (names: Iterable<string>): string => [...names].join(', ');

export const mcpErrors = {
  configAt: (first: FeedbackItem) =>
    configInvalid(
      `Invalid adapter configuration at ${first.path === '' ? 'the top level' : `"${first.path}"`}: ${first.message}`,
      first.path,
    ),
  alreadyConnected: () =>
    configInvalid(
      'mountIntentMcpTools needs the server before it is connected to a transport; mount first, then call connect().',
      '',
    ),
  noInstances: () =>
    configInvalid(
      'The adapter needs "instances": an object mapping names to Intent objects you created.',
      '/instances',
    ),
  emptyInstances: () => configInvalid('The adapter needs at least one instance in "instances".', '/instances'),
  badInstanceName: (name: string) =>
    configInvalid(
      `The instance name ${quoteCaller(name)} is invalid: use 1–64 characters from A–Z, a–z, 0–9, "_", "." and "-", and not __proto__, prototype or constructor.`,
      '/instances',
    ),
  notAnIntent: (name: string) =>
    configInvalid(
      `The instance "${name}" is not an Intent: create it with new Intent(config); plain IntentConfig objects belong in the server's config file.`,
      `/instances/${name}`,
    ),
  noExecutor: (name: string) =>
    configInvalid(
      `The instance "${name}" has no executor, but executor mode calls one; give it an executor or use mode "host".`,
      `/instances/${name}`,
    ),
  connectOptions: (first: FeedbackItem, versions: readonly string[]) =>
    new IntentError(
      'CONFIG_INVALID',
      `Invalid connect options at ${first.path === '' ? 'the top level' : `"${first.path}"`}: ${first.message} Pass the protocolVersion the SDK negotiated (${listed(versions)}).`,
      { category: 'transport', details: { issues: [first] } },
    ),
  adapterClosed: () =>
    new IntentError('CONFIG_INVALID', 'This adapter was closed; create a new adapter to accept connections.', {
      category: 'transport',
    }),
  bug: (what: string) => new IntentError('INTERNAL', `${what}; this is a bug, please report it.`),
  argumentsNotObject: (tool: string) =>
    inputInvalid(`The arguments of ${tool} must be a JSON object with at least "input".`, [
      { path: '', message: 'Expected a JSON object.' },
    ]),
  instanceRequired: (names: Iterable<string>) =>
    new IntentError(
      'INSTANCE_REQUIRED',
      `Several instances are configured; pass "instance" with one of: ${listed(names)}.`,
    ),
  instanceNotString: (tool: string) =>
    inputInvalid(`The "instance" argument of ${tool} must be a string naming a configured instance.`, [
      { path: '/instance', message: 'Expected a string.' },
    ]),
  instanceNotFound: (name: string, names: Iterable<string>) =>
    new IntentError('INSTANCE_NOT_FOUND', `No instance is named ${quoteCaller(name)}; use one of: ${listed(names)}.`),
  arguments: (message: string, issues: FeedbackItem[]) => inputInvalid(message, issues),
  notAServer: () =>
    new IntentError(
      'CONFIG_INVALID',
      'mountIntentMcpTools needs an McpServer or a Server from @modelcontextprotocol/server (v2) or @modelcontextprotocol/sdk (v1).',
    ),
  v1Unavailable: () =>
    new IntentError(
      'CONFIG_INVALID',
      'This server is from @modelcontextprotocol/sdk 1.x, which intent-mcp cannot import: install it next to intent-mcp (npm install @modelcontextprotocol/sdk).',
    ),
  toolClash: (clashes: readonly string[]) =>
    new IntentError(
      'CONFIG_INVALID',
      `The server already has tools named ${listed(clashes)}; set a toolPrefix on the adapter so the names do not clash.`,
      { details: { clashes } },
    ),
};
