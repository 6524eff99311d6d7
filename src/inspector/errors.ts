/**
 * The inspector's refusals and its loopback rule, apart from the page and its listener so the command can check
 * `--inspect` flags without loading the inspector (it is imported only when `--inspect` is given).
 */
import { isIP } from 'node:net';
import { IntentError, quoteCaller } from '../core/errors.js';

/** A typed host without the brackets of an IPv6 literal (`[::1]` is listened on as `::1`). */
export function unbracketed(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * Whether a typed host is a loopback address the inspector can be reached at: `localhost`, any `127.x.y.z`, or `::1`
 * (also spelled `0:0:0:0:0:0:0:1`, bracketed or not). An IPv4-mapped `::ffff:127.x.y.z` is refused: browsers rewrite it
 * (`[::ffff:7f00:1]`), so no page could name it in its Host header.
 */
export function isLoopbackHost(host: string): boolean {
  const text = unbracketed(host);
  if (text.toLowerCase() === 'localhost') return true;
  const family = isIP(text);
  if (family === 4) return /^127\./.test(text);
  if (family === 6) return text === '::1' || /^0:0:0:0:0:0:0:1$/.test(text);
  return false;
}

export const inspectorErrors = {
  notLoopback: (host: string) =>
    new IntentError(
      'CONFIG_INVALID',
      `The inspector only listens on loopback; ${quoteCaller(host)} is not a loopback address (use 127.0.0.1, ::1 or localhost).`,
    ),
  cannotListen: (host: string, port: number, reason: string) =>
    new IntentError(
      'CONFIG_INVALID',
      `The inspector cannot listen on ${quoteCaller(host)} port ${port} (${reason}); choose another --inspect port.`,
    ),
  /** `--inspect-host` alone would be silently ignored: the inspector is off without `--inspect`. */
  hostWithoutInspect: () =>
    new IntentError(
      'CONFIG_INVALID',
      '--inspect-host needs --inspect (the inspector is off without it); add --inspect [port] or drop --inspect-host.',
    ),
  portInvalid: (value: unknown) =>
    new IntentError(
      'CONFIG_INVALID',
      `Inspector option port must be an integer from 0 to 65535 (got ${String(value).slice(0, 40)}).`,
    ),
};
