/**
 * `intent-mcp trace check` (issue 11): model checking of production runs. Every request's recorded events are replayed
 * through the machine definition itself (the pure `transition(handoffMachine, snapshot, event)`), each event rebuilt
 * from its record: ACCEPT with a candidate identity made of its short hash, VALIDATED from its outcome, CANCEL with its
 * reason, the arrival time from `at`, the deadline and mode from the prepare record. `replay` is an ACCEPT of the same
 * candidate on a terminal request; `evict` removes the request. Every step the machine would not take, every answer
 * that differs and every request left live is reported with its file, line and request id.
 *
 * The trace is streamed (`lines.ts`); the state kept is a few fields per live request (`replay.ts`), plus a bounded
 * window of recently finished ones (a retained request can still be asked, replayed or evicted; the store holds at most 32).
 */
import { TERMINAL_STATES, type HandoffEvent } from '../../machines/handoff.js';
import { quoteCaller } from '../core/errors.js';
import { MAX_TRACE_LINE_BYTES, TRACE_VERSION, machineHash } from './format.js';
import { readTraceLines, type TraceLine } from './lines.js';
import { parseTraceLine, type ParsedRecord } from './parse.js';
import { replayPrepare, replayStep, type RequestModel } from './replay.js';

export type ProblemKind =
  | 'header'
  | 'machine'
  | 'malformed'
  | 'oversized'
  | 'from'
  | 'transition'
  | 'answer'
  | 'validations'
  | 'unprepared'
  | 'duplicate'
  | 'live'
  | 'capacity';

/** One finding. `severity` is `warning` only for a trace recorded by another machine definition. */
export interface TraceProblem {
  file: string;
  line: number;
  requestId: string | undefined;
  kind: ProblemKind;
  severity: 'error' | 'warning';
  message: string;
}

export interface CheckOptions {
  /** Called for each problem as it is found (a streaming report). */
  onProblem?: (problem: TraceProblem) => void;
  /** Finished requests remembered for late events (replay, late cancel, evict). Default 4096. */
  recentTerminal?: number;
  maxLineBytes?: number;
  /**
   * Most requests tracked live at once (default 100,000: six times what a server holds at its defaults, 256 sessions ×
   * 64; about 60 MB). A prepare beyond it is reported and its request not followed, so a hostile trace of endless
   * prepares cannot exhaust memory (1,000,000 live requests took ~600 MB).
   */
  maxLive?: number;
  /** Run the machine for every step instead of memoising its answers (`replay.ts`; slow). Default false. */
  exact?: boolean;
}

export interface CheckSummary {
  lines: number;
  records: number;
  requests: number;
  problems: number;
  errors: number;
  warnings: number;
  /** Most requests live at once: the checker's memory is proportional to it. */
  peakLive: number;
}

interface Tracked {
  model: RequestModel;
  file: string;
  line: number;
}

/** A bounded set of recently seen keys (insertion order = age). */
function remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > max) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
}

/** Rebuilds the machine event a record stands for, or says why it cannot. */
function eventOf(p: ParsedRecord): HandoffEvent | string {
  const r = p.record;
  const at = p.atMs;
  switch (r.event) {
    case 'ACCEPT':
    case 'replay':
      if (r.candidate === undefined) return `an ${r.event} record without its candidate's size and hash`;
      // The short hash stands for the bytes: the machine only ever compares candidates for equality.
      return { type: 'ACCEPT', candidate: { hash: r.candidate.hash, text: r.candidate.hash }, at };
    case 'VALIDATED':
      if (r.outcome === undefined) return 'a VALIDATED record without its outcome';
      if (r.outcome === 'valid') return { type: 'VALIDATED', ok: true, text: '', at };
      if (r.outcome === 'crashed') return { type: 'VALIDATED', ok: false, crashed: true, at };
      return { type: 'VALIDATED', ok: false, issues: [], at };
    case 'CANCEL':
      if (r.reason === undefined || r.reason === 'session_closed' || r.reason === 'internal_error')
        return 'a CANCEL record without a cancel reason';
      return { type: 'CANCEL', reason: r.reason, at };
    case 'DEADLINE':
      return { type: 'DEADLINE' };
    case 'CLOSE':
      return { type: 'CLOSE', at };
    default:
      return `an unexpected ${r.event} record`;
  }
}

/**
 * Checks trace files (given in order, e.g. `FILE.1 FILE`, read as one stream). Resolves with the summary; problems go
 * to `onProblem` as they are found.
 */
export async function checkTrace(files: readonly string[], options: CheckOptions = {}): Promise<CheckSummary> {
  const recentMax = options.recentTerminal ?? 4096;
  const exact = options.exact ?? false;
  const maxLive = options.maxLive ?? 100_000;
  const live = new Map<string, Tracked>();
  const done = new Map<string, Tracked>();
  /** Requests already reported as unprepared: reported once, not once per line. */
  const orphans = new Map<string, true>();
  const summary: CheckSummary = {
    lines: 0,
    records: 0,
    requests: 0,
    problems: 0,
    errors: 0,
    warnings: 0,
    peakLive: 0,
  };
  let sawHeader = false;
  let where: { file: string; line: number } = { file: files[0] ?? '', line: 0 };
  const report = (
    kind: ProblemKind,
    requestId: string | undefined,
    message: string,
    at: { file: string; line: number } = where,
    severity: 'error' | 'warning' = 'error',
  ): void => {
    summary.problems++;
    if (severity === 'error') summary.errors++;
    else summary.warnings++;
    options.onProblem?.({ file: at.file, line: at.line, requestId, kind, severity, message });
  };
  const endLive = (why: string): void => {
    for (const [id, t] of live)
      report('live', id, `left live in ${t.model.state} ${why} (its last record)`, { file: t.file, line: t.line });
    live.clear();
  };

  const onRecord = (p: ParsedRecord): void => {
    summary.records++;
    const r = p.record;
    const id = r.requestId;
    if (r.event === 'prepare') {
      if (live.has(id) || done.has(id)) {
        report('duplicate', id, 'prepared a second time (request ids are unique)');
        return;
      }
      if (live.size >= maxLive) {
        report('capacity', id, `not followed: ${maxLive} requests are live at once already`);
        remember(orphans, id, true, recentMax);
        return;
      }
      summary.requests++;
      const { model, result } = replayPrepare(id, r.mode ?? 'host', p.expiresAtMs, exact);
      if (r.from !== null || r.to !== result.to || r.answer !== result.answer)
        report(
          'transition',
          id,
          `prepare: the machine starts in ${result.to} (answer ${result.answer}), the trace says ${r.from ?? 'null'} → ${r.to} (answer ${r.answer})`,
        );
      live.set(id, { model, file: where.file, line: where.line });
      summary.peakLive = Math.max(summary.peakLive, live.size);
      return;
    }
    const tracked = live.get(id) ?? done.get(id);
    if (tracked === undefined) {
      if (!orphans.has(id)) {
        report(
          'unprepared',
          id,
          `${r.event} for a request with no prepare record before it (recorded before this trace began, or its lines are missing)`,
        );
        remember(orphans, id, true, recentMax);
      }
      return;
    }
    tracked.file = where.file;
    tracked.line = where.line;
    if (r.from !== tracked.model.state) {
      report(
        'from',
        id,
        `${r.event}: the request is in ${tracked.model.state}, the trace says it came from ${r.from ?? 'null'}`,
      );
    }
    if (r.event === 'evict') {
      if (live.has(id))
        report(
          'transition',
          id,
          `evict of a live request (in ${tracked.model.state}): only finished requests are retained`,
        );
      live.delete(id);
      done.delete(id);
      return;
    }
    const event = eventOf(p);
    if (typeof event === 'string') {
      report('malformed', id, event);
      return;
    }
    const from = tracked.model.state;
    const next = replayStep(tracked.model, event, exact);
    if (next.to !== r.to)
      report('transition', id, `${r.event}: the machine goes ${from} → ${next.to}, the trace says → ${r.to}`);
    if (next.answer !== r.answer)
      report('answer', id, `${r.event} in ${from}: the machine answers ${next.answer}, the trace says ${r.answer}`);
    else if (r.event === 'replay' && next.answer !== 'replay')
      report('answer', id, `replay: the machine answers ${next.answer}, not a replay`);
    if (next.validations !== r.validations)
      report(
        'validations',
        id,
        `${r.event}: the machine counts ${next.validations} validations, the trace says ${r.validations}`,
      );
    // The model is now where the machine actually is: it judges what comes next from there.
    if (TERMINAL_STATES.includes(next.to) && live.delete(id)) remember(done, id, tracked, recentMax);
  };

  const onLine = (l: TraceLine): void => {
    summary.lines++;
    where = { file: l.file, line: l.line };
    if (l.text === undefined) {
      report(
        'oversized',
        undefined,
        `a line of ${l.oversized} bytes (more than the ${options.maxLineBytes ?? MAX_TRACE_LINE_BYTES} a record may take) was skipped`,
      );
      return;
    }
    if (l.text.trim() === '') return;
    const parsed = parseTraceLine(l.text);
    if (l.line === 1 && parsed.kind !== 'header')
      report('header', undefined, 'the file does not start with an intent-mcp-trace header line');
    switch (parsed.kind) {
      case 'header': {
        if (parsed.header.version !== TRACE_VERSION) {
          report(
            'header',
            undefined,
            `trace format version ${String(parsed.header.version).slice(0, 20)} (this checker reads version ${TRACE_VERSION})`,
          );
        }
        if (parsed.header.machine !== machineHash())
          report(
            'machine',
            undefined,
            `recorded by machine ${quoteCaller(parsed.header.machine)}, checked against ${machineHash()}: the lifecycle rules may differ`,
            where,
            'warning',
          );
        // A header after the first line of the first file: the process restarted (its live requests died with it).
        // The first line of a later file continues the stream (FILE.1 then FILE: rotation, same process).
        if (sawHeader && l.line > 1) {
          endLive('when the process restarted (a new header)');
          done.clear();
        }
        sawHeader = true;
        return;
      }
      case 'malformed':
        report('malformed', parsed.requestId, `a malformed line: ${parsed.reason}`);
        return;
      case 'record':
        onRecord(parsed.parsed);
    }
  };

  await readTraceLines(files, onLine, options.maxLineBytes);
  endLive('at the end of the trace');
  return summary;
}

/** One problem as the command prints it: `FILE:LINE: request "id": message`. */
export function formatProblem(p: TraceProblem): string {
  const who = p.requestId === undefined ? '' : ` request ${quoteCaller(p.requestId)}:`;
  return `${p.file}:${p.line}: ${p.severity}:${who} ${p.message}`;
}
