/**
 * Cold start of the stdio command (issue 13, item 10), against a bare SDK `serveStdio` server in the same run:
 *
 *   npm run build && node dist/bench/coldStart.js [--rounds N]
 *
 * Each round spawns both servers, alternating which goes first, and measures wall time from spawn to (a) the
 * `initialize` answer and (b) the first completed tool work: for intent-mcp a whole host handoff (intent_prepare, then
 * intent_accept with the seed candidate, answered with the IntentResult); for the bare server two `echo` calls. Also
 * prints the bytes of the `tools/list` answer. Medians of the rounds and their ratio; it reports, never asserts.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const SEED_CANDIDATE = readFileSync(new URL('test/fixtures/seed-candidate.json', `file://${root}`), 'utf8');
const SEED_INPUT = (
  JSON.parse(readFileSync(new URL('test/fixtures/seed-executor-request.json', `file://${root}`), 'utf8')) as {
    params: { arguments: { input: string } };
  }
).params.arguments.input;

const roundsArg = process.argv.indexOf('--rounds');
const ROUNDS = roundsArg > 0 ? Number(process.argv[roundsArg + 1]) : 15;

interface Timing {
  initializeMs: number;
  workMs: number;
  toolsListBytes: number;
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
};

/** Spawns `args`, runs the scripted exchange, and times it from the spawn. */
function run(args: string[], intent: boolean): Promise<Timing> {
  const started = process.hrtime.bigint();
  const elapsed = (): number => Number(process.hrtime.bigint() - started) / 1e6;
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['pipe', 'pipe', 'ignore'] });
  const send = (message: unknown): void => {
    child.stdin.write(`${JSON.stringify(message)}\n`);
  };
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timing: Partial<Timing> = {};
    child.on('error', reject);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        const message = JSON.parse(line) as { id?: number; result?: { content?: { text: string }[] } };
        if (message.id === 1) {
          timing.initializeMs = elapsed();
          send({ jsonrpc: '2.0', method: 'notifications/initialized' });
          send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
        } else if (message.id === 2) {
          timing.toolsListBytes = Buffer.byteLength(line);
          send(
            intent
              ? {
                  jsonrpc: '2.0',
                  id: 3,
                  method: 'tools/call',
                  params: { name: 'intent_prepare', arguments: { input: SEED_INPUT } },
                }
              : { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { x: 'a' } } },
          );
        } else if (message.id === 3) {
          const task = intent ? (JSON.parse(message.result?.content?.[0]?.text ?? '{}') as Record<string, string>) : {};
          send(
            intent
              ? {
                  jsonrpc: '2.0',
                  id: 4,
                  method: 'tools/call',
                  params: {
                    name: 'intent_accept',
                    arguments: {
                      requestId: task['requestId'],
                      submissionToken: task['submissionToken'],
                      candidateText: SEED_CANDIDATE,
                    },
                  },
                }
              : { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'echo', arguments: { x: 'b' } } },
          );
        } else if (message.id === 4) {
          timing.workMs = elapsed();
          child.stdin.end();
          child.kill();
          resolve(timing as Timing);
        }
      }
    });
    send(INITIALIZE);
  });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

const ours: Timing[] = [];
const bare: Timing[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const oursFirst = round % 2 === 0;
  const runOurs = () => run(['dist/src/cli.js'], true);
  const runBare = () => run(['dist/bench/bareStdioServer.js'], false);
  if (oursFirst) {
    ours.push(await runOurs());
    bare.push(await runBare());
  } else {
    bare.push(await runBare());
    ours.push(await runOurs());
  }
}
const row = (label: string, pick: (t: Timing) => number): string => {
  const a = median(ours.map(pick));
  const b = median(bare.map(pick));
  return `| ${label.padEnd(34)} | ${a.toFixed(0).padStart(8)} | ${b.toFixed(0).padStart(8)} | ${(a / b).toFixed(2).padStart(5)}× |`;
};
process.stdout.write(
  [
    `Cold start over stdio, ${ROUNDS} rounds, medians (wall ms from spawn)`,
    '| measure                            | intent-mcp | bare SDK | ratio |',
    '| ---------------------------------- | -------: | -------: | ----: |',
    row('initialize answered', (t) => t.initializeMs),
    row('first handoff completed (bare: 2 calls)', (t) => t.workMs),
    `tools/list answer: ${ours[0]?.toolsListBytes ?? 0} bytes (bare server: ${bare[0]?.toolsListBytes ?? 0} bytes)`,
    '',
  ].join('\n'),
);
