/**
 * The trace file format (issue 11): JSON lines. The first line of every file is a {@link TraceHeader} naming the format
 * version and a hash of the machine definition that produced it; every other line is one transition record
 * (`HandoffTransition`, `src/engine/inspection.ts`) exactly as the inspection stream carries it. A process that
 * appends to an existing file writes a header again: a header in the middle of a file marks a restart.
 */
import { createHash } from 'node:crypto';
import { handoffMachine } from '../../machines/handoff.js';

export const TRACE_FORMAT = 'intent-mcp-trace';
export const TRACE_VERSION = 1;

/** The first line of a trace file. */
export interface TraceHeader {
  format: typeof TRACE_FORMAT;
  version: number;
  /** {@link machineHash} of the machine that wrote the records. */
  machine: string;
}

let cachedHash: string | undefined;

/**
 * The first 16 hex digits of the SHA-256 of the machine definition's JSON (`handoffMachine.toJSON()`: states,
 * transitions, guards and actions by name). It changes when the lifecycle rules change, so `trace check` can warn that
 * a trace was recorded by another machine than the one judging it.
 */
export function machineHash(): string {
  cachedHash ??= createHash('sha256').update(JSON.stringify(handoffMachine.toJSON())).digest('hex').slice(0, 16);
  return cachedHash;
}

/** The header line of a trace written by this build, with its newline. */
export function headerLine(): string {
  const header: TraceHeader = { format: TRACE_FORMAT, version: TRACE_VERSION, machine: machineHash() };
  return JSON.stringify(header) + '\n';
}

/** Longest trace line the readers accept (a record is a few hundred bytes); a longer one is reported and skipped. */
export const MAX_TRACE_LINE_BYTES = 64 * 1024;
