#!/usr/bin/env node
/**
 * `npm run demo` (spec 05, "The demo"; issue 10): starts the BUILT command over stdio with the embedded default and
 * `--inspect`, prints the inspector's URL, and plays a scripted host with the official MCP client:
 *
 *   prepare → a candidate with a format error → its feedback → the corrected candidate → the result → a replay →
 *   a conflict → a cancel of another request → an expiry (a short deadline)
 *
 * printing each call, each reply (shortened) and each transition (read from the inspector's own `/api/events` SSE
 * stream, so what is printed is what the page shows). No model, no network beyond loopback.
 *
 *   node scripts/demo.mjs [--step] [--inspect-port 3002] [--timeout-ms 3000]
 *
 * `--step` pauses before each step until Enter when stdin is a terminal (and waits for Enter at the end, so the page
 * stays up); `--timeout-ms` is every request's deadline (default 3000 ms, 120000 ms when stepping, so a person reading
 * the page has time; the expiry step waits for it). The submission token is never printed in full.
 */
import { request as httpRequest } from 'node:http';
import process from 'node:process';
import { createInterface } from 'node:readline';
import { clearTimeout, setTimeout } from 'node:timers';
import { URL, fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = fileURLToPath(new URL('../dist/src/cli.js', import.meta.url));

const INPUT = '查询订单000123，不要取消订单';
/** Valid JSON that misses the required `coverage` and `intents`: a format error the validation reports as feedback. */
const BAD_CANDIDATE = '{"turnKind":"request"}';
const GOOD_CANDIDATE =
  '{"turnKind":"request","coverage":"complete","intents":[{"domain":null,"action":"查询","target":"订单000123","goal":"查询订单000123","understanding":"clear","constraints":[{"kind":"prohibition","text":"不要取消订单"}]}]}';
const OTHER_CANDIDATE =
  '{"turnKind":"request","coverage":"complete","intents":[{"domain":null,"action":"查询","target":"订单000123","goal":"查询订单","understanding":"clear","constraints":[]}]}';

// --- arguments ---------------------------------------------------------------------------------------------------------

function fail(message) {
  process.stderr.write(`demo: ${message}\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
function intOption(name, fallback, min, max) {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const n = Number(args[i + 1]);
  if (!Number.isInteger(n) || n < min || n > max) fail(`--${name} needs an integer from ${min} to ${max}`);
  return n;
}
for (const [i, a] of args.entries())
  if (a.startsWith('--') && !['--step', '--inspect-port', '--timeout-ms'].includes(a))
    fail(`unknown option ${a.slice(0, 40)}; use --step, --inspect-port N, --timeout-ms N`);
  else if (!a.startsWith('--') && !['--inspect-port', '--timeout-ms'].includes(args[i - 1] ?? ''))
    fail(`unexpected argument ${a.slice(0, 40)}`);
const step = flag('step');
const interactive = step && process.stdin.isTTY === true;
const inspectPort = intOption('inspect-port', 3002, 0, 65535);
const timeoutMs = intOption('timeout-ms', interactive ? 120_000 : 3000, 200, 3_600_000);

// --- output ------------------------------------------------------------------------------------------------------------

const out = (line = '') => process.stdout.write(`${line}\n`);
const MAX_SHOWN = 220;
const MAX_STRING = 60;

/**
 * A value for the terminal: JSON with the token cut to its first 6 characters, every long string (instructions, a
 * candidate, a result's text) cut to MAX_STRING characters with its length, the whole cut to MAX_SHOWN characters.
 */
function shorten(value) {
  const text = JSON.stringify(value, (key, v) => {
    if (typeof v !== 'string') return v;
    if (key === 'submissionToken') return `${v.slice(0, 6)}…`;
    return v.length > MAX_STRING ? `${v.slice(0, MAX_STRING)}…(${v.length} chars)` : v;
  });
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}… (${text.length} chars)` : text;
}

/** What a tool reply says, shortened: the structured content, or the error / text it carries. */
function replyOf(result) {
  if (result.structuredContent !== undefined) return shorten(result.structuredContent);
  const text = result.content?.find((c) => c.type === 'text')?.text ?? '';
  try {
    return shorten(JSON.parse(text));
  } catch {
    return shorten(text);
  }
}

const short = (id) => String(id).slice(0, 8);

// --- the command and the inspector's event stream -----------------------------------------------------------------

const transport = new StdioClientTransport({
  command: process.execPath,
  args: [CLI, '--inspect', String(inspectPort), '--timeout-ms', String(timeoutMs)],
  cwd: ROOT,
  env: getDefaultEnvironment(),
  stderr: 'pipe',
});
let stderr = '';
const inspectorUrl = new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`no inspector URL within 15 s; stderr:\n${stderr}`)), 15_000);
  transport.stderr?.on('data', (chunk) => {
    stderr += chunk.toString();
    const match = /inspector listening url=(\S+)/.exec(stderr);
    if (match) {
      clearTimeout(timer);
      resolve(match[1]);
    }
  });
});
const client = new Client({ name: 'intent-mcp-demo', version: '1.0.0' });

/** Transitions received from `/api/events`, printed as they come. */
const transitions = [];
function followEvents(url) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}api/events`, (res) => {
      if (res.statusCode !== 200) reject(new Error(`the inspector answered ${res.statusCode} to /api/events`));
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (chunk) => {
        buffer += chunk;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!block.startsWith('event: transition\n')) continue;
          const t = JSON.parse(block.slice(block.indexOf('data: ') + 6));
          transitions.push(t);
          out(
            `  ◆ transition ${short(t.requestId)} ${t.event}: ${t.from ?? '—'} → ${t.to} (answer ${t.answer}, validations ${t.validations}${t.detail ? `; ${t.detail}` : ''})`,
          );
        }
      });
      res.on('error', () => undefined);
      resolve(() => req.destroy());
    });
    req.on('error', reject);
    req.end();
  });
}

/** Waits until `count` transitions have arrived (bounded), so each step's transitions print under it. */
async function transitionsReach(count, boundMs = 5000) {
  const until = Date.now() + boundMs;
  while (transitions.length < count && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  if (transitions.length < count) throw new Error(`expected ${count} transitions, saw ${transitions.length}`);
}

const rl = interactive ? createInterface({ input: process.stdin, output: process.stdout }) : undefined;
const pause = (prompt) => (rl === undefined ? Promise.resolve() : new Promise((r) => rl.question(prompt, () => r())));

// --- the script -------------------------------------------------------------------------------------------------------

let n = 0;
const STEPS = 9;
async function stepOf(title, run, expectTransitions) {
  n += 1;
  await pause(`\n[Enter] step ${n}/${STEPS}: ${title} `);
  out();
  out(`▶ step ${n}/${STEPS}: ${title}`);
  const before = transitions.length;
  const value = await run();
  await transitionsReach(before + expectTransitions);
  return value;
}

async function call(name, args) {
  out(`  → call ${name} ${shorten(args)}`);
  const result = await client.callTool({ name, arguments: args });
  out(`  ← reply${result.isError ? ' (isError)' : ''} ${replyOf(result)}`);
  return result;
}

async function main() {
  await client.connect(transport);
  const url = await inspectorUrl;
  const stopEvents = await followEvents(url);
  out(`intent-mcp demo: the built command over stdio (embedded default, every request's deadline ${timeoutMs} ms)`);
  out(`Inspector page: ${url}   (open it to watch the requests move through the machine)`);

  const task = await stepOf(
    'prepare a request',
    async () => (await call('intent_prepare', { input: INPUT })).structuredContent,
    1,
  );
  const submit = (candidateText, t = task) =>
    call('intent_accept', { requestId: t.requestId, submissionToken: t.submissionToken, candidateText });

  const bad = await stepOf('submit a candidate with a format error', () => submit(BAD_CANDIDATE), 2);
  await stepOf(
    'read the feedback',
    async () => {
      const text = bad.content?.find((c) => c.type === 'text')?.text ?? '{}';
      const error = JSON.parse(text).error ?? {};
      out(`  ✎ ${error.code}: ${error.message}`);
      for (const item of error.details?.issues ?? error.details?.feedback ?? [])
        out(`  ✎   ${item.path === '' ? '(the document)' : item.path}: ${item.message}`);
    },
    0,
  );
  const good = await stepOf('submit the corrected candidate', () => submit(GOOD_CANDIDATE), 2);
  await stepOf(
    'the result',
    async () => {
      const result = good.structuredContent ?? {};
      const goals = (result.effective?.intents ?? []).map((i) => `${i.action} ${i.target}`).join('; ');
      out(`  ✓ request ${short(task.requestId)} ${result.status ?? 'ended'}: ${goals} (retained for replay)`);
    },
    0,
  );
  await stepOf('submit the same candidate again: a replay of the retained result', () => submit(GOOD_CANDIDATE), 1);
  await stepOf('submit a different candidate: a conflict', () => submit(OTHER_CANDIDATE), 1);
  await stepOf(
    'prepare another request and cancel it',
    async () => {
      const other = (await call('intent_prepare', { input: INPUT })).structuredContent;
      await call('intent_cancel', { requestId: other.requestId, reason: 'cancelled' });
    },
    2,
  );
  await stepOf(
    `prepare a third request and let its ${timeoutMs} ms deadline pass`,
    async () => {
      const base = transitions.length;
      const late = (await call('intent_prepare', { input: INPUT })).structuredContent;
      out(`  … waiting for the deadline (${late.expiresAt ?? `${timeoutMs} ms`})`);
      await transitionsReach(base + 2, timeoutMs + 10_000);
      await submit(GOOD_CANDIDATE, late);
    },
    3,
  );
  out();
  out(`Done: ${transitions.length} transitions. Inspector page: ${url}`);
  await pause('\n[Enter] to stop the server ');
  rl?.close();
  stopEvents();
  await client.close();
}

main().then(
  () => process.exit(0),
  async (error) => {
    process.stderr.write(`demo: ${error instanceof Error ? error.message : String(error)}\n`);
    if (stderr !== '') process.stderr.write(`the command's stderr:\n${stderr}`);
    await client.close().catch(() => undefined);
    process.exit(1);
  },
);
