/**
 * An executor that asks any OpenAI-compatible chat completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server,
 * DeepSeek, Qwen-compatible APIs) for the candidate, through the official `openai` client (spec 05, "Config file").
 */
// Types only: the client itself is imported on first use, so a process that never creates an executor (the server in
// host mode) never loads it.
import type OpenAI from 'openai';
import type { z } from 'zod';
import { IntentError, type FeedbackItem } from '../core/errors.js';
import type { ExecutorContext, IntentExecutor } from '../core/executor.js';
import { toPointer } from '../core/feedback.js';
import { ExecutorConfigSchema, type ExecutorConfig, type ModelTask } from '../core/schemas.js';

/** Options of {@link createOpenAICompatibleExecutor}. */
export interface OpenAICompatibleExecutorOptions {
  /** Where `apiKeyEnv` is looked up, once, at creation. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** The `fetch` the client uses. Default: the global `fetch`. */
  fetch?: typeof fetch;
}

type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type ChatRequest = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;

/** Sent as the bearer token when `apiKeyEnv` is not set: local servers such as Ollama need none, the client needs one. */
const NO_KEY = 'not-needed';

const SILENT_LOGGER = { error: noop, warn: noop, info: noop, debug: noop };

/**
 * Validates an executor configuration as {@link createOpenAICompatibleExecutor} does, without reading the key or
 * creating anything: what `check-config` runs, so a config can be checked where its secret is not set. Returns the
 * configuration with its defaults; throws `CONFIG_INVALID` naming the offending path.
 */
export function checkOpenAICompatibleExecutorConfig(
  config: ExecutorConfig | z.input<typeof ExecutorConfigSchema>,
): ExecutorConfig {
  const parsed = ExecutorConfigSchema.safeParse(config);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = `executor${toPointer(issue?.path ?? [])}`;
    const what = (issue?.message ?? 'invalid value').replace(/\.$/, '');
    throw configInvalid(path, `${what.charAt(0).toLowerCase()}${what.slice(1)}; fix it and create the executor again`);
  }
  const url = new URL(parsed.data.baseUrl);
  if (url.username !== '' || url.password !== '')
    throw configInvalid(
      'executor/baseUrl',
      'the URL holds a user name or password, which is refused; remove them and put the key in an environment variable named by apiKeyEnv',
    );
  return parsed.data;
}

type OpenAIModule = typeof import('openai');

/**
 * Creates an executor that sends each task to `POST {baseUrl}/chat/completions` and resolves with the message content.
 *
 * - `config` is validated with `ExecutorConfigSchema`, whose defaults apply: `responseFormat` `'json_schema'` (the
 *   task's `outputSchema` as a strict structured output; `'json_object'` and `'text'` put the schema in the prompt
 *   instead), `timeoutMs` `50000` (one call, every retry included: no call outlives it), `maxRetries` `2` (the client
 *   retries 408, 409, 429, 5xx and network failures itself, within `timeoutMs`), `maxTokens` `4096` (sent as
 *   `max_tokens`, so a looping model stops), `temperature` left to the server when absent.
 * - The API key is read once, now, from `env[config.apiKeyEnv]` and from nowhere else: the `OPENAI_*` variables the
 *   `openai` client would otherwise read (key, organisation, project, base URL, custom headers, log level) are ignored.
 *   Without `apiKeyEnv` a placeholder key is sent.
 * - The `openai` client is loaded in the background from now on and awaited by the first call.
 * - On the correction call the previous candidate goes back as the assistant's message, followed by the format problems
 *   to fix.
 *
 * Throws `CONFIG_INVALID` for an invalid config, a `baseUrl` holding a user name or password (secrets come only from the
 * environment), or an `apiKeyEnv` variable that is missing or empty (the message names the variable, never a value).
 * The executor rejects with `EXECUTOR_FAILED` (retryable for 429, 5xx, timeouts and network failures, with
 * `details.status` when the endpoint answered with an HTTP error) or, when `ctx.signal` aborts, with the abort itself.
 * Error messages never hold the key, headers, the base URL or the endpoint's own error text. Nothing is logged.
 */
export function createOpenAICompatibleExecutor(
  config: ExecutorConfig | z.input<typeof ExecutorConfigSchema>,
  options: OpenAICompatibleExecutorOptions = {},
): IntentExecutor {
  const { baseUrl, model, apiKeyEnv, temperature, responseFormat, timeoutMs, maxRetries, maxTokens } =
    checkOpenAICompatibleExecutorConfig(config);
  const apiKey = apiKeyEnv === undefined ? NO_KEY : readApiKey(options.env ?? process.env, apiKeyEnv);
  const customHeaders = fixedHeaders(apiKey);

  // Started now so the first call rarely waits for it; a failure is reported by that call.
  const loading: Promise<OpenAIModule> = import('openai');
  loading.catch(noop);
  let connection: Promise<{ module: OpenAIModule; client: OpenAI }> | undefined;
  const connect = (): Promise<{ module: OpenAIModule; client: OpenAI }> =>
    (connection ??= loading.then((module) => {
      try {
        const client = new module.default({
          apiKey,
          baseURL: baseUrl,
          timeout: timeoutMs,
          maxRetries,
          // Explicit values so the client reads none of its OPENAI_* environment variables into requests or logs.
          adminAPIKey: null,
          organization: null,
          project: null,
          webhookSecret: null,
          defaultHeaders: customHeaders,
          logLevel: 'off',
          logger: SILENT_LOGGER,
          // Every answer goes through a bounded reader (size after decompression, retry headers within the budget).
          fetch: boundedFetch(options.fetch ?? globalThis.fetch, answerLimitOf(maxTokens), timeoutMs),
        });
        return { module, client };
      } catch (error) {
        throw new IntentError(
          'CONFIG_INVALID',
          'Invalid executor configuration: the OpenAI client could not be created from it; check executor.baseUrl and the environment.',
          { cause: error },
        );
      }
    }));

  const attempts = maxRetries + 1;
  return async (task: ModelTask, ctx: ExecutorContext): Promise<string> => {
    const request: ChatRequest = {
      model,
      messages: buildMessages(task, responseFormat, ctx),
      // `max_tokens`, not OpenAI's newer `max_completion_tokens`: llama.cpp, vLLM and Ollama read this one, and OpenAI
      // still honours it for every non-reasoning model.
      // eslint-disable-next-line @typescript-eslint/no-deprecated
      max_tokens: maxTokens,
      ...(temperature === undefined ? {} : { temperature }),
      ...responseFormatOf(task, responseFormat),
    };
    // One budget for the whole call: the client's own timeout is per attempt, and it waits out back-offs in between.
    const budget = new AbortController();
    const timer = setTimeout(() => {
      budget.abort(new IntentError('EXECUTOR_FAILED', overrunMessage(timeoutMs, attempts), { retryable: true }));
    }, timeoutMs);
    const signal = AbortSignal.any([ctx.signal, budget.signal]);
    let completion: unknown;
    let module: OpenAIModule | undefined;
    try {
      const connected = await untilAborted(connect(), signal);
      module = connected.module;
      completion = await untilAborted(connected.client.chat.completions.create(request, { signal }), signal);
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      if (budget.signal.aborted) throw abortReason(budget.signal);
      if (error instanceof IntentError) throw error;
      throw callFailure(module, error, timeoutMs, attempts);
    } finally {
      clearTimeout(timer);
    }
    return contentOf(completion);
  };
}

/** Bytes of answer body allowed per `maxTokens` token: far above what a token takes (a few bytes, escaped). */
const ANSWER_BYTES_PER_TOKEN = 64;
/** The smallest answer limit, whatever `maxTokens` is: room for an error page or a verbose envelope. */
const MIN_ANSWER_BYTES = 1024 * 1024;

/** Largest answer body read from the endpoint, after decompression: max(1 MiB, 64 bytes per `maxTokens` token). */
export function answerLimitOf(maxTokens: number): number {
  return Math.max(MIN_ANSWER_BYTES, maxTokens * ANSWER_BYTES_PER_TOKEN);
}

/** The endpoint's answer passed the answer limit: the read stops there (a gzip bomb never unpacks further). */
class AnswerTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`answer larger than ${limit} bytes`);
  }
}

/** Marks a response whose retry wait was past the budget (the client then did not retry), for the error's message. */
const RETRY_STOPPED_HEADER = 'x-intent-mcp-retry-stopped';

/** Statuses whose response can carry no body (`new Response` refuses one). */
const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

/**
 * The wait in ms the openai client will sleep before its retry, read from `retry-after-ms` / `Retry-After` exactly as
 * it reads them (`retry-after-ms` first, when it parses to a non-zero number; else `Retry-After` as seconds or as an
 * HTTP date); `undefined` when it will use its own back-off. Negative (a date past) means at once; NaN an unreadable
 * date, on which the client would fire at once too.
 */
function retryWaitOf(headers: Headers): number | undefined {
  let wait: number | undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms !== '') {
    const value = parseFloat(ms);
    if (!Number.isNaN(value)) wait = value;
  }
  const after = headers.get('retry-after');
  if (after !== null && after !== '' && (wait === undefined || wait === 0)) {
    const seconds = parseFloat(after);
    wait = Number.isNaN(seconds) ? Date.parse(after) - Date.now() : seconds * 1000;
  }
  return wait;
}

/**
 * The client's `fetch`, bounded for a hostile or broken endpoint:
 * - the answer body is read through a counter that stops at `limit` bytes (after the transport's decompression: a
 *   1 MB gzip answer of 1 GB of spaces took 2 GB of memory), failing the call with `EXECUTOR_FAILED`;
 * - a retry wait the endpoint asks for that is not a number of milliseconds within the call's budget (a huge number,
 *   a date years ahead: Node fired such timers at once, with a warning on stderr) ends the retries instead
 *   (`x-should-retry: false`): the call fails now, retryable, rather than hammer the endpoint or wait past its budget.
 */
function boundedFetch(inner: typeof fetch, limit: number, budgetMs: number): typeof fetch {
  return async (input, init) => {
    const response = await inner(input, init);
    const headers = new Headers(response.headers);
    const wait = retryWaitOf(headers);
    // A wait already past (a date before now) is a retry at once, as the endpoint allows; one past the call's budget,
    // or unreadable, ends the retries.
    if (wait !== undefined && !(Number.isFinite(wait) && wait <= budgetMs)) {
      headers.delete('retry-after');
      headers.delete('retry-after-ms');
      headers.set('x-should-retry', 'false');
      headers.set(RETRY_STOPPED_HEADER, 'true');
    }
    // The body below is already decoded: its encoding and length no longer describe it.
    headers.delete('content-encoding');
    headers.delete('content-length');
    const init2 = { status: response.status, statusText: response.statusText, headers };
    if (response.body === null || NULL_BODY_STATUS.has(response.status)) return new Response(null, init2);
    const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader();
    let seen = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) {
          controller.close();
          return;
        }
        seen += value.byteLength;
        if (seen > limit) {
          await reader.cancel().catch(noop);
          controller.error(new AnswerTooLarge(limit));
          return;
        }
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, init2);
  };
}

function overrunMessage(timeoutMs: number, attempts: number): string {
  const tried = attempts > 1 ? ` (up to ${attempts} attempts included)` : '';
  return `The model endpoint did not answer within ${timeoutMs} ms${tried}; retry, or allow more time with executor.timeoutMs.`;
}

function noop(): void {
  // The executor never writes to stdout or stderr: stdout is the protocol channel in stdio mode.
}

function configInvalid(path: string, problem: string): IntentError {
  return new IntentError('CONFIG_INVALID', `Invalid executor configuration at ${path}: ${problem}.`, {
    details: { issues: [{ path, message: problem }] },
  });
}

function readApiKey(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name]?.trim() ?? '';
  if (value === '')
    throw configInvalid(
      'executor/apiKeyEnv',
      `the environment variable ${name} is not set or is empty; set it to the endpoint's API key, or remove apiKeyEnv for an endpoint that needs no key`,
    );
  try {
    new Headers({ authorization: `Bearer ${value}` });
  } catch {
    throw configInvalid(
      'executor/apiKeyEnv',
      `the environment variable ${name} holds characters an HTTP header cannot carry; set it to the API key alone`,
    );
  }
  return value;
}

/**
 * The client adds headers from `OPENAI_CUSTOM_HEADERS` to every request, after its own authorization; naming them with
 * `null` here drops them, and the key is set again, so nothing from the environment but `apiKeyEnv` reaches the endpoint.
 */
function fixedHeaders(apiKey: string): Record<string, string | null> {
  const headers: Record<string, string | null> = {};
  for (const line of (process.env['OPENAI_CUSTOM_HEADERS'] ?? '').split('\n')) {
    const colon = line.indexOf(':');
    const name = colon >= 0 ? line.slice(0, colon).trim() : '';
    if (/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name) && name.toLowerCase() !== 'authorization') headers[name] = null;
  }
  headers['Authorization'] = `Bearer ${apiKey}`;
  return headers;
}

function buildMessages(task: ModelTask, format: ExecutorConfig['responseFormat'], ctx: ExecutorContext): ChatMessage[] {
  const material = JSON.stringify(task.input);
  const user =
    format === 'json_schema'
      ? material
      : `${material}\n\noutputSchema (the JSON Schema your one JSON document must validate against):\n${JSON.stringify(task.outputSchema)}`;
  const messages: ChatMessage[] = [
    { role: 'system', content: task.instructions },
    { role: 'user', content: user },
  ];
  if (ctx.feedback !== undefined)
    messages.push(
      { role: 'assistant', content: ctx.feedback.candidateText },
      { role: 'user', content: correctionRequest(ctx.feedback.issues) },
    );
  return messages;
}

function correctionRequest(issues: readonly FeedbackItem[]): string {
  const list = issues.map((i) => `- ${i.path === '' ? '(root)' : i.path}: ${i.message}`).join('\n');
  return [
    issues.length === 0
      ? 'The document you sent does not validate against outputSchema.'
      : 'The document you sent has these format errors (JSON Pointer: problem):',
    ...(issues.length === 0 ? [] : [list]),
    'Fix exactly these problems and change nothing else. Send the whole corrected JSON document again, and nothing else.',
  ].join('\n');
}

function responseFormatOf(task: ModelTask, format: ExecutorConfig['responseFormat']): Partial<ChatRequest> {
  switch (format) {
    case 'json_schema':
      return {
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'intent_candidate', strict: true, schema: task.outputSchema },
        },
      };
    case 'json_object':
      return { response_format: { type: 'json_object' } };
    case 'text':
      return {};
  }
}

/**
 * Settles with `promise`, or rejects with the abort reason as soon as `signal` aborts. The client waits out its retry
 * back-off (up to the server's `retry-after`) before it notices an abort; the caller should not wait with it.
 */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      reject(abortReason(signal));
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error('The model call failed.', { cause: error }));
      },
    );
  });
}

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('The model call was aborted.', 'AbortError');
}

/** Network error codes worth naming in `details.code`: they say what went wrong and hold no secret. */
const NETWORK_CODE = /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/;

function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODE.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** ` (status 429)`, ` (code ECONNREFUSED)`: the safe part of a failure, for its cause. */
function describeDetails(details: Record<string, unknown> | undefined): string {
  if (details === undefined) return '';
  const parts = Object.entries(details).map(([key, value]) => `${key} ${String(value)}`);
  return parts.length === 0 ? '' : ` (${parts.join(', ')})`;
}

/** `error` or one of its first causes when it is a `kind`. */
function causeOfKind<T>(error: unknown, kind: abstract new (...args: never[]) => T): T | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth++) {
    if (current instanceof kind) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Spec 06: `EXECUTOR_FAILED`, retryable when transient. Messages are written here, never copied from the cause. */
function callFailure(
  module: OpenAIModule | undefined,
  error: unknown,
  timeoutMs: number,
  attempts: number,
): IntentError {
  const tried = attempts > 1 ? ` after ${attempts} attempts` : '';
  // The cause says what failed, never the endpoint's own words: its error body may echo the Authorization header, and
  // `console.error(error)` or `util.inspect` would print a cause's body (and the request it carries) in full.
  const fail = (message: string, retryable: boolean, details?: Record<string, unknown>): IntentError =>
    new IntentError('EXECUTOR_FAILED', message, {
      retryable,
      cause: new Error(`${error instanceof Error ? error.name : typeof error}${describeDetails(details)}`),
      ...(details === undefined ? {} : { details }),
    });

  const tooLarge = causeOfKind(error, AnswerTooLarge);
  if (tooLarge !== undefined)
    return fail(
      `The model endpoint's answer is larger than ${tooLarge.limit} bytes (executor.maxTokens allows no more); check the endpoint, or lower executor.maxTokens.`,
      false,
      { limit: tooLarge.limit },
    );
  if (module !== undefined && error instanceof module.APIConnectionTimeoutError)
    return fail(
      `The model endpoint did not answer within ${timeoutMs} ms${tried}; retry, or allow more time with executor.timeoutMs.`,
      true,
    );
  if (module !== undefined && error instanceof module.APIConnectionError) {
    const code = networkCode(error);
    return fail(
      `The model endpoint could not be reached${code === undefined ? '' : ` (${code})`}${tried}; check that it is running and that executor.baseUrl is right, then retry.`,
      true,
      code === undefined ? undefined : { code },
    );
  }
  if (module !== undefined && error instanceof module.APIError && typeof error.status === 'number') {
    const status = error.status;
    const retryable = status === 429 || status >= 500;
    if ((error.headers as Headers | undefined)?.get(RETRY_STOPPED_HEADER) === 'true')
      return fail(
        `The model endpoint answered HTTP ${status} and asked to wait longer than executor.timeoutMs (${timeoutMs} ms) before a retry; retry later.`,
        retryable,
        { status },
      );
    return fail(statusMessage(status, tried), retryable, { status });
  }
  const code = networkCode(error);
  if (code !== undefined)
    return fail(`The connection to the model endpoint failed (${code}); retry the call.`, true, { code });
  return fail(
    'The call to the model endpoint failed; check that executor.baseUrl points at an OpenAI-compatible API, then retry.',
    false,
  );
}

function statusMessage(status: number, tried: string): string {
  const http = `HTTP ${status}`;
  if (status === 401 || status === 403)
    return `The model endpoint refused the credentials (${http}); check the key in the environment variable named by executor.apiKeyEnv.`;
  if (status === 404)
    return `The model endpoint answered ${http}; check executor.baseUrl (it usually ends in /v1) and executor.model.`;
  if (status === 429) return `The model endpoint is rate-limiting calls (${http})${tried}; retry later.`;
  if (status >= 500) return `The model endpoint failed (${http})${tried}; retry the call.`;
  if (status === 400 || status === 422)
    return `The model endpoint rejected the request (${http}); check executor.model, and executor.responseFormat (not every server supports json_schema).`;
  return `The model endpoint answered ${http}; check the executor configuration.`;
}

function contentOf(completion: unknown): string {
  const choice = (completion as { choices?: unknown } | null)?.choices;
  const first = Array.isArray(choice) ? (choice[0] as unknown) : undefined;
  const message = (first as { message?: unknown; finish_reason?: unknown } | undefined)?.message as
    { content?: unknown; refusal?: unknown } | undefined;
  const finish = (first as { finish_reason?: unknown } | undefined)?.finish_reason;
  const fail = (text: string): IntentError => new IntentError('EXECUTOR_FAILED', text, { retryable: false });
  if (typeof message?.refusal === 'string' && message.refusal !== '')
    throw fail('The model refused the task; rephrase the request or use another model.');
  if (typeof message?.content === 'string' && message.content.trim() !== '') return message.content;
  if (finish === 'length')
    throw fail(
      "The model's answer was cut off before any content (finish_reason length); allow it more output tokens.",
    );
  if (finish === 'content_filter')
    throw fail("The endpoint's content filter withheld the model's answer; rephrase the request or use another model.");
  throw fail(
    first === undefined
      ? 'The model endpoint answered without any choice; check that executor.baseUrl points at an OpenAI-compatible chat completions API.'
      : 'The model answered with empty content; check executor.model and executor.responseFormat, then retry.',
  );
}
