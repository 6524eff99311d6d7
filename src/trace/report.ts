/**
 * `intent-mcp trace report` (issue 11): one self-contained HTML file about a trace — the machine diagram annotated with
 * this trace's counts (per state, per edge), how requests ended, how long each state took, a table of requests and each
 * request's timeline. Inline SVG and CSS only: no script, nothing fetched (a Content-Security-Policy of
 * `default-src 'none'` says so to the browser too).
 *
 * The trace is streamed; what is kept is bounded whatever its size: aggregates over every request, plus full detail
 * (row and timeline) for the first and the last {@link ReportOptions.detail} requests, plus the live requests' own
 * state. The report says what it summarised.
 */
import { START_EDGE, describeMachine, edgeLabel, edgeOf, toDot } from '../../machines/diagram.js';
import { HANDOFF_STATES, LIVE_STATES, type HandoffState } from '../../machines/handoff.js';
import type { HandoffTransition } from '../engine/inspection.js';
import { renderSvg } from '../observability/svg.js';
import { readTraceLines } from './lines.js';
import { parseTraceLine } from './parse.js';

export interface ReportOptions {
  /** Requests shown in full at each end of the trace (first N, last N). Default 200. */
  detail?: number;
  /** Steps kept per request timeline. Default 64. */
  maxSteps?: number;
  /**
   * Most requests followed live at once (default 100,000, about 130 MB; six times what a server holds at its defaults);
   * later prepares are only counted (1,000,000 live requests took ~1.3 GB).
   */
  maxLive?: number;
  /**
   * Timeline steps held at once for live requests (default 200,000); beyond it a live request's further steps are
   * counted, not kept, so a hostile trace of long-lived requests cannot exhaust memory (100,000 live requests of 22
   * steps each peaked at 516 MB RSS with 1,000,000 kept).
   */
  maxLiveSteps?: number;
}

/** One step of a timeline: the record without the ids it shares with its request. */
type Step = Omit<HandoffTransition, 'sessionId' | 'requestId' | 'instance'>;

export interface RequestDetail {
  requestId: string;
  sessionId: string;
  instance: string;
  mode: string;
  preparedAt: number;
  /** Current (live) or final state. */
  state: HandoffState;
  /** How it ended: `state · answer (reason)`; undefined while live. */
  end: string | undefined;
  validations: number;
  since: number;
  /** Milliseconds spent in each live state. */
  durations: Partial<Record<HandoffState, number>>;
  steps: Step[];
  /** Steps not kept beyond {@link ReportOptions.maxSteps}. */
  stepsDropped: number;
}

/** Milliseconds in a state, over every request: count, sum, max and a log₂ histogram for percentiles. */
interface DurationStats {
  count: number;
  sum: number;
  max: number;
  buckets: number[];
}

export interface ReportData {
  files: readonly string[];
  lines: number;
  records: number;
  requests: number;
  malformed: number;
  oversized: number;
  /** Records of requests whose prepare is not in the trace. */
  unprepared: number;
  /** Requests prepared while `maxLive` were live: counted, not followed. */
  untracked: number;
  firstAt: number | undefined;
  lastAt: number | undefined;
  /** Entries into each state (a prepare enters `prepared`). */
  stateCounts: Record<string, number>;
  /** Steps per diagram edge id; steps with no edge (evictions, impossible steps) under `unmapped`. */
  edgeCounts: Record<string, number>;
  unmapped: number;
  ends: Map<string, number>;
  durations: Map<HandoffState, DurationStats>;
  first: RequestDetail[];
  last: RequestDetail[];
  /** Requests still live at the end (at most `detail` of them kept), and how many there were. */
  live: RequestDetail[];
  liveCount: number;
  detail: number;
}

function newStats(): DurationStats {
  return { count: 0, sum: 0, max: 0, buckets: [] };
}

function addDuration(stats: DurationStats, ms: number): void {
  stats.count++;
  stats.sum += ms;
  stats.max = Math.max(stats.max, ms);
  // Bucket k holds [2^(k-1), 2^k) ms; bucket 0 holds under 1 ms.
  const k = ms < 1 ? 0 : Math.min(40, Math.floor(Math.log2(ms)) + 1);
  stats.buckets[k] = (stats.buckets[k] ?? 0) + 1;
}

/** The upper bound of the bucket holding the q-quantile: an estimate within a factor of two, in bounded memory. */
function quantile(stats: DurationStats, q: number): number {
  const rank = Math.ceil(stats.count * q);
  let seen = 0;
  for (let k = 0; k < stats.buckets.length; k++) {
    seen += stats.buckets[k] ?? 0;
    if (seen >= rank) return Math.min(stats.max, k === 0 ? 1 : 2 ** k);
  }
  return stats.max;
}

const isLive = (s: HandoffState): boolean => LIVE_STATES.includes(s);

function endOf(r: HandoffTransition): string {
  return `${r.to} · ${r.answer}${r.reason === undefined ? '' : ` (${r.reason})`}`;
}

/** Reads the trace files (in order) into bounded report data. */
export async function collectReport(files: readonly string[], options: ReportOptions = {}): Promise<ReportData> {
  const detail = options.detail ?? 200;
  const maxSteps = options.maxSteps ?? 64;
  const maxLive = options.maxLive ?? 100_000;
  const maxLiveSteps = options.maxLiveSteps ?? 200_000;
  /** Steps held by live requests right now. */
  let liveSteps = 0;
  const data: ReportData = {
    files,
    lines: 0,
    records: 0,
    requests: 0,
    malformed: 0,
    oversized: 0,
    unprepared: 0,
    untracked: 0,
    firstAt: undefined,
    lastAt: undefined,
    stateCounts: {},
    edgeCounts: {},
    unmapped: 0,
    ends: new Map(),
    durations: new Map(),
    first: [],
    last: [],
    live: [],
    liveCount: 0,
    detail,
  };
  const live = new Map<string, RequestDetail>();
  /** Recently finished requests, for the late steps (replay, late cancel, evict) of their timelines. */
  const recent = new Map<string, RequestDetail>();
  let lastRing: RequestDetail[] = [];
  let ringAt = 0;

  const addStep = (req: RequestDetail, r: HandoffTransition): void => {
    const isLiveReq = req.end === undefined;
    if (req.steps.length >= maxSteps || (isLiveReq && liveSteps >= maxLiveSteps)) {
      req.stepsDropped++;
      return;
    }
    // The ids are the request's own: a step keeps what changes.
    const step: Step = {
      at: r.at,
      from: r.from,
      event: r.event,
      to: r.to,
      answer: r.answer,
      validations: r.validations,
    };
    if (r.mode !== undefined) step.mode = r.mode;
    if (r.expiresAt !== undefined) step.expiresAt = r.expiresAt;
    if (r.candidate !== undefined) step.candidate = r.candidate;
    if (r.outcome !== undefined) step.outcome = r.outcome;
    if (r.reason !== undefined) step.reason = r.reason;
    req.steps.push(step);
    if (isLiveReq) liveSteps++;
  };
  const finish = (req: RequestDetail): void => {
    if (data.first.length < detail) data.first.push(req);
    else if (detail > 0) {
      if (lastRing.length < detail) lastRing.push(req);
      else lastRing[ringAt] = req;
      ringAt = (ringAt + 1) % detail;
    }
    recent.set(req.requestId, req);
    if (recent.size > 4096) {
      const oldest = recent.keys().next().value;
      if (oldest !== undefined) recent.delete(oldest);
    }
  };

  await readTraceLines(files, (line) => {
    data.lines++;
    if (line.text === undefined) {
      data.oversized++;
      return;
    }
    if (line.text.trim() === '') return;
    const parsed = parseTraceLine(line.text);
    if (parsed.kind === 'header') return;
    if (parsed.kind === 'malformed') {
      data.malformed++;
      return;
    }
    const { record: r, atMs } = parsed.parsed;
    data.records++;
    data.firstAt ??= atMs;
    data.lastAt = atMs;
    const edge = edgeOf(r);
    if (edge === undefined) data.unmapped++;
    else data.edgeCounts[edge] = (data.edgeCounts[edge] ?? 0) + 1;
    if (r.event === 'prepare') {
      data.requests++;
      if (live.size >= maxLive) {
        data.untracked++;
        return;
      }
      data.stateCounts[r.to] = (data.stateCounts[r.to] ?? 0) + 1;
      const req: RequestDetail = {
        requestId: r.requestId,
        sessionId: r.sessionId,
        instance: r.instance,
        mode: r.mode ?? 'host',
        preparedAt: atMs,
        state: r.to,
        end: undefined,
        validations: 0,
        since: atMs,
        durations: {},
        steps: [],
        stepsDropped: 0,
      };
      addStep(req, r);
      live.set(r.requestId, req);
      return;
    }
    const req = live.get(r.requestId) ?? recent.get(r.requestId);
    if (req === undefined) {
      data.unprepared++;
      return;
    }
    addStep(req, r);
    if (r.to !== req.state && r.event !== 'evict') {
      data.stateCounts[r.to] = (data.stateCounts[r.to] ?? 0) + 1;
      if (isLive(req.state)) {
        const spent = Math.max(0, atMs - req.since);
        req.durations[req.state] = (req.durations[req.state] ?? 0) + spent;
      }
      req.state = r.to;
      req.since = atMs;
    }
    req.validations = r.validations;
    if (!isLive(req.state) && live.has(r.requestId)) {
      live.delete(r.requestId);
      liveSteps -= req.steps.length;
      req.end = endOf(r);
      data.ends.set(req.end, (data.ends.get(req.end) ?? 0) + 1);
      for (const [state, ms] of Object.entries(req.durations) as [HandoffState, number][]) {
        let stats = data.durations.get(state);
        if (stats === undefined) data.durations.set(state, (stats = newStats()));
        addDuration(stats, ms);
      }
      finish(req);
    }
  });
  data.last = [...lastRing.slice(ringAt), ...lastRing.slice(0, ringAt)];
  lastRing = [];
  data.liveCount = live.size;
  data.live = [...live.values()].slice(0, detail);
  return data;
}

// ---------------------------------------------------------------------------------------------------------------------
// HTML

const esc = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
const iso = (ms: number | undefined): string => (ms === undefined ? '—' : new Date(ms).toISOString());
const fmtMs = (ms: number | undefined): string =>
  ms === undefined ? '' : ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
const num = (n: number): string => n.toLocaleString('en-US');

const CSS = `
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:1em 2em;color:#263238}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #cfd8dc}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #cfd8dc;padding:2px 8px;text-align:left;vertical-align:top}
th{background:#eceff1}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{font-size:12px}.note{color:#546e7a}.diagram svg{max-width:100%;height:auto}
.end-completed{color:#2e7d32}.end-cancelled,.end-expired{color:#c62828}.end-live{color:#1565c0}
.bar{display:flex;height:10px;width:300px;background:#eceff1}.bar span{display:block;height:10px}
.s-prepared{background:#90caf9}.s-validating{background:#1565c0}.s-correcting{background:#ffb300}
details{margin:.2em 0}summary{cursor:pointer}ol{margin:.2em 0 .6em}
`;

function requestRow(req: RequestDetail): string {
  const end = req.end ?? `live · ${req.state}`;
  const kind = req.end === undefined ? 'live' : req.state;
  const total = Object.values(req.durations).reduce((a, b) => a + b, 0);
  const cells = LIVE_STATES.map((s) => `<td class="n">${fmtMs(req.durations[s])}</td>`).join('');
  const bar =
    total <= 0
      ? ''
      : `<div class="bar">${LIVE_STATES.filter((s) => (req.durations[s] ?? 0) > 0)
          .map(
            (s) =>
              `<span class="s-${s}" style="width:${((100 * (req.durations[s] ?? 0)) / total).toFixed(1)}%" title="${s}"></span>`,
          )
          .join('')}</div>`;
  return `<tr class="request" data-request="${esc(req.requestId)}"><td><a href="#t-${esc(req.requestId)}"><code>${esc(req.requestId)}</code></a></td><td><code>${esc(req.sessionId.slice(0, 8))}</code></td><td>${esc(req.instance)}</td><td>${esc(req.mode)}</td><td>${iso(req.preparedAt)}</td><td class="end end-${kind}">${esc(end)}</td><td class="n">${req.validations}</td>${cells}<td class="n">${fmtMs(total)}</td><td>${bar}</td></tr>`;
}

function timeline(req: RequestDetail): string {
  const steps = req.steps
    .map((s) => {
      const at = Date.parse(s.at) - req.preparedAt;
      const extra = [
        s.mode === undefined ? '' : `mode ${s.mode}`,
        s.expiresAt === undefined ? '' : `deadline ${s.expiresAt}`,
        s.candidate === undefined ? '' : `candidate ${s.candidate.bytes} B #${s.candidate.hash}`,
        s.outcome === undefined ? '' : `outcome ${s.outcome}`,
        s.reason === undefined ? '' : `reason ${s.reason}`,
      ]
        .filter((x) => x !== '')
        .map(esc)
        .join(', ');
      return `<li>+${fmtMs(at)} <b>${esc(s.event)}</b> ${esc(s.from ?? '∅')} → ${esc(s.to)} / ${esc(s.answer)} (validations ${s.validations})${extra === '' ? '' : ` — ${extra}`}</li>`;
    })
    .join('');
  const dropped = req.stepsDropped === 0 ? '' : `<li class="note">… ${num(req.stepsDropped)} more steps not kept</li>`;
  return `<details id="t-${esc(req.requestId)}"><summary><code>${esc(req.requestId)}</code> — ${esc(req.end ?? `live · ${req.state}`)}</summary><ol>${steps}${dropped}</ol></details>`;
}

/** Renders report data as one self-contained HTML document (the chunks of {@link reportChunks}, joined). */
export async function renderReport(data: ReportData): Promise<string> {
  let html = '';
  for await (const chunk of reportChunks(data)) html += chunk;
  return html;
}

/**
 * The report as a sequence of HTML chunks: everything up to the timelines, then one chunk per request's timeline, then
 * the end. The command writes them as they come, so a report with thousands of timelines is never one string.
 */
export async function* reportChunks(data: ReportData): AsyncGenerator<string> {
  const svg = await renderSvg(toDot({ counts: { states: data.stateCounts, edges: data.edgeCounts } }));
  const model = describeMachine();
  const shown = data.first.length + data.last.length;
  const finished = data.requests - data.liveCount;
  const summarised =
    finished > shown
      ? `Aggregates cover all ${num(data.requests)} requests; rows and timelines are kept for the first ${num(data.first.length)} and the last ${num(data.last.length)} finished requests (${num(finished - shown)} finished requests in between are only counted)${data.liveCount > data.live.length ? `, and for ${num(data.live.length)} of the ${num(data.liveCount)} requests left live` : ''}.`
      : `Every request is shown.${data.live.some((r) => r.stepsDropped > 0) || data.first.some((r) => r.stepsDropped > 0) ? ' Long timelines keep their first steps only.' : ''}`;
  const ends = [...data.ends.entries()].sort((a, b) => b[1] - a[1]);
  const durationRows = HANDOFF_STATES.filter((s) => data.durations.has(s))
    .map((s) => {
      const d = data.durations.get(s) ?? newStats();
      return `<tr><td>${s}</td><td class="n">${num(d.count)}</td><td class="n">${fmtMs(d.sum / Math.max(1, d.count))}</td><td class="n">≤ ${fmtMs(quantile(d, 0.5))}</td><td class="n">≤ ${fmtMs(quantile(d, 0.95))}</td><td class="n">${fmtMs(d.max)}</td></tr>`;
    })
    .join('');
  const edgeRows = [
    `<tr><td><code>${START_EDGE}</code></td><td>prepare</td><td class="n">${num(data.edgeCounts[START_EDGE] ?? 0)}</td></tr>`,
    ...model.edges
      .filter((e) => (data.edgeCounts[e.id] ?? 0) > 0)
      .map(
        (e) =>
          `<tr><td><code>${esc(e.id)}</code></td><td>${esc(`${e.from} → ${e.to}: ${edgeLabel(e)}`)}</td><td class="n">${num(data.edgeCounts[e.id] ?? 0)}</td></tr>`,
      ),
  ].join('');
  const head = `<tr><th>request</th><th>session</th><th>instance</th><th>mode</th><th>prepared</th><th>end</th><th>validations</th>${LIVE_STATES.map((s) => `<th>${s}</th>`).join('')}<th>total</th><th>time per state</th></tr>`;
  const section = (title: string, list: RequestDetail[]): string =>
    list.length === 0
      ? ''
      : `<h3>${esc(title)}</h3><table class="requests">${head}${list.map(requestRow).join('')}</table>`;
  const all = [...data.first, ...data.last, ...data.live];
  yield `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>intent-mcp trace report</title><style>${CSS}</style></head><body>
<h1>intent-mcp trace report</h1>
<p class="note">${esc(data.files.join(', '))} — ${iso(data.firstAt)} to ${iso(data.lastAt)}</p>
<h2 id="summary">Summary</h2>
<table class="summary">
<tr><th>requests</th><td class="n" id="requests">${num(data.requests)}</td></tr>
<tr><th>finished</th><td class="n">${num(finished)}</td></tr>
<tr><th>left live at the end</th><td class="n" id="live-count">${num(data.liveCount)}</td></tr>
<tr><th>records</th><td class="n">${num(data.records)}</td></tr>
<tr><th>lines skipped (malformed, oversized)</th><td class="n">${num(data.malformed)}, ${num(data.oversized)}</td></tr>
<tr><th>records of requests not followed (prepared before the trace, or beyond the live cap)</th><td class="n">${num(data.unprepared)}</td></tr>
<tr><th>requests not followed (too many live at once)</th><td class="n">${num(data.untracked)}</td></tr>
<tr><th>steps on no diagram edge (evictions, impossible steps)</th><td class="n">${num(data.unmapped)}</td></tr>
</table>
<p class="note" id="summarised">${esc(summarised)} Run <code>intent-mcp trace check</code> to judge every step against the machine.</p>
<h3>How requests ended</h3>
<table class="ends"><tr><th>end (state · answer (reason))</th><th>requests</th></tr>${ends.map(([end, n]) => `<tr><td>${esc(end)}</td><td class="n">${num(n)}</td></tr>`).join('')}</table>
<h3>Time per state (finished requests)</h3>
<table class="durations"><tr><th>state</th><th>requests</th><th>mean</th><th>median</th><th>95th percentile</th><th>max</th></tr>${durationRows}</table>
<p class="note">Percentiles are read off power-of-two buckets: each is an upper bound within a factor of two.</p>
<h2 id="diagram">The machine, with this trace's counts</h2>
<p class="note">A number in a state counts the requests that entered it; a number on an edge counts the steps that took it.</p>
<div class="diagram">${svg}</div>
<table class="edges"><tr><th>edge</th><th>transition</th><th>steps</th></tr>${edgeRows}</table>
<h2 id="requests-table">Requests</h2>
${section(data.last.length > 0 ? `The first ${num(data.first.length)} finished` : 'Finished requests', data.first)}
${section(`The last ${num(data.last.length)} finished`, data.last)}
${section(`Left live at the end${data.liveCount > data.live.length ? ` (${num(data.live.length)} of ${num(data.liveCount)})` : ''}`, data.live)}
<h2 id="timelines">Timelines</h2>
`;
  for (const [i, req] of all.entries()) yield i === 0 ? timeline(req) : `\n${timeline(req)}`;
  yield `
</body></html>
`;
}
