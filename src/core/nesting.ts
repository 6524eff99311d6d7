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
    const children: Frame[] = [];
    const visit = (child: unknown, key: string | number): ShapeProblem | undefined => {
      if (isContainer(child)) children.push({ value: child, depth: frame.depth + 1, parent: frame, key });
      else if (!isJsonLeaf(child)) return { kind: 'not_json', pointer: toPointer([...pathOf(frame), key]) };
      return undefined;
    };
    if (Array.isArray(frame.value)) {
      const list = frame.value as readonly unknown[];
      for (let i = 0; i < list.length; i++) {
        const problem = visit(list[i], i);
        if (problem !== undefined) return problem;
      }
    } else {
      const record = frame.value as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        const problem = visit(record[key], key);
        if (problem !== undefined) return problem;
      }
    }
    // Reversed, so that the stack pops them in document order and the reported place is always the first one.
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as Frame);
  }
  return undefined;
}

const isContainer = (value: unknown): value is object => value !== null && typeof value === 'object';
const isJsonLeaf = (value: unknown): boolean =>
  value === null || value === undefined || ['string', 'number', 'boolean'].includes(typeof value);

function pathOf(frame: Frame): (string | number)[] {
  const path: (string | number)[] = [];
  for (let f = frame; f.parent !== undefined; f = f.parent) path.push(f.key);
  return path.reverse();
}
