/**
 * Diagrams of the handoff machine, generated from its definition (spec 03, "Observability"): change the machine and
 * the diagram changes with it. Mermaid `stateDiagram-v2` and Graphviz DOT, optionally with one state highlighted.
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';
import { handoffMachine } from './handoff.js';

export interface DiagramEdge {
  /** Source state key (a compound state's edges start at the compound state). */
  from: string;
  to: string;
  event: string;
  guard: string | undefined;
  /** Targetless: the state answers the event and stays where it is. */
  internal: boolean;
}

export interface DiagramModel {
  id: string;
  /** State keys in document order, with the compound parent of each (undefined at the top level). */
  states: { key: string; parent: string | undefined; initial: boolean; compound: boolean; tags: string[] }[];
  edges: DiagramEdge[];
}

function guardName(guard: unknown): string | undefined {
  if (guard === undefined) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'object' && guard !== null && 'type' in guard) return String(guard.type);
  return 'guard';
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
      for (const t of transitions) {
        const target = t.target?.[0];
        edges.push({
          from: node.key,
          to: target?.key ?? node.key,
          event,
          guard: guardName(t.guard),
          internal: target === undefined,
        });
      }
    }
    for (const child of Object.values(node.states)) visit(child, node);
  };
  for (const child of Object.values(machine.root.states)) visit(child, machine.root);
  return { id: machine.id, states, edges };
}

function label(e: DiagramEdge): string {
  return e.guard === undefined ? e.event : `${e.event} [${e.guard}]`;
}

export interface DiagramOptions {
  /** A state key to highlight (the inspector marks a request's current state this way). */
  highlight?: string | undefined;
  machine?: AnyStateMachine;
}

/** Mermaid `stateDiagram-v2` of the machine. */
export function toMermaid(options: DiagramOptions = {}): string {
  const model = describeMachine(options.machine);
  const lines = ['stateDiagram-v2'];
  const rootInitial = model.states.find((s) => s.parent === undefined && s.initial);
  if (rootInitial !== undefined) lines.push(`  [*] --> ${rootInitial.key}`);
  const edgeLines = (from: string, indent: string): string[] =>
    model.edges.filter((e) => e.from === from).map((e) => `${indent}${e.from} --> ${e.to}: ${label(e)}`);
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
  if (options.highlight !== undefined) {
    lines.push('  classDef current fill:#ffd54f,stroke:#e65100,stroke-width:3px');
    lines.push(`  class ${options.highlight} current`);
  }
  return lines.join('\n') + '\n';
}

/** Graphviz DOT of the machine; compound states become clusters. */
export function toDot(options: DiagramOptions = {}): string {
  const model = describeMachine(options.machine);
  const q = (s: string) => JSON.stringify(s);
  const lines = [
    `digraph ${q(model.id)} {`,
    '  compound=true;',
    '  rankdir=LR;',
    '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica"];',
    '  edge [fontname="Helvetica", fontsize=10];',
    '  __start [shape=point, label=""];',
  ];
  const node = (key: string, tags: string[]): string => {
    const attrs = [`label=${q(key)}`];
    if (tags.includes('terminal')) attrs.push('peripheries=2');
    if (options.highlight === key) attrs.push('fillcolor="#ffd54f"', 'penwidth=3');
    return `${q(key)} [${attrs.join(', ')}];`;
  };
  // A compound state is drawn as a cluster; its edges leave from its initial child with ltail set to the cluster.
  const anchor = new Map<string, { node: string; cluster: string }>();
  for (const s of model.states.filter((x) => x.parent === undefined)) {
    if (s.compound) {
      const children = model.states.filter((c) => c.parent === s.key);
      const first = children.find((c) => c.initial) ?? children[0];
      anchor.set(s.key, { node: first?.key ?? s.key, cluster: `cluster_${s.key}` });
      lines.push(`  subgraph ${q(`cluster_${s.key}`)} {`, `    label=${q(s.key)};`, '    style=rounded;');
      for (const c of children) lines.push(`    ${node(c.key, c.tags)}`);
      lines.push('  }');
    } else lines.push(`  ${node(s.key, s.tags)}`);
  }
  const start = model.states.find((s) => s.parent === undefined && s.initial);
  if (start !== undefined) {
    const a = anchor.get(start.key);
    lines.push(`  __start -> ${q(a?.node ?? start.key)}${a === undefined ? '' : ` [lhead=${q(a.cluster)}]`};`);
  }
  for (const e of model.edges) {
    const from = anchor.get(e.from);
    const to = anchor.get(e.to);
    const attrs = [`label=${q(label(e))}`];
    if (from !== undefined) attrs.push(`ltail=${q(from.cluster)}`);
    if (to !== undefined) attrs.push(`lhead=${q(to.cluster)}`);
    if (e.internal) attrs.push('style=dashed');
    lines.push(`  ${q(from?.node ?? e.from)} -> ${q(to?.node ?? e.to)} [${attrs.join(', ')}];`);
  }
  lines.push('}');
  return lines.join('\n') + '\n';
}
