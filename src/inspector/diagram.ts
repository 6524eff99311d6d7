/**
 * The inspector's diagram: the machine's DOT (generated from its definition by `machines/diagram.ts`) rendered to SVG
 * in this process through Graphviz compiled to WebAssembly; nothing is fetched from outside. Renders are cached by what
 * they show (counts, highlighted state, path), so a flood of page loads renders each picture once.
 */
import { Graphviz } from '@hpcc-js/wasm-graphviz';
import { toDot } from '../../machines/diagram.js';
import type { HandoffState } from '../../machines/handoff.js';
import type { HandoffTransition } from '../engine/inspection.js';
import type { InspectorCounts } from './model.js';

/**
 * The diagram edge a transition record took, as a stable key; `undefined` for a step that is no edge of the machine
 * (`replay`, `evict`).
 */
export function edgeKeyOf(t: Pick<HandoffTransition, 'from' | 'event' | 'to'>): string | undefined {
  if (t.event === 'replay' || t.event === 'evict') return undefined;
  return `${t.from ?? 'start'}:${t.event}:${t.to}`;
}

/** What one picture shows: counts on states and edges, and a selected request's state and path. */
export interface DiagramPicture {
  counts: InspectorCounts;
  highlight?: HandoffState | undefined;
  /** The steps of the selected request (their edges are emphasised). */
  path?: readonly HandoffTransition[] | undefined;
}

let graphviz: Promise<Graphviz> | undefined;
const CACHE_SIZE = 16;
const cache = new Map<string, Promise<string>>();

/** The SVG of a picture (an `<svg>` element, no XML prolog), rendered once per distinct picture. */
export function diagramSvg(picture: DiagramPicture): Promise<string> {
  const dot = toDot({ highlight: picture.highlight });
  const key = dot;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  graphviz ??= Graphviz.load();
  const svg = graphviz.then((g) => stripProlog(g.dot(dot, 'svg')));
  cache.set(key, svg);
  if (cache.size > CACHE_SIZE) {
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  svg.catch(() => cache.delete(key));
  return svg;
}

/** Graphviz writes an XML declaration and a DOCTYPE; inline SVG in HTML starts at `<svg`. */
function stripProlog(svg: string): string {
  const start = svg.indexOf('<svg');
  return start < 0 ? svg : svg.slice(start);
}
