/**
 * The diagrams of the handoff machine (spec 03, "Observability"): generated from the machine definition. The expected
 * states and transitions are derived here independently, by walking the raw machine config, and compared with what
 * `toMermaid` / `toDot` and the built CLI print.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AnyStateMachine } from 'xstate';
import { HANDOFF_STATES, handoffMachine } from '../../machines/handoff.js';
import {
  GUARD_WORDS,
  START_EDGE,
  describeMachine,
  edgeLabel,
  edgeOf,
  toDot,
  toMermaid,
} from '../../machines/diagram.js';
import { renderSvg } from '../../src/observability/svg.js';
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
          const answer = answerIn(t.actions);
          edges.push({
            from: key,
            to,
            label: answer === undefined ? event : `${event} / ${answer}`,
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

/** The answer a transition config gives its sender: an `answer(...)` action's params, `takeCandidate` = validate. */
function answerIn(actions: unknown): string | undefined {
  let found: string | undefined;
  for (const a of Array.isArray(actions) ? actions : actions === undefined ? [] : [actions]) {
    if (a === 'takeCandidate') found = 'validate';
    const params = (a as { type?: unknown; params?: { answer?: string } } | null)?.params;
    if ((a as { type?: unknown } | null)?.type === 'answer' && params?.answer !== undefined) found = params.answer;
  }
  return found;
}

/** A drawn label without its `[when]` part (the words are checked on their own, below). */
const withoutWhen = (label: string): string => label.replace(/ \[[^\]]*\]/, '');
const edgeLine = (e: { from: string; to: string; label: string }): string =>
  `${e.from} --> ${e.to}: ${withoutWhen(e.label)}`;
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
  /** `state: text` lines (a count drawn on a state). */
  notes: { state: string; text: string }[];
}

function parseMermaid(text: string): MermaidPicture {
  const lines = text.split('\n');
  const pic: MermaidPicture = {
    header: lines[0],
    edges: [],
    starts: [],
    composites: [],
    classes: [],
    classDefs: [],
    notes: [],
  };
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
    else if ((m = /^class (\S+) (\S+)$/.exec(line)))
      for (const state of m[1]!.split(',')) pic.classes.push({ state, cls: m[2]! });
    else if ((m = /^(\w+): (.+)$/.exec(line))) pic.notes.push({ state: m[1]!, text: m[2]! });
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
    expect(sorted(pic.edges.map((e) => withoutWhen(e.line)))).toEqual(sorted(expected.edges.map(edgeLine)));
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
    expect(pic.classes.filter((c) => c.cls === 'current')).toEqual([{ state, cls: 'current' }]);
    expect(pic.classDefs).toContain('current');
    expect(lit).toMatch(/classDef current [^\n]*fill:#/);
    // Everything else is the plain diagram.
    const added = lit.split('\n').filter((l) => !plain.split('\n').includes(l));
    expect(added.map((l) => l.trim().split(' ')[0])).toEqual(['classDef', 'class']);
    expect(lit.split('\n').filter((l) => !added.includes(l))).toEqual(plain.split('\n'));
    expect(parseMermaid(plain).classes.filter((c) => c.cls === 'current')).toEqual([]);
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
    expect(parseDot(toDot()).nodes.filter((n) => n.attrs.fillcolor === '#ffd54f')).toEqual([]);
  });
});

describe('diagram: generated from the definition', () => {
  it('[S03-DIAGRAM] a changed machine gives a changed diagram, matching its own definition', () => {
    const expected = expectedFrom(configOf(changedMachine));
    // The edit is what we think it is.
    expect(expected.edges.map(edgeLine)).toEqual(
      expect.arrayContaining([
        'prepared --> paused: PAUSE',
        'paused --> prepared: RESUME',
        'completed --> archived: ARCHIVE',
      ]),
    );
    expect(expected.edges.map(edgeLine)).not.toContain('live --> cancelled: CLOSE / closed');

    const mermaid = parseMermaid(toMermaid({ machine: changedMachine }));
    expect(sorted(mermaid.edges.map((e) => withoutWhen(e.line)))).toEqual(sorted(expected.edges.map(edgeLine)));
    expect(mermaid.edges.find((e) => e.from === 'paused')?.scope).toBe('live');

    const before = new Set(parseMermaid(toMermaid()).edges.map((e) => e.line));
    const after = new Set(mermaid.edges.map((e) => e.line));
    expect(sorted([...after].filter((l) => !before.has(l)))).toEqual(
      sorted([
        'prepared --> paused: PAUSE [has a deadline]',
        'paused --> prepared: RESUME',
        'completed --> archived: ARCHIVE',
      ]),
    );
    expect(sorted([...before].filter((l) => !after.has(l)))).toEqual(
      sorted(['live --> cancelled: CLOSE [in time] / closed', 'live --> expired: CLOSE [past deadline] / too_late']),
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

describe('diagram: guards in words, answers, counts, a request path', () => {
  const model = describeMachine();

  it('[S03-DIAGRAM-WORDS] every guard of the machine has words, and every guarded edge shows them', () => {
    const guards = new Set(model.edges.flatMap((e) => (e.guard === undefined ? [] : [e.guard])));
    for (const g of guards) expect(GUARD_WORDS[g], g).toBeDefined();
    for (const e of model.edges.filter((x) => x.guard !== undefined))
      expect(e.when, e.id).toContain(GUARD_WORDS[e.guard!]!.when);
    // No code name of a guard is left on any label.
    for (const line of toMermaid().split('\n')) for (const g of guards) expect(line).not.toContain(g);
  });

  it('[S03-DIAGRAM-WORDS] labels read EVENT [when] / answer, as a person debugging would say it', () => {
    const labels = model.edges.map((e) => `${e.from} --> ${e.to}: ${edgeLabel(e)}`);
    expect(labels).toEqual([
      'live --> expired: DEADLINE [has a deadline] / too_late',
      'live --> expired: CANCEL [past deadline] / already_expired',
      'live --> cancelled: CANCEL [in time] / withdrawn',
      'live --> expired: CLOSE [past deadline] / too_late',
      'live --> cancelled: CLOSE [in time] / closed',
      'prepared --> expired: ACCEPT [past deadline] / too_late',
      'prepared --> validating: ACCEPT [in time] / validate',
      'validating --> expired: ACCEPT [past deadline] / too_late',
      'validating --> validating: ACCEPT [same candidate] / join',
      'validating --> validating: ACCEPT [other candidate] / conflict',
      'validating --> expired: VALIDATED [past deadline] / too_late',
      'validating --> cancelled: VALIDATED [validation crashed] / failed',
      'validating --> completed: VALIDATED [valid] / result',
      'validating --> correcting: VALIDATED [invalid, budget left] / invalid',
      'validating --> completed: VALIDATED [budget spent] / rejected',
      'correcting --> expired: ACCEPT [past deadline] / too_late',
      'correcting --> completed: ACCEPT [executor repeats its candidate] / rejected',
      'correcting --> correcting: ACCEPT [same candidate] / feedback',
      'correcting --> validating: ACCEPT [other candidate] / validate',
      'completed --> completed: ACCEPT [same candidate] / replay',
      'completed --> completed: ACCEPT [other candidate] / conflict',
      'completed --> completed: CANCEL / already_completed',
      'cancelled --> cancelled: ACCEPT / withdrawn_earlier',
      'cancelled --> cancelled: CANCEL / already_cancelled',
      'expired --> expired: ACCEPT / too_late',
      'expired --> expired: CANCEL / already_expired',
    ]);
  });

  it('[S03-DIAGRAM-WORDS] a rejected completion is drawn apart from a successful one; self-loops get their own ports', () => {
    const dot = parseDot(toDot());
    const into = (answer: string) => dot.edges.filter((e) => e.attrs.label?.endsWith(`/ ${answer}`));
    for (const e of into('rejected')) expect(e.attrs.color, e.attrs.label).toBe('#c62828');
    for (const e of into('result')) expect(e.attrs.color, e.attrs.label).toBe('#2e7d32');
    expect(into('rejected')).toHaveLength(2);
    const loops = dot.edges.filter((e) => e.from === e.to && e.from !== '__start');
    expect(loops.length).toBeGreaterThan(5);
    for (const state of new Set(loops.map((e) => e.from))) {
      const ports = loops.filter((e) => e.from === state).map((e) => e.attrs.tailport);
      expect(new Set(ports).size, state).toBe(ports.length);
    }
  });

  it('[S03-DIAGRAM-COUNTS] counts are drawn on the states and edges they belong to, with stable SVG ids', () => {
    const dot = parseDot(
      toDot({
        counts: { states: { prepared: 3, correcting: 1 }, edges: { [START_EDGE]: 5, 'validating.VALIDATED.3': 2 } },
      }),
    );
    expect(dot.nodes.find((n) => n.key === 'prepared')?.attrs.label).toBe('prepared\n3');
    expect(dot.nodes.find((n) => n.key === 'validating')?.attrs.label).toBe('validating');
    const byId = new Map(dot.edges.map((e) => [e.attrs.id, e]));
    expect(byId.get('edge-start')?.attrs.label).toBe('×5');
    expect(byId.get('edge-validating.VALIDATED.3')?.attrs.label).toBe('VALIDATED [invalid, budget left] / invalid  ×2');
    expect(byId.size).toBe(model.edges.length + 1);
    for (const n of dot.nodes) expect(n.attrs.id).toBe(`state-${n.key}`);
    // Counts for keys that are not states or edges draw nothing.
    expect(toDot({ counts: { states: { nope: 1 }, edges: { nope: 2 } } })).toBe(toDot());
    const mermaid = parseMermaid(toMermaid({ counts: { states: { correcting: 1 } } }));
    expect(mermaid.notes).toEqual([{ state: 'correcting', text: 'correcting (1)' }]);
  });

  it('[S03-DIAGRAM-COUNTS] edgeOf finds the edge every kind of recorded step took; a path is emphasised', () => {
    // Every edge is found from a step that takes it: from its state, or from each child of a compound state.
    const children = (key: string) => model.states.filter((s) => s.parent === key).map((s) => s.key);
    for (const e of model.edges) {
      const froms = children(e.from).length > 0 ? children(e.from) : [e.from];
      for (const from of froms)
        expect(edgeOf({ from, event: e.event, to: e.to, answer: e.answer ?? 'none' }), `${from} ${e.id}`).toBe(e.id);
    }
    expect(edgeOf({ from: null, event: 'prepare', to: 'prepared', answer: 'none' })).toBe(START_EDGE);
    expect(edgeOf({ from: 'completed', event: 'replay', to: 'completed', answer: 'replay' })).toBe(
      'completed.ACCEPT.0',
    );
    expect(edgeOf({ from: 'completed', event: 'evict', to: 'completed', answer: 'none' })).toBeUndefined();
    // A step the machine would not take has no edge.
    expect(edgeOf({ from: 'prepared', event: 'ACCEPT', to: 'completed', answer: 'result' })).toBeUndefined();
    const path = [START_EDGE, 'prepared.ACCEPT.1', 'validating.VALIDATED.3'];
    const dot = parseDot(toDot({ path }));
    const taken = dot.edges.filter((e) => e.attrs.class?.split(' ').includes('taken')).map((e) => e.attrs.id);
    expect(sorted(taken.map(String))).toEqual(
      sorted(['validating.VALIDATED.3', 'prepared.ACCEPT.1'].map((id) => `edge-${id}`)),
    );
    expect(dot.edges.find((e) => e.attrs.id === 'edge-start')?.attrs.penwidth).toBe('3');
  });

  it('[S03-DIAGRAM-SVG] renders to SVG in process (Graphviz WebAssembly) with every state and edge by id', async () => {
    const svg = await renderSvg(toDot({ highlight: 'correcting', counts: { states: { correcting: 1 } } }));
    expect(svg.startsWith('<svg')).toBe(true);
    for (const s of HANDOFF_STATES) expect(svg).toContain(`id="state-${s}"`);
    for (const e of model.edges) expect(svg).toContain(`id="edge-${e.id}"`);
    expect(svg).toContain('invalid, budget left');
    expect(svg).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
  });
});

describe('diagram: the README', () => {
  it("[S03-DIAGRAM-README] the README's lifecycle diagram is exactly toMermaid()", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const block = /```mermaid\n([^]*?)```/.exec(readme)?.[1];
    expect(block).toBe(toMermaid());
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
