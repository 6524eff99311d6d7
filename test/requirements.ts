/**
 * The requirements of the seed (`01-seed-in-english.md`) and of specs 02 to 06, as data. A test claims a
 * requirement by carrying its id in brackets in its title, e.g. `it('[S02-IDS] numbers ids depth-first', ...)`.
 * `requirements.test.ts` fails when a requirement that is not pending has no claiming test, and when a pending one is
 * already claimed (then its `pending` mark must go). `pending` names the issue that will build it.
 */
export interface Requirement {
  id: string;
  text: string;
  pending?: string;
}

export const requirements: Requirement[] = [
  // --- the seed ------------------------------------------------------------------------------------------------------
  {
    id: 'SEED-ONE-CORE',
    text: 'Every entry point (Native API, adapter, standalone server) shares one recognition core and one IntentResult type.',
  },
  {
    id: 'SEED-INSTANCES-DISTINCT',
    text: "The server config's instances are IntentConfig; the adapter's instances are caller-created Intent objects; they are not interchangeable.",
  },
  {
    id: 'SEED-ADAPTER-API',
    text: 'createIntentMcpAdapter, adapter.tools, adapter.connect, adapter.close, session.callTool, session.close exist with the seed signatures.',
  },
  {
    id: 'SEED-MODE',
    text: "config.mode is 'executor' or 'host', default 'executor'; executor mode requires every instance to already have an executor.",
  },
  { id: 'SEED-INSTANCES-REQUIRED', text: 'config.instances is required and non-empty.' },
  {
    id: 'SEED-PREFIX',
    text: 'toolPrefix (default empty) lets the tools coexist; name clashes are checked before registration.',
  },
  {
    id: 'SEED-PROTOCOL-FROM-SDK',
    text: "connect.protocolVersion is required and comes from the SDK's negotiation, never from tool input or context.",
  },
  {
    id: 'SEED-INSTANCE-ARG',
    text: 'With one instance it is chosen automatically; with several, instance must be given explicitly; never guess a default.',
  },
  { id: 'SEED-SIGNAL', text: 'options.signal is protocol-level cancellation and never part of the tool JSON.' },
  {
    id: 'SEED-NAMES',
    text: 'Instance names are 1–64 characters from [A-Za-z0-9_.-], never __proto__/prototype/constructor; the prefix uses the same set and may be empty.',
  },
  {
    id: 'SEED-CONNECT-INVALID',
    text: 'An invalid connection configuration fails with CONFIG_INVALID, category transport.',
  },
  { id: 'SEED-DISPOSED', text: 'A disposed instance cannot be used for a new recognition.' },
  { id: 'SEED-UNKNOWN-TOOL', text: 'An unknown tool name returns exactly undefined.' },
  {
    id: 'SEED-CLOSE',
    text: "session.close ends that session's recognitions and retained records; adapter.close closes its sessions; neither disposes the caller's Intents nor closes external SDK objects.",
  },
  {
    id: 'SEED-HOST-TOOLS',
    text: 'Host mode exposes intent_prepare, intent_accept and intent_cancel with the seed inputs and outputs.',
  },
  { id: 'SEED-HOST-NO-MODEL', text: 'In host mode the server never calls a model of its own.' },
  {
    id: 'SEED-SKILL',
    text: 'The bundled Skill tells the host model how to run a handoff, correct at most once, and cancel with refusal/incomplete.',
  },
  {
    id: 'SEED-JOIN',
    text: 'The same token with a byte-identical candidate, submitted concurrently, shares one validation.',
  },
  { id: 'SEED-REPLAY', text: 'A completed reply can be replayed while it is still retained.' },
  { id: 'SEED-CONFLICT', text: 'A different candidate conflicts.' },
  { id: 'SEED-BUDGET', text: 'An explicit correction does not reset the validation budget.' },
  { id: 'SEED-DEADLINE', text: 'By default a recognition has no deadline; an explicit timeout counts from prepare.' },
  {
    id: 'SEED-STORE',
    text: 'Terminal replies are retained at most 32 items / 8 MiB per adapter; after session close or eviction the host must prepare again.',
  },
  { id: 'SEED-PARSE-ONLY', text: 'Executor mode exposes only intent_parse.' },
  {
    id: 'SEED-PARSE-INPUT',
    text: 'The intent_parse input is the Native request (input, fields, context, baseline, referenceTime, output) plus instance.',
  },
  {
    id: 'SEED-FORBIDDEN-KEYS',
    text: 'schema, executor, apiKey, signal, a config path and mode can never be passed by a caller.',
  },
  {
    id: 'SEED-GOLDEN',
    text: 'The seed example gives the full schema-less IntentResult; content[0].text is the JSON of the same object, reproduced byte for byte.',
  },
  {
    id: 'SEED-ENVELOPES',
    text: 'Success and error envelopes follow the seed table; a technical error never carries a partial result.',
  },
  {
    id: 'SEED-REVISIONS',
    text: 'Revisions 2025-06-18, 2025-11-25, 2026-07-28 are supported; under 2026-07-28 a tool reply also carries resultType complete.',
  },
  {
    id: 'SEED-HTTP',
    text: 'The command serves stateful Streamable HTTP for the 2025 revisions with --transport http --host --port --path; stdio for all three.',
  },
  {
    id: 'SEED-PUBLIC-ORIGIN',
    text: '--public-origin has no credentials, wildcard, path, query or fragment; required for wildcard binds; Host and Origin match it exactly; forwarding headers are not trusted.',
  },
  {
    id: 'SEED-MOUNT',
    text: 'An existing service can mount the tool list and call forwarding on its own SDK handler; one session per logical connection, never per HTTP request.',
  },

  // --- spec 02: request, candidate, result ---------------------------------------------------------------------------
  {
    id: 'S02-SCHEMAS',
    text: 'Every public shape is a zod schema; JSON Schemas are derived from them, never written twice.',
  },
  {
    id: 'S02-CONFIG',
    text: 'IntentConfig and FieldSpec are validated; the constructor throws CONFIG_INVALID naming the offending path.',
  },
  {
    id: 'S02-EXECUTOR-FN',
    text: 'A Native executor is (task, { signal, feedback? }) => Promise<string>; parse asks it at most twice, the second time with feedback.',
  },
  {
    id: 'S02-DISPOSE',
    text: 'dispose() makes the instance refuse new recognitions (INSTANCE_DISPOSED) while in-flight ones finish.',
  },
  { id: 'S02-REQ-INPUT', text: 'input is a string of 1..maxInputChars characters after trimming.' },
  {
    id: 'S02-REQ-FIELDS',
    text: 'fields names come from the instance schema; unknown or duplicate → INPUT_INVALID; with no schema every name is unknown.',
  },
  { id: 'S02-REQ-CONTEXT', text: 'context is at most maxContextItems items of { role, text }.' },
  { id: 'S02-REQ-BASELINE', text: 'baseline is an earlier effective state, validated with the same schema.' },
  {
    id: 'S02-REQ-REFTIME',
    text: 'referenceTime is an ISO 8601 date-time with offset; it defaults to the time of prepare.',
  },
  { id: 'S02-REQ-UNKNOWN-KEY', text: 'Any other request key is INPUT_INVALID naming the key.' },
  {
    id: 'S02-TASK',
    text: 'ModelTask is { instructions, input: TaskMaterial, outputSchema }; material holds no secrets or executor settings.',
  },
  {
    id: 'S02-INSTRUCTIONS',
    text: 'Instructions are complete and self-contained in the request language (zh-CN or en).',
  },
  {
    id: 'S02-OUTPUTSCHEMA',
    text: 'outputSchema is narrowed to the request: exactly the selected fields with their types; baselineChanges only with a baseline.',
  },
  { id: 'S02-STRICT', text: 'outputSchema is accepted by OpenAI strict structured outputs.' },
  { id: 'S02-FENCE', text: 'One surrounding Markdown code fence is stripped without counting as an error.' },
  {
    id: 'S02-FORMAT-ERRORS',
    text: 'Not one JSON document, schema violations, dangling refs, unknown baseline ids and mistyped field values are correctable CANDIDATE_INVALID.',
  },
  { id: 'S02-FEEDBACK', text: 'Feedback is at most 20 { path: JSON Pointer, message } items in plain words.' },
  {
    id: 'S02-NOT-FORMAT',
    text: 'Missing/ambiguous fields, unresolved entries, partial coverage and pattern/enum/range breaks never trigger a correction.',
  },
  { id: 'S02-KEY-ORDER', text: 'IntentResult keys are in exactly the order spec 02 lists.' },
  { id: 'S02-NORMALIZED-INPUT', text: 'normalizedInput is NFC, trimmed, whitespace folded; no NFKC.' },
  { id: 'S02-IDS', text: 'Ids are assigned by the core, numbered depth-first from 1, continuing after the baseline.' },
  {
    id: 'S02-SCOPES',
    text: 'Intent constraints get intent scope; request-level constraints request scope in effective.constraints.',
  },
  {
    id: 'S02-CHANGES',
    text: 'turn.changes lists adds in document order, then baseline changes; an unapplicable change is ignored with an issue.',
  },
  {
    id: 'S02-TURN',
    text: 'turn.intentIds lists added or updated intents; facts holds referenceTime only when it was given.',
  },
  {
    id: 'S02-EFFECTIVE',
    text: 'effective.scope is current_request without a baseline and conversation with one, baseline items first.',
  },
  {
    id: 'S02-STATUS',
    text: 'status is derived by the first matching rule: no_intent, ambiguous, needs_input, partial, complete.',
  },
  {
    id: 'S02-FIELD-RESULTS',
    text: 'fieldResults has one entry per selected field in request order with filled/missing/ambiguous/invalid; defaults become inferences.',
  },
  { id: 'S02-LANGUAGE', text: 'Language is output.language, else the instance language, else auto by CJK detection.' },

  // --- spec 03: the handoff lifecycle --------------------------------------------------------------------------------
  {
    id: 'S03-STATES',
    text: 'The machine has exactly prepared, validating, correcting, completed, cancelled, expired.',
  },
  { id: 'S03-TABLE', text: 'Every row of the transition table holds.' },
  {
    id: 'S03-TOKEN',
    text: 'requestId is a UUID v4; the token has ≥128 random bits, is stored hashed and compared in constant time.',
  },
  {
    id: 'S03-NOT-FOUND',
    text: 'Unknown, evicted, other-session and wrong-token accepts give the same HANDOFF_NOT_FOUND.',
  },
  {
    id: 'S03-PENDING-CAP',
    text: 'At most maxPendingPerSession live requests per session; the next prepare gets CAPACITY_EXCEEDED.',
  },
  { id: 'S03-SESSION-CLOSE', text: 'Session close cancels live requests; waiters get SESSION_CLOSED.' },
  {
    id: 'S03-EXECUTOR',
    text: 'intent_parse runs the same machine: one more executor call with feedback after CANDIDATE_INVALID; signal → ABORTED; deadline → TIMEOUT.',
  },
  {
    id: 'S03-SIGNAL-ACCEPT',
    text: "A signal on accept only stops that caller's wait; a shared validation keeps running.",
  },
  {
    id: 'S03-INSPECT',
    text: 'An inspection stream of transitions and a snapshot of live requests and store usage, without tokens or candidate text.',
  },
  { id: 'S03-DIAGRAM', text: 'Mermaid and DOT diagrams are generated from the machine definition.' },
  // --- issue 11 part 1: trace files, trace check, trace report, debug log
  {
    id: 'I11-TRACE-CHECK',
    text: 'trace check replays every recorded request through the machine: a scripted session checks clean; an impossible transition, a wrong answer or a dropped terminal line is reported with request and line number, exit 1.',
  },
  {
    id: 'I11-TRACE-ROTATE',
    text: '--trace-max-bytes rotates the trace file at the bound, one rotated file (FILE.1) kept.',
  },
  { id: 'I11-TRACE-UNWRITABLE', text: 'A --trace path that cannot be written refuses to start: one line, exit 2.' },
  {
    id: 'I11-TRACE-FULL-DISK',
    text: 'A trace write error (full disk) degrades to one rate-limited warning and dropped records, never a crash.',
  },
  {
    id: 'I11-TRACE-MARKERS',
    text: 'Neither the trace, the report nor the debug log contains a token or candidate text.',
  },
  {
    id: 'I11-DEBUG-LOG',
    text: '--log-level debug logs one line per tool call (tool, requestId, duration, answer or error code) and per transition.',
  },
  {
    id: 'S03-DIAGRAM-WORDS',
    text: 'Wherever the diagram is drawn, its guards read in words with the answer (EVENT [when] / answer), a rejected completion is drawn apart from a successful one, and self-loop labels stay legible.',
  },
  {
    id: 'S03-DIAGRAM-COUNTS',
    text: 'The diagram draws counts on states and edges by stable id, and every recorded step maps to the edge it took.',
  },
  {
    id: 'S03-DIAGRAM-SVG',
    text: 'The server renders the diagram to SVG in process (Graphviz WebAssembly), fetching nothing from outside.',
  },
  {
    id: 'S03-DIAGRAM-README',
    text: "The README's lifecycle diagram is exactly the generated one.",
  },
  {
    id: 'S03-MODEL-CHECK',
    text: 'The reachable state space is enumerated and the invariants hold on every state and edge; a broken variant is caught.',
  },
  {
    id: 'S03-MACHINE-DECIDES',
    text: 'Every lifecycle rule lives in machines/handoff.ts; no file under src/ branches on a state name.',
  },
  { id: 'S03-INTERLEAVINGS', text: 'Interleavings of concurrent real calls agree with a reference model.' },
  {
    id: 'S03-DEADLINE-ARRIVAL',
    text: 'The deadline is judged by the clock when an event arrives, not only by the timer: a late accept or cancel finds the request expired.',
  },
  {
    id: 'S03-VALIDATION-CRASH',
    text: 'A validation that crashes ends the request with its own answer and reason (internal_error), never a host reason.',
  },
  {
    id: 'S03-ENGINE-PATHS',
    text: 'The real engine, driven along every simple path of the machine, gives the reply spec 03 gives at every step.',
  },
  {
    id: 'PUBLIC-SURFACE',
    text: 'The package entry exports exactly what the README documents; internals are not reachable from it.',
  },
  {
    id: 'S03-PREPARE-ATOMIC',
    text: 'A request is registered only once its HostTask is fully built and serialised; a failed prepare leaves nothing live.',
  },

  // --- spec 04: the MCP adapter -------------------------------------------------------------------------------------
  {
    id: 'S04-ADAPTER-CONFIG',
    text: 'createIntentMcpAdapter validates everything up front: bad or empty instances, a value that is not an Intent, a bad name or toolPrefix, executor mode without an executor, unknown keys are CONFIG_INVALID with category config.',
  },
  {
    id: 'S04-SESSIONS-INDEPENDENT',
    text: 'Each connect() makes an independent session: its own records and its own pending cap.',
  },
  {
    id: 'S04-CALLTOOL-NEVER-THROWS',
    text: 'callTool never throws: every failure, garbage arguments and options included, becomes an error envelope.',
  },
  {
    id: 'S04-CLOSE',
    text: 'session.close() cancels live requests (waiters get SESSION_CLOSED), drops retained replies, and later calls give SESSION_CLOSED; adapter.close() closes every session and refuses new ones; both are idempotent.',
  },
  {
    id: 'S04-TOOL-DEFINITIONS',
    text: 'Every tool definition has an inputSchema with additionalProperties false, an outputSchema for its success payload, a description a model can act on and truthful annotations.',
  },
  {
    id: 'S04-CANDIDATE-STRING',
    text: 'intent_accept requires candidateText to be a string; an object is INPUT_INVALID whose message asks for the complete candidate as a JSON string.',
  },
  {
    id: 'S04-ENVELOPE-SUCCESS',
    text: 'A success is { content: [{ type: text, text: JSON.stringify(payload) }], structuredContent: payload, isError: false }.',
  },
  {
    id: 'S04-ENVELOPE-ERROR',
    text: 'A technical failure is { content: [{ type: text, text: JSON.stringify({ error }) }], isError: true } with no structuredContent.',
  },
  {
    id: 'S04-RESULT-TYPE',
    text: "Under 2026-07-28 the adapter's result also has resultType complete; never under the 2025 revisions.",
  },
  { id: 'S04-REPLAY-BYTES', text: 'A replayed reply is the stored text itself: byte-identical to the first.' },
  {
    id: 'S04-MOUNT-CLASH',
    text: "mountIntentMcpTools checks our names against the server's tools before registering: a clash is CONFIG_INVALID and leaves the server as it was.",
  },
  {
    id: 'S04-MOUNT-ROUTING',
    text: 'A mounted server (McpServer or low-level Server) lists its tools and ours together, routes our names to the adapter and every other name to its original handler, unchanged.',
  },
  {
    id: 'S04-MOUNT-SESSION',
    text: 'The mount creates one adapter session per SDK connection, never one per request, and closes it when that connection closes.',
  },
  {
    id: 'S04-MOUNT-SIGNAL',
    text: "The mount passes the SDK's per-request AbortSignal to the adapter as options.signal.",
  },

  // --- spec 05: the standalone command -------------------------------------------------------------------------------
  {
    id: 'S05-HELP-VERSION',
    text: '--help lists serve, check-config and diagram; --version prints the package version; both exit 0.',
  },
  {
    id: 'S05-BAD-INVOCATION',
    text: 'Invalid flags or config: one line on stderr naming the problem, nothing on stdout, exit code 2.',
  },
  { id: 'S05-FLAGS-OVERRIDE', text: 'Flags override the config file.' },
  {
    id: 'S05-CHECK-CONFIG',
    text: 'check-config FILE prints what would be served and exits 0, or exits 2 with one line naming the problem.',
  },
  {
    id: 'S05-DIAGRAM',
    text: 'intent-mcp diagram prints the handoff machine generated from its definition: Mermaid by default, DOT with --format dot.',
  },
  // --- spec 05 / issue 10: the debug inspector and the demo -----------------------------------------------------------
  {
    id: 'S05-INSPECT-BROWSER',
    text: 'In headless Chromium, the inspector page of the command started with --inspect (stdio and HTTP) follows a handoff prepared → validating → correcting → validating → completed live: current state highlighted, path drawn, edge counts, store usage; a screenshot is saved.',
  },
  {
    id: 'S05-INSPECT-TIMELINE',
    text: 'The inspector shows live requests (instance, state, age, validations used, time to deadline) filterable by session, instance and state; a selected request’s timeline (time, event, from → to, answer, validations); how recent requests ended (completed, rejected, cancelled with reason, expired); store usage (items of 32, bytes of 8 MiB, evictions).',
  },
  {
    id: 'S05-INSPECT-SSE',
    text: 'The inspector streams one SSE transition event per record plus counts, to a bounded number of clients; /api/snapshot carries the same view as the page.',
  },
  {
    id: 'S05-INSPECT-NO-SECRETS',
    text: 'Neither the inspector page, its JSON endpoint, its SSE stream nor its diagram ever contains a token, a candidate text or the request input (sizes and short hashes only).',
  },
  {
    id: 'S05-INSPECT-SECURITY',
    text: 'The inspector answers 403 to a foreign Host or Origin, refuses a non-loopback address (exit 2 from the command), answers 405 to anything but GET and HEAD, bounds its query, and forbids external fetches by CSP.',
  },
  {
    id: 'S05-INSPECT-BOUNDED',
    text: 'The inspector’s memory is bounded under a flood: timelines, steps per timeline and finished requests are capped while counts stay exact.',
  },
  {
    id: 'S05-INSPECT-PAGINATED',
    text: 'With 1,000 live requests the inspector page is paginated and its first paint stays under 200 KB.',
  },
  {
    id: 'S05-DEMO',
    text: 'npm run demo plays a scripted host (prepare, a format error, its feedback, the corrected candidate, the result, a replay, a conflict, a cancel, an expiry) against the built command with --inspect and prints every call, reply and transition.',
  },
  {
    id: 'S05-INSPECT-DIAGRAM',
    text: "The inspector page's diagram names exactly the machine's states and transitions (generated, not hand-drawn).",
  },
  {
    id: 'S05-STDOUT-PROTOCOL',
    text: 'In stdio mode stdout carries only protocol messages; logs go to stderr (JSON lines with --log-level debug).',
  },
  {
    id: 'S05-SIGNALS',
    text: 'SIGINT/SIGTERM: stop accepting, close every session (live requests cancelled), exit 0 within 5 s.',
  },
  {
    id: 'S05-SECRETS-FROM-ENV',
    text: 'Secrets come only from the variable named by apiKeyEnv; a literal apiKey in a config file refuses to start; a key never appears in any output.',
  },
  {
    id: 'S05-HTTP-SESSION',
    text: 'Over HTTP, initialize creates an MCP session with a crypto-random Mcp-Session-Id bound to one adapter session; its requests all use that session.',
  },
  {
    id: 'S05-HTTP-DELETE',
    text: 'DELETE ends the MCP session and closes its adapter session: its records are gone and its id gets 404.',
  },
  {
    id: 'S05-HTTP-UNKNOWN-SESSION',
    text: 'A request for an unknown session gets 404 and creates nothing.',
  },
  { id: 'S05-HTTP-DROPPED-STREAM', text: 'A dropped SSE stream is not a close: the session goes on.' },
  {
    id: 'S05-HTTP-2026',
    text: "A 2026-07-28 request over HTTP gets the SDK's unsupported-version answer, and the server keeps serving.",
  },
  {
    id: 'S05-SESSION-CAP',
    text: 'At most maxSessions HTTP sessions: a new initialize beyond it gets HTTP 503 with a JSON-RPC error and Retry-After.',
  },
  {
    id: 'S05-IDLE-RECLAIM',
    text: 'A session idle for sessionIdleMs is closed as if deleted; one with a stream or a request in flight is not idle.',
  },
  {
    id: 'S05-HEALTHZ',
    text: 'GET /healthz, outside --path, answers 200 {"status":"ok","sessions":N}.',
  },
  { id: 'S05-BODY-LIMIT', text: 'An HTTP body over 4 MiB gets 413; the server keeps serving.' },
  {
    id: 'S05-WILDCARD-BIND',
    text: 'Binding 0.0.0.0 or :: (in any spelling) without --public-origin refuses to start (CONFIG_INVALID, exit 2).',
  },
  {
    id: 'S05-PUBLIC-ORIGIN-RULES',
    text: '--public-origin must be an absolute http: or https: origin with no credentials, no * in the host, no path but /, no query and no fragment; anything else refuses to start naming the rule.',
  },
  {
    id: 'S05-HOST-ORIGIN',
    text: "Allowed Host: the public origin's host (with its port only when not the scheme's default) and the listener's 127.0.0.1, localhost and [::1]:PORT; allowed Origin: the public origin exactly and the local diagnostic origins.",
  },
  {
    id: 'S05-HOST-ORIGIN-403',
    text: 'Any other Host or Origin gets 403 before any MCP processing, on every method.',
  },
  {
    id: 'S05-FORWARDED-IGNORED',
    text: 'X-Forwarded-* and Forwarded headers never widen the allowed Host and Origin lists.',
  },
  {
    id: 'S05-TLS-PROXY',
    text: "Behind a TLS proxy that forwards Host unchanged, with the server on loopback and --public-origin https://..., the README's nginx block works.",
  },

  // --- issue 8: hostile input is normal input ------------------------------------------------------------------------
  {
    id: 'H08-FENCE-LINEAR',
    text: 'The code-fence strip is linear: a 1 MiB candidate of hostile fence shapes is answered at once, the same as the former pattern.',
  },
  {
    id: 'H08-BASELINE-LINEAR',
    text: 'Baseline changes find their targets through an index built once per turn: one accept is linear in the baseline and the changes.',
  },
  {
    id: 'H08-SEARCH-LINEAR',
    text: 'Evidence and date values are searched in input and context in linear time, and each context item has a length limit.',
  },
  {
    id: 'H08-NESTING',
    text: 'Nesting depth is bounded by an iterative check before anything recursive: a deep candidate is a correctable CANDIDATE_INVALID, deep arguments INPUT_INVALID, the same answer cold and warm.',
  },
  {
    id: 'H08-PATTERN-LINEAR',
    text: 'A field pattern that nests quantifiers runs on the linear-time engine, or is refused at configuration; no short value can freeze the process.',
  },
  {
    id: 'H08-ERROR-BOUND',
    text: 'Errors quote at most a short prefix of any caller string, and no error text exceeds MAX_ERROR_TEXT_CHARS.',
  },
  {
    id: 'H08-BIND-ADDRESS',
    text: 'The address actually bound is checked after listen: any spelling of an unspecified address needs --public-origin.',
  },
  {
    id: 'H08-ORIGIN-AS-TYPED',
    text: '--public-origin is checked as typed, before URL parsing cleans it: userinfo, dot segments and the like are refused.',
  },
  {
    id: 'H08-STDIO-LIMIT',
    text: 'The stdio read limit covers the largest accepted candidate; an oversized line gets a JSON-RPC error and the connection keeps serving, in bounded memory.',
  },
  {
    id: 'H08-DRAIN',
    text: 'On SIGTERM, SIGINT or DELETE, callers waiting on a validation get SESSION_CLOSED before the connection ends.',
  },
  {
    id: 'H08-HTTP-RESOURCES',
    text: 'Buffered request bytes are capped across the server, headers and bodies have deadlines, unknown sessions are refused before the body, abandoned initializes are reclaimed early.',
  },
  {
    id: 'H08-SLOTS',
    text: 'A failure while creating an HTTP session never leaks a session slot.',
  },
  {
    id: 'H08-LOG-FLOOD',
    text: 'Refusal logs truncate caller strings and are rate-limited, with a count of what was suppressed.',
  },

  // --- issue 13, part A: packaging, mounting on both SDK lines, the Skill over MCP ------------------------------------
  {
    id: 'I13-PACK',
    text: 'npm pack yields a tarball with dist that installs into a project with its own MCP server SDK (one copy), mounts there, completes a handoff, and runs intent-mcp --version.',
  },
  {
    id: 'I13-MOUNT-SHAPE',
    text: 'Mounting recognises a server by its public shape, never by instanceof: another copy of the SDK mounts too; anything else is CONFIG_INVALID.',
  },
  {
    id: 'I13-MOUNT-LATE',
    text: 'A tool registered after the mount under one of our names is refused at registration (or never listed twice); lists and calls keep working.',
  },
  {
    id: 'I13-MOUNT-V1',
    text: 'Mounting works on @modelcontextprotocol/sdk 1.x McpServer and Server over stdio and Streamable HTTP: fall-through, clash, one session per connection, a full handoff.',
  },
  {
    id: 'I13-SKILL-MCP',
    text: 'The standalone server serves the bundled Skill through the Skills extension (skill://intent-host/SKILL.md) and as an MCP prompt.',
  },
  // --- issue 13 (part B): CLI, Inspector, executor limits, error texts, cold start ------------------------------------
  {
    id: 'I13-INSPECTOR-CLI',
    text: 'The MCP Inspector CLI lists the tools and runs intent_prepare against the built command over stdio and HTTP, leaving no HTTP session open.',
  },
  {
    id: 'I13-STARTUP-ERRORS',
    text: 'A port in use, an address not on this machine or an unresolvable --host: one line on stderr, exit 2, no stack trace.',
  },
  { id: 'I13-HELP-SERVE-FLAGS', text: 'The top-level --help shows the serve flags.' },
  {
    id: 'I13-COMMAND-SUGGESTION',
    text: 'A mistyped command ("serv") is an unknown command with a suggestion, not "too many arguments".',
  },
  {
    id: 'I13-CONFIG-JSON-POSITION',
    text: 'Invalid JSON in a config file is reported with its line and column; a file that is not a regular file or is too large is refused before it is read.',
  },
  {
    id: 'I13-CHECK-CONFIG-NO-SECRET',
    text: "check-config passes on the README's executor example without the key's environment variable; serving still needs it.",
  },
  {
    id: 'I13-NATIVE-TIMEOUT',
    text: 'Intent.parse timeoutMs rejects TIMEOUT at the deadline with an executor that ignores its signal or never settles; a script awaiting it never exits 13 silently.',
  },
  {
    id: 'I13-ERROR-TEXTS',
    text: 'Error texts name only tools that exist in their context (executor mode and the Native API never say intent_prepare).',
  },
  { id: 'I13-CANCEL-EXPIRED', text: 'intent_cancel after the deadline says the request expired.' },
  {
    id: 'I13-OMITTED-NULL',
    text: 'The README and the candidate parser agree on whether a key whose schema admits null may be left out.',
  },
  { id: 'I13-LAZY-EXECUTOR', text: 'The stdio server in host mode never loads the openai client.' },
  {
    id: 'I13-TOOLS-LIST-SIZE',
    text: "tools/list is at most 8 KB; intent_prepare's input schema describes the baseline without embedding the result schema, and the server still validates it fully.",
  },
  {
    id: 'I13-NPM-START',
    text: 'npm start rebuilds only what changed and hints on stderr when serving stdio on a terminal.',
  },
  { id: 'I13-MAX-TOKENS', text: 'The executor sends max_tokens (maxTokens, default 4096).' },
  {
    id: 'I13-WHOLE-CALL-TIMEOUT',
    text: 'timeoutMs bounds the whole intent_parse / Intent.parse call, retries and correction included; the endpoint sees the request aborted.',
  },
  {
    id: 'I13-PARSE-PROGRESS',
    text: 'intent_parse sends notifications/progress while it waits when the caller gave a progress token.',
  },

  // --- spec 06: errors -----------------------------------------------------------------------------------------------
  { id: 'S06-CODES', text: 'Every error code has its category and retryability.' },
  {
    id: 'S06-SERIALIZED',
    text: 'SerializedIntentError is { code, category, message, retryable, requestId?, details? }.',
  },
  { id: 'S06-THROWN', text: 'Errors thrown by the library API are IntentErrors.' },
  {
    id: 'S06-CONFIG-CHECKED',
    text: 'Options are validated at construction: 0, NaN or a fraction where a count is expected is CONFIG_INVALID naming the option.',
  },
  { id: 'S06-MESSAGES', text: 'Messages are English, one sentence, and say what to do next.' },
  { id: 'S06-NO-LEAK', text: 'Errors never leak tokens, keys, stack traces or candidate text.' },
  {
    id: 'S06-EXECUTOR-FAILED',
    text: 'EXECUTOR_FAILED is retryable for 429, 5xx and network causes, with details.status when HTTP.',
  },

  // --- issue 11: OpenTelemetry ---------------------------------------------------------------------------------------
  {
    id: 'I11-OTEL-SPANS',
    text: "Spans captured with the SDK's in-memory exporter match the inspection records of the same run: one span per request from prepare to its terminal state, one event per record in order, attributes that agree, status ERROR for rejected / failed.",
  },
  {
    id: 'I11-OTEL-NO-SECRETS',
    text: 'No span, span event or attribute carries a token, a candidate text or the request input.',
  },
  {
    id: 'I11-OTEL-BOUNDED',
    text: 'Without an SDK nothing is kept; session close, adapter close and stop() end every open span; finished span contexts and events per span are bounded.',
  },
  {
    id: 'I11-OTEL-EXPORT',
    text: 'The command with --otel exports its spans to a loopback OTLP/HTTP receiver set by the standard OTEL_EXPORTER_OTLP_* variables, flushed on SIGTERM and when stdin ends.',
  },
  {
    id: 'I11-OTEL-MISSING',
    text: '--otel without the optional SDK packages (or with an OTLP protocol it does not speak) is one stderr line and exit 2.',
  },
  // --- issue 12: proof under load ------------------------------------------------------------------------------------
  {
    id: 'I12-ROUTE-RING',
    text: "Told nginx's upstream list and which one it is, a process makes session ids that nginx's consistent hash routes back to it; a bad pair is CONFIG_INVALID.",
  },
  {
    id: 'I12-SCALE-OUT',
    text: 'Two processes behind nginx (hash $http_mcp_session_id consistent): sessions spread over both complete handoffs, DELETE reaches the right process, killing one fails only its sessions (404, then a fresh initialize works).',
  },
  {
    id: 'I12-SOAK',
    text: 'A bounded soak (handoffs across many sessions with random cancels, deadlines, corrections and evictions) leaves no live actor, the store within its bounds, the heap near its baseline, and /healthz answering.',
  },
];
