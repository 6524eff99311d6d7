/**
 * MCP tool-result envelopes (spec 04, "Envelopes"). The text is always the reply's own text, so a replayed reply is
 * byte-identical to the first; `structuredContent` is the same object. A technical failure carries no
 * `structuredContent` and never a partial result. Under 2026-07-28 every result also carries `resultType: 'complete'`.
 */
import type { IntentError } from '../core/errors.js';
import { errorReply, type HandoffReply } from '../engine/replies.js';

export interface IntentMcpToolResult {
  content: [{ type: 'text'; text: string }];
  structuredContent?: Record<string, unknown>;
  isError: boolean;
  resultType?: 'complete';
}

export function envelopeFromReply(reply: HandoffReply, protocolVersion: string): IntentMcpToolResult {
  const out: IntentMcpToolResult = reply.isError
    ? { content: [{ type: 'text', text: reply.text }], isError: true }
    : {
        content: [{ type: 'text', text: reply.text }],
        structuredContent: reply.value as Record<string, unknown>,
        isError: false,
      };
  if (protocolVersion === '2026-07-28') out.resultType = 'complete';
  return out;
}

export function errorEnvelope(error: IntentError, protocolVersion: string): IntentMcpToolResult {
  return envelopeFromReply(errorReply(error), protocolVersion);
}
