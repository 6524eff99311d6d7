/** Assertions shared by the tests: what a call threw or a promise rejected with, checked to be an `IntentError`. */
import { expect } from 'vitest';
import { IntentError } from '../../src/core/errors.js';

export function thrownBy(fn: () => unknown): IntentError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(IntentError);
    return error as IntentError;
  }
  return expect.fail('expected an IntentError to be thrown');
}

export async function rejectionOf(promise: Promise<unknown>): Promise<IntentError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(IntentError);
    return error as IntentError;
  }
  return expect.fail('expected the promise to reject with an IntentError');
}
