/**
 * Issue 11's trace figures (BENCHMARKS.md, "Trace files"):
 *
 *   node dist/bench/trace.js [--rounds N] [--requests N[,N...]]
 *
 * 1. Handoff cost with `--trace` on vs off, same run: one handoff (prepare + accept of the 2 KB fixture candidate) on an
 *    engine nobody inspects, on one with a no-op inspection listener (what instrumentation alone costs), and on one
 *    whose listener is the command's trace writer appending to a file in the OS temp dir. CPU time of the whole
 *    process (the writer's file system calls on libuv's threads included), interleaved chunks (`bench/measure.ts`).
 * 2. `trace check` and `trace report` throughput and peak RSS on generated traces of 100,000 and 1,000,000 requests
 *    (default): each run is a fresh child process (`--child check|report FILE`) that reports its wall time, CPU time and
 *    `maxRSS`, so peak memory can be compared between trace sizes.
 *
 * The generated traces repeat one recorded script of 8 requests (a correction then a success, a replay and a conflict;
 * a conflict and a join while validating; a rejection after the correction budget; a cancel and late calls; an expiry
 * by the timer and one judged on arrival; a session close with two live requests), recorded from a real engine on a
 * simulated clock, with fresh request and session ids and shifted times for every repetition.
 */
import { spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { SimulatedClock } from 'xstate';
import { HandoffEngine, type EngineSession, type HandoffTransition } from '../src/engine/engine.js';
import { createLogger } from '../src/server/logger.js';
import { checkTrace } from '../src/trace/check.js';
import { headerLine } from '../src/trace/format.js';
import { collectReport, renderReport } from '../src/trace/report.js';
import { TraceWriter } from '../src/trace/writer.js';
import { CANDIDATE_TEXT, REQUEST, benchHandoff, benchIntent } from './fixture.js';
import { compare, cpuMicros, round, wallMicros, type CompareOptions } from './measure.js';
import { argValue, log, positiveIntArg } from './support.js';

// ---------------------------------------------------------------------------------------------------------------------
// --child check|report FILE: one measured run in a fresh process.

const childMode = argValue('child');
if (childMode !== undefined) {
  const file = argValue('file') ?? '';
  const wall0 = wallMicros();
  const cpu0 = cpuMicros();
  let requests = 0;
  let problems = 0;
  let bytes = 0;
  if (childMode === 'check') {
    const summary = await checkTrace([file]);
    requests = summary.requests;
    problems = summary.problems;
  } else {
    const data = await collectReport([file]);
    requests = data.requests;
    bytes = (await renderReport(data)).length;
  }
  process.stdout.write(
    JSON.stringify({
      requests,
      problems,
      htmlBytes: bytes,
      wallS: (wallMicros() - wall0) / 1e6,
      cpuS: (cpuMicros() - cpu0) / 1e6,
      maxRssMiB: process.resourceUsage().maxRSS / 1024,
    }) + '\n',
  );
  process.exit(0);
}

const dir = join(os.tmpdir(), 'intent-mcp-bench-trace');
mkdirSync(dir, { recursive: true });
const intent = benchIntent();
const instance = intent.asInstance('travel');

// ---------------------------------------------------------------------------------------------------------------------
// 1. Handoff cost, trace on vs off.

const handoff = (session: EngineSession): Promise<unknown> => benchHandoff(session, instance);

const ROUNDS = positiveIntArg('rounds', 150);
const TIMING: CompareOptions = { rounds: ROUNDS, chunkMicros: 2000, warmupMicros: 100_000 };

const off = new HandoffEngine();
const inspected = new HandoffEngine();
inspected.inspect(() => undefined);
const traced = new HandoffEngine();
const tracePath = join(dir, 'handoff.jsonl');
rmSync(tracePath, { force: true });
const writer = new TraceWriter(tracePath, { logger: createLogger('warn'), maxBytes: 256 * 1024 * 1024 });
traced.inspect(writer.record);
const sessions = { off: off.openSession(), inspected: inspected.openSession(), traced: traced.openSession() };
// Warm-up: V8 needs thousands of handoffs before the engine's code is optimised (BENCHMARKS.md, "JIT warm-up").
for (let i = 0; i < 20_000; i++) {
  await handoff(sessions.off);
  await handoff(sessions.inspected);
  await handoff(sessions.traced);
}
log(
  `intent-mcp trace bench — node ${process.version}, ${os.availableParallelism()} CPUs, load ${os
    .loadavg()
    .map((l) => round(l, 2))
    .join(', ')}`,
);
const timed = await compare(
  {
    off: { fn: () => handoff(sessions.off), async: true },
    inspected: { fn: () => handoff(sessions.inspected), async: true },
    traced: { fn: () => handoff(sessions.traced), async: true },
  },
  TIMING,
);
await writer.close();
const paired = (a: number[], b: number[]): number => {
  const r = a.map((x, i) => x / (b[i] ?? NaN)).sort((x, y) => x - y);
  return r[r.length >> 1] ?? NaN;
};
log('\n1. Handoff cost (prepare + accept of the 2 KB candidate), µs CPU per handoff');
log('| engine | µs median | µs best | µs mean | vs off (paired median) | ratio of means |');
log('| --- | --- | --- | --- | --- | --- |');
for (const k of ['off', 'inspected', 'traced'] as const) {
  const s = timed[k];
  log(
    `| ${k} | ${round(s.median, 2)} | ${round(s.best, 2)} | ${round(s.mean, 2)} | ${round(paired(s.chunks, timed.off.chunks), 3)}× | ${round(s.mean / timed.off.mean, 3)}× |`,
  );
}
log(
  `trace writer: ${writer.stats.records} records, ${writer.stats.dropped} dropped, ${round(statSync(tracePath).size / 2 ** 20, 1)} MiB written`,
);
rmSync(tracePath, { force: true });
rmSync(tracePath + '.1', { force: true });

// ---------------------------------------------------------------------------------------------------------------------
// 2. trace check / trace report on generated traces.

/** Records one scripted session of 8 requests from a real engine on a simulated clock. */
async function recordScript(): Promise<HandoffTransition[]> {
  const clock = new SimulatedClock();
  clock.set(Date.parse('2026-11-02T09:30:00.000Z'));
  const engine = new HandoffEngine({ clock });
  const steps: HandoffTransition[] = [];
  engine.inspect((t) => steps.push(t));
  const s = engine.openSession();
  const invalid = '{"intents":[]}';
  const other = '{"intents":[],"x":1}';
  const a = s.prepare(instance, REQUEST);
  await s.accept(a.requestId, a.submissionToken, invalid);
  clock.increment(10);
  await s.accept(a.requestId, a.submissionToken, CANDIDATE_TEXT);
  await s.accept(a.requestId, a.submissionToken, CANDIDATE_TEXT);
  await s.accept(a.requestId, a.submissionToken, other);
  const b = s.prepare(instance, REQUEST);
  await Promise.all([
    s.accept(b.requestId, b.submissionToken, CANDIDATE_TEXT),
    s.accept(b.requestId, b.submissionToken, CANDIDATE_TEXT),
    s.accept(b.requestId, b.submissionToken, other),
  ]);
  const r = s.prepare(instance, REQUEST);
  await s.accept(r.requestId, r.submissionToken, invalid);
  await s.accept(r.requestId, r.submissionToken, other);
  const c = s.prepare(instance, REQUEST);
  s.cancel(c.requestId, 'refusal');
  await s.accept(c.requestId, c.submissionToken, CANDIDATE_TEXT);
  const d = s.prepare(instance, REQUEST, { timeoutMs: 5000 });
  clock.increment(5000);
  await s.accept(d.requestId, d.submissionToken, CANDIDATE_TEXT);
  const e = s.prepare(instance, REQUEST, { timeoutMs: 1000 });
  await s.accept(e.requestId, e.submissionToken, invalid);
  clock.increment(1000);
  await s.accept(e.requestId, e.submissionToken, CANDIDATE_TEXT);
  s.prepare(instance, REQUEST);
  const g = s.prepare(instance, REQUEST);
  await s.accept(g.requestId, g.submissionToken, invalid);
  await s.close();
  return steps;
}

/** Writes a trace of `requests` requests: the script repeated with fresh ids, times shifted by 10 s per repetition. */
async function generate(path: string, requests: number, script: HandoffTransition[]): Promise<void> {
  const perScript = new Set(script.map((t) => t.requestId)).size;
  const out = createWriteStream(path);
  out.write(headerLine());
  for (let rep = 0; rep * perScript < requests; rep++) {
    const shift = rep * 10_000;
    const session = `s-${rep}`;
    const lines: string[] = [];
    for (const t of script) {
      const at = new Date(Date.parse(t.at) + shift).toISOString();
      const step: HandoffTransition = { ...t, at, sessionId: session, requestId: `${t.requestId.slice(0, 8)}-${rep}` };
      if (t.expiresAt !== undefined) step.expiresAt = new Date(Date.parse(t.expiresAt) + shift).toISOString();
      lines.push(JSON.stringify(step));
    }
    if (!out.write(lines.join('\n') + '\n')) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

const sizes = (argValue('requests') ?? '100000,1000000').split(',').map(Number);
const script = await recordScript();
log(
  `\n2. trace check / trace report (script of ${new Set(script.map((t) => t.requestId)).size} requests, ${script.length} records, repeated)`,
);
log('| requests | trace MiB | command | wall s | CPU s | requests/s (wall) | peak RSS MiB | problems |');
log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const n of sizes) {
  const path = join(dir, `generated-${n}.jsonl`);
  await generate(path, n, script);
  const mib = statSync(path).size / 2 ** 20;
  for (const mode of ['check', 'report'] as const) {
    const child = spawnSync(process.execPath, [process.argv[1] ?? '', '--child', mode, '--file', path], {
      encoding: 'utf8',
      maxBuffer: 1024 * 1024,
    });
    if (child.status !== 0) throw new Error(`child ${mode} failed: ${child.stderr}`);
    const r = JSON.parse(child.stdout) as {
      requests: number;
      problems: number;
      wallS: number;
      cpuS: number;
      maxRssMiB: number;
    };
    log(
      `| ${n.toLocaleString('en-US')} | ${round(mib, 0)} | ${mode} | ${round(r.wallS, 1)} | ${round(r.cpuS, 1)} | ${Math.round(r.requests / r.wallS).toLocaleString('en-US')} | ${round(r.maxRssMiB, 0)} | ${r.problems} |`,
    );
  }
  rmSync(path, { force: true });
}
