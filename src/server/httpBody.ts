/**
 * Reading an HTTP request body within three bounds (issue 8, item 11): its own size (4 MiB, spec 05), a read deadline,
 * and a budget of bytes buffered at once across the whole server. A body is charged for the bytes that have actually
 * arrived, as they arrive, so stalled bodies cannot pile up memory; the charge is held until the response ends,
 * because the parsed body lives as long as its request. A declared `Content-Length` reserves nothing: headers alone
 * cost a client nothing to send, and reserving them let a few idle sockets lock every other client out.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { httpRefusals, type HttpRefusal } from './errors.js';

/** Spec 05: body limit 4 MiB. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** Why a body was not read, with the answer to give (413, 408 or 503). */
export class BodyRefused extends Error {
  constructor(readonly refusal: HttpRefusal) {
    super(refusal.message);
  }
}

/** Bytes reserved by bodies being read or held, across the server. */
export class BodyBudget {
  #used = 0;
  constructor(readonly maxBytes: number) {}

  get used(): number {
    return this.#used;
  }

  tryReserve(bytes: number): boolean {
    if (this.#used + bytes > this.maxBytes) return false;
    this.#used += bytes;
    return true;
  }

  release(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes);
  }
}

function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers['content-length'];
  if (header === undefined || !/^\d{1,15}$/.test(header)) return undefined;
  return Number(header);
}

/**
 * Reads the body of `req` into one buffer, refusing with {@link BodyRefused}: 413 past {@link MAX_BODY_BYTES}, 503
 * when the server-wide budget has no room, 408 when the body is not complete within `timeoutMs`. Whatever it reserved
 * is released when `res` closes.
 */
export function readBody(
  req: IncomingMessage,
  res: ServerResponse,
  budget: BodyBudget,
  timeoutMs: number,
): Promise<Buffer> {
  let reserved = 0;
  res.once('close', () => {
    budget.release(reserved);
    reserved = 0;
  });
  return new Promise<Buffer>((resolve, reject) => {
    const declared = declaredLength(req);
    if (declared !== undefined && declared > MAX_BODY_BYTES) {
      reject(new BodyRefused(httpRefusals.bodyTooLarge(MAX_BODY_BYTES)));
      return;
    }
    const busy = (): BodyRefused => new BodyRefused(httpRefusals.bodyBudgetFull());
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (error: Error | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAborted);
      req.off('close', onAborted);
      if (error === undefined) resolve(Buffer.concat(chunks, size));
      else {
        req.pause();
        reject(error);
      }
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        finish(new BodyRefused(httpRefusals.bodyTooLarge(MAX_BODY_BYTES)));
        return;
      }
      if (size > reserved) {
        if (!budget.tryReserve(size - reserved)) {
          finish(busy());
          return;
        }
        reserved = size;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      finish(undefined);
    };
    const onAborted = (): void => {
      finish(new BodyRefused(httpRefusals.bodyEndedEarly()));
    };
    const timer = setTimeout(() => {
      finish(new BodyRefused(httpRefusals.bodyLate(timeoutMs)));
    }, timeoutMs);
    timer.unref();
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAborted);
    req.on('close', onAborted);
  });
}
