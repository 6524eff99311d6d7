/**
 * Reads a `.cpuprofile` (V8's format, as `node --cpu-prof` writes it) and sums self time per function and per category,
 * for the server-process profiles of bench/mcp.ts (`--profile`).
 */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  totalMs: number;
  rows: { name: string; ms: number; percent: number }[];
  categories: Record<string, number>;
}

/** Which part of the server a function belongs to, by its file. */
function category(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return 'program (V8 outside JS)';
  if (url.includes('/@modelcontextprotocol/')) return 'MCP SDK';
  if (url.includes('/zod/')) return 'zod';
  if (url.includes('/ajv')) return 'ajv';
  if (url.includes('/xstate/')) return 'xstate';
  if (url.includes('/lru-cache/')) return 'lru-cache';
  if (/\/dist\/(src|machines)\//.test(url)) return 'intent-mcp';
  if (url.includes('/dist/bench/')) return 'bench (bare server)';
  if (url.startsWith('node:') || url === '') return `node / native${functionName === '' ? '' : ''}`;
  return 'other';
}

/** Self time per function (top `top`), and per category, in ms. */
export function topSelfTime(profile: CpuProfile, top: number): SelfTime {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMicros = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const byName = new Map<string, number>();
  const categories: Record<string, number> = {};
  let total = 0;
  for (const [id, micros] of selfMicros) {
    const frame = byId.get(id)!.callFrame;
    const file = frame.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/');
    const name = `${frame.functionName || '(anonymous)'} ${file}${file === '' ? '' : `:${frame.lineNumber + 1}`}`;
    byName.set(name, (byName.get(name) ?? 0) + micros);
    const c = category(frame);
    categories[c] = (categories[c] ?? 0) + micros / 1000;
    total += micros;
  }
  const rows = [...byName]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, micros]) => ({ name: name.slice(0, 110), ms: micros / 1000, percent: (100 * micros) / total }));
  return { totalMs: total / 1000, rows, categories };
}
