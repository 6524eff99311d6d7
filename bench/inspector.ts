/**
 * The inspector bench (issue 10, "Performance"):
 *
 *   npm run bench:inspector          (= npm run build && node dist/bench/inspector.js [--rounds N])
 *
 * 1. Handoff cost with the inspector on and one SSE client connected vs off, same run: adapters with the embedded
 *    default (host mode, one instance), one of them watched by an inspector (its model subscribed, its listener on
 *    loopback, one client reading `/api/events` from a child process). Each operation is one seed handoff (prepare + accept
 *    of the valid candidate) through `session.callTool`; a third adapter with a bare `inspect` listener shows what the
 *    engine's own instrumentation costs apart from the inspector. Cases interleave chunk by chunk (`bench/measure.ts`), so the
 *    ratio is paired round by round. Process CPU time: the SSE writes count where they land.
 * 2. Page payload with 1,000 live requests: bytes of `GET /` (first paint), of a later page and of `/api/snapshot`.
 *
 * It reports; it never asserts a timing.
 */
import { fork } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { startInspector } from '../src/inspector/index.js';
import { Intent } from '../src/intent.js';
import { createIntentMcpAdapter, type IntentMcpAdapter } from '../src/mcp/adapter.js';
import { createLogger } from '../src/server/logger.js';
import { SEED_CANDIDATE, SEED_INPUT } from './fixture.js';
import { compare, ratio, round } from './measure.js';
import { positiveIntArg } from './support.js';

const adapterOf = (limits: { maxPendingPerSession?: number } = {}): IntentMcpAdapter =>
  createIntentMcpAdapter({ mode: 'host', instances: { main: new Intent({}) }, limits });

function handoff(adapter: IntentMcpAdapter): () => Promise<unknown> {
  const session = adapter.connect({ protocolVersion: '2025-11-25' });
  return async () => {
    const prepared = await session.callTool('intent_prepare', { input: SEED_INPUT });
    const task = prepared?.structuredContent as { requestId: string; submissionToken: string };
    const done = await session.callTool('intent_accept', { ...pick(task), candidateText: SEED_CANDIDATE });
    if (done?.isError === true) throw new Error('bench: the seed handoff failed');
    return done;
  };
}

const pick = (task: { requestId: string; submissionToken: string }) => ({
  requestId: task.requestId,
  submissionToken: task.submissionToken,
});

/**
 * Opens `/api/events` in a child process (a browser would read it in its own process too, so only the server's side of
 * the stream is measured here); the child reports how many bytes it read when it is told to stop.
 */
function sseClient(url: string): Promise<{ stop: () => Promise<number> }> {
  const script = `
    const req = require('node:http').request(process.argv[1] + 'api/events', (res) => {
      let n = 0;
      res.on('data', (c) => (n += c.length));
      process.send('open');
      process.on('message', () => { process.send(n); req.destroy(); process.exit(0); });
    });
    req.end();`;
  const child = fork('-e', [script, url], { execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', () => {
      resolve({
        stop: () =>
          new Promise<number>((done) => {
            child.once('message', (n) => {
              done(Number(n));
            });
            child.send('stop');
          }),
      });
    });
  });
}

function fetchBytes(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    httpRequest(url, (res) => {
      let n = 0;
      res.on('data', (c: Buffer) => (n += c.length));
      res.on('end', () => {
        resolve(n);
      });
    })
      .on('error', reject)
      .end();
  });
}

const logger = createLogger('silent');
const rounds = positiveIntArg('rounds', 40);

// --- 1. handoff cost, inspector off vs on with one SSE client ----------------------------------------------------
const off = adapterOf();
const on = adapterOf();
// The engine's own instrumentation (it records only while someone listens), without the inspector: separates its
// share from the inspector's.
const bare = adapterOf();
const unlisten = bare.inspect(() => undefined);
const inspector = await startInspector(on, { port: 0, logger });
const client = await sseClient(inspector.url);
const stats = await compare(
  {
    off: { fn: handoff(off), async: true },
    bare: { fn: handoff(bare), async: true },
    on: { fn: handoff(on), async: true },
  },
  { rounds, chunkMicros: 20_000, warmupMicros: 300_000 },
);
const r = ratio(stats.on, stats.off);
const rBare = ratio(stats.bare, stats.off);
const rOverBare = ratio(stats.on, stats.bare);
const streamed = await client.stop();
await inspector.close();
await off.close();
unlisten();
await bare.close();
await on.close();

// --- 2. page payload with 1,000 live requests -----------------------------------------------------------------------
const live = adapterOf({ maxPendingPerSession: 1000 });
const watching = await startInspector(live, { port: 0, logger });
const session = live.connect({ protocolVersion: '2025-11-25' });
for (let i = 0; i < 1000; i += 1) await session.callTool('intent_prepare', { input: SEED_INPUT });
const firstPaint = await fetchBytes(watching.url);
const page20 = await fetchBytes(`${watching.url}?page=20`);
const snapshot = await fetchBytes(`${watching.url}api/snapshot`);
await watching.close();
await live.close();

const kib = (n: number) => `${round(n / 1024, 1)} KiB`;
process.stdout.write(
  [
    `Inspector bench (node ${process.version}, ${rounds} rounds)`,
    '',
    '| case | median µs CPU / handoff | mean µs | ratio on/off (median of paired rounds) | ratio of means |',
    '| --- | ---: | ---: | ---: | ---: |',
    `| inspector off | ${round(stats.off.median)} | ${round(stats.off.mean)} | | |`,
    `| engine listener only (no inspector) | ${round(stats.bare.median)} | ${round(stats.bare.mean)} | ${round(rBare.median, 3)}× | ${round(rBare.totals, 3)}× |`,
    `| inspector on + 1 SSE client | ${round(stats.on.median)} | ${round(stats.on.mean)} | ${round(r.median, 3)}× | ${round(r.totals, 3)}× |`,
    '',
    `The inspector's own share (on / engine listener only): ${round(rOverBare.median, 3)}× (ratio of means ${round(rOverBare.totals, 3)}×)`,
    '',
    `SSE bytes read by the client: ${kib(streamed)}`,
    '',
    '| page with 1,000 live requests | bytes |',
    '| --- | ---: |',
    `| GET / (first paint, 50 rows) | ${kib(firstPaint)} |`,
    `| GET /?page=20 | ${kib(page20)} |`,
    `| GET /api/snapshot | ${kib(snapshot)} |`,
    '',
  ].join('\n'),
);
