import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { CandidateIdentity } from '../../machines/handoff.js';

const TOKEN_BYTES = 32;
/** Tokens are cut from a pool filled by `crypto.randomBytes`, as `randomUUID` does: one call per 128 tokens, not one each. */
const POOL_TOKENS = 128;
let pool = Buffer.alloc(0);
let poolOffset = 0;

function tokenBytes(): Buffer {
  if (poolOffset + TOKEN_BYTES > pool.length) {
    pool = randomBytes(TOKEN_BYTES * POOL_TOKENS);
    poolOffset = 0;
  }
  const bytes = pool.subarray(poolOffset, poolOffset + TOKEN_BYTES);
  poolOffset += TOKEN_BYTES;
  return bytes;
}

/** A new request id (UUID v4) and submission token (256 random bits, base64url) with the hash that is all we keep. */
export function newCredentials(): { requestId: string; token: string; tokenHash: Buffer } {
  const token = tokenBytes().toString('base64url');
  return { requestId: randomUUID(), token, tokenHash: hashToken(token) };
}

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Constant-time comparison of a presented token against the stored hash. */
export function tokenMatches(presented: string, stored: Buffer): boolean {
  return timingSafeEqual(hashToken(presented), stored);
}

/** A candidate's identity: SHA-256 of its UTF-8 bytes plus the text, compared in full on a hash match. */
export function candidateIdentity(text: string): CandidateIdentity & { readonly bytes: number } {
  return {
    hash: createHash('sha256').update(text, 'utf8').digest('hex'),
    text,
    bytes: Buffer.byteLength(text, 'utf8'),
  };
}

/** The short hash shown by the inspector (never the text). */
export function shortHash(hash: string): string {
  return hash.slice(0, 12);
}
