/**
 * The debug inspector (spec 05, "Debug inspector"): a bounded model fed by the adapter's inspection stream, and its own
 * loopback HTTP listener serving the page, the JSON snapshot, the SSE stream and the diagram.
 */
import type { Logger } from '../server/logger.js';
import { InspectorModel, type InspectionSource, type InspectorModelOptions } from './model.js';
import { serveInspector, type RunningInspector } from './server.js';

export { InspectorModel, type InspectionSource, type InspectorModelOptions } from './model.js';
export { serveInspector, isLoopbackHost, type InspectorServeOptions, type RunningInspector } from './server.js';

export interface StartInspectorOptions extends InspectorModelOptions {
  /** Loopback address to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Port; 0 picks a free one. */
  port: number;
  logger: Logger;
}

/**
 * Subscribes a new model to `source` and serves it. Call it before the transport starts serving, so that it sees every
 * request from its prepare on (the stream reports a request prepared earlier only from its next step).
 */
export async function startInspector(
  source: InspectionSource,
  options: StartInspectorOptions,
): Promise<RunningInspector & { readonly model: InspectorModel }> {
  const { host, port, logger, ...modelOptions } = options;
  const model = new InspectorModel(source, modelOptions);
  try {
    const running = await serveInspector(model, { ...(host === undefined ? {} : { host }), port, logger });
    return {
      model,
      url: running.url,
      port: running.port,
      close: async () => {
        await running.close();
        model.close();
      },
    };
  } catch (error) {
    model.close();
    throw error;
  }
}
