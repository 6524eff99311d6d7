/**
 * The nesting bound of caller values (issue 8): a request's arguments and a candidate are scanned for their depth before
 * zod or any other recursive code (the zod parse, the reference and normalisation walks, `JSON.stringify`) sees them, so
 * that no caller value can exhaust the stack and the same value always gets the same answer.
 */
import { toPointer } from './feedback.js';

/**
 * Where a value stops being a JSON value within the nesting bound (the first place a pre-order scan meets): a container
 * deeper than the bound (`too_deep`), or a value JSON cannot hold (`not_json`: a bigint, a function or a symbol, which
 * `JSON.stringify` would throw on or drop). `pointer` is a bounded JSON Pointer (see `toPointer`).
 */
export interface ShapeProblem {
  readonly kind: 'too_deep' | 'not_json';
  readonly pointer: string;
}

interface Frame {
  readonly value: object;
  readonly depth: number;
  readonly parent: Frame | undefined;
  readonly key: string | number;
}

/**
 * Checks that `value` nests at most `maxDepth` arrays/objects deep (the root container is depth 1; scalars add none)
 * and holds only JSON values. Iterative and linear in the number of containers and keys visited; stops at the first
 * problem, so a cyclic value is refused rather than followed. Returns `undefined` when there is none.
 */
export function findShapeProblem(value: unknown, maxDepth: number): ShapeProblem | undefined {
  if (!isContainer(value)) return isJsonLeaf(value) ? undefined : { kind: 'not_json', pointer: '' };
  const stack: Frame[] = [{ value, depth: 1, parent: undefined, key: '' }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    if (frame.depth > maxDepth) return { kind: 'too_deep', pointer: toPointer(pathOf(frame)) };
    const depth = frame.depth + 1;
    // Children are pushed last to first, so that the stack pops them in document order: the answer is the first place.
    let notJson: string | number | undefined;
    if (Array.isArray(frame.value)) {
      const list = frame.value as readonly unknown[];
      for (let i = list.length - 1; i >= 0; i--) {
        const child = list[i];
        if (isContainer(child)) stack.push({ value: child, depth, parent: frame, key: i });
        else if (!isJsonLeaf(child)) notJson = i;
      }
    } else {
      const record = frame.value as Record<string, unknown>;
      const keys = Object.keys(record);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i] as string;
        const child = record[key];
        if (isContainer(child)) stack.push({ value: child, depth, parent: frame, key });
        else if (!isJsonLeaf(child)) notJson = key;
      }
    }
    if (notJson !== undefined) return { kind: 'not_json', pointer: toPointer([...pathOf(frame), notJson]) };
  }
  return undefined;
}

const isContainer = (value: unknown): value is object => value !== null && typeof value === 'object';

function isJsonLeaf(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'undefined':
      return true;
    default:
      return value === null;
  }
}

function pathOf(frame: Frame): (string | number)[] {
  const path: (string | number)[] = [];
  for (let f = frame; f.parent !== undefined; f = f.parent) path.push(f.key);
  return path.reverse();
}
