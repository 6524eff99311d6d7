/**
 * The inspector page, rendered on the server from an {@link InspectorView}: readable with JavaScript disabled (it
 * refreshes itself, filters are GET forms, links select a request), and kept live by a small inline script that applies
 * the SSE stream (`/api/events`) without a reload. Every value is HTML-escaped; the view holds no token and no
 * candidate text, only sizes and short hashes.
 */
import { START_EDGE, describeMachine, edgeLabel } from '../../machines/diagram.js';
import type { HandoffState } from '../../machines/handoff.js';
import { HANDOFF_STATES } from '../../machines/handoff.js';
import type { HandoffTransition } from '../engine/inspection.js';

import { endingOf, kindOfEnding, kindOfState } from './model.js';
import { queryString, type InspectorView } from './view.js';

/** Seconds between reloads when JavaScript is off (the script keeps the page live otherwise). */
export const NOSCRIPT_REFRESH_SECONDS = 3;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** HTML-escapes text for element content and quoted attribute values. */
export function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** A duration for people: 850 ms, 12.3 s, 4 min 05 s, 2 h 03 min. */
export function duration(ms: number): string {
  const sign = ms < 0 ? '−' : '';
  const abs = Math.abs(ms);
  if (abs < 1000) return `${sign}${Math.round(abs)} ms`;
  if (abs < 60_000) return `${sign}${(abs / 1000).toFixed(1)} s`;
  const s = Math.floor(abs / 1000);
  if (s < 3600) return `${sign}${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${sign}${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** Bytes for people: 512 B, 3.4 KiB, 8 MiB. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1).replace(/\.0$/, '')} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1).replace(/\.0$/, '')} MiB`;
}

/** Each diagram edge in words, for the table of transitions per edge. */
const EDGE_WORDS = new Map<string, string>([
  [START_EDGE, 'start → prepared: prepare'],
  ...describeMachine().edges.map((e): [string, string] => [e.id, `${e.from} → ${e.to}: ${edgeLabel(e)}`]),
]);

const short = (id: string): string => (id.length > 8 ? id.slice(0, 8) : id);
const time = (iso: string): string => iso.slice(11, 23);

/** What a step brought, in words: candidate size and hash, validation outcome, cancel reason, deadline. */
export function stepDetail(t: HandoffTransition): string {
  const parts: string[] = [];
  if (t.mode !== undefined) parts.push(`mode ${t.mode}`);
  if (t.expiresAt !== undefined) parts.push(`deadline ${time(t.expiresAt)}`);
  if (t.candidate !== undefined) parts.push(`candidate ${bytes(t.candidate.bytes)} #${t.candidate.hash}`);
  if (t.outcome !== undefined) parts.push(`outcome ${t.outcome}`);
  if (t.reason !== undefined) parts.push(`reason ${t.reason}`);
  return parts.join(', ');
}

const STYLE = `
:root{--live:#1565c0;--live-bg:#e3f2fd;--ok:#2e7d32;--ok-bg:#e8f5e9;--bad:#c62828;--bad-bg:#ffebee;font:14px/1.4 system-ui,sans-serif;color:#212121}
body{margin:0 1rem 2rem}h1{font-size:1.3rem;margin:.6rem 0}h2{font-size:1.05rem;margin:1.2rem 0 .4rem}
header p{margin:.2rem 0;color:#555}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}th,td{text-align:left;padding:.2rem .5rem;border-bottom:1px solid #e0e0e0;white-space:nowrap}
th{background:#fafafa;font-weight:600}tr.selected td{background:#fff8e1}
.kind-live{color:var(--live);background:var(--live-bg)}.kind-completed{color:var(--ok);background:var(--ok-bg)}.kind-failed{color:var(--bad);background:var(--bad-bg)}
.badge{display:inline-block;padding:0 .4rem;border-radius:.6rem;font-weight:600}
.legend span{margin-right:.6rem}
#diagram{overflow:auto;border:1px solid #e0e0e0;border-radius:6px;padding:.4rem;background:#fff}
#diagram svg{max-width:100%;height:auto}
.counts{display:flex;flex-wrap:wrap;gap:.4rem;margin:.4rem 0}.counts span{padding:.1rem .5rem;border-radius:.6rem}
.edges td:last-child,.num{text-align:right}
form{display:flex;gap:.6rem;align-items:end;flex-wrap:wrap}label{display:flex;flex-direction:column;font-size:.85rem}
nav a,nav span{margin-right:.6rem}.muted{color:#777}code{font-size:.9em}
`;

/**
 * A small script, inline (the Content-Security-Policy allows it by nonce only): applies SSE updates — counts on the
 * diagram and in the tables, new steps on the selected request's timeline, state changes in the live table — and
 * fetches the diagram again (same origin) at most twice a second when counts changed.
 */
const SCRIPT = `
(function(){
  var q=new URLSearchParams(location.search);var sel=q.get('request');
  var es=new EventSource('/api/events'+(sel?'?request='+encodeURIComponent(sel):''));
  var status=document.getElementById('live-status');
  function set(id,v){var e=document.getElementById(id);if(e)e.textContent=String(v);}
  var dg=document.getElementById('diagram');var dirty=!!dg&&dg.getAttribute('data-current')==='no',busy=false;
  function refreshDiagram(){if(busy||!dirty)return;busy=true;dirty=false;
    fetch('/api/diagram.svg'+location.search).then(function(r){if(r.headers.get('x-diagram-current')==='no')dirty=true;return r.ok?r.text():null}).then(function(t){
      if(t!==null){var d=document.getElementById('diagram');if(d)d.innerHTML=t;}busy=false;}).catch(function(){busy=false;});}
  setInterval(refreshDiagram,500);
  es.addEventListener('open',function(){if(status)status.textContent='live (SSE)';});
  es.addEventListener('error',function(){if(status)status.textContent='reconnecting…';});
  es.addEventListener('counts',function(ev){var c=JSON.parse(ev.data);
    Object.keys(c.states).forEach(function(s){set('count-state-'+s,c.states[s]);});
    Object.keys(c.edges).forEach(function(k){set('count-edge-'+k,c.edges[k]);});
    set('transitions-total',c.transitions);set('live-total',c.live);
    set('store-items',c.store.items);set('store-bytes',c.store.bytesText);set('store-evictions',c.store.evictions);
    dirty=true;});
  es.addEventListener('transition',function(ev){var t=JSON.parse(ev.data);
    var row=document.getElementById('live-'+t.requestId);
    if(row){var st=row.querySelector('.state');if(st){st.textContent=t.to;st.className='state badge kind-'+t.kind;}
      var v=row.querySelector('.validations');if(v)v.textContent=t.validations+' of 2';
      if(t.kind!=='live')row.classList.add('ended');}
    if(sel&&t.requestId===sel){var tb=document.getElementById('timeline-body');
      if(tb){var tr=document.createElement('tr');
        [t.at.slice(11,23),t.event,(t.from||'—')+' → '+t.to,t.answer,t.validations+' of 2',t.detail].forEach(function(x){
          var td=document.createElement('td');td.textContent=x;tr.appendChild(td);});tb.appendChild(tr);}
      set('selected-state',t.to);var b=document.getElementById('selected-state');if(b)b.className='badge kind-'+t.kind;}
  });
})();
`;

function stateBadge(state: HandoffState, kind = kindOfState(state), id?: string): string {
  return `<span${id === undefined ? '' : ` id="${id}"`} class="state badge kind-${kind}">${esc(state)}</span>`;
}

function header(view: InspectorView): string {
  const s = view.store;
  return `<header><h1>intent-mcp inspector</h1>
<p>Started ${esc(view.startedAt)} · now ${esc(view.at)} · <span id="live-status">refreshing every ${NOSCRIPT_REFRESH_SECONDS} s</span></p>
<p>Live requests <strong id="live-total">${view.live.total}</strong> · transitions since start <strong id="transitions-total">${view.counts.transitions}</strong> · sessions ${view.sessionsTotal}</p>
<p id="store">Terminal store: items <strong id="store-items">${s.items}</strong> of ${s.maxItems} · bytes <strong id="store-bytes">${esc(bytes(s.bytes))}</strong> of ${esc(bytes(s.maxBytes))} · evictions <strong id="store-evictions">${s.evictions}</strong></p>
<p class="legend"><span class="badge kind-live">live</span><span class="badge kind-completed">completed</span><span class="badge kind-failed">failed (rejected, cancelled, expired)</span></p>
</header>`;
}

function countsSection(view: InspectorView): string {
  const states = HANDOFF_STATES.map(
    (s) =>
      `<span class="kind-${kindOfState(s)}">${esc(s)}: <strong id="count-state-${s}">${view.counts.states[s]}</strong>${kindOfState(s) === 'live' ? ' live' : ' reached'}</span>`,
  ).join('');
  // Every edge of the machine, taken or not, so the live script can update any of them.
  const edges = [...EDGE_WORDS]
    .map(
      ([key, words]) =>
        `<tr><td>${esc(words)} <code class="muted">${esc(key)}</code></td><td id="count-edge-${esc(key)}">${view.counts.edges[key] ?? 0}</td></tr>`,
    )
    .join('');
  return `<div class="counts">${states}</div>
<details><summary>Transitions per edge since start</summary><table class="edges"><thead><tr><th>edge</th><th>taken</th></tr></thead><tbody>${edges}</tbody></table></details>`;
}

function filters(view: InspectorView): string {
  const q = view.query;
  const options = ['', ...HANDOFF_STATES]
    .map((s) => `<option value="${s}"${q.state === s ? ' selected' : ''}>${s === '' ? 'any' : s}</option>`)
    .join('');
  const instances = view.instances.map((i) => `<option value="${esc(i)}"></option>`).join('');
  return `<form method="get" action="/" id="filters">
<label>Session <input name="session" value="${esc(q.session ?? '')}" maxlength="128" size="38" list="session-ids"></label>
<datalist id="session-ids">${view.sessions.map((s) => `<option value="${esc(s.id)}"></option>`).join('')}</datalist>
<label>Instance <input name="instance" value="${esc(q.instance ?? '')}" maxlength="128" list="instance-names"></label>
<datalist id="instance-names">${instances}</datalist>
<label>State <select name="state">${options}</select></label>
${q.request === undefined ? '' : `<input type="hidden" name="request" value="${esc(q.request)}">`}
<button type="submit">Filter</button> <a href="/">clear</a></form>`;
}

function liveTable(view: InspectorView): string {
  const q = view.query;
  const rows = view.live.rows
    .map((r) => {
      const selected = q.request === r.requestId ? ' class="selected"' : '';
      return `<tr id="live-${esc(r.requestId)}"${selected}><td><a href="/${esc(queryString(q, { request: r.requestId }))}"><code>${esc(short(r.requestId))}</code></a></td>
<td><a href="/${esc(queryString(q, { session: r.sessionId, page: 1 }))}"><code>${esc(short(r.sessionId))}</code></a></td><td>${esc(r.instance)}</td>
<td>${stateBadge(r.state, r.kind)}</td><td class="num">${esc(duration(r.ageMs))}</td><td class="validations">${r.validations} of ${r.budget}</td>
<td class="num">${r.deadlineInMs === undefined ? '<span class="muted">none</span>' : esc(duration(r.deadlineInMs))}</td>
<td>${r.candidate === undefined ? '' : `${esc(bytes(r.candidate.bytes))} <code>#${esc(r.candidate.hash)}</code>`}</td></tr>`;
    })
    .join('\n');
  const { page, pages, matching, total } = view.live;
  const nav =
    pages <= 1
      ? ''
      : `<nav>${page > 1 ? `<a href="/${esc(queryString(q, { page: page - 1 }))}">← previous</a>` : ''}<span>page ${page} of ${pages}</span>${page < pages ? `<a href="/${esc(queryString(q, { page: page + 1 }))}">next →</a>` : ''}</nav>`;
  return `<h2>Live requests <span class="muted">(${matching} matching of ${total})</span></h2>${nav}
<table id="live"><thead><tr><th>request</th><th>session</th><th>instance</th><th>state</th><th>age</th><th>validations used</th><th>to deadline</th><th>candidate</th></tr></thead>
<tbody>${rows === '' ? '<tr><td colspan="8" class="muted">no live request matches</td></tr>' : rows}</tbody></table>${nav}`;
}

function selectedSection(view: InspectorView): string {
  const q = view.query;
  if (q.request === undefined) return '';
  const r = view.selected;
  if (r === null)
    return `<h2>Request <code>${esc(q.request)}</code></h2><p class="muted">The inspector does not know this request (never seen, or dropped from its bounded memory).</p>`;
  const steps = r.steps
    .map(
      (t) =>
        `<tr><td>${esc(time(t.at))}</td><td>${esc(t.event)}</td><td>${esc(t.from ?? '—')} → ${esc(t.to)}</td><td>${esc(t.answer)}</td><td>${t.validations} of ${r.budget}</td><td>${esc(stepDetail(t))}</td></tr>`,
    )
    .join('\n');
  const ending =
    r.ended === undefined
      ? ''
      : ` · ended as <strong>${esc(r.ended)}</strong>${r.reason === undefined ? '' : ` (${esc(r.reason)})`}`;
  return `<section id="selected"><h2>Request <code>${esc(r.requestId)}</code></h2>
<p>session <code>${esc(r.sessionId)}</code> · instance ${esc(r.instance)} · state ${stateBadge(r.state, r.kind, 'selected-state')}${ending} · validations used ${r.validations} of ${r.budget}</p>
${r.omittedSteps === 0 ? '' : `<p class="muted">${r.omittedSteps} earlier steps omitted (the timeline keeps the first and the latest).</p>`}
<table id="timeline"><thead><tr><th>time</th><th>event</th><th>from → to</th><th>answer</th><th>validations used</th><th>detail</th></tr></thead><tbody id="timeline-body">${steps}</tbody></table></section>`;
}

function recentTable(view: InspectorView): string {
  const q = view.query;
  const rows = view.recent
    .map(
      (r) =>
        `<tr><td><a href="/${esc(queryString(q, { request: r.requestId }))}"><code>${esc(short(r.requestId))}</code></a></td><td><code>${esc(short(r.sessionId))}</code></td><td>${esc(r.instance)}</td>
<td><span class="badge kind-${r.kind}">${esc(r.ended)}</span></td><td>${esc(r.reason ?? '')}</td><td>${r.validations}</td><td>${esc(time(r.at))}</td></tr>`,
    )
    .join('\n');
  return `<h2>Recent terminal requests</h2><table id="recent"><thead><tr><th>request</th><th>session</th><th>instance</th><th>ended as</th><th>reason</th><th>validations</th><th>at</th></tr></thead>
<tbody>${rows === '' ? '<tr><td colspan="7" class="muted">none yet</td></tr>' : rows}</tbody></table>`;
}

function sessionsTable(view: InspectorView): string {
  const rows = view.sessions
    .map(
      (s) =>
        `<tr><td><a href="/${esc(queryString({ page: 1 }, { session: s.id }))}"><code>${esc(s.id)}</code></a></td><td>${esc(s.label ?? '')}</td><td>${s.closed ? 'closed' : 'open'}</td><td class="num">${s.live}</td></tr>`,
    )
    .join('\n');
  const more =
    view.sessionsTotal > view.sessions.length
      ? `<p class="muted">${view.sessionsTotal - view.sessions.length} more sessions not listed.</p>`
      : '';
  return `<h2>Sessions</h2><table id="sessions"><thead><tr><th>session</th><th>label</th><th></th><th>live requests</th></tr></thead><tbody>${rows}</tbody></table>${more}`;
}

/** The whole page. `svg` is the rendered diagram; `nonce` authorises the inline script under the CSP. */
export function renderPage(view: InspectorView, svg: string, nonce: string, diagramCurrent = true): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>intent-mcp inspector</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<noscript><meta http-equiv="refresh" content="${NOSCRIPT_REFRESH_SECONDS}"></noscript>
<style nonce="${nonce}">${STYLE}</style></head>
<body>${header(view)}
<h2>Handoff machine</h2>${countsSection(view)}
<div id="diagram" data-current="${diagramCurrent ? 'yes' : 'no'}">${svg}</div>
${selectedSection(view)}
<h2>Filter</h2>${filters(view)}
${liveTable(view)}
${recentTable(view)}
${sessionsTable(view)}
<script nonce="${nonce}">${SCRIPT}</script>
</body></html>
`;
}

/**
 * The `transition` SSE event's data: the record as it is, plus its colour class and its detail in words. Written as the
 * record's own JSON with the two keys appended (the same text as stringifying a spread copy, at half the cost: this
 * runs for every transition while a page watches).
 */
export function transitionEventData(t: HandoffTransition): string {
  const ending = endingOf(t);
  const kind = ending === undefined ? kindOfState(t.to) : kindOfEnding(ending);
  return `${JSON.stringify(t).slice(0, -1)},"kind":"${kind}","detail":${JSON.stringify(stepDetail(t))}}`;
}
