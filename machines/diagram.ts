/**
 * Diagrams of the handoff machine, generated from its definition (spec 03, "Observability"): change the machine and
 * the diagram changes with it. Mermaid `stateDiagram-v2` and Graphviz DOT (which `src/observability/svg.ts` renders to
 * SVG for the inspector page and trace reports).
 *
 * Every edge is labelled `EVENT [when] / answer`: the guard in words, including what the branches before it ruled out
 * (`VALIDATED [invalid, budget left] / invalid`, `VALIDATED [budget spent] / rejected`), and what the machine answers
 * the event's sender. A rejected completion is drawn apart from a successful one, answers that stay put are dashed
 * self-loops, and every state and edge has a stable id (`state-<key>`, `edge-<id>` in the SVG) so that counts, a
 * highlighted state and a request's path (`edgeOf`) can be drawn on it.
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { handoffMachine, type HandoffAnswer } from './handoff.js';

/** The id of the arrow into the initial state: the edge a `prepare` step takes. */
export const START_EDGE = 'start';

export interface DiagramEdge {
  /** Stable id: `<from>.<event>.<n>`, n counting the state's transitions for that event from 0 in definition order. */
  id: string;
  /** Source state key (a compound state's edges start at the compound state). */
  from: string;
  to: string;
  event: string;
  /** The guard's name in the machine (`isPastDeadline`, ...). */
  guard: string | undefined;
  /** When the edge is taken, in words, including what earlier branches for the same event ruled out. */
  when: string | undefined;
  /** What the machine answers the event's sender along this edge (`context.answer`). */
  answer: HandoffAnswer | undefined;
  /** Targetless: the state answers the event and stays where it is. */
  internal: boolean;
}

export interface DiagramModel {
  id: string;
  /** State keys in document order, with the compound parent of each (undefined at the top level). */
  states: { key: string; parent: string | undefined; initial: boolean; compound: boolean; tags: string[] }[];
  edges: DiagramEdge[];
}

/**
 * Each guard of the machine in words. A guard missing here is drawn with its code name; a test holds that every guard
 * of the handoff machine has words.
 */
export const GUARD_WORDS: Readonly<Record<string, { when: string; otherwise: string }>> = {
  isPastDeadline: { when: 'past deadline', otherwise: 'in time' },
  isSameCandidate: { when: 'same candidate', otherwise: 'other candidate' },
  isCrash: { when: 'validation crashed', otherwise: 'validation ran' },
  isValid: { when: 'valid', otherwise: 'invalid' },
  hasBudget: { when: 'budget left', otherwise: 'budget spent' },
  hasDeadline: { when: 'has a deadline', otherwise: 'no deadline' },
  isExecutorRepeat: { when: 'executor repeats its candidate', otherwise: 'not a repeat' },
};

function guardName(guard: unknown): string | undefined {
  if (guard === undefined) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'object' && guard !== null && 'type' in guard) return String(guard.type);
  return 'guard';
}

/**
 * The words of one branch: its own guard, qualified by what the branches before it ruled out where that matters to a
 * reader (only the most recent one: `invalid, budget left` after `valid`; a deadline check is implied everywhere).
 */
function whenOf(guard: string | undefined, earlier: readonly string[]): string | undefined {
  const words = (g: string) => GUARD_WORDS[g];
  const before = earlier.filter((g) => g !== 'isPastDeadline' && g !== 'isCrash');
  const last = before.at(-1);
  if (guard === undefined) {
    const ruledOut = last ?? earlier.at(-1);
    return ruledOut === undefined ? undefined : (words(ruledOut)?.otherwise ?? `not ${ruledOut}`);
  }
  const own = words(guard)?.when ?? guard;
  if (guard === 'isPastDeadline' || guard === 'isCrash' || last === undefined) return own;
  const ruledOut = words(last)?.otherwise;
  // "invalid, budget left": the earlier branch's negation reads as a qualifier only for a validation's outcome.
  return ruledOut !== undefined && last === 'isValid' ? `${ruledOut}, ${own}` : own;
}

/** The answer a transition gives its sender, read off its actions (`answer(...)` params, `takeCandidate` = validate). */
function answerOf(actions: readonly unknown[]): HandoffAnswer | undefined {
  let found: HandoffAnswer | undefined;
  for (const a of actions) {
    if (a === 'takeCandidate') found = 'validate';
    if (typeof a === 'object' && a !== null && (a as { type?: unknown }).type === 'answer') {
      const params = (a as { params?: { answer?: HandoffAnswer } }).params;
      if (params?.answer !== undefined) found = params.answer;
    }
  }
  return found;
}

/** Reads states and transitions off a machine definition. */
export function describeMachine(machine: AnyStateMachine = handoffMachine): DiagramModel {
  const states: DiagramModel['states'] = [];
  const edges: DiagramEdge[] = [];
  const visit = (node: AnyStateNode, parent: AnyStateNode): void => {
    const compound = node.type === 'compound';
    const initialKey = parent.initial.target[0]?.key;
    states.push({
      key: node.key,
      parent: parent === machine.root ? undefined : parent.key,
      initial: initialKey === node.key,
      compound,
      tags: [...node.tags],
    });
    for (const [event, transitions] of node.transitions) {
      const earlier: string[] = [];
      for (const [n, t] of transitions.entries()) {
        const target = t.target?.[0];
        const guard = guardName(t.guard);
        edges.push({
          id: `${node.key}.${event}.${n}`,
          from: node.key,
          to: target?.key ?? node.key,
          event,
          guard,
          when: whenOf(guard, earlier),
          answer: answerOf(t.actions),
          internal: target === undefined,
        });
        if (guard !== undefined) earlier.push(guard);
      }
    }
    for (const child of Object.values(node.states)) visit(child, node);
  };
  for (const child of Object.values(machine.root.states)) visit(child, machine.root);
  return { id: machine.id, states, edges };
}

/** `EVENT [when] / answer`. */
export function edgeLabel(e: DiagramEdge): string {
  return `${e.event}${e.when === undefined ? '' : ` [${e.when}]`}${e.answer === undefined ? '' : ` / ${e.answer}`}`;
}

/** The parts of a transition record that locate it on the diagram (`HandoffTransition` has them all). */
export interface StepOnDiagram {
  from: string | null;
  event: string;
  to: string;
  answer: string;
}

const edgeIndexes = new WeakMap<AnyStateMachine, { model: DiagramModel; byKey: Map<string, string> }>();

function indexOf(machine: AnyStateMachine): { model: DiagramModel; byKey: Map<string, string> } {
  let index = edgeIndexes.get(machine);
  if (index !== undefined) return index;
  const model = describeMachine(machine);
  const byKey = new Map<string, string>();
  const parentOf = new Map(model.states.map((s) => [s.key, s.parent]));
  // A step from a state can take its own edges or an ancestor's (a live child takes `live`'s DEADLINE, CANCEL, CLOSE).
  for (const s of model.states) {
    for (let at: string | undefined = s.key; at !== undefined; at = parentOf.get(at)) {
      for (const e of model.edges.filter((x) => x.from === at)) {
        const key = `${s.key}|${e.event}|${e.to}|${e.answer ?? ''}`;
        if (!byKey.has(key)) byKey.set(key, e.id);
      }
    }
  }
  index = { model, byKey };
  edgeIndexes.set(machine, index);
  return index;
}

/**
 * The diagram edge a recorded step took: `START_EDGE` for a prepare, the `ACCEPT` edge answering `replay` for a replay,
 * `undefined` for a step the diagram has no edge for (an eviction from the store, or a step the machine would not take).
 */
export function edgeOf(step: StepOnDiagram, machine: AnyStateMachine = handoffMachine): string | undefined {
  if (step.event === 'prepare') return step.from === null ? START_EDGE : undefined;
  if (step.from === null) return undefined;
  const event = step.event === 'replay' ? 'ACCEPT' : step.event;
  return indexOf(machine).byKey.get(`${step.from}|${event}|${step.to}|${step.answer}`);
}

export interface DiagramOptions {
  /** A state key to highlight (the inspector marks a request's current state this way). */
  highlight?: string | undefined;
  /** Edge ids to emphasise, e.g. the path one request took (ids from `edgeOf`). */
  path?: readonly string[] | undefined;
  /**
   * Numbers drawn on the diagram: per state key (e.g. live requests in it) and per edge id (transitions taken), keys
   * `START_EDGE` included. States and edges without a number show none.
   */
  counts?: { states?: Readonly<Record<string, number>>; edges?: Readonly<Record<string, number>> } | undefined;
  machine?: AnyStateMachine;
}

const countOf = (table: Readonly<Record<string, number>> | undefined, key: string): number | undefined => {
  const n = table !== undefined && Object.hasOwn(table, key) ? table[key] : undefined;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
};

/** The kind a state is coloured by: live, completed, or failed (cancelled, expired). */
export function stateKind(tags: readonly string[], key: string): 'live' | 'completed' | 'failed' | 'group' {
  if (tags.includes('live')) return 'live';
  if (!tags.includes('terminal')) return 'group';
  return key === 'completed' ? 'completed' : 'failed';
}

/** Mermaid `stateDiagram-v2` of the machine. */
export function toMermaid(options: DiagramOptions = {}): string {
  const model = describeMachine(options.machine);
  const lines = ['stateDiagram-v2'];
  const counted = (label: string, n: number | undefined) => (n === undefined ? label : `${label} ×${n}`);
  const rootInitial = model.states.find((s) => s.parent === undefined && s.initial);
  if (rootInitial !== undefined) lines.push(`  [*] --> ${rootInitial.key}`);
  const edgeLines = (from: string, indent: string): string[] =>
    model.edges
      .filter((e) => e.from === from)
      .map((e) => `${indent}${e.from} --> ${e.to}: ${counted(edgeLabel(e), countOf(options.counts?.edges, e.id))}`);
  for (const s of model.states.filter((x) => x.parent === undefined)) {
    if (s.compound) {
      lines.push(`  state ${s.key} {`);
      const children = model.states.filter((c) => c.parent === s.key);
      const first = children.find((c) => c.initial);
      if (first !== undefined) lines.push(`    [*] --> ${first.key}`);
      for (const c of children) lines.push(...edgeLines(c.key, '    '));
      lines.push('  }');
    }
    lines.push(...edgeLines(s.key, '  '));
  }
  const stateCounts = model.states
    .map((s) => [s.key, countOf(options.counts?.states, s.key)] as const)
    .filter(([, n]) => n !== undefined);
  for (const [key, n] of stateCounts) lines.push(`  ${key}: ${key} (${String(n)})`);
  lines.push(
    '  classDef live fill:#e3f2fd,stroke:#1565c0',
    '  classDef completed fill:#e8f5e9,stroke:#2e7d32',
    '  classDef failed fill:#ffebee,stroke:#c62828',
  );
  for (const kind of ['live', 'completed', 'failed'] as const) {
    const keys = model.states.filter((s) => stateKind(s.tags, s.key) === kind).map((s) => s.key);
    if (keys.length > 0) lines.push(`  class ${keys.join(',')} ${kind}`);
  }
  if (options.highlight !== undefined) {
    lines.push('  classDef current fill:#ffd54f,stroke:#e65100,stroke-width:3px');
    lines.push(`  class ${options.highlight} current`);
  }
  return lines.join('\n') + '\n';
}

const FILL = { live: '#e3f2fd', completed: '#e8f5e9', failed: '#ffebee', group: '#ffffff' } as const;
const STROKE = { live: '#1565c0', completed: '#2e7d32', failed: '#c62828', group: '#455a64' } as const;

/** Graphviz DOT of the machine; compound states become clusters. */
export function toDot(options: DiagramOptions = {}): string {
  const model = describeMachine(options.machine);
  const q = (s: string) => JSON.stringify(s);
  const path = new Set(options.path ?? []);
  const lines = [
    `digraph ${q(model.id)} {`,
    '  compound=true;',
    '  rankdir=LR;',
    '  nodesep=0.5;',
    '  ranksep=0.9;',
    '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=12];',
    '  edge [fontname="Helvetica", fontsize=9, color="#546e7a", fontcolor="#37474f"];',
  ];
  const startCount = countOf(options.counts?.edges, START_EDGE);
  lines.push(`  __start [shape=point, label="", id=${q('state-__start')}];`);
  const node = (key: string, tags: string[]): string => {
    const kind = stateKind(tags, key);
    const n = countOf(options.counts?.states, key);
    const attrs = [
      `id=${q(`state-${key}`)}`,
      `label=${q(n === undefined ? key : `${key}\n${String(n)}`)}`,
      `fillcolor=${q(FILL[kind])}`,
      `color=${q(STROKE[kind])}`,
      `class=${q(`state ${kind}`)}`,
    ];
    if (tags.includes('terminal')) attrs.push('peripheries=2');
    if (options.highlight === key) attrs.push('fillcolor="#ffd54f"', 'penwidth=3', 'color="#e65100"');
    return `${q(key)} [${attrs.join(', ')}];`;
  };
  // A compound state is drawn as a cluster; its edges leave from its initial child with ltail set to the cluster.
  const anchor = new Map<string, { node: string; cluster: string }>();
  for (const s of model.states.filter((x) => x.parent === undefined)) {
    if (s.compound) {
      const children = model.states.filter((c) => c.parent === s.key);
      const first = children.find((c) => c.initial) ?? children[0];
      anchor.set(s.key, { node: first?.key ?? s.key, cluster: `cluster_${s.key}` });
      lines.push(
        `  subgraph ${q(`cluster_${s.key}`)} {`,
        `    id=${q(`state-${s.key}`)};`,
        `    label=${q(s.key)};`,
        '    style="rounded,dashed";',
        '    color="#90a4ae";',
      );
      for (const c of children) lines.push(`    ${node(c.key, c.tags)}`);
      lines.push('  }');
    } else lines.push(`  ${node(s.key, s.tags)}`);
  }
  const start = model.states.find((s) => s.parent === undefined && s.initial);
  if (start !== undefined) {
    const a = anchor.get(start.key);
    const attrs = [`id=${q(`edge-${START_EDGE}`)}`];
    if (a !== undefined) attrs.push(`lhead=${q(a.cluster)}`);
    if (startCount !== undefined) attrs.push(`label=${q(`×${String(startCount)}`)}`);
    if (path.has(START_EDGE)) attrs.push('penwidth=3', 'color="#e65100"');
    lines.push(`  __start -> ${q(a?.node ?? start.key)} [${attrs.join(', ')}];`);
  }
  // Self-loops of one state leave and enter at their own compass points, so their labels do not pile up.
  const loopPorts = ['n', 's', 'e', 'ne', 'se', 'nw', 'sw'];
  const loopsSoFar = new Map<string, number>();
  for (const e of model.edges) {
    const from = anchor.get(e.from);
    const to = anchor.get(e.to);
    const n = countOf(options.counts?.edges, e.id);
    const label = n === undefined ? edgeLabel(e) : `${edgeLabel(e)}  ×${String(n)}`;
    const attrs = [`id=${q(`edge-${e.id}`)}`, `label=${q(label)}`, `tooltip=${q(edgeLabel(e))}`];
    const classes = ['edge'];
    if (from !== undefined) attrs.push(`ltail=${q(from.cluster)}`);
    if (to !== undefined) attrs.push(`lhead=${q(to.cluster)}`);
    if (e.internal) {
      const i = loopsSoFar.get(e.from) ?? 0;
      loopsSoFar.set(e.from, i + 1);
      const port = loopPorts[i % loopPorts.length] ?? 'n';
      attrs.push('style=dashed', `tailport=${port}`, `headport=${port}`);
      classes.push('loop');
    }
    // A rejected completion is drawn apart from a successful one: red and bold against green.
    if (e.answer === 'rejected') {
      attrs.push('color="#c62828"', 'fontcolor="#c62828"', 'penwidth=2');
      classes.push('rejected');
    } else if (e.answer === 'result') {
      attrs.push('color="#2e7d32"', 'fontcolor="#2e7d32"', 'penwidth=2');
      classes.push('result');
    }
    if (path.has(e.id)) {
      attrs.push('penwidth=3.5', 'color="#e65100"');
      classes.push('taken');
    }
    attrs.push(`class=${q(classes.join(' '))}`);
    lines.push(`  ${q(from?.node ?? e.from)} -> ${q(to?.node ?? e.to)} [${attrs.join(', ')}];`);
  }
  lines.push('}');
  return lines.join('\n') + '\n';
}
