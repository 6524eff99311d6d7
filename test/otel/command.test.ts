/**
 * `intent-mcp serve --otel` (issue 11), the built command: it exports its spans to a loopback OTLP/HTTP receiver this
 * test starts (a `node:http` server on 127.0.0.1 taking POST /v1/traces), configured by the standard variables only —
 * over HTTP with `http/json` (flushed on SIGTERM) and over stdio with the default `http/protobuf` (flushed when stdin
 * ends). And an install without the optional SDK packages refuses `--otel` with one line, exit 2, while serving
 * without it.
 */
import { spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SEED_ARGS, SEED_CANDIDATE } from '../support/mcpFixtures.js';
import { rawSession, seedHandoff, prepareSeed } from '../support/httpHelpers.js';
import { CLI, REPO_ROOT, childEnv, ensureBuilt } from '../support/serverProcess.js';

interface Received {
  path: string;
  contentType: string;
  body: Buffer;
}

interface Receiver {
  endpoint: string;
  received: Received[];
  close(): Promise<void>;
}

/** A loopback OTLP/HTTP receiver: records every POST and answers 200 with an empty export response. */
/**
 * An OTLP/HTTP collector on loopback: `accepts` records every export and answers 200; `refuses` answers every export
 * 400 (not retried by the exporter); `hangs` never answers.
 */
async function startReceiver(behaviour: 'accepts' | 'refuses' | 'hangs' = 'accepts'): Promise<Receiver> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    if (behaviour === 'hangs') return;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (behaviour === 'refuses') {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end('{}');
        return;
      }
      received.push({
        path: req.url ?? '',
        contentType: req.headers['content-type'] ?? '',
        body: Buffer.concat(chunks),
      });
      const json = String(req.headers['content-type']).includes('json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
      res.end(json ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

// A build can take longer than one test's timeout on a loaded machine: done once, before any test's clock runs.
beforeAll(() => ensureBuilt(), 300_000);

const children: ChildProcess[] = [];
const receivers: Receiver[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const receiver of receivers.splice(0)) await receiver.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function exitOf(child: ChildProcess, timeoutMs = 10_000): Promise<number | null> {
  return new Promise((resolve, reject) => {
    if (child.exitCode !== null) {
      resolve(child.exitCode);
      return;
    }
    const timer = setTimeout(() => {
      reject(new Error('the command did not exit in time'));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: number | string; boolValue?: boolean };
}
interface OtlpSpan {
  name: string;
  attributes: OtlpAttribute[];
  events: { name: string; attributes: OtlpAttribute[] }[];
  status?: { code?: number };
}

const attrs = (list: OtlpAttribute[]): Record<string, unknown> =>
  Object.fromEntries(
    list.map((a) => [
      a.key,
      a.value.stringValue ?? (a.value.intValue === undefined ? a.value.boolValue : Number(a.value.intValue)),
    ]),
  );

/** Starts the built command over HTTP on loopback with --otel and `env`; resolves once it serves, with its URL. */
async function serveHttpWithOtel(
  env: Record<string, string>,
): Promise<{ child: ChildProcessByStdio<null, null, Readable>; url: string; stderr: () => string }> {
  await ensureBuilt();
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, CLI), 'serve', '--transport', 'http', '--host', '127.0.0.1', '--port', '0', '--otel'],
    { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe'], env: childEnv(env) },
  );
  children.push(child);
  let stderr = '';
  child.stderr.setEncoding('utf8');
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      const match = /serving over HTTP url=(http:\/\/\S+)/.exec(stderr);
      if (match?.[1] !== undefined) resolve(match[1]);
    });
    child.once('exit', (code) => {
      reject(new Error(`exited ${String(code)}: ${stderr}`));
    });
  });
  return { child, url, stderr: () => stderr };
}

/** Over the child's stdio: initialize, then one intent_prepare of the seed request; resolves with its answer. */
function prepareOverStdio(
  child: ChildProcessByStdio<Writable, Readable, Readable>,
): Promise<{ result?: { structuredContent?: { requestId: string; submissionToken: string } } }> {
  let stdout = '';
  child.stdout.setEncoding('utf8');
  const answered = new Promise<{ result?: { structuredContent?: { requestId: string; submissionToken: string } } }>(
    (resolve) => {
      child.stdout.on('data', (chunk: string) => {
        stdout += chunk;
        for (const line of stdout.split('\n')) {
          if (!line.includes('"id":2')) continue;
          resolve(JSON.parse(line) as never);
        }
      });
    },
  );
  const send = (message: unknown) => child.stdin.write(JSON.stringify(message) + '\n');
  send({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'otel-test', version: '1' } },
  });
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'intent_prepare', arguments: SEED_ARGS } });
  return answered;
}

describe('the command exports spans to an OTLP/HTTP receiver [I11-OTEL-EXPORT]', () => {
  it('[I11-OTEL-EXPORT] over HTTP with http/json: every request a span with its events and attributes, flushed on SIGTERM', async () => {
    await ensureBuilt();
    const receiver = await startReceiver();
    receivers.push(receiver);
    const { child, url, stderr } = await serveHttpWithOtel({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'intent-mcp-under-test',
    });
    expect(stderr()).toContain('exporting OpenTelemetry spans protocol=http/json');
    const session = await rawSession(url);
    const done = await seedHandoff(session.callTool);
    const live = await prepareSeed(session.callTool);
    child.kill('SIGTERM');
    expect(await exitOf(child)).toBe(0);

    const posts = receiver.received.filter((r) => r.path === '/v1/traces');
    expect(posts.length).toBeGreaterThan(0);
    for (const post of posts) expect(post.contentType).toContain('application/json');
    const bodies = posts.map((p) => p.body.toString('utf8'));
    const payloads = bodies.map(
      (b) =>
        JSON.parse(b) as {
          resourceSpans: { resource: { attributes: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
        },
    );
    const resource = attrs(payloads[0]!.resourceSpans[0]!.resource.attributes);
    expect(resource['service.name']).toBe('intent-mcp-under-test');
    const spans = payloads.flatMap((p) => p.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
    const byRequest = (id: string) => spans.filter((s) => attrs(s.attributes)['intent.request_id'] === id);
    const [completed] = byRequest(done.requestId);
    expect(byRequest(done.requestId)).toHaveLength(1);
    expect(completed!.name).toBe('intent.handoff');
    expect(attrs(completed!.attributes)).toMatchObject({
      'intent.instance': 'main',
      'intent.state': 'completed',
      'intent.answer': 'result',
      'intent.validations': 1,
      'intent.mode': 'host',
    });
    expect(completed!.events.map((e) => e.name)).toEqual(['prepare', 'ACCEPT', 'VALIDATED']);
    expect(attrs(completed!.events[1]!.attributes)).toMatchObject({
      'intent.from': 'prepared',
      'intent.to': 'validating',
      'intent.candidate.bytes': Buffer.byteLength(SEED_CANDIDATE, 'utf8'),
    });
    // The request still live at SIGTERM: the shutdown closed its session, and its span was exported before exit.
    const [closed] = byRequest(live.requestId);
    expect(attrs(closed!.attributes)).toMatchObject({ 'intent.state': 'cancelled', 'intent.reason': 'session_closed' });
    expect(closed!.events.map((e) => e.name)).toEqual(['prepare', 'CLOSE']);
    const all = bodies.join('\n');
    for (const secret of [done.submissionToken, live.submissionToken, SEED_ARGS.input, SEED_CANDIDATE.slice(0, 30)])
      expect(all).not.toContain(secret);
  });

  it('[I11-OTEL-EXPORT] over stdio with the default http/protobuf: the spans leave when stdin ends', async () => {
    await ensureBuilt();
    const receiver = await startReceiver();
    receivers.push(receiver);
    const child = spawn(process.execPath, [join(REPO_ROOT, CLI), '--otel', '--log-level', 'warn'], {
      cwd: REPO_ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: childEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.endpoint}/v1/traces` }),
    });
    children.push(child);
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (c: string) => (stderr += c));
    const task = (await prepareOverStdio(child)).result?.structuredContent;
    expect(typeof task?.requestId).toBe('string');
    child.stdin.end();
    expect(await exitOf(child)).toBe(0);
    expect(stderr).toBe('');

    const posts = receiver.received.filter((r) => r.path === '/v1/traces');
    expect(posts.length).toBeGreaterThan(0);
    for (const post of posts) expect(post.contentType).toBe('application/x-protobuf');
    // Protobuf carries strings as plain UTF-8 bytes: the span's name, request id and end are readable in the body.
    const body = Buffer.concat(posts.map((p) => p.body));
    for (const text of ['intent.handoff', task!.requestId, 'session_closed', 'intent-mcp'])
      expect(body.includes(Buffer.from(text, 'utf8')), text).toBe(true);
    expect(body.includes(Buffer.from(task!.submissionToken, 'utf8'))).toBe(false);
  });
});

describe('an install without the optional SDK packages [I11-OTEL-MISSING]', () => {
  it('[I11-OTEL-MISSING] refuses --otel with one line and exit 2, and serves without it', async () => {
    await ensureBuilt();
    // A copy of the package whose node_modules lacks the optional @opentelemetry SDK packages (the API, a peer
    // dependency, stays): what `npm install --omit=optional` leaves.
    const root = mkdtempSync(join(tmpdir(), 'intent-mcp-no-otel-sdk-'));
    dirs.push(root);
    cpSync(join(REPO_ROOT, 'dist'), join(root, 'dist'), { recursive: true });
    cpSync(join(REPO_ROOT, 'package.json'), join(root, 'package.json'));
    mkdirSync(join(root, 'node_modules', '@opentelemetry'), { recursive: true });
    for (const name of readdirSync(join(REPO_ROOT, 'node_modules')))
      if (name !== '@opentelemetry' && name !== '.bin')
        symlinkSync(join(REPO_ROOT, 'node_modules', name), join(root, 'node_modules', name));
    symlinkSync(
      join(REPO_ROOT, 'node_modules', '@opentelemetry', 'api'),
      join(root, 'node_modules', '@opentelemetry', 'api'),
    );
    // stdin is /dev/null: a stdio server sees its input end at once.
    const run = async (args: string[]) => {
      const child = spawn(process.execPath, [join(root, CLI), ...args], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: childEnv(),
      });
      children.push(child);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const code = await exitOf(child);
      return { code, stdout, stderr };
    };
    const refused = await run(['serve', '--otel']);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    const lines = refused.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^intent-mcp: --otel needs the optional packages /);
    expect(lines[0]).toContain(
      '@opentelemetry/sdk-trace, @opentelemetry/resources, @opentelemetry/exporter-trace-otlp-proto cannot be loaded',
    );
    // Without --otel the same install serves: stdin closed at once, exit 0.
    const served = await run(['serve']);
    expect(served.code).toBe(0);
  });

  it('[I11-OTEL-MISSING] an OTLP protocol the command does not speak (grpc) is refused the same way', async () => {
    await ensureBuilt();
    const child = spawn(process.execPath, [join(REPO_ROOT, CLI), 'serve', '--otel'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: childEnv({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    });
    children.push(child);
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    expect(await exitOf(child)).toBe(2);
    expect(stderr.trimEnd().split('\n')).toEqual([
      'intent-mcp: --otel exports over OTLP/HTTP only, and OTEL_EXPORTER_OTLP_PROTOCOL is "grpc": set it to http/protobuf or http/json.',
    ]);
  });
});

describe('export failures are rate-limited on stderr', () => {
  it('[I11-OTEL-EXPORT] a collector that refuses every batch costs at most a few warning lines a minute, not one per batch', async () => {
    await ensureBuilt();
    // A collector that refuses everything (400 is not retried by the exporter): every batch fails.
    const receiver = await startReceiver('refuses');
    receivers.push(receiver);
    const { endpoint } = receiver;
    const { child, url, stderr } = await serveHttpWithOtel({
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      // One span per batch, sent at once: one failed export per request.
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '1',
      OTEL_BSP_SCHEDULE_DELAY: '1',
    });
    const session = await rawSession(url);
    for (let i = 0; i < 30; i += 1) await seedHandoff(session.callTool);
    child.kill('SIGTERM');
    expect(await exitOf(child)).toBe(0);
    const failures = stderr()
      .split('\n')
      .filter((l) => l.includes('opentelemetry'));
    // At least one failure was reported, at most the per-minute budget of them; the rest are counted in a summary.
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.length).toBeLessThanOrEqual(6);
  });
});

describe('a collector that never answers does not hold the exit [I11-OTEL-EXPORT]', () => {
  it('over stdio the command still ends within its shutdown grace after stdin ends, spans or not', async () => {
    await ensureBuilt();
    // Accepts every export and never answers: the exporter would wait its whole timeout (30 s here) per attempt.
    const receiver = await startReceiver('hangs');
    receivers.push(receiver);
    const { endpoint } = receiver;
    const child = spawn(process.execPath, [join(REPO_ROOT, CLI), '--otel', '--log-level', 'error'], {
      cwd: REPO_ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: childEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TIMEOUT: '30000',
        OTEL_BSP_SCHEDULE_DELAY: '1',
      }),
    });
    children.push(child);
    await prepareOverStdio(child);
    child.stdin.end();
    // The grace is 4.5 s; an exporter waiting on the hung collector held the process for its 30 s timeout before.
    expect(await exitOf(child, 15_000)).toBe(0);
  }, 30_000);
});
