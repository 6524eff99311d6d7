/**
 * Issue 12, the MCP-level comparisons (`npm run bench` runs this after bench/run.ts; BENCHMARKS.md quotes it):
 *
 *   node dist/bench/mcp.js [--only stdio,http,growth,cold] [--stdio-rounds N] [--stdio-chunk N]
 *                          [--http-rounds N] [--http-seconds S] [--http-sessions N] [--cold-runs N]
 *   node dist/bench/mcp.js --profile [--profile-handoffs N]   (CPU profiles of both servers under the stdio load)
 *   node dist/bench/mcp.js --baseline-cli dist/before/src/cli.js ...   (the baseline is an earlier build, not bare)
 *
 * 1. stdio: the built command against the bare SDK server (bench/bareServer.ts: the same tool definitions, canned
 *    replies of the same bytes), one official v2 client each, chunks of handoffs interleaved ABAB. Per handoff: wall
 *    time seen by the client and the server process's CPU (its threads' /proc schedstat; /proc/PID/stat totals as a
 *    check).
 * 2. HTTP: 50 concurrent sessions (one official v2 client each, all in this process) doing handoffs back to back for a
 *    few seconds against each server in turn (ABAB); handoffs per second, p50 / p99 latency, server CPU per handoff.
 * 4. Cost growth in process through the adapter: a handoff at 1 / 100 / 1,000 open sessions, and at 1 / 100 / 1,000
 *    requests pending in its session (bench/measure.ts's interleaved CPU chunks).
 * 5. Cold start: process spawn to the first completed handoff over stdio, both servers alternately.
 *
 * (Item 3, the in-process handoff against validate + normalise + JSON.stringify, is bench/run.ts's issue 3a.)
 * It reports and never asserts a timing. Figures also go to `<os tmpdir>/intent-mcp-bench/mcp.json`.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { createIntentMcpAdapter, type IntentMcpSession } from '../src/mcp/adapter.js';
import { CANDIDATE_TEXT, REQUEST, benchIntent } from './fixture.js';
import {
  benchConfigFile,
  clientHandoff,
  httpClient,
  httpServer,
  quantile,
  retried,
  schedCpuMicros,
  statCpuMicros,
  stdioServer,
  useBaselineCli,
  type Side,
  type StdioServer,
} from './mcpLoad.js';
import { compare, median, ratio, round, wallMicros } from './measure.js';
import { log, positiveIntArg, table } from './support.js';

const baselineAt = process.argv.indexOf('--baseline-cli');
useBaselineCli(baselineAt < 0 ? undefined : process.argv[baselineAt + 1]);
const onlyAt = process.argv.indexOf('--only');
const ONLY = onlyAt < 0 ? undefined : new Set((process.argv[onlyAt + 1] ?? '').split(','));
const wanted = (name: string): boolean => ONLY === undefined || ONLY.has(name);

const STDIO_ROUNDS = positiveIntArg('stdio-rounds', 16);
const STDIO_CHUNK = positiveIntArg('stdio-chunk', 150);
const HTTP_ROUNDS = positiveIntArg('http-rounds', 4);
const HTTP_SECONDS = positiveIntArg('http-seconds', 3);
const HTTP_SESSIONS = positiveIntArg('http-sessions', 50);
const COLD_RUNS = positiveIntArg('cold-runs', 8);
const PROFILE_HANDOFFS = positiveIntArg('profile-handoffs', 3000);

const f = (n: number, d = 2): string => `${round(n, d)}`;
const x = (n: number): string => `${round(n, 2)}×`;
const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT MET');
const sides: readonly Side[] = ['ours', 'bare'];

const config = benchConfigFile();
const results: Record<string, unknown> = {
  date: new Date().toISOString(),
  loadavg: os.loadavg(),
  node: process.version,
};
const started = wallMicros();

// ---------------------------------------------------------------------------------------------------------------------
// --profile: V8 CPU profiles of both server processes under the stdio load, top self time by function

if (process.argv.includes('--profile')) {
  const { topSelfTime } = await import('./cpuProfile.js');
  const shares: Record<string, ReturnType<typeof topSelfTime>> = {};
  for (const side of sides) {
    const dir = mkdtempSync(join(os.tmpdir(), `intent-mcp-prof-${side}-`));
    const server = await stdioServer(side, config, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
    await server.client.listTools();
    for (let i = 0; i < PROFILE_HANDOFFS; i++) await clientHandoff(server.client);
    await server.close();
    // The profile is written when the process exits (stdin closed: both servers end on their own).
    let file: string | undefined;
    for (let i = 0; i < 100 && file === undefined; i++) {
      file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
      if (file === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (file === undefined) throw new Error(`no profile from ${side} in ${dir}`);
    const prof = topSelfTime(JSON.parse(readFileSync(join(dir, file), 'utf8')) as never, 30);
    shares[side] = prof;
    log(`PROFILE — ${side}: ${PROFILE_HANDOFFS} handoffs over stdio, self time by function (${join(dir, file)})`);
    table(
      ['function (url:line)', 'self %', 'self ms'],
      prof.rows.map((r) => [r.name, f(r.percent, 1), f(r.ms, 0)]),
    );
    log(`  total sampled ${f(prof.totalMs, 0)} ms; categories:`);
    table(
      ['category', 'self %', 'µs per handoff'],
      Object.entries(prof.categories).map(([k, v]) => [
        k,
        f((100 * v) / prof.totalMs, 1),
        f((1000 * v) / PROFILE_HANDOFFS, 1),
      ]),
    );
  }
  results['profile'] = shares;
  writeResults();
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------------------------------
// 1. stdio

async function stdioComparison(): Promise<Record<string, unknown>> {
  const servers: Record<Side, StdioServer> = {
    ours: await stdioServer('ours', config),
    bare: await stdioServer('bare', config),
  };
  for (const side of sides) await servers[side].client.listTools();
  // Warm-up: the JIT has compiled both hot paths before anything is measured (BENCHMARKS.md, "JIT warm-up").
  for (let i = 0; i < 2000; i++) for (const side of sides) await clientHandoff(servers[side].client);
  const wall: Record<Side, number[]> = { ours: [], bare: [] };
  const cpu: Record<Side, number[]> = { ours: [], bare: [] };
  const stat0 = { ours: statCpuMicros(servers.ours.pid), bare: statCpuMicros(servers.bare.pid) };
  for (let r = 0; r < STDIO_ROUNDS; r++) {
    const order = r % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const { client, pid } = servers[side];
      const c0 = schedCpuMicros(pid);
      const w0 = wallMicros();
      for (let i = 0; i < STDIO_CHUNK; i++) await clientHandoff(client);
      wall[side].push((wallMicros() - w0) / STDIO_CHUNK);
      cpu[side].push((schedCpuMicros(pid) - c0) / STDIO_CHUNK);
    }
  }
  const handoffs = STDIO_ROUNDS * STDIO_CHUNK;
  const statPer = {
    ours: (statCpuMicros(servers.ours.pid) - stat0.ours) / handoffs,
    bare: (statCpuMicros(servers.bare.pid) - stat0.bare) / handoffs,
  };
  for (const side of sides) await servers[side].close();
  const paired = (a: number[], b: number[]): number => median(a.map((v, i) => v / b[i]!));
  const out = {
    rounds: STDIO_ROUNDS,
    chunk: STDIO_CHUNK,
    wallMicros: { ours: median(wall.ours), bare: median(wall.bare) },
    cpuMicros: { ours: median(cpu.ours), bare: median(cpu.bare) },
    statCpuMicrosOverRun: statPer,
    wallRatio: paired(wall.ours, wall.bare),
    cpuRatio: paired(cpu.ours, cpu.bare),
    statCpuRatio: statPer.ours / statPer.bare,
    chunks: { wall, cpu },
  };
  log(
    `1. STDIO — ${STDIO_ROUNDS} rounds × ${STDIO_CHUNK} handoffs per server, ABAB, official v2 client, after 2,000 warm-up`,
  );
  table(
    ['per handoff (median chunk)', 'intent-mcp', 'bare SDK', 'ratio (paired median)'],
    [
      ['wall µs (client side)', f(out.wallMicros.ours, 0), f(out.wallMicros.bare, 0), x(out.wallRatio)],
      ['server CPU µs (schedstat)', f(out.cpuMicros.ours, 0), f(out.cpuMicros.bare, 0), x(out.cpuRatio)],
      ['server CPU µs (/proc/PID/stat, whole run)', f(statPer.ours, 0), f(statPer.bare, 0), x(out.statCpuRatio)],
    ],
  );
  log(
    `  targets: wall ≤ 1.10× → ${verdict(out.wallRatio <= 1.1)}; server CPU ≤ 1.25× → ${verdict(out.cpuRatio <= 1.25)}`,
  );
  log();
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// 2. HTTP, 50 concurrent sessions

async function httpRound(clients: Client[], seconds: number): Promise<{ latencies: number[]; wall: number }> {
  const latencies: number[] = [];
  const end = wallMicros() + seconds * 1e6;
  const w0 = wallMicros();
  await Promise.all(
    clients.map(async (client) => {
      while (wallMicros() < end) {
        const t0 = wallMicros();
        await clientHandoff(client);
        latencies.push(wallMicros() - t0);
      }
    }),
  );
  return { latencies, wall: wallMicros() - w0 };
}

async function httpComparison(): Promise<Record<string, unknown>> {
  const servers = { ours: await httpServer('ours', config), bare: await httpServer('bare', config) };
  const clients: Record<Side, Client[]> = { ours: [], bare: [] };
  for (const side of sides)
    for (let i = 0; i < HTTP_SESSIONS; i++) clients[side].push(await httpClient(servers[side].url));
  for (const side of sides) await Promise.all(clients[side].map((c) => c.listTools()));
  for (const side of sides) await httpRound(clients[side], 2); // warm-up
  const latencies: Record<Side, number[]> = { ours: [], bare: [] };
  const rates: Record<Side, number[]> = { ours: [], bare: [] };
  const cpuPer: Record<Side, number[]> = { ours: [], bare: [] };
  for (let r = 0; r < HTTP_ROUNDS; r++) {
    const order = r % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const c0 = schedCpuMicros(servers[side].pid);
      const round_ = await httpRound(clients[side], HTTP_SECONDS);
      const n = round_.latencies.length;
      cpuPer[side].push((schedCpuMicros(servers[side].pid) - c0) / n);
      rates[side].push(n / (round_.wall / 1e6));
      latencies[side].push(...round_.latencies);
    }
  }
  for (const side of sides) await Promise.all(clients[side].map((c) => c.close().catch(() => undefined)));
  for (const side of sides) await servers[side].stop();
  const paired = (a: number[], b: number[]): number => median(a.map((v, i) => v / b[i]!));
  const q = (side: Side, p: number): number => quantile(latencies[side], p) / 1000;
  const out = {
    sessions: HTTP_SESSIONS,
    rounds: HTTP_ROUNDS,
    seconds: HTTP_SECONDS,
    handoffsPerSecond: { ours: median(rates.ours), bare: median(rates.bare) },
    throughputRatio: paired(rates.ours, rates.bare),
    p50Ms: { ours: q('ours', 0.5), bare: q('bare', 0.5) },
    p99Ms: { ours: q('ours', 0.99), bare: q('bare', 0.99) },
    cpuMicrosPerHandoff: { ours: median(cpuPer.ours), bare: median(cpuPer.bare) },
    cpuRatio: paired(cpuPer.ours, cpuPer.bare),
    handoffs: { ours: latencies.ours.length, bare: latencies.bare.length },
  };
  const p99Ratio = out.p99Ms.ours / out.p99Ms.bare;
  log(
    `2. HTTP — ${HTTP_SESSIONS} concurrent sessions per server, ${HTTP_ROUNDS} rounds × ${HTTP_SECONDS} s, ABAB (clients in this process)`,
  );
  table(
    ['', 'intent-mcp', 'bare SDK', 'ratio'],
    [
      [
        'handoffs/s (median round)',
        f(out.handoffsPerSecond.ours, 0),
        f(out.handoffsPerSecond.bare, 0),
        x(out.throughputRatio),
      ],
      ['p50 latency ms', f(out.p50Ms.ours), f(out.p50Ms.bare), x(out.p50Ms.ours / out.p50Ms.bare)],
      ['p99 latency ms', f(out.p99Ms.ours), f(out.p99Ms.bare), x(p99Ratio)],
      [
        'server CPU µs per handoff',
        f(out.cpuMicrosPerHandoff.ours, 0),
        f(out.cpuMicrosPerHandoff.bare, 0),
        x(out.cpuRatio),
      ],
      ['handoffs measured', `${out.handoffs.ours}`, `${out.handoffs.bare}`, ''],
    ],
  );
  log(`  calls retried after a keep-alive connection closed under them (both sides): ${retried.count}`);
  log(
    `  targets: throughput ≥ 0.90× → ${verdict(out.throughputRatio >= 0.9)}; p99 ≤ 1.2× → ${verdict(p99Ratio <= 1.2)}`,
  );
  log();
  return { ...out, p99Ratio, retriedCalls: retried.count };
}

// ---------------------------------------------------------------------------------------------------------------------
// 4. cost growth, in process through the adapter

async function growth(): Promise<Record<string, unknown>> {
  const COUNTS = [1, 100, 1000] as const;
  const handoff = async (session: IntentMcpSession): Promise<void> => {
    const prepared = await session.callTool('intent_prepare', { ...REQUEST });
    const task = prepared!.structuredContent as { requestId: string; submissionToken: string };
    const reply = await session.callTool('intent_accept', {
      requestId: task.requestId,
      submissionToken: task.submissionToken,
      candidateText: CANDIDATE_TEXT,
    });
    if (reply!.isError) throw new Error('handoff failed');
  };
  const cases: Record<string, { fn: () => Promise<void>; async: true }> = {};
  for (const n of COUNTS) {
    // n open sessions on one adapter, each with one request pending; handoffs round-robin over them.
    const adapter = createIntentMcpAdapter({ mode: 'host', instances: { main: benchIntent() } });
    const sessions = Array.from({ length: n }, () => adapter.connect({ protocolVersion: '2025-11-25' }));
    for (const s of sessions) await s.callTool('intent_prepare', { ...REQUEST });
    let next = 0;
    cases[`s${n}`] = { fn: () => handoff(sessions[next++ % n]!), async: true };
  }
  for (const n of COUNTS) {
    const adapter = createIntentMcpAdapter({
      mode: 'host',
      instances: { main: benchIntent() },
      limits: { maxPendingPerSession: 2000 },
    });
    const session = adapter.connect({ protocolVersion: '2025-11-25' });
    for (let i = 0; i < n; i++) await session.callTool('intent_prepare', { ...REQUEST });
    cases[`p${n}`] = { fn: () => handoff(session), async: true };
  }
  const stats = await compare(cases, { rounds: 100, chunkMicros: 3000, warmupMicros: 200_000 });
  log(
    '4. COST GROWTH — one handoff through the adapter (prepare + accept envelopes), interleaved CPU chunks, 100 rounds',
  );
  table(
    ['case', 'µs median', 'vs 1'],
    [
      ...COUNTS.map((n) => [
        `${n} open sessions`,
        f(stats[`s${n}`]!.median),
        x(ratio(stats[`s${n}`]!, stats.s1!).median),
      ]),
      ...COUNTS.map((n) => [
        `${n} pending in the session`,
        f(stats[`p${n}`]!.median),
        x(ratio(stats[`p${n}`]!, stats.p1!).median),
      ]),
    ],
  );
  const sessionsRatio = ratio(stats.s1000!, stats.s1!).median;
  const pendingRatio = ratio(stats.p1000!, stats.p1!).median;
  log(
    `  target flat (≤ 1.2×): 1,000 sessions ${x(sessionsRatio)} → ${verdict(sessionsRatio <= 1.2)}; ` +
      `1,000 pending ${x(pendingRatio)} → ${verdict(pendingRatio <= 1.2)}`,
  );
  log();
  return { stats, sessionsRatio, pendingRatio };
}

// ---------------------------------------------------------------------------------------------------------------------
// 5. cold start

async function coldStart(): Promise<Record<string, unknown>> {
  const times: Record<Side, number[]> = { ours: [], bare: [] };
  const cpu: Record<Side, number[]> = { ours: [], bare: [] };
  for (let r = 0; r < COLD_RUNS; r++) {
    const order = r % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      const w0 = wallMicros();
      const server = await stdioServer(side, config);
      await clientHandoff(server.client);
      times[side].push((wallMicros() - w0) / 1000);
      cpu[side].push(statCpuMicros(server.pid) / 1000);
      await server.close();
    }
  }
  const paired = median(times.ours.map((v, i) => v / times.bare[i]!));
  log(`5. COLD START — spawn to the first completed handoff over stdio, ${COLD_RUNS} runs each, alternating`);
  table(
    ['', 'intent-mcp', 'bare SDK', 'ratio'],
    [
      ['wall ms (median)', f(median(times.ours), 0), f(median(times.bare), 0), x(paired)],
      [
        'server CPU ms until then (median)',
        f(median(cpu.ours), 0),
        f(median(cpu.bare), 0),
        x(median(cpu.ours) / median(cpu.bare)),
      ],
    ],
  );
  return { times, cpu, ratio: paired };
}

function writeResults(): void {
  results['totalSeconds'] = (wallMicros() - started) / 1e6;
  const dir = join(os.tmpdir(), 'intent-mcp-bench');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'mcp.json');
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  log(`Figures written to ${file}. Total ${round(results['totalSeconds'] as number, 1)} s.`);
}

log(
  `ISSUE 12 — MCP-level comparisons, ${new Date().toISOString()}, load average ${os
    .loadavg()
    .map((l) => round(l, 2))
    .join(' ')}`,
);
log();
if (wanted('stdio')) results['stdio'] = await stdioComparison();
if (wanted('http')) results['http'] = await httpComparison();
if (wanted('growth')) results['growth'] = await growth();
if (wanted('cold')) results['cold'] = await coldStart();
writeResults();
