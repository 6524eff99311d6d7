/**
 * intent-mcp: natural-language requests to structured intents (`IntentResult`), served over MCP with a host-handoff
 * engine. This entry point is transport-free and never writes to stdout.
 */
export { Intent, type IntentOptions, type IntentParseOptions } from './intent.js';
export {
  IntentError,
  isIntentError,
  toIntentError,
  ERROR_CODES,
  ERROR_CATEGORIES,
  type IntentErrorCode,
  type IntentErrorCategory,
  type IntentErrorOptions,
} from './core/errors.js';
export * from './core/schemas.js';
export {
  IntentCandidateSchema,
  CandidateIntentSchema,
  BaselineChangeSchema,
  buildCandidateSchema,
  toOutputSchema,
  type IntentCandidate,
  type CandidateIntent,
} from './core/candidate.js';
export type { IntentExecutor, ExecutorContext } from './core/executor.js';
export { resolveInstance, type InstanceModel, type ResolvedField, type CandidatePlan } from './core/instance.js';
export { prepareRequest, type PreparedRequest } from './core/request.js';
export { validateCandidate, stripCodeFence, type CandidateCheck } from './core/validate.js';
export { normalizeCandidate } from './core/normalize.js';
export { chooseLanguage, normalizeText } from './core/language.js';
export {
  HandoffEngine,
  EngineSession,
  type HandoffEngineOptions,
  type HandoffInstance,
  type HandoffTransition,
  type EngineSnapshot,
  type LiveRequestView,
  type RetainedRequestView,
  type SessionView,
  type PrepareOptions,
  type AcceptOptions,
} from './engine/engine.js';
export { recognize, executorFailure, type RecognizeOptions } from './engine/recognize.js';
export type { HandoffReply } from './engine/replies.js';
export { systemClock, type HandoffClock } from './engine/clock.js';
export { STORE_MAX_ITEMS, STORE_MAX_BYTES, type TerminalStoreUsage } from './engine/terminalStore.js';
export { toMermaid, toDot, describeMachine, type DiagramModel, type DiagramOptions } from './engine/diagram.js';
export {
  handoffMachine,
  HANDOFF_STATES,
  LIVE_STATES,
  TERMINAL_STATES,
  VALIDATION_BUDGET,
  type HandoffState,
  type HandoffEvent,
  type HandoffContext,
} from '../machines/handoff.js';
export {
  createIntentMcpAdapter,
  PROTOCOL_VERSIONS,
  type IntentMcpAdapter,
  type IntentMcpAdapterConfig,
  type IntentMcpConnectOptions,
  type IntentMcpSession,
  type ProtocolVersion,
} from './mcp/adapter.js';
export { mountIntentMcpTools, type IntentMcpMount, type MountIntentMcpToolsOptions } from './mcp/mount.js';
export type { IntentMcpToolResult } from './mcp/envelopes.js';
export type { IntentMcpToolDefinition, IntentMcpToolAnnotations, IntentMcpMode } from './mcp/tools.js';
export { createOpenAICompatibleExecutor, type OpenAICompatibleExecutorOptions } from './executors/openaiCompatible.js';
