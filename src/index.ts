/**
 * intent-mcp: natural-language requests to structured intents (`IntentResult`), served over MCP with a host-handoff
 * engine. This entry point is transport-free and never writes to stdout.
 *
 * What is exported here is the public surface the README documents ("The Native API", "The MCP adapter", "The handoff
 * lifecycle", "Errors"); a test holds the list. The engine, the recognition core's steps and the server stay inside.
 */
export { Intent, type IntentOptions, type IntentParseOptions } from './intent.js';
export type { IntentExecutor, ExecutorContext } from './core/executor.js';
export { createOpenAICompatibleExecutor, type OpenAICompatibleExecutorOptions } from './executors/openaiCompatible.js';
export {
  IntentError,
  isIntentError,
  ERROR_CODES,
  ERROR_CATEGORIES,
  MAX_ERROR_TEXT_CHARS,
  QUOTE_MAX_CHARS,
  type IntentErrorCode,
  type IntentErrorCategory,
  type IntentErrorOptions,
  type SerializedIntentError,
  type FeedbackItem,
} from './core/errors.js';
// The public shapes (spec 02): zod schemas, the single source of every JSON Schema, and their types.
export {
  SCHEMA_VERSION,
  LimitsSchema,
  FieldSpecSchema,
  IntentConfigSchema,
  ExecutorConfigSchema,
  NativeRequestSchema,
  EffectiveStateSchema,
  IntentResultSchema,
  HostTaskSchema,
  HostCancelReplySchema,
  ModelTaskSchema,
  type Limits,
  type LimitsOverride,
  type FieldSpec,
  type FieldType,
  type IntentConfig,
  type ExecutorConfig,
  type NativeRequest,
  type EffectiveState,
  type IntentNode,
  type Constraint,
  type Relation,
  type Unresolved,
  type Change,
  type SourceRef,
  type FieldResult,
  type Issue,
  type Inference,
  type IntentResult,
  type HostTask,
  type HostCancelReply,
  type ModelTask,
  type TaskMaterial,
  type CandidateFeedback,
  type Language,
  type LanguageOption,
} from './core/schemas.js';
export { IntentCandidateSchema, type IntentCandidate, type CandidateIntent } from './core/candidate.js';
export {
  createIntentMcpAdapter,
  PROTOCOL_VERSIONS,
  type IntentMcpAdapter,
  type IntentMcpAdapterConfig,
  type IntentMcpConnectOptions,
  type IntentMcpSession,
  type ProtocolVersion,
  type ToolCallRecord,
} from './mcp/adapter.js';
export { mountIntentMcpTools, type IntentMcpMount, type MountIntentMcpToolsOptions } from './mcp/mount.js';
export type { IntentMcpToolResult } from './mcp/envelopes.js';
export type { IntentMcpToolDefinition, IntentMcpToolAnnotations, IntentMcpMode } from './mcp/tools.js';
// Seeing request state: what adapter.inspect() streams and adapter.snapshot() returns, the clock tests inject, the
// machine itself and its diagrams.
export type {
  HandoffTransition,
  TransitionEvent,
  ValidationOutcomeKind,
  CandidateView,
  EngineSnapshot,
  LiveRequestView,
  RetainedRequestView,
  SessionView,
} from './engine/inspection.js';
export type { TerminalStoreUsage } from './engine/terminalStore.js';
export { STORE_MAX_ITEMS, STORE_MAX_BYTES } from './engine/terminalStore.js';
export { systemClock, type HandoffClock } from './engine/clock.js';
export { toMermaid, toDot, edgeOf, START_EDGE, type DiagramOptions, type StepOnDiagram } from '../machines/diagram.js';
export { renderSvg } from './observability/svg.js';
export {
  instrumentOpenTelemetry,
  HANDOFF_SPAN_NAME,
  RETAINED_SPAN_NAME,
  OTEL_ATTRIBUTES,
  type InspectionSource,
  type OpenTelemetryOptions,
  type OpenTelemetryInstrumentation,
} from './observability/otel.js';
export {
  handoffMachine,
  HANDOFF_STATES,
  LIVE_STATES,
  TERMINAL_STATES,
  VALIDATION_BUDGET,
  type HandoffState,
  type HandoffEvent,
  type HandoffContext,
  type HandoffAnswer,
  type WaiterAnswer,
  type CancelReason,
  type HandoffMode,
} from '../machines/handoff.js';
