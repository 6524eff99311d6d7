/** Shared by the machine tests: broken or changed copies of the handoff machine, built from an edited config. */
import { createMachine } from 'xstate';
import { handoffMachine } from '../../machines/handoff.js';

interface ConfigNode {
  on?: object;
  states?: Record<string, ConfigNode>;
}

/** A deep enough copy of a state config: every node and its `on` map are new, transitions are shared. */
function cloneConfig<T extends ConfigNode>(node: T): T {
  const copy = { ...node };
  if (node.on !== undefined) copy.on = { ...node.on };
  if (node.states !== undefined)
    copy.states = Object.fromEntries(Object.entries(node.states).map(([key, child]) => [key, cloneConfig(child)]));
  return copy;
}

/**
 * A machine built from an edited copy of the handoff machine's config, with the same guard and action implementations.
 * `edit` takes the root in the caller's own view of a config node.
 */
export function editedHandoffMachine(edit: (root: never) => void): typeof handoffMachine {
  const root = cloneConfig(handoffMachine.config as unknown as ConfigNode);
  edit(root as never);
  return createMachine(root as never, handoffMachine.implementations as never) as unknown as typeof handoffMachine;
}
