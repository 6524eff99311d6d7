/**
 * Field patterns (spec 02, `FieldSpec.pattern`): trusted configuration that runs on caller text, so a pattern that can
 * backtrack catastrophically must not reach V8's backtracking engine, where a 30-character value can take seconds.
 *
 * A pattern with nested quantifiers (star height above one, found by `safe-regex2`) runs on V8's linear-time engine
 * (the `l` flag), which has no unicode mode: such a pattern is matched on UTF-16 units. A pattern the linear engine
 * cannot run either (backreferences, lookarounds) is refused at configuration. Every other pattern runs as it always
 * did, with the `u` flag. Values are also bounded by `limits.maxPatternValueChars`.
 */
import { setFlagsFromString } from 'node:v8';
import safeRegex from 'safe-regex2';

// Enables the `l` (linear) flag of `RegExp`; it changes nothing for any regular expression that does not use it.
setFlagsFromString('--enable-experimental-regexp-engine');

const LINEAR = 'l';

/** Why a pattern cannot be used, or the compiled pattern. */
export type CompiledPattern = { ok: true; regexp: RegExp } | { ok: false; why: 'syntax' | 'backtracking' };

export function compilePattern(pattern: string): CompiledPattern {
  let regexp: RegExp;
  try {
    regexp = new RegExp(pattern, 'u');
  } catch {
    return { ok: false, why: 'syntax' };
  }
  if (safeRegex(regexp)) return { ok: true, regexp };
  try {
    // `l` is V8's linear-engine flag, enabled above (a constant, so no linter mistakes it for a typo).
    return { ok: true, regexp: new RegExp(pattern, LINEAR) };
  } catch {
    return { ok: false, why: 'backtracking' };
  }
}
