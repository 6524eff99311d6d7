/**
 * The diagrams of the handoff machine (spec 03, "Observability"): generated from the machine definition. The expected
 * states and transitions are derived here independently, by walking the raw machine config, and compared with what
 * `toMermaid` / `toDot` and the built CLI print.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AnyStateMachine } from 'xstate';
import { HANDOFF_STATES, handoffMachine } from '../../machines/handoff.js';
import { toDot, toMermaid } from '../../machines/diagram.js';
import { editedHandoffMachine } from './support.js';
import { ensureBuilt } from '../support/serverProcess.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// ---------------------------------------------------------------------------------------------------------------------
// The expected picture, from the raw config

interface TransitionConfig {
  target?: string;
  guard?: string;
  actions?: unknown;
}

interface NodeConfig {
  id?: string;
  initial?: string;
  tags?: string[];
  on?: Record<string, TransitionConfig | TransitionConfig[]>;
  states?: Record<string, NodeConfig>;
  [key: string]: unknown;
}

interface ExpectedState {
  key: string;
  parent: string | undefined;
  compound: boolean;
  initialChild: string | undefined;
  terminal: boolean;
}

interface ExpectedEdge {
  from: string;
  to: string;
  label: string;
  internal: boolean;
}

interface Expected {
  rootInitial: string;
  states: ExpectedState[];
  edges: ExpectedEdge[];
}

function configOf(machine: AnyStateMachine): NodeConfig {
  return machine.config as unknown as NodeConfig;
}

function expectedFrom(root: NodeConfig): Expected {
  const states: ExpectedState[] = [];
  const byId = new Map<string, string>();
  const parents = new Map<string, NodeConfig>();
  const walk = (node: NodeConfig, parentKey: string | undefined): void => {
    for (const [key, child] of Object.entries(node.states ?? {})) {
      byId.set(child.id ?? key, key);
      parents.set(key, node);
      states.push({
        key,
        parent: parentKey,
        compound: child.states !== undefined && Object.keys(child.states).length > 0,
        initialChild: child.initial,
        terminal: (child.tags ?? []).includes('terminal'),
      });
      walk(child, key);
    }
  };
  walk(root, undefined);

  const resolve = (from: string, target: string): string => {
    if (target.startsWith('#')) {
      const key = byId.get(target.slice(1));
      if (key === undefined) throw new Error(`unknown target ${target}`);
      return key;
    }
    const siblings = parents.get(from)?.states ?? {};
    if (!(target in siblings)) throw new Error(`unknown sibling target ${target} of ${from}`);
    return target;
  };

  const edges: ExpectedEdge[] = [];
  const collect = (node: NodeConfig): void => {
    for (const [key, child] of Object.entries(node.states ?? {})) {
      for (const [event, config] of Object.entries(child.on ?? {})) {
        for (const t of Array.isArray(config) ? config : [config]) {
          const to = t.target === undefined ? key : resolve(key, t.target);
          edges.push({
            from: key,
            to,
            label: t.guard === undefined ? event : `${event} [${t.guard}]`,
            internal: t.target === undefined,
          });
        }
      }
      collect(child);
    }
  };
  collect(root);
  if (root.initial === undefined) throw new Error('the root has no initial state');
  return { rootInitial: root.initial, states, edges };
}

const edgeLine = (e: { from: string; to: string; label: string }): string => `${e.from} --> ${e.to}: ${e.label}`;
const sorted = (xs: Iterable<string>): string[] => [...xs].sort();

// ---------------------------------------------------------------------------------------------------------------------
// Reading the diagrams back

interface MermaidPicture {
  header: string | undefined;
  /** Transition lines with the composite state they sit in (undefined = top level). */
  edges: { scope: string | undefined; line: string; from: string; to: string }[];
  /** `[*] --> x` lines with their scope. */
  starts: { scope: string | undefined; to: string }[];
  composites: string[];
  classes: { state: string; cls: string }[];
  classDefs: string[];
}

function parseMermaid(text: string): MermaidPicture {
  const lines = text.split('\n');
  const pic: MermaidPicture = { header: lines[0], edges: [], starts: [], composites: [], classes: [], classDefs: [] };
  const scope: string[] = [];
  for (const raw of lines.slice(1)) {
    const line = raw.trim();
    if (line === '') continue;
    let m: RegExpMatchArray | null;
    if ((m = /^state (\S+) \{$/.exec(line))) {
      pic.composites.push(m[1]!);
      scope.push(m[1]!);
    } else if (line === '}') scope.pop();
    else if ((m = /^\[\*\] --> (\S+)$/.exec(line))) pic.starts.push({ scope: scope.at(-1), to: m[1]! });
    else if ((m = /^(\S+) --> (\S+): (.+)$/.exec(line)))
      pic.edges.push({ scope: scope.at(-1), line, from: m[1]!, to: m[2]! });
    else if ((m = /^classDef (\S+) (.+)$/.exec(line))) pic.classDefs.push(m[1]!);
    else if ((m = /^class (\S+) (\S+)$/.exec(line))) pic.classes.push({ state: m[1]!, cls: m[2]! });
    else throw new Error(`unexpected Mermaid line: ${raw}`);
  }
  expect(scope, 'every composite block is closed').toEqual([]);
  return pic;
}

interface DotNode {
  key: string;
  cluster: string | undefined;
  attrs: Record<string, string>;
}

interface DotEdge {
  from: string;
  to: string;
  attrs: Record<string, string>;
}

function parseAttrs(text: string): Record<string, string> {
  const attrs: Record<string, string> = {};
  for (const m of text.matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|[^,\s\]]+)/g)) {
    const value = m[2]!;
    attrs[m[1]!] = value.startsWith('"') ? (JSON.parse(value) as string) : value;
  }
  return attrs;
}

function parseDot(text: string): { first: string | undefined; nodes: DotNode[]; edges: DotEdge[]; clusters: string[] } {
  const lines = text.split('\n');
  const nodes: DotNode[] = [];
  const edges: DotEdge[] = [];
  const clusters: string[] = [];
  let cluster: string | undefined;
  for (const raw of lines) {
    const line = raw.trim();
    let m: RegExpMatchArray | null;
    if ((m = /^subgraph "(cluster_[^"]+)" \{$/.exec(line))) {
      cluster = m[1]!;
      clusters.push(cluster);
    } else if (line === '}' && cluster !== undefined) cluster = undefined;
    else if ((m = /^("[^"]+"|\w+) -> ("[^"]+"|\w+)(?: \[(.*)\])?;$/.exec(line))) {
      const unquote = (s: string): string => (s.startsWith('"') ? (JSON.parse(s) as string) : s);
      edges.push({ from: unquote(m[1]!), to: unquote(m[2]!), attrs: parseAttrs(m[3] ?? '') });
    } else if ((m = /^"([^"]+)" \[(.*)\];$/.exec(line))) nodes.push({ key: m[1]!, cluster, attrs: parseAttrs(m[2]!) });
  }
  return { first: lines[0], nodes, edges, clusters };
}

/** DOT draws a compound state's edges from one of its children with `ltail`/`lhead`; read them back as state edges. */
function logicalDotEdges(edges: DotEdge[]): ExpectedEdge[] {
  return edges
    .filter((e) => e.from !== '__start')
    .map((e) => ({
      from: e.attrs.ltail?.replace(/^cluster_/, '') ?? e.from,
      to: e.attrs.lhead?.replace(/^cluster_/, '') ?? e.to,
      label: e.attrs.label ?? '',
      internal: e.attrs.style === 'dashed',
    }));
}

// ---------------------------------------------------------------------------------------------------------------------
// An edited machine, to show the diagram follows the definition

const edited = (edit: (root: NodeConfig) => void): AnyStateMachine => editedHandoffMachine(edit);

/** One more live state (`paused`), one more final state (`archived`), one transition less (CLOSE). */
const changedMachine = edited((root) => {
  const live = root.states!.live!;
  live.states!.paused = { id: 'paused', tags: ['live'], on: { RESUME: { target: 'prepared' } } };
  live.states!.prepared!.on!.PAUSE = { guard: 'hasDeadline', target: 'paused' };
  root.states!.archived = { id: 'archived', tags: ['terminal'] };
  root.states!.completed!.on!.ARCHIVE = { target: '#archived' };
  delete live.on!.CLOSE;
});

// ---------------------------------------------------------------------------------------------------------------------

describe('diagram: Mermaid', () => {
  const expected = expectedFrom(configOf(handoffMachine));

  it('[S03-DIAGRAM] is a stateDiagram-v2 listing exactly the transitions of the machine definition', () => {
    const pic = parseMermaid(toMermaid());
    expect(pic.header).toBe('stateDiagram-v2');
    expect(sorted(pic.edges.map((e) => e.line))).toEqual(sorted(expected.edges.map(edgeLine)));
    // 20 transitions today: a change here means the machine changed, which is fine; the line above is the real check.
    expect(pic.edges.length).toBe(expected.edges.length);
  });

  it('[S03-DIAGRAM] lists exactly the states, the children of live inside its composite block', () => {
    const pic = parseMermaid(toMermaid());
    const mentioned = new Set([
      ...pic.edges.flatMap((e) => [e.from, e.to]),
      ...pic.starts.map((s) => s.to),
      ...pic.composites,
    ]);
    expect(sorted(mentioned)).toEqual(sorted(expected.states.map((s) => s.key)));
    expect(pic.composites).toEqual(expected.states.filter((s) => s.compound).map((s) => s.key));
    const parentOf = new Map(expected.states.map((s) => [s.key, s.parent]));
    for (const e of pic.edges) expect(e.scope, e.line).toBe(parentOf.get(e.from));
    // The atomic states are the six of spec 03.
    expect(sorted(expected.states.filter((s) => !s.compound).map((s) => s.key))).toEqual(sorted(HANDOFF_STATES));
  });

  it("[S03-DIAGRAM] marks the machine's initial state and the initial child of live", () => {
    const pic = parseMermaid(toMermaid());
    const nested = expected.states
      .filter((s) => s.initialChild !== undefined)
      .map((s) => ({ scope: s.key, to: s.initialChild }));
    expect(pic.starts).toEqual(expect.arrayContaining(nested));
    expect(pic.starts).toContainEqual({ scope: undefined, to: expected.rootInitial });
    expect(pic.starts).toHaveLength(nested.length + 1);
  });

  it.each(HANDOFF_STATES)('[S03-DIAGRAM] highlight %s adds the class for that state only', (state) => {
    const plain = toMermaid();
    const lit = toMermaid({ highlight: state });
    const pic = parseMermaid(lit);
    expect(pic.classes).toEqual([{ state, cls: 'current' }]);
    expect(pic.classDefs).toEqual(['current']);
    expect(lit).toMatch(/classDef current [^\n]*fill:#/);
    // Everything else is the plain diagram.
    const added = lit.split('\n').filter((l) => !plain.split('\n').includes(l));
    expect(added.map((l) => l.trim().split(' ')[0])).toEqual(['classDef', 'class']);
    expect(lit.split('\n').filter((l) => !added.includes(l))).toEqual(plain.split('\n'));
    expect(parseMermaid(plain).classes).toEqual([]);
  });
});

describe('diagram: DOT', () => {
  const expected = expectedFrom(configOf(handoffMachine));

  it('[S03-DIAGRAM] is a digraph with exactly the transitions of the machine definition', () => {
    const dot = parseDot(toDot());
    expect(dot.first).toBe(`digraph ${JSON.stringify(handoffMachine.id)} {`);
    const asLines = (es: ExpectedEdge[]): string[] => es.map((e) => `${edgeLine(e)}${e.internal ? ' (internal)' : ''}`);
    expect(sorted(asLines(logicalDotEdges(dot.edges)))).toEqual(sorted(asLines(expected.edges)));
  });

  it('[S03-DIAGRAM] draws live as a cluster holding its children, final states doubled', () => {
    const dot = parseDot(toDot());
    const compound = expected.states.filter((s) => s.compound);
    expect(dot.clusters).toEqual(compound.map((s) => `cluster_${s.key}`));
    const atomic = expected.states.filter((s) => !s.compound);
    expect(sorted(dot.nodes.map((n) => n.key))).toEqual(sorted(atomic.map((s) => s.key)));
    for (const s of atomic) {
      const node = dot.nodes.find((n) => n.key === s.key)!;
      expect(node.cluster, s.key).toBe(s.parent === undefined ? undefined : `cluster_${s.parent}`);
      expect(node.attrs.peripheries, s.key).toBe(s.terminal ? '2' : undefined);
    }
    // An edge leaving the cluster is anchored on a node inside it.
    for (const e of dot.edges.filter((x) => x.attrs.ltail !== undefined)) {
      expect(dot.nodes.find((n) => n.key === e.from)?.cluster).toBe(e.attrs.ltail);
    }
  });

  it("[S03-DIAGRAM] points the start marker at the machine's initial state", () => {
    const dot = parseDot(toDot());
    const start = dot.edges.filter((e) => e.from === '__start');
    expect(start).toHaveLength(1);
    const initial = expected.states.find((s) => s.key === expected.rootInitial)!;
    // A compound initial state is entered through its own initial child, drawn with lhead on its cluster.
    if (initial.compound) {
      expect(start[0]!.to).toBe(initial.initialChild);
      expect(start[0]!.attrs.lhead).toBe(`cluster_${initial.key}`);
    } else expect(start[0]!.to).toBe(initial.key);
  });

  it.each(HANDOFF_STATES)('[S03-DIAGRAM] highlight %s fills that node only', (state) => {
    const plain = toDot().split('\n');
    const lit = toDot({ highlight: state }).split('\n');
    expect(lit).toHaveLength(plain.length);
    const changed = lit.filter((l, i) => l !== plain[i]);
    expect(changed).toHaveLength(1);
    const node = parseDot(changed.join('\n')).nodes;
    expect(node.map((n) => n.key)).toEqual([state]);
    expect(node[0]!.attrs.fillcolor).toBe('#ffd54f');
    expect(parseDot(toDot()).nodes.filter((n) => n.attrs.fillcolor !== undefined)).toEqual([]);
  });
});

describe('diagram: generated from the definition', () => {
  it('[S03-DIAGRAM] a changed machine gives a changed diagram, matching its own definition', () => {
    const expected = expectedFrom(configOf(changedMachine));
    // The edit is what we think it is.
    expect(expected.edges.map(edgeLine)).toEqual(
      expect.arrayContaining([
        'prepared --> paused: PAUSE [hasDeadline]',
        'paused --> prepared: RESUME',
        'completed --> archived: ARCHIVE',
      ]),
    );
    expect(expected.edges.map(edgeLine)).not.toContain('live --> cancelled: CLOSE');

    const mermaid = parseMermaid(toMermaid({ machine: changedMachine }));
    expect(sorted(mermaid.edges.map((e) => e.line))).toEqual(sorted(expected.edges.map(edgeLine)));
    expect(mermaid.edges.find((e) => e.from === 'paused')?.scope).toBe('live');

    const before = new Set(parseMermaid(toMermaid()).edges.map((e) => e.line));
    const after = new Set(mermaid.edges.map((e) => e.line));
    expect(sorted([...after].filter((l) => !before.has(l)))).toEqual(
      sorted([
        'prepared --> paused: PAUSE [hasDeadline]',
        'paused --> prepared: RESUME',
        'completed --> archived: ARCHIVE',
      ]),
    );
    expect(sorted([...before].filter((l) => !after.has(l)))).toEqual(
      sorted(['live --> cancelled: CLOSE', 'live --> expired: CLOSE [isPastDeadline]']),
    );

    const dot = parseDot(toDot({ machine: changedMachine }));
    expect(sorted(logicalDotEdges(dot.edges).map(edgeLine))).toEqual(sorted(expected.edges.map(edgeLine)));
    expect(dot.nodes.find((n) => n.key === 'paused')?.cluster).toBe('cluster_live');
    expect(dot.nodes.find((n) => n.key === 'archived')?.attrs.peripheries).toBe('2');
  });

  it('[S03-DIAGRAM] the default machine is the handoff machine', () => {
    expect(toMermaid({ machine: handoffMachine })).toBe(toMermaid());
    expect(toDot({ machine: handoffMachine })).toBe(toDot());
  });
});

describe('diagram: the CLI', () => {
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, ['dist/src/cli.js', 'diagram', ...args], { cwd: ROOT, encoding: 'utf8' });

  // `npm test` builds first; a bare `vitest run`, or a change to machines/ since, may not have.
  beforeAll(() => ensureBuilt(), 180_000);

  it('[S05-DIAGRAM] [S03-DIAGRAM] `diagram --format dot` prints toDot()', () => {
    const out = execFileSync(process.execPath, ['dist/src/cli.js', 'diagram', '--format', 'dot'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(out).toBe(toDot());
  });

  it('[S05-DIAGRAM] [S03-DIAGRAM] `diagram` prints Mermaid by default, and `--highlight` reaches it', () => {
    const plain = cli();
    expect(plain.status).toBe(0);
    expect(plain.stdout).toBe(toMermaid());
    expect(cli('--format', 'mermaid').stdout).toBe(toMermaid());
    const lit = cli('--format', 'mermaid', '--highlight', 'validating');
    expect(lit.status).toBe(0);
    expect(lit.stdout).toBe(toMermaid({ highlight: 'validating' }));
    expect(cli('--format', 'dot', '--highlight', 'correcting').stdout).toBe(toDot({ highlight: 'correcting' }));
  });

  it('an unknown --format exits with code 2, on stderr only', () => {
    const r = cli('--format', 'svg');
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('svg');
  });
});
