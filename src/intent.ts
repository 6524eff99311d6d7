/**
 * The Native API: `new Intent(options)`, `intent.parse(request, options)`, `intent.dispose()` (spec 02, "Instances").
 */
import { IntentError, readCallerOptions } from './core/errors.js';
import type { IntentExecutor } from './core/executor.js';
import { resolveInstance, type InstanceModel } from './core/instance.js';
import type { IntentConfig, IntentResult } from './core/schemas.js';
import { isHandoffClock, type HandoffClock } from './engine/clock.js';
import { HandoffEngine, type EngineSession, type HandoffInstance } from './engine/engine.js';
import { recognize, type RecognizeOptions } from './engine/recognize.js';

/**
 * Options of `new Intent()`: the keys of `IntentConfig` (spec 02), where `executor` is a function returning the
 * candidate text. `clock` is for tests (an XState `SimulatedClock` works); it drives `referenceTime` and deadlines.
 */
export interface IntentOptions extends Omit<IntentConfig, 'executor'> {
  executor?: IntentExecutor;
  clock?: HandoffClock;
}

/** The executor, the clock and the rest of the options, read once. */
function readOptions(options: IntentOptions): {
  executor: unknown;
  clock: unknown;
  config: Omit<IntentOptions, 'executor' | 'clock'>;
} {
  return readCallerOptions('Intent options', () => {
    const { executor, clock, ...config } = options;
    return { executor, clock, config };
  });
}

/** Options of one recognition. */
export type IntentParseOptions = RecognizeOptions;

/**
 * One recognizer: validated configuration (throws `CONFIG_INVALID` naming the offending path), an optional executor,
 * and a lifetime. Instances are created by the caller and handed to the MCP adapter, which never disposes them.
 */
export class Intent {
  /** The resolved configuration and caches shared by every entry point. */
  readonly model: InstanceModel;
  readonly executor: IntentExecutor | undefined;
  readonly #clock: HandoffClock | undefined;
  #disposed = false;
  #engine: { engine: HandoffEngine; session: EngineSession } | undefined;

  constructor(options: IntentOptions) {
    const raw: unknown = options;
    if (raw === null || typeof raw !== 'object' || readCallerOptions('Intent options', () => Array.isArray(raw)))
      throw new IntentError(
        'CONFIG_INVALID',
        'Intent options must be an object; pass e.g. new Intent({}) for the defaults.',
      );
    const { executor, clock, config } = readOptions(options);
    if (executor !== undefined && typeof executor !== 'function')
      throw new IntentError(
        'CONFIG_INVALID',
        'Invalid instance configuration at options/executor: pass a function (task, { signal, feedback }) => Promise<string>.',
        { details: { issues: [{ path: 'options/executor', message: 'must be a function' }] } },
      );
    if (clock !== undefined && !isHandoffClock(clock))
      throw new IntentError(
        'CONFIG_INVALID',
        'Invalid instance configuration at options/clock: pass a clock with now, setTimeout and clearTimeout (an XState SimulatedClock), or leave it out.',
        { details: { issues: [{ path: 'options/clock', message: 'must be a clock' }] } },
      );
    this.model = readCallerOptions('Intent options', () => resolveInstance(config));
    this.executor = executor as IntentExecutor | undefined;
    this.#clock = clock;
  }

  /** True after `dispose()`: new recognitions are refused with `INSTANCE_DISPOSED`; in-flight ones finish. */
  get disposed(): boolean {
    return this.#disposed;
  }

  dispose(): void {
    this.#disposed = true;
  }

  /**
   * Runs a whole recognition through the executor (at most one correction with feedback) and resolves with the
   * `IntentResult`, or rejects with the `IntentError` the MCP envelope would carry.
   */
  async parse(request: unknown, options: IntentParseOptions = {}): Promise<IntentResult> {
    const executor = this.executor;
    if (this.#disposed)
      throw new IntentError(
        'INSTANCE_DISPOSED',
        'This Intent was disposed; create a new one to recognise more requests.',
      );
    if (executor === undefined)
      throw new IntentError(
        'CONFIG_INVALID',
        'This Intent has no executor; pass executor to new Intent() to use parse(), or use host mode.',
      );
    const reply = await recognize(this.#ownSession(), this.asInstance('native'), executor, request, options);
    if (reply.isError) throw reply.error;
    return reply.value as IntentResult;
  }

  /** This instance as the engine sees it, under the name the caller registered it with. */
  asInstance(name: string): HandoffInstance {
    const self = this as Intent;
    return {
      name,
      model: this.model,
      get disposed() {
        return self.disposed;
      },
    };
  }

  #ownSession(): EngineSession {
    if (this.#engine === undefined) {
      // Executor-mode records need not be retained (spec 03), and Native callers are not capped per session.
      const engine = new HandoffEngine({
        retain: false,
        maxPendingPerSession: Number.MAX_SAFE_INTEGER,
        ...(this.#clock === undefined ? {} : { clock: this.#clock }),
      });
      this.#engine = { engine, session: engine.openSession('native') };
    }
    return this.#engine.session;
  }
}
