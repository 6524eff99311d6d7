/**
 * The nesting bound of caller values (issue 8): a request's arguments and a candidate are scanned for their depth before
 * zod or any other recursive code (the zod parse, the reference and normalisation walks, `JSON.stringify`) sees them, so
 * that no caller value can exhaust the stack and the same value always gets the same answer.
 */
import { toPointer } from './feedback.js';

/**
 * Where a value nests deeper than allowed: the path of the first container (in document order) that lies deeper than
 * the bound, as a bounded JSON Pointer (see `toPointer`).
 */
export interface TooDeep {
  readonly pointer: string;
}

interface Frame {
  readonly value: object;
  readonly depth: number;
  readonly parent: Frame | undefined;
  readonly key: string | number;
}

/**
 * Checks that `value` nests at most `maxDepth` arrays/objects deep (the root container is depth 1; scalars add none).
 * Iterative and linear in the number of containers and keys visited; stops at the first container past the bound, so a
 * cyclic value is refused rather than followed. Returns `undefined` when the value is within the bound.
 */
export function findTooDeep(value: unknown, maxDepth: number): TooDeep | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const stack: Frame[] = [{ value, depth: 1, parent: undefined, key: '' }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    if (frame.depth > maxDepth) return { pointer: toPointer(pathOf(frame)) };
    const children: Frame[] = [];
    if (Array.isArray(frame.value)) {
      const list = frame.value as readonly unknown[];
      for (let i = 0; i < list.length; i++) {
        const child = list[i];
        if (child !== null && typeof child === 'object')
          children.push({ value: child, depth: frame.depth + 1, parent: frame, key: i });
      }
    } else {
      const record = frame.value as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        const child = record[key];
        if (child !== null && typeof child === 'object')
          children.push({ value: child, depth: frame.depth + 1, parent: frame, key });
      }
    }
    // Reversed, so that the stack pops them in document order and the reported place is always the first one.
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as Frame);
  }
  return undefined;
}

function pathOf(frame: Frame): (string | number)[] {
  const path: (string | number)[] = [];
  for (let f = frame; f.parent !== undefined; f = f.parent) path.push(f.key);
  return path.reverse();
}
