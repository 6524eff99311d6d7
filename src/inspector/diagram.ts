/**
 * The inspector's diagram: the machine's DOT, generated from its definition (`machines/diagram.ts`), with the live
 * counts on the states, the transitions taken on the edges and a selected request's state and path drawn on it,
 * rendered to SVG in this process (`src/observability/svg.ts`: Graphviz compiled to WebAssembly; nothing fetched from
 * outside). Renders are cached and rate-limited: a picture that did not change is rendered once, and under traffic at
 * most one render a second runs.
 */
import { edgeOf, toDot } from '../../machines/diagram.js';
import type { HandoffState } from '../../machines/handoff.js';
import type { HandoffTransition } from '../engine/inspection.js';
import { renderSvg } from '../observability/svg.js';
import type { InspectorCounts } from './model.js';

/** The diagram edge a transition record took (`edgeOf`); `undefined` for a step that is no edge (an eviction). */
export function edgeKeyOf(t: Pick<HandoffTransition, 'from' | 'event' | 'to' | 'answer'>): string | undefined {
  return edgeOf(t);
}

/** What one picture shows: counts on states and edges, and a selected request's state and path. */
export interface DiagramPicture {
  counts: InspectorCounts;
  highlight?: HandoffState | undefined;
  /** The steps of the selected request (their edges are emphasised). */
  path?: readonly HandoffTransition[] | undefined;
}

/** Pictures kept (one per highlighted state and path). */
const CACHE_SIZE = 16;
/**
 * At most one render this often: a render takes tens of milliseconds of blocking WebAssembly (BENCHMARKS.md), and
 * counts change with every transition, so under traffic a picture up to this old is served instead (marked not
 * current, and the page asks again).
 */
export const MIN_RENDER_INTERVAL_MS = 1000;
let lastRenderAt = Number.NEGATIVE_INFINITY;
const cache = new Map<string, { dot: string; svg: Promise<string> }>();

/**
 * The SVG of a picture (an `<svg>` element, no XML prolog) and whether it is the picture asked for with the current
 * counts: rendered when it changed, at most once per {@link MIN_RENDER_INTERVAL_MS} in all. Within that interval a
 * picture drawn before is served as it was, and one never drawn (another selected request, another path) gets the
 * latest picture drawn, both marked not current; only the very first picture is rendered at once. So a caller cycling
 * through many `?request=` ids cannot make renders back to back.
 */
export function diagramSvg(picture: DiagramPicture, now = Date.now()): { svg: Promise<string>; current: boolean } {
  const path = (picture.path ?? []).map((t) => edgeOf(t)).filter((id) => id !== undefined);
  const dot = toDot({
    counts: { states: picture.counts.states, edges: picture.counts.edges },
    highlight: picture.highlight,
    path,
  });
  const shape = JSON.stringify([picture.highlight ?? null, path]);
  const hit = cache.get(shape);
  if (hit !== undefined && hit.dot === dot) return { svg: hit.svg, current: true };
  if (now - lastRenderAt < MIN_RENDER_INTERVAL_MS) {
    if (hit !== undefined) return { svg: hit.svg, current: false };
    const latest = [...cache.values()].at(-1);
    if (latest !== undefined) return { svg: latest.svg, current: false };
  }
  lastRenderAt = now;
  const svg = renderSvg(dot);
  cache.delete(shape);
  cache.set(shape, { dot, svg });
  if (cache.size > CACHE_SIZE) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  svg.catch(() => cache.delete(shape));
  return { svg, current: true };
}
