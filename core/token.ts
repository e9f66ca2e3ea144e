/**
 * Token format (docs/architecture.md): `svc_` + 43 base62 characters (256 random bits) + 6 base62 characters
 * of CRC32 over everything before them. The prefix makes leaked tokens greppable by secret scanners;
 * the checksum lets svc-auth and the CLI reject typos and garbage without a lookup.
 */
import { createHash, hash as oneShotHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { err, ok, type Result } from './result.js';

const TOKEN_PREFIX = 'svc_';
const RANDOM_CHARS = 43;
const CHECKSUM_CHARS = 6;
export const GENERATED_TOKEN_LENGTH = TOKEN_PREFIX.length + RANDOM_CHARS + CHECKSUM_CHARS;
export const RANDOM_BYTES = 32;
export const MIN_SUPPLIED_LENGTH = 16;
/** Longer credentials are refused outright; no legitimate token is anywhere near this. */
export const MAX_TOKEN_LENGTH = 512;

/** `sha256:<64 lowercase hex>`: the form in which svc stores every token it hashes itself. */
export type Sha256Hash = `sha256:${string}`;
/**
 * `pbkdf2-sha256:<iterations>:<salt hex>:<key hex>`: a hash imported from wis2box-auth's store, kept as it was
 * (its plaintext is unknown, so it cannot be re-hashed). Verified off the event loop (core/imported-hash.ts).
 */
export type ImportedHash = `pbkdf2-sha256:${string}`;
/** A stored token hash: svc's own SHA-256, or an imported PBKDF2 one. */
export type TokenHash = Sha256Hash | ImportedHash;
/**
 * The most PBKDF2 iterations an imported hash may state: OWASP's figure for PBKDF2-HMAC-SHA256 (wis2box-auth writes
 * 100,000). svc-auth derives a presented token once per imported record of the governing scope, so a record with
 * more would let one manifest make every wrong token cost that much more; every reader of manifests refuses it.
 */
export const MAX_IMPORTED_ITERATIONS = 600_000;
// Iterations 1 to 600000 and salts of 8 to 64 bytes: wis2box-auth writes 100000 and 24 bytes. The derived key is
// 32 bytes (PBKDF2-HMAC-SHA256's natural length, what hashlib.pbkdf2_hmac returns by default).
export const IMPORTED_HASH_PATTERN = /^pbkdf2-sha256:(?:[1-9][0-9]{0,4}|[1-5][0-9]{5}|600000):(?:[0-9a-f]{2}){8,64}:[0-9a-f]{64}$/;
// Repeated verbatim in crds/protectedscope.yaml; a test keeps the two equal.
export const HASH_PATTERN = /^(sha256:[0-9a-f]{64}|pbkdf2-sha256:([1-9][0-9]{0,4}|[1-5][0-9]{5}|600000):([0-9a-f]{2}){8,64}:[0-9a-f]{64})$/;

/** Whether a stored hash is one svc-auth reads (HASH_PATTERN). */
export function isTokenHash(hash: string): hash is TokenHash {
  return HASH_PATTERN.test(hash);
}

/** The iteration count an imported-looking hash states when it is above MAX_IMPORTED_ITERATIONS (for messages). */
export function excessiveIterationsOf(hash: string): number | undefined {
  const m = /^pbkdf2-sha256:([0-9]{1,16}):/.exec(hash);
  const n = m ? Number(m[1]) : NaN;
  return n > MAX_IMPORTED_ITERATIONS ? n : undefined;
}
export const TOKEN_ID_PATTERN = /^[0-9a-f]{12}$/;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(n: bigint, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out;
}

function checksum(body: string): string {
  return base62(BigInt(crc32(body) >>> 0), CHECKSUM_CHARS);
}

/** Formats 32 random bytes (the caller supplies them: core does no I/O) as a checksummed token. */
export function formatGeneratedToken(random: Uint8Array): string {
  if (random.length !== RANDOM_BYTES) throw new RangeError(`a token needs exactly ${RANDOM_BYTES} random bytes`);
  const n = BigInt(`0x${Buffer.from(random).toString('hex')}`);
  const body = TOKEN_PREFIX + base62(n, RANDOM_CHARS);
  return body + checksum(body);
}

/** True when the token claims the generated format (our prefix), whether or not its checksum holds. */
export function claimsGeneratedFormat(token: string): boolean {
  return token.startsWith(TOKEN_PREFIX);
}

/** Base62 digit value per char code, -1 for anything else: checked on every request, so no BigInt here. */
const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE62.length; i++) DIGIT[BASE62.charCodeAt(i)] = i;

function digitAt(token: string, i: number): number {
  const c = token.charCodeAt(i);
  return c < 128 ? DIGIT[c]! : -1;
}

export function hasValidChecksum(token: string): boolean {
  if (token.length !== GENERATED_TOKEN_LENGTH || !token.startsWith(TOKEN_PREFIX)) return false;
  const checksumStart = GENERATED_TOKEN_LENGTH - CHECKSUM_CHARS;
  for (let i = TOKEN_PREFIX.length; i < checksumStart; i++) if (digitAt(token, i) < 0) return false;
  // 62^6 < 2^53, so the checksum digits decode exactly as a Number.
  let claimed = 0;
  for (let i = checksumStart; i < GENERATED_TOKEN_LENGTH; i++) {
    const d = digitAt(token, i);
    if (d < 0) return false;
    claimed = claimed * 62 + d;
  }
  return claimed === crc32(token.slice(0, checksumStart)) >>> 0;
}

function isPrintableAsciiWithoutSpace(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

/**
 * Whether a credential presented in a request can possibly be a token: printable ASCII, bounded length,
 * and a correct checksum if it claims our format. Anything else is refused before hashing.
 */
export function isPlausibleToken(token: string): boolean {
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH || !isPrintableAsciiWithoutSpace(token)) return false;
  return !claimsGeneratedFormat(token) || hasValidChecksum(token);
}

/** The rules for a token an operator supplies on the command line; checked before anything is written. */
export function checkSuppliedToken(token: string): Result<string> {
  if (!isPrintableAsciiWithoutSpace(token)) {
    return err('a token must be printable ASCII without whitespace');
  }
  if (token.length < MIN_SUPPLIED_LENGTH) {
    return err(`a token must be at least ${MIN_SUPPLIED_LENGTH} characters (omit it to have a strong one generated)`);
  }
  if (token.length > MAX_TOKEN_LENGTH) return err(`a token must be at most ${MAX_TOKEN_LENGTH} characters`);
  if (claimsGeneratedFormat(token) && !hasValidChecksum(token)) {
    return err(`a token starting with ${TOKEN_PREFIX} must be a generated token, and this one's checksum does not match (a typo?)`);
  }
  return ok(token);
}

/** Hex SHA-256 of the token; fast on purpose: tokens carry at least 112 bits, so no slow KDF is needed. */
export function hashTokenHex(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * The raw SHA-256 of the token (32 bytes), what the decision index is keyed by: one-shot `crypto.hash`
 * (Node ≥ 20.12) makes no Hash object and no hex string on the request path.
 */
export function hashTokenDigest(token: string): Buffer {
  return oneShotHash('sha256', token, 'buffer');
}

/**
 * hashTokenDigest into a caller's 32-byte buffer, for the request path. On Node 20, one-shot hashing to
 * a 32-character latin1 string and copying its char codes costs less than half of hashing to a new
 * Buffer (about 330 against 750 ns a call, measured): a Buffer is a heavier allocation than a short string.
 */
export function hashTokenDigestInto(token: string, out: Buffer): Buffer {
  const raw = oneShotHash('sha256', token, 'binary');
  for (let i = 0; i < 32; i++) out[i] = raw.charCodeAt(i);
  return out;
}

export function hashToken(token: string): Sha256Hash {
  return `sha256:${hashTokenHex(token)}`;
}

/** The public id of a token: the first 12 hex of its hash. Safe to log, show and use for removal. */
export function tokenIdOfHex(hex: string): string {
  return hex.slice(0, 12);
}

/** tokenIdOfHex of the digest's hex, without writing out the other 52 hex characters. */
export function tokenIdOfDigest(digest: Buffer): string {
  return digest.toString('hex', 0, 6);
}

/**
 * The id of a stored hash: the first 12 of its last 64 hex, which is the SHA-256 digest of a `sha256:` hash and
 * the derived key of an imported one (so the CRD's CEL rule can check both forms with one substring).
 */
export function tokenIdOf(hash: TokenHash): string {
  return tokenIdOfHex(hash.slice(hash.length - 64));
}

export function isImportedHash(hash: string): hash is ImportedHash {
  return hash.startsWith('pbkdf2-sha256:');
}
