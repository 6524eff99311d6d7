/**
 * Renders DOT to SVG inside the process: Graphviz compiled to WebAssembly (`@hpcc-js/wasm-graphviz`, ~2 MB, no
 * browser, nothing fetched from outside). The module is loaded on first use, once per process, so the command pays for
 * it only when a page or report draws a diagram.
 */
import type { Graphviz } from '@hpcc-js/wasm-graphviz';

let loading: Promise<Graphviz> | undefined;

/** DOT in, standalone SVG text out (`<svg ...>...</svg>`: no XML prolog, no comments, ready to inline in HTML). */
export async function renderSvg(dot: string): Promise<string> {
  loading ??= import('@hpcc-js/wasm-graphviz').then((m) => m.Graphviz.load());
  const graphviz = await loading;
  const svg = graphviz.dot(dot, 'svg');
  const at = svg.indexOf('<svg');
  // Graphviz writes '-' as `&#45;` (so its comments never hold `--`): without the comments, ids read as given
  // (`state-prepared`), also to a plain text search.
  return (at < 0 ? svg : svg.slice(at)).replace(/<!--[^]*?-->\n?/g, '').replaceAll('&#45;', '-');
}
