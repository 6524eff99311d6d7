/**
 * The inspector's diagram: the machine's DOT, generated from its definition (`machines/diagram.ts`), with the live
 * counts on the states, the transitions taken on the edges and a selected request's state and path drawn on it,
 * rendered to SVG in this process (`src/observability/svg.ts`: Graphviz compiled to WebAssembly; nothing fetched from
 * outside). Renders are cached by their DOT text, so a picture that did not change is rendered once.
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

const CACHE_SIZE = 16;
const cache = new Map<string, Promise<string>>();

/** The SVG of a picture (an `<svg>` element, no XML prolog), rendered once per distinct picture. */
export function diagramSvg(picture: DiagramPicture): Promise<string> {
  const path = (picture.path ?? []).map((t) => edgeOf(t)).filter((id) => id !== undefined);
  const dot = toDot({
    counts: { states: picture.counts.states, edges: picture.counts.edges },
    highlight: picture.highlight,
    path,
  });
  const hit = cache.get(dot);
  if (hit !== undefined) return hit;
  const svg = renderSvg(dot);
  cache.set(dot, svg);
  if (cache.size > CACHE_SIZE) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  svg.catch(() => cache.delete(dot));
  return svg;
}
